"""Atomic file writes: write a temporary file beside the target, then rename over it.

A reader never sees a partly written file, and a crash leaves at most a stray ``.tmp`` file.
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Callable


def write_atomic(path, write_fn: Callable, *, mode: str = "wb") -> Path:
    """Calls ``write_fn(file_object)`` on a temporary file, then renames it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path, obj) -> Path:
    """Writes ``obj`` as indented, key-sorted JSON (stable bytes for equal content)."""
    return write_atomic(path, lambda f: f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n"), mode="w")


def write_text(path, text: str) -> Path:
    return write_atomic(path, lambda f: f.write(text), mode="w")


def write_npz(path, **arrays) -> Path:
    """Writes numpy arrays to an uncompressed ``.npz``."""
    import numpy as np

    return write_atomic(path, lambda f: np.savez(f, **arrays))
