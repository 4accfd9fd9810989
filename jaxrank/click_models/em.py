"""Fitting a click model to a session log: EM as one ``lax.scan`` over iterations (Chuklin, Markov, de
Rijke, *Click Models for Web Search*, 2015, ch. 4; PyClick's ``EMInference`` / ``MLEInference``).

One iteration is the model's batched E-step (``ClickModel.statistics``: expected sufficient statistics
of every session at once, summed per pair with ``jax.ops.segment_sum`` and per rank) followed by the
M-step ``jaxrank.click_models.base.maximize``. PyClick's conventions: parameters start at 0.5, 50
iterations, pseudo-counts ``(1, 2)`` and a cap of ``1 - 10⁻⁶``. A model fitted by counting (GCTR,
RCTR, DCTR, CM, DCM, SDBN) has statistics that do not depend on the parameters, so ``fit_em`` does one
M-step for it (PyClick's single MLE pass) whatever ``num_iterations`` says.

``init``, ``cap`` and ``prior`` are array leaves, so ``jax.vmap(fit_em)`` over them (or over logs of one
shape, with ``num_pairs`` given) compiles once.

Large logs: with ``chunk_size`` the E-step visits the sessions in chunks (a ``lax.scan`` inside each
iteration; the log is padded once with empty sessions to a whole number of chunks), so its scratch
memory is that of one chunk, and each chunk's statistics are summed before they join the running
total. Statistics are summed in the parameters' dtype: without chunks, a float32 count of one
parameter stops growing exactly past ``2^24`` (≈ 1.7·10⁷) events, e.g. GCTR on a 10⁷-session log;
chunks of ~10⁵ sessions keep the error of such counts near ``10⁻⁴`` relative, float64
(``jax.enable_x64``) removes it.
"""

import functools

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import PRIOR, PROB_CAP, ClickModel, check_fit_log, maximize
from jaxrank.data.sessions import SessionLog
from jaxrank.utils.checks import check_int


def chunk_sessions(log: SessionLog, chunk_size: int) -> SessionLog:
    """``log`` padded with empty sessions (mask all False) to ``C·chunk_size`` rows and reshaped to
    ``[C, chunk_size, ...]`` (``num_pairs`` and ``num_queries`` unchanged): the input of
    ``chunked_statistics``."""
    num = log.pair.shape[0]
    num_chunks = -(-num // chunk_size)

    def rows(x):
        x = jnp.pad(x, [(0, num_chunks * chunk_size - num)] + [(0, 0)] * (x.ndim - 1))
        return x.reshape((num_chunks, chunk_size) + x.shape[1:])

    return log._replace(query=rows(log.query), pair=rows(log.pair), doc=rows(log.doc), clicks=rows(log.clicks),
                        mask=rows(log.mask))


def chunked_statistics(model: ClickModel, params, chunks: SessionLog):
    """The model's statistics of a ``chunk_sessions`` log, summed chunk by chunk (a ``lax.scan``)."""
    rows = (chunks.query, chunks.pair, chunks.doc, chunks.clicks, chunks.mask)

    def one(chunk_rows):
        return chunks._replace(query=chunk_rows[0], pair=chunk_rows[1], doc=chunk_rows[2], clicks=chunk_rows[3],
                               mask=chunk_rows[4])

    def add(total, chunk_rows):
        return jax.tree.map(jnp.add, total, model.statistics(params, one(chunk_rows))), None

    shapes = jax.eval_shape(model.statistics, params, one(tuple(x[0] for x in rows)))
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    total, _ = jax.lax.scan(add, zeros, rows)
    return total


def em_step(model: ClickModel, params, log: SessionLog, *, prior=PRIOR, cap=PROB_CAP, chunked: bool = False):
    """One EM iteration (E-step statistics, then the M-step): the next ``params``. With ``chunked`` the
    log comes from ``chunk_sessions``."""
    stats = chunked_statistics(model, params, log) if chunked else model.statistics(params, log)
    return maximize(stats, params, prior=prior, cap=cap)


@functools.partial(jax.jit, static_argnames=("model", "num_iterations", "num_pairs", "dtype", "chunk_size"))
def _fit(log, init, cap, prior, *, model, num_iterations, num_pairs, dtype, chunk_size):
    params = model.init(num_pairs, log.pair.shape[-1], prob=init, dtype=dtype)
    if chunk_size is not None:
        log = chunk_sessions(log, chunk_size)

    def iteration(params, _):
        return em_step(model, params, log, prior=prior, cap=cap, chunked=chunk_size is not None), None

    params, _ = jax.lax.scan(iteration, params, None, length=num_iterations)
    return params


def fit_em(log: SessionLog, model: ClickModel, *, num_iterations: int = 50, init=0.5, cap=PROB_CAP, prior=PRIOR,
           num_pairs=None, dtype=None, chunk_size=None):
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
      chunk_size: sessions per E-step chunk (``None``: all at once); see this module's docstring.

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
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    if model.fitting == "counting":
        num_iterations = 1
    init, cap = jnp.asarray(init, dtype), jnp.asarray(cap, dtype)
    prior = tuple(jnp.asarray(p, dtype) for p in prior)
    return _fit(log, init, cap, prior, model=model, num_iterations=num_iterations, num_pairs=num_pairs, dtype=dtype,
                chunk_size=chunk_size)
