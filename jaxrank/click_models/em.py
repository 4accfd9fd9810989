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
"""

import functools

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import PRIOR, PROB_CAP, ClickModel, maximize
from jaxrank.data.sessions import SessionLog
from jaxrank.utils.checks import check_int


def em_step(model: ClickModel, params, log: SessionLog, *, prior=PRIOR, cap=PROB_CAP):
    """One EM iteration (E-step statistics, then the M-step): the next ``params``."""
    return maximize(model.statistics(params, log), params, prior=prior, cap=cap)


@functools.partial(jax.jit, static_argnames=("model", "num_iterations", "num_pairs", "dtype"))
def _fit(log, init, cap, prior, *, model, num_iterations, num_pairs, dtype):
    params = model.init(num_pairs, log.pair.shape[-1], prob=init, dtype=dtype)

    def iteration(params, _):
        return em_step(model, params, log, prior=prior, cap=cap), None

    params, _ = jax.lax.scan(iteration, params, None, length=num_iterations)
    return params


def fit_em(log: SessionLog, model: ClickModel, *, num_iterations: int = 50, init=0.5, cap=PROB_CAP, prior=PRIOR,
           num_pairs=None, dtype=None):
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

    Returns:
      the fitted parameters (logits), the model's params NamedTuple.
    """
    check_int("num_iterations", num_iterations, minimum=1)
    if num_pairs is None:
        try:
            num_pairs = int(log.num_pairs)
        except (jax.errors.ConcretizationTypeError, TypeError):
            raise ValueError("log.num_pairs is traced (fit_em inside jit or vmap); pass num_pairs= as an int.") \
                from None
    check_int("num_pairs", num_pairs, minimum=0)
    dtype = jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64) if dtype is None else dtype)
    if model.fitting == "counting":
        num_iterations = 1
    init, cap = jnp.asarray(init, dtype), jnp.asarray(cap, dtype)
    prior = tuple(jnp.asarray(p, dtype) for p in prior)
    return _fit(log, init, cap, prior, model=model, num_iterations=num_iterations, num_pairs=num_pairs, dtype=dtype)
