"""Proximal Newton for ``min_w L̄(w) + Σ_j τ_j |w_j|`` on the pairwise squared hinge (sparse RankSVM).

The second-order counterpart of FISTA (``fista.py``, Laporte et al., TNNLS 2014, Algorithm 1)
for the ℓ1 problem (paper eq. 7) and the weighted-ℓ1 MM subproblems (eq. 13), following
proximal Newton (Lee, Sun & Saunders, SIAM J. Optim. 2014, Algorithm 1 with an exact
subproblem solve and backtracking) and newGLMNET (Yuan, Ho & Lin, JMLR 2012):

1. the quadratic model ``q(x) = gᵀ(x − w) + ½ (x − w)ᵀ H (x − w) + Σ τ_j |x_j|`` with
   ``g = ∇L̄(w)`` and the generalised Hessian of the squared hinge
   ``H = (2 / N_p) Σ_{p: m_p < 1} z_p z_pᵀ`` over the pairs whose margin ``m_p = wᵀz_p`` is
   below 1 (Chapelle & Keerthi, Inf. Retr. 2010, eq. 8; Mangasarian 2002), a ``D × D`` matrix;
2. ``x* = argmin q`` solved exactly by feature-sign search (Lee, Battle, Raina & Ng, NIPS 2007),
   an active-set method: cyclic coordinate descent stalls on the ill-conditioned supports of
   small λ (condition numbers ~1e6 on MQ2008), the exact active-set solve does not;
3. a backtracking (Armijo) line search along ``d = x* − w`` whose objective change is summed
   from per-pair differences (``−t δm_p (2 r_p − t δm_p)`` while a pair stays active), not
   computed as ``F(w + t d) − F(w)``, which loses the signal below ~1e-5·λ once λ is small.

``H`` changes only where a pair's margin crosses 1, so it is carried from step to step (and
across MM rounds) and updated with the rank-one terms of the pairs whose activity changed,
gathered into a buffer of ``buffer`` rows; more changes than that rebuild it
(``generalized_hessian``). An iteration costs two passes over the pairs (``A x*`` and ``Aᵀ r``) and
``O(P)`` per line-search trial. The stopping rule is FISTA's: the KKT residual of the true
gradient ``≤ tol·λ``.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import jax.scipy.linalg

from jaxrank.solvers.fista import kkt_residual
from jaxrank.solvers.pairwise import (
    PairOperator,
    PairRows,
    generalized_hessian,
    grad_at_margins,
    margin_residuals,
    pair_margins,
)
from jaxrank.solvers.penalties import check_lambda

ARMIJO = 1e-4  # sufficient-decrease fraction σ of the predicted decrease (Lee et al. 2014, eq. 2.4)
MAX_HALVINGS = 30  # line-search trials t = 1, 1/2, …, 2^-30
HESSIAN_BUFFER = 1024  # pairs whose activity may change in one step before H is rebuilt
RIDGE = 1e-13  # relative ridge on the active block of H (copies of a feature, rank-deficient supports)


class NewtonPoint(NamedTuple):
    """A point with what the next Newton step needs (no pass over the pairs to restart from it)."""

    w: jax.Array  # [D] iterate
    margins: jax.Array  # [P] wᵀz_p of every pair (fresh: A w, not accumulated)
    grad: jax.Array  # [D] ∇L̄(w)
    hessian: jax.Array  # [D, D] generalised Hessian (2/N_p) Σ_{m_p<1} z_p z_pᵀ


class NewtonInfo(NamedTuple):
    iterations: jax.Array  # [] i32, Newton steps taken
    qp_iterations: jax.Array  # [] i32, feature-sign iterations summed over the steps
    rebuilds: jax.Array  # [] i32, full Hessian builds (more than ``buffer`` pairs changed activity)
    kkt: jax.Array  # [] float, KKT residual at the returned w
    converged: jax.Array  # [] bool, kkt ≤ tol·λ
    stalled: jax.Array  # [] bool, the line search found no decrease before convergence


class NewtonResult(NamedTuple):
    """``prox_newton``'s return value besides ``w``."""

    iterations: jax.Array  # [] i32
    qp_iterations: jax.Array  # [] i32
    objective: jax.Array  # [] float, L̄(w) + Σ τ_j |w_j|
    kkt: jax.Array  # [] float
    converged: jax.Array  # [] bool


