"""Slow, obviously-correct interleaving and cascade clicks (test reference only).

Written straight from the papers and Lerot's click models with plain Python lists, ``random.Random``,
``itertools`` and float64 numpy; no code is shared with ``jaxrank``.

* Probabilistic interleave: Hofmann, Whiteson, de Rijke, CIKM 2011 (softmax over ranks
  ``1/r^tau``; a fair coin per position; the shown document leaves both rankers). The outcome is
  computed by enumerating every assignment vector ``a in {1,2}^L`` with its posterior weight.
* Team-draft: Radlinski, Kurup, Joachims, CIKM 2008, Algorithm 1.
* Balanced: Joachims, KDD 2002, ``Combine`` (recursive form written as a loop), evaluation rule
  of Chapelle et al., TOIS 2012.
* Cascade clicks: the user scans top-down, clicks with ``click_prob[g]``, stops after a click with
  ``stop_prob[g]``.

A query is given as ``scores`` (one number per real document) and documents are their indices
``0..n-1``; a ranking sorts them by descending score, equal scores by index.
"""

import itertools

import numpy as np

__all__ = [
    "ranking",
    "softmax_over_remaining",
    "draw",
    "probabilistic_interleave",
    "posteriors_of_list",
    "outcome_by_enumeration",
    "cascade_clicks",
    "probabilistic_comparison",
    "team_draft",
    "team_draft_outcome",
    "balanced",
    "balanced_outcome",
]


def ranking(scores):
    """Document indices by descending score; equal scores keep index order."""
    return sorted(range(len(scores)), key=lambda d: (-scores[d], d))


def softmax_over_remaining(ranked_docs, remaining, tau):
    """``{doc: P(doc)}`` with ``P ∝ 1 / rank^tau`` (rank in the full ranking), over ``remaining``."""
    weights = {d: 1.0 / (r + 1) ** tau for r, d in enumerate(ranked_docs) if d in remaining}
    total = sum(weights.values())
    return {d: w / total for d, w in weights.items()}


def draw(u, probs):
    """Inverse-CDF draw from ``{doc: prob}`` with uniform ``u`` (docs in index order)."""
    acc = 0.0
    docs = sorted(probs)
    for d in docs:
        acc += probs[d]
        if u < acc:
            return d
    return docs[-1]


def probabilistic_interleave(rng, scores_first, scores_second, list_size, tau=3.0):
    """Returns the sampled list (document indices, length ``min(list_size, n)``)."""
    rankings = (ranking(scores_first), ranking(scores_second))
    remaining = set(range(len(scores_first)))
    shown = []
    while remaining and len(shown) < list_size:
        ranker = 0 if rng.random() < 0.5 else 1
        doc = draw(rng.random(), softmax_over_remaining(rankings[ranker], remaining, tau))
        shown.append(doc)
        remaining.discard(doc)
    return shown


def posteriors_of_list(shown, scores_first, scores_second, tau=3.0):
    """``P_k(l_n | remaining)`` for k = 1, 2 at every position n: two lists of floats."""
    rankings = (ranking(scores_first), ranking(scores_second))
    remaining = set(range(len(scores_first)))
    p_first, p_second = [], []
    for doc in shown:
        p_first.append(softmax_over_remaining(rankings[0], remaining, tau)[doc])
        p_second.append(softmax_over_remaining(rankings[1], remaining, tau)[doc])
        remaining.discard(doc)
    return p_first, p_second


def outcome_by_enumeration(prob_second, clicks):
    """``P(o > 0) - P(o < 0)`` by summing over all ``2^L`` assignments (float64).

    ``prob_second[n]`` is the posterior probability that position ``n`` belongs to ranker 2;
    ``o`` = clicks credited to ranker 2 minus clicks credited to ranker 1.
    """
    prob_second = np.asarray(prob_second, np.float64)
    positive = negative = 0.0
    for assignment in itertools.product((1, 2), repeat=len(prob_second)):
        weight = 1.0
        o = 0
        for n, a in enumerate(assignment):
            weight *= prob_second[n] if a == 2 else 1.0 - prob_second[n]
            if clicks[n]:
                o += 1 if a == 2 else -1
        if o > 0:
            positive += weight
        elif o < 0:
            negative += weight
    return positive - negative


