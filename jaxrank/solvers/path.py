"""Regularisation paths for sparse RankSVM (Laporte et al., TNNLS 2014, Algorithms 1–2, protocol of §V-C).

One lane solves, for a descending grid ``λ_1 > … > λ_A``,

* the ℓ1 problem (paper eq. 7, Algorithm 1) at each λ, warm-started at the previous λ's ℓ1
  solution;
* the reweighted-ℓ1 MM (paper eq. 13, Algorithm 2) of the lane's penalty, started at that
  λ's ℓ1 solution (our initialisation; the paper leaves it open), so every λ is solved from the same point as a
  one-by-one solver would use and the path only speeds the ℓ1 solves up.

The lane is one ``lax.while_loop`` over FISTA steps that moves on to the next subproblem
(ℓ1 solve → MM rounds → next λ) as soon as the current one is KKT-certified. Under ``vmap``
each lane walks its own sequence, so a batch of lanes costs its largest per-lane number of
steps; a nest of per-subproblem loops would cost, for every subproblem, its slowest lane.
Penalties of different kinds share one compiled program through ``PathPenalty``, whose
``kind`` and hyperparameters are arrays: ``solve_path`` is ``vmap``-ed over penalties and
folds (``solve_paths``) with one compile per data shape; ``solve_paths_in_chunks`` runs the
same program on the lane runner (a fold is a lane), in chunks, reporting progress.

``solver="newton"`` solves every subproblem of the same protocol by proximal Newton
(``prox_newton.py``) instead: a lane is a ``lax.scan`` over λ whose ℓ1 solve and MM rounds
are each a ``while_loop`` of Newton steps, carrying the pair margins, gradient and generalised
Hessian from subproblem to subproblem (and the ℓ1 solution's to the next λ). Its lanes run one
after another (``lax.map``): under ``vmap`` both branches of its Hessian update would run, and
on a CPU batching lanes saves nothing.
"""

import functools
import time
from typing import Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes
from jaxrank.solvers import penalties as P
from jaxrank.solvers.fista import kkt_residual, momentum, weighted_l1_objective
from jaxrank.data.ragged import Queries, as_ragged
from jaxrank.solvers.pairwise import (POWER_START_SEED, PairOperator, grad_at_margins, lambda_max, lipschitz_constant,
                                      pair_margins)
from jaxrank.solvers.prox_newton import HESSIAN_BUFFER, newton_point, solve_from
from jaxrank.solvers.reweighted_l1 import objective

KINDS = ("l1", "log", "mcp", "lp", "scad")
SOLVERS = ("fista", "newton")


class PathPenalty(NamedTuple):
    """ℓ1, the non-convex penalties of Laporte et al. 2014 (eq. 2, Table II) or SCAD, selected by
    ``kind`` (an index into ``KINDS``).

    All leaves are arrays, so a batch of ``H`` penalties is a ``PathPenalty`` with leaves ``[H]``.
    Hyperparameters of the other kinds keep harmless defaults (no NaN in unused branches).
    """

    kind: jax.Array  # [] i32, index into KINDS
    eps: jax.Array  # [] float, log ε
    p: jax.Array  # [] float, ℓp exponent
    p_eps: jax.Array  # [] float, ℓp smoothing
    gamma: jax.Array  # [] float, MCP γ
    lambda_inside: jax.Array  # [] bool, MCP scaling flag
    a: jax.Array  # [] float, SCAD a

    def _members(self):
        return (P.L1(), P.Log(self.eps), P.MCP(self.gamma, self.lambda_inside), P.Lp(self.p, self.p_eps), P.SCAD(self.a))

    def value(self, w, lam):
        return jnp.stack([m.value(w, lam) for m in self._members()])[self.kind]

    def weight(self, u, lam):
        return jnp.stack([m.weight(u, lam) for m in self._members()])[self.kind]