def _active(margins: jax.Array, pairs: PairOperator) -> jax.Array:
    return pairs.valid & (margins < 1.0)


def newton_point(w: jax.Array, pairs: PairOperator) -> NewtonPoint:
    """Margins, gradient and generalised Hessian at ``w [D]`` (one forward, one adjoint pass, one build)."""
    margins = pair_margins(w, pairs)
    return NewtonPoint(w, margins, grad_at_margins(margins, pairs), generalized_hessian(margins, pairs))


def _pair_rows(pairs: PairOperator, idx: jax.Array) -> jax.Array:
    """``[K, D]`` rows ``z_p`` of the pairs ``idx [K]`` (either pair form)."""
    if isinstance(pairs, PairRows):
        return pairs.diffs[idx]
    return pairs.features[pairs.first[idx]] - pairs.features[pairs.second[idx]]


def update_hessian(hessian: jax.Array, old_margins: jax.Array, new_margins: jax.Array, pairs: PairOperator,
                   buffer: int = HESSIAN_BUFFER) -> tuple[jax.Array, jax.Array]:
    """``H`` at ``new_margins`` from ``H`` at ``old_margins``: ``± z_p z_pᵀ`` for the pairs that
    entered or left ``{m_p < 1}`` when at most ``buffer`` did, else rebuilt. Returns ``(H, rebuilt)``."""
    old, new = _active(old_margins, pairs), _active(new_margins, pairs)
    changed = old != new
    num_changed = jnp.sum(changed)
    buffer = min(buffer, changed.shape[0])

    def incremental(h):
        idx = jnp.nonzero(changed, size=buffer, fill_value=0)[0]
        sign = jnp.where(jnp.arange(buffer) < num_changed, jnp.where(new[idx], 1.0, -1.0), 0.0).astype(h.dtype)
        rows = _pair_rows(pairs, idx)
        return h + 2.0 * (rows * sign[:, None]).T @ rows / pairs.num_pairs

    rebuild = num_changed > buffer
    hessian = jax.lax.cond(rebuild, lambda h: generalized_hessian(new_margins, pairs), incremental, hessian)
    return hessian, rebuild


class _QPState(NamedTuple):
    x: jax.Array  # [D]
    grad: jax.Array  # [D] H x + c
    settled: jax.Array  # [] bool, the nonzero coordinates are optimal for their signs
    done: jax.Array  # [] bool
    k: jax.Array  # [] i32


