"""The parsed-file cache shared by many processes, read-only or damaged: loads never fail, never
serve stale arrays, and repair what they find broken."""

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import jaxrank
from jaxrank.data import cache as cache_module
from jaxrank.data import load_fold, load_svmlight, parse_svmlight

SAMPLE = Path(__file__).resolve().parent / "data" / "MQ2008-mini" / "Fold1"
ROOT = Path(jaxrank.__file__).resolve().parents[1]  # the jaxrank the workers import: this one


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("JAXRANK_CACHE", str(folder))
    cache_module._unwritable_warned.clear()
    return folder


def _entries(folder: Path):
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "hashes.json")


def _forbid_parsing(monkeypatch):
    monkeypatch.setattr(cache_module, "parse_svmlight",
                        lambda *a, **k: pytest.fail("parsed again: expected a cache hit"))


def _write_letor(path: Path, num_queries: int, docs_per_query: int, seed: int) -> None:
    """A LETOR text file of ``num_queries`` queries with 46 features (big enough for writes to overlap)."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(num_queries):
        for _ in range(docs_per_query):
            values = " ".join(f"{i}:{v:.4f}" for i, v in enumerate(rng.random(46), start=1))
            lines.append(f"{rng.integers(0, 3)} qid:{q + 1} {values}")
    path.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- concurrent loads

_WORKER = textwrap.dedent("""
    import hashlib, json, os, random, sys, time
    from pathlib import Path
    from jaxrank.data import load_fold, load_svmlight

    me, processes, plan = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
    rng = random.Random(me)
    outcomes = []
    for trial, (cache, kind, source, stagger) in enumerate(plan):
        os.environ["JAXRANK_CACHE"] = cache
        barrier = Path(cache + ".ready")
        barrier.mkdir(parents=True, exist_ok=True)
        (barrier / str(me)).touch()
        while len(os.listdir(barrier)) < processes:  # start the trial's loads together
            time.sleep(0.001)
        if stagger:  # one load starts while another is parsing or writing
            time.sleep(rng.uniform(0.0, stagger))
        try:
            if kind == "fold":
                parts = load_fold(source, 1)
                arrays = [a for p in parts for a in (p.features, p.labels, p.offsets)]
            else:
                data = load_svmlight(source)
                arrays = [data.features, data.labels, data.qids]
            digest = hashlib.sha256(b"".join(a.tobytes() for a in arrays)).hexdigest()
            outcomes.append(["ok", digest])
        except BaseException as e:
            outcomes.append(["error", f"{type(e).__name__}: {e}"])
    print(json.dumps(outcomes))
