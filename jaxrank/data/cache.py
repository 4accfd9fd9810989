"""A ``.npz`` cache of parsed files, keyed by the source bytes' SHA-256 and the parse options.

A second load of an unchanged file skips text parsing: it hashes the source (about 1 GB/s) and
reads the float32 arrays back. Entries are written atomically and only after a successful parse,
so a malformed file never leaves anything behind. An entry that cannot be read back (truncated,
corrupt, from an older format) is parsed again, with a warning, and replaced; temporary files
left by an interrupted write are removed on the next load.
"""

import hashlib
import warnings
import zipfile
from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data import atomic, locations
from jaxrank.data.checkpoint import remove_stale_temporaries
from jaxrank.data.svmlight import SVMLightData, _default_query_file, parse_svmlight

_FORMAT = "svmlight-v2"  # bump when the parser's output changes (v2: float32 features and labels)
_FIELDS = ("features", "labels", "qids")


def _digest(paths, options: str) -> str:
    h = hashlib.sha256(f"{_FORMAT}|{options}".encode())
    for p in paths:
        with open(p, "rb") as f:
            while block := f.read(1 << 24):
                h.update(block)
    return h.hexdigest()


def _read_entry(entry: Path, keep_docids: bool) -> SVMLightData:
    with np.load(entry, allow_pickle=False) as z:
        arrays = {name: z[name] for name in _FIELDS}
        docids = z["docids"] if keep_docids else None
    data = SVMLightData(docids=docids, **arrays)
    n = data.labels.shape[0]
    if (data.features.ndim != 2 or data.features.shape[0] != n or data.qids.shape != (n,)
            or data.features.dtype != np.float32 or (keep_docids and data.docids.shape != (n,))):
        raise ValueError(f"inconsistent arrays {[a.shape for a in arrays.values()]}")
    return data


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
    sources = [path] + ([group_file] if group_file.exists() else [])
    key = _digest(sources, f"{num_features}|{keep_docids}")
    folder = locations.cache_dir()
    remove_stale_temporaries(folder)
    entry = folder / f"{path.name}.{key[:20]}.npz"
    if entry.exists():
        try:
            return _read_entry(entry, keep_docids)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
            warnings.warn(f"cache entry {entry} for {path} cannot be read ({e}); parsing the file again.",
                          stacklevel=2)
            entry.unlink(missing_ok=True)
    data = parse_svmlight(path, num_features=num_features, keep_docids=keep_docids, query_file=query_file)
    arrays = data._asdict()
    arrays["docids"] = data.docids if keep_docids else np.zeros(0, str)
    atomic.write_npz(entry, **arrays)
    return data
