"""Tests for ``jaxrank.metrics`` (ranking metrics).

The expected values come from ``tests/reference/ranking_metrics.py`` (plain Python written from
the standard definitions and the LETOR script's rules, sharing no code with jaxrank), from rax
where its conventions match ours, and from hand-computed numbers for the LETOR
``Eval-Score-4.0.pl`` mode.
"""

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rax
from absl.testing import parameterized
from tests.reference import ranking_metrics as ref
from sklearn.datasets import load_svmlight_file

from jaxrank import metrics

ATOL = 1e-5
RTOL = 1e-5

# --------------------------------------------------------------------------------------------
# Metric configurations shared by the tests: (name, jaxrank metric, kwargs, reference).
# The reference takes one query's real documents, (scores list, labels list) -> float.
# --------------------------------------------------------------------------------------------

CONFIGS = (
    ("DCG", metrics.dcg, {}, lambda s, l: ref.dcg_at_k(s, l)),
    ("DCG@3", metrics.dcg, dict(topn=3), lambda s, l: ref.dcg_at_k(s, l, 3)),
    ("NDCG", metrics.ndcg, {}, lambda s, l: ref.ndcg_at_k(s, l)),
    ("NDCG@1", metrics.ndcg, dict(topn=1), lambda s, l: ref.ndcg_at_k(s, l, 1)),
    ("NDCG@3", metrics.ndcg, dict(topn=3), lambda s, l: ref.ndcg_at_k(s, l, 3)),
    ("NDCG@10", metrics.ndcg, dict(topn=10), lambda s, l: ref.ndcg_at_k(s, l, 10)),
    ("AP", metrics.average_precision, {}, lambda s, l: ref.average_precision(s, l)),
    ("AP@3", metrics.average_precision, dict(topn=3), lambda s, l: ref.average_precision(s, l, 3)),
    ("P", metrics.precision, {}, lambda s, l: ref.precision_at_k(s, l)),
    ("P@3", metrics.precision, dict(topn=3), lambda s, l: ref.precision_at_k(s, l, 3)),
    ("P@10", metrics.precision, dict(topn=10), lambda s, l: ref.precision_at_k(s, l, 10)),
    ("ERR", metrics.err, dict(max_grade=2), lambda s, l: ref.err_at_k(s, l, max_grade=2)),
    ("ERR@3", metrics.err, dict(topn=3, max_grade=2),
     lambda s, l: ref.err_at_k(s, l, 3, max_grade=2)),
    ("LETOR NDCG@3", metrics.ndcg, dict(topn=3, letor_compat=True),
     lambda s, l: ref.letor_ndcg_at_k(s, l, 3)),
    ("LETOR NDCG@5", metrics.ndcg, dict(topn=5, letor_compat=True),
     lambda s, l: ref.letor_ndcg_at_k(s, l, 5)),
    ("LETOR P@3", metrics.precision, dict(topn=3, letor_compat=True),
     lambda s, l: ref.letor_precision_at_k(s, l, 3)),
    ("LETOR P@10", metrics.precision, dict(topn=10, letor_compat=True),
     lambda s, l: ref.letor_precision_at_k(s, l, 10)),
    ("LETOR MAP", metrics.average_precision, dict(letor_compat=True),
     lambda s, l: ref.letor_average_precision(s, l)),
)
NDCG_CONFIGS = tuple(name for name, fn, _, _ in CONFIGS if fn is metrics.ndcg)
STANDARD_CONFIGS = tuple(name for name, _, kw, _ in CONFIGS if not kw.get("letor_compat"))
LETOR_CONFIGS = tuple(name for name, _, kw, _ in CONFIGS if kw.get("letor_compat"))
_REF = {name: rfn for name, _, _, rfn in CONFIGS}

# The MQ2008 parity set: the metrics LETOR tables report, in both conventions.
PARITY_CASES = (
    ("NDCG@1", metrics.ndcg, dict(topn=1), lambda s, l: ref.ndcg_at_k(s, l, 1)),
    ("NDCG@5", metrics.ndcg, dict(topn=5), lambda s, l: ref.ndcg_at_k(s, l, 5)),
    ("NDCG@10", metrics.ndcg, dict(topn=10), lambda s, l: ref.ndcg_at_k(s, l, 10)),
    ("DCG@10", metrics.dcg, dict(topn=10), lambda s, l: ref.dcg_at_k(s, l, 10)),
    ("MAP", metrics.average_precision, {}, lambda s, l: ref.average_precision(s, l)),
    ("P@10", metrics.precision, dict(topn=10), lambda s, l: ref.precision_at_k(s, l, 10)),
    ("ERR@10", metrics.err, dict(topn=10, max_grade=2),
     lambda s, l: ref.err_at_k(s, l, 10, max_grade=2)),
    ("LETOR NDCG@1", metrics.ndcg, dict(topn=1, letor_compat=True),
     lambda s, l: ref.letor_ndcg_at_k(s, l, 1)),
    ("LETOR NDCG@5", metrics.ndcg, dict(topn=5, letor_compat=True),
     lambda s, l: ref.letor_ndcg_at_k(s, l, 5)),
    ("LETOR NDCG@10", metrics.ndcg, dict(topn=10, letor_compat=True),
     lambda s, l: ref.letor_ndcg_at_k(s, l, 10)),
    ("LETOR P@10", metrics.precision, dict(topn=10, letor_compat=True),
     lambda s, l: ref.letor_precision_at_k(s, l, 10)),
    ("LETOR MAP", metrics.average_precision, dict(letor_compat=True),
     lambda s, l: ref.letor_average_precision(s, l)),
)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

