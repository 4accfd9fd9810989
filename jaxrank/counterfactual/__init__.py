"""Counterfactual learning to rank from logged clicks.

The semi-synthetic protocol of Joachims, Swaminathan & Schnabel (WSDM 2017, §6): a logging ranker
trained on 1% of the training queries (``logging_policy``) shows its top ``K``; simulated users
(``user_models``: position-based, trust bias, cascade) click; the log is a ``SessionLog`` or, for up to
10⁷ clicks, per-document click counts (``simulation``).

Propensities relative to rank 1, each ``[K]``: from swap interventions (``randomization``), from the
logs of several rankers by intervention harvesting (``harvesting``: pivot, adjacent chain, all pairs),
by regression EM (``regression_em``) and from a fitted position-based click model
(``click_model_propensities``); ``bootstrap`` gives percentile intervals by resampling sessions.
"""

from jaxrank.counterfactual import (bootstrap, click_model_propensities, harvesting, logging_policy, randomization,
                                    regression_em, simulation, user_models)
from jaxrank.counterfactual.logging_policy import placement_probabilities, shown_documents, train_logging_ranker
from jaxrank.counterfactual.simulation import ClickCounts, session_counts, simulate_click_counts, simulate_sessions
from jaxrank.counterfactual.user_models import (AffineClickModel, eye_tracking, graded_click_probability,
                                                inverse_rank, position_based, trust_bias, ultra_cascade)

__all__ = [
    "AffineClickModel",
    "ClickCounts",
    "bootstrap",
    "click_model_propensities",
    "harvesting",
    "randomization",
    "regression_em",
    "eye_tracking",
    "graded_click_probability",
    "inverse_rank",
    "logging_policy",
    "placement_probabilities",
    "position_based",
    "session_counts",
    "shown_documents",
    "simulate_click_counts",
    "simulate_sessions",
    "simulation",
    "train_logging_ranker",
    "trust_bias",
    "ultra_cascade",
    "user_models",
]
