"""Sparse RankSVM solvers: pairwise squared hinge, FISTA (ℓ1 / weighted ℓ1), reweighted-ℓ1 MM."""

from jaxrank.solvers.fista import FistaInfo, fista, kkt_residual, weighted_l1_objective
from jaxrank.solvers.pairwise import (
    PairData,
    lambda_max,
    lipschitz_constant,
    make_pairs,
    pair_gram,
    pair_margins,
    squared_hinge_grad,
    squared_hinge_loss,
    squared_hinge_value_and_grad,
)
from jaxrank.solvers.penalties import (
    L1,
    MCP,
    SCAD,
    Log,
    Lp,
    Penalty,
    check_lambda,
    l1,
    log,
    lp,
    mcp,
    prox_l1,
    prox_weighted_l1,
    scad,
    soft_threshold,
)
from jaxrank.solvers.reweighted_l1 import MMInfo, objective, reweighted_l1

__all__ = [
    "FistaInfo", "L1", "Log", "Lp", "MCP", "MMInfo", "PairData", "Penalty", "SCAD",
    "check_lambda", "fista", "kkt_residual", "l1", "lambda_max", "lipschitz_constant", "log", "lp",
    "make_pairs", "mcp", "objective", "pair_gram", "pair_margins", "prox_l1", "prox_weighted_l1",
    "reweighted_l1", "scad", "soft_threshold", "squared_hinge_grad", "squared_hinge_loss",
    "squared_hinge_value_and_grad", "weighted_l1_objective",
]
