"""Regularisation paths for sparse RankSVM (Laporte et al., TNNLS 2014, §V; SPEC §3.5–3.7).

One lane solves, for a descending grid ``λ_1 > … > λ_A``,

* the ℓ1 problem (paper eq. 7, Algorithm 1) at each λ, warm-started at the previous λ's ℓ1
  solution (``lax.scan`` over the grid);
* the reweighted-ℓ1 MM (paper eq. 13, Algorithm 2) of the lane's penalty, started at that
  λ's ℓ1 solution (SPEC §3.6 initialisation), so every λ is solved from the same point as a
  one-by-one solver would use and the path only speeds the ℓ1 solves up.

Penalties of different kinds share one compiled program through ``PathPenalty``, whose
``kind`` and hyperparameters are arrays: ``solve_path`` is ``vmap``-ed over penalties and
folds (``solve_paths``) with one compile per data shape. Under ``vmap`` every inner
``while_loop`` runs to the slowest lane; converged lanes are frozen (SPEC §3.5, STYLE).
"""

from typing import NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.solvers import penalties as P
from jaxrank.solvers.fista import fista
from jaxrank.solvers.pairwise import PairList, Pairs, lambda_max, lipschitz_constant, make_pair_list
from jaxrank.solvers.reweighted_l1 import objective, reweighted_l1
from jaxrank.types import QueryBatch

KINDS = ("l1", "log", "mcp", "lp", "scad")


class PathPenalty(NamedTuple):
    """Any of the SPEC §3.2 penalties, selected by ``kind`` (an index into ``KINDS``).

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


def path_penalty(penalty: P.Penalty) -> PathPenalty:
    """The ``PathPenalty`` equal to one of ``l1()``, ``log()``, ``mcp()``, ``lp()``, ``scad()``."""
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
        **{k: jnp.asarray(v, jnp.float32) for k, v in fields.items() if k not in ("kind", "lambda_inside")},
    )


def stack_penalties(penalties: Sequence[P.Penalty], dtype=jnp.float32) -> PathPenalty:
    """``H`` penalties as one ``PathPenalty`` with leaves ``[H]`` (vmap axis 0)."""
    lanes = [path_penalty(p) for p in penalties]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *lanes)
    return stacked._replace(**{k: getattr(stacked, k).astype(dtype) for k in ("eps", "p", "p_eps", "gamma", "a")})


def lambda_grid(lam_max, *, num: int = 17, decades: float = 4.0) -> jax.Array:
    """``λ_max · 10^{-a}``, ``a = 0, decades/(num-1), …, decades`` (SPEC §3.7: 17 values over 4 decades).

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


def solve_path(
    pairs: Pairs,
    lams: jax.Array,
    penalty,
    *,
    lipschitz: Optional[jax.Array] = None,
    tol: float = 1e-6,
    max_iter: int = 5000,
    num_outer: int = 10,
    outer_tol: float = 1e-4,
) -> tuple[jax.Array, jax.Array, PathInfo]:
    """One penalty along a descending λ grid; ``vmap`` over penalties and folds.

    Args:
      pairs: ``PairList`` (or ``PairData``) of one training set.
      lams: ``[A]`` descending λ ≥ 0.
      penalty: a ``PathPenalty`` (or any penalty NamedTuple).
      lipschitz: ``L_lip`` of ∇L̄ (computed when omitted).
      tol, max_iter: FISTA stop rule (KKT ≤ tol·λ) and budget per solve (static).
      num_outer, outer_tol: MM rounds (static) and outer stop rule (SPEC §3.6).

    Returns:
      ``(W [A, D], W_l1 [A, D], PathInfo)``: the penalty's MM fixed point and the ℓ1 solution per λ.
    """
    P.check_lambda(lams)
    dtype = pairs.features.dtype
    lams = jnp.asarray(lams, dtype)
    lip = lipschitz_constant(pairs) if lipschitz is None else jnp.asarray(lipschitz, dtype)
    zero = jnp.zeros(pairs.features.shape[-1], dtype)

    def step(w_l1_prev, lam):
        w_l1, info_l1 = fista(pairs, lam, w_init=w_l1_prev, lipschitz=lip, tol=tol, max_iter=max_iter)
        w, mm = reweighted_l1(pairs, lam, penalty, w_init=w_l1, lipschitz=lip, num_outer=num_outer,
                              outer_tol=outer_tol, tol=tol, max_iter=max_iter)
        target = tol * jnp.where(lam > 0, lam, 1.0)
        info = PathInfo(
            objective=objective(w, pairs, lam, penalty),
            l1_objective=info_l1.objective,
            kkt=jnp.where(mm.outer_iterations > 0, mm.kkt, info_l1.kkt),
            l1_iterations=info_l1.iterations,
            mm_iterations=jnp.sum(mm.inner_iterations),
            outer_iterations=mm.outer_iterations,
            converged=info_l1.converged & (jnp.where(mm.outer_iterations > 0, mm.kkt, info_l1.kkt) <= target),
            mm_converged=mm.converged,
        )
        return w_l1, (w, w_l1, info)

    _, (w, w_l1, info) = jax.lax.scan(step, zero, lams)
    return w, w_l1, info