def l1_quadratic(hessian: jax.Array, c: jax.Array, thresholds: jax.Array, x0: jax.Array, *, eps,
                 max_iter: int) -> tuple[jax.Array, jax.Array]:
    """Feature-sign search (Lee et al., NIPS 2007, Algorithm 1) for
    ``min_x ½ xᵀHx + cᵀx + Σ_j τ_j |x_j|`` from ``x0``.

    Each iteration either adds the zero coordinate that violates ``|∂_j| ≤ τ_j`` most (with the
    sign that descends), or, while the nonzero coordinates are not optimal for their signs,
    solves the equality-constrained problem on the active set exactly and moves to the lowest
    point among the full step and the points where an active coordinate crosses zero (that
    coordinate leaves). The objective decreases at every iteration, so the loop ends at the
    minimiser (zero coordinates within ``eps``) or after ``max_iter`` iterations at a point no
    worse than ``x0``.

    Args:
      hessian: ``[D, D]`` symmetric positive semidefinite (a relative ridge of 1e-13, removed by
        iterative refinement where the block is regular, keeps the active block solvable).
      c: ``[D]`` linear term.
      thresholds: ``[D]`` τ ≥ 0.
      x0: ``[D]`` start.
      eps: tolerance on the zero coordinates' violation.
      max_iter: iteration budget (static).

    Returns:
      ``(x [D], iterations [] i32)``.
    """
    num = x0.shape[0]
    coords = jnp.arange(num)
    ridge = RIDGE * jnp.maximum(jnp.max(jnp.diag(hessian)), jnp.finfo(hessian.dtype).tiny)

    def violation(x, grad):
        return jnp.where(x == 0, jnp.abs(grad) - thresholds, -jnp.inf)

    def body(s: _QPState) -> _QPState:
        x, grad = s.x, s.grad
        nz = x != 0
        viol = violation(x, grad)
        j = jnp.argmax(viol)
        add = s.settled & (coords == j)
        active = nz | add
        theta = jnp.where(nz, jnp.sign(x), jnp.where(add, -jnp.sign(grad), 0.0))
        # the sign-fixed problem on the active set, identity elsewhere (those coordinates stay 0); the
        # ridge keeps copies of a feature solvable, two refinement steps remove its bias elsewhere
        both = active[:, None] & active[None, :]
        block = jnp.where(both, hessian, 0.0) + jnp.diag(jnp.where(active, 0.0, 1.0))
        rhs = jnp.where(active, -c - thresholds * theta, 0.0)
        lu = jax.scipy.linalg.lu_factor(block + jnp.diag(jnp.where(active, ridge, 0.0)))
        target = jax.scipy.linalg.lu_solve(lu, rhs)
        for _ in range(2):
            target = target + jax.scipy.linalg.lu_solve(lu, rhs - block @ target)
        delta = target - x
        # candidate points: where an active nonzero coordinate reaches 0 in (0, 1], and the full step
        cross = nz & (x * target <= 0)
        steps = jnp.concatenate([jnp.where(cross, x / jnp.where(cross, x - target, 1.0), 1.0),
                                 jnp.ones((1,), x.dtype)])
        h_delta = hessian @ delta
        moved = x[None, :] + steps[:, None] * delta[None, :]
        change = (steps * (grad @ delta) + 0.5 * steps**2 * (delta @ h_delta)
                  + jnp.sum(thresholds * (jnp.abs(moved) - jnp.abs(x)), axis=1))  # q(x + sδ) − q(x)
        change = jnp.where(jnp.concatenate([cross, jnp.ones((1,), bool)]), change, jnp.inf)
        best = jnp.argmin(change)
        decreased = change[best] < 0
        x_new = jnp.where(coords == best, 0.0, moved[best])  # a crossing coordinate lands exactly on 0
        x_new = jnp.where(decreased, x_new, x)
        grad_new = hessian @ x_new + c
        # a full step with no sign change makes the nonzeros optimal (Lee et al. step 4a); a full step
        # past a sign change leaves new signs to re-solve; a failed attempt to add a coordinate ends the search
        consistent = jnp.all(jnp.where(active, jnp.sign(target) == theta, True))
        settled = (decreased & (best == num) & consistent) | ~decreased
        stuck = s.settled & ~decreased
        done = stuck | (settled & (jnp.max(violation(x_new, grad_new)) <= eps))
        return _QPState(x_new, grad_new, settled, done, s.k + 1)

    grad0 = hessian @ x0 + c
    state = _QPState(x0, grad0, jnp.zeros((), bool), jnp.zeros((), bool), jnp.zeros((), jnp.int32))
    state = jax.lax.while_loop(lambda s: ~s.done & (s.k < max_iter), body, state)
    return state.x, state.k


class _LoopState(NamedTuple):
    point: NewtonPoint
    kkt: jax.Array  # [] float
    k: jax.Array  # [] i32
    qp: jax.Array  # [] i32
    rebuilds: jax.Array  # [] i32
    stalled: jax.Array  # [] bool


