"""Counterfactual learners from logged clicks, one module each, registered in
``COUNTERFACTUAL_LEARNERS`` (``jaxrank.registry.Registry``): ``make(**OPTIONS)`` gives a
``CounterfactualLearner``; ``init(key, num_features, **HPARAMS)`` stores ``λ`` and ``τ`` as f32
leaves, so a grid of clipping thresholds is lanes of one program; ``step(key, state, log)`` returns
``(state, StepInfo)``. They differ only by their relevance targets (``base``)."""

from jaxrank.counterfactual.learners import base, dm, dr, full_info, ips, naive
from jaxrank.counterfactual.learners.base import ClickLog, CounterfactualLearner, LearnerState, StepInfo
from jaxrank.registry import Registry

COUNTERFACTUAL_LEARNERS = Registry("counterfactual learner", {
    "naive": naive, "ips": ips, "dm": dm, "dr": dr, "full_info": full_info})

__all__ = ["COUNTERFACTUAL_LEARNERS", "ClickLog", "CounterfactualLearner", "LearnerState", "StepInfo", "base"]
