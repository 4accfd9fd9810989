"""RankSVM solvers: pairwise squared hinge, FISTA (ℓ1 / weighted ℓ1), reweighted-ℓ1 MM, primal L2 RankSVM."""

from jaxrank.solvers.fista import FistaInfo, fista, kkt_residual, weighted_l1_objective
from jaxrank.solvers.pairwise import (
    PairData,
    PairList,
    grad_at_margins,
    lambda_max,
    lipschitz_constant,
    make_pair_list,
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
from jaxrank.solvers.path import (
    PathInfo,
    PathPenalty,
    PathState,
    advance_path,
    informative_features,
    init_path,
    lambda_grid,
    path_penalty,
    path_result,
    solve_path,
    solve_paths,
    solve_paths_in_chunks,
    sparsity_ratio,
    stack_pair_lists,
    stack_penalties,
)
from jaxrank.solvers.ranksvm import RankSVMInfo, check_ranksvm_lambda, ranksvm, ranksvm_objective
from jaxrank.solvers.reweighted_l1 import MMInfo, objective, reweighted_l1

__all__ = [
    "FistaInfo", "L1", "Log", "Lp", "MCP", "MMInfo", "PairData", "PairList", "PathInfo", "PathPenalty", "PathState", "Penalty",
    "SCAD", "advance_path", "informative_features", "init_path", "lambda_grid", "make_pair_list", "path_penalty",
    "path_result", "solve_path", "solve_paths", "solve_paths_in_chunks", "sparsity_ratio", "stack_pair_lists", "stack_penalties",
    "check_lambda", "fista", "grad_at_margins", "kkt_residual", "l1", "lambda_max", "lipschitz_constant", "log", "lp",
    "make_pairs", "mcp", "objective", "pair_gram", "pair_margins", "prox_l1", "prox_weighted_l1",
    "reweighted_l1", "scad", "soft_threshold", "squared_hinge_grad", "squared_hinge_loss",
    "squared_hinge_value_and_grad", "weighted_l1_objective",
    "RankSVMInfo", "check_ranksvm_lambda", "ranksvm", "ranksvm_objective",
]
