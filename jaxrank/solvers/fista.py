"""FISTA for ``min_w L̄(w) + λ Σ_j β_j |w_j|`` (Beck & Teboulle 2009; Laporte et al., TNNLS
2014, Algorithm 1).

Stopping is on optimality, not on objective change (our choice, which the paper does not make: on
MQ2008 a relative-objective rule stopped early and changed the support at small λ): the iteration stops
once the KKT residual ``max_j dist(-∇L̄(w)_j, λβ_j ∂|w_j|)`` is ``≤ tol · λ`` (``≤ tol`` at
λ = 0), with gradient-based adaptive restart (O'Donoghue & Candès 2015). The loop is a
``lax.while_loop`` with at most ``max_iter`` steps and a per-lane ``done`` flag: under ``vmap``
the batch runs until every lane is done, and a converged lane's iterate no longer changes.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxrank.solvers.pairwise import (POWER_START_SEED, PairOperator, lipschitz_constant, squared_hinge_grad,
                                      squared_hinge_loss)
from jaxrank.solvers.penalties import check_lambda, prox_weighted_l1


class FistaState(NamedTuple):
    w: jax.Array  # [D] float, current iterate
    v: jax.Array  # [D] float, extrapolated point
    t: jax.Array  # [] float, momentum sequence
    kkt: jax.Array  # [] float, KKT residual of w
    k: jax.Array  # [] i32, iterations taken
    done: jax.Array  # [] bool


class FistaInfo(NamedTuple):
    iterations: jax.Array  # [] i32, FISTA steps taken
    objective: jax.Array  # [] float, L̄(w) + λ Σ β_j |w_j|
    kkt: jax.Array  # [] float, KKT residual at w
    converged: jax.Array  # [] bool, kkt <= tol·λ


def kkt_residual(w: jax.Array, grad: jax.Array, thresholds: jax.Array) -> jax.Array:
    """``max_j dist(-grad_j, thresholds_j ∂|w_j|)`` for the weighted-ℓ1 problem."""
    at_zero = jnp.maximum(jnp.abs(grad) - thresholds, 0.0)
    off_zero = jnp.abs(grad + thresholds * jnp.sign(w))
    return jnp.max(jnp.where(w == 0, at_zero, off_zero))


def momentum(t: jax.Array, v: jax.Array, w_new: jax.Array, w_old: jax.Array, restart: bool):
    """FISTA extrapolation ``(β, t')`` with ``v' = w_new + β (w_new - w_old)``.

    ``t' = (1 + sqrt(1 + 4t²)) / 2`` and ``β = (t - 1) / t'``; with ``restart``, when
    ``(v - w_new)ᵀ(w_new - w_old) > 0`` the momentum is dropped (``β = 0``, ``t' = 1``).
    """
    t_next = (1.0 + jnp.sqrt(1.0 + 4.0 * t * t)) / 2.0
    beta = (t - 1.0) / t_next
    if restart:
        reset = jnp.dot(v - w_new, w_new - w_old) > 0
        beta = jnp.where(reset, jnp.zeros_like(beta), beta)
        t_next = jnp.where(reset, jnp.ones_like(t_next), t_next)
    return beta, t_next


def weighted_l1_objective(w: jax.Array, pairs: PairOperator, lam, weights: Optional[jax.Array] = None) -> jax.Array:
    weights = jnp.ones_like(w) if weights is None else weights
    return squared_hinge_loss(w, pairs) + lam * jnp.sum(weights * jnp.abs(w))


def fista(
    pairs: PairOperator,
    lam,
    *,
    weights: Optional[jax.Array] = None,
    w_init: Optional[jax.Array] = None,
    lipschitz: Optional[jax.Array] = None,
    tol: float = 1e-6,
    max_iter: int = 5000,
    restart: bool = True,
) -> tuple[jax.Array, FistaInfo]:
    """Solves the (weighted-)ℓ1 sparse RankSVM problem for one λ; ``vmap`` it for many.

    Args:
      pairs: ``make_pairs(queries)`` (rows or pair indices).
      lam: λ ≥ 0 (scalar).
      weights: ``[D]`` β ≥ 0, default all ones (plain ℓ1).
      w_init: ``[D]`` warm start, default 0.
      lipschitz: ``L_lip`` of ∇L̄; computed by power iteration when omitted (pass it in when
        solving many λ on one ``pairs``).
      tol: stop when the KKT residual is ``≤ tol · λ``.
      max_iter: iteration budget (static).
      restart: gradient-based adaptive restart of the momentum.

    Returns:
      ``(w, FistaInfo)``.
    """
    check_lambda(lam)
    dtype = pairs.features.dtype
    num_features = pairs.features.shape[-1]
    lam = jnp.asarray(lam, dtype)
    weights = jnp.ones(num_features, dtype) if weights is None else jnp.asarray(weights, dtype)
    w0 = jnp.zeros(num_features, dtype) if w_init is None else jnp.asarray(w_init, dtype)
    if lipschitz is None:
        lip = lipschitz_constant(jax.random.key(POWER_START_SEED), pairs)
    else:
        lip = jnp.asarray(lipschitz, dtype)
    step = 1.0 / lip
    thresholds = lam * weights
    target = tol * jnp.where(lam > 0, lam, 1.0)

    kkt0 = kkt_residual(w0, squared_hinge_grad(w0, pairs), thresholds)
    state = FistaState(
        w=w0, v=w0, t=jnp.ones((), dtype), kkt=kkt0, k=jnp.zeros((), jnp.int32), done=kkt0 <= target
    )

    def cond(s):
        return (~s.done) & (s.k < max_iter)

    def body(s):
        w = prox_weighted_l1(s.v - step * squared_hinge_grad(s.v, pairs), step, lam, weights)
        beta, t_next = momentum(s.t, s.v, w, s.w, restart)
        v = w + beta * (w - s.w)
        kkt = kkt_residual(w, squared_hinge_grad(w, pairs), thresholds)
        new = FistaState(w=w, v=v, t=t_next, kkt=kkt, k=s.k + 1, done=kkt <= target)
        # a lane that is already done keeps its state (only matters under vmap)
        return jax.tree.map(lambda a, b: jnp.where(s.done, a, b), s, new)

    state = jax.lax.while_loop(cond, body, state)
    info = FistaInfo(
        iterations=state.k,
        objective=weighted_l1_objective(state.w, pairs, lam, weights),
        kkt=state.kkt,
        converged=state.done,
    )
    return state.w, info