BATCH, LIST_SIZE = 6, 8  # one shape for the small tests so compiles are shared


def _random_batch(seed, *, ties, batch=BATCH, list_size=LIST_SIZE, max_label=2):
    """Random padded batch. Row 0 is fully real, the last row is fully masked.

    ``ties=False``: scores are a random permutation of 0..L-1 per row (tie-free).
    ``ties=True``: scores are drawn from {0, 1, 2}, so most lists have ties.
    Masked slots get high scores and labels, so a metric that does not mask them fails.
    """
    rng = np.random.default_rng(seed)
    if ties:
        scores = rng.integers(0, 3, (batch, list_size)).astype(np.float32)
    else:
        scores = np.stack([rng.permutation(list_size) for _ in range(batch)]).astype(np.float32)
    labels = rng.integers(0, max_label + 1, (batch, list_size)).astype(np.float32)
    mask = rng.random((batch, list_size)) < 0.7
    mask[0] = True
    mask[-1] = False
    scores = np.where(mask, scores, np.float32(50.0) + rng.random((batch, list_size), np.float32))
    labels = np.where(mask, labels, np.float32(max_label))
    return scores, labels, mask


def _reference_per_list(name, scores, labels, mask, *, order=None):
    """Reference values ``[B]`` (NaN for fully masked lists).

    ``order``: None keeps the input order for ties; "optimistic"/"pessimistic" first
    reorders each list's real docs by label (descending/ascending, stable), so that the
    reference's stable sort puts the best/worst labels first within each tie group.
    """
    out = np.full(scores.shape[0], np.nan)
    for b in range(scores.shape[0]):
        idx = [i for i in range(scores.shape[1]) if mask[b, i]]
        if not idx:
            continue
        if order == "optimistic":
            idx = sorted(idx, key=lambda i: -labels[b, i])
        elif order == "pessimistic":
            idx = sorted(idx, key=lambda i: labels[b, i])
        out[b] = _REF[name]([float(scores[b, i]) for i in idx], [float(labels[b, i]) for i in idx])
    return out


@jax.jit
def _all_metrics(scores, labels, mask):
    """({name: per-list values [...]}, {name: mean over non-empty lists}) for every config."""
    per_list = {
        name: fn(scores, labels, where=mask, reduce_fn=None, **kw) for name, fn, kw, _ in CONFIGS
    }
    means = {name: fn(scores, labels, where=mask, **kw) for name, fn, kw, _ in CONFIGS}
    return per_list, means


def _all_per_list(scores, labels, mask):
    return _all_metrics(scores, labels, mask)[0]


@jax.jit
def _all_per_list_with_key(scores, labels, mask, key):
    return {
        name: fn(scores, labels, where=mask, key=key, reduce_fn=None, **kw)
        for name, fn, kw, _ in CONFIGS
    }


def _np(tree):
    return jax.tree.map(np.asarray, tree)


def _assert_close(got, want, msg):
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=RTOL, err_msg=msg)


# --------------------------------------------------------------------------------------------
# (a) Parity with the reference on real MQ2008 data
# --------------------------------------------------------------------------------------------

MQ2008_NUM_FEATURES = 46
MQ2008_Q = 157  # every MQ2008 partition has 156 or 157 queries: one padded shape for all folds
MQ2008_L = 128  # the longest MQ2008 query has 121 documents
NUM_RANDOM_RANKERS = 4
PAD_SCORE = 10.0  # above every real score (features are in [0, 1]): masked docs must sort last


