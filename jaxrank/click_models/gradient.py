"""Fitting a click model by gradient descent on its negative log-likelihood with optax, as CLAX does
(Hager, Zoeter, de Rijke, "CLAX: Fast and Flexible Neural Click Models in JAX", 2025: Adam-family
optimizers on the masked binary cross-entropy of the conditional click probabilities).

The objective is the log-likelihood EM climbs too (Chuklin, Markov, de Rijke, *Click Models for Web
Search*, 2015, ch. 4), ``L(θ) = Σ_s Σ_r log P(C_r = c_r | C_<r; θ)`` (``conditional_log_probs``
summed: ``jaxrank.click_models.base.session_log_likelihood``, in closed form where the model has
one), divided by the number of shown positions ``N`` (CLAX's mean over positions; the scale only
sets the step size), plus ``a log θ + (b - a) log(1 - θ)`` for every table probability ``θ``: the
log-density of the Beta prior whose maximum a posteriori is EM's pseudo-count update ``(a + numerator)
/ (b + denominator)`` (``jaxrank.click_models.base.maximize``), so gradient and EM with the same
``prior_a``, ``prior_b`` climb the same function. The default is EM's (PyClick's) ``(1, 2)``, a
Beta(2, 2) prior; ``prior=None`` is the plain likelihood, EM's ``(0, 0)``. The counting models (GCTR,
RCTR, DCTR, CM, DCM, SDBN) are fitted by EM under simplifying assumptions; here they get the exact
likelihood, so their fitted values differ.

Parameters are tables or functions of features (``jaxrank.click_models.parametrization``). One
epoch is one ``lax.scan`` over minibatches of ``batch_size`` sessions in a fresh random order
(``fold_in(key, epoch)``; the last batch is padded with empty sessions), drawn batch by batch with
the swap-or-not shuffle (``jaxrank.utils.swap_or_not``: no ``[S]`` permutation is stored or
sorted), each batch's loss scaled to estimate the whole objective over ``N``; ``batch_size=None``
is full-batch (one step per epoch, the log read in place). Optimizers (``optax``): ``"adam"``
(default; ``adam``), ``"adamw"`` (CLAX's experiments, with ``weight_decay``, optax's default
``1e-4``), ``"sgd"``; the learning rate is constant or decays to 0 along a cosine over all steps
(``schedule="cosine"``).

Early stopping (CLAX's ``EarlyStopping``): ``validation=f`` holds out ``round(f·S)`` sessions (a
random split drawn from the key, by the same shuffle), evaluates their log-likelihood after every
epoch and keeps the parameters of the best epoch inside the scan (``GradientState.best``), so a grid
of fits stays lanes of one program (at the cost of a second copy of the trainable values); every
epoch runs, and ``GradientInfo.best_epoch`` says which one the fit returns. CLAX stops at the first
epoch without improvement (patience 0); here the best of all epochs is kept.

Defaults, measured on logs generated from MQ2008 (every query, a noisy production ranker shown by a
Plackett–Luce draw at temperature 1, top 10, clicked by the informational cascade user; the
``click_models`` experiment's simulator), test log-likelihood per session on a quarter held out, EM
with PyClick's settings as the anchor (``benchmarks/click_model_gradient_defaults.py``):

* learning rate 0.05, 50 epochs, ``batch_size="auto"`` (``auto_batch_size``: at least 32 steps an
  epoch, 64 to 4096 sessions), ``prior=(1, 2)``: within 0.002 nats of EM's fit for GCTR, PBM, UBM and
  DBN on 3,000 training sessions (DBN -0.6071 against EM's -0.6054) and within 0.0004 on 35,000 (DBN
  -0.5444 against -0.5441);
* CLAX's Yandex settings (lr 0.01, batches of 4096, no prior) underfit: 450 steps on 35,000 sessions
  leave DBN at -0.5617 and PBM at -0.5837 (EM -0.5441, -0.5801); 50 steps on 3,000 leave GCTR's click
  probability at 0.390 against the MLE's 0.318. Without the prior, lr 0.05 in batches of 1024 overfits
  the per-pair tables (35,000 sessions: DBN -0.5865, PBM -0.6058; 3,000: PBM -0.782);
* ``validation=0.1`` picks epoch 1-2 for PBM and UBM, with a better test likelihood than EM's (UBM
  -0.5707 against -0.5823 on 3,000 sessions, -0.5513 against -0.5521 on 35,000), and epoch 45-49 for
  DBN, which then fits a tenth fewer sessions (-0.6114, -0.5470); it is off by default.

Hyperparameters (``learning_rate``, ``weight_decay``, the starting probability, ``prior_a``,
``prior_b``) are array leaves of the state, so ``jax.vmap`` over them, or over keys, compiles once;
``gradient_fitter`` gives the pieces (``init``, ``epoch``, ``params``) that
``jaxrank.click_models.study`` runs as lanes.
"""

