"""Tests for ``jaxrank.data.ragged``: the flat layout, padded views of it, buckets, per-query norms.

References are computed here from the parsed rows with plain Python loops over queries.
"""

import itertools
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import metrics
from jaxrank.data import (
    as_ragged,
    bucket_size,
    buckets,
    concat_queries,
    linear_query_values,
    load_queries,
    map_queries,
    normalize_documents,
    pad_queries,
    parse_svmlight,
    query_lengths,
    ragged_queries,
    take_queries,
)
from jaxrank.data.svmlight import SVMLightData
from jaxrank.types import RaggedQueries

SAMPLE = Path(__file__).resolve().parent / "data" / "MQ2008-mini" / "Fold1"


def group_queries(data, list_size=None, normalize=False):
    return pad_queries(ragged_queries(data, normalize=normalize), list_size)


def _queries(data):
    """[(qid, row indices)] of contiguous runs, in file order."""
    out, start = [], 0
    for q, group in itertools.groupby(data.qids.tolist()):
        n = len(list(group))
        out.append((q, np.arange(start, start + n)))
        start += n
    return out


def _as_numpy(batch):
    return tuple(np.asarray(x) for x in batch)


def _check_grouping(data, batch, list_size=None):
    features, labels, mask, qid = _as_numpy(batch)
    queries = _queries(data)
    longest = max(len(rows) for _, rows in queries)
    L = list_size if list_size is not None else bucket_size(longest)
    assert features.shape == (len(queries), L, data.features.shape[1])
    assert labels.shape == mask.shape == (len(queries), L) and qid.shape == (len(queries),)
    assert features.dtype == np.float32 and labels.dtype == np.float32
    assert mask.dtype == np.bool_ and qid.dtype == np.int64
    assert batch.num_queries == len(queries) and batch.list_size == L
    assert batch.num_features == data.features.shape[1]
    np.testing.assert_array_equal(qid, [q for q, _ in queries])
    for i, (_, rows) in enumerate(queries):
        kept = rows[:L]
        n = len(kept)
        assert mask[i].sum() == n
        assert mask[i, :n].all() and not mask[i, n:].any()
        np.testing.assert_array_equal(features[i, :n], data.features[kept].astype(np.float32))
        np.testing.assert_array_equal(labels[i, :n], data.labels[kept].astype(np.float32))
        assert not features[i, n:].any() and not labels[i, n:].any()


# --------------------------------------------------------------------------------------------
# bucket_size / query_lengths
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n,expected",
    [(1, 8), (2, 8), (7, 8), (8, 8), (9, 16), (16, 16), (17, 32), (100, 128), (128, 128), (129, 256), (1000, 1024)],
)
def test_bucket_size(n, expected):
    assert bucket_size(n) == expected


def test_bucket_size_is_smallest_power_of_two_at_least_8():
    for n in range(1, 2050):
        b = bucket_size(n)
        assert b >= max(n, 8) and b & (b - 1) == 0
        assert b == 8 or b // 2 < n


@pytest.mark.parametrize("n,minimum,expected", [(1, 1, 1), (3, 1, 4), (5, 2, 8), (3, 16, 16), (33, 16, 64)])
def test_bucket_size_minimum(n, minimum, expected):
    assert bucket_size(n, minimum=minimum) == expected


@pytest.mark.parametrize("n", [0, -1])
def test_bucket_size_rejects_empty(n):
    with pytest.raises(ValueError, match=f"num_docs must be >= 1; got {n}"):
        bucket_size(n)


def test_query_lengths():
    np.testing.assert_array_equal(query_lengths(np.array([5, 5, 5, 2, 9, 9])), [3, 1, 2])
    np.testing.assert_array_equal(query_lengths(np.array([4])), [1])


# --------------------------------------------------------------------------------------------
# group_queries
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["train.txt.gz", "vali.txt", "test.txt.gz"])
def test_group_sample(name):
    data = parse_svmlight(SAMPLE / name)
    batch = group_queries(data)
    _check_grouping(data, batch)