@functools.lru_cache(maxsize=None)
def _load_mq2008_test_fold(path):
    """Fold test file -> (features [Q, L, 46], labels [Q, L], mask [Q, L], num_queries).

    Read with sklearn so this test does not depend on jaxrank's parser. Queries are the runs of
    equal contiguous qids; padding slots get label 2 (must be ignored).
    """
    x, y, qid = load_svmlight_file(path, n_features=MQ2008_NUM_FEATURES, query_id=True)
    x = np.asarray(x.todense(), dtype=np.float32)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    ends = np.r_[starts[1:], len(qid)]
    assert len(starts) == len(np.unique(qid)), "qids are not contiguous"
    assert len(starts) <= MQ2008_Q
    features = np.zeros((MQ2008_Q, MQ2008_L, MQ2008_NUM_FEATURES), np.float32)
    labels = np.full((MQ2008_Q, MQ2008_L), 2.0, np.float32)
    mask = np.zeros((MQ2008_Q, MQ2008_L), bool)
    for q, (a, b) in enumerate(zip(starts, ends)):
        assert b - a <= MQ2008_L
        features[q, : b - a] = x[a:b]
        labels[q, : b - a] = y[a:b]
        mask[q, : b - a] = True
    return features, labels, mask, len(starts)


def _ranker_name(s):
    if s < MQ2008_NUM_FEATURES:
        return f"feature {s + 1}"
    return f"random ranker {s - MQ2008_NUM_FEATURES}"


@jax.jit
def _jaxrank_parity(scores, labels, mask):
    """scores [S, Q, L] -> ({name: [S, Q]} per query, {name: [S]} mean over queries)."""

    def one_ranker(s):
        per_query = {
            name: fn(s, labels, where=mask, reduce_fn=None, **kw)
            for name, fn, kw, _ in PARITY_CASES
        }
        means = {name: fn(s, labels, where=mask, **kw) for name, fn, kw, _ in PARITY_CASES}
        return per_query, means

    return jax.vmap(one_ranker)(scores)


def _check_mq2008_fold(shared_data, fold):
    path = shared_data / "MQ2008" / f"Fold{fold}" / "test.txt.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    features, labels, mask, nq = _load_mq2008_test_fold(str(path))

    # Rankers: each single feature (many ties: features are often 0), plus seeded random scores.
    rng = np.random.default_rng(1000 + fold)
    random_scores = rng.standard_normal((NUM_RANDOM_RANKERS, MQ2008_Q, MQ2008_L)).astype(np.float32)
    scores = np.concatenate([np.moveaxis(features, -1, 0), random_scores])
    scores = np.where(mask, scores, np.float32(PAD_SCORE))  # [S, Q, L] float32

    got_per_query, got_mean = _np(_jaxrank_parity(scores, labels, mask))

    # Reference, on exactly the same float32 scores, real docs in file order.
    num_rankers = scores.shape[0]
    want = {name: np.zeros((num_rankers, nq)) for name, *_ in PARITY_CASES}
    for q in range(nq):
        n = int(mask[q].sum())
        lab = labels[q, :n].tolist()
        for s in range(num_rankers):
            sc = scores[s, q, :n].tolist()
            for name, _, _, rfn in PARITY_CASES:
                want[name][s, q] = rfn(sc, lab)

    failures = []
    for name, *_ in PARITY_CASES:
        got = got_per_query[name][:, :nq]
        bad = ~np.isclose(got, want[name], atol=ATOL, rtol=RTOL)
        if bad.any():
            s, q = np.argwhere(bad)[0]
            n = int(mask[q].sum())
            failures.append(
                f"Fold{fold} {name}: {bad.sum()}/{bad.size} per-query values differ; first at "
                f"{_ranker_name(s)}, query #{q}: jaxrank {got[s, q]!r}, "
                f"reference {want[name][s, q]!r}; "
                f"scores={scores[s, q, :n].tolist()} labels={labels[q, :n].tolist()}"
            )
        want_mean = want[name].mean(axis=1)
        bad_mean = ~np.isclose(got_mean[name], want_mean, atol=ATOL, rtol=RTOL)
        if bad_mean.any():
            s = int(np.argmax(bad_mean))
            failures.append(
                f"Fold{fold} {name} mean over queries: {_ranker_name(s)}: jaxrank "
                f"{got_mean[name][s]!r}, reference {want_mean[s]!r}"
            )
    assert not failures, "\n".join(failures)


def test_mq2008_parity_fold1(shared_data):
    _check_mq2008_fold(shared_data, 1)


@pytest.mark.parametrize("fold", [2, 3, 4, 5])
def test_mq2008_parity_other_folds(shared_data, fold):
    _check_mq2008_fold(shared_data, fold)


# --------------------------------------------------------------------------------------------
# (b) rax parity where the conventions match
# --------------------------------------------------------------------------------------------
# rax 0.4.0: dcg/ndcg use gain 2^l - 1 and discount 1/log2(1 + r), IDCG uses the same cutoff and
# NDCG is 0 when IDCG = 0 -- identical to our standard convention. rax's AP and precision call an item relevant
# when label >= 1 (ours: label > 0); with integer labels 0/1/2 these agree. rax's AP with topn sums
# Prec@r over relevant ranks r <= topn and divides by all relevant items (same as ours), and rax's
# precision divides by the number of retrieved items min(k, n) (same as ours). rax has no ERR and
# no LETOR mode. rax returns 0 for fully masked lists with reduce_fn=None; we do not compare those.

