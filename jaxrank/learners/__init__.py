"""Learning-to-rank learners over explicit state pytrees (``jaxrank.types.Learner``): the online
pairwise learners of the SOLAR paper's comparison (``jaxrank.learners.online``) and the stochastic
pairwise learners of the LCRA paper (``jaxrank.learners.pairwise``).

``LEARNERS`` is the family's ``jaxrank.registry.Registry``: each value is an algorithm module with
``HPARAMS`` (``init``'s hyperparameters, f32 leaves of the state), ``OPTIONS`` (static switches) and
``make(**options)``. ``LEARNERS.build("solar_second_order", guard=False)`` builds one;
``learner.init(key, num_features, **hparams)`` starts it. ``METHODS`` are the LCRA paper's named
variants (SPD, SPD-MV, LCRA-k-l: views and pairs per step) of its semi-supervised protocol.
"""

from jaxrank.learners.online import (
    committee_perceptron,
    prank_pairwise,
    prank_pointwise,
    solar_first_order,
    solar_second_order,
)
from jaxrank.learners.pairwise import lcra, spd
from jaxrank.learners.pairwise.semi_supervised import METHODS
from jaxrank.registry import Registry
from jaxrank.types import InstanceInfo, Learner, UpdateInfo

LEARNERS = Registry("learner", {
    "solar_first_order": solar_first_order,
    "solar_second_order": solar_second_order,
    "committee_perceptron": committee_perceptron,
    "prank_pairwise": prank_pairwise,
    "prank_pointwise": prank_pointwise,
    "spd": spd,
    "lcra": lcra,
})

__all__ = ["LEARNERS", "METHODS", "InstanceInfo", "Learner", "UpdateInfo"]
