"""Tests for ``jaxrank.data.letor`` (``load_fold``, ``load_queries``, ``split_file``) and name resolution."""

import gzip
import itertools
from pathlib import Path

import numpy as np
import pytest

from jaxrank.data import bucket_size, load_fold, load_queries, split_file

TEST_DATA = Path(__file__).resolve().parent / "data"
SAMPLE_ROOT = TEST_DATA / "MQ2008-mini"
SAMPLE = SAMPLE_ROOT / "Fold1"
SAMPLE_FILES = {"train": "train.txt.gz", "vali": "vali.txt", "test": "test.txt.gz"}


def _text_query_sizes(path):
    """Documents per query read from the text with plain string ops, in file order."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        qids = [line.split()[1] for line in f if line.strip() and not line.startswith("#")]
    return [len(list(g)) for _, g in itertools.groupby(qids)]


def _np(batch):
    return tuple(np.asarray(x) for x in batch)


def _check_fold(batches, sizes, num_features):
    """sizes: {split: [docs per query]} read from text."""
    L = bucket_size(max(max(s) for s in sizes.values()))
    for batch, split in zip(batches, ("train", "vali", "test")):
        features, labels, mask, qid = _np(batch)
        assert features.shape == (len(sizes[split]), L, num_features), split
        np.testing.assert_array_equal(mask.sum(1), np.minimum(sizes[split], L))
        assert not features[~mask].any() and not labels[~mask].any()


def _check_ragged_equals_dense(ragged, dense):
    """The ragged layout holds the dense layout's real documents, in order, with the same query ids."""
    for r, d in zip(ragged, dense):
        mask = np.asarray(d.mask)
        np.testing.assert_array_equal(r.lengths, mask.sum(1))
        np.testing.assert_array_equal(r.features, np.asarray(d.features)[mask])
        np.testing.assert_array_equal(r.labels, np.asarray(d.labels)[mask])
        np.testing.assert_array_equal(r.qid, d.qid)
        assert r.features.dtype == np.float32 and r.offsets[0] == 0 and r.offsets[-1] == r.num_documents


def test_load_fold_sample():
    batches = load_fold(SAMPLE_ROOT, 1, layout="dense")
    _check_ragged_equals_dense(load_fold(SAMPLE_ROOT, 1), batches)
    assert len(batches) == 3
    sizes = {s: _text_query_sizes(SAMPLE / f) for s, f in SAMPLE_FILES.items()}
    # tests/data/README.md: 4 queries / 32 lines, 2 / 23, 2 / 69.
    assert [len(sizes[s]) for s in SAMPLE_FILES] == [4, 2, 2]
    assert [sum(sizes[s]) for s in SAMPLE_FILES] == [32, 23, 69]
    _check_fold(batches, sizes, 46)
    assert {b.list_size for b in batches} == {64}  # the longest query (61 docs, test) sets L
    assert {b.num_features for b in batches} == {46}
    train, vali, test = batches
    np.testing.assert_array_equal(np.asarray(train.qid), [10002, 10032, 10035, 10036])
    np.testing.assert_array_equal(np.asarray(vali.qid), [15928, 15948])
    np.testing.assert_array_equal(np.asarray(test.qid), [18219, 18230])


def test_load_fold_sample_options():
    train, vali, test = load_fold(SAMPLE_ROOT, fold=1, layout="dense", list_size=32, normalize=True, cache=False)
    assert {b.list_size for b in (train, vali, test)} == {32}
    np.testing.assert_array_equal(np.asarray(test.mask).sum(1), [8, 32])  # the 61-document query is cut to 32
    for b in (train, vali, test):
        f = np.asarray(b.features)
        assert f.min() >= 0.0 and f.max() <= 1.0
    # per-query min-max over all of a query's documents: every varying feature reaches 0 and 1
    for q in load_fold(SAMPLE_ROOT, fold=1, normalize=True, cache=False):
        for start, end in zip(q.offsets[:-1], q.offsets[1:]):
            x = q.features[start:end]
            varying = x.max(0) > x.min(0)
            np.testing.assert_allclose(x[:, varying].max(0), 1.0, atol=1e-6)
            np.testing.assert_allclose(x[:, varying].min(0), 0.0, atol=1e-6)
            assert not x[:, ~varying].any()


def test_load_fold_mq2008_fold1(shared_data):
    root = shared_data / "MQ2008"
    batches = load_fold(root, 1, layout="dense")
    _check_ragged_equals_dense(load_fold(root, 1), batches)
    folder = root / "Fold1"
    sizes = {s: _text_query_sizes(folder / f"{s}.txt.gz") for s in ("train", "vali", "test")}
    # Data README: train 471 queries / 9630 docs, vali 157 / 2707, test 156 / 2874.
    expected = {"train": (471, 9630), "vali": (157, 2707), "test": (156, 2874)}
    for split, (num_queries, num_docs) in expected.items():
        assert (len(sizes[split]), sum(sizes[split])) == (num_queries, num_docs)
    _check_fold(batches, sizes, 46)
    train, vali, test = batches
    assert train.list_size == vali.list_size == test.list_size == 128
    assert [b.num_queries for b in batches] == [471, 157, 156]
    assert [int(np.asarray(b.mask).sum()) for b in batches] == [9630, 2707, 2874]
    # Label histograms from the data README (0:7820 1:1223 2:587 for Fold1 train).
    labels, mask = np.asarray(train.labels), np.asarray(train.mask)
    np.testing.assert_array_equal(np.bincount(labels[mask].astype(int)), [7820, 1223, 587])
    labels, mask = np.asarray(test.labels), np.asarray(test.mask)
    np.testing.assert_array_equal(np.bincount(labels[mask].astype(int)), [2319, 378, 177])