RAX_CASES = (
    ("dcg", metrics.dcg, rax.dcg_metric, None),
    ("dcg@3", metrics.dcg, rax.dcg_metric, 3),
    ("ndcg", metrics.ndcg, rax.ndcg_metric, None),
    ("ndcg@1", metrics.ndcg, rax.ndcg_metric, 1),
    ("ndcg@3", metrics.ndcg, rax.ndcg_metric, 3),
    ("ndcg@5", metrics.ndcg, rax.ndcg_metric, 5),
    ("ndcg@10", metrics.ndcg, rax.ndcg_metric, 10),
    ("ap", metrics.average_precision, rax.ap_metric, None),
    ("ap@3", metrics.average_precision, rax.ap_metric, 3),
    ("precision", metrics.precision, rax.precision_metric, None),
    ("precision@3", metrics.precision, rax.precision_metric, 3),
    ("precision@10", metrics.precision, rax.precision_metric, 10),
)


@jax.jit
def _rax_vs_jaxrank(scores, labels, mask):
    out = {}
    for name, ours, theirs, topn in RAX_CASES:
        out[name] = (
            ours(scores, labels, where=mask, topn=topn, reduce_fn=None),
            theirs(scores, labels, where=mask, topn=topn, reduce_fn=None),
            ours(scores, labels, where=mask, topn=topn),
            theirs(scores, labels, where=mask, topn=topn),
        )
    return out


def test_rax_parity_tie_free():
    for seed in range(8):
        scores, labels, mask = _random_batch(seed, ties=False)
        valid = mask.any(axis=-1)
        results = _np(_rax_vs_jaxrank(scores, labels, mask))
        for name, (ours, theirs, ours_mean, theirs_mean) in results.items():
            msg = f"{name} seed={seed}\nscores={scores}\nlabels={labels}\nmask={mask}"
            _assert_close(ours[valid], theirs[valid], msg)
            _assert_close(ours_mean, theirs_mean, msg)


# --------------------------------------------------------------------------------------------
# (c) LETOR mode: hand-computed values
# --------------------------------------------------------------------------------------------
# Batch of 6 lists (L = 8; masked slots get score 9 and label 2, which must be ignored):
#   A: scores [3, 2, 1]     labels [0, 1, 2]  -> ranked labels 0, 1, 2
#   B: scores [4, 3, 2, 1]  labels [0, 0, 0, 0] (no relevant doc)
#   C: scores [2, 1]        labels [1, 2]     -> ranked labels 1, 2
#   T: scores [1, 1, 1]     labels [0, 2, 1]  -> all tied; input order kept: 0, 2, 1
#   E, F: fully masked (left out of every mean)
# LETOR gains: label 0 -> 0, 1 -> 1, 2 -> 3.  Discounts: rank 1, 2 -> 1; rank 3 -> 1/log2(3).
# 1/log2(3) = 0.63092975, 3/log2(3) = 1.89278926.
#
# NDCG@1: A: DCG 0 -> 0.  B: 0.  C: DCG 1, IDCG 3 -> 1/3.  T: DCG 0 -> 0.
#         mean over the 4 non-empty lists = (1/3)/4 = 0.08333333
# NDCG@2: A: DCG 0+1 = 1, IDCG 3+1 = 4 -> 0.25.  B: 0.  C: DCG 1+3 = 4, IDCG 3+1 = 4 -> 1.0
#         (rank 2 is undiscounted).  T: DCG 0+3 = 3, IDCG 4 -> 0.75.  mean = 2.0/4 = 0.5
# NDCG@3: A: DCG 0 + 1 + 3/log2(3) = 2.89278926, IDCG 3 + 1 + 0 = 4 -> 0.72319732.  B: 0.
#         C: only 2 docs < 3 -> 0.  T: DCG 0 + 3 + 1/log2(3) = 3.63092975, IDCG 4 -> 0.90773244.
#         mean = (0.72319732 + 0.90773244)/4 = 0.40773244
# NDCG@5: every list has fewer than 5 docs -> all 0, mean 0.
# P@1:  A 0, B 0, C 1, T 0 -> mean 0.25
# P@5:  divides by 5: A 2/5, B 0, C 2/5, T 2/5 -> mean 0.3
# P@10: A 0.2, B 0, C 0.2, T 0.2 -> mean 0.15
# MAP:  A: relevant at ranks 2, 3: (1/2 + 2/3)/2 = 0.58333333.  B: 0 (counted).
#       C: ranks 1, 2: (1 + 1)/2 = 1.  T: ranks 2, 3: 0.58333333.
#       mean = 2.16666667/4 = 0.54166667
# Standard convention for contrast (gain 2^l - 1 = same table, discount 1/log2(1 + r)):
#   C NDCG@2 = (1 + 3/log2(3)) / (3 + 1/log2(3)) = 2.89278926/3.63092975 = 0.79670750
#   A NDCG@5 = (1/log2(3) + 3/2) / (3 + 1/log2(3)) = 2.13092975/3.63092975 = 0.58687727 (not 0)
#   P@5 divides by min(5, n): A 2/3, B 0, C 1, T 2/3 -> mean 0.58333333


