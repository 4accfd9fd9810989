"""Reweighted-ℓ1 MM for non-convex penalties (Laporte et al., TNNLS 2014, §IV-C, eq. 13, Algorithm 2).

Each outer round takes ``β^k = weight(|w^k|)`` from the penalty (its derivative divided by λ)
and solves ``min_w L̄(w) + λ Σ_j β_j^k |w_j|`` with FISTA warm-started at ``w^k``. ``w^0`` is the
plain ℓ1 solution at the same λ (our choice: the paper does not say; from ``w^0 = 0`` the weights
``g'(0)`` would only rescale ℓ1). The rounds are a ``lax.scan`` of fixed length
``num_outer``; once ``‖w^{k+1} - w^k‖∞ < outer_tol`` the lane is frozen (its later rounds
return the same ``w`` and objective, and take 0 FISTA steps).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxrank.solvers.fista import fista
from jaxrank.solvers.pairwise import POWER_START_SEED, PairOperator, lipschitz_constant, squared_hinge_loss
from jaxrank.solvers.penalties import Penalty, check_lambda


class MMInfo(NamedTuple):
    objectives: jax.Array  # [num_outer + 1] float, L̄ + R_λ at w^0 .. w^num_outer
    inner_iterations: jax.Array  # [num_outer + 1] i32, FISTA steps per round (round 0: the ℓ1 start)
    outer_iterations: jax.Array  # [] i32, rounds solved (the last one met the stop rule if converged)
    kkt: jax.Array  # [] float, KKT residual of the last weighted-ℓ1 subproblem
    converged: jax.Array  # [] bool, outer stop rule met within num_outer


def objective(w: jax.Array, pairs: PairOperator, lam, penalty: Penalty) -> jax.Array:
    """``L̄(w) + R_λ(w)``."""
    return squared_hinge_loss(w, pairs) + penalty.value(w, lam)


def reweighted_l1(
    pairs: PairOperator,
    lam,
    penalty: Penalty,
    *,
    w_init: Optional[jax.Array] = None,
    lipschitz: Optional[jax.Array] = None,
    num_outer: int = 10,
    outer_tol: float = 1e-4,
    tol: float = 1e-6,
    max_iter: int = 5000,
) -> tuple[jax.Array, MMInfo]:
    """MM fixed point of ``L̄(w) + R_λ(w)`` for one λ and penalty; ``vmap`` for many.

    ``w_init`` replaces the ℓ1 start ``w^0`` (e.g. the previous λ on a path).
    """
    check_lambda(lam)
    dtype = pairs.features.dtype
    lam = jnp.asarray(lam, dtype)
    if lipschitz is None:
        lip = lipschitz_constant(jax.random.key(POWER_START_SEED), pairs)
    else:
        lip = jnp.asarray(lipschitz, dtype)
    solve = lambda weights, w0: fista(  # noqa: E731
        pairs, lam, weights=weights, w_init=w0, lipschitz=lip, tol=tol, max_iter=max_iter
    )
    if w_init is None:
        w0, info0 = solve(None, None)
    else:
        w0, info0 = jnp.asarray(w_init, dtype), None
    obj0 = objective(w0, pairs, lam, penalty)
    iters0 = jnp.zeros((), jnp.int32) if info0 is None else info0.iterations
    kkt0 = jnp.zeros((), dtype) if info0 is None else info0.kkt

    def round_(carry, _):
        w, done, rounds, kkt = carry
        weights = penalty.weight(jnp.abs(w), lam)
        w_new, info = solve(weights, w)
        w_new = jnp.where(done, w, w_new)
        moved = jnp.max(jnp.abs(w_new - w))
        new_done = done | (moved < outer_tol)
        rounds = rounds + jnp.where(done, 0, 1).astype(jnp.int32)
        kkt = jnp.where(done, kkt, info.kkt)
        iters = jnp.where(done, 0, info.iterations).astype(jnp.int32)
        return (w_new, new_done, rounds, kkt), (objective(w_new, pairs, lam, penalty), iters)

    init = (w0, jnp.zeros((), bool), jnp.zeros((), jnp.int32), kkt0)
    (w, done, rounds, kkt), (objs, iters) = jax.lax.scan(round_, init, None, length=num_outer)
    info = MMInfo(
        objectives=jnp.concatenate([obj0[None], objs]),
        inner_iterations=jnp.concatenate([iters0[None], iters]),
        outer_iterations=rounds,
        kkt=kkt,
        converged=done,
    )
    return w, info
