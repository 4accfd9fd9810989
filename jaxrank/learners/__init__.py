"""Learning-to-rank learners over explicit state pytrees (the ``jaxrank.types.Learner`` and
``OnlineLearner`` contracts): the online pairwise learners of the SOLAR paper's comparison and the
stochastic pairwise learners of the LCRA paper.

``LEARNERS`` maps each factory's name to it (one naming scheme: the factory's own name);
``learner(name, **hparams)`` builds one. ``METHODS`` are the LCRA paper's named variants (SPD,
SPD-MV, LCRA-k-l: views and pairs per step) of its semi-supervised protocol.
"""

from typing import Callable

from jaxrank.learners.online import (
    committee_perceptron,
    prank_pairwise,
    prank_pointwise,
    solar_first_order,
    solar_second_order,
)
from jaxrank.learners.pairwise import lcra, spd
from jaxrank.learners.pairwise.protocol import METHODS
from jaxrank.types import Learner, OnlineLearner, UpdateInfo
from jaxrank.utils.checks import check_keywords

LEARNERS: dict[str, Callable[..., Learner]] = {
    "solar_first_order": solar_first_order,
    "solar_second_order": solar_second_order,
    "committee_perceptron": committee_perceptron,
    "prank_pairwise": prank_pairwise,
    "prank_pointwise": prank_pointwise,
    "spd": spd,
    "lcra": lcra,
}


def learner(name: str, **hparams) -> Learner:
    """The learner registered as ``name`` built with ``hparams`` (``ValueError`` naming an unknown
    name or hyperparameter)."""
    if name not in LEARNERS:
        raise ValueError(f"unknown learner {name!r}; registered: {', '.join(LEARNERS)}.")
    check_keywords(name, hparams, LEARNERS[name])
    return LEARNERS[name](**hparams)


__all__ = ["LEARNERS", "METHODS", "Learner", "OnlineLearner", "UpdateInfo", "learner"]
