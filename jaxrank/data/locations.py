"""Where data and parsed caches live: one setting each.

``JAXRANK_DATA`` is the folder that holds datasets by name (``$JAXRANK_DATA/MQ2008/Fold1/...``);
default ``<user cache>/jaxrank/data``. ``JAXRANK_CACHE`` holds parsed copies (folders of ``.npy`` arrays); default
``<user cache>/jaxrank/parsed``. ``JAXRANK_COMPILATION_CACHE`` holds JAX's persistent compilation cache for
``launch.py``; default ``<user cache>/jaxrank/xla``. The user cache is ``$XDG_CACHE_HOME`` or ``~/.cache``.
"""

import os
from pathlib import Path


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxrank"


def data_dir() -> Path:
    """The dataset root: ``$JAXRANK_DATA`` or ``<user cache>/jaxrank/data``."""
    return Path(os.environ.get("JAXRANK_DATA") or _user_cache() / "data").expanduser()


def cache_dir() -> Path:
    """The parsed-file cache: ``$JAXRANK_CACHE`` or ``<user cache>/jaxrank/parsed``."""
    return Path(os.environ.get("JAXRANK_CACHE") or _user_cache() / "parsed").expanduser()


def compilation_cache_dir() -> Path:
    """JAX's persistent compilation cache: ``$JAXRANK_COMPILATION_CACHE`` or ``<user cache>/jaxrank/xla``."""
    return Path(os.environ.get("JAXRANK_COMPILATION_CACHE") or _user_cache() / "xla").expanduser()


def resolve(name_or_path) -> Path:
    """A dataset name (``"MQ2008"``, ``"preference_matrices/MSLR-Perfect.txt"``) or a path.

    Raises:
      FileNotFoundError: saying where it looked and how to point ``JAXRANK_DATA`` at the data.
    """
    direct = Path(name_or_path).expanduser()
    if direct.exists():
        return direct
    under = data_dir() / name_or_path
    if under.exists():
        return under
    root = data_dir()
    present = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
    raise FileNotFoundError(
        f"dataset {str(name_or_path)!r} not found: looked at {direct} and {under} "
        f"({'it holds ' + ', '.join(present) if present else 'that folder is empty or missing'}). "
        "Set JAXRANK_DATA to the folder that holds your datasets, e.g. "
        "`export JAXRANK_DATA=/path/to/letor`, or pass a path."
    )
