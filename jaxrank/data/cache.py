"""A ``.npz`` cache of parsed files, keyed by the source bytes' SHA-256 and the parse options.

A second load of an unchanged file skips text parsing. Entries are written atomically and only
after a successful parse, so a malformed file never leaves anything behind.
"""

import hashlib
from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data import atomic, locations
from jaxrank.data.svmlight import SVMLightData, _default_query_file, parse_svmlight

_FORMAT = "svmlight-v1"  # bump when the parser's output changes


def _digest(paths, options: str) -> str:
    h = hashlib.sha256(f"{_FORMAT}|{options}".encode())
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()


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
    entry = locations.cache_dir() / f"{path.name}.{key[:20]}.npz"
    if entry.exists():
        with np.load(entry, allow_pickle=False) as z:
            return SVMLightData(z["features"], z["labels"], z["qids"], z["docids"] if keep_docids else None)
    data = parse_svmlight(path, num_features=num_features, keep_docids=keep_docids, query_file=query_file)
    arrays = data._asdict()
    arrays["docids"] = data.docids if keep_docids else np.zeros(0, str)
    atomic.write_npz(entry, **arrays)
    return data
