"""A cache of parsed files: one folder of ``.npy`` arrays per source, keyed by the source bytes'
SHA-256 and the parse options.

A second load of an unchanged file skips text parsing: it reads the float32 arrays back at disk
speed (``.npy`` files, no zip layer: MSLR-WEB30K's 2 GB of features in seconds), each into a buffer
aligned to 64 bytes, which jax's CPU client wraps without a copy (``jax.device_put`` of an unaligned
2 GB array copies it, and first-touching 2 GB of fresh pages can take longer than the read).

When a source is hashed again. Each source's SHA-256 is remembered in ``hashes.json`` with the
file's size, modification time, status-change time (``st_ctime_ns``) and inode. The recorded hash
is reused only while all four are unchanged *and* the file had not changed for a second when it
was hashed; anything else (a rewrite, ``touch``, ``touch -r`` restoring an old mtime, a copy or
``mv`` over it) hashes the file again. The status-change time and the inode cannot be set back by
a user, so an edited file is never served from an older entry.

Many processes may share the folder (a sweep's jobs, a cluster file system). An entry is written
to a private temporary folder and renamed into place after a successful parse; when two processes
write the same entry, the first rename wins and the other keeps its own arrays. Temporaries are
removed only when their writer is dead (``atomic.remove_dead_temporaries``). Entries and the index
are created with the umask's permissions and a setgid folder's group (``atomic``), so the users of a
group-shared folder (mode ``2775``) hit each other's entries; in a sticky folder (``1777``), where
one user may not replace another's ``hashes.json``, each other user keeps ``hashes.<uid>.json``.

The cache never breaks a load: a folder that cannot be written (read-only, a cache image) means
parsing without caching, with one warning naming the folder; a damaged ``hashes.json`` or entry
(wrong types, a folder where a file belongs or the reverse, truncated arrays, a header claiming more
than its file holds, caught before allocating, an older format) is rebuilt with a warning.
"""

import hashlib
import json
import os
import shutil
import stat
import time
import uuid
import warnings
from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data import atomic, locations
from jaxrank.data.svmlight import SVMLightData, _default_query_file, parse_svmlight

_FORMAT = "svmlight-v3"  # bump when the parser's output changes (v3: float32, labels < 128, .npy folders)
_FIELDS = ("features", "labels", "qids")
_HASHES = "hashes.json"
_STAMP = ("size", "mtime_ns", "ctime_ns", "inode")  # what a recorded hash is valid for
_QUIET_AFTER = 1e9  # ns: a file unchanged this long before it was hashed cannot change unseen at that tick
_unwritable_warned: set = set()  # folders already named in a warning by this process


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            h.update(block)
    return h.hexdigest()


def _valid_record(record) -> bool:
    return (isinstance(record, dict) and all(isinstance(record.get(k), int) and not isinstance(record.get(k), bool)
                                             for k in _STAMP + ("hashed_ns",))
            and isinstance(record.get("sha256"), str) and len(record["sha256"]) == 64)


def _index_path(folder: Path) -> Path:
    """``hashes.json``; in a sticky folder (mode ``1777``) where another user owns it, so that this
    user may not replace it, this user's own ``hashes.<uid>.json``."""
    shared = folder / _HASHES
    uid = os.geteuid()
    try:
        folder_stat, index_stat = folder.stat(), shared.lstat()
    except OSError:
        return shared
    if uid != 0 and folder_stat.st_mode & stat.S_ISVTX and uid not in (folder_stat.st_uid, index_stat.st_uid):
        return folder / f"hashes.{uid}.json"
    return shared


def _read_hashes(folder: Path) -> tuple[dict, Optional[str]]:
    """``(index, problem)``: the valid records of this user's index (``_index_path``) and why the
    file is damaged (None when it is absent or sound). Records of the wrong shape are dropped (hashed
    again)."""
    path = _index_path(folder)
    if not path.exists() and not path.is_symlink():
        return {}, None
    try:
        index = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return {}, f"{type(e).__name__}: {e}"
    if not isinstance(index, dict):
        return {}, f"a JSON {type(index).__name__} instead of an object"
    valid = {k: v for k, v in index.items() if _valid_record(v)}
    return valid, None if len(valid) == len(index) else f"{len(index) - len(valid)} malformed records"


def _stamp(path: Path) -> dict:
    info = path.stat()
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "ctime_ns": info.st_ctime_ns, "inode": info.st_ino}


def _source_digest(path: Path, index: dict) -> str:
    """The source's SHA-256: from ``index`` while its stamp (size, mtime, ctime, inode) is the one
    recorded and it was hashed over a second after its last change; else computed and recorded."""
    stamp = _stamp(path)
    name = str(path.resolve())
    known = index.get(name)
    if (known is not None and all(known[k] == stamp[k] for k in _STAMP)
            and known["hashed_ns"] - max(stamp["mtime_ns"], stamp["ctime_ns"]) > _QUIET_AFTER):
        return known["sha256"]
    hashed_ns = time.time_ns()
    digest = _sha256(path)
    index[name] = {**stamp, "sha256": digest, "hashed_ns": hashed_ns}
    return digest


ALIGNMENT = 64  # bytes: what XLA's CPU client needs to use a host buffer in place