def newton_step(point: NewtonPoint, pairs: PairOperator, thresholds: jax.Array, *, eps, qp_max_iter: int,
                buffer: int = HESSIAN_BUFFER):
    """One proximal Newton step from ``point`` for thresholds ``τ [D]``.

    Returns ``(point, qp_iterations, rebuilt, stalled)``; a stalled step (no sufficient decrease
    after ``MAX_HALVINGS`` halvings) returns ``point`` unchanged.
    """
    w, margins, grad, hessian = point
    x, qp_iters = l1_quadratic(hessian, grad - hessian @ w, thresholds, w, eps=eps, max_iter=qp_max_iter)
    d = x - w
    m_full = pair_margins(x, pairs)  # fresh margins of the full step
    dm = m_full - margins
    r0 = margin_residuals(margins, pairs)
    abs_w = jnp.abs(w)
    predicted = grad @ d + jnp.sum(thresholds * (jnp.abs(x) - abs_w))  # Lee et al. 2014, eq. 2.4 (Δ)

    def change(t):
        """F(w + t d) − F(w) summed from per-pair and per-coordinate differences, each written
        without cancellation where it is linear in t: ``r_t² − r² = −t δm (2r − t δm)`` for a pair
        active at both points, ``τ (|w + td| − |w|) = τ sign(w) t d`` where the sign is kept."""
        m_t = jnp.where(t == 1.0, m_full, margins + t * dm)
        r_t = margin_residuals(m_t, pairs)
        both = (r0 > 0) & (r_t > 0)
        step = t * dm
        loss = jnp.where(both, -step * (2.0 * r0 - step), r_t * r_t - r0 * r0)
        w_t = w + t * d
        kept = (w != 0) & (jnp.sign(w_t) == jnp.sign(w))
        penalty = thresholds * jnp.where(kept, jnp.sign(w) * t * d, jnp.abs(w_t) - abs_w)
        return jnp.sum(loss) / pairs.num_pairs + jnp.sum(penalty)

    def search_cond(c):
        t, j, delta = c
        return (delta > ARMIJO * t * predicted) & (j < MAX_HALVINGS)

    def search_body(c):
        t, j, _ = c
        return t / 2, j + 1, change(t / 2)

    one = jnp.ones((), w.dtype)
    t, _, delta = jax.lax.while_loop(search_cond, search_body, (one, jnp.zeros((), jnp.int32), change(one)))
    stalled = (predicted >= 0) | (delta > ARMIJO * t * predicted)
    t = jnp.where(stalled, 0.0, t)
    w_new = w + t * d
    # after a shortened step, margins are recomputed rather than accumulated (the KKT check reads them)
    branch = jnp.where(t == 1.0, 0, jnp.where(stalled, 1, 2))
    m_new = jax.lax.switch(branch, [lambda: m_full, lambda: margins, lambda: pair_margins(w_new, pairs)])
    g_new = grad_at_margins(m_new, pairs)
    h_new, rebuilt = update_hessian(hessian, margins, m_new, pairs, buffer)
    return NewtonPoint(w_new, m_new, g_new, h_new), qp_iters, rebuilt, stalled