""")


def _concurrent_loads(tmp_path, processes: int, trials: int) -> list[str]:
    """Runs ``processes`` workers × ``trials`` loads (half ``load_svmlight`` of one file, half
    ``load_fold``, started together or staggered), each trial into a fresh cache; returns the failures."""
    root = tmp_path / "letor"
    (root / "Fold1").mkdir(parents=True)
    for split, queries in (("train", 60), ("vali", 20), ("test", 20)):
        _write_letor(root / "Fold1" / f"{split}.txt", queries, 40, seed=len(split))
    single = root / "Fold1" / "train.txt"
    plan = [[str(tmp_path / f"cache{t}"), "fold" if t % 2 else "file", str(root if t % 2 else single),
             0.0 if t % 4 < 2 else 0.3] for t in range(trials)]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "JAX_PLATFORMS": "cpu"}
    workers = [subprocess.Popen([sys.executable, "-c", _WORKER, str(i), str(processes), json.dumps(plan)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
               for i in range(processes)]
    results = []
    for w in workers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    expected_file = parse_svmlight(single)
    failures = []
    for t, (cache, kind, source, _) in enumerate(plan):
        outcomes = [r[t] for r in results]
        failures += [f"trial {t} ({kind}): {o[1]}" for o in outcomes if o[0] != "ok"]
        digests = {o[1] for o in outcomes if o[0] == "ok"}
        if len(digests) > 1:
            failures.append(f"trial {t} ({kind}): processes got different arrays")
        cache = Path(cache)
        for entry in _entries(cache):  # every entry left behind is complete and right
            data = cache_module._read_entry(entry, keep_docids=False)
            if entry.name.startswith("train.txt.") and not np.array_equal(data.features, expected_file.features):
                failures.append(f"trial {t}: entry {entry.name} holds other arrays")
        if len(_entries(cache)) != (3 if kind == "fold" else 1):
            failures.append(f"trial {t}: entries {[e.name for e in _entries(cache)]}")
        leftovers = [p.name for p in cache.glob(".*.tmp")]
        if leftovers:
            failures.append(f"trial {t}: temporaries left {leftovers}")
    print(f"{processes} processes x {trials} trials: {len(failures)} failures")
    return failures


def test_concurrent_loads_into_one_cache_never_fail(tmp_path):
    assert _concurrent_loads(tmp_path, processes=3, trials=4) == []


@pytest.mark.slow
def test_many_concurrent_loads_into_one_cache_never_fail(tmp_path):
    assert _concurrent_loads(tmp_path, processes=8, trials=24) == []


# ---------------------------------------------------------------- stale data

def test_same_size_edit_with_restored_mtime_is_parsed_again(cache_dir, tmp_path, monkeypatch):
    """``touch -r``: an in-place edit of the same size with the old mtime put back. The ctime (which no
    user can set) changed, so the file is hashed again and the new values are served."""
    path = tmp_path / "f.txt"
    path.write_text("0 qid:1 1:0.5\n1 qid:1 2:0.5\n")
    old = path.stat()
    real_ns = cache_module.time.time_ns
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: real_ns() + 5 * 10**9)  # hashed well after writing
    assert load_svmlight(path).features[0, 0] == 0.5
    with open(path, "r+") as f:  # same inode, same size
        f.write("0 qid:1 1:0.7")
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert path.stat().st_size == old.st_size and path.stat().st_mtime_ns == old.st_mtime_ns
    assert path.stat().st_ino == old.st_ino
    assert load_svmlight(path).features[0, 0] == pytest.approx(0.7)


def test_file_replaced_by_another_with_the_same_stamp_is_parsed_again(cache_dir, tmp_path, monkeypatch):
    """A different file moved over the source with size and mtime copied: the inode differs."""
    path, other = tmp_path / "f.txt", tmp_path / "g.txt"
    path.write_text("0 qid:1 1:0.5\n1 qid:1 2:0.5\n")
    other.write_text("0 qid:1 1:0.9\n1 qid:1 2:0.5\n")
    real_ns = cache_module.time.time_ns
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: real_ns() + 5 * 10**9)
    load_svmlight(path)
    stat = path.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(other, path)
    assert load_svmlight(path).features[0, 0] == pytest.approx(0.9)


# ---------------------------------------------------------------- unwritable cache

@pytest.fixture
def read_only(monkeypatch):
    """Makes a folder read-only: ``chmod`` (enough for a normal user) and, since root ignores modes, the
    creating and renaming calls inside it fail with ``PermissionError`` as on a read-only mount."""
    folders = []

    def inside(p) -> bool:
        return any(Path(os.fspath(p)).resolve().is_relative_to(f) for f in folders)

    def guard(fn, creates=lambda *a, **k: True):
        def guarded(path, *args, **kwargs):
            if inside(path) and creates(path, *args, **kwargs):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return fn(path, *args, **kwargs)
        return guarded

    writes = lambda path, flags, *a, **k: bool(flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR))  # noqa: E731
    for name in ("mkdir", "rename", "replace", "unlink", "rmdir"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    monkeypatch.setattr(os, "open", guard(os.open, writes))

    def make(folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        folders.append(folder.resolve())
        for p in [folder, *folder.rglob("*")]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        return folder

    yield make
    monkeypatch.undo()
    for f in folders:
        for p in [f, *f.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_cold_read_only_cache_parses_with_one_warning(cache_dir, read_only):
    read_only(cache_dir)
    with pytest.warns(UserWarning, match=f"cache {cache_dir} cannot be written") as caught:
        data = load_svmlight(SAMPLE / "vali.txt")
        parts = load_fold(SAMPLE.parent, 1)
    assert len([w for w in caught if "cannot be written" in str(w.message)]) == 1
    np.testing.assert_array_equal(data.features, parse_svmlight(SAMPLE / "vali.txt").features)
    assert parts[1].num_documents == data.features.shape[0]
    assert list(cache_dir.iterdir()) == []


def test_warm_read_only_cache_serves_entries_after_a_touch(cache_dir, read_only, tmp_path, monkeypatch):
    source = tmp_path / "vali.txt"
    source.write_bytes((SAMPLE / "vali.txt").read_bytes())
    first = load_svmlight(source)
    read_only(cache_dir)
    os.utime(source, ns=(10**9, 10**9))  # hashed again: the new stamp cannot be recorded
    _forbid_parsing(monkeypatch)
    with pytest.warns(UserWarning, match=f"cache {cache_dir} cannot be written"):
        again = load_svmlight(source)
    np.testing.assert_array_equal(again.features, first.features)


# ---------------------------------------------------------------- damaged cache

def _record(**fields):
    good = {"size": 1, "mtime_ns": 1, "ctime_ns": 1, "inode": 1, "sha256": "0" * 64, "hashed_ns": 1}
    return {**good, **fields}


@pytest.mark.parametrize("index", [
    {"SOURCE": _record(size="big")},
    {"SOURCE": _record(sha256=12345)},
    {"SOURCE": _record(hashed_ns=None)},
    {"SOURCE": [1, 2, "x", "y"]},
    {"SOURCE": [1, 2, 3, 4]},
    ["not", "an", "object"],
    "text",
], ids=["size_str", "digest_int", "time_none", "old_list_str", "old_list_int", "list", "str"])
def test_malformed_hashes_json_is_rebuilt(cache_dir, tmp_path, monkeypatch, index):
    source = tmp_path / "vali.txt"
    source.write_bytes((SAMPLE / "vali.txt").read_bytes())
    load_svmlight(source)
    text = json.dumps(index).replace("SOURCE", str(source.resolve()))
    (cache_dir / "hashes.json").write_text(text)
    with pytest.warns(UserWarning, match="hashes.json is damaged.*rebuilding"):
        load_svmlight(source)
    assert str(source.resolve()) in json.loads((cache_dir / "hashes.json").read_text())
    _forbid_parsing(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # repaired: no warning any more
        load_svmlight(source)


def test_directory_in_place_of_hashes_json_is_rebuilt(cache_dir):
    load_svmlight(SAMPLE / "vali.txt")
    (cache_dir / "hashes.json").unlink()
    (cache_dir / "hashes.json").mkdir()
    (cache_dir / "hashes.json" / "junk").write_text("x")
    with pytest.warns(UserWarning, match="hashes.json is damaged.*rebuilding"):
        load_svmlight(SAMPLE / "vali.txt")
    assert (cache_dir / "hashes.json").is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_svmlight(SAMPLE / "vali.txt")


@pytest.mark.parametrize("damage", ["file", "nested_folder"])
def test_entry_replaced_by_a_file_is_rebuilt(cache_dir, monkeypatch, damage):
    first = load_svmlight(SAMPLE / "vali.txt")
    (entry,) = _entries(cache_dir)
    for p in entry.iterdir():
        p.unlink()
    entry.rmdir()
    if damage == "file":
        entry.write_text("not a folder")
    else:
        (entry / "features.npy").mkdir(parents=True)
    with pytest.warns(UserWarning, match="cannot be read.*parsing the file again"):
        again = load_svmlight(SAMPLE / "vali.txt")
    np.testing.assert_array_equal(again.features, first.features)
    assert entry.is_dir() and (entry / "features.npy").is_file()
    _forbid_parsing(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(load_svmlight(SAMPLE / "vali.txt").features, first.features)
