"""Online learning to rank from simulated clicks: DBGD, MGD and PDGD for linear rankers, and the
user simulation of the PDGD paper (query sampling, cascade clicks, offline/online NDCG)."""

from jaxrank.oltr.base import CandidateState, OnlineRanker, linear_scores, top_ranks, unit_vectors
from jaxrank.oltr.dbgd import dbgd
from jaxrank.oltr.mgd import mgd
from jaxrank.oltr.pdgd import PDGDState, inferred_pairs, pdgd, pdgd_gradient, plackett_luce_top
from jaxrank.oltr.simulation import (
    ONLINE_DISCOUNT,
    ClickQueries,
    SimulationResult,
    click_queries,
    displayed_ndcg,
    impression,
    log_checkpoints,
    offline_ndcg,
    simulate,
    simulate_grid,
    stack_queries,
)

RANKERS = {"dbgd": dbgd, "mgd": mgd, "pdgd": pdgd}

__all__ = [
    "ONLINE_DISCOUNT",
    "RANKERS",
    "CandidateState",
    "ClickQueries",
    "OnlineRanker",
    "PDGDState",
    "SimulationResult",
    "click_queries",
    "dbgd",
    "displayed_ndcg",
    "impression",
    "inferred_pairs",
    "linear_scores",
    "log_checkpoints",
    "mgd",
    "offline_ndcg",
    "pdgd",
    "pdgd_gradient",
    "plackett_luce_top",
    "simulate",
    "simulate_grid",
    "stack_queries",
    "top_ranks",
    "unit_vectors",
]
