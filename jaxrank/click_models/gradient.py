"""Fitting a click model by gradient descent on its negative log-likelihood with optax, as CLAX does
(Hager, Zoeter, de Rijke, "CLAX: Fast and Flexible Neural Click Models in JAX", 2025: Adam-family
optimizers on the masked binary cross-entropy of the conditional click probabilities).

The objective is the log-likelihood EM climbs too (Chuklin, Markov, de Rijke, *Click Models for Web
Search*, 2015, ch. 4), ``L(θ) = Σ_s Σ_r log P(C_r = c_r | C_<r; θ)`` (``conditional_log_probs``
summed: ``jaxrank.click_models.base.session_log_likelihood``, in closed form where the model has
one), divided by the number of shown positions ``N`` (CLAX's mean over positions; the scale only
sets the step size). With ``prior=(a, b)`` it adds ``a log θ + (b - a) log(1 - θ)`` for every
table probability ``θ``: the log-density of the Beta prior whose maximum a posteriori is EM's
pseudo-count update ``(a + numerator) / (b + denominator)`` (``jaxrank.click_models.base.maximize``),
so gradient and EM with the same ``prior`` climb the same function (PyClick's ``(1, 2)``: a
Beta(2, 2) prior); ``None`` (default) is the plain likelihood, EM's ``prior=(0, 0)``. The counting
models (GCTR, RCTR, DCTR, CM, DCM, SDBN) are fitted by EM under simplifying assumptions; here they get
the exact likelihood, so their fitted values differ.

Parameters are tables or functions of features (``jaxrank.click_models.parametrization``). One
epoch is one ``lax.scan`` over minibatches of ``batch_size`` sessions in a fresh random order
(``fold_in(key, epoch)``; the last batch is padded with empty sessions), drawn batch by batch with
the swap-or-not shuffle (``jaxrank.utils.swap_or_not``: no ``[S]`` permutation is stored or
sorted), each batch's loss scaled to estimate the whole objective over ``N``; ``batch_size=None``
is full-batch (one step per epoch, the log read in place). Optimizers (``optax``): ``"adam"``
(default), ``"adamw"`` (CLAX's experiments, with ``weight_decay``, optax's default ``1e-4``),
``"sgd"``; the learning rate is constant or decays to 0 along a cosine over all steps
(``schedule="cosine"``). Defaults follow CLAX: learning rate 0.01 (its Yandex runs), 50 epochs
(its ``Trainer``), batches of 4096 sessions (its Yandex runs).
CLAX stops early on a validation loss; here the number of epochs is fixed (``lax.scan``).

Hyperparameters (``learning_rate``, ``weight_decay``, the starting probability) are array leaves of
the state, so ``jax.vmap`` over them, or over keys, compiles once; ``gradient_fitter`` gives the
pieces (``init``, ``epoch``, ``params``) that ``jaxrank.click_models.study`` runs as lanes.
"""

import functools
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import optax

from jaxrank.click_models import parametrization as param_lib
from jaxrank.click_models.base import ClickModel, check_fit_log, session_log_likelihood
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_choice, check_int, check_key, check_number
from jaxrank.utils.swap_or_not import shuffle_index

OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine")
DEFAULT_LEARNING_RATE = 0.01  # CLAX's Yandex runs (adamw)
DEFAULT_EPOCHS = 50  # CLAX's Trainer
DEFAULT_BATCH_SIZE = 4096  # CLAX's Yandex runs
DEFAULT_WEIGHT_DECAY = 1e-4  # optax.adamw's default (CLAX uses it); only "adamw" reads it
# The f32 leaves of a GradientState that init sets (a grid of them is lanes of one program): CLAX's
# learning rate and weight decay, and PyClick's starting probability 0.5.
HPARAMS = {"learning_rate": DEFAULT_LEARNING_RATE, "weight_decay": DEFAULT_WEIGHT_DECAY, "init": 0.5}


class GradientState(NamedTuple):
    trainable: Any  # the parametrization's trainable values
    opt_state: Any  # the optimizer's state (Adam's moments and count)
    key: PRNGKey  # [] key of the minibatch orders (epoch e uses fold_in(key, e))
    epoch: Array  # [] i32 epochs done
    step: Array  # [] i32 optimizer steps done (the schedule's clock)
    learning_rate: Array  # [] float, in the parameters' dtype
    weight_decay: Array  # [] float ("adamw" only)


class GradientInfo(NamedTuple):
    objective: Array  # [] the epoch's estimate of L / N (plus the log prior): its minibatches' values summed
    epoch: Array  # [] i32 epochs done after this one


