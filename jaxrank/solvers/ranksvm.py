"""Primal RankSVM (Chapelle 2007; Chapelle & Keerthi 2010): L2-regularised pairwise squared hinge.

    F(w) = L̄(w) + (λ/2)‖w‖²,   L̄(w) = (1/N_p) Σ_p max(0, 1 − wᵀ(x_i − x_j))²

over the preference pairs (``make_pairs``: difference rows for small sets, pair indices for large
ones; ``λ = 1/(C N_p)`` for Chapelle's ``½‖w‖² + C Σ_p ξ_p²``). F is strongly convex and piecewise
quadratic, so Newton's method with the generalised Hessian ``H = (2/N_p) Σ_{p active} z_p z_pᵀ + λI``
(active: margin < 1) reaches the optimum in a few steps. Each step forms the ``D x D`` Hessian
(``pair_gram`` weighted by the active pairs: from the rows, or from the active-pair Laplacian of
the documents, never a ``[P, D]`` array), solves ``H d = −∇F`` and backtracks on
``t ∈ {1, ½, ¼, …}`` until the Armijo condition holds. A ``while_loop`` stops at ``‖∇F‖ ≤ tol · max(1, ‖∇F(0)‖)``; under ``vmap``
(folds × λ grid) converged lanes wait for the others.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.solvers.pairwise import Pairs, pair_gram, pair_margins, squared_hinge_value_and_grad


class RankSVMInfo(NamedTuple):
    objective: jax.Array  # [] F(w) at the solution
    grad_norm: jax.Array  # [] ‖∇F(w)‖
    iterations: jax.Array  # [] i32 Newton steps taken


def ranksvm_objective(w: jax.Array, pairs: Pairs, lam) -> jax.Array:
    """``F(w) = L̄(w) + (λ/2)‖w‖²``."""
    return squared_hinge_value_and_grad(w, pairs)[0] + 0.5 * lam * (w @ w)


def _value_and_grad(w, pairs, lam):
    value, grad = squared_hinge_value_and_grad(w, pairs)
    return value + 0.5 * lam * (w @ w), grad + lam * w


def ranksvm(pairs: Pairs, lam, *, max_iters: int = 50, tol: float = 1e-6, max_halvings: int = 30):
    """Minimises ``F`` by damped Newton from ``w = 0``; returns ``(w [D], RankSVMInfo)``.

    Args:
      pairs: ``make_pairs(queries)``.
      lam: ``λ > 0`` (a scalar array, so a grid vmaps); checked by ``check_ranksvm_lambda``.
      max_iters, tol: stopping rule on the gradient norm (relative to the gradient at 0).
    """
    dtype = pairs.features.dtype
    lam = jnp.asarray(lam, dtype)
    num_features = pairs.features.shape[-1]
    eye = jnp.eye(num_features, dtype=dtype)
    w0 = jnp.zeros(num_features, dtype)
    f0, g0 = _value_and_grad(w0, pairs, lam)
    threshold = tol * jnp.maximum(1.0, jnp.linalg.norm(g0))

    def newton_step(carry):
        w, f, g, k = carry
        active = pair_margins(w, pairs) < 1.0
        hessian = 2.0 * pair_gram(pairs, active) / pairs.num_pairs + lam * eye
        direction = -jnp.linalg.solve(hessian, g)
        slope = g @ direction

        def halve(state):
            t, _, _, m = state
            t = 0.5 * t
            f_new, g_new = _value_and_grad(w + t * direction, pairs, lam)
            return t, f_new, g_new, m + 1

        def too_high(state):
            t, f_new, _, m = state
            return (f_new > f + 1e-4 * t * slope) & (m < max_halvings)

        f1, g1 = _value_and_grad(w + direction, pairs, lam)
        t, f_new, g_new, _ = jax.lax.while_loop(too_high, halve, (jnp.ones((), dtype), f1, g1, jnp.zeros((), jnp.int32)))
        return w + t * direction, f_new, g_new, k + 1

    def not_done(carry):
        _, _, g, k = carry
        return (jnp.linalg.norm(g) > threshold) & (k < max_iters)

    w, f, g, k = jax.lax.while_loop(not_done, newton_step, (w0, f0, g0, jnp.zeros((), jnp.int32)))
    return w, RankSVMInfo(objective=f, grad_norm=jnp.linalg.norm(g), iterations=k)


def check_ranksvm_lambda(lam) -> None:
    """Rejects ``λ ≤ 0`` (the objective would not be strongly convex) or NaN, naming the value."""
    values = np.atleast_1d(np.asarray(lam, np.float64))
    bad = values[~(values > 0)]
    if bad.size:
        raise ValueError(f"RankSVM λ must be > 0 (it is 1/(C·N_p)); got {bad.tolist()}.")
