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

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import PRIOR, PROB_CAP, ClickModel, check_fit_log, maximize
from jaxrank.data.sessions import SessionLog
from jaxrank.utils.checks import check_int

DEFAULT_CHUNK_SIZE = 16384  # sessions per E-step chunk: bounded scratch memory (see the module docstring)


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


def em_step(model: ClickModel, params, log: SessionLog, *, prior=PRIOR, cap=PROB_CAP, chunk_size=None, fixed=None):
    """One EM iteration (``expected_statistics``, then the M-step): the next ``params``."""
    stats = expected_statistics(model, params, log, chunk_size=chunk_size, fixed=fixed)
    return maximize(stats, params, prior=prior, cap=cap)


@functools.partial(jax.jit, static_argnames=("model", "num_iterations", "num_pairs", "dtype", "chunk_size"))
def _fit(log, init, cap, prior, *, model, num_iterations, num_pairs, dtype, chunk_size):
    params = model.init(num_pairs, log.pair.shape[-1], prob=init, dtype=dtype)
    fixed = counts(model, params, log, chunk_size=chunk_size)

    def iteration(params, _):
        return em_step(model, params, log, prior=prior, cap=cap, chunk_size=chunk_size, fixed=fixed), None

    params, _ = jax.lax.scan(iteration, params, None, length=num_iterations)
    return params


def fit_em(log: SessionLog, model: ClickModel, *, num_iterations: int = 50, init=0.5, cap=PROB_CAP, prior=PRIOR,
           num_pairs=None, dtype=None, chunk_size=DEFAULT_CHUNK_SIZE):
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
    if num_pairs is None:
        try:
            num_pairs = int(log.num_pairs)
        except (jax.errors.ConcretizationTypeError, TypeError):
            raise ValueError("log.num_pairs is traced (fit_em inside jit or vmap); pass num_pairs= as an int.") \
                from None
    check_int("num_pairs", num_pairs, minimum=0)
    check_fit_log(log, num_pairs)
    if chunk_size is not None:
        check_int("chunk_size", chunk_size, minimum=1)
        if chunk_size >= log.pair.shape[-2]:
            chunk_size = None  # one chunk: no inner scan
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    if model.fitting == "counting":
        num_iterations = 1
    init, cap = jnp.asarray(init, dtype), jnp.asarray(cap, dtype)
    prior = tuple(jnp.asarray(p, dtype) for p in prior)
    return _fit(log, init, cap, prior, model=model, num_iterations=num_iterations, num_pairs=num_pairs, dtype=dtype,
                chunk_size=chunk_size)