def path_penalty(penalty: P.Penalty, dtype=jnp.float32) -> PathPenalty:
    """The ``PathPenalty`` equal to one of ``l1()``, ``log()``, ``mcp()``, ``lp()``, ``scad()``, with
    hyperparameters in ``dtype`` (converted once from the penalty's values: a float32 ε = 0.01
    widened to float64 would move float64 objectives by ~1e-9 relative)."""
    fields = dict(kind=0, eps=0.01, p=0.5, p_eps=1e-3, gamma=3.0, lambda_inside=False, a=3.7)
    if isinstance(penalty, P.L1):
        pass
    elif isinstance(penalty, P.Log):
        fields.update(kind=1, eps=penalty.eps)
    elif isinstance(penalty, P.MCP):
        fields.update(kind=2, gamma=penalty.gamma, lambda_inside=penalty.lambda_inside)
    elif isinstance(penalty, P.Lp):
        fields.update(kind=3, p=penalty.p, p_eps=penalty.eps)
    elif isinstance(penalty, P.SCAD):
        fields.update(kind=4, a=penalty.a)
    else:
        raise TypeError(f"unknown penalty {penalty!r}; build one with l1(), log(), mcp(), lp() or scad().")
    return PathPenalty(
        kind=jnp.asarray(fields["kind"], jnp.int32),
        lambda_inside=jnp.asarray(fields["lambda_inside"], bool),
        **{k: jnp.asarray(v, dtype) for k, v in fields.items() if k not in ("kind", "lambda_inside")},
    )


def stack_penalties(penalties: Sequence[P.Penalty], dtype=jnp.float32) -> PathPenalty:
    """``H`` penalties as one ``PathPenalty`` with leaves ``[H]`` (vmap axis 0)."""
    lanes = [path_penalty(p, dtype) for p in penalties]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *lanes)


def lambda_grid(lam_max, *, num: int = 17, decades: float = 4.0) -> jax.Array:
    """``λ_max · 10^{-a}``, ``a = 0, decades/(num-1), …, decades`` (17 values over 4 decades by default).

    The grid is our choice: the paper tunes λ "on a grid" (§V-C) without giving it.

    Args:
      lam_max: ``[...]`` λ_max per problem (``lambda_max(pairs)``).

    Returns:
      ``[..., num]`` descending grid.
    """
    lam_max = jnp.asarray(lam_max)
    exps = jnp.linspace(0.0, decades, num, dtype=lam_max.dtype)
    return lam_max[..., None] * 10.0 ** (-exps)


class PathInfo(NamedTuple):
    objective: jax.Array  # [A] float, L̄ + R_λ at the returned w
    l1_objective: jax.Array  # [A] float, L̄ + λ‖·‖₁ at the ℓ1 solution
    kkt: jax.Array  # [A] float, KKT residual of the last weighted-ℓ1 subproblem
    l1_iterations: jax.Array  # [A] i32, FISTA steps of the ℓ1 solve
    mm_iterations: jax.Array  # [A] i32, FISTA steps summed over the MM rounds
    outer_iterations: jax.Array  # [A] i32, MM rounds taken
    converged: jax.Array  # [A] bool, KKT-certified: ℓ1 and last weighted-ℓ1 subproblem KKT ≤ tol·λ
    mm_converged: jax.Array  # [A] bool, MM outer stop rule met within num_outer rounds


class PathState(NamedTuple):
    """One lane of a path solve, between calls of ``advance_path`` (leaves gain ``[F, H]`` under ``solve_paths``).

    The lane works through its subproblems in order: at ``λ_a``, round 0 is the ℓ1 solve and
    rounds ``1..num_outer`` the reweighted-ℓ1 MM rounds. ``m_w`` holds the pair margins of ``w``
    (``[P]``) so that the extrapolated point's margins need no extra pass.
    """

    w: jax.Array  # [D] FISTA iterate of the current subproblem
    v: jax.Array  # [D] extrapolated point
    t: jax.Array  # [] momentum sequence
    g_w: jax.Array  # [D] ∇L̄(w)
    g_v: jax.Array  # [D] ∇L̄(v)
    m_w: jax.Array  # [P] margins of w
    kkt: jax.Array  # [] KKT residual of w for the current subproblem
    k: jax.Array  # [] i32 FISTA steps in the current subproblem
    solved: jax.Array  # [] bool, current subproblem is KKT-certified or out of budget
    a: jax.Array  # [] i32 index of the current λ (= A once the lane is finished)
    round: jax.Array  # [] i32, 0: ℓ1 solve, r ≥ 1: MM round r
    weights: jax.Array  # [D] β of the current subproblem
    w_round: jax.Array  # [D] start of the current MM round
    w_l1: jax.Array  # [D] last ℓ1 solution (warm start of the next λ's ℓ1 solve)
    l1_certified: jax.Array  # [] bool
    steps: jax.Array  # [] i32 loop iterations taken by this lane
    W: jax.Array  # [A, D] MM fixed points
    W_l1: jax.Array  # [A, D] ℓ1 solutions
    out_kkt: jax.Array  # [A]
    l1_iterations: jax.Array  # [A] i32
    mm_iterations: jax.Array  # [A] i32
    outer_iterations: jax.Array  # [A] i32
    converged: jax.Array  # [A] bool
    mm_converged: jax.Array  # [A] bool

    @property
    def finished(self) -> jax.Array:
        return self.a >= self.W.shape[-2]