def _letor_hand_batch():
    real = [
        ([3, 2, 1], [0, 1, 2]),
        ([4, 3, 2, 1], [0, 0, 0, 0]),
        ([2, 1], [1, 2]),
        ([1, 1, 1], [0, 2, 1]),
        ([], []),
        ([], []),
    ]
    scores = np.full((BATCH, LIST_SIZE), 9.0, np.float32)
    labels = np.full((BATCH, LIST_SIZE), 2.0, np.float32)
    mask = np.zeros((BATCH, LIST_SIZE), bool)
    for b, (s, l) in enumerate(real):
        scores[b, : len(s)] = s
        labels[b, : len(l)] = l
        mask[b, : len(s)] = True
    return scores, labels, mask


LETOR_HAND = (
    # (metric, topn, per-list values for A, B, C, T, mean)
    (metrics.ndcg, 1, [0.0, 0.0, 1 / 3, 0.0], 0.08333333),
    (metrics.ndcg, 2, [0.25, 0.0, 1.0, 0.75], 0.5),
    (metrics.ndcg, 3, [0.72319732, 0.0, 0.0, 0.90773244], 0.40773244),
    (metrics.ndcg, 5, [0.0, 0.0, 0.0, 0.0], 0.0),
    (metrics.precision, 1, [0.0, 0.0, 1.0, 0.0], 0.25),
    (metrics.precision, 5, [0.4, 0.0, 0.4, 0.4], 0.3),
    (metrics.precision, 10, [0.2, 0.0, 0.2, 0.2], 0.15),
    (metrics.average_precision, None, [0.58333333, 0.0, 1.0, 0.58333333], 0.54166667),
)


@pytest.mark.parametrize(
    "metric,topn,per_list,mean",
    LETOR_HAND,
    ids=[f"{m.__name__}@{k}" for m, k, _, _ in LETOR_HAND],
)
def test_letor_compat_hand_values(metric, topn, per_list, mean):
    scores, labels, mask = _letor_hand_batch()
    kw = dict(where=mask, topn=topn, letor_compat=True)
    got = np.asarray(metric(scores, labels, reduce_fn=None, **kw))
    _assert_close(got[:4], per_list, "per list")
    _assert_close(metric(scores, labels, **kw), mean, "mean")
    # the key is ignored in LETOR mode (T has ties: input order is kept)
    for seed in range(3):
        got_key = metric(scores, labels, key=jax.random.key(seed), reduce_fn=None, **kw)
        _assert_close(np.asarray(got_key)[:4], per_list, f"with key {seed}")
    # the reference transcription agrees with the hand values too
    ref_fn = {
        metrics.ndcg: ref.letor_ndcg_at_k,
        metrics.precision: ref.letor_precision_at_k,
        metrics.average_precision: ref.letor_average_precision,
    }[metric]
    for b in range(4):
        n = int(mask[b].sum())
        want = ref_fn(scores[b, :n].tolist(), labels[b, :n].tolist(), topn)
        assert math.isclose(want, per_list[b], abs_tol=1e-7)


def test_standard_convention_differs_from_letor_on_hand_batch():
    scores, labels, mask = _letor_hand_batch()
    ndcg2 = np.asarray(metrics.ndcg(scores, labels, where=mask, topn=2, reduce_fn=None))
    _assert_close(ndcg2[2], 0.79670750, "C NDCG@2 standard")
    ndcg5 = np.asarray(metrics.ndcg(scores, labels, where=mask, topn=5, reduce_fn=None))
    _assert_close(ndcg5[0], 0.58687727, "A NDCG@5 standard (short query is not 0)")
    p5 = metrics.precision(scores, labels, where=mask, topn=5)
    _assert_close(p5, 0.58333333, "P@5 standard mean")


