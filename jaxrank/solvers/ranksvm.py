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

Precision. In float32 the gradient of raw (unnormalised) features, which span many orders of
magnitude (MSLR-WEB: ``‖∇F(0)‖ ≈ 1.4e4``), carries rounding noise above the tolerance, so Newton can
use all ``max_iters`` steps and stop short of the optimum (the 43-query MSLR-WEB subset, pair-index
form, λ = 1e-4: ``‖∇F‖ ≈ 24`` after 50 steps, objective 0.08% above the float64 optimum, which float64
reaches in 7 steps). ``RankSVMInfo.converged`` records whether the gradient test was met; the host-side
``check_converged`` warns for every lane where it was not.
"""

import warnings
from typing import NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes
from jaxrank.solvers.pairwise import PairOperator, generalized_hessian, pair_margins, squared_hinge_value_and_grad


class RankSVMInfo(NamedTuple):
    objective: jax.Array  # [] F(w) at the solution
    grad_norm: jax.Array  # [] ‖∇F(w)‖
    iterations: jax.Array  # [] i32 Newton steps taken
    converged: jax.Array  # [] bool, ‖∇F(w)‖ ≤ max(tol, 1000 ε) · max(1, ‖∇F(0)‖), ε the dtype's epsilon


def ranksvm_objective(w: jax.Array, pairs: PairOperator, lam) -> jax.Array:
    """``F(w) = L̄(w) + (λ/2)‖w‖²``."""
    return squared_hinge_value_and_grad(w, pairs)[0] + 0.5 * lam * (w @ w)


def _value_and_grad(w, pairs, lam):
    value, grad = squared_hinge_value_and_grad(w, pairs)
    return value + 0.5 * lam * (w @ w), grad + lam * w


def ranksvm(pairs: PairOperator, lam, *, max_iters: int = 50, tol: float = 1e-6, max_halvings: int = 30):
    """Minimises ``F`` by damped Newton from ``w = 0``; returns ``(w [D], RankSVMInfo)``.

    Args:
      pairs: ``make_pairs(queries)``.
      lam: ``λ > 0`` (a scalar array, so a grid vmaps).
      max_iters, tol: stop once ``‖∇F‖ ≤ tol · max(1, ‖∇F(0)‖)``, or when the line search finds no
        decrease (rounding has the last word). ``info.converged`` asks ``‖∇F‖ ≤ max(tol, 1000 ε) ·
        max(1, ‖∇F(0)‖)`` with ``ε`` the dtype's machine epsilon: float32 gradients of well-scaled
        features stall near 1e-5 relative at the optimum, while on raw MSLR features float32 stalls
        near 2e-3, measurably above the optimum (use float64 or ``normalize=True`` there).

    ``info.converged`` is False when ``max_iters`` ran out first: pass ``info`` to
    ``check_converged`` on the host to be warned.
    """
    dtype = pairs.features.dtype
    lam = jnp.asarray(lam, dtype)
    num_features = pairs.features.shape[-1]
    eye = jnp.eye(num_features, dtype=dtype)
    w0 = jnp.zeros(num_features, dtype)
    f0, g0 = _value_and_grad(w0, pairs, lam)
    scale = jnp.maximum(1.0, jnp.linalg.norm(g0))
    threshold = tol * scale

    def newton_step(carry):
        w, f, g, k, _ = carry
        hessian = generalized_hessian(pair_margins(w, pairs), pairs) + lam * eye
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
        stalled = ~(f_new < f)  # the line search found no decrease: stay, and stop
        return (jnp.where(stalled, w, w + t * direction), jnp.where(stalled, f, f_new), jnp.where(stalled, g, g_new),
                k + 1, stalled)

    def not_done(carry):
        _, _, g, k, stalled = carry
        return (jnp.linalg.norm(g) > threshold) & ~stalled & (k < max_iters)

    start = (w0, f0, g0, jnp.zeros((), jnp.int32), jnp.zeros((), bool))
    w, f, g, k, _ = jax.lax.while_loop(not_done, newton_step, start)
    grad_norm = jnp.linalg.norm(g)
    reachable = jnp.maximum(tol, 1000.0 * jnp.finfo(dtype).eps) * scale
    return w, RankSVMInfo(objective=f, grad_norm=grad_norm, iterations=k, converged=grad_norm <= reachable)


class GridConfig(NamedTuple):
    """The static settings of ``ranksvm_grid``'s study (hashable: jit's cache key)."""

    max_iters: int
    tol: float
    max_halvings: int


def _grid_solve(config: GridConfig, key, hparams, lams, pairs):
    del key, hparams  # the solve is deterministic
    solve = lambda lam: ranksvm(pairs, lam, max_iters=config.max_iters, tol=config.tol,  # noqa: E731
                                max_halvings=config.max_halvings)
    return jax.vmap(solve)(lams)


def _grid_done(config: GridConfig, carry, chunk, lams, pairs):
    del config, chunk, lams, pairs  # one solve per lane, all in init
    return carry


def _grid_result(config: GridConfig, carry, lams, pairs):
    del config, lams, pairs
    return carry


def ranksvm_grid(pairs: PairOperator, lams, *, max_iters: int = 50, tol: float = 1e-6, max_halvings: int = 30,
                 mesh=None, label: Optional[str] = None):
    """``ranksvm`` for every fold and every ``λ`` of a grid, the folds as lanes of the lane runner
    (``jaxrank.lanes.run_lanes``: sharded over ``mesh``, default every device).

    Args:
      pairs: a ``PairOperator`` whose leaves have a leading fold axis ``[F, ...]`` (``stack_pairs``).
      lams: ``[H]`` values of ``λ > 0``, shared by the folds.
      max_iters, tol, max_halvings: ``ranksvm``'s.

    Returns:
      ``(w [F, H, D], RankSVMInfo with leaves [F, H])`` as NumPy arrays.
    """
    num_folds = {np.shape(x)[0] for x in jax.tree.leaves(pairs)}
    if len(num_folds) != 1:
        raise ValueError(f"pairs' leaves need one leading fold axis; got leading sizes {sorted(num_folds)}.")
    keys = jax.random.split(jax.random.key(0), num_folds.pop())  # unused: the lanes draw nothing
    study = lanes.bound_study(GridConfig(int(max_iters), float(tol), int(max_halvings)), _grid_solve, _grid_done,
                              _grid_result)
    return lanes.run_lanes(study, keys, data=jnp.asarray(lams, jnp.float32), lane_data=pairs,
                           chunks=np.zeros(1, np.int32), mesh=mesh, label=label)


def check_converged(info: RankSVMInfo, dtype, *, lanes: Optional[Sequence[str]] = None) -> np.ndarray:
    """Warns (``UserWarning``) for every lane of ``info`` whose Newton solve did not converge.

    Host-side: call it on the solver's output, outside ``jit``.

    Args:
      info: ``RankSVMInfo`` of one solve (leaves ``[]``) or of a ``vmap`` over lanes (leaves
        ``[...]``, e.g. ``[F, H]`` folds × λ grid).
      dtype: the solve's float dtype (``pairs.features.dtype``); the advice depends on it.
      lanes: optional names of the lanes in row-major order (default their indices).

    Returns:
      ``converged`` as a NumPy bool array of the lanes' shape.
    """
    converged = np.asarray(info.converged, bool)
    grad_norm = np.asarray(info.grad_norm, np.float64)
    iterations = np.asarray(info.iterations)
    if np.dtype(dtype) != np.float64:
        advice = ("float32 rounding on raw (unnormalised) features can keep the gradient above the tolerance: "
                  "solve in float64 (jax.enable_x64(True) and make_pairs(..., dtype=jnp.float64)), or load raw "
                  "features with normalize=True")
    else:
        advice = "raise max_iters, or load raw (unnormalised) features with normalize=True"
    for flat in np.flatnonzero(~converged.reshape(-1)):
        index = np.unravel_index(flat, converged.shape)  # () for a single solve
        name = lanes[flat] if lanes is not None else (f"lane {tuple(int(i) for i in index)}" if index else "")
        warnings.warn(
            f"RankSVM Newton did not converge{f' ({name})' if name else ''}: gradient norm "
            f"{grad_norm[index]:.3g} after {int(iterations[index])} iterations in {np.dtype(dtype).name}; "
            f"the solution may be off the optimum. {advice}.",
            UserWarning, stacklevel=2)
    return converged
