"""Fitting a click model to a session log: EM as one ``lax.scan`` over iterations (Chuklin, Markov, de
Rijke, *Click Models for Web Search*, 2015, ch. 4; PyClick's ``EMInference`` / ``MLEInference``).

One iteration is the model's batched E-step (``ClickModel.statistics``: expected sufficient statistics
of every session at once, summed per pair with ``jax.ops.segment_sum`` and per rank) followed by the
M-step ``jaxrank.click_models.base.maximize``. What does not depend on the parameters' values
(``ClickModel.counts``: impressions, clicks) is summed once, before the iterations, and added to
every iteration's statistics. PyClick's conventions: parameters start at 0.5, 50 iterations,
pseudo-counts ``(1, 2)`` and a cap of ``1 - 10⁻⁶``. A model fitted by counting (GCTR, RCTR, DCTR, CM,
DCM, SDBN) has statistics that do not depend on the parameters, so ``fit_em`` does one M-step for it
(PyClick's single MLE pass) whatever ``num_iterations`` says.

``init``, ``cap`` and ``prior`` are array leaves, so ``jax.vmap(fit_em)`` over them (or over logs of one
shape, with ``num_pairs`` given) compiles once.

Chunks: the E-step visits the sessions ``chunk_size`` at a time (a ``lax.scan`` inside each
iteration over slices of the log, read in place), so its scratch memory is that of one chunk, and
each chunk's statistics are summed before they join the running total. The default,
``DEFAULT_CHUNK_SIZE`` sessions, bounds the E-step's scratch to some tens of megabytes whatever the
log's size (on the whole log at once it is some tens of ``[S, K]`` arrays); on CPU it was among
the fastest of the sizes measured (4,096 to 131,072 sessions: small chunks pay a scan step each,
large ones leave the cache; ``benchmarks/click_models.py``: 0.28 s per DBN iteration on 10⁶ sessions of 10
positions, 0.58 s on the whole log at once, on 2 CPU cores); ``chunk_size=None`` visits every
session at once. Statistics are summed in the parameters' dtype: without chunks, a float32 count of one
parameter stops growing exactly past ``2^24`` (≈ 1.7·10⁷) events, e.g. GCTR on a 10⁷-session log;
chunks keep the error of such counts near ``10⁻⁴`` relative, float64 (``jax.enable_x64``) removes it.
"""

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, ClickModel, checked_num_pairs, maximize,
                                       session_log_likelihood)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int

__all__ = ["DEFAULT_CHUNK_SIZE", "EMInfo", "EMState", "counts", "em_step", "expected_statistics", "fit_em", "init",
           "run_em"]


class EMState(NamedTuple):
    """A fit's state: the params and the M-step's hyperparameters as leaves (``vmap`` over them)."""

    params: Any  # the model's params NamedTuple (logits)
    prior_a: Array  # [] pseudo-numerator of every parameter (PyClick's 1)
    prior_b: Array  # [] pseudo-denominator (PyClick's 2)
    cap: Array  # [] upper bound of every probability (PyClick's 1 - 10⁻⁶)
    iteration: Array  # [] i32 EM iterations done


class EMInfo(NamedTuple):
    log_likelihood: Array  # [] Σ_s log P(C_s) under the params this iteration's E-step used
    iteration: Array  # [] i32 EM iterations done after this one