class GradientFit(NamedTuple):
    """The pieces of a gradient fit of one model (``gradient_fitter``).

    * ``init(key, log, features=None, *, learning_rate, weight_decay, prob) -> GradientState``;
    * ``epoch(state, log, features=None) -> (GradientState, GradientInfo)``: one pass over the sessions;
    * ``params(state, features=None) -> params``: the model's logit NamedTuple;
    * ``objective(trainable, log, features=None) -> []``: ``L`` (plus the log prior), the value climbed.
    """

    init: Callable[..., GradientState]
    epoch: Callable[..., GradientState]
    params: Callable[..., Any]
    objective: Callable[..., Array]


class AdamState(NamedTuple):
    mu: Any  # first moments, shaped like the parameters
    nu: Any  # second moments
    decay1: Array  # [] b1^t after t steps
    decay2: Array  # [] b2^t


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> optax.GradientTransformation:
    """Adam's direction (Kingma & Ba, 2015, Algorithm 1), ``optax.scale_by_adam`` with its defaults,
    except that the bias corrections ``1 - b^t`` come from running products ``b^t`` (exact
    multiplications) rather than ``b ** count``: XLA computes a power of a traced count with a
    vectorised approximation whose last bits depend on the shapes around it, which would make lanes
    differ across device counts (``jaxrank.lanes``)."""

    def init(params):
        zeros = jax.tree.map(jnp.zeros_like, params)
        one = jnp.ones((), jax.tree.leaves(params)[0].dtype)
        return AdamState(zeros, zeros, one, one)

    def update(grads, state, params=None):
        del params
        mu = jax.tree.map(lambda m, g: b1 * m + (1.0 - b1) * g, state.mu, grads)
        nu = jax.tree.map(lambda v, g: b2 * v + (1.0 - b2) * g * g, state.nu, grads)
        decay1, decay2 = state.decay1 * b1, state.decay2 * b2
        # m̂ / (√v̂ + ε) = c · m / (√v + ε √(1 - b2^t)) with c = √(1 - b2^t) / (1 - b1^t), optax's ε placement.
        root = jnp.sqrt(1.0 - decay2)
        correction = root / (1.0 - decay1)
        updates = jax.tree.map(lambda m, v: correction * (m / (jnp.sqrt(v) + eps * root)), mu, nu)
        return updates, AdamState(mu, nu, decay1, decay2)

    return optax.GradientTransformation(init, update)


def _direction(optimizer: str, weight_decay) -> optax.GradientTransformation:
    """The update direction before the learning rate (its state does not depend on ``weight_decay``)."""
    if optimizer == "adam":
        return scale_by_adam()
    if optimizer == "adamw":
        return optax.chain(scale_by_adam(), optax.add_decayed_weights(weight_decay))
    return optax.identity()


def _log_prior(tables, prior) -> Array:
    """``Σ a log θ + (b - a) log(1 - θ)`` over every logit of ``tables``."""
    a, b = prior
    return sum(jnp.sum(a * jax.nn.log_sigmoid(x) + (b - a) * jax.nn.log_sigmoid(-x)) for x in jax.tree.leaves(tables))


def batch_rows(word: Array, batch: Array, batch_size: int, num_sessions: int) -> Array:
    """``[B]`` i32 the sessions of minibatch ``batch`` in the order that the uint32 ``word`` keys
    (``jaxrank.utils.swap_or_not``): batches ``0, 1, …`` cover every session once, and positions past
    ``S`` (the last batch's padding) are ``S``, an empty session for ``_batch``."""
    position = (batch * batch_size + jnp.arange(batch_size)).astype(jnp.uint32)
    row = shuffle_index(word, jnp.minimum(position, num_sessions - 1), jnp.uint32(num_sessions))
    return jnp.where(position < num_sessions, row.astype(jnp.int32), num_sessions)


def _batch(log: SessionLog, rows: Array) -> SessionLog:
    """Sessions ``rows [B]`` of ``log``; a row ``>= S`` is an empty session (the last batch's padding)."""
    num = log.pair.shape[0]
    valid = rows < num
    take = jnp.minimum(rows, num - 1)
    return log._replace(query=log.query[take], pair=log.pair[take], doc=log.doc[take], clicks=log.clicks[take] &
                        valid[:, None], mask=log.mask[take] & valid[:, None])


