"""Many click-model fits as lanes of one program (``jaxrank.lanes``): "fit model m on log l with
settings h", for many seeds, settings or logs at once, sharded over devices, checkpointed and
resumable.

A lane is one fit. Its inputs are a ``FitInputs`` (the log and, for feature parametrizations, the
pairs' features): shared by every lane (``data``: one log, many settings or seeds) or one per lane
(``lane_data``: logs of one shape stacked ``[N, S, K]``, e.g. one generated log per seed). Each
lane's settings are its ``hparams`` (``[N]`` each):

* ``em_study``: ``init`` (starting probability, PyClick's 0.5), ``prior_a``, ``prior_b``
  (pseudo-counts, PyClick's 1 and 2), ``cap`` (PyClick's ``1 - 10⁻⁶``); a chunk is a row of EM
  iterations (``jaxrank.click_models.em.em_step``, chunked E-step with ``chunk_size``);
* ``gradient_study``: ``learning_rate``, ``weight_decay``, ``init``, ``prior_a``, ``prior_b``; a chunk
  is a row of epochs (``jaxrank.click_models.gradient.gradient_fitter``), each lane drawing its
  minibatch orders and validation split from its own key.

Every lane reports the fitted params (logits). ``fit_lanes`` builds the study and the chunks and
calls ``jaxrank.lanes.run_lanes``; like every study, its results do not depend on the number of
devices.
"""

from typing import NamedTuple, Optional

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes
from jaxrank.click_models import gradient as gradient_lib
from jaxrank.click_models import parametrization as param_lib
from jaxrank.click_models import em as em_lib
from jaxrank.click_models import metrics
from jaxrank.click_models.base import DEFAULT_CHUNK_SIZE, EM_HPARAMS, ClickModel, check_fit_log
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array
from jaxrank.utils.checks import check_choice, check_int

ESTIMATORS = ("em", "gradient")
GRADIENT_HPARAMS = gradient_lib.HPARAMS


class FitInputs(NamedTuple):
    log: SessionLog  # the sessions ([S, K], or [N, S, K] as per-lane data)
    features: Optional[Array] = None  # [P, D] pair features (features parametrizations only)


def _inputs(data: "FitInputs", lane_data: Optional["FitInputs"]) -> "FitInputs":
    """This lane's log (its own, else the shared one) with the shared features."""
    return FitInputs(data.log if lane_data is None else lane_data.log, data.features)


def _hparam(hparams: dict, name: str, defaults: dict, dtype):
    return jnp.asarray(hparams.get(name, defaults[name]), dtype)


def em_study(model: ClickModel, *, num_pairs: int, dtype=jnp.float32) -> lanes.Study:
    """EM of ``model`` (``model.chunk_size``: sessions per E-step chunk) as a lane: the carry is an
    ``EMState`` (``jaxrank.click_models.em``), a chunk is a row of iterations (``run_em``), the result
    the params."""

    def init(key, hparams, data, lane_data):
        k = _inputs(data, lane_data).log.pair.shape[-1]
        return em_lib.init(model, key, num_pairs, k, **{name: _hparam(hparams, name, EM_HPARAMS, dtype)
                                                         for name in EM_HPARAMS}, dtype=dtype)

    def advance(state, chunk, data, lane_data):
        return em_lib.run_em(model, state, _inputs(data, lane_data).log, chunk.shape[0])[0]

    def result(state, data, lane_data):
        return state.params

    return lanes.Study(init, advance, result)


