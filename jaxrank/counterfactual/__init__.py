"""Counterfactual learning to rank from logged clicks.

The semi-synthetic protocol of Joachims, Swaminathan & Schnabel (WSDM 2017, §6): a logging ranker
trained on 1% of the training queries (``logging_policy``) shows its top ``K``; simulated users
(``user_models``: position-based, trust bias, cascade) click; the log is a ``SessionLog`` or, for up to
10⁷ clicks, per-document click counts (``simulation``).

Propensities relative to rank 1, each ``[K]``: from swap interventions (``randomization``), from the
logs of several rankers by intervention harvesting (``harvesting``: pivot, adjacent chain, all pairs),
by regression EM (``regression_em``) and from a fitted position-based click model
(``click_model_propensities``); ``bootstrap`` gives percentile intervals by resampling sessions. The
estimators that read pooled click counts keep the family contract (``propensity_estimator``) and are
registered in ``PROPENSITY_ESTIMATORS``.

Learners (``learners``, registered in ``COUNTERFACTUAL_LEARNERS``): naive, IPS, the direct method,
doubly robust and full information, one linear ranker fitted by L-BFGS to each row's relevance
targets read off a ``ClickLog`` (``click_log``); the DM regression of ``direct_method``.

Learning, as pure loss functions with rax's calling convention (``ips_losses``: pointwise, listwise and
pairwise-hinge IPS losses with clipping; naive and full-information rankers are the same losses with
propensity 1 or the true relevance), Propensity SVM-Rank (``propensity_svm``), the policy-aware
propensity for top-k logging (``policy_aware``), the doubly robust estimate under trust bias
(``doubly_robust``), the Dual Learning Algorithm (``dla``), and a full-batch Adam trainer for linear and
small neural rankers (``rankers``).

Section numbers cited in these modules are the papers' sections as we know them; the paper texts were
not at hand to check equation numbers, so the docstrings write each estimator out instead.
"""

from jaxrank.counterfactual import (bootstrap, click_log, click_model_propensities, direct_method, dla, doubly_robust,
                                    harvesting, ips_losses, learners, logging_policy, policy_aware, propensity_estimator,
                                    propensity_svm, randomization, rankers, regression_em, simulation, user_models)
from jaxrank.counterfactual.learners import COUNTERFACTUAL_LEARNERS, ClickLog, CounterfactualLearner
from jaxrank.counterfactual.ips_losses import (ips_weights, listwise_ips_loss, pairwise_ips_hinge_loss,
                                               pointwise_ips_loss)
from jaxrank.counterfactual.propensity_estimator import PropensityData, PropensityEstimator, propensity_data
from jaxrank.counterfactual.logging_policy import placement_probabilities, shown_documents, train_logging_ranker
from jaxrank.counterfactual.simulation import (ClickCounts, click_rates, display_frequencies, session_counts,
                                              simulate_click_counts, simulate_sessions)
from jaxrank.counterfactual.user_models import (eye_tracking, graded_click_probability, inverse_rank, position_based,
                                                trust_bias, ultra_cascade)
from jaxrank.registry import Registry

PROPENSITY_ESTIMATORS = Registry("propensity estimator", {
    "pbm_em": click_model_propensities, "regression_em": regression_em, "harvesting": harvesting})

__all__ = [
    "COUNTERFACTUAL_LEARNERS",
    "PROPENSITY_ESTIMATORS",
    "PropensityData",
    "PropensityEstimator",
    "ClickLog",
    "CounterfactualLearner",
    "click_log",
    "direct_method",
    "learners",
    "ClickCounts",
    "bootstrap",
    "click_model_propensities",
    "click_rates",
    "display_frequencies",
    "dla",
    "doubly_robust",
    "eye_tracking",
    "graded_click_probability",
    "harvesting",
    "inverse_rank",
    "ips_losses",
    "ips_weights",
    "listwise_ips_loss",
    "logging_policy",
    "pairwise_ips_hinge_loss",
    "placement_probabilities",
    "pointwise_ips_loss",
    "policy_aware",
    "position_based",
    "propensity_data",
    "propensity_estimator",
    "propensity_svm",
    "randomization",
    "rankers",
    "regression_em",
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