def test_load_fold_by_name_via_env_sample(monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(TEST_DATA))
    by_name = load_fold("MQ2008-mini", fold=1)
    by_path = load_fold(SAMPLE_ROOT, fold=1)
    for a, b in zip(by_name, by_path):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    vali = load_queries("MQ2008-mini/Fold1/vali.txt")
    assert vali.num_queries == 2 and vali.num_documents == 23
    dense = load_queries("MQ2008-mini/Fold1/vali.txt", layout="dense")
    assert dense.features.shape == (2, 16, 46) and int(np.asarray(dense.mask).sum()) == 23


def test_load_fold_by_name_via_env_shared(shared_data, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(shared_data))
    train, vali, test = load_fold("MQ2008", fold=1)
    assert [b.num_queries for b in (train, vali, test)] == [471, 157, 156]
    batch = load_queries("MQ2008/Fold1/vali.txt.gz")
    assert batch.num_queries == 157 and batch.num_documents == 2707
    lgb = load_queries("LightGBM_lambdarank/rank.test.gz")
    sizes = [int(s) for s in (shared_data / "LightGBM_lambdarank" / "rank.test.query").read_text().split()]
    np.testing.assert_array_equal(lgb.lengths, sizes)


def test_missing_dataset_mentions_env(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="JAXRANK_DATA"):
        load_fold("NoSuchDataset", 1)
    with pytest.raises(FileNotFoundError, match="JAXRANK_DATA"):
        load_queries("NoSuchDataset/train.txt")


def test_missing_dataset_with_unset_env(tmp_path, monkeypatch):
    monkeypatch.delenv("JAXRANK_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.raises(FileNotFoundError, match="JAXRANK_DATA"):
        load_fold("NoSuchDataset", 1)


def test_missing_fold(tmp_path):
    with pytest.raises(FileNotFoundError, match="Fold2"):
        load_fold(SAMPLE_ROOT, 2)


def test_missing_split(tmp_path):
    folder = tmp_path / "set" / "Fold1"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("0 qid:1 1:0.5\n")
    (folder / "test.txt").write_text("0 qid:2 1:0.5\n")
    with pytest.raises(FileNotFoundError, match="vali"):
        load_fold(tmp_path / "set", 1)


def test_split_file_names(tmp_path):
    (tmp_path / "train.txt").write_text("")
    (tmp_path / "vali.txt.gz").write_bytes(b"")
    (tmp_path / "test").write_text("")
    assert split_file(tmp_path, "train") == tmp_path / "train.txt"
    assert split_file(tmp_path, "vali") == tmp_path / "vali.txt.gz"
    assert split_file(tmp_path, "test") == tmp_path / "test"
    (tmp_path / "test.txt").write_text("")
    assert split_file(tmp_path, "test") == tmp_path / "test.txt"  # .txt first
    with pytest.raises(FileNotFoundError, match="no 'other' file in .*other.txt and other.txt.gz"):
        split_file(tmp_path, "other")
    assert split_file(SAMPLE, "vali") == SAMPLE / "vali.txt"
    assert split_file(SAMPLE, "test") == SAMPLE / "test.txt.gz"


def test_fold_with_different_max_feature_index(tmp_path):
    # The text of one split may not mention a trailing feature; D must still be shared.
    folder = tmp_path / "set" / "Fold3"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("1 qid:1 1:0.5 5:2\n0 qid:1 2:1\n")
    (folder / "vali.txt").write_text("0 qid:2 3:1\n1 qid:3 1:4\n")
    with gzip.open(folder / "test.txt.gz", "wt") as f:
        f.write("2 qid:4 4:0.25\n")
    assert {b.num_features for b in load_fold(tmp_path / "set", 3)} == {5}
    train, vali, test = load_fold(tmp_path / "set", 3, layout="dense")
    assert {b.num_features for b in (train, vali, test)} == {5}
    assert {b.list_size for b in (train, vali, test)} == {8}
    np.testing.assert_array_equal(np.asarray(vali.features)[:, 0, :], [[0, 0, 1, 0, 0], [4, 0, 0, 0, 0]])
    np.testing.assert_array_equal(np.asarray(test.features)[0, 0], [0, 0, 0, 0.25, 0])
    np.testing.assert_array_equal(np.asarray(train.features)[0, :2], [[0.5, 0, 0, 0, 2], [0, 1, 0, 0, 0]])
    np.testing.assert_array_equal(np.asarray(test.labels)[0, :2], [2, 0])


def test_load_fold_bad_split_names_the_file(tmp_path):
    folder = tmp_path / "set" / "Fold1"
    folder.mkdir(parents=True)
    (folder / "train.txt").write_text("0 qid:1 1:0.5\n")
    (folder / "vali.txt").write_text("0 qid:2 1:0.5\n0 qid:2 1:zz\n")
    (folder / "test.txt").write_text("0 qid:3 1:0.5\n")
    with pytest.raises(ValueError, match=r"vali\.txt, line 2"):
        load_fold(tmp_path / "set", 1)


def test_bad_layout_is_rejected():
    with pytest.raises(ValueError, match="layout must be 'ragged'.*got 'padded'"):
        load_fold(SAMPLE_ROOT, 1, layout="padded")