def _target(lam, tol):
    return tol * jnp.where(lam > 0, lam, 1.0)


def init_path(pairs: PairOperator, lams: jax.Array) -> PathState:
    """A lane about to check ``w = 0`` for the ℓ1 problem at ``lams[0]`` (its first iteration)."""
    P.check_lambda(lams)
    dtype = pairs.features.dtype
    lams = jnp.asarray(lams, dtype)
    (num_lams,), num_features = lams.shape, pairs.features.shape[-1]
    zero = jnp.zeros(num_features, dtype)
    zeros_a, izeros_a, false_a = jnp.zeros(num_lams, dtype), jnp.zeros(num_lams, jnp.int32), jnp.zeros(num_lams, bool)
    i0, true = jnp.zeros((), jnp.int32), jnp.ones((), bool)
    # "solved" with round = -1: the first iteration moves to round 0 (the ℓ1 solve) at w = 0
    return PathState(
        w=zero, v=zero, t=jnp.ones((), dtype), g_w=zero, g_v=zero, m_w=pair_margins(zero, pairs),
        kkt=jnp.zeros((), dtype), k=i0, solved=true, a=i0, round=i0 - 1, weights=jnp.ones(num_features, dtype),
        w_round=zero, w_l1=zero, l1_certified=true, steps=i0, W=jnp.zeros((num_lams, num_features), dtype),
        W_l1=jnp.zeros((num_lams, num_features), dtype), out_kkt=zeros_a, l1_iterations=izeros_a,
        mm_iterations=izeros_a, outer_iterations=izeros_a, converged=false_a, mm_converged=false_a,
    )


