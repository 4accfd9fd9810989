"""Interleaved comparison of two rankers on one query: probabilistic, team-draft and balanced.

* Probabilistic interleave: Hofmann, Whiteson, de Rijke, "A probabilistic method for inferring
  preferences from clicks", CIKM 2011, §4 (as in Lerot's ``ProbabilisticInterleave.py``).
  Each ranker is a softmax over its ranks, ``P(d) ∝ 1 / rank(d)^τ``; at every position a fair
  coin picks a ranker, which samples a document from its softmax over the documents not yet
  shown. The outcome marginalises over the coin flips: given the list, position ``n`` came from
  ranker 2 independently with probability ``π_n = P_2(l_n|·) / (P_1(l_n|·) + P_2(l_n|·))``, and
  ``O = P(o > 0) − P(o < 0)`` for the click difference ``o`` is a DP over the clicked positions.
* Team-draft interleave: Radlinski, Kurup, Joachims, "How does clickthrough data reflect
  retrieval quality?", CIKM 2008, Algorithm 1 (as in Lerot's ``TeamDraft.py``). Lerot's "common prefix to no team"
  variant is not implemented (our choice: it is not in the paper).
* Balanced interleave: Joachims, "Optimizing search engines using clickthrough data", KDD 2002,
  Algorithm ``Combine``, with the randomised first ranker of Joachims 2003 and the evaluation
  rule as stated by Chapelle, Joachims, Radlinski, Yue, TOIS 2012, §2.1.

Conventions (all three methods). Inputs are ONE query: ``scores_first, scores_second [N]`` are
the two rankers' scores of the query's ``N`` (padded) documents and ``where [N]`` marks the real
ones; ``jax.vmap`` over a leading axis for a batch of queries. A ranker's ranking sorts its real
documents by descending score, ties by document index (the earlier one first); masked
documents are never shown. ``list_size = L`` is static; the list has ``min(L, #real docs)``
shown entries at the front, the rest have ``shown = False`` and ``docs = -1`` (don't gather with
it unmasked: jnp wraps -1 to the last document). The "first" ranker is ranker 1 and the "second"
ranker 2; every outcome is positive when the **second** ranker wins, negative when the first
wins and 0 for a tie (including no clicks); breaking ties with a coin flip is left to the caller.

``probabilistic_interleave_from_ranks`` takes ``score_ranks`` computed once per (query, ranker):
for ``N = 512`` the two per-comparison sorts cost more than the interleaving itself.
"""

import jax
import jax.numpy as jnp

from jaxrank.clicks.lists import (
    DocumentRankings,
    QueryRankings,
    alternating_pickers,
    check_list_options,
    check_tau_range,
    click_difference_outcome,
    probabilistic_list,
    ranking,
    score_ranks,
    softmax_weights,
    team_credit,
    team_draft_list,
)
from jaxrank.types import Array, PRNGKey


def _check_args(scores_first, scores_second, where, list_size, tau=None) -> None:
    """Python-level validation, before anything is traced."""
    check_list_options(list_size, tau)
    shapes = (jnp.shape(scores_first), jnp.shape(scores_second), jnp.shape(where))
    if len(shapes[0]) != 1 or len(set(shapes)) != 1:
        raise ValueError(
            "scores_first, scores_second and where must all be [N] (one query; vmap for a batch); "
            f"got shapes {shapes}."
        )


def probabilistic_interleave(
    key: PRNGKey, scores_first: Array, scores_second: Array, where: Array, *, list_size: int = 10, tau=3.0
) -> tuple[Array, Array, Array]:
    """Samples a probabilistic-interleave list of one query (Hofmann et al., CIKM 2011, §4).

    Each ranker's softmax gives its document at rank ``r`` the weight ``1 / r^τ``, normalised over
    the documents still remaining. At each position a fair coin picks ranker 1 or 2, that ranker
    samples a document from its softmax, and the document is removed from both rankers. The
    ranks are fixed by one sort of the scores; "remaining" only masks shown documents.

    Args:
      key: PRNG key.
      scores_first: ``[N]`` scores of ranker 1 (higher ranks first).
      scores_second: ``[N]`` scores of ranker 2.
      where: ``[N]`` bool, True for the query's real documents.
      list_size: ``L`` (static), the list length; ``min(L, #real)`` positions are shown.
      tau: softmax exponent ``τ > 0`` (3 in the paper); a traced f32 is fine under ``jit``. A
        concrete ``τ`` must satisfy ``τ ln L <= 40`` (f32 weights; ``τ <= 17.4`` for ``L = 10``).

    Returns:
      ``(docs, shown, prob_second)``: ``docs [L]`` i32 document indices (-1 where not shown),
      ``shown [L]`` bool, and ``prob_second [L]`` f32, the posterior probability
      ``P_2(l_n|·) / (P_1(l_n|·) + P_2(l_n|·))`` that position ``n`` came from ranker 2
      (0.5 where not shown). Feed it to ``probabilistic_outcome``.
    """
    _check_args(scores_first, scores_second, where, list_size, tau)
    where = jnp.asarray(where, bool)
    ranks = jnp.stack([score_ranks(scores_first, where), score_ranks(scores_second, where)])
    return _probabilistic_from_ranks(key, ranks, where, list_size, tau)