def test_letor_compat_labels_outside_gain_table():
    # scores [3, 2, 1], labels [3, 0, 1]: label 3 has LETOR gain 0 and is not relevant.
    # NDCG@3: ranked gains 0, 0, 1 -> DCG = 1/log2(3) = 0.63092975;
    #         ideal (sorted by gain) 1, 0, 0 -> IDCG = 1.
    # P@2 = 0/2 = 0.  AP: the only relevant doc is at rank 3 -> (1/3)/1 = 0.33333333.
    # (Padded into the shared [6, 8] shape; only list 0 is real.)
    scores = np.full((BATCH, LIST_SIZE), 9.0, np.float32)
    labels = np.full((BATCH, LIST_SIZE), 2.0, np.float32)
    mask = np.zeros((BATCH, LIST_SIZE), bool)
    scores[0, :3], labels[0, :3], mask[0, :3] = [3.0, 2.0, 1.0], [3.0, 0.0, 1.0], True
    kw = dict(where=mask, letor_compat=True)
    _assert_close(metrics.ndcg(scores, labels, topn=3, **kw), 0.63092975, "NDCG@3")
    _assert_close(metrics.precision(scores, labels, topn=2, **kw), 0.0, "P@2")
    _assert_close(metrics.average_precision(scores, labels, **kw), 1 / 3, "AP")
    assert math.isclose(ref.letor_ndcg_at_k([3, 2, 1], [3, 0, 1], 3), 0.63092975, abs_tol=1e-7)
    assert ref.letor_precision_at_k([3, 2, 1], [3, 0, 1], 2) == 0.0
    assert math.isclose(ref.letor_average_precision([3, 2, 1], [3, 0, 1]), 1 / 3)


# --------------------------------------------------------------------------------------------
# (d) Properties and small-input reference checks
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ties", [False, True])
def test_small_random_inputs_match_reference(ties):
    """All configs on random [6, 8] batches; ties are broken by position on both sides."""
    for seed in range(10):
        scores, labels, mask = _random_batch(seed, ties=ties)
        valid = mask.any(axis=-1)
        per_list, means = _np(_all_metrics(scores, labels, mask))
        for name in per_list:
            want = _reference_per_list(name, scores, labels, mask)
            msg = f"{name} seed={seed}\nscores={scores}\nlabels={labels}\nmask={mask}"
            _assert_close(per_list[name][valid], want[valid], msg)
            _assert_close(means[name], want[valid].mean(), msg + "\n(mean)")


def test_permuting_documents_leaves_metrics_unchanged():
    for seed in range(5):
        scores, labels, mask = _random_batch(seed, ties=False)
        base = _np(_all_per_list(scores, labels, mask))
        rng = np.random.default_rng(100 + seed)
        perm = np.stack([rng.permutation(LIST_SIZE) for _ in range(BATCH)])
        take = functools.partial(np.take_along_axis, indices=perm, axis=-1)
        permuted = _np(_all_per_list(take(scores), take(labels), take(mask)))
        valid = mask.any(axis=-1)
        for name in base:
            _assert_close(permuted[name][valid], base[name][valid], f"{name} seed={seed}")


@pytest.mark.parametrize("ties", [False, True])
def test_masked_padding_leaves_metrics_unchanged(ties):
    pad = 4
    for seed in range(5):
        scores, labels, mask = _random_batch(seed, ties=ties)
        base, base_mean = _np(_all_metrics(scores, labels, mask))
        rng = np.random.default_rng(200 + seed)
        pad_scores = (100.0 * rng.standard_normal((BATCH, pad))).astype(np.float32)
        pad_labels = np.full((BATCH, pad), 2.0, np.float32)
        pad_mask = np.zeros((BATCH, pad), bool)
        valid = mask.any(axis=-1)
        for where in ("append", "prepend"):
            parts = [(scores, pad_scores), (labels, pad_labels), (mask, pad_mask)]
            if where == "prepend":
                parts = [(b, a) for a, b in parts]
            padded = [np.concatenate(p, axis=-1) for p in parts]
            per_list, means = _np(_all_metrics(*padded))
            for name in base:
                msg = f"{name} {where} seed={seed}"
                _assert_close(per_list[name][valid], base[name][valid], msg)
                _assert_close(means[name], base_mean[name], f"{name} {where} mean seed={seed}")


def test_ndcg_is_between_zero_and_one():
    for seed in range(10):
        for ties in (False, True):
            scores, labels, mask = _random_batch(seed, ties=ties)
            per_list = _np(_all_per_list(scores, labels, mask))
            valid = mask.any(axis=-1)
            for name in NDCG_CONFIGS:
                v = per_list[name][valid]
                assert np.all(v >= -1e-7) and np.all(v <= 1 + 1e-6), (name, seed, v)


def test_monotone_transform_of_scores_leaves_metrics_unchanged():
    for seed in range(5):
        scores, labels, mask = _random_batch(seed, ties=False)
        base = _np(_all_per_list(scores, labels, mask))
        valid = mask.any(axis=-1)
        for transform in (lambda s: 3.0 * s - 7.0, lambda s: s**3 / 50.0 + 0.5, np.arctan):
            moved = transform(scores).astype(np.float32)
            per_list = _np(_all_per_list(moved, labels, mask))
            for name in base:
                _assert_close(per_list[name][valid], base[name][valid], f"{name} seed={seed}")


