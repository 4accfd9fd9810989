"""Checkpoints of a long computation: a list of arrays plus a small JSON header, in one ``.npz``.

The file is written with ``write_npz`` (temporary file, fsync, rename), so a reader sees either
the previous checkpoint or the new one, never a mix; a process killed while writing leaves at
most a stray ``.<name>.*.tmp`` beside it, which ``remove_stale_temporaries`` deletes once its
writer is dead.
Arrays are stored as ``leaf_000``, ``leaf_001``, ... in the caller's order; PRNG keys must be
stored as their key data (``jax.random.key_data``): this module never imports jax.
"""

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from jaxrank.data.atomic import remove_dead_temporaries, write_npz

_HEADER = "__header__"


def save_checkpoint(path, leaves: Sequence[np.ndarray], header: dict) -> Path:
    """Atomically writes ``leaves`` and the JSON-ready ``header`` to ``path`` (an ``.npz``)."""
    arrays = {f"leaf_{i:03d}": np.asarray(leaf) for i, leaf in enumerate(leaves)}
    arrays[_HEADER] = np.asarray(json.dumps(header, sort_keys=True))
    return write_npz(path, **arrays)


def load_checkpoint(path) -> tuple[list[np.ndarray], dict]:
    """Reads a file written by ``save_checkpoint``: ``(leaves, header)``.

    Raises:
      ValueError: naming the file, when it is not such a checkpoint.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            header = json.loads(str(f[_HEADER]))
            names = sorted((n for n in f.files if n.startswith("leaf_")), key=lambda n: int(n[len("leaf_"):]))
            leaves = [f[n] for n in names]
    except (KeyError, ValueError, OSError) as e:
        raise ValueError(f"{path} is not a readable checkpoint ({e}); delete it to start that part again.") from None
    return leaves, header


def remove_stale_temporaries(folder) -> list[Path]:
    """Deletes the ``.*.tmp`` files that interrupted atomic writes left in ``folder`` (their writer
    has exited, or nobody touched them for ``atomic.STALE_SECONDS``); returns them. A live writer's
    temporary is kept."""
    return remove_dead_temporaries(folder)