def advance_path(
    state: PathState,
    pairs: PairOperator,
    lams: jax.Array,
    penalty,
    lipschitz: jax.Array,
    num_steps=None,
    *,
    tol: float = 1e-6,
    max_iter: int = 5000,
    num_outer: int = 10,
    outer_tol: float = 1e-4,
    restart: bool = True,
) -> PathState:
    """Runs one lane for at most ``num_steps`` loop iterations (all of its path when ``None``).

    Each iteration either takes one FISTA step (paper Algorithm 1) on the current subproblem or,
    once that subproblem is KKT-certified (``kkt ≤ tol·λ``) or has used ``max_iter`` steps,
    records it and evaluates the start of the next one: from the ℓ1 solve at ``λ_a`` to MM
    round 1 (weights ``β = R'_λ(|w|)/λ``, paper eq. 13, Algorithm 2), from round ``r`` to
    ``r + 1`` until ``‖Δw‖∞ < outer_tol`` or ``r = num_outer``, then to the ℓ1 solve at
    ``λ_{a+1}`` warm-started at the ℓ1 solution of ``λ_a``. Both kinds of iteration cost one
    forward pass over the pairs (margins of the new point) and one two-column adjoint pass
    (gradients at the new point and at the next extrapolated point, whose margins are a linear
    combination of known ones). Under ``vmap`` each lane walks its own sequence, so the batch
    costs its largest per-lane number of iterations. ``num_steps`` is traced (chunks of any size
    share one compile); the keywords are static.
    """
    dtype = pairs.features.dtype
    lams = jnp.asarray(lams, dtype)
    num_lams = lams.shape[0]
    step = 1.0 / jnp.asarray(lipschitz, dtype)
    stop_at = jnp.iinfo(jnp.int32).max if num_steps is None else state.steps + jnp.asarray(num_steps, jnp.int32)
    where = lambda c, x, y: jax.tree.map(lambda u, v: jnp.where(c, u, v), x, y)  # noqa: E731

    def record(s: PathState, lam):
        """Books the subproblem that just ended; returns the state and the next subproblem's start."""
        a, certified, is_l1 = s.a, s.kkt <= _target(lam, tol), s.round == 0
        w_l1 = jnp.where(is_l1, s.w, s.w_l1)
        l1_certified = jnp.where(is_l1, certified, s.l1_certified)
        s = s._replace(
            w_l1=w_l1, l1_certified=l1_certified,
            W_l1=s.W_l1.at[a].set(jnp.where(is_l1, s.w, s.W_l1[a])),
            l1_iterations=s.l1_iterations.at[a].set(jnp.where(is_l1, s.k, s.l1_iterations[a])),
            mm_iterations=s.mm_iterations.at[a].add(jnp.where(s.round > 0, s.k, 0)),
        )
        mm_stopped = (s.round > 0) & (jnp.max(jnp.abs(s.w - s.w_round)) < outer_tol)
        lam_done = (s.round >= 0) & (mm_stopped | (s.round >= num_outer))
        s = where(lam_done, s._replace(
            W=s.W.at[a].set(s.w), out_kkt=s.out_kkt.at[a].set(s.kkt),
            outer_iterations=s.outer_iterations.at[a].set(s.round),
            converged=s.converged.at[a].set(l1_certified & certified),
            mm_converged=s.mm_converged.at[a].set(mm_stopped),
        ), s)
        # next: the next λ's ℓ1 solve from w_l1, or the next round at this λ from w (round -1 → 0: the start)
        a_next = jnp.where(lam_done, a + 1, a)
        next_l1 = lam_done | (s.round < 0)
        weights = jnp.where(next_l1, jnp.ones_like(s.w), penalty.weight(jnp.abs(s.w), lam))
        w0 = jnp.where(lam_done, w_l1, s.w)
        return s._replace(a=a_next, round=jnp.where(next_l1, 0, s.round + 1), weights=weights, w_round=w0), w0

    def body(s: PathState) -> PathState:
        lam = lams[jnp.minimum(s.a, num_lams - 1)]
        # a FISTA step from (v, ∇L̄(v)) ...
        w_step = P.soft_threshold(s.v - step * s.g_v, step * lam * s.weights)
        beta_step, t_step = momentum(s.t, s.v, w_step, s.w, restart)
        # ... or the start of the next subproblem
        booked, w_start = record(s, lam)
        s = where(s.solved, booked, s)
        x = jnp.where(s.solved, w_start, w_step)
        beta = jnp.where(s.solved, jnp.zeros_like(beta_step), beta_step)
        m_x = pair_margins(x, pairs)
        m_v = m_x + beta * (m_x - s.m_w)  # margins are linear in w
        g_x, g_v = jax.vmap(grad_at_margins, in_axes=(0, None))(jnp.stack([m_x, m_v]), pairs)
        lam = lams[jnp.minimum(s.a, num_lams - 1)]
        kkt = kkt_residual(x, g_x, lam * s.weights)
        k = jnp.where(s.solved, 0, s.k + 1)
        return s._replace(
            w=x, v=x + beta * (x - s.w), t=jnp.where(s.solved, jnp.ones_like(t_step), t_step), g_w=g_x, g_v=g_v,
            m_w=m_x, kkt=kkt, k=k, solved=(kkt <= _target(lam, tol)) | (k >= max_iter), steps=s.steps + 1,
        )

    return jax.lax.while_loop(lambda s: ~s.finished & (s.steps < stop_at), body, state)