def _load_aligned(path: Path) -> np.ndarray:
    """``np.load`` of a plain C-ordered ``.npy`` array (format 1.0 or 2.0, as the cache writes them),
    read into a writable buffer aligned to ``ALIGNMENT`` bytes."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"{path} is .npy format {version}; the cache reads formats (1, 0) and (2, 0)")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(f)
        if dtype.hasobject or fortran_order:
            raise ValueError(f"{path} holds {'objects' if dtype.hasobject else 'a Fortran-ordered array'}; "
                             "the cache writes plain C-ordered arrays")
        if any(not isinstance(n, int) or n < 0 for n in shape):
            raise ValueError(f"{path} has a malformed header shape {shape}")
        nbytes = dtype.itemsize
        for n in shape:
            nbytes *= n  # Python ints: a corrupted shape cannot overflow into a small size
        held = os.fstat(f.fileno()).st_size - f.tell()
        if nbytes > held:  # checked before allocating: a corrupted header must not claim memory
            raise ValueError(f"{path} is truncated or its header corrupted: the header claims shape {shape} "
                             f"({nbytes} bytes), the file holds {held} bytes of data")
        raw = np.empty(nbytes + ALIGNMENT, np.uint8)
        start = (-raw.ctypes.data) % ALIGNMENT
        buffer = raw[start:start + nbytes]
        if f.readinto(memoryview(buffer)) != nbytes:  # the file shrank while being read
            raise ValueError(f"{path} is truncated")
    return buffer.view(dtype).reshape(shape)


def _read_entry(entry: Path, keep_docids: bool) -> SVMLightData:
    arrays = {name: _load_aligned(entry / f"{name}.npy") for name in _FIELDS}
    docids = _load_aligned(entry / "docids.npy") if keep_docids else None
    data = SVMLightData(docids=docids, **arrays)
    n = data.labels.shape[0]
    if (data.features.ndim != 2 or data.features.shape[0] != n or data.qids.shape != (n,)
            or data.features.dtype != np.float32 or (keep_docids and data.docids.shape != (n,))):
        raise ValueError(f"inconsistent arrays {[a.shape for a in arrays.values()]}")
    return data


def _discard(path: Path) -> None:
    """Removes a file or folder: first renamed to a private temporary name, so that no reader or
    writer ever sees it half deleted."""
    aside = path.parent / f"{atomic.temporary_prefix(path.name)}{uuid.uuid4().hex[:12]}.tmp"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return  # another process moved it first
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def _write_entry(entry: Path, data: SVMLightData, *, damaged: bool) -> None:
    """Places ``data`` at ``entry`` through a private temporary folder and one rename. ``damaged``:
    the entry present was unreadable and is replaced; otherwise an entry that appeared meanwhile
    (another process's write of the same arrays) is kept and ours dropped."""
    tmp = atomic.make_shared_temporary_folder(entry.parent, entry.name)
    try:
        for name in _FIELDS + (("docids",) if data.docids is not None else ()):
            with open(tmp / f"{name}.npy", "wb") as f:
                np.save(f, getattr(data, name), allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
        if damaged and (entry.exists() or entry.is_symlink()):
            _discard(entry)
        try:
            os.rename(tmp, entry)  # fails when a non-empty folder or a file is there
        except OSError:
            if not entry.is_dir() or entry.is_symlink():  # a file in the entry's place: replace it
                _discard(entry)
                os.rename(tmp, entry)
            else:  # another process wrote the entry first
                shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _warn_unwritable(folder: Path, path: Path, error: OSError) -> None:
    if folder in _unwritable_warned:
        return
    _unwritable_warned.add(folder)
    warnings.warn(f"parsed-file cache {folder} cannot be written ({type(error).__name__}: {error.strerror or error}); "
                  f"loading {path.name} and later files without caching there: set JAXRANK_CACHE to a writable "
                  "folder to cache them.", stacklevel=3)


def _write_hashes(folder: Path, hashes: dict, problem: Optional[str]) -> None:
    target = _index_path(folder)
    if problem is not None:
        warnings.warn(f"cache index {target} is damaged ({problem}); rebuilding it.", stacklevel=3)
        if target.is_dir() and not target.is_symlink():
            _discard(target)
    atomic.write_json(target, hashes)


def load_svmlight(
    path,
    *,
    num_features: Optional[int] = None,
    keep_docids: bool = False,
    query_file=None,
    cache: bool = True,
) -> SVMLightData:
    """``parse_svmlight`` with an on-disk cache in ``locations.cache_dir()`` (see the module docstring).

    Arguments as ``parse_svmlight``; ``cache=False`` always parses and writes nothing.

    Returns:
      ``SVMLightData`` with ``features [N, D]`` f32, ``labels [N]`` f32, ``qids [N]`` i64.
    """
    path = Path(path)
    parse = lambda: parse_svmlight(path, num_features=num_features, keep_docids=keep_docids,  # noqa: E731
                                   query_file=query_file)
    if not cache:
        return parse()
    group_file = Path(query_file) if query_file is not None else _default_query_file(path)
    folder = locations.cache_dir()
    hashes, problem = _read_hashes(folder)
    before = json.dumps(hashes, sort_keys=True)
    key = hashlib.sha256(f"{_FORMAT}|{num_features}|{keep_docids}".encode())
    for source in [path] + ([group_file] if group_file.exists() else []):
        key.update(_source_digest(source, hashes).encode())
    entry = folder / f"{path.name}.{key.hexdigest()[:20]}"
    data, damaged = None, False
    if entry.exists() or entry.is_symlink():
        try:
            data = _read_entry(entry, keep_docids)
        except (OSError, ValueError, EOFError) as e:
            damaged = True
            warnings.warn(f"cache entry {entry} for {path} cannot be read ({type(e).__name__}: {e}); "
                          "parsing the file again and replacing it.", stacklevel=2)
    parsed = data is None
    if parsed:
        data = parse()  # raises before anything is written: a malformed file leaves nothing behind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic.remove_dead_temporaries(folder)
        if parsed:
            _write_entry(entry, data, damaged=damaged)
        if problem is not None or json.dumps(hashes, sort_keys=True) != before:
            _write_hashes(folder, hashes, problem)
    except OSError as e:
        _warn_unwritable(folder, path, e)
    return data