def gradient_study(model: ClickModel, *, num_pairs: int, parametrization=None,
                   batch_size=gradient_lib.DEFAULT_BATCH_SIZE, optimizer: str = "adam",
                   schedule: str = "constant", num_epochs: int = gradient_lib.DEFAULT_EPOCHS,
                   prior=gradient_lib.DEFAULT_PRIOR, validation: float = gradient_lib.DEFAULT_VALIDATION,
                   dtype=jnp.float32) -> lanes.Study:
    """Gradient fitting of ``model`` as a lane: the carry is a ``GradientState``, the result the params
    (the best epoch's with a ``validation`` split; options as ``jaxrank.click_models.gradient.gradient_fitter``).
    ``prior=(a, b)`` sets the lanes' ``prior_a`` / ``prior_b`` where ``hparams`` does not (``None``: 0, the
    plain likelihood)."""
    fitter = gradient_lib.gradient_fitter(model, num_pairs=num_pairs, parametrization=parametrization,
                                          batch_size=batch_size, optimizer=optimizer, schedule=schedule,
                                          num_epochs=num_epochs, validation=validation)
    prior_a, prior_b = (0.0, 0.0) if prior is None else prior
    defaults = dict(GRADIENT_HPARAMS, prior_a=prior_a, prior_b=prior_b)

    def init(key, hparams, data, lane_data):
        inputs = _inputs(data, lane_data)
        leaves = {name: _hparam(hparams, name, defaults, dtype) for name in defaults}
        return fitter.init(key, inputs.log, inputs.features, learning_rate=leaves["learning_rate"],
                           weight_decay=leaves["weight_decay"], prob=leaves["init"], prior_a=leaves["prior_a"],
                           prior_b=leaves["prior_b"], dtype=dtype)

    def advance(state, chunk, data, lane_data):
        inputs = _inputs(data, lane_data)
        return jax.lax.scan(lambda s, _: fitter.epoch(s, inputs.log, inputs.features), state, chunk)[0]

    def result(state, data, lane_data):
        return fitter.params(state, _inputs(data, lane_data).features)

    return lanes.Study(init, advance, result)