def path_result(state: PathState, pairs: PairOperator, lams: jax.Array, penalty) -> tuple[jax.Array, jax.Array, PathInfo]:
    """``(W [A, D], W_l1 [A, D], PathInfo)`` of a finished lane; objectives are evaluated here."""
    lams = jnp.asarray(lams, pairs.features.dtype)
    objectives = jax.vmap(lambda w, lam: objective(w, pairs, lam, penalty))(state.W, lams)
    l1_objectives = jax.vmap(lambda w, lam: weighted_l1_objective(w, pairs, lam))(state.W_l1, lams)
    info = PathInfo(
        objective=objectives, l1_objective=l1_objectives, kkt=state.out_kkt, l1_iterations=state.l1_iterations,
        mm_iterations=state.mm_iterations, outer_iterations=state.outer_iterations, converged=state.converged,
        mm_converged=state.mm_converged,
    )
    return state.W, state.W_l1, info


def newton_path(
    pairs: PairOperator,
    lams: jax.Array,
    penalty,
    *,
    tol: float = 1e-6,
    max_iter: int = 100,
    num_outer: int = 10,
    outer_tol: float = 1e-4,
    qp_max_iter: Optional[int] = None,
    buffer: int = HESSIAN_BUFFER,
) -> tuple[jax.Array, jax.Array, PathInfo]:
    """One lane of the path protocol (``solve_path``'s) with every subproblem solved by proximal Newton.

    A ``lax.scan`` over ``λ_a``: the ℓ1 solve warm-started at ``λ_{a-1}``'s ℓ1 solution, then MM
    rounds (weights ``β = R'_λ(|w|)/λ``, paper eq. 13) from it until ``‖Δw‖∞ < outer_tol`` or
    ``num_outer`` rounds. Margins, gradient and generalised Hessian are carried between
    subproblems, so a subproblem whose start is already certified costs no pass over the pairs.
    ``max_iter`` counts Newton steps per subproblem; ``l1_iterations`` and ``mm_iterations`` of the
    ``PathInfo`` count Newton steps. Meant for float64 (tolerances ~1e-6·λ): in float32 the
    quadratic model of an ill-conditioned support is solved too coarsely and FISTA is the safer choice.

    Args:
      pairs: one training set (``P`` pairs, ``D`` features).
      lams: ``[A]`` descending λ ≥ 0.
      penalty: a ``PathPenalty`` (or any penalty NamedTuple).

    Returns:
      ``(W [A, D], W_l1 [A, D], PathInfo with leaves [A])``.
    """
    dtype = pairs.features.dtype
    lams = jnp.asarray(lams, dtype)
    num_features = pairs.features.shape[-1]
    solve = functools.partial(solve_from, pairs=pairs, max_iter=max_iter, qp_max_iter=qp_max_iter, buffer=buffer)
    i0 = jnp.zeros((), jnp.int32)

    def per_lambda(start, lam):
        target = _target(lam, tol)
        point_l1, info_l1 = solve(start, thresholds=lam * jnp.ones(num_features, dtype), target=target)

        def mm_round(c):
            point, rounds, _, _, _, steps = c
            weights = penalty.weight(jnp.abs(point.w), lam)
            new, info = solve(point, thresholds=lam * weights, target=target)
            moved = jnp.max(jnp.abs(new.w - point.w))
            return new, rounds + 1, moved < outer_tol, info.kkt, info.converged, steps + info.iterations

        init = (point_l1, i0, jnp.zeros((), bool), info_l1.kkt, info_l1.converged, i0)
        point, rounds, stopped, kkt, certified, mm_steps = jax.lax.while_loop(
            lambda c: ~c[2] & (c[1] < num_outer), mm_round, init)
        out = (point.w, point_l1.w, kkt, info_l1.iterations, mm_steps, rounds, info_l1.converged & certified,
               stopped)
        return point_l1, out

    start = newton_point(jnp.zeros(num_features, dtype), pairs)
    _, (W, W_l1, kkt, l1_it, mm_it, rounds, converged, mm_converged) = jax.lax.scan(per_lambda, start, lams)
    objectives = jax.vmap(lambda w, lam: objective(w, pairs, lam, penalty))(W, lams)
    l1_objectives = jax.vmap(lambda w, lam: weighted_l1_objective(w, pairs, lam))(W_l1, lams)
    info = PathInfo(objective=objectives, l1_objective=l1_objectives, kkt=kkt, l1_iterations=l1_it,
                    mm_iterations=mm_it, outer_iterations=rounds, converged=converged, mm_converged=mm_converged)
    return W, W_l1, info