import functools
import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import optax

from jaxrank.click_models import parametrization as param_lib
from jaxrank.click_models.base import ClickModel, checked_num_pairs, session_log_likelihood
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_choice, check_int, check_key, check_number
from jaxrank.utils.swap_or_not import shuffle_index

OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "cosine")
# Defaults measured on generated MQ2008 logs of 3,000 and 35,000 training sessions (module docstring).
DEFAULT_LEARNING_RATE = 0.05
DEFAULT_EPOCHS = 50  # CLAX's Trainer
DEFAULT_BATCH_SIZE = "auto"  # auto_batch_size: at least 32 steps an epoch
AUTO_STEPS_PER_EPOCH = 32
AUTO_BATCH_RANGE = (64, 4096)  # 4096: CLAX's Yandex batches
DEFAULT_PRIOR = (1.0, 2.0)  # EM's pseudo-counts (PyClick's): a Beta(2, 2) log-prior per table probability
DEFAULT_VALIDATION = 0.0  # no split; 0.1 holds out a tenth and keeps the best epoch (CLAX's early stopping)
DEFAULT_WEIGHT_DECAY = 1e-4  # optax.adamw's default (CLAX uses it); only "adamw" reads it
# The f32 leaves of a GradientState that init sets (a grid of them is lanes of one program): the learning
# rate, CLAX's weight decay, PyClick's starting probability 0.5 and EM's pseudo-counts.
HPARAMS = {"learning_rate": DEFAULT_LEARNING_RATE, "weight_decay": DEFAULT_WEIGHT_DECAY, "init": 0.5,
           "prior_a": DEFAULT_PRIOR[0], "prior_b": DEFAULT_PRIOR[1]}


class GradientState(NamedTuple):
    trainable: Any  # the parametrization's trainable values
    opt_state: Any  # the optimizer's state (Adam's moments)
    key: PRNGKey  # [] key of the minibatch orders (epoch e uses fold_in(key, e))
    split: Array  # [] uint32 word of the validation split (``jaxrank.utils.swap_or_not``)
    epoch: Array  # [] i32 epochs done
    step: Array  # [] i32 optimizer steps done (the schedule's clock)
    learning_rate: Array  # [] float, in the parameters' dtype
    weight_decay: Array  # [] float ("adamw" only)
    prior_a: Array  # [] float: Beta pseudo-count a of every table probability (0: none)
    prior_b: Array  # [] float: pseudo-count b (>= a)
    best: Any  # the trainable values of the epoch with the best validation log-likelihood; None without a split
    best_value: Array  # [] that validation log-likelihood per session (-inf before the first epoch)
    best_epoch: Array  # [] i32 that epoch (1-based; 0: none finite yet; the last epoch without a split)


class GradientInfo(NamedTuple):
    objective: Array  # [] the epoch's estimate of L / N (plus the log prior): its minibatches' values summed
    epoch: Array  # [] i32 epochs done after this one
    validation: Array  # [] validation log-likelihood per session after this epoch (NaN without a split)
    best_epoch: Array  # [] i32 the epoch whose parameters ``params`` returns (0: none finite, the last one's)