def fit_lanes(key_or_keys, estimator: str, model: ClickModel, *, log: Optional[SessionLog] = None,
              logs: Optional[SessionLog] = None, features=None, hparams: Optional[dict] = None,
              num_steps: Optional[int] = None, steps_per_chunk: Optional[int] = None, chunks_per_call: int = 1,
              num_pairs: Optional[int] = None, chunk_size: Optional[int] = DEFAULT_CHUNK_SIZE, parametrization=None,
              batch_size=gradient_lib.DEFAULT_BATCH_SIZE, optimizer: str = "adam",
              schedule: str = "constant", prior=gradient_lib.DEFAULT_PRIOR, dtype=None, mesh=None, checkpoint=None,
              label=None, validation: float = gradient_lib.DEFAULT_VALIDATION):
    """``N`` fits of ``model`` as lanes (``jaxrank.lanes.run_lanes``).

    Args:
      key_or_keys: ``[N]`` PRNG keys, one per lane, or one key split into the ``N`` lanes (``N``: the
        stacked ``logs``' or the ``hparams``' size, else 1). EM ignores them; gradient lanes draw their
        batches from them.
      estimator: ``"em"`` or ``"gradient"``.
      model: a ``ClickModel``.
      log: one log shared by every lane, or
      logs: ``[N, S, K]`` logs, one per lane (``jax.tree.map(jnp.stack, ...)`` of logs of one shape).
      features: ``[P, D]`` pair features, shared (for a ``features(...)`` parametrization).
      hparams: ``{name: [N]}`` per-lane settings (``EM_HPARAMS`` / ``GRADIENT_HPARAMS``; missing ones take
        their defaults).
      num_steps: EM iterations (default 50; a counting model does 1) or gradient epochs (default 50).
      steps_per_chunk: iterations or epochs per chunk (default all); must divide ``num_steps``.
      chunks_per_call: chunks per compiled call (checkpoints and progress come between calls).
      num_pairs: size of the pair tables (default the log's).
      chunk_size: EM only: sessions per E-step chunk (``jaxrank.click_models.fit_em``'s; ``None``: all at once).
      parametrization, batch_size, optimizer, schedule, prior, validation: gradient only, as ``fit_gradient``
        (``prior``, default EM's (1, 2), ``None`` for none, sets the ``prior_a`` / ``prior_b``
        hyperparameters where ``hparams`` does not).
      dtype: of the parameters; default float32 (float64 under ``jax.enable_x64``).
      mesh, checkpoint, label: as ``jaxrank.lanes.run_lanes``.

    Returns:
      the fitted params NamedTuple, numpy leaves with leading axis ``[N]``.

    Raises:
      ValueError: for a bad option, both or neither of ``log`` / ``logs``, an unknown hyperparameter,
        or a log a fit cannot use.
    """
    check_choice("estimator", estimator, ESTIMATORS)
    if (log is None) == (logs is None):
        raise ValueError("pass log= (one log for every lane) or logs= (one per lane, stacked), not both or neither.")
    shared = log is not None
    source = log if shared else logs
    if num_pairs is None:
        num_pairs = int(np.max(np.asarray(source.num_pairs)))
    check_int("num_pairs", num_pairs, minimum=0)
    if shared:
        check_fit_log(source, num_pairs)
    else:
        for i in range(np.shape(logs.mask)[0]):
            check_fit_log(jax.tree.map(lambda x, i=i: x[i], logs), num_pairs)
    defaults = EM_HPARAMS if estimator == "em" else GRADIENT_HPARAMS
    unknown = sorted(set(hparams or {}) - set(defaults))
    if unknown:
        raise ValueError(f"{estimator} lanes have no hyperparameter {unknown[0]!r}; they take {', '.join(defaults)}.")
    num_steps = gradient_lib.DEFAULT_EPOCHS if num_steps is None else num_steps
    check_int("num_steps", num_steps, minimum=1)
    if estimator == "em" and model.fitting == "counting":
        num_steps = steps_per_chunk = 1
    steps_per_chunk = num_steps if steps_per_chunk is None else steps_per_chunk
    check_int("steps_per_chunk", steps_per_chunk, minimum=1)
    if num_steps % steps_per_chunk:
        raise ValueError(f"steps_per_chunk={steps_per_chunk} must divide num_steps={num_steps}.")
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    if estimator == "em":
        if chunk_size is not None:
            check_int("chunk_size", chunk_size, minimum=1)
        study = em_study(model._replace(chunk_size=chunk_size), num_pairs=num_pairs, dtype=dtype)
    else:
        prior = gradient_lib.check_options(num_epochs=num_steps, batch_size=batch_size, optimizer=optimizer,
                                           schedule=schedule, prior=prior, validation=validation)
        parametrization = param_lib.check_parametrization(parametrization, model, features, num_pairs)
        study = gradient_study(model, num_pairs=num_pairs, parametrization=parametrization, batch_size=batch_size,
                               optimizer=optimizer, schedule=schedule, num_epochs=num_steps, prior=prior, dtype=dtype,
                               validation=validation)
    chunks = np.arange(num_steps, dtype=np.int32).reshape(-1, steps_per_chunk)
    keys = _lane_keys(key_or_keys, logs, hparams)
    features = None if features is None else jnp.asarray(features)
    data = FitInputs(source if shared else None, features)
    lane_data = None if shared else FitInputs(source, None)
    return lanes.run_lanes(study, keys, hparams, data=data, lane_data=lane_data, chunks=chunks,
                           chunks_per_call=chunks_per_call, mesh=mesh, checkpoint=checkpoint, label=label)


def _lane_keys(key_or_keys, logs: Optional[SessionLog], hparams: Optional[dict]):
    """``[N]`` keys: the given ones, or one key split into as many lanes as ``logs`` or ``hparams`` hold."""
    keys = key_or_keys if lanes.is_key(key_or_keys) else jax.random.wrap_key_data(jnp.asarray(key_or_keys))
    if keys.ndim == 1:
        return keys
    if keys.ndim:
        raise ValueError(f"key_or_keys must be one PRNG key or [N] keys; got shape {keys.shape}.")
    sizes = {np.size(v) for v in (hparams or {}).values()} | ({np.shape(logs.mask)[0]} if logs is not None else set())
    if len(sizes) > 1:
        raise ValueError(f"logs and hparams give different lane counts {sorted(sizes)}; pass one value per lane.")
    return jax.random.split(keys, sizes.pop() if sizes else 1)