def _check_solver(solver: str) -> None:
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS} ('fista': paper Algorithm 1, 'newton': proximal "
                         f"Newton); got {solver!r}.")


def solve_path(
    pairs: PairOperator,
    lams: jax.Array,
    penalty,
    *,
    lipschitz: Optional[jax.Array] = None,
    solver: str = "fista",
    **kwargs,
) -> tuple[jax.Array, jax.Array, PathInfo]:
    """One penalty along a descending λ grid; ``vmap`` over penalties and folds.

    At each ``λ_a`` the ℓ1 problem (paper eq. 7) is solved warm-started at ``λ_{a-1}``'s ℓ1
    solution, then the penalty's reweighted-ℓ1 MM (paper eq. 13) starts from it (our initialisation), so
    every λ is solved from the point a one-by-one solver would use.

    Args:
      pairs: ``make_pairs`` of one training set (rows or pair indices).
      lams: ``[A]`` descending λ ≥ 0.
      penalty: a ``PathPenalty`` (or any penalty NamedTuple).
      lipschitz: ``L_lip`` of ∇L̄ (computed when omitted; FISTA only).
      solver: ``"fista"`` (paper Algorithm 1, ``advance_path``) or ``"newton"`` (``newton_path``).
      **kwargs: ``tol``, ``max_iter`` (stop rule KKT ≤ tol·λ and the solver's step budget per
        subproblem), ``num_outer``, ``outer_tol`` (MM rounds and stop rule; ours, the paper gives
        none); FISTA also ``restart``, Newton ``qp_max_iter``, ``buffer``.

    Returns:
      ``(W [A, D], W_l1 [A, D], PathInfo)``: the penalty's MM fixed point and the ℓ1 solution per λ.
    """
    _check_solver(solver)
    if solver == "newton":
        P.check_lambda(lams)
        return newton_path(pairs, lams, penalty, **kwargs)
    lip = lipschitz_constant(jax.random.key(POWER_START_SEED), pairs) if lipschitz is None else lipschitz
    state = advance_path(init_path(pairs, lams), pairs, lams, penalty, lip, **kwargs)
    return path_result(state, pairs, lams, penalty)


def _over_lanes(fn, pair_axes, penalty_axes):
    """``fn`` vmapped over penalties (inner) and folds (outer)."""
    return jax.vmap(jax.vmap(fn, in_axes=penalty_axes), in_axes=pair_axes)


def _newton_folds(pairs: PairOperator, lams: jax.Array, penalties: PathPenalty, **kwargs):
    """``newton_path`` over folds (outer) and penalties (inner), one lane after another (``lax.map``)."""
    def fold(args):
        p, l = args
        return jax.lax.map(lambda pen: newton_path(p, l, pen, **kwargs), penalties)
    return jax.lax.map(fold, (pairs, lams))


def solve_paths(pairs: PairOperator, lams: jax.Array, penalties: PathPenalty, lipschitz: Optional[jax.Array] = None,
                *, solver: str = "fista", **kwargs):
    """``solve_path`` over folds (leading axis ``F`` of ``pairs``, ``lams``, ``lipschitz``) and
    penalties (leading axis ``H`` of ``penalties``): vmapped for FISTA, one lane after another
    (``lax.map``) for Newton, which ignores ``lipschitz``.

    Returns:
      ``(W [F, H, A, D], W_l1 [F, H, A, D], PathInfo with leaves [F, H, A])``. Jit the caller;
      ``solver`` and ``kwargs`` (tol, max_iter, num_outer, outer_tol) are static.
      ``solve_paths_in_chunks`` runs the same program with progress output.
    """
    _check_solver(solver)
    if solver == "newton":
        return _newton_folds(pairs, lams, penalties, **kwargs)
    if lipschitz is None:
        raise ValueError("FISTA needs lipschitz [F]: jax.vmap(lipschitz_constant, in_axes=(None, 0))(key, pairs).")
    one = lambda p, l, pen, lip: solve_path(p, l, pen, lipschitz=lip, **kwargs)  # noqa: E731
    return _over_lanes(one, (0, 0, None, 0), (None, None, 0, None))(pairs, lams, penalties, lipschitz)


