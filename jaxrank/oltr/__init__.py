"""Online learning to rank from simulated clicks: DBGD, MGD, PDGD and Pairwise, DBGD, MGD and PDGD
with a linear or a neural scoring model (``scorers``; the option ``model``), and the user simulation of
the PDGD paper (query sampling, cascade clicks, offline/online NDCG).

Each ranker is a module with ``HPARAMS``, ``OPTIONS`` and ``make(**options) -> jaxrank.types.Ranker``;
``RANKERS`` registers them (a new ranker is one module plus one line there)::

    ranker = oltr.RANKERS.build("pdgd", list_size=10)  # or model="neural" (64 sigmoid units)
    result = oltr.simulate(key, ranker, train, test, click_model, checkpoints=(0, 100, 1000),
                           hparams={"learning_rate": 0.1})
"""

from jaxrank.oltr import dbgd, mgd, pairwise, pdgd, scorers
from jaxrank.oltr.base import CandidateState, top_ranks, unit_vectors
from jaxrank.oltr.pdgd import PDGDState, inferred_pairs, pdgd_gradient, pdgd_weights
from jaxrank.oltr.scorers import NeuralParams
from jaxrank.oltr.simulation import (
    ONLINE_DISCOUNT,
    ClickQueries,
    Lane,
    SimulationResult,
    click_queries,
    displayed_ndcg,
    grid_lanes,
    impression,
    lane_keys,
    log_checkpoints,
    offline_ndcg,
    simulate,
    simulate_grid,
    stack_folds,
    stack_queries,
    stretches,
    study,
)
from jaxrank.registry import Registry

RANKERS = Registry("ranker", {"dbgd": dbgd, "mgd": mgd, "pdgd": pdgd, "pairwise": pairwise})

__all__ = [
    "ONLINE_DISCOUNT",
    "RANKERS",
    "CandidateState",
    "ClickQueries",
    "Lane",
    "NeuralParams",
    "PDGDState",
    "SimulationResult",
    "click_queries",
    "dbgd",
    "displayed_ndcg",
    "grid_lanes",
    "impression",
    "inferred_pairs",
    "lane_keys",
    "log_checkpoints",
    "mgd",
    "offline_ndcg",
    "pairwise",
    "pdgd",
    "pdgd_gradient",
    "pdgd_weights",
    "scorers",
    "simulate",
    "simulate_grid",
    "stack_folds",
    "stack_queries",
    "stretches",
    "study",
    "top_ranks",
    "unit_vectors",
]