def test_fully_masked_lists_are_left_out_of_the_mean():
    scores, labels, mask = _random_batch(0, ties=False)
    mask[2] = False  # a second fully masked list, in the middle
    assert not mask[-1].any()
    valid = mask.any(axis=-1)
    per_list, means = _np(_all_metrics(scores, labels, mask))
    for name in per_list:
        assert np.isfinite(means[name]), name
        _assert_close(means[name], per_list[name][valid].mean(), name)


@jax.jit
def _all_sums(scores, labels, mask):
    return {
        name: fn(scores, labels, where=mask, reduce_fn=jnp.sum, **kw) for name, fn, kw, _ in CONFIGS
    }


# One config per metric function and mode, for the shape checks (fewer ops -> faster compiles).
SHAPE_CONFIGS = ("DCG@3", "NDCG@3", "AP", "P@3", "ERR", "LETOR NDCG@3", "LETOR P@3", "LETOR MAP")


@functools.partial(jax.jit, static_argnames="use_where")
def _shape_configs_per_list(scores, labels, mask, use_where=True):
    return {
        name: fn(scores, labels, where=mask if use_where else None, reduce_fn=None, **kw)
        for name, fn, kw, _ in CONFIGS
        if name in SHAPE_CONFIGS
    }


def test_reduce_fn_sum_adds_non_empty_lists():
    scores, labels, mask = _random_batch(3, ties=True)
    valid = mask.any(axis=-1)
    per_list = _np(_all_per_list(scores, labels, mask))
    sums = _np(_all_sums(scores, labels, mask))
    for name in per_list:
        _assert_close(sums[name], per_list[name][valid].sum(), name)


def test_reduce_fn_none_gives_per_list_shape():
    scores, labels, mask = _random_batch(4, ties=True)
    valid = mask.any(axis=-1)
    flat = _np(_all_per_list(scores, labels, mask))
    nested = _np(
        _shape_configs_per_list(*(a.reshape(2, 3, LIST_SIZE) for a in (scores, labels, mask)))
    )
    # row 0 of _random_batch is fully real, so `where=None` on it must give the same value
    single = _np(_shape_configs_per_list(scores[0], labels[0], None, use_where=False))
    for name in SHAPE_CONFIGS:
        assert flat[name].shape == (BATCH,), name
        assert nested[name].shape == (2, 3), name
        assert single[name].shape == (), name
        _assert_close(nested[name].reshape(-1)[valid], flat[name][valid], name)
        _assert_close(single[name], flat[name][0], name)


def test_err_requires_max_grade():
    scores, labels = np.array([[2.0, 1.0]], np.float32), np.array([[1.0, 0.0]], np.float32)
    with pytest.raises(ValueError, match=r"max_grade=.*max_grade=4 for MSLR.*max_grade=2 for LETOR 4\.0"):
        metrics.err(scores, labels)
    with pytest.raises(ValueError, match="max_grade"):
        metrics.err(scores, labels, topn=1, reduce_fn=None)


def test_err_of_a_list_does_not_depend_on_its_batch():
    # One list (scores [4, 3, 2], labels [1, 0, 1]) alone, and in the shared [6, 8] shape next to lists
    # whose largest grade is 0, 1 or g_max (masked slots hold label 4 and must not count). By hand,
    # g_max = 2: R = (2^1 - 1)/4 = 1/4 at ranks 1 and 3, 0 at rank 2, ERR = 1/4 + (3/4)(1/4)/3 = 0.3125;
    # g_max = 4: R = 1/16, ERR = 1/16 + (15/16)(1/16)/3 = 0.08203125.
    hand = {2: 0.3125, 4: 0.08203125}
    alone_scores, alone_labels = [4.0, 3.0, 2.0], [1.0, 0.0, 1.0]
    for max_grade, want in hand.items():
        _assert_close(ref.err_at_k(alone_scores, alone_labels, max_grade=max_grade), want,
                      f"reference g_max={max_grade}")
        single = metrics.err(np.asarray(alone_scores, np.float32), np.asarray(alone_labels, np.float32),
                             max_grade=max_grade, reduce_fn=None)
        _assert_close(single, want, f"alone, g_max={max_grade}")
        for top in (0, 1, max_grade):
            scores = np.full((BATCH, LIST_SIZE), 9.0, np.float32)
            labels = np.full((BATCH, LIST_SIZE), 4.0, np.float32)
            mask = np.zeros((BATCH, LIST_SIZE), bool)
            scores[0, :3], labels[0, :3], mask[0, :3] = alone_scores, alone_labels, True
            scores[1, :4], labels[1, :4], mask[1, :4] = [4, 3, 2, 1], [0, top, 0, top], True
            scores[2, :2], labels[2, :2], mask[2, :2] = [1, 2], [top, 0], True
            got = np.asarray(metrics.err(scores, labels, where=mask, max_grade=max_grade, reduce_fn=None))
            _assert_close(got[0], want, f"in a batch, g_max={max_grade}, neighbours' top grade {top}")
            for q in (1, 2):
                want_q = ref.err_at_k(scores[q][mask[q]].tolist(), labels[q][mask[q]].tolist(), max_grade=max_grade)
                _assert_close(got[q], want_q, f"neighbour list {q}, g_max={max_grade}, top grade {top}")