def probabilistic_interleave_from_ranks(
    key: PRNGKey, ranks_first: Array, ranks_second: Array, where: Array, *, list_size: int = 10, tau=3.0
) -> tuple[Array, Array, Array]:
    """``probabilistic_interleave`` with precomputed ``score_ranks`` ``[N]`` i32 (1-based) of each ranker.

    Same outputs for ``ranks_* = score_ranks(scores_*, where)``; the sort is usually the most
    expensive part of a comparison, so duel environments rank each (query, ranker) once.
    """
    _check_args(ranks_first, ranks_second, where, list_size, tau)
    ranks = jnp.stack([jnp.asarray(ranks_first, jnp.int32), jnp.asarray(ranks_second, jnp.int32)])
    return _probabilistic_from_ranks(key, ranks, jnp.asarray(where, bool), list_size, tau)


def _probabilistic_from_ranks(key, ranks, where, list_size, tau):
    check_tau_range(tau, list_size)
    rankings = DocumentRankings(ranks, where, softmax_weights(ranks, where, tau))
    return probabilistic_interleave_rankings(key, rankings, list_size=list_size)


def probabilistic_interleave_rankings(key: PRNGKey, rankings: QueryRankings, *,
                                      list_size: int) -> tuple[Array, Array, Array]:
    """``probabilistic_interleave`` of two rankers given as ``QueryRankings`` (e.g. precomputed tables).

    Draws ``uniform(key, (L, 2))``: per position a coin (ranker 2 when ``< 0.5``) and the
    uniform of the document draw. Returns ``(docs, shown, prob_second)`` as ``probabilistic_interleave``.
    """
    uniforms = jax.random.uniform(key, (list_size, 2))  # (coin, pick) per position
    pickers = (uniforms[:, 0] < 0.5).astype(jnp.int32)
    docs, shown, posterior = probabilistic_list(pickers, uniforms[:, 1], rankings, list_size)
    return docs, shown, posterior[:, 1]


def probabilistic_outcome(prob_second: Array, clicks: Array, shown: Array) -> Array:
    """Marginalised probabilistic-interleave outcome ``O = P(o > 0) − P(o < 0)`` (Hofmann et al. 2011).

    ``o`` = (#clicked positions credited to ranker 2) − (#credited to ranker 1), where position
    ``n`` is credited to ranker 2 independently with probability ``prob_second[n]``: the DP of
    ``jaxrank.clicks.lists.click_difference_outcome``, ``O(L²)`` instead of the ``2^L`` assignments.

    Args:
      prob_second: ``[L]`` f32 from ``probabilistic_interleave``.
      clicks: ``[L]`` bool clicks on the displayed positions.
      shown: ``[L]`` bool, clicks elsewhere are ignored.

    Returns:
      ``[]`` f32 in ``[-1, 1]``: > 0 means ranker 2 (second) wins, < 0 ranker 1, 0 a tie (e.g.
      no clicks).
    """
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    prob_second = jnp.clip(jnp.asarray(prob_second, jnp.float32), 0.0, 1.0)
    return click_difference_outcome(prob_second, 1.0 - prob_second, clicked)


def team_draft_interleave(
    key: PRNGKey, scores_first: Array, scores_second: Array, where: Array, *, list_size: int = 10
) -> tuple[Array, Array, Array]:
    """Samples a team-draft interleaved list of one query (Radlinski et al., CIKM 2008, Algorithm 1).

    At each position the ranker whose team is smaller picks (a fair coin if they are equal) and
    appends its highest-ranked document not yet in the list, which joins its team.

    Args:
      key: PRNG key.
      scores_first: ``[N]`` scores of ranker 1.
      scores_second: ``[N]`` scores of ranker 2.
      where: ``[N]`` bool, True for real documents.
      list_size: ``L`` (static).

    Returns:
      ``(docs, shown, team)``: ``docs [L]`` i32 (-1 where not shown), ``shown [L]`` bool and
      ``team [L]`` i32, 1 or 2 for the ranker that contributed the position, 0 where not shown.
    """
    _check_args(scores_first, scores_second, where, list_size)
    where = jnp.asarray(where, bool)
    ranks = jnp.stack([score_ranks(scores_first, where), score_ranks(scores_second, where)])
    return team_draft_interleave_rankings(key, DocumentRankings(ranks, where), list_size=list_size)


def team_draft_interleave_rankings(key: PRNGKey, rankings: QueryRankings, *,
                                   list_size: int) -> tuple[Array, Array, Array]:
    """``team_draft_interleave`` of two rankers given as ``QueryRankings`` (e.g. precomputed tables).

    Draws ``uniform(key, (L,))``, one coin per position (``alternating_pickers``). Returns
    ``(docs, shown, team)`` as ``team_draft_interleave`` (teams 1, 2; 0 where not shown).
    """
    pickers = alternating_pickers(jax.random.uniform(key, (list_size,)))
    docs, shown, team = team_draft_list(pickers, rankings, list_size)
    return docs, shown, team + 1


