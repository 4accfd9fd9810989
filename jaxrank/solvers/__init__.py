"""RankSVM solvers: pairwise squared hinge, FISTA and proximal Newton (ℓ1 / weighted ℓ1), reweighted-ℓ1 MM,
primal L2 RankSVM."""

from jaxrank.solvers.fista import FistaInfo, fista, kkt_residual, weighted_l1_objective
from jaxrank.solvers.pairwise import (
    POWER_START_SEED,
    IndexedPairs,
    PairRows,
    PairOperator,
    generalized_hessian,
    grad_at_margins,
    lambda_max,
    lipschitz_constant,
    make_pairs,
    pair_adjoint,
    pair_gram,
    pair_margins,
    squared_hinge_grad,
    squared_hinge_loss,
    squared_hinge_value_and_grad,
    stack_pairs,
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
from jaxrank.solvers.prox_newton import NewtonResult, prox_newton
from jaxrank.solvers.path import (
    SOLVERS,
    PathInfo,
    PathPenalty,
    PathState,
    advance_path,
    informative_features,
    init_path,
    lambda_grid,
    max_path_steps,
    newton_path,
    path_penalty,
    path_result,
    path_study,
    solve_path,
    solve_paths,
    solve_paths_in_chunks,
    sparsity_ratio,
    stack_penalties,
)
from jaxrank.solvers.ranksvm import RankSVMInfo, check_converged, ranksvm, ranksvm_grid, ranksvm_objective
from jaxrank.solvers.reweighted_l1 import MMInfo, objective, reweighted_l1

__all__ = [
    "POWER_START_SEED", "FistaInfo", "IndexedPairs", "L1", "Log", "Lp", "MCP", "MMInfo", "NewtonResult", "PairRows",
    "PairOperator",
    "PathInfo", "PathPenalty", "PathState", "Penalty", "RankSVMInfo", "SCAD", "SOLVERS", "advance_path",
    "check_converged", "check_lambda", "fista", "generalized_hessian", "grad_at_margins", "informative_features", "init_path",
    "kkt_residual", "l1", "lambda_grid", "lambda_max", "lipschitz_constant", "log", "lp", "make_pairs",
    "max_path_steps", "mcp",
    "newton_path", "objective", "pair_adjoint", "pair_gram", "pair_margins", "path_penalty", "path_result", "path_study",
    "prox_l1", "prox_newton", "prox_weighted_l1", "ranksvm", "ranksvm_grid", "ranksvm_objective", "reweighted_l1", "scad",
    "soft_threshold", "solve_path", "solve_paths", "solve_paths_in_chunks", "sparsity_ratio",
    "squared_hinge_grad", "squared_hinge_loss", "squared_hinge_value_and_grad", "stack_pairs", "stack_penalties",
    "weighted_l1_objective",
]