def test_random_tie_breaking_with_key():
    for seed in range(6):
        scores, labels, mask = _random_batch(seed, ties=True)
        valid = mask.any(axis=-1)
        key = jax.random.key(seed)
        first = _np(_all_per_list_with_key(scores, labels, mask, key))
        again = _np(_all_per_list_with_key(scores, labels, mask, key))
        no_key = _np(_all_per_list(scores, labels, mask))
        for name in STANDARD_CONFIGS:
            np.testing.assert_array_equal(first[name], again[name], err_msg=f"{name}: same key")
            lo = _reference_per_list(name, scores, labels, mask, order="pessimistic")
            hi = _reference_per_list(name, scores, labels, mask, order="optimistic")
            v = first[name][valid]
            msg = f"{name} seed={seed}: {v} not within [{lo[valid]}, {hi[valid]}]"
            assert np.all(v >= lo[valid] - ATOL) and np.all(v <= hi[valid] + ATOL), msg
        for name in LETOR_CONFIGS:  # LETOR mode ignores the key: ties keep input order
            np.testing.assert_array_equal(first[name][valid], no_key[name][valid], err_msg=name)


def test_different_keys_break_ties_differently():
    # One list of 8 tied documents with a single relevant one: its rank is random with a key.
    scores = np.zeros((1, LIST_SIZE), np.float32)
    labels = np.zeros((1, LIST_SIZE), np.float32)
    labels[0, 3] = 1.0
    fn = jax.jit(lambda s, l, k: metrics.ndcg(s, l, key=k))
    values = {float(fn(scores, labels, jax.random.key(seed))) for seed in range(20)}
    assert len(values) > 1, values
    # and every value is one of the 8 possible NDCGs 1/log2(1 + r)
    possible = [1.0 / math.log2(1.0 + r) for r in range(1, LIST_SIZE + 1)]
    for v in values:
        assert min(abs(v - p) for p in possible) < ATOL, v


def test_one_key_per_list_breaks_each_list_by_its_own_key():
    """With keys [B], list b's value equals the list scored alone with keys[b] (and a wider padding
    of the same list gives the same value): what lets per-query results ignore how lists are blocked."""
    scores, labels, mask = _random_batch(3, ties=True)
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(1), jnp.arange(scores.shape[0]))
    together = np.asarray(metrics.ndcg(scores, labels, where=mask, topn=5, key=keys, reduce_fn=None))
    wide = np.concatenate([scores, np.zeros_like(scores)], axis=-1)
    for b in range(scores.shape[0]):
        alone = float(metrics.ndcg(scores[b], labels[b], where=mask[b], topn=5, key=keys[b], reduce_fn=None))
        padded = float(metrics.ndcg(wide[b], np.r_[labels[b], np.zeros_like(labels[b])],
                                    where=np.r_[mask[b], np.zeros_like(mask[b])], topn=5, key=keys[b], reduce_fn=None))
        assert together[b] == pytest.approx(alone, abs=1e-7) and padded == pytest.approx(alone, abs=1e-7), b
    # keys broadcast against leading axes: [K, B, L] scores with keys [B] share each list's noise
    stacked = np.asarray(metrics.ndcg(np.stack([scores, scores]), np.stack([labels, labels]),
                                      where=np.stack([mask, mask]), topn=5, key=keys, reduce_fn=None))
    np.testing.assert_array_equal(stacked[0], together)
    np.testing.assert_array_equal(stacked[1], together)


class JitParityTest(chex.TestCase):
    """jit and no-jit give the reference values (ties broken by position)."""

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(
        (name.replace(" ", "_").replace("@", "_at_"), name) for name in (
            "DCG@3", "NDCG@3", "AP", "P@3", "ERR@3", "LETOR NDCG@3", "LETOR P@10", "LETOR MAP",
        )
    )
    def test_matches_reference(self, name):
        (fn, kw), = [(fn, kw) for n, fn, kw, _ in CONFIGS if n == name]
        scores, labels, mask = _random_batch(7, ties=True)
        valid = mask.any(axis=-1)
        run = self.variant(lambda s, l, m: fn(s, l, where=m, reduce_fn=None, **kw))
        got = np.asarray(run(scores, labels, mask))
        want = _reference_per_list(name, scores, labels, mask)
        _assert_close(got[valid], want[valid], name)