def team_draft_outcome(team: Array, clicks: Array, shown: Array) -> Array:
    """``[]`` f32 in {-1, 0, +1}: +1 if team 2 (second) got more clicks, -1 if team 1 did, 0 a tie."""
    credit = team_credit(jnp.asarray(team) - 1, clicks, shown, 2)
    return jnp.sign(credit[1] - credit[0])


def balanced_interleave(
    key: PRNGKey, scores_first: Array, scores_second: Array, where: Array, *, list_size: int = 10
) -> tuple[Array, Array, Array, Array]:
    """Samples a balanced interleaved list of one query (Joachims 2002, Algorithm ``Combine``).

    A fair coin picks the leading ranker ``A`` (the other is ``B``). With pointers ``k_A = k_B = 0``,
    each step looks at ``A[k_A]`` if ``k_A == k_B`` (advancing ``k_A``), else at ``B[k_B]``
    (advancing ``k_B``), and appends the document if it is not already in the list. A duplicate
    therefore still passes the turn, so every prefix of the list is ``top-k_A(A) ∪ top-k_B(B)``
    with ``k_A - k_B ∈ {0, 1}``. The ``2L`` pointer steps of a fixed-length ``lax.scan`` always
    fill ``min(L, #real)`` positions.

    Args:
      key: PRNG key.
      scores_first: ``[N]`` scores of ranker 1.
      scores_second: ``[N]`` scores of ranker 2.
      where: ``[N]`` bool, True for real documents.
      list_size: ``L`` (static).

    Returns:
      ``(docs, shown, rank_first, rank_second)``: ``docs [L]`` i32 (-1 where not shown),
      ``shown [L]`` bool, and the 1-based ranks ``[L]`` i32 of each shown document in ranker 1's
      and ranker 2's ranking (0 where not shown). Feed them to ``balanced_outcome``.
    """
    _check_args(scores_first, scores_second, where, list_size)
    where = jnp.asarray(where, bool)
    order_first, ranks_first = ranking(jnp.asarray(scores_first), where)
    order_second, ranks_second = ranking(jnp.asarray(scores_second), where)
    num_real = jnp.sum(where)
    second_leads = jax.random.uniform(key) < 0.5
    order_lead = jnp.where(second_leads, order_second, order_first)
    order_other = jnp.where(second_leads, order_first, order_second)
    last = where.shape[-1] - 1

    def pointer_step(carry, _):
        taken, docs, count, k_lead, k_other = carry
        lead_turn = k_lead == k_other
        k = jnp.where(lead_turn, k_lead, k_other)
        doc = jnp.where(lead_turn, order_lead[jnp.minimum(k, last)], order_other[jnp.minimum(k, last)])
        append = (k < num_real) & ~taken[doc] & (count < list_size)
        slot = jnp.minimum(count, list_size - 1)
        docs = docs.at[slot].set(jnp.where(append, doc, docs[slot]))
        taken = taken.at[doc].set(taken[doc] | append)
        carry = (taken, docs, count + append, k_lead + lead_turn, k_other + ~lead_turn)
        return carry, None

    zero = jnp.zeros((), jnp.int32)
    start = (jnp.zeros(where.shape, bool), jnp.full(list_size, -1, jnp.int32), zero, zero, zero)
    (_, docs, count, _, _), _ = jax.lax.scan(pointer_step, start, None, length=2 * list_size)
    shown = jnp.arange(list_size) < count
    safe = jnp.maximum(docs, 0)
    rank_first = jnp.where(shown, ranks_first[safe], 0)
    rank_second = jnp.where(shown, ranks_second[safe], 0)
    return docs, shown, rank_first, rank_second


def balanced_outcome(rank_first: Array, rank_second: Array, clicks: Array, shown: Array) -> Array:
    """Joachims' balanced-interleave evaluation rule; ``[]`` f32 in {-1, 0, +1}.

    Let ``d`` be the lowest (last) clicked shown document and ``k = min(rank_1(d), rank_2(d))``,
    the smaller cutoff at which one ranker's top-k covers it. ``h_i`` counts the clicked shown
    documents in ranker ``i``'s top ``k``. Returns ``sign(h_2 - h_1)``: +1 when the second ranker
    wins, -1 when the first does, 0 for a tie or no clicks (Chapelle et al. 2012, §2.1).

    Args:
      rank_first: ``[L]`` i32 ranks from ``balanced_interleave``.
      rank_second: ``[L]`` i32.
      clicks: ``[L]`` bool.
      shown: ``[L]`` bool.
    """
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    lowest = clicked.shape[-1] - 1 - jnp.argmax(clicked[::-1])
    cutoff = jnp.minimum(rank_first[lowest], rank_second[lowest])
    hits_first = jnp.sum(clicked & (rank_first <= cutoff))
    hits_second = jnp.sum(clicked & (rank_second <= cutoff))
    return jnp.where(jnp.any(clicked), jnp.sign(hits_second - hits_first), 0).astype(jnp.float32)