def gradient_fitter(model: ClickModel, *, num_pairs: int, parametrization: Optional[param_lib.Parametrization] = None,
                    batch_size: Optional[int] = DEFAULT_BATCH_SIZE, optimizer: str = "adam",
                    schedule: str = "constant", num_epochs: int = DEFAULT_EPOCHS, prior=None) -> GradientFit:
    """The ``GradientFit`` of ``model`` (options static; see this module's docstring).

    Args:
      model: a ``ClickModel``.
      num_pairs: size of the pair tables (and rows of ``features``).
      parametrization: ``parametrization.tables()`` (default) or ``parametrization.features(...)``.
      batch_size: sessions per step; ``None`` for full batch.
      optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"``.
      schedule: ``"constant"`` or ``"cosine"`` (over ``num_epochs`` epochs).
      num_epochs: the length of the cosine schedule (the epochs the caller will run).
      prior: ``(a, b)`` Beta pseudo-counts on every table probability, or ``None``.
    """
    parametrization = param_lib.Parametrization() if parametrization is None else parametrization
    direction = functools.partial(_direction, optimizer)

    def num_batches(log):
        sessions = log.pair.shape[0]
        size = sessions if batch_size is None else min(batch_size, sessions)
        return -(-sessions // size), size

    def objective(trainable, log, features=None, prior_weight=1.0):
        params = param_lib.apply(parametrization, model, trainable, features)
        value = jnp.sum(session_log_likelihood(model, params, log))
        if prior is not None:
            value = value + prior_weight * _log_prior(param_lib.logit_tables(parametrization, trainable), prior)
        return value

    def init(key, log, features=None, *, learning_rate=DEFAULT_LEARNING_RATE, weight_decay=DEFAULT_WEIGHT_DECAY,
             prob=0.5, dtype=jnp.float32):
        key_init, key_order = jax.random.split(key)
        trainable = param_lib.init(key_init, parametrization, model, num_pairs, log.pair.shape[-1], prob=prob,
                                   dtype=dtype, features=features)
        weight_decay = jnp.asarray(weight_decay, dtype)
        return GradientState(trainable, direction(weight_decay).init(trainable), key_order, jnp.zeros((), jnp.int32),
                             jnp.zeros((), jnp.int32), jnp.asarray(learning_rate, dtype), weight_decay)

    def epoch(state: GradientState, log: SessionLog, features=None) -> tuple[GradientState, GradientInfo]:
        count, size = num_batches(log)
        dtype = state.learning_rate.dtype
        # Each batch's loss estimates -objective / N, so a step's size does not depend on the batch count.
        scale = count / jnp.maximum(jnp.sum(log.mask), 1).astype(dtype)
        total_steps = max(num_epochs * count, 1)
        tx = direction(state.weight_decay)

        def step(state, batch):
            loss_fn = lambda t: -objective(t, batch, features, 1.0 / count) * scale  # noqa: E731
            loss, grads = jax.value_and_grad(loss_fn)(state.trainable)
            updates, opt_state = tx.update(grads, state.opt_state, state.trainable)
            rate = state.learning_rate
            if schedule == "cosine":
                progress = jnp.minimum(state.step.astype(dtype) / total_steps, 1.0)
                rate = rate * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))
            trainable = jax.tree.map(lambda p, u: p - rate * u, state.trainable, updates)
            return state._replace(trainable=trainable, opt_state=opt_state, step=state.step + 1), loss

        if count == 1:
            state, losses = step(state, log)
        else:
            word = jax.random.bits(jax.random.fold_in(state.key, state.epoch), (), jnp.uint32)
            rows = lambda j: batch_rows(word, j, size, log.pair.shape[0])  # noqa: E731
            state, losses = jax.lax.scan(lambda s, j: step(s, _batch(log, rows(j))), state, jnp.arange(count))
        epoch = state.epoch + 1
        return state._replace(epoch=epoch), GradientInfo(-jnp.sum(losses) / count, epoch)

    def params(state: GradientState, features=None):
        return param_lib.apply(parametrization, model, state.trainable, features)

    return GradientFit(init, epoch, params, objective)


@functools.partial(jax.jit, static_argnames=("model", "num_pairs", "parametrization", "batch_size", "optimizer",
                                             "schedule", "num_epochs", "prior", "dtype"))
