"""Naive learner: the click rate as the relevance target (no bias correction; Joachims, Swaminathan &
Schnabel, WSDM 2017, §6's "Naive SVM-Rank")."""

from jaxrank.counterfactual.learners import base

HPARAMS = {"lam": 1e-3}  # λ: SVM-Rank's 1/C (Joachims et al. 2017, §6 tune C on validation; jaxrank's default)
OPTIONS = {"smoothing": base.SMOOTHING}


def targets(state, log):
    """``[Q, L]`` the clicks per session ``c̄_d``."""
    del state
    return log.ctr


def make(*, smoothing: float = base.SMOOTHING) -> base.CounterfactualLearner:
    return base.make(targets, HPARAMS, smoothing=smoothing)