def solve_from(point: NewtonPoint, pairs: PairOperator, thresholds: jax.Array, target, *, max_iter: int = 100,
               qp_max_iter: Optional[int] = None, buffer: int = HESSIAN_BUFFER) -> tuple[NewtonPoint, NewtonInfo]:
    """Proximal Newton steps from ``point`` until the KKT residual is ``≤ target`` (or ``max_iter``
    steps, or a stalled line search). ``thresholds [D]`` = ``λ β``; ``target`` = ``tol·λ``."""
    num_features = point.w.shape[0]
    qp_max_iter = 4 * num_features + 8 if qp_max_iter is None else qp_max_iter
    # the model's zero coordinates are solved well below the target, so a step can certify the next point
    eps = 1e-3 * target

    def cond(s: _LoopState):
        return (s.kkt > target) & (s.k < max_iter) & ~s.stalled

    def body(s: _LoopState) -> _LoopState:
        point, qp, rebuilt, stalled = newton_step(s.point, pairs, thresholds, eps=eps, qp_max_iter=qp_max_iter,
                                                  buffer=buffer)
        kkt = kkt_residual(point.w, point.grad, thresholds)
        return _LoopState(point, kkt, s.k + 1, s.qp + qp, s.rebuilds + rebuilt.astype(jnp.int32), stalled)

    i0 = jnp.zeros((), jnp.int32)
    kkt0 = kkt_residual(point.w, point.grad, thresholds)
    s = jax.lax.while_loop(cond, body, _LoopState(point, kkt0, i0, i0, i0, jnp.zeros((), bool)))
    info = NewtonInfo(iterations=s.k, qp_iterations=s.qp, rebuilds=s.rebuilds, kkt=s.kkt, converged=s.kkt <= target,
                      stalled=s.stalled & (s.kkt > target))
    return s.point, info


def prox_newton(
    pairs: PairOperator,
    lam,
    *,
    weights: Optional[jax.Array] = None,
    w_init: Optional[jax.Array] = None,
    tol: float = 1e-6,
    max_iter: int = 100,
    qp_max_iter: Optional[int] = None,
    buffer: int = HESSIAN_BUFFER,
) -> tuple[jax.Array, NewtonResult]:
    """Solves the (weighted-)ℓ1 sparse RankSVM problem ``L̄(w) + λ Σ_j β_j |w_j|`` for one λ
    (the same problem and stop rule as ``fista``).

    Args:
      pairs: ``make_pairs(queries)`` (rows or pair indices), ``P`` pairs, ``D`` features.
      lam: λ ≥ 0 (scalar, traced under ``jit``).
      weights: ``[D]`` β ≥ 0, default all ones (plain ℓ1).
      w_init: ``[D]`` warm start, default 0.
      tol: stop when the KKT residual is ``≤ tol · λ`` (``≤ tol`` at λ = 0).
      max_iter: Newton-step budget (static).
      qp_max_iter: feature-sign budget per step (static; default ``4D + 8``).
      buffer: pairs whose activity may change in one step before ``H`` is rebuilt (static).

    Returns:
      ``(w [D], NewtonResult)``.
    """
    check_lambda(lam)
    if max_iter < 1 or buffer < 1:
        raise ValueError(f"max_iter={max_iter} and buffer={buffer} must be >= 1.")
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1); got {tol}.")
    dtype = pairs.features.dtype
    num_features = pairs.features.shape[-1]
    lam = jnp.asarray(lam, dtype)
    weights = jnp.ones(num_features, dtype) if weights is None else jnp.asarray(weights, dtype)
    if weights.shape != (num_features,):
        raise ValueError(f"weights must have shape ({num_features},) like the features; got {weights.shape}.")
    w0 = jnp.zeros(num_features, dtype) if w_init is None else jnp.asarray(w_init, dtype)
    if w0.shape != (num_features,):
        raise ValueError(f"w_init must have shape ({num_features},) like the features; got {w0.shape}.")
    thresholds = lam * weights
    target = tol * jnp.where(lam > 0, lam, 1.0)
    point, info = solve_from(newton_point(w0, pairs), pairs, thresholds, target, max_iter=max_iter,
                             qp_max_iter=qp_max_iter, buffer=buffer)
    r = margin_residuals(point.margins, pairs)
    objective = jnp.sum(r * r) / pairs.num_pairs + jnp.sum(thresholds * jnp.abs(point.w))
    return point.w, NewtonResult(iterations=info.iterations, qp_iterations=info.qp_iterations, objective=objective,
                                 kkt=info.kkt, converged=info.converged)


__all__ = [
    "NewtonInfo", "NewtonPoint", "NewtonResult", "l1_quadratic", "newton_point",
    "newton_step", "prox_newton", "solve_from", "update_hessian",
]
