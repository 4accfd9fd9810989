"""Full information: the true relevance as the target (the skyline row, and the ceiling of every
click learner on the same candidates)."""

from jaxrank.counterfactual.learners import base

HPARAMS = {"lam": 1e-3}
OPTIONS = {"smoothing": base.SMOOTHING}


def targets(state, log):
    """``[Q, L]`` ``P(relevant | d)``."""
    del state
    return log.relevance


def make(*, smoothing: float = base.SMOOTHING) -> base.CounterfactualLearner:
    return base.make(targets, HPARAMS, smoothing=smoothing)