class GradientFit(NamedTuple):
    """The pieces of a gradient fit of one model (``gradient_fitter``).

    * ``init(key, log, features=None, *, learning_rate, weight_decay, prob, prior_a, prior_b) -> GradientState``;
    * ``epoch(state, log, features=None) -> (GradientState, GradientInfo)``: one pass over the training sessions;
    * ``params(state, features=None) -> params``: the model's logit NamedTuple (the best epoch's with a split);
    * ``objective(trainable, log, features=None, prior=(0, 0)) -> []``: ``L`` plus the log prior, the value climbed.
    """

    init: Callable[..., GradientState]
    epoch: Callable[..., tuple]
    params: Callable[..., Any]
    objective: Callable[..., Array]


class AdamState(NamedTuple):
    inner: Any  # optax.inject_hyperparams(optax.scale_by_adam)'s state: the moments and ``eps``
    decay1: Array  # [] b1^t after t steps
    decay2: Array  # [] b2^t


def adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> optax.GradientTransformation:
    """Adam's direction (Kingma & Ba, 2015, Algorithm 1): ``optax.scale_by_adam`` with its bias
    corrections applied as one factor of the step, the paper's reordering at the end of its section 2,
    ``m̂ / (√v̂ + ε) = c_t · m / (√v + ε √(1 - b2^t))`` with ``c_t = √(1 - b2^t) / (1 - b1^t)`` and ``b^t``
    running products. The update is ``optax.adam``'s in exact arithmetic and bit-identical on any number
    of devices: ``optax.scale_by_adam`` divides the moments by ``1 - b^t``, a per-lane value broadcast
    over the parameters, and XLA's algebraic simplifier rewrites such quotients in a program-dependent
    order (``x / b`` into ``x · (1 / b)`` in a one-device program, ``(m / b1) / d`` into ``m / (b1 · d)``
    in a partitioned one), which changed the last bits of the fits between 1 and 2+ devices. Here
    optax's corrections are exactly 1 (its count saturates at the largest int32, where ``b^count``
    is 0), so every rewrite of those quotients gives the same bits, and ``c_t`` multiplies."""
    inner = optax.inject_hyperparams(optax.scale_by_adam, static_args=("b1", "b2"))(b1=b1, b2=b2, eps=eps)

    def init(params):
        dtype = jax.tree.leaves(params)[0].dtype
        state = inner.init(params)
        saturated = state.inner_state._replace(count=jnp.asarray(jnp.iinfo(jnp.int32).max, jnp.int32))
        hyperparams = {k: jnp.asarray(v, dtype) for k, v in state.hyperparams.items()}
        one = jnp.ones((), dtype)
        return AdamState(state._replace(inner_state=saturated, hyperparams=hyperparams), one, one)

    def update(grads, state, params=None):
        decay1, decay2 = state.decay1 * b1, state.decay2 * b2
        root = jnp.sqrt(1.0 - decay2)
        hyperparams = {**state.inner.hyperparams, "eps": eps * root}
        direction, inner_state = inner.update(grads, state.inner._replace(hyperparams=hyperparams), params)
        correction = root / (1.0 - decay1)
        return jax.tree.map(lambda d: correction * d, direction), AdamState(inner_state, decay1, decay2)

    return optax.GradientTransformation(init, update)


def _direction(optimizer: str, weight_decay) -> optax.GradientTransformation:
    """The update direction before the learning rate (its state does not depend on ``weight_decay``)."""
    if optimizer == "adam":
        return adam()
    if optimizer == "adamw":
        return optax.chain(adam(), optax.add_decayed_weights(weight_decay))
    return optax.identity()


def _log_prior(tables, a, b) -> Array:
    """``Σ a log θ + (b - a) log(1 - θ)`` over every logit of ``tables``."""
    return sum(jnp.sum(a * jax.nn.log_sigmoid(x) + (b - a) * jax.nn.log_sigmoid(-x)) for x in jax.tree.leaves(tables))


def num_validation(num_sessions: int, validation: float) -> int:
    """Sessions held out for validation: ``round(validation · S)``."""
    return int(round(num_sessions * validation))