def _fit(key, log, features, learning_rate, weight_decay, prob, *, model, num_pairs, parametrization, batch_size,
         optimizer, schedule, num_epochs, prior, dtype):
    fitter = gradient_fitter(model, num_pairs=num_pairs, parametrization=parametrization, batch_size=batch_size,
                             optimizer=optimizer, schedule=schedule, num_epochs=num_epochs, prior=prior)
    state = fitter.init(key, log, features, learning_rate=learning_rate, weight_decay=weight_decay, prob=prob,
                        dtype=dtype)
    state = jax.lax.scan(lambda s, _: fitter.epoch(s, log, features), state, None, length=num_epochs)[0]
    return fitter.params(state, features)


def check_options(*, num_epochs, batch_size, optimizer, schedule, prior, learning_rate=None,
                  weight_decay=None) -> Optional[tuple]:
    """Raises ``ValueError`` naming a bad option; returns ``prior`` as a tuple of floats (or ``None``)."""
    check_int("num_epochs", num_epochs, minimum=1)
    if batch_size is not None:
        check_int("batch_size", batch_size, minimum=1, fix="or None for full batch")
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("schedule", schedule, SCHEDULES)
    check_number("learning_rate", learning_rate, low=0.0)
    check_number("weight_decay", weight_decay, low=0.0, low_inclusive=True)
    if prior is None:
        return None
    try:
        a, b = (float(p) for p in prior)
    except (TypeError, ValueError):
        raise ValueError(f"prior must be (a, b) pseudo-counts with 0 <= a <= b, or None; got {prior!r}.") from None
    if not 0.0 <= a <= b:
        raise ValueError(f"prior must be (a, b) pseudo-counts with 0 <= a <= b, or None; got {prior!r}.")
    return a, b


def fit_gradient(key: PRNGKey, log: SessionLog, model: ClickModel, *, parametrization=None, features=None,
                 num_epochs: int = DEFAULT_EPOCHS, batch_size: Optional[int] = DEFAULT_BATCH_SIZE,
                 learning_rate=DEFAULT_LEARNING_RATE, optimizer: str = "adam", weight_decay=DEFAULT_WEIGHT_DECAY,
                 schedule: str = "constant", init=0.5, prior=None, num_pairs=None, dtype=None):
    """Fits ``model`` to ``log`` by ``num_epochs`` epochs of gradient steps (this module's docstring).

    Args:
      key: PRNG key (minibatch orders; the networks' first weights).
      log: the sessions (``jaxrank.data.sessions.SessionLog``).
      model: a ``ClickModel`` (``CLICK_MODELS.build(name)``).
      parametrization: ``parametrization.tables()`` (default) or ``parametrization.features(...)``.
      features: ``[P, D]`` features of every pair (row ``p``: pair id ``p``), for ``features(...)``.
      num_epochs: passes over the log.
      batch_size: sessions per step (CLAX's 4096); ``None`` for full batch.
      learning_rate: the (peak) learning rate.
      optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"``.
      weight_decay: ``"adamw"``'s decoupled weight decay.
      schedule: ``"constant"`` or ``"cosine"``.
      init: the starting probability of every table parameter.
      prior: ``(a, b)`` Beta pseudo-counts on the table probabilities (EM's ``prior``), or ``None``.
      num_pairs: size of the pair tables; default ``int(log.num_pairs)`` (pass it under ``vmap``).
      dtype: of the parameters; default float32 (float64 under ``jax.enable_x64``).

    Returns:
      the fitted parameters (logits), the model's params NamedTuple.

    Raises:
      ValueError: for a bad option, a log with no session or a pair id outside ``[0, num_pairs)``,
        a parametrization field the model does not keep per pair, or missing features.
    """
    check_key("key", key)
    prior = check_options(num_epochs=num_epochs, batch_size=batch_size, optimizer=optimizer, schedule=schedule,
                          prior=prior, learning_rate=learning_rate, weight_decay=weight_decay)
    check_number("init", init, low=0.0, high=1.0)
    if num_pairs is None:
        try:
            num_pairs = int(log.num_pairs)
        except (jax.errors.ConcretizationTypeError, TypeError):
            raise ValueError("log.num_pairs is traced (fit_gradient inside jit or vmap); pass num_pairs= as an int.") \
                from None
    check_int("num_pairs", num_pairs, minimum=0)
    check_fit_log(log, num_pairs)
    parametrization = param_lib.check_parametrization(parametrization, model, features, num_pairs)
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    return _fit(key, log, features, jnp.asarray(learning_rate, dtype), jnp.asarray(weight_decay, dtype),
                jnp.asarray(init, dtype), model=model, num_pairs=num_pairs, parametrization=parametrization,
                batch_size=batch_size, optimizer=optimizer, schedule=schedule, num_epochs=num_epochs, prior=prior,
                dtype=dtype)