class FistaConfig(NamedTuple):
    """The static settings of a FISTA path study (hashable: jit's cache key); ``advance_path``'s keywords."""

    tol: float = 1e-6
    max_iter: int = 5000
    num_outer: int = 10
    outer_tol: float = 1e-4
    restart: bool = True


def _path_init(config: FistaConfig, key, hparams, penalties, fold):
    del config, key, hparams  # the solve is deterministic
    pairs, lams, _ = fold
    return jax.vmap(lambda pen: init_path(pairs, lams), in_axes=(0,))(penalties)


def _path_advance(config: FistaConfig, state, num_steps, penalties, fold):
    pairs, lams, lipschitz = fold
    return jax.vmap(lambda s, pen: advance_path(s, pairs, lams, pen, lipschitz, num_steps, **config._asdict()))(
        state, penalties)


def _path_result(config: FistaConfig, state, penalties, fold):
    del config
    pairs, lams, _ = fold
    return jax.vmap(lambda s, pen: path_result(s, pairs, lams, pen))(state, penalties)


def _path_finished(config: FistaConfig, state, penalties, fold):
    del config, penalties, fold
    return jnp.all(state.finished)


def path_study(**kwargs):
    """A fold's FISTA paths of ``H`` penalties as one lane of the lane runner (``jaxrank.lanes``).

    ``lane_data`` is the fold's ``(pairs, lams [A], lipschitz [])``, ``data`` the penalties (leaves
    ``[H]``), a chunk a number of ``advance_path`` iterations; the lane is finished once every
    penalty's path is. ``kwargs``: ``advance_path``'s (``tol``, ``max_iter``, ``num_outer``,
    ``outer_tol``, ``restart``).
    """
    return lanes.bound_study(FistaConfig(**kwargs), _path_init, _path_advance, _path_result, _path_finished)


def max_path_steps(num_lams: int, *, max_iter: int = 5000, num_outer: int = 10) -> int:
    """The most ``advance_path`` iterations a lane can take: each of its ``A·(num_outer + 1)``
    subproblems starts with one iteration and takes at most ``max_iter`` FISTA steps; one more books the last."""
    return num_lams * (num_outer + 1) * (max_iter + 1) + 1