def shuffled_splits(keys, log: SessionLog, num_train: int) -> tuple[SessionLog, SessionLog]:
    """``(train, test)`` logs of ``N`` lanes, numpy ``[N, S', K]``: lane ``i`` orders ``log``'s ``S``
    sessions by ``jax.random.permutation(keys[i], S)`` and trains on the first ``num_train``."""
    num = log.pair.shape[0]
    check_int("num_train", num_train, minimum=1)
    if num_train >= num:
        raise ValueError(f"num_train={num_train} leaves no test session of the log's {num}.")
    orders = np.asarray(jax.jit(jax.vmap(lambda k: jax.random.permutation(k, num)))(keys))
    lanes_ = orders.shape[0]

    def take(rows):
        per_session = {f: np.asarray(getattr(log, f))[rows] for f in ("query", "pair", "doc", "clicks", "mask")}
        sizes = {f: np.broadcast_to(np.asarray(getattr(log, f)), (lanes_,)).copy() for f in ("num_pairs",
                                                                                             "num_queries")}
        return log._replace(**per_session, **sizes)

    return take(orders[:, :num_train]), take(orders[:, num_train:])


@functools.partial(jax.jit, static_argnames=("model", "conventions"))
def evaluate_lanes(model: ClickModel, params, logs: SessionLog, pairs: Optional[Array] = None, *,
                   conventions: str = "jaxrank") -> dict:
    """Test metrics of ``N`` fits on their own logs (``params`` and ``logs`` with leading axis ``[N]``):
    ``log_likelihood`` (PyClick's per-session mean), ``perplexity`` and ``conditional_perplexity`` with
    their ``*_per_rank`` values, ``[N]`` / ``[N, K]``; with ``pairs [...]``, also ``relevance [N, ...]``.
    ``conventions``: of the conditional metrics (``jaxrank.click_models.metrics``)."""

    def one(p, log):
        unconditional = metrics.perplexity(model, p, log)
        conditional = metrics.conditional_perplexity(model, p, log, conventions=conventions)
        out = {"log_likelihood": metrics.log_likelihood(model, p, log, conventions=conventions),
               "perplexity": unconditional.overall,
               "perplexity_per_rank": unconditional.per_rank, "conditional_perplexity": conditional.overall,
               "conditional_perplexity_per_rank": conditional.per_rank}
        if pairs is not None:
            out["relevance"] = model.relevance(p, pairs)
        return out

    return jax.vmap(one)(params, logs)


UNSEEN_RULES = ("prior", "global")


def fill_unseen_pairs(model: ClickModel, params, num_known: int, rule: str):
    """``params`` (leading axis ``[N]``, pair tables of ``P >= num_known``) with the pairs at or above
    ``num_known`` (those the training log never showed) set by ``rule``:

    * ``"prior"``: left as fitted. No session touches them, so EM leaves them at ``a / b`` of its
      pseudo-counts, PyClick's 0.5 with ``(1, 2)`` (its ``Param`` default), and a gradient fit at its
      starting probability;
    * ``"global"``: each pair table's mean probability over the known pairs (per lane).
    """
    check_choice("rule", rule, UNSEEN_RULES)
    if rule == "prior":
        return params
    fields = param_lib.pair_fields(model)

    def fill(table):
        table = np.array(table, copy=True)
        mean = (1.0 / (1.0 + np.exp(-np.asarray(table[:, :num_known], np.float64)))).mean(axis=1)
        table[:, num_known:] = (np.log(mean) - np.log1p(-mean)).astype(table.dtype)[:, None]
        return table

    return params._replace(**{f: fill(getattr(params, f)) for f in fields})
