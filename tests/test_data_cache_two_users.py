"""Two users share one parsed-file cache folder: a group folder (mode ``2775``) and a sticky one
(``1777``). The second user's load of a file the first cached is a hit, with no warning.

The second user is a subprocess that imports jaxrank as root, then drops to an unprivileged uid
(``nobody``, 65534) whose groups hold the folder's group; so these tests need root."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import pytest

import jaxrank
from jaxrank.data import cache as cache_module
from jaxrank.data import load_svmlight

SAMPLE = Path(__file__).resolve().parent / "data" / "MQ2008-mini" / "Fold1"
ROOT = Path(jaxrank.__file__).resolve().parents[1]
OTHER_UID, GROUP = 65534, 100

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="switching to a second uid needs root")

_SECOND_USER = textwrap.dedent("""
    import json, os, sys, warnings
    from jaxrank.data import cache as cache_module, load_svmlight
    parsed = []
    real_parse = cache_module.parse_svmlight
    cache_module.parse_svmlight = lambda *a, **k: parsed.append(1) or real_parse(*a, **k)
    uid, gid, umask = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3], 8)
    os.setgroups([gid]); os.setgid(gid); os.setuid(uid); os.umask(umask)
    report = []
    for source in sys.argv[4:]:
        parsed.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = load_svmlight(source)
        report.append({"parsed": len(parsed), "warnings": [str(w.message) for w in caught],
                       "rows": int(data.labels.shape[0])})
    print(json.dumps(report))
""")


def _as_second_user(*sources, umask=0o002):
    """Loads ``sources`` in turn as uid ``OTHER_UID``; per load: times parsed, warnings, rows."""
    out = subprocess.run([sys.executable, "-c", _SECOND_USER, str(OTHER_UID), str(GROUP), oct(umask)]
                         + [str(s) for s in sources], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def shared(monkeypatch):
    """A world-readable base (pytest's own tmp is private to root) with two LETOR files."""
    base = Path(tempfile.mkdtemp(prefix="jaxrank-shared-cache-"))
    old = os.umask(0o002)
    try:
        os.chmod(base, 0o755)
        lines = (SAMPLE / "vali.txt").read_text().splitlines(keepends=True)
        (base / "vali.txt").write_text("".join(lines))
        (base / "other.txt").write_text("".join(lines[: len(lines) // 2]))
        for name in ("vali.txt", "other.txt"):
            os.chmod(base / name, 0o644)
        cache_module._unwritable_warned.clear()
        yield base
    finally:
        os.umask(old)
        shutil.rmtree(base, ignore_errors=True)


def _cache_folder(base: Path, monkeypatch, mode: int) -> Path:
    folder = base / "cache"
    folder.mkdir()
    os.chown(folder, 0, GROUP)
    os.chmod(folder, mode)
    monkeypatch.setenv("JAXRANK_CACHE", str(folder))
    return folder


def test_group_folder_second_user_hits_without_warning(shared, monkeypatch):
    folder = _cache_folder(shared, monkeypatch, 0o2775)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = load_svmlight(shared / "vali.txt")  # the first user (root) parses and caches
    (entry,) = [p for p in folder.iterdir() if p.name.startswith("vali.txt.")]
    for path in [entry, *entry.iterdir(), folder / "hashes.json"]:
        info = path.stat()
        assert info.st_gid == GROUP, f"{path} lost the folder's group"
        assert info.st_mode & 0o060 == 0o060, f"{path} is {oct(info.st_mode)}: not group read-write"
    assert entry.stat().st_mode & stat.S_ISGID, "the entry folder lost the setgid bit"

    hit, new = _as_second_user(shared / "vali.txt", shared / "other.txt")
    assert hit == {"parsed": 0, "warnings": [], "rows": first.labels.shape[0]}
    assert new["parsed"] == 1 and new["warnings"] == []  # the second user caches, and records its hash
    assert str((shared / "other.txt").resolve()) in json.loads((folder / "hashes.json").read_text())
    (again,) = _as_second_user(shared / "other.txt")
    assert again["parsed"] == 0 and again["warnings"] == []


def test_sticky_folder_second_user_hits_and_caches_without_warning(shared, monkeypatch):
    folder = _cache_folder(shared, monkeypatch, 0o1777)
    os.umask(0o022)
    first = load_svmlight(shared / "vali.txt")
    hit, new = _as_second_user(shared / "vali.txt", shared / "other.txt", umask=0o022)
    assert hit == {"parsed": 0, "warnings": [], "rows": first.labels.shape[0]}
    assert new["parsed"] == 1 and new["warnings"] == []
    own_index = folder / f"hashes.{OTHER_UID}.json"  # it may not replace root's hashes.json
    assert str((shared / "other.txt").resolve()) in json.loads(own_index.read_text())
    hits = _as_second_user(shared / "vali.txt", shared / "other.txt", umask=0o022)
    assert [h["parsed"] for h in hits] == [0, 0] and all(h["warnings"] == [] for h in hits)
