"""The doubly robust (DR) estimate (Oosterhuis, TOIS 2023, §5):
``t_d = R̂_d + (c̄_d − ᾱ_d R̂_d − β̄_d) / max(ρ_d, τ)`` on every document of a logged query
(``jaxrank.counterfactual.doubly_robust.doubly_robust_targets``; ``R̂`` the log's regression). The
control variate takes the actual treatment ``ᾱ`` (what the sessions showed), the denominator the
propensity ``ρ``; the same ``τ`` as IPS."""

import jax.numpy as jnp

from jaxrank.counterfactual import doubly_robust
from jaxrank.counterfactual.learners import base

HPARAMS = {"lam": 1e-3, "clip": 0.0}
OPTIONS = {"smoothing": base.SMOOTHING}


def targets(state, log):
    """``[Q, L]`` the DR estimates."""
    logged = log.where & (log.weights[:, None] > 0)
    return doubly_robust.doubly_robust_targets(log.ctr, log.alpha, log.beta, log.rho, log.regression,
                                               clip=state.clip, where=logged)


def make(*, smoothing: float = base.SMOOTHING) -> base.CounterfactualLearner:
    return base.make(targets, HPARAMS, smoothing=smoothing)
