"""Tests for ``jaxrank.data.cache`` (``load_svmlight``): hits, keys, atomic entries, no entry on failure."""

import gzip
import io
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import jaxrank.data
from jaxrank.data import cache as cache_module
from jaxrank.data import load_svmlight, parse_svmlight

SAMPLE = Path(__file__).resolve().parent / "data" / "MQ2008-mini" / "Fold1"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A cache folder of this test's own (the autouse one is shared by the session)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("JAXRANK_CACHE", str(folder))
    return folder


@pytest.fixture
def parse_calls(monkeypatch):
    """Counts the parses ``load_svmlight`` does (a cache hit does none)."""
    calls = []

    def counting(path, **kwargs):
        calls.append(Path(path))
        return parse_svmlight(path, **kwargs)

    monkeypatch.setattr(cache_module, "parse_svmlight", counting)
    return calls


def _forbid_parsing(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("parse_svmlight called: expected a cache hit")

    monkeypatch.setattr(cache_module, "parse_svmlight", fail)


def _entries(folder: Path):
    """Cache entries: one folder of .npy arrays per parsed source and option set."""
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) if folder.exists() else []


def _all_files(folder: Path):
    return sorted(os.listdir(folder)) if folder.exists() else []


def _assert_same(a, b):
    for name in ("features", "labels", "qids"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    if a.docids is None or b.docids is None:
        assert a.docids is None and b.docids is None
    else:
        assert a.docids.tolist() == b.docids.tolist()


@pytest.fixture
def sample_copy(tmp_path):
    path = tmp_path / "train.txt.gz"
    shutil.copyfile(SAMPLE / "train.txt.gz", path)
    return path


def test_second_load_is_served_from_cache(cache_dir, sample_copy, monkeypatch):
    first = load_svmlight(sample_copy)
    _assert_same(first, parse_svmlight(sample_copy))
    assert len(_entries(cache_dir)) == 1
    _forbid_parsing(monkeypatch)
    second = load_svmlight(sample_copy)
    _assert_same(first, second)
    assert second.docids is None
    # Also through the package namespace.
    _assert_same(first, jaxrank.data.load_svmlight(sample_copy))


def test_docids_round_trip_through_cache(cache_dir, sample_copy, monkeypatch):
    first = load_svmlight(sample_copy, keep_docids=True)
    assert first.docids[0] == "GX008-86-4444840"
    _forbid_parsing(monkeypatch)
    second = load_svmlight(sample_copy, keep_docids=True)
    _assert_same(first, second)


def test_touching_the_file_keeps_the_entry(cache_dir, sample_copy, monkeypatch):
    load_svmlight(sample_copy)
    os.utime(sample_copy, (1, 1))  # the key is the content, not the mtime
    _forbid_parsing(monkeypatch)
    load_svmlight(sample_copy)
    assert len(_entries(cache_dir)) == 1


def test_changed_content_is_parsed_again(cache_dir, tmp_path, parse_calls):
    path = tmp_path / "f.txt"
    path.write_text("0 qid:1 1:0.5\n1 qid:1 2:0.5\n")
    first = load_svmlight(path)
    assert len(parse_calls) == 1
    load_svmlight(path)
    assert len(parse_calls) == 1
    path.write_text("0 qid:1 1:0.75\n1 qid:1 2:0.5\n")  # same size, one value changed
    second = load_svmlight(path)
    assert len(parse_calls) == 2
    assert first.features[0, 0] == 0.5 and second.features[0, 0] == 0.75
    assert len(_entries(cache_dir)) == 2
    _assert_same(second, load_svmlight(path))
    assert len(parse_calls) == 2


def test_changed_query_file_is_parsed_again(cache_dir, tmp_path, parse_calls):
    path = tmp_path / "lgb.txt"
    path.write_text("0 1:0.5\n1 2:0.5\n2 1:0.25\n")
    query = tmp_path / "lgb.txt.query"
    query.write_text("3\n")
    first = load_svmlight(path)
    query.write_text("1\n2\n")
    second = load_svmlight(path)
    assert len(parse_calls) == 2
    assert len(np.unique(first.qids)) == 1 and len(np.unique(second.qids)) == 2
    _assert_same(second, load_svmlight(path))
    assert len(parse_calls) == 2


@pytest.mark.parametrize(
    "options_a,options_b",
    [
        ({}, {"num_features": 50}),
        ({"num_features": 46}, {"num_features": 50}),
        ({}, {"keep_docids": True}),
        ({"num_features": 50}, {"num_features": 50, "keep_docids": True}),
    ],
)
def test_options_are_part_of_the_key(cache_dir, sample_copy, parse_calls, options_a, options_b):
    a = load_svmlight(sample_copy, **options_a)
    b = load_svmlight(sample_copy, **options_b)
    assert len(parse_calls) == 2
    assert len(_entries(cache_dir)) == 2
    assert a.features.shape[1] == options_a.get("num_features", 46)
    assert b.features.shape[1] == options_b.get("num_features", 46)
    assert (a.docids is None) != options_a.get("keep_docids", False)
    assert (b.docids is None) != options_b.get("keep_docids", False)
    # Each option set now hits its own entry.
    _assert_same(a, load_svmlight(sample_copy, **options_a))
    _assert_same(b, load_svmlight(sample_copy, **options_b))
    assert len(parse_calls) == 2


def test_cache_false_writes_nothing(cache_dir, sample_copy, parse_calls):
    load_svmlight(sample_copy, cache=False)
    load_svmlight(sample_copy, cache=False)
    assert len(parse_calls) == 2
    assert _all_files(cache_dir) == []


def test_no_temporary_files_left(cache_dir, sample_copy):
    load_svmlight(sample_copy)
    load_svmlight(sample_copy, keep_docids=True)
    load_svmlight(sample_copy)
    load_svmlight(SAMPLE / "vali.txt")
    files = _all_files(cache_dir)
    assert len(_entries(cache_dir)) == 3 and sorted(set(files) - set(_entries(cache_dir))) == ["hashes.json"]
    assert not any(name.startswith(".") for name in files), files


def test_entries_are_folders_of_plain_npy_arrays(cache_dir, sample_copy):
    data = load_svmlight(sample_copy, keep_docids=True)
    (name,) = _entries(cache_dir)
    entry = cache_dir / name
    assert name.startswith("train.txt.gz.")
    assert sorted(p.name for p in entry.iterdir()) == ["docids.npy", "features.npy", "labels.npy", "qids.npy"]
    np.testing.assert_array_equal(np.load(entry / "features.npy"), data.features)
    assert np.load(entry / "features.npy").dtype == np.float32
    assert np.load(entry / "docids.npy").tolist() == data.docids.tolist()


def test_untouched_source_is_not_hashed_again(cache_dir, sample_copy, monkeypatch):
    """The source's hash is reused while its stamp is the one recorded and it was hashed over a second
    after its last change; a touched file is hashed again and still hits its entry."""
    from jaxrank.data import cache as cache_mod

    real_ns, real_sha256 = cache_mod.time.time_ns, cache_mod._sha256
    monkeypatch.setattr(cache_mod.time, "time_ns", lambda: real_ns() + 2 * 10**9)  # hashed 2 s after the copy
    load_svmlight(sample_copy)
    monkeypatch.setattr(cache_mod, "_sha256", lambda p: pytest.fail("hashed again"))
    _forbid_parsing(monkeypatch)
    load_svmlight(sample_copy)
    calls = []
    monkeypatch.setattr(cache_mod, "_sha256", lambda p: calls.append(p) or real_sha256(p))
    os.utime(sample_copy, ns=(2 * 10**9, 2 * 10**9))
    load_svmlight(sample_copy)  # hashed again, then served from the same entry (parsing is forbidden)
    assert calls == [sample_copy.resolve()] or calls == [sample_copy]
    assert len(_entries(cache_dir)) == 1


BAD_FILES = {
    "bad_label": "0 qid:1 1:0.5\nx qid:1 1:0.5\n",
    "noncontiguous": "0 qid:1 1:0.5\n0 qid:2 1:0.5\n0 qid:1 1:0.5\n",
    "bad_feature": "0 qid:1 1:0.5\n0 qid:1 0:0.5\n",
    "nan_value": "0 qid:1 1:nan\n",
    "empty": "# nothing\n",
    "lightgbm_no_query": "0 1:0.5\n",
}


@pytest.mark.parametrize("case", list(BAD_FILES))
@pytest.mark.parametrize("gz", [False, True], ids=["txt", "gz"])
def test_failed_parse_caches_nothing(cache_dir, tmp_path, case, gz):
    path = tmp_path / ("bad.txt.gz" if gz else "bad.txt")
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(BAD_FILES[case])
    else:
        path.write_text(BAD_FILES[case])
    for keep_docids in (False, True):
        with pytest.raises(ValueError, match="bad.txt"):
            jaxrank.data.load_svmlight(path, cache=True, keep_docids=keep_docids)
    assert _entries(cache_dir) == []
    assert _all_files(cache_dir) == []


def test_failed_query_sizes_cache_nothing(cache_dir, tmp_path):
    path = tmp_path / "lgb.txt"
    path.write_text("0 1:0.5\n1 1:0.5\n")
    (tmp_path / "lgb.txt.query").write_text("5\n")
    with pytest.raises(ValueError, match="sum"):
        load_svmlight(path)
    assert _all_files(cache_dir) == []


def test_cache_dir_follows_env(tmp_path, monkeypatch, sample_copy):
    folder = tmp_path / "elsewhere" / "nested"
    monkeypatch.setenv("JAXRANK_CACHE", str(folder))
    assert jaxrank.data.cache_dir() == folder
    load_svmlight(sample_copy)
    assert len(_entries(folder)) == 1


@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing_array", "wrong_shape", "fortran_order"])
def test_unreadable_entry_is_parsed_again_with_a_warning(cache_dir, parse_calls, damage):
    path = SAMPLE / "vali.txt"
    first = load_svmlight(path)
    (name,) = _entries(cache_dir)
    features = cache_dir / name / "features.npy"
    if damage == "truncated":
        features.write_bytes(features.read_bytes()[: features.stat().st_size // 2])
    elif damage == "garbage":
        features.write_bytes(b"not an npy file at all")
    elif damage == "missing_array":
        (cache_dir / name / "qids.npy").unlink()
    elif damage == "fortran_order":
        np.save(features, np.asfortranarray(first.features))
    else:
        np.save(features, first.features[:3])
    with pytest.warns(UserWarning, match="cannot be read"):
        again = load_svmlight(path)
    _assert_same(again, first)
    assert len(parse_calls) == 2
    _assert_same(load_svmlight(path), first)  # the entry was replaced: a hit now
    assert len(parse_calls) == 2


def test_only_dead_temporaries_are_removed(cache_dir):
    """A temporary of an exited process of this host, or one untouched for ``STALE_SECONDS``, goes;
    a live writer's (this process's) stays."""
    from jaxrank.data import atomic

    cache_dir.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    stale_file = cache_dir / f".hashes.json.pid{dead_pid}@{atomic.HOST}.k3j2.tmp"
    stale_file.write_bytes(b"half a write")
    stale_entry = cache_dir / ".vali.txt.abc.k3j2.tmp"  # untagged and old
    stale_entry.mkdir()
    (stale_entry / "features.npy").write_bytes(b"half")
    for p in (stale_entry / "features.npy", stale_entry):
        os.utime(p, (1, 1))
    live = cache_dir / f"{atomic.temporary_prefix('train.txt.abc')}x1y2.tmp"
    live.mkdir()
    (live / "features.npy").write_bytes(b"being written")
    load_svmlight(SAMPLE / "vali.txt")
    assert not stale_file.exists() and not stale_entry.exists()
    assert live.exists() and (live / "features.npy").read_bytes() == b"being written"


def test_entries_store_float32(cache_dir):
    load_svmlight(SAMPLE / "vali.txt")
    (name,) = _entries(cache_dir)
    assert np.load(cache_dir / name / "features.npy").dtype == np.float32
    assert np.load(cache_dir / name / "labels.npy").dtype == np.float32
    assert np.load(cache_dir / name / "qids.npy").dtype == np.int64


def test_cached_arrays_are_aligned_and_writable(cache_dir):
    first = load_svmlight(SAMPLE / "vali.txt")
    again = load_svmlight(SAMPLE / "vali.txt")  # from the entry
    _assert_same(again, first)
    for name in ("features", "labels", "qids"):
        array = getattr(again, name)
        assert array.ctypes.data % 64 == 0 and array.flags.writeable and array.flags.c_contiguous, name


def test_entry_header_claiming_a_huge_shape_is_repaired_before_allocating(cache_dir, parse_calls, monkeypatch):
    """A corrupted ``.npy`` header claiming 10^15 rows is caught from the file size, before any
    buffer is allocated: one warning line naming the entry, the file parsed again, the entry rewritten."""
    path = SAMPLE / "vali.txt"
    first = load_svmlight(path)
    (name,) = _entries(cache_dir)
    features = cache_dir / name / "features.npy"
    with open(features, "rb") as f:
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        data = f.read()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                  "shape": (10 ** 15, first.features.shape[1])})
    features.write_bytes(header.getvalue() + data)
    real_empty = np.empty
    monkeypatch.setattr(np, "empty", lambda n, *a, **k: real_empty(n, *a, **k) if np.prod(n) < 1 << 40
                        else pytest.fail(f"allocated {n} bytes for a corrupted header"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = load_svmlight(path)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "\n" not in messages[0], messages
    assert re.search(rf"features\.npy .*header claims shape \({10 ** 15}, .*parsing the file again", messages[0])
    _assert_same(again, first)
    assert len(parse_calls) == 2
    _assert_same(load_svmlight(path), first)  # repaired: a hit now
    assert len(parse_calls) == 2


def test_docids_header_claiming_a_huge_shape_is_repaired_before_allocating(cache_dir, parse_calls, monkeypatch):
    """The docids entry is read with the same header check as the arrays: a header claiming 10^15
    docids is one warning line naming the file, a parse and a rewritten entry, never an allocation."""
    path = SAMPLE / "vali.txt"
    first = load_svmlight(path, keep_docids=True)
    (name,) = _entries(cache_dir)
    docids = cache_dir / name / "docids.npy"
    with open(docids, "rb") as f:
        np.lib.format.read_magic(f)
        descr = np.lib.format.read_array_header_1_0(f)[2]
        data = f.read()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": np.lib.format.dtype_to_descr(descr), "fortran_order": False,
                                                  "shape": (10 ** 15,)})
    docids.write_bytes(header.getvalue() + data)
    real_empty = np.empty
    monkeypatch.setattr(np, "empty", lambda n, *a, **k: real_empty(n, *a, **k) if np.prod(n) < 1 << 40
                        else pytest.fail(f"allocated {n} bytes for a corrupted header"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = load_svmlight(path, keep_docids=True)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "\n" not in messages[0], messages
    assert re.search(rf"docids\.npy .*header claims shape \({10 ** 15},\).*parsing the file again", messages[0])
    _assert_same(again, first)
    assert len(parse_calls) == 2
    _assert_same(load_svmlight(path, keep_docids=True), first)  # repaired: a hit now
    assert len(parse_calls) == 2
