"""Tests for ``jaxrank.data.padding``: bucketing, grouping into ``QueryBatch``, per-query norms.

References are computed here from the parsed rows with plain Python loops over queries.
"""

import itertools
import logging
from pathlib import Path

import numpy as np
import pytest

from jaxrank.data import bucket_size, group_queries, normalize_per_query, parse_svmlight, query_lengths
from jaxrank.data.svmlight import SVMLightData

SAMPLE = Path(__file__).resolve().parent / "data" / "MQ2008-mini" / "Fold1"
LOGGER = "jaxrank.data.padding"


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
    assert mask.dtype == np.bool_ and qid.dtype == np.int32
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
    with pytest.raises(ValueError):
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


def test_explicit_list_size_not_a_power_of_two(caplog):
    data = parse_svmlight(SAMPLE / "vali.txt")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        batch = group_queries(data, list_size=20)
    assert batch.list_size == 20
    _check_grouping(data, batch, list_size=20)
    assert not [r for r in caplog.records if r.name == LOGGER]


@pytest.mark.parametrize("name,list_size,num_truncated", [("vali.txt", 10, 1), ("test.txt.gz", 10, 1), ("train.txt.gz", 5, 4)])
def test_truncation_keeps_first_docs_and_warns(caplog, name, list_size, num_truncated):
    data = parse_svmlight(SAMPLE / name)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        batch = group_queries(data, list_size=list_size)
    _check_grouping(data, batch, list_size=list_size)
    records = [r for r in caplog.records if r.name == LOGGER]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    message = records[0].getMessage()
    assert "truncated" in message and f"list_size={list_size}" in message
    assert message.startswith(f"truncated {num_truncated} ")


def test_truncation_of_real_queries(shared_data, caplog):
    data = parse_svmlight(shared_data / "MQ2008" / "Fold1" / "vali.txt.gz")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        batch = group_queries(data, list_size=16)
    _check_grouping(data, batch, list_size=16)
    longer = sum(len(rows) > 16 for _, rows in _queries(data))
    assert longer > 0
    assert any(r.getMessage().startswith(f"truncated {longer} ") for r in caplog.records)


def test_no_warning_without_truncation(caplog):
    data = parse_svmlight(SAMPLE / "test.txt.gz")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        group_queries(data)
        group_queries(data, list_size=61)
    assert not [r for r in caplog.records if r.name == LOGGER]


@pytest.mark.parametrize("list_size", [0, -3])
def test_bad_list_size(list_size):
    with pytest.raises(ValueError):
        group_queries(parse_svmlight(SAMPLE / "vali.txt"), list_size=list_size)


# --------------------------------------------------------------------------------------------
# normalize
# --------------------------------------------------------------------------------------------


def _normalized_reference(data, L):
    """Per query, per feature: (x - min) / (max - min) over the kept docs; 0 if constant."""
    out = []
    for _, rows in _queries(data):
        x = data.features[rows[:L]]
        lo, hi = x.min(0), x.max(0)
        q = np.zeros_like(x)
        for d in range(x.shape[1]):
            if hi[d] > lo[d]:
                q[:, d] = (x[:, d] - lo[d]) / (hi[d] - lo[d])
        out.append(q)
    return out


def _check_normalized(data, batch):
    features, _, mask, _ = _as_numpy(batch)
    reference = _normalized_reference(data, batch.list_size)
    constant_seen = varying_seen = False
    for i, ref in enumerate(reference):
        n = len(ref)
        got = features[i, :n]
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
        assert got.min() >= 0.0 and got.max() <= 1.0
        assert not features[i, n:].any()
        x = data.features[_queries(data)[i][1][:n]]
        constant = x.max(0) == x.min(0)
        assert not got[:, constant].any()  # constant within the query -> 0
        constant_seen |= bool(constant.any())
        if n > 1 and (~constant).any():
            varying_seen = True
            # every varying feature reaches both 0 and 1
            np.testing.assert_allclose(got[:, ~constant].min(0), 0.0, atol=1e-6)
            np.testing.assert_allclose(got[:, ~constant].max(0), 1.0, atol=1e-6)
    assert constant_seen and varying_seen  # both branches were exercised


@pytest.mark.parametrize("name", ["train.txt.gz", "vali.txt", "test.txt.gz"])
def test_normalize_sample(name):
    data = parse_svmlight(SAMPLE / name)
    batch = group_queries(data, normalize=True)
    _check_normalized(data, batch)
    plain = group_queries(data)
    np.testing.assert_array_equal(np.asarray(batch.mask), np.asarray(plain.mask))
    np.testing.assert_array_equal(np.asarray(batch.labels), np.asarray(plain.labels))


def test_normalize_mslr_raw_features(shared_data):
    # MSLR features are raw (counts, BM25, ...), so normalisation changes them a lot.
    data = parse_svmlight(shared_data / "MSLR-WEB_Fold1_subset" / "msn1.fold1.train.5k.txt.gz")
    assert data.features.max() > 1.0
    batch = group_queries(data, normalize=True)
    _check_normalized(data, batch)


def test_normalize_after_truncation():
    data = parse_svmlight(SAMPLE / "test.txt.gz")
    batch = group_queries(data, list_size=16, normalize=True)
    _check_normalized(data, batch)


def test_normalize_per_query_by_hand():
    features = np.array(
        [
            [[1.0, 5.0, -2.0], [3.0, 5.0, 0.0], [2.0, 5.0, 2.0], [100.0, -7.0, 9.0]],  # last one is padding
            [[4.0, 4.0, 4.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],  # one document
        ]
    )
    mask = np.array([[True, True, True, False], [True, False, False, False]])
    got = normalize_per_query(features, mask)
    np.testing.assert_allclose(
        got,
        [
            [[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.5, 0.0, 1.0], [0.0, 0.0, 0.0]],
            [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
        ],
    )


def test_stack_batches_pads_queries_and_documents_with_masked_entries():
    from jaxrank.data import stack_batches
    from jaxrank.types import QueryBatch

    a = QueryBatch(np.ones((2, 3, 4), np.float32), np.ones((2, 3), np.float32), np.ones((2, 3), bool), np.array([5, 6]))
    b = QueryBatch(np.full((1, 5, 4), 2.0, np.float32), np.zeros((1, 5), np.float32), np.ones((1, 5), bool), np.array([7]))
    s = stack_batches([a, b])
    assert s.features.shape == (2, 2, 5, 4) and s.mask.shape == (2, 2, 5)
    np.testing.assert_array_equal(np.asarray(s.mask).sum(axis=(1, 2)), [6, 5])
    np.testing.assert_array_equal(np.asarray(s.qid), [[5, 6], [7, -1]])
    assert float(np.asarray(s.features)[0, :, 3:].sum()) == 0 and float(np.asarray(s.features)[1, 1].sum()) == 0
    with pytest.raises(ValueError, match="number of features"):
        stack_batches([a, b._replace(features=np.ones((1, 5, 3), np.float32))])