def solve_paths(pairs: Pairs, lams: jax.Array, penalties: PathPenalty, lipschitz: jax.Array, **kwargs):
    """``solve_path`` vmapped over folds (leading axis ``F`` of ``pairs``, ``lams``, ``lipschitz``)
    and penalties (leading axis ``H`` of ``penalties``).

    Returns:
      ``(W [F, H, A, D], W_l1 [F, H, A, D], PathInfo with leaves [F, H, A])``. Jit the caller;
      ``kwargs`` (tol, max_iter, num_outer, outer_tol) are static.
    """
    one = lambda p, l, pen, lip: solve_path(p, l, pen, lipschitz=lip, **kwargs)  # noqa: E731
    over_penalties = jax.vmap(one, in_axes=(None, None, 0, None))
    return jax.vmap(over_penalties, in_axes=(0, 0, None, 0))(pairs, lams, penalties, lipschitz)


def stack_pair_lists(batches: Sequence[QueryBatch], dtype=None) -> PairList:
    """Training sets of ``F`` folds as one ``PairList`` with leaves ``[F, ...]`` (pairs padded to the largest)."""
    counts = []
    for b in batches:
        labels, mask = np.asarray(b.labels), np.asarray(b.mask)
        counts.append(int(np.sum(mask[:, :, None] & mask[:, None, :] & (labels[:, :, None] > labels[:, None, :]))))
    lists = [make_pair_list(b, num_pairs=max(counts), dtype=dtype) for b in batches]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *lists)


def informative_features(batch: QueryBatch) -> np.ndarray:
    """``[D]`` bool: feature j is not constant over the real training documents.

    A constant feature (in particular one that is identically 0, as paper §VI-A excludes)
    has zero pair differences, can never receive a weight, and is left out of the
    sparsity ratio's denominator.
    """
    x = np.asarray(batch.features)[np.asarray(batch.mask)]
    return x.max(axis=0) > x.min(axis=0)


def sparsity_ratio(w, informative) -> jax.Array:
    """``SR = #{j informative: w_j ≠ 0} / #{informative j}`` (SPEC §3.7); ``w`` is ``[..., D]``."""
    informative = jnp.asarray(informative, bool)
    nonzero = (jnp.asarray(w) != 0) & informative
    return jnp.sum(nonzero, axis=-1) / jnp.maximum(jnp.sum(informative, axis=-1), 1)


__all__ = [
    "KINDS", "PathInfo", "PathPenalty", "informative_features", "lambda_grid", "lambda_max", "path_penalty",
    "solve_path", "solve_paths", "sparsity_ratio", "stack_pair_lists", "stack_penalties",
]
