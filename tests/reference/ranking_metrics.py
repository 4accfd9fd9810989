"""Slow, obviously-correct per-query ranking metrics (test reference only).

Written straight from the standard definitions (SOLAR paper, Wang et al., ACL 2015, eq. 1–2;
Chapelle et al. 2009 for ERR) and from the rules of the LETOR 4.0 evaluation script
``Eval-Score-4.0.pl`` (Jun Xu and Tie-Yan Liu, 2009).
Plain Python lists and ``math`` only; no code is shared with ``jaxrank``.

Every function takes ONE query: ``scores`` and ``labels`` are equal-length sequences of the
query's real documents (padding already removed), in input (file) order. Documents are ranked
by score, highest first, with Python's stable ``sorted``: documents with equal scores keep
their input order. Ranks ``r`` are 1-based. ``k=None`` means "no cutoff".
"""

import math

__all__ = [
    "ranked_labels",
    "dcg_at_k",
    "ndcg_at_k",
    "average_precision",
    "precision_at_k",
    "err_at_k",
    "letor_ndcg_at_k",
    "letor_precision_at_k",
    "letor_average_precision",
]


def ranked_labels(scores, labels):
    """Labels in ranked order: score descending, ties keep input order (stable sort)."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels must have the same length")
    # sorted(..., reverse=True) is still stable: equal keys keep their original order.
    order = sorted(range(len(scores)), key=lambda i: float(scores[i]), reverse=True)
    return [float(labels[i]) for i in order]


def _cutoff(k, n):
    return n if k is None else min(k, n)


# --------------------------------------------------------------------------------------
# Standard convention (gain 2^l - 1, discount 1/log2(1 + r); SOLAR eq. 1-2)
# --------------------------------------------------------------------------------------


def _dcg_of_ranked(ranked, k):
    total = 0.0
    for r in range(1, _cutoff(k, len(ranked)) + 1):
        gain = 2.0 ** ranked[r - 1] - 1.0
        total += gain / math.log2(1.0 + r)
    return total


def dcg_at_k(scores, labels, k=None):
    """DCG@k = sum_{r <= min(k, n)} (2^l_r - 1) / log2(1 + r)."""
    return _dcg_of_ranked(ranked_labels(scores, labels), k)


def ndcg_at_k(scores, labels, k=None):
    """NDCG@k = DCG@k / IDCG@k; 0 when IDCG@k = 0."""
    ideal = sorted((float(l) for l in labels), reverse=True)
    idcg = _dcg_of_ranked(ideal, k)
    if idcg == 0.0:
        return 0.0
    return dcg_at_k(scores, labels, k) / idcg


def average_precision(scores, labels, k=None):
    """AP = (1/m) sum_{relevant ranks r <= k} Prec@r, rel = label > 0; 0 if m = 0."""
    ranked = ranked_labels(scores, labels)
    rel = [1 if l > 0 else 0 for l in ranked]
    m = sum(rel)
    if m == 0:
        return 0.0
    hits = 0
    total = 0.0
    for r in range(1, _cutoff(k, len(ranked)) + 1):
        if rel[r - 1]:
            hits += 1
            total += hits / r
    return total / m


def precision_at_k(scores, labels, k=None):
    """P@k = #relevant (label > 0) in the top min(k, n) / min(k, n)  (rax convention)."""
    ranked = ranked_labels(scores, labels)
    c = _cutoff(k, len(ranked))
    if c == 0:
        return 0.0
    return sum(1 for l in ranked[:c] if l > 0) / c


def err_at_k(scores, labels, k=None, *, max_grade):
    """ERR@k = sum_{r <= k} (1/r) R_r prod_{i < r} (1 - R_i), R = (2^l - 1) / 2^g_max.

    ``max_grade`` (g_max, the top grade of the collection) is required: it is a property of
    the data set, not of one query.
    """
    ranked = ranked_labels(scores, labels)
    p_reach = 1.0
    total = 0.0
    for r in range(1, _cutoff(k, len(ranked)) + 1):
        stop = (2.0 ** ranked[r - 1] - 1.0) / 2.0 ** max_grade
        total += p_reach * stop / r
        p_reach *= 1.0 - stop
    return total


# --------------------------------------------------------------------------------------
# LETOR 4.0 Eval-Score-4.0.pl rules
# --------------------------------------------------------------------------------------
# The perl script ranks the documents of a query by predicted score with a stable sort on
# file order, then:
#   * NDCG gain table {2: 3, 1: 1, 0: 0}; any other label has gain 0.
#   * DCG: position 1 and 2 undiscounted; position r >= 3 weighted log(2)/log(r) = 1/log2(r).
#   * The ideal ranking sorts the labels by their *gain* descending.
#   * NDCG@k is only defined for k <= n (number of documents); a query with n < k gets no
#     NDCG@k value and therefore contributes 0 to the average over all queries.
#   * NDCG@k = 0 when the ideal DCG@k is 0 (no relevant document); such queries are averaged.
#   * Precision/MAP relevance: label in {1, 2}.
#   * P@k divides by k; positions past the end of the list count as non-relevant.
#   * AP uses the whole list; AP = 0 when there is no relevant document.

_LETOR_GAIN = {0: 0.0, 1: 1.0, 2: 3.0}


def _letor_gain(label):
    label = float(label)
    if label.is_integer():
        return _LETOR_GAIN.get(int(label), 0.0)
    return 0.0


def _letor_relevant(label):
    return float(label) in (1.0, 2.0)


def _letor_discount(r):
    return 1.0 if r <= 2 else 1.0 / math.log2(r)


def _letor_dcg_of_ranked(ranked, k):
    total = 0.0
    for r in range(1, k + 1):
        gain = _letor_gain(ranked[r - 1]) if r <= len(ranked) else 0.0
        total += gain * _letor_discount(r)
    return total


def letor_ndcg_at_k(scores, labels, k=None):
    """LETOR NDCG@k (see module notes). ``k=None`` means k = n."""
    ranked = ranked_labels(scores, labels)
    n = len(ranked)
    if k is None:
        k = n
    if n < k or n == 0:
        return 0.0  # undefined in the script, counts as 0 in the average
    ideal = sorted(ranked, key=_letor_gain, reverse=True)
    idcg = _letor_dcg_of_ranked(ideal, k)
    if idcg == 0.0:
        return 0.0
    return _letor_dcg_of_ranked(ranked, k) / idcg


def letor_precision_at_k(scores, labels, k):
    """LETOR P@k = #relevant (label in {1, 2}) in the top k / k; holes are non-relevant."""
    ranked = ranked_labels(scores, labels)
    hits = sum(1 for l in ranked[:k] if _letor_relevant(l))
    return hits / k


def letor_average_precision(scores, labels, k=None):
    """LETOR AP: relevant = label in {1, 2}; 0 with no relevant document.

    The script has no cutoff (``k=None``). With ``k`` given, only ranks r <= k add to the
    sum and the denominator stays the number of relevant documents (same as the standard AP).
    """
    ranked = ranked_labels(scores, labels)
    rel = [_letor_relevant(l) for l in ranked]
    m = sum(rel)
    if m == 0:
        return 0.0
    hits = 0
    total = 0.0
    for r in range(1, _cutoff(k, len(ranked)) + 1):
        if rel[r - 1]:
            hits += 1
            total += hits / r
    return total / m