def test_group_sample_expected_shapes():
    # tests/data/README.md: train 4 queries of 8 docs; test 2 queries, 69 lines (8 + 61).
    train = group_queries(parse_svmlight(SAMPLE / "train.txt.gz"))
    assert train.features.shape == (4, 8, 46)
    np.testing.assert_array_equal(np.asarray(train.mask).sum(1), [8, 8, 8, 8])
    np.testing.assert_array_equal(np.asarray(train.qid), [10002, 10032, 10035, 10036])
    test = group_queries(parse_svmlight(SAMPLE / "test.txt.gz"))
    assert test.features.shape == (2, 64, 46)
    np.testing.assert_array_equal(np.asarray(test.mask).sum(1), [8, 61])


def test_group_mq2008_vali(shared_data):
    data = parse_svmlight(shared_data / "MQ2008" / "Fold1" / "vali.txt.gz")
    batch = group_queries(data)
    assert batch.features.shape == (157, 128, 46)
    assert int(np.asarray(batch.mask).sum()) == 2707
    _check_grouping(data, batch)


def test_group_lightgbm(shared_data):
    folder = shared_data / "LightGBM_lambdarank"
    data = parse_svmlight(folder / "rank.test.gz")
    batch = group_queries(data)
    sizes = [int(s) for s in (folder / "rank.test.query").read_text().split()]
    np.testing.assert_array_equal(np.asarray(batch.mask).sum(1), sizes)
    _check_grouping(data, batch)


