"""The direct method (DM) alone: the regression estimate ``R̂_d`` of every document of a logged query
as its target (Oosterhuis, TOIS 2023, the DM baseline; ``compute_direct_method_weights`` of
HarrieO/2022-doubly-robust-LTR ``utils/estimators.py``). ``R̂`` comes from
``jaxrank.counterfactual.direct_method``, stored in the log."""

import jax.numpy as jnp

from jaxrank.counterfactual.learners import base

HPARAMS = {"lam": 1e-3}
OPTIONS = {"smoothing": base.SMOOTHING}


def targets(state, log):
    """``[Q, L]`` ``R̂_d`` on the logged queries (``ω_q > 0``)."""
    del state
    return jnp.where(log.where & (log.weights[:, None] > 0), log.regression, 0.0)


def make(*, smoothing: float = base.SMOOTHING) -> base.CounterfactualLearner:
    return base.make(targets, HPARAMS, smoothing=smoothing)