def solve_paths_in_chunks(
    pairs: PairOperator,
    lams: jax.Array,
    penalties: PathPenalty,
    lipschitz: jax.Array,
    *,
    chunk_steps: int = 2000,
    fold_batch: Optional[int] = None,
    log: Optional[Callable[[str], None]] = functools.partial(print, flush=True),
    solver: str = "fista",
    mesh=None,
    **kwargs,
):
    """``solve_paths`` on the lane runner (``jaxrank.lanes.run_lanes``): a fold is a lane, its ``H``
    penalties' paths advance together by chunks of ``chunk_steps`` iterations until all are finished
    (``path_study``; small λ take the most steps, so the runner's budget is ``max_path_steps``).

    Folds run ``fold_batch`` at a time (all of them when ``None``), one ``run_lanes`` call per batch
    of one compiled program, so the last, slowest folds do not pay for finished ones. A step reads
    every pair row of the batch twice, so on CPU a batch whose pair rows fit in the last-level cache
    is fastest: with a 32 MB L3, one MQ2008 fold in float64 (19 MB, ``fold_batch=1``) steps in 1.6 ms,
    five folds at once in 14.6 ms. On a GPU keep ``None``. The numbers equal ``solve_paths``'. With a
    ``log``, the runner prints its progress between calls and ``log`` gets one line per batch
    (λ values, lanes and folds finished); ``log=None`` is silent. Returns what ``solve_paths`` returns.

    ``solver="newton"`` runs one jitted program per fold (its penalty lanes one after another,
    one compile for all folds), logging after each fold; ``chunk_steps`` and ``fold_batch`` are
    FISTA's and ignored, and so is ``lipschitz`` (may be ``None``).
    """
    _check_solver(solver)
    if solver == "newton":
        return _newton_by_fold(pairs, lams, penalties, log, **kwargs)
    if fold_batch is not None and fold_batch < 1:
        raise ValueError(f"fold_batch must be None (all folds) or >= 1; got {fold_batch}.")
    if chunk_steps < 1:
        raise ValueError(f"chunk_steps must be >= 1; got {chunk_steps}.")
    study = path_study(**kwargs)
    config = study.init.static
    num_folds, num_lams = lams.shape
    num_pens = jax.tree.leaves(penalties)[0].shape[0]
    budget = max_path_steps(num_lams, max_iter=config.max_iter, num_outer=config.num_outer)
    chunks = np.full(-(-budget // chunk_steps), chunk_steps, np.int32)
    keys = jax.random.split(jax.random.key(0), num_folds)  # unused: the lanes draw nothing
    fold_batch = num_folds if fold_batch is None else fold_batch
    start, parts = time.perf_counter(), []
    for lo in range(0, num_folds, fold_batch):
        batch = np.arange(lo, min(lo + fold_batch, num_folds))
        fold = jax.tree.map(lambda x: np.asarray(x)[batch], (pairs, lams, lipschitz))
        parts.append(lanes.run_lanes(study, keys[batch], data=penalties, lane_data=fold, chunks=chunks, mesh=mesh,
                                     label=None if log is None else "sparse path", progress=np.cumsum(chunks)))
        if log is not None:
            done = batch[-1] + 1
            log(f"[sparse path] {time.perf_counter() - start:.1f} s: {done * num_pens * num_lams}/"
                f"{num_folds * num_pens * num_lams} (fold, penalty, λ) solved, "
                f"{done * num_pens}/{num_folds * num_pens} lanes and {done}/{num_folds} folds finished")
    return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)


@functools.partial(jax.jit, static_argnames=("tol", "max_iter", "num_outer", "outer_tol", "qp_max_iter", "buffer"))
def _newton_fold(pairs, lams, penalties, **kwargs):
    return _newton_folds(jax.tree.map(lambda x: x[None], pairs), lams[None], penalties, **kwargs)


def _newton_by_fold(pairs, lams, penalties, log, **kwargs):
    solve = functools.partial(_newton_fold, **kwargs)
    num_folds = lams.shape[0]
    start, parts = time.perf_counter(), []
    for f in range(num_folds):
        part = solve(jax.tree.map(lambda x: x[f], pairs), lams[f], penalties)
        parts.append(jax.block_until_ready(part))
        if log is not None:
            info = part[2]
            log(f"[sparse path] fold {f + 1}/{num_folds} in {time.perf_counter() - start:.1f} s: "
                f"{int(np.asarray(info.converged).sum())}/{info.converged.size} (penalty, λ) certified, "
                f"{int(np.asarray(info.l1_iterations).sum() + np.asarray(info.mm_iterations).sum()):,} Newton steps")
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


def informative_features(queries: Queries) -> np.ndarray:
    """``[D]`` bool: feature j is not constant over the training documents.

    A constant feature (in particular one that is identically 0, as paper §VI-A excludes)
    has zero pair differences, can never receive a weight, and is left out of the
    sparsity ratio's denominator.
    """
    x = as_ragged(queries).features
    return x.max(axis=0) > x.min(axis=0)


def sparsity_ratio(w, informative) -> jax.Array:
    """``SR = #{j informative: w_j ≠ 0} / #{informative j}`` (Laporte et al. 2014, §V-B); ``w`` is ``[..., D]``."""
    informative = jnp.asarray(informative, bool)
    nonzero = (jnp.asarray(w) != 0) & informative
    return jnp.sum(nonzero, axis=-1) / jnp.maximum(jnp.sum(informative, axis=-1), 1)


__all__ = [
    "KINDS", "SOLVERS", "PathInfo", "PathPenalty", "PathState", "advance_path", "informative_features", "init_path",
    "lambda_grid", "lambda_max", "max_path_steps", "newton_path", "path_penalty", "path_result", "path_study",
    "solve_path", "solve_paths", "solve_paths_in_chunks", "sparsity_ratio", "stack_penalties",
]