def test_group_small_by_hand():
    data = SVMLightData(
        features=np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
        labels=np.array([2.0, 0.0, 1.0]),
        qids=np.array([30, 30, 7]),
        docids=None,
    )
    batch = group_queries(data, list_size=3)
    np.testing.assert_array_equal(
        np.asarray(batch.features),
        [[[1, 2], [3, 4], [0, 0]], [[5, 6], [0, 0], [0, 0]]],
    )
    np.testing.assert_array_equal(np.asarray(batch.labels), [[2, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(np.asarray(batch.mask), [[1, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(np.asarray(batch.qid), [30, 7])


def test_explicit_list_size_not_a_power_of_two():
    data = parse_svmlight(SAMPLE / "vali.txt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batch = group_queries(data, list_size=20)
    assert batch.list_size == 20
    _check_grouping(data, batch, list_size=20)


@pytest.mark.parametrize("name,list_size,num_truncated", [("vali.txt", 10, 1), ("test.txt.gz", 10, 1), ("train.txt.gz", 5, 4)])
def test_truncation_keeps_first_docs_and_warns(name, list_size, num_truncated):
    data = parse_svmlight(SAMPLE / name)
    with pytest.warns(UserWarning, match=rf"^truncated {num_truncated} queries longer than list_size={list_size}"):
        batch = group_queries(data, list_size=list_size)
    _check_grouping(data, batch, list_size=list_size)


def test_truncation_of_real_queries(shared_data):
    data = parse_svmlight(shared_data / "MQ2008" / "Fold1" / "vali.txt.gz")
    longer = sum(len(rows) > 16 for _, rows in _queries(data))
    assert longer > 0
    with pytest.warns(UserWarning, match=f"^truncated {longer} "):
        batch = group_queries(data, list_size=16)
    _check_grouping(data, batch, list_size=16)


def test_no_warning_without_truncation():
    data = parse_svmlight(SAMPLE / "test.txt.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        group_queries(data)
        group_queries(data, list_size=61)


@pytest.mark.parametrize("list_size", [0, -3])
def test_bad_list_size(list_size):
    with pytest.raises(ValueError, match=f"list_size must be >= 1; got {list_size}"):
        group_queries(parse_svmlight(SAMPLE / "vali.txt"), list_size=list_size)


# --------------------------------------------------------------------------------------------
# normalize
# --------------------------------------------------------------------------------------------


def _normalized_reference(data):
    """Per query, per feature: (x - min) / (max - min) over the query's documents; 0 if constant."""
    out = []
    for _, rows in _queries(data):
        x = data.features[rows].astype(np.float64)
        lo, hi = x.min(0), x.max(0)
        q = np.zeros_like(x)
        for d in range(x.shape[1]):
            if hi[d] > lo[d]:
                q[:, d] = (x[:, d] - lo[d]) / (hi[d] - lo[d])
        out.append(q)
    return out


def _check_normalized(data, queries):
    reference = _normalized_reference(data)
    constant_seen = varying_seen = False
    for i, ref in enumerate(reference):
        got = queries.features[queries.offsets[i]:queries.offsets[i + 1]]
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
        assert got.min() >= 0.0 and got.max() <= 1.0
        x = data.features[_queries(data)[i][1]]
        constant = x.max(0) == x.min(0)
        assert not got[:, constant].any()  # constant within the query -> 0
        constant_seen |= bool(constant.any())
        if len(ref) > 1 and (~constant).any():
            varying_seen = True
            np.testing.assert_allclose(got[:, ~constant].min(0), 0.0, atol=1e-6)
            np.testing.assert_allclose(got[:, ~constant].max(0), 1.0, atol=1e-6)
    assert constant_seen and varying_seen  # both branches were exercised


@pytest.mark.parametrize("name", ["train.txt.gz", "vali.txt", "test.txt.gz"])
def test_normalize_sample(name):
    data = parse_svmlight(SAMPLE / name)
    queries = ragged_queries(data, normalize=True)
    _check_normalized(data, queries)
    np.testing.assert_array_equal(queries.labels, data.labels)
    assert not np.shares_memory(queries.features, data.features)  # the parsed copy is untouched


def test_normalize_mslr_raw_features(shared_data):
    # MSLR features are raw (counts, BM25, ...), so normalisation changes them a lot.
    data = parse_svmlight(shared_data / "MSLR-WEB_Fold1_subset" / "msn1.fold1.train.5k.txt.gz")
    assert data.features.max() > 1.0
    _check_normalized(data, ragged_queries(data, normalize=True))


def test_normalize_in_blocks_equals_one_block():
    data = parse_svmlight(SAMPLE / "test.txt.gz")
    offsets = ragged_queries(data).offsets
    whole = normalize_documents(data.features.copy(), offsets)
    cells = 3 * data.features.shape[1]  # three documents a block
    np.testing.assert_array_equal(normalize_documents(data.features.copy(), offsets, block_cells=cells), whole)


def test_normalize_leaves_the_callers_array_alone_unless_in_place():
    data = parse_svmlight(SAMPLE / "test.txt.gz")
    before = data.features.copy()
    copied = ragged_queries(data, normalize=True)
    np.testing.assert_array_equal(data.features, before)
    scaled = ragged_queries(data, normalize=True, in_place=True)
    assert scaled.features is data.features
    np.testing.assert_array_equal(scaled.features, copied.features)


def test_load_queries_normalized_twice_from_cache_is_the_same(tmp_path, monkeypatch):
    # The loader normalises its own arrays in place: the cache entry must keep the raw values.
    monkeypatch.setenv("JAXRANK_CACHE", str(tmp_path))
    path = SAMPLE / "test.txt.gz"
    raw = load_queries(path).features.copy()
    first = load_queries(path, normalize=True).features.copy()
    np.testing.assert_array_equal(load_queries(path).features, raw)
    np.testing.assert_array_equal(load_queries(path, normalize=True).features, first)


def test_normalize_by_hand():
    features = np.array([[1.0, 5.0, -2.0], [3.0, 5.0, 0.0], [2.0, 5.0, 2.0], [4.0, 4.0, 4.0]], np.float32)
    got = normalize_documents(features, np.array([0, 3, 4]))
    np.testing.assert_allclose(got, [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.5, 0.0, 1.0], [0.0, 0.0, 0.0]])


# --------------------------------------------------------------------------------------------
# the ragged layout, its views and buckets
# --------------------------------------------------------------------------------------------


def _tiny() -> RaggedQueries:
    rng = np.random.default_rng(0)
    lengths = np.array([1, 3, 9, 2, 40, 5, 17, 3])
    n = int(lengths.sum())
    return RaggedQueries(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n).astype(np.float32),
                         np.r_[0, np.cumsum(lengths)].astype(np.int64), np.arange(100, 100 + len(lengths)))


def test_as_ragged_inverts_pad_queries():
    queries = _tiny()
    dense = pad_queries(queries)
    assert dense.features.shape == (8, 64, 4)
    back = as_ragged(dense)
    for a, b in zip(back, queries):
        np.testing.assert_array_equal(a, b)
    assert as_ragged(queries) is queries


def test_dense_view_of_a_mostly_padded_big_collection_is_refused():
    lengths = np.r_[1251, np.full(30_000, 100)]  # MSLR-WEB30K-like: one long query
    queries = RaggedQueries(np.zeros((int(lengths.sum()), 136), np.float32), np.zeros(int(lengths.sum()), np.float32),
                            np.r_[0, np.cumsum(lengths)].astype(np.int64), np.arange(lengths.size))
    with pytest.raises(ValueError, match=r"would take 31\.1 GiB, 95% of it padding .*layout='ragged'"):
        pad_queries(queries)


def test_take_and_concat_queries():
    queries = _tiny()
    picked = take_queries(queries, [4, 0, 2])
    np.testing.assert_array_equal(picked.lengths, [40, 1, 9])
    np.testing.assert_array_equal(picked.qid, [104, 100, 102])
    np.testing.assert_array_equal(picked.features[:40], queries.features[15:55])
    np.testing.assert_array_equal(picked.features[40], queries.features[0])
    both = concat_queries([picked, take_queries(queries, [7])])
    np.testing.assert_array_equal(both.lengths, [40, 1, 9, 3])
    np.testing.assert_array_equal(both.labels[-3:], queries.labels[-3:])


def test_buckets_cover_each_query_once_with_at_most_double_padding():
    queries = _tiny()
    seen = []
    for bucket in buckets(queries, max_cells=64):
        rows, size = bucket.docs.shape
        assert rows & (rows - 1) == 0 and size & (size - 1) == 0 and rows * size <= max(64, size)
        mask = np.asarray(bucket.batch.mask)
        for r, q in enumerate(bucket.queries):
            if q < 0:
                assert not mask[r].any()
                continue
            n = queries.lengths[q]
            assert n <= size and (size == 8 or n > size // 2)  # at most 2x padding per real query
            np.testing.assert_array_equal(bucket.docs[r, :n], np.arange(queries.offsets[q], queries.offsets[q + 1]))
            np.testing.assert_array_equal(np.asarray(bucket.batch.features)[r, :n], queries.features[bucket.docs[r, :n]])
            assert mask[r].sum() == n and bucket.batch.qid[r] == queries.qid[q]
            seen.append(int(q))
    assert sorted(seen) == list(range(queries.num_queries))


def test_map_queries_and_linear_values_equal_a_loop_over_queries():
    queries = _tiny()
    w = jnp.asarray(np.random.default_rng(1).normal(size=(3, 4)), jnp.float32)

    def ap(scores, labels, mask, rows):
        return metrics.average_precision(scores, labels, where=mask, reduce_fn=None)

    got = linear_query_values(jax.jit(ap), queries, w)  # [3, Q]
    assert got.shape == (3, queries.num_queries)
    for q in range(queries.num_queries):
        x = queries.features[queries.offsets[q]:queries.offsets[q + 1]]
        lab = queries.labels[queries.offsets[q]:queries.offsets[q + 1]]
        for k in range(3):
            np.testing.assert_allclose(got[k, q], float(metrics.average_precision(x @ np.asarray(w[k]), lab)), rtol=1e-6)
    sizes = map_queries(lambda b: jnp.sum(b.batch.mask, -1), queries, features=False)
    np.testing.assert_array_equal(sizes, queries.lengths)


def test_default_block_keeps_features_within_the_byte_budget():
    from jaxrank.data.ragged import BLOCK_BYTES, default_cells

    for num_features, expected in [(46, 1 << 18), (136, 1 << 16), (700, 1 << 14), (10**6, 1 << 10)]:
        cells = default_cells(num_features)
        assert cells == expected
        assert cells * num_features * 4 <= BLOCK_BYTES or cells == 1 << 10
