"""Slow, obviously-correct multileaving of ``n >= 2`` rankers (test reference only).

Written from the papers with plain Python lists, ``itertools`` and float64; no code is shared with
``jaxrank`` (``ranking`` and the ``1/rank^tau`` softmax are the interleaving reference's). Random
choices come in as explicit uniforms so a caller can replay the exact draws of another
implementation:

* ``order_u[r][j]``: ranker ``j``'s uniform in round ``r``; among the rankers allowed to pick,
  the one with the smallest uniform picks first (ties by ranker index).
* ``pick_u[l]``: the uniform of the document draw at position ``l`` (inverse CDF over documents
  in index order).

* Team Draft Multileaving: Schuth, Sietsma, Whiteson, Lefortier, de Rijke, CIKM 2014,
  Algorithm 1, written in its "a ranker whose team has the fewest members picks" form; the round
  is the current smallest team size.
* Probabilistic Multileave: Schuth et al., SIGIR 2015, Algorithms 1 and 2: softmax
  ``1/rank^tau`` over the documents not yet shown, the TDM picking order, and the per-position
  posterior ``P_j(l_l) / sum_k P_k(l_l)``; credits and preferences by enumerating all ``n^c``
  assignments of the ``c`` clicked positions.

A query is ``scores``: one list per ranker, one number per real document; documents are their
indices ``0..m-1``; a ranking sorts them by descending score, equal scores by index.
"""

import itertools

import numpy as np

from tests.reference.interleaving import draw, ranking, softmax_over_remaining

_draw = draw  # the name tests/reference/oltr.py draws with

__all__ = [
    "ranking",
    "softmax_over_remaining",
    "team_draft_multileave",
    "team_draft_credit",
    "probabilistic_multileave",
    "posteriors_of_list",
    "expected_credit",
    "preferences_by_enumeration",
    "sign_matrix",
]


def _next_picker(team_sizes, order_u):
    """A ranker whose team is smallest; among them the smallest uniform of the current round."""
    smallest = min(team_sizes)
    candidates = [j for j, size in enumerate(team_sizes) if size == smallest]
    return min(candidates, key=lambda j: (order_u[smallest][j], j))


def team_draft_multileave(order_u, scores, list_size):
    """``(shown, teams)``: document indices and the ranker (0-based) that contributed each."""
    rankings = [ranking(s) for s in scores]
    sizes = [0] * len(scores)
    shown, teams = [], []
    while len(shown) < min(list_size, len(scores[0])):
        picker = _next_picker(sizes, order_u)
        shown.append(next(d for d in rankings[picker] if d not in shown))
        teams.append(picker)
        sizes[picker] += 1
    return shown, teams


def team_draft_credit(teams, clicks, num_rankers):
    """Clicks on each ranker's team."""
    return [sum(1 for t, c in zip(teams, clicks) if c and t == j) for j in range(num_rankers)]


def probabilistic_multileave(order_u, pick_u, scores, list_size, tau=3.0):
    """``(shown, pickers)``: the sampled list and the ranker that drew each position."""
    rankings = [ranking(s) for s in scores]
    sizes = [0] * len(scores)
    remaining = set(range(len(scores[0])))
    shown, pickers = [], []
    while remaining and len(shown) < list_size:
        picker = _next_picker(sizes, order_u)
        doc = draw(float(pick_u[len(shown)]), softmax_over_remaining(rankings[picker], remaining, tau))
        shown.append(doc)
        pickers.append(picker)
        sizes[picker] += 1
        remaining.discard(doc)
    return shown, pickers


def posteriors_of_list(shown, scores, tau=3.0):
    """``[len(shown)][n]``: ``P_j(l_l | remaining) / sum_k P_k(l_l | remaining)`` per position."""
    rankings = [ranking(s) for s in scores]
    remaining = set(range(len(scores[0])))
    rows = []
    for doc in shown:
        probs = [softmax_over_remaining(r, remaining, tau)[doc] for r in rankings]
        rows.append([p / sum(probs) for p in probs])
        remaining.discard(doc)
    return rows


def _assignments(posteriors, clicks):
    """Every assignment of the clicked positions to rankers, with its probability and click counts."""
    clicked = [row for row, c in zip(posteriors, clicks) if c]
    num_rankers = len(posteriors[0]) if posteriors else 0
    for assignment in itertools.product(range(num_rankers), repeat=len(clicked)):
        weight = 1.0
        counts = [0] * num_rankers
        for row, j in zip(clicked, assignment):
            weight *= row[j]
            counts[j] += 1
        yield weight, counts


def expected_credit(posteriors, clicks, num_rankers):
    """Expected clicks per ranker, by enumeration over all assignments (float64)."""
    credit = np.zeros(num_rankers)
    if not any(clicks):
        return credit
    for weight, counts in _assignments(posteriors, clicks):
        credit += weight * np.asarray(counts, np.float64)
    return credit


def preferences_by_enumeration(posteriors, clicks, num_rankers):
    """``[n, n]``: ``P(c_i > c_j) - P(c_i < c_j)`` over all assignments of the clicked positions."""
    prefs = np.zeros((num_rankers, num_rankers))
    if not any(clicks):
        return prefs
    for weight, counts in _assignments(posteriors, clicks):
        counts = np.asarray(counts)
        prefs += weight * np.sign(counts[:, None] - counts[None, :])
    return prefs


def sampled_preference(posteriors, clicks, num_samples, rng, i=1, j=0):
    """Schuth et al. (SIGIR 2015) Algorithm 2's Monte-Carlo preference of ranker ``i`` over ``j``: each of
    ``num_samples`` samples assigns every clicked position to a ranker drawn from its posterior row,
    counts the clicks per ranker, and scores ``sign(c_i - c_j)``; the estimate is their mean."""
    total = 0
    for _ in range(num_samples):
        counts = np.zeros(len(posteriors[0]), np.int64)
        for row, c in zip(posteriors, clicks):
            if c:
                counts[rng.choice(len(row), p=np.asarray(row) / np.sum(row))] += 1
        total += np.sign(counts[i] - counts[j])
    return total / num_samples


def sign_matrix(credit):
    """``[n, n]``: +1 where ranker ``i`` has more credit than ``j``, -1 less, 0 equal."""
    n = len(credit)
    return np.array([[(credit[i] > credit[j]) - (credit[i] < credit[j]) for j in range(n)] for i in range(n)],
                    np.float64)
