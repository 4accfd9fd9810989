"""A cache of parsed files: one folder of ``.npy`` arrays per source, keyed by the source bytes'
SHA-256 and the parse options.

A second load of an unchanged file skips text parsing: it reads the float32 arrays back at disk
speed (``.npy`` files, no zip layer: MSLR-WEB30K's 2 GB of features in seconds). The source's hash
is remembered with its size and modification time (``hashes.json``), so an untouched file is not
hashed again; a touched or rewritten one is. Entries are written to a temporary folder renamed
into place, and only after a successful parse, so a malformed file never leaves anything behind.
An entry that cannot be read back (truncated, corrupt, from an older format) is parsed again, with
a warning, and replaced; temporaries left by an interrupted write are removed on the next load.
"""

import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data import atomic, locations
from jaxrank.data.svmlight import SVMLightData, _default_query_file, parse_svmlight

_FORMAT = "svmlight-v3"  # bump when the parser's output changes (v3: float32, labels < 128, .npy folders)
_FIELDS = ("features", "labels", "qids")
_HASHES = "hashes.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            h.update(block)
    return h.hexdigest()


def _read_hashes(folder: Path) -> dict:
    try:
        index = json.loads((folder / _HASHES).read_text())
    except (OSError, ValueError):
        return {}
    return index if isinstance(index, dict) else {}


def _source_digest(path: Path, index: dict) -> str:
    """The source's SHA-256, taken from ``index`` while its size and mtime are those recorded and the
    file had not changed for a second when it was hashed (a write in the same clock tick as the
    hashing could otherwise go unseen); else computed, and recorded in ``index``."""
    stat = path.stat()
    stamp = [stat.st_size, stat.st_mtime_ns]
    name = str(path.resolve())
    known = index.get(name)
    if isinstance(known, list) and len(known) == 4 and known[:2] == stamp and known[3] - stat.st_mtime_ns > 1e9:
        return known[2]
    hashed_at = time.time_ns()
    digest = _sha256(path)
    index[name] = stamp + [digest, hashed_at]
    return digest


def _remove_stale(folder: Path) -> None:
    """Deletes the temporaries (``.*.tmp`` files or folders) of interrupted writes."""
    for stale in folder.glob(".*.tmp") if folder.is_dir() else []:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def _read_entry(entry: Path, keep_docids: bool) -> SVMLightData:
    arrays = {name: np.load(entry / f"{name}.npy", allow_pickle=False) for name in _FIELDS}
    docids = np.load(entry / "docids.npy", allow_pickle=False) if keep_docids else None
    data = SVMLightData(docids=docids, **arrays)
    n = data.labels.shape[0]
    if (data.features.ndim != 2 or data.features.shape[0] != n or data.qids.shape != (n,)
            or data.features.dtype != np.float32 or (keep_docids and data.docids.shape != (n,))):
        raise ValueError(f"inconsistent arrays {[a.shape for a in arrays.values()]}")
    return data


def _write_entry(entry: Path, data: SVMLightData) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}.", suffix=".tmp"))
    try:
        for name in _FIELDS + (("docids",) if data.docids is not None else ()):
            with open(tmp / f"{name}.npy", "wb") as f:
                np.save(f, getattr(data, name), allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        shutil.rmtree(entry, ignore_errors=True)  # a damaged entry being replaced
        os.replace(tmp, entry)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_svmlight(
    path,
    *,
    num_features: Optional[int] = None,
    keep_docids: bool = False,
    query_file=None,
    cache: bool = True,
) -> SVMLightData:
    """``parse_svmlight`` with an on-disk cache in ``locations.cache_dir()``.

    Arguments as ``parse_svmlight``; ``cache=False`` always parses and writes nothing.
    """
    path = Path(path)
    if not cache:
        return parse_svmlight(path, num_features=num_features, keep_docids=keep_docids, query_file=query_file)
    group_file = Path(query_file) if query_file is not None else _default_query_file(path)
    folder = locations.cache_dir()
    _remove_stale(folder)
    hashes = _read_hashes(folder)
    before = json.dumps(hashes, sort_keys=True)
    key = hashlib.sha256(f"{_FORMAT}|{num_features}|{keep_docids}".encode())
    for source in [path] + ([group_file] if group_file.exists() else []):
        key.update(_source_digest(source, hashes).encode())
    entry = folder / f"{path.name}.{key.hexdigest()[:20]}"
    data = None
    if entry.exists():
        try:
            data = _read_entry(entry, keep_docids)
        except (OSError, ValueError, EOFError) as e:
            warnings.warn(f"cache entry {entry} for {path} cannot be read ({e}); parsing the file again.",
                          stacklevel=2)
    if data is None:
        data = parse_svmlight(path, num_features=num_features, keep_docids=keep_docids, query_file=query_file)
        _write_entry(entry, data)
    if json.dumps(hashes, sort_keys=True) != before:  # only after a parse succeeded or an entry was read
        atomic.write_json(folder / _HASHES, hashes)
    return data
