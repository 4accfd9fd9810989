"""Multileaved comparison of ``n >= 2`` rankers on one query: team-draft and probabilistic.

* Team Draft Multileaving (TDM): Schuth, Sietsma, Whiteson, Lefortier, de Rijke, "Multileaved
  comparisons for fast online evaluation", CIKM 2014, Algorithm 1. The rankers pick in rounds;
  each round is a fresh uniform permutation of the ``n`` rankers, and a picker appends its
  highest-ranked document not yet shown, which joins its team (as in the authors'
  ``TeamDraftMultileave.make_multileaving``). This has the same law as the paper's "a ranker whose
  team is smallest picks, uniformly among ties": within a round the not-yet-picked rankers are
  exactly the smallest teams. Lerot's "common prefix to no team" variant is not implemented
  (not in the paper; as for ``team_draft_interleave``). Credit: clicks per team.
* Probabilistic Multileave (PM): Schuth, Bruintjes, Büttner, van Doorn, Groenland, Oosterhuis,
  Tran, Veeling, van der Velde, Wechsler, Woudenberg, de Rijke, "Probabilistic multileave for
  online retrieval evaluation", SIGIR 2015, Algorithms 1 (list) and 2 (inference). Each ranker is
  a softmax ``P_j(d) ∝ 1 / rank_j(d)^τ`` over the documents not yet shown; the rankers pick in
  rounds in random order as in TDM and each samples a document from its softmax. For inference
  the paper treats position ``l``'s ranker as an independent uniform choice, so the posterior is
  ``P(a_l = j | L) = P_j(l_l|·) / Σ_k P_k(l_l|·)`` (for ``n = 2``, ``probabilistic_interleave``'s
  ``prob_second``). The paper (and the authors' ``preferences_of_list``) then *samples*
  assignments from these posteriors to estimate the preference matrix; we marginalise exactly
  instead: ``probabilistic_multileave_credit`` is the expected number of clicks per ranker and
  ``probabilistic_multileave_preferences`` is ``P(c_i > c_j) − P(c_i < c_j)`` by a DP over the
  click difference of every pair (what the sampled estimate converges to, without its noise).

Conventions follow ``jaxrank.clicks.interleave``: ONE query, ``scores [n, N]`` (ranker ``j``'s
scores in row ``j``) and ``where [N]`` marking real documents; ``jax.vmap`` for a batch. A
ranking sorts real documents by descending score, ties by index. ``list_size = L`` is static; the
first ``min(L, #real)`` positions are shown, the rest have ``shown = False`` and ``docs = -1``.
Rankers are numbered ``0..n-1``; a preference matrix ``P[i, j] > 0`` means ranker ``i`` beat
``j``. The ``*_from_ranks`` variants take ``score_ranks`` ``[n, N]`` computed once per (query,
ranker).

Random draws (one key per list): ``key_order, key_pick = jax.random.split(key)``; the round
orders come from ``uniform(key_order, (ceil(L / n), n))`` (round ``r`` ranks the rankers by
ascending uniform, ties by index) and PM's document draws from ``uniform(key_pick, (L,))``
(inverse CDF over documents in index order).
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks.interleave import _LOG_WEIGHT_FLOOR, _check_list_options, _check_tau_range, _sample, score_ranks
from jaxrank.types import Array, PRNGKey


def _check_args(scores, where, list_size, tau=None) -> None:
    """Python-level validation, before anything is traced."""
    _check_list_options(list_size, tau)
    shape, where_shape = jnp.shape(scores), jnp.shape(where)
    if len(shape) != 2 or len(where_shape) != 1 or shape[1] != where_shape[0]:
        raise ValueError(
            f"scores must be [n, N] and where [N] (one query; vmap for a batch); got {shape} and {where_shape}."
        )
    if shape[0] < 2:
        raise ValueError(f"multileaving needs n >= 2 rankers (rows of scores); got {shape[0]}.")


def _uniforms(key: PRNGKey, num_rankers: int, list_size: int) -> tuple[Array, Array]:
    """``(order_u [R, n], pick_u [L])`` f32 with ``R = ceil(L / n)`` rounds: every draw of one list."""
    key_order, key_pick = jax.random.split(key)
    num_rounds = -(-list_size // num_rankers)
    return jax.random.uniform(key_order, (num_rounds, num_rankers)), jax.random.uniform(key_pick, (list_size,))


def _pickers(order_u: Array, list_size: int) -> Array:
    """``[L]`` i32 ranker picking at each position: round ``r`` in ascending ``order_u[r]`` order."""
    return jnp.argsort(order_u, axis=-1, stable=True).reshape(-1)[:list_size].astype(jnp.int32)


def _all_ranks(scores: Array, where: Array) -> Array:
    return jax.vmap(score_ranks, in_axes=(0, None))(jnp.asarray(scores), where)


# ------------------------------------------------------------------------------------------
# Team Draft Multileaving
# ------------------------------------------------------------------------------------------


def team_draft_multileave(
    key: PRNGKey, scores: Array, where: Array, *, list_size: int = 10
) -> tuple[Array, Array, Array]:
    """Samples a team-draft multileaved list of one query (Schuth et al., CIKM 2014, Algorithm 1).

    Args:
      key: PRNG key.
      scores: ``[n, N]`` scores of the ``n >= 2`` rankers (higher ranks first).
      where: ``[N]`` bool, True for the query's real documents.
      list_size: ``L`` (static), the list length; ``min(L, #real)`` positions are shown.

    Returns:
      ``(docs, shown, team)``: ``docs [L]`` i32 (-1 where not shown), ``shown [L]`` bool and
      ``team [L]`` i32, the ranker ``0..n-1`` that contributed the position (-1 where not shown).
    """
    _check_args(scores, where, list_size)
    where = jnp.asarray(where, bool)
    return _team_draft_ranks(_uniforms(key, jnp.shape(scores)[0], list_size)[0], _all_ranks(scores, where), where,
                             list_size)


def team_draft_multileave_from_ranks(
    key: PRNGKey, ranks: Array, where: Array, *, list_size: int = 10
) -> tuple[Array, Array, Array]:
    """``team_draft_multileave`` with precomputed ``score_ranks`` ``[n, N]`` i32 (1-based) of each ranker."""
    _check_args(ranks, where, list_size)
    return _team_draft_ranks(_uniforms(key, jnp.shape(ranks)[0], list_size)[0], jnp.asarray(ranks, jnp.int32),
                             jnp.asarray(where, bool), list_size)


def _team_draft_ranks(order_u, ranks, where, list_size):
    unranked = where.shape[-1] + 1

    def position(taken, picker):
        remaining = where & ~taken
        shown = jnp.any(remaining)
        doc = jnp.argmin(jnp.where(remaining, ranks[picker], unranked)).astype(jnp.int32)
        taken = taken.at[doc].set(taken[doc] | shown)
        return taken, (jnp.where(shown, doc, -1), shown, jnp.where(shown, picker, -1))

    _, (docs, shown, team) = jax.lax.scan(position, jnp.zeros(where.shape, bool), _pickers(order_u, list_size))
    return docs, shown, team.astype(jnp.int32)


def team_draft_multileave_credit(team: Array, clicks: Array, shown: Array, num_rankers: int) -> Array:
    """``[n]`` f32 clicks on each ranker's team (``num_rankers = n``, static); sums to #shown clicks."""
    if isinstance(num_rankers, bool) or not isinstance(num_rankers, (int, np.integer)) or num_rankers < 2:
        raise ValueError(f"num_rankers must be an int >= 2 (static); got {num_rankers!r}.")
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    on_team = jnp.asarray(team)[:, None] == jnp.arange(num_rankers)[None, :]  # [L, n]
    return jnp.sum(on_team & clicked[:, None], axis=0).astype(jnp.float32)


# ------------------------------------------------------------------------------------------
# Probabilistic Multileave
# ------------------------------------------------------------------------------------------


def probabilistic_multileave(
    key: PRNGKey, scores: Array, where: Array, *, list_size: int = 10, tau=3.0
) -> tuple[Array, Array, Array]:
    """Samples a probabilistic multileaved list of one query (Schuth et al., SIGIR 2015, Algorithm 1).

    Args:
      key: PRNG key.
      scores: ``[n, N]`` scores of the ``n >= 2`` rankers.
      where: ``[N]`` bool, True for real documents.
      list_size: ``L`` (static).
      tau: softmax exponent ``τ > 0`` (3 in the paper); a traced f32 is fine under ``jit``. A
        concrete ``τ`` must satisfy ``τ ln L <= 40`` (f32 weights).

    Returns:
      ``(docs, shown, assignment)``: ``docs [L]`` i32 (-1 where not shown), ``shown [L]`` bool and
      ``assignment [L, n]`` f32, the posterior ``P_j(l_l|·) / Σ_k P_k(l_l|·)`` that position ``l``
      came from ranker ``j`` (rows sum to 1; ``1/n`` where not shown).
    """
    _check_args(scores, where, list_size, tau)
    where = jnp.asarray(where, bool)
    return _probabilistic_ranks(_uniforms(key, jnp.shape(scores)[0], list_size), _all_ranks(scores, where), where,
                                list_size, tau)


def probabilistic_multileave_from_ranks(
    key: PRNGKey, ranks: Array, where: Array, *, list_size: int = 10, tau=3.0
) -> tuple[Array, Array, Array]:
    """``probabilistic_multileave`` with precomputed ``score_ranks`` ``[n, N]`` i32 (1-based) of each ranker."""
    _check_args(ranks, where, list_size, tau)
    return _probabilistic_ranks(_uniforms(key, jnp.shape(ranks)[0], list_size), ranks, jnp.asarray(where, bool),
                                list_size, tau)


def _probabilistic_ranks(uniforms, ranks, where, list_size, tau):
    _check_tau_range(tau, list_size)
    tau = jnp.asarray(tau, jnp.float32)
    order_u, pick_u = uniforms
    num_rankers = ranks.shape[0]
    # Unnormalised weights r^-τ [n, N], floored so every real document stays drawable (as interleave.py).
    log_w = -tau * jnp.log(jnp.asarray(ranks, jnp.float32))
    weights = jnp.where(where, jnp.exp(jnp.maximum(log_w, -_LOG_WEIGHT_FLOOR)), 0.0)

    def position(taken, x):
        picker, u = x
        remaining = jnp.where(taken, 0.0, weights)  # [n, N]
        doc = _sample(u, remaining[picker])
        shown = jnp.any(where & ~taken)
        # P_j(doc | remaining) = w_j(doc) / Z_j; every Z_j > 0 while a real document remains.
        total = jnp.sum(remaining, axis=-1)
        prob = weights[:, doc] / jnp.where(total > 0.0, total, 1.0)
        norm = jnp.sum(prob)
        posterior = jnp.where(shown & (norm > 0.0), prob / jnp.where(norm > 0.0, norm, 1.0), 1.0 / num_rankers)
        taken = taken.at[doc].set(taken[doc] | shown)
        return taken, (jnp.where(shown, doc, -1), shown, posterior)

    xs = (_pickers(order_u, list_size), pick_u)
    _, (docs, shown, assignment) = jax.lax.scan(position, ~where, xs)
    return docs, shown, assignment


def probabilistic_multileave_credit(assignment: Array, clicks: Array, shown: Array) -> Array:
    """``[n]`` f32 expected clicks credited to each ranker: ``Σ_l click_l · assignment[l, j]``.

    Exact marginalisation over the independent per-position assignments (Schuth et al. 2015,
    Algorithm 2 samples them); sums to the number of shown clicks.
    """
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    return jnp.sum(jnp.where(clicked[:, None], jnp.asarray(assignment, jnp.float32), 0.0), axis=0)


def probabilistic_multileave_preferences(assignment: Array, clicks: Array, shown: Array) -> Array:
    """``[n, n]`` f32 expected outcome ``P(c_i > c_j) − P(c_i < c_j)`` of every ranker pair.

    ``c_j`` counts the clicked shown positions assigned to ranker ``j`` when each position draws
    its ranker independently from ``assignment[l]`` (Schuth et al. 2015, Algorithm 2, which
    estimates this by sampling). Per pair, a DP keeps the distribution of ``c_i − c_j`` in
    ``[-L, L]``: a click moves it +1 w.p. ``a_i``, −1 w.p. ``a_j``. Antisymmetric, in ``[-1, 1]``;
    for ``n = 2`` entry ``[1, 0]`` equals ``probabilistic_outcome(assignment[:, 1], ...)``.
    """
    assignment = jnp.clip(jnp.asarray(assignment, jnp.float32), 0.0, 1.0)
    num_positions, num_rankers = assignment.shape
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    # Index m holds P(c_i - c_j = m - L); L shifts from the centre never reach the ends, so roll cannot wrap.
    start = jnp.zeros((num_rankers, num_rankers, 2 * num_positions + 1), jnp.float32)
    start = start.at[:, :, num_positions].set(1.0)

    def position(dist, x):
        a, click = x
        up, down = a[:, None, None], a[None, :, None]
        moved = up * jnp.roll(dist, 1, axis=-1) + down * jnp.roll(dist, -1, axis=-1) + (1.0 - up - down) * dist
        return jnp.where(click, moved, dist), None

    dist, _ = jax.lax.scan(position, start, (assignment, clicked))
    diff = jnp.arange(-num_positions, num_positions + 1)
    prefs = jnp.sum(jnp.where(diff > 0, dist, 0.0), -1) - jnp.sum(jnp.where(diff < 0, dist, 0.0), -1)
    # Averaging with the transpose makes the matrix exactly antisymmetric (and zeroes the diagonal,
    # whose DP is meaningless) instead of antisymmetric up to f32 rounding.
    return 0.5 * (prefs - prefs.T)


def multileave_preferences(credit: Array) -> Array:
    """``[n, n]`` f32 ``sign(credit_i − credit_j)``: +1 where row ``i`` beats column ``j``, 0 a tie."""
    credit = jnp.asarray(credit, jnp.float32)
    return jnp.sign(credit[:, None] - credit[None, :])
