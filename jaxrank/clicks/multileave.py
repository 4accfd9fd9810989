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

from jaxrank.clicks.lists import (
    DocumentRankings,
    check_list_options,
    check_tau_range,
    click_difference_outcome,
    probabilistic_list,
    round_pickers,
    score_ranks,
    softmax_weights,
    team_credit,
    team_draft_list,
)
from jaxrank.types import Array, PRNGKey


def _check_args(scores, where, list_size, tau=None) -> None:
    """Python-level validation, before anything is traced."""
    check_list_options(list_size, tau)
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
    return _team_draft_ranks(key, _all_ranks(scores, where), where, list_size)


def team_draft_multileave_from_ranks(
    key: PRNGKey, ranks: Array, where: Array, *, list_size: int = 10
) -> tuple[Array, Array, Array]:
    """``team_draft_multileave`` with precomputed ``score_ranks`` ``[n, N]`` i32 (1-based) of each ranker."""
    _check_args(ranks, where, list_size)
    return _team_draft_ranks(key, jnp.asarray(ranks, jnp.int32), jnp.asarray(where, bool), list_size)


def _team_draft_ranks(key, ranks, where, list_size):
    order_u, _ = _uniforms(key, ranks.shape[0], list_size)
    return team_draft_list(round_pickers(order_u, list_size), DocumentRankings(ranks, where), list_size)


def team_draft_multileave_credit(team: Array, clicks: Array, shown: Array, num_rankers: int) -> Array:
    """``[n]`` f32 clicks on each ranker's team (``num_rankers = n``, static); sums to #shown clicks."""
    if isinstance(num_rankers, bool) or not isinstance(num_rankers, (int, np.integer)) or num_rankers < 2:
        raise ValueError(f"num_rankers must be an int >= 2 (static); got {num_rankers!r}.")
    return team_credit(team, clicks, shown, num_rankers)


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
    return _probabilistic_ranks(key, _all_ranks(scores, where), where, list_size, tau)


def probabilistic_multileave_from_ranks(
    key: PRNGKey, ranks: Array, where: Array, *, list_size: int = 10, tau=3.0
) -> tuple[Array, Array, Array]:
    """``probabilistic_multileave`` with precomputed ``score_ranks`` ``[n, N]`` i32 (1-based) of each ranker."""
    _check_args(ranks, where, list_size, tau)
    return _probabilistic_ranks(key, ranks, jnp.asarray(where, bool), list_size, tau)


def _probabilistic_ranks(key, ranks, where, list_size, tau):
    check_tau_range(tau, list_size)
    order_u, pick_u = _uniforms(key, ranks.shape[0], list_size)
    rankings = DocumentRankings(ranks, where, softmax_weights(ranks, where, tau))
    return probabilistic_list(round_pickers(order_u, list_size), pick_u, rankings, list_size)


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
    estimates this by sampling). Per pair, ``click_difference_outcome``'s DP over ``c_i − c_j``:
    a click moves it +1 w.p. ``a_i``, −1 w.p. ``a_j``. Antisymmetric, in ``[-1, 1]``; for
    ``n = 2`` entry ``[1, 0]`` equals ``probabilistic_outcome(assignment[:, 1], ...)``.
    """
    assignment = jnp.clip(jnp.asarray(assignment, jnp.float32), 0.0, 1.0)
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    pairs = jax.vmap(jax.vmap(click_difference_outcome, in_axes=(None, 1, None)), in_axes=(1, None, None))
    prefs = pairs(assignment, assignment, clicked)
    # Averaging with the transpose makes the matrix exactly antisymmetric (and zeroes the diagonal,
    # whose DP is meaningless) instead of antisymmetric up to f32 rounding.
    return 0.5 * (prefs - prefs.T)


def multileave_preferences(credit: Array) -> Array:
    """``[n, n]`` f32 ``sign(credit_i − credit_j)``: +1 where row ``i`` beats column ``j``, 0 a tie."""
    credit = jnp.asarray(credit, jnp.float32)
    return jnp.sign(credit[:, None] - credit[None, :])