def auto_batch_size(num_sessions: int) -> int:
    """``batch_size="auto"``: the power of two nearest below ``S / 32`` (at least 32 steps an epoch), within
    ``[64, 4096]`` (CLAX's Yandex batches at most)."""
    size = 2 ** int(math.floor(math.log2(max(num_sessions / AUTO_STEPS_PER_EPOCH, 1.0))))
    return int(min(max(size, AUTO_BATCH_RANGE[0]), AUTO_BATCH_RANGE[1]))


def resolve_batch_size(batch_size, num_sessions: int) -> Optional[int]:
    """The sessions per step of ``batch_size`` (an int, ``"auto"`` or ``None``: full batch) for ``S`` sessions."""
    return auto_batch_size(num_sessions) if batch_size == "auto" else batch_size


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
                    batch_size=DEFAULT_BATCH_SIZE, optimizer: str = "adam",
                    schedule: str = "constant", num_epochs: int = DEFAULT_EPOCHS,
                    validation: float = DEFAULT_VALIDATION) -> GradientFit:
    """The ``GradientFit`` of ``model`` (options static; see this module's docstring).

    Args:
      model: a ``ClickModel``.
      num_pairs: size of the pair tables (and rows of ``features``).
      parametrization: ``parametrization.tables()`` (default) or ``parametrization.features(...)``.
      batch_size: sessions per step, ``"auto"`` (``auto_batch_size`` of the training sessions) or ``None``
        for full batch.
      optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"``.
      schedule: ``"constant"`` or ``"cosine"`` (over ``num_epochs`` epochs).
      num_epochs: the length of the cosine schedule (the epochs the caller will run).
      validation: share of the sessions held out to pick the epoch (0: none, the last epoch's parameters).
    """
    parametrization = param_lib.Parametrization() if parametrization is None else parametrization
    direction = functools.partial(_direction, optimizer)

    def sizes(log):
        """``(V, T, batches per epoch, batch size)``: held-out and training sessions."""
        sessions = log.pair.shape[0]
        held = num_validation(sessions, validation)
        train = sessions - held
        if validation and not 0 < held < sessions:
            raise ValueError(f"validation={validation} of {sessions} sessions holds out {held}: both the training "
                             f"and the validation part need a session (validation=0 for none).")
        size = train if batch_size is None else min(resolve_batch_size(batch_size, train), train)
        return held, train, -(-train // size), size

    def objective(trainable, log, features=None, prior=(0.0, 0.0), prior_weight=1.0):
        params = param_lib.apply(parametrization, model, trainable, features)
        value = jnp.sum(session_log_likelihood(model, params, log))
        tables = param_lib.logit_tables(parametrization, trainable)
        return value + prior_weight * _log_prior(tables, *prior)

    def init(key, log, features=None, *, learning_rate=DEFAULT_LEARNING_RATE, weight_decay=DEFAULT_WEIGHT_DECAY,
             prob=0.5, prior_a=DEFAULT_PRIOR[0], prior_b=DEFAULT_PRIOR[1], dtype=jnp.float32):
        key_init, key_order, key_split = jax.random.split(key, 3)
        trainable = param_lib.init(key_init, parametrization, model, num_pairs, log.pair.shape[-1], prob=prob,
                                   dtype=dtype, features=features)
        weight_decay = jnp.asarray(weight_decay, dtype)
        held = sizes(log)[0]
        return GradientState(
            trainable, direction(weight_decay).init(trainable), key_order, jax.random.bits(key_split, (), jnp.uint32),
            jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32), jnp.asarray(learning_rate, dtype), weight_decay,
            jnp.asarray(prior_a, dtype), jnp.asarray(prior_b, dtype), trainable if held else None,
            jnp.asarray(-jnp.inf, dtype), jnp.zeros((), jnp.int32))

    def epoch(state: GradientState, log: SessionLog, features=None) -> tuple[GradientState, GradientInfo]:
        held, train, count, size = sizes(log)
        sessions = log.pair.shape[0]
        dtype = state.learning_rate.dtype

        def session_of(position):  # position p of the training part -> its session (T: padding -> S)
            if not held:
                return position
            row = shuffle_index(state.split, jnp.minimum(position, train - 1).astype(jnp.uint32) + held,
                                jnp.uint32(sessions))
            return jnp.where(position < train, row.astype(jnp.int32), sessions)

        held_rows = shuffle_index(state.split, jnp.arange(held, dtype=jnp.uint32), jnp.uint32(sessions))
        held_out = _batch(log, held_rows.astype(jnp.int32)) if held else None
        positions = jnp.sum(log.mask) - (jnp.sum(held_out.mask) if held else 0)
        # Each batch's loss estimates -objective / N, so a step's size does not depend on the batch count.
        scale = count / jnp.maximum(positions, 1).astype(dtype)
        total_steps = max(num_epochs * count, 1)
        tx = direction(state.weight_decay)
        prior = (state.prior_a, state.prior_b)

        def step(state, batch):
            loss_fn = lambda t: -objective(t, batch, features, prior, 1.0 / count) * scale  # noqa: E731
            loss, grads = jax.value_and_grad(loss_fn)(state.trainable)
            updates, opt_state = tx.update(grads, state.opt_state, state.trainable)
            rate = state.learning_rate
            if schedule == "cosine":
                progress = jnp.minimum(state.step.astype(dtype) / total_steps, 1.0)
                rate = rate * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))
            trainable = jax.tree.map(lambda p, u: p - rate * u, state.trainable, updates)
            return state._replace(trainable=trainable, opt_state=opt_state, step=state.step + 1), loss

        if count == 1:
            state, losses = step(state, _batch(log, session_of(jnp.arange(train))) if held else log)
        else:
            word = jax.random.bits(jax.random.fold_in(state.key, state.epoch), (), jnp.uint32)
            rows = lambda j: session_of(batch_rows(word, j, size, train))  # noqa: E731
            state, losses = jax.lax.scan(lambda s, j: step(s, _batch(log, rows(j))), state, jnp.arange(count))
        epoch = state.epoch + 1
        state = state._replace(epoch=epoch)
        if held:
            params = param_lib.apply(parametrization, model, state.trainable, features)
            value = jnp.sum(session_log_likelihood(model, params, held_out)) / held
            better = value > state.best_value  # a NaN never is
            state = state._replace(best=jax.tree.map(lambda b, t: jnp.where(better, t, b), state.best, state.trainable),
                                   best_value=jnp.where(better, value, state.best_value),
                                   best_epoch=jnp.where(better, epoch, state.best_epoch))
        else:
            value = jnp.asarray(jnp.nan, dtype)
            state = state._replace(best_epoch=epoch)
        return state, GradientInfo(-jnp.sum(losses) / count, epoch, value, state.best_epoch)

    def params(state: GradientState, features=None):
        trainable = state.trainable
        if state.best is not None:  # no finite validation value (best_epoch 0): the last epoch's, so it shows
            trainable = jax.tree.map(lambda b, t: jnp.where(state.best_epoch > 0, b, t), state.best, trainable)
        return param_lib.apply(parametrization, model, trainable, features)

    return GradientFit(init, epoch, params, objective)


