"""Slow, obviously-correct preference-matrix estimate (test reference only).

The RCS paper's protocol (Zoghi et al., WSDM 2014, §6.1, after Hofmann et al., CIKM 2011): each
comparison of rankers ``i`` (shown as ranker 1) and ``j`` samples a query uniformly, interleaves
the two rankings, simulates cascade clicks on the shown list and credits them; a tie is a fair
coin. ``P[i, j]`` is the fraction of comparisons ``i`` won.

* Probabilistic interleave (Hofmann et al. 2011, §4): at each position a fair coin picks a
  ranker, which draws a document from its softmax ``P(d) ∝ 1 / rank(d)^τ`` over the documents
  not yet shown, walking its ranking top-down (inverse CDF in rank order, as Lerot's
  ``ProbabilisticRankingFunction``). The outcome marginalises the assignment of every position
  (``P_2(l_n|·) / (P_1(l_n|·) + P_2(l_n|·))`` to ranker 2) by enumeration.
* Team draft (Radlinski et al., CIKM 2008, Algorithm 1): ``interleaving.team_draft``.
* Cascade clicks: scan top-down, click with ``click_prob[g]``, stop after a click with ``stop_prob[g]``.

Plain Python and float64; the uniforms of each comparison are given (the caller replays the
draws of the code under test), so lists, clicks and outcomes can be compared one by one.
"""

import numpy as np

from tests.reference import interleaving as ref

TIE_TOLERANCE = 1e-6  # |outcome| below this is a tie (the coin), as the JAX estimate's f32 outcome


def _draw_in_rank_order(u, ranked_docs, remaining, tau):
    """One draw from the softmax over ``remaining`` walking ``ranked_docs`` top-down (rank order)."""
    weights = [(d, 1.0 / (r + 1) ** tau) for r, d in enumerate(ranked_docs) if d in remaining]
    total = sum(w for _, w in weights)
    acc = 0.0
    for d, w in weights:
        acc += w
        if acc > u * total:
            return d
    return weights[-1][0]


def probabilistic_list(uniforms, scores_first, scores_second, list_size, tau):
    """Shown documents and ranker 2's posterior per position; ``uniforms[n] = (coin, pick)``."""
    rankings = (ref.ranking(scores_first), ref.ranking(scores_second))
    remaining = set(range(len(scores_first)))
    shown = []
    for coin, pick in uniforms[:min(list_size, len(scores_first))]:
        doc = _draw_in_rank_order(pick, rankings[1 if coin < 0.5 else 0], remaining, tau)
        shown.append(doc)
        remaining.discard(doc)
    p_first, p_second = ref.posteriors_of_list(shown, scores_first, scores_second, tau)
    return shown, [b / (a + b) for a, b in zip(p_first, p_second)]


def cascade_clicks(u_click, u_stop, grades, click_prob, stop_prob):
    """Clicks of one cascade user on ``grades`` (display order) with the given uniforms."""
    clicks = [False] * len(grades)
    for r, g in enumerate(grades):
        if u_click[r] < click_prob[g]:
            clicks[r] = True
            if u_stop[r] < stop_prob[g]:
                break
    return clicks


def comparison(draws, scores_first, scores_second, grades, click_prob, stop_prob, method, list_size, tau=3.0):
    """One comparison on one query: ``(shown, outcome, first_won)``.

    ``draws``: ``list_u`` (``[L, 2]`` coin and pick per position for probabilistic, ``[L]`` coins for
    team draft), ``u_click``, ``u_stop`` (``[L]``) and ``u_tie``. The outcome is > 0 when the
    second ranker wins.
    """
    if method == "probabilistic":
        shown, posterior = probabilistic_list(draws["list_u"], scores_first, scores_second, list_size, tau)
    else:
        shown, teams = ref.team_draft([u < 0.5 for u in draws["list_u"]], scores_first, scores_second, list_size)
    clicks = cascade_clicks(draws["u_click"], draws["u_stop"], [grades[d] for d in shown], click_prob, stop_prob)
    if method == "probabilistic":
        outcome = ref.outcome_by_enumeration(posterior, clicks)
    else:
        outcome = ref.team_draft_outcome(teams, clicks)
    first_won = outcome < -TIE_TOLERANCE or (abs(outcome) <= TIE_TOLERANCE and draws["u_tie"] < 0.5)
    return shown, outcome, first_won


def preference_matrix(first_won):
    """``P [K, K]`` from ``first_won[(i, j)]`` (lists of bools, ``i < j``): the fraction ``i`` won, diagonal 1/2."""
    num_arms = 1 + max(j for _, j in first_won)
    pref = np.full((num_arms, num_arms), 0.5)
    for (i, j), won in first_won.items():
        pref[i, j] = np.mean(won)
        pref[j, i] = 1.0 - pref[i, j]
    return pref