def _outcome_over_clicked(prob_second, clicks):
    """Same value as ``outcome_by_enumeration`` but enumerating clicked positions only (faster)."""
    clicked = [p for p, c in zip(prob_second, clicks) if c]
    positive = negative = 0.0
    for assignment in itertools.product((1, 2), repeat=len(clicked)):
        weight = 1.0
        for p, a in zip(clicked, assignment):
            weight *= p if a == 2 else 1.0 - p
        o = sum(1 if a == 2 else -1 for a in assignment)
        if o > 0:
            positive += weight
        elif o < 0:
            negative += weight
    return positive - negative


def cascade_clicks(rng, grades, click_prob, stop_prob):
    """Clicks ``[bool] * len(grades)`` of one cascade user."""
    clicks = [False] * len(grades)
    for r, g in enumerate(grades):
        if rng.random() < click_prob[g]:
            clicks[r] = True
            if rng.random() < stop_prob[g]:
                break
    return clicks


def probabilistic_comparison(rng, scores_first, scores_second, grades, click_prob, stop_prob, list_size=10, tau=3.0):
    """One full probabilistic-interleave comparison: list, cascade clicks, outcome ``O``."""
    shown = probabilistic_interleave(rng, scores_first, scores_second, list_size, tau)
    clicks = cascade_clicks(rng, [grades[d] for d in shown], click_prob, stop_prob)
    p_first, p_second = posteriors_of_list(shown, scores_first, scores_second, tau)
    posterior = [b / (a + b) for a, b in zip(p_first, p_second)]
    return _outcome_over_clicked(posterior, clicks)


def team_draft(coins, scores_first, scores_second, list_size):
    """Team-draft list and teams; ``coins[n]`` True means ranker 2 wins the tie at position n."""
    rankings = (ranking(scores_first), ranking(scores_second))
    shown, teams = [], []
    sizes = [0, 0]
    while len(shown) < min(list_size, len(scores_first)):
        n = len(shown)
        if sizes[0] < sizes[1]:
            picker = 0
        elif sizes[1] < sizes[0]:
            picker = 1
        else:
            picker = 1 if coins[n] else 0
        doc = next(d for d in rankings[picker] if d not in shown)
        shown.append(doc)
        teams.append(picker + 1)
        sizes[picker] += 1
    return shown, teams


def team_draft_outcome(teams, clicks):
    """+1 if team 2 has more clicks, -1 if team 1 has, 0 otherwise."""
    first = sum(1 for t, c in zip(teams, clicks) if c and t == 1)
    second = sum(1 for t, c in zip(teams, clicks) if c and t == 2)
    return (second > first) - (second < first)


def balanced(second_leads, scores_first, scores_second, list_size):
    """Joachims' ``Combine(A, B)`` with ``A`` the leading ranker; returns the list."""
    a, b = ranking(scores_first), ranking(scores_second)
    if second_leads:
        a, b = b, a
    shown = []
    ka = kb = 0
    while len(shown) < min(list_size, len(scores_first)):
        if ka == kb:
            if a[ka] not in shown:
                shown.append(a[ka])
            ka += 1
        else:
            if b[kb] not in shown:
                shown.append(b[kb])
            kb += 1
    return shown


def balanced_outcome(shown, clicks, scores_first, scores_second):
    """Chapelle et al. 2012: k = min rank of the lowest click in either ranking; compare top-k hits."""
    clicked = [d for d, c in zip(shown, clicks) if c]
    if not clicked:
        return 0
    rank_first = {d: r + 1 for r, d in enumerate(ranking(scores_first))}
    rank_second = {d: r + 1 for r, d in enumerate(ranking(scores_second))}
    lowest = clicked[-1]
    k = min(rank_first[lowest], rank_second[lowest])
    hits_first = sum(1 for d in clicked if rank_first[d] <= k)
    hits_second = sum(1 for d in clicked if rank_second[d] <= k)
    return (hits_second > hits_first) - (hits_second < hits_first)