def chunked_statistics(statistics, params, log: SessionLog, chunk_size: int):
    """``statistics(params, chunk)`` summed over chunks of ``chunk_size <= S`` sessions (``lax.scan``).

    Chunk ``c`` reads rows ``[c·n, c·n + n)`` of the log in place (``lax.dynamic_slice``, no padded copy);
    the last one starts at ``S - n`` instead and leaves out, as empty sessions, the rows an earlier
    chunk counted."""
    num = log.pair.shape[0]
    num_chunks = -(-num // chunk_size)

    def one(c):
        start = jnp.minimum(c * chunk_size, num - chunk_size)
        take = lambda x: jax.lax.dynamic_slice_in_dim(x, start, chunk_size, axis=0)  # noqa: E731
        fresh = (start + jnp.arange(chunk_size)) >= c * chunk_size
        return log._replace(query=take(log.query), pair=take(log.pair), doc=take(log.doc),
                            clicks=take(log.clicks) & fresh[:, None], mask=take(log.mask) & fresh[:, None])

    def add(total, c):
        return jax.tree.map(jnp.add, total, statistics(params, one(c))), None

    shapes = jax.eval_shape(statistics, params, one(0))
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    return jax.lax.scan(add, zeros, jnp.arange(num_chunks))[0]


def _summed(statistics, params, log: SessionLog, chunk_size):
    return statistics(params, log) if chunk_size is None else chunked_statistics(statistics, params, log, chunk_size)


def counts(model: ClickModel, params, log: SessionLog, *, chunk_size=None):
    """The part of the E-step's statistics that does not depend on the parameters' values
    (``ClickModel.counts``; ``None`` for a model without one), summed once for all iterations."""
    return None if model.counts is None else _summed(model.counts, params, log, chunk_size)


def expected_statistics(model: ClickModel, params, log: SessionLog, *, chunk_size=None, fixed=None):
    """The E-step's whole ``Statistics``: ``model.statistics`` plus the parameter-free ``counts``
    (``fixed`` when already summed, computed here otherwise). With ``chunk_size`` (at most the number
    of sessions) the sessions are visited chunk by chunk (``chunked_statistics``)."""
    stats = _summed(model.statistics, params, log, chunk_size)
    if fixed is None:
        fixed = counts(model, params, log, chunk_size=chunk_size)
    return stats if fixed is None else jax.tree.map(jnp.add, fixed, stats)


def init(model: ClickModel, key: PRNGKey, num_pairs: int, num_positions: int, *, init=EM_HPARAMS["init"],
         prior_a=EM_HPARAMS["prior_a"], prior_b=EM_HPARAMS["prior_b"], cap=EM_HPARAMS["cap"],
         dtype=jnp.float32) -> EMState:
    """An ``EMState`` with every probability at ``init``; the hyperparameters (``EM_HPARAMS``, PyClick's
    defaults) become ``dtype`` leaves. EM is deterministic: ``key`` is taken for the family contract
    (``jaxrank.registry``) and not used."""
    del key
    as_leaf = lambda x: jnp.asarray(x, dtype)  # noqa: E731
    return EMState(model.init_params(num_pairs, num_positions, prob=as_leaf(init), dtype=dtype), as_leaf(prior_a),
                   as_leaf(prior_b), as_leaf(cap), jnp.zeros((), jnp.int32))


def _chunk(model: ClickModel, log: SessionLog):
    """The E-step chunk of ``model`` for ``log``: ``None`` (all at once) when one chunk holds the log."""
    size = model.chunk_size
    return None if size is None or size >= log.pair.shape[-2] else size


def em_step(model: ClickModel, state: EMState, log: SessionLog, *, fixed=None) -> tuple[EMState, EMInfo]:
    """One EM iteration (``expected_statistics`` in ``model.chunk_size`` chunks, then the M-step):
    ``(state, EMInfo)``; ``fixed``: the parameter-free ``counts``, when already summed."""
    chunk_size = _chunk(model, log)
    stats = expected_statistics(model, state.params, log, chunk_size=chunk_size, fixed=fixed)
    log_lik = _summed(lambda p, lg: jnp.sum(session_log_likelihood(model, p, lg)), state.params, log, chunk_size)
    params = maximize(stats, state.params, prior=(state.prior_a, state.prior_b), cap=state.cap)
    iteration = state.iteration + 1
    return state._replace(params=params, iteration=iteration), EMInfo(log_lik, iteration)


def run_em(model: ClickModel, state: EMState, log: SessionLog, num_iterations: int) -> tuple[EMState, EMInfo]:
    """``num_iterations`` EM iterations as one ``lax.scan``, the parameter-free counts summed once:
    ``(state, EMInfo [num_iterations])``. The one EM loop of the package (``fit_em`` and the lanes of
    ``jaxrank.click_models.study`` run it; a ``log`` of ``[P, K]`` cells is a log too). Unused infos
    cost nothing under ``jit`` (the scan drops outputs nobody reads)."""
    fixed = counts(model, state.params, log, chunk_size=_chunk(model, log))
    return jax.lax.scan(lambda s, _: em_step(model, s, log, fixed=fixed), state, None, length=num_iterations)


@functools.partial(jax.jit, static_argnames=("model", "num_iterations", "num_pairs", "dtype"))
def _fit(log, hparams, *, model, num_iterations, num_pairs, dtype):
    state = init(model, None, num_pairs, log.pair.shape[-1], **hparams, dtype=dtype)
    return run_em(model, state, log, num_iterations)[0].params


def fit_em(log: SessionLog, model: ClickModel, *, num_iterations: int = 50, init=EM_HPARAMS["init"],
           cap=EM_HPARAMS["cap"], prior=(EM_HPARAMS["prior_a"], EM_HPARAMS["prior_b"]), num_pairs=None, dtype=None,
           chunk_size=DEFAULT_CHUNK_SIZE):
    """Fits ``model`` to ``log``: ``num_iterations`` EM iterations from every probability at ``init``.

    Args:
      log: the sessions (``jaxrank.data.sessions.SessionLog``).
      model: a ``ClickModel`` (``CLICK_MODELS.build(name)``).
      num_iterations: EM iterations (PyClick's 50); a counting model always does one.
      init: the starting probability of every parameter (PyClick's 0.5).
      cap: upper bound of every fitted probability (PyClick's ``1 - 10⁻⁶``).
      prior: ``(a, b)`` pseudo-counts of the M-step (PyClick's ``(1, 2)``).
      num_pairs: size of the pair tables; default ``int(log.num_pairs)``, which must then be concrete
        (pass it when vmapping over logs).
      dtype: of the parameters; default float32 (float64 under ``jax.enable_x64``).
      chunk_size: sessions per E-step chunk (``None``: all at once; a log of at most ``chunk_size``
        sessions is one chunk); see this module's docstring.

    Returns:
      the fitted parameters (logits), the model's params NamedTuple.

    Raises:
      ValueError: for a bad option, a log with no session, or a shown pair id outside ``[0, num_pairs)``.
    """
    check_int("num_iterations", num_iterations, minimum=1)
    num_pairs = checked_num_pairs(log, num_pairs, "fit_em")
    if chunk_size is not None:
        check_int("chunk_size", chunk_size, minimum=1)
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    if model.fitting == "counting":
        num_iterations = 1
    hparams = {"init": init, "prior_a": prior[0], "prior_b": prior[1], "cap": cap}
    hparams = {k: jnp.asarray(v, dtype) for k, v in hparams.items()}
    return _fit(log, hparams, model=model._replace(chunk_size=chunk_size), num_iterations=num_iterations,
                num_pairs=num_pairs, dtype=dtype)