@functools.partial(jax.jit, static_argnames=("model", "num_pairs", "parametrization", "batch_size", "optimizer",
                                             "schedule", "num_epochs", "validation", "dtype"))
def _fit(key, log, features, learning_rate, weight_decay, prob, prior_a, prior_b, *, model, num_pairs, parametrization,
         batch_size, optimizer, schedule, num_epochs, validation, dtype):
    fitter = gradient_fitter(model, num_pairs=num_pairs, parametrization=parametrization, batch_size=batch_size,
                             optimizer=optimizer, schedule=schedule, num_epochs=num_epochs, validation=validation)
    state = fitter.init(key, log, features, learning_rate=learning_rate, weight_decay=weight_decay, prob=prob,
                        prior_a=prior_a, prior_b=prior_b, dtype=dtype)
    state, infos = jax.lax.scan(lambda s, _: fitter.epoch(s, log, features), state, None, length=num_epochs)
    return fitter.params(state, features), infos


def check_options(*, num_epochs, batch_size, optimizer, schedule, prior, learning_rate=None,
                  weight_decay=None, validation=0.0) -> Optional[tuple]:
    """Raises ``ValueError`` naming a bad option; returns ``prior`` as a tuple of floats (or ``None``)."""
    check_int("num_epochs", num_epochs, minimum=1)
    if batch_size is not None and batch_size != "auto":
        check_int("batch_size", batch_size, minimum=1, fix="\"auto\", or None for full batch")
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("schedule", schedule, SCHEDULES)
    check_number("learning_rate", learning_rate, low=0.0)
    check_number("weight_decay", weight_decay, low=0.0, low_inclusive=True)
    check_number("validation", validation, low=0.0, high=1.0, low_inclusive=True,
                 fix="the share of the sessions held out to pick the epoch")
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
                 num_epochs: int = DEFAULT_EPOCHS, batch_size=DEFAULT_BATCH_SIZE,
                 learning_rate=DEFAULT_LEARNING_RATE, optimizer: str = "adam", weight_decay=DEFAULT_WEIGHT_DECAY,
                 schedule: str = "constant", init=0.5, prior=DEFAULT_PRIOR, validation: float = DEFAULT_VALIDATION,
                 num_pairs=None, dtype=None, return_info: bool = False):
    """Fits ``model`` to ``log`` by ``num_epochs`` epochs of gradient steps (this module's docstring).

    Args:
      key: PRNG key (minibatch orders, the validation split, the networks' first weights).
      log: the sessions (``jaxrank.data.sessions.SessionLog``).
      model: a ``ClickModel`` (``CLICK_MODELS.build(name)``).
      parametrization: ``parametrization.tables()`` (default) or ``parametrization.features(...)``.
      features: ``[P, D]`` features of every pair (row ``p``: pair id ``p``), for ``features(...)``.
      num_epochs: passes over the training sessions.
      batch_size: sessions per step, ``"auto"`` (``auto_batch_size`` of the training sessions) or ``None``
        for full batch.
      learning_rate: the (peak) learning rate.
      optimizer: ``"adam"``, ``"adamw"`` or ``"sgd"``.
      weight_decay: ``"adamw"``'s decoupled weight decay.
      schedule: ``"constant"`` or ``"cosine"``.
      init: the starting probability of every table parameter.
      prior: ``(a, b)`` Beta pseudo-counts on the table probabilities (EM's ``prior_a``, ``prior_b``), or
        ``None`` for the plain likelihood.
      validation: share of the sessions held out (a random split drawn from ``key``); the parameters
        returned are those of the epoch with the best validation log-likelihood. 0: no split, the last
        epoch's parameters.
      num_pairs: size of the pair tables; default ``int(log.num_pairs)`` (pass it under ``vmap``).
      dtype: of the parameters; default float32 (float64 under ``jax.enable_x64``).
      return_info: also return the ``GradientInfo`` of every epoch (leaves ``[num_epochs]``).

    Returns:
      the fitted parameters (logits), the model's params NamedTuple; with ``return_info``,
      ``(params, infos)``.

    Raises:
      ValueError: for a bad option, a log with no session or a pair id outside ``[0, num_pairs)``,
        a parametrization field the model does not keep per pair, or missing features.
    """
    check_key("key", key)
    prior = check_options(num_epochs=num_epochs, batch_size=batch_size, optimizer=optimizer, schedule=schedule,
                          prior=prior, learning_rate=learning_rate, weight_decay=weight_decay, validation=validation)
    check_number("init", init, low=0.0, high=1.0)
    num_pairs = checked_num_pairs(log, num_pairs, "fit_gradient")
    parametrization = param_lib.check_parametrization(parametrization, model, features, num_pairs)
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    prior_a, prior_b = (0.0, 0.0) if prior is None else prior
    params, infos = _fit(key, log, features, *(jnp.asarray(v, dtype) for v in (learning_rate, weight_decay, init,
                                                                               prior_a, prior_b)),
                         model=model, num_pairs=num_pairs, parametrization=parametrization, batch_size=batch_size,
                         optimizer=optimizer, schedule=schedule, num_epochs=num_epochs, validation=float(validation),
                         dtype=dtype)
    return (params, infos) if return_info else params
