"""Atomic file writes: write a private temporary beside the target, then rename over it.

A reader never sees a partly written file, and a crash leaves at most a stray temporary. Every
temporary is named ``.<target>.pid<PID>@<HOST>.<random>.tmp``, so a cleaner can tell a live
writer's file (possibly another process's, on a shared cache) from a dead one's:
``remove_dead_temporaries`` deletes only temporaries whose writer no longer runs on this host, or
that nobody has touched for ``STALE_SECONDS`` (writers on other hosts, untagged leftovers).

Files and folders are created with the permissions any new file of this process would get
(``0o666`` / ``0o777`` less the umask), not ``tempfile``'s private ``0o600`` / ``0o700``, so a
folder shared by a group (mode ``2775``) stays readable and replaceable by the group; a setgid
folder's bit is kept on the folders made in it, so their files keep the folder's group.
"""

import json
import os
import re
import shutil
import socket
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable

STALE_SECONDS = 6 * 3600  # a temporary untouched this long is dead whoever wrote it (other hosts)
HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"
_TAGGED = re.compile(r"\.pid(\d+)@([A-Za-z0-9_-]+)\.[^.]*\.tmp$")


def current_umask() -> int:
    """This process's umask (read from ``/proc`` where it can be, without changing it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def share_file(fd_or_path) -> None:
    """Gives a file made by ``tempfile.mkstemp`` the mode ``0o666 & ~umask``."""
    os.chmod(fd_or_path, 0o666 & ~current_umask())


def make_shared_temporary_folder(parent, target_name: str) -> Path:
    """A new temporary folder in ``parent`` for ``target_name``, mode ``0o777 & ~umask``, keeping
    the setgid bit a setgid ``parent`` gave it (so files made in it keep the parent's group)."""
    folder = Path(tempfile.mkdtemp(dir=parent, prefix=temporary_prefix(target_name), suffix=".tmp"))
    inherited = os.stat(folder).st_mode & stat.S_ISGID
    os.chmod(folder, (0o777 & ~current_umask()) | inherited)
    return folder


def temporary_prefix(target_name: str) -> str:
    """The ``tempfile`` prefix of this process's temporaries for ``target_name``."""
    return f".{target_name}.pid{os.getpid()}@{HOST}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # exists, owned by someone else (or not a pid: leave it to the age rule)
    return True


def _last_touched(path: Path) -> float:
    """Latest mtime of ``path`` and, for a folder, of the files in it (a writer adds files)."""
    times = [path.lstat().st_mtime]
    if path.is_dir():
        times += [p.lstat().st_mtime for p in path.iterdir()]
    return max(times)


def is_dead_temporary(path, *, now: float | None = None, max_age: float = STALE_SECONDS) -> bool:
    """Whether the temporary ``path`` belongs to no live writer: its tagged writer is a process of
    this host that has exited, or it has not been touched for ``max_age`` seconds."""
    path = Path(path)
    tag = _TAGGED.search(path.name)
    if tag and tag.group(2) == HOST and not _pid_alive(int(tag.group(1))):
        return True
    try:
        return (time.time() if now is None else now) - _last_touched(path) > max_age
    except FileNotFoundError:
        return False  # gone already (renamed into place, or removed by another cleaner)


def remove_dead_temporaries(folder, *, max_age: float = STALE_SECONDS) -> list[Path]:
    """Deletes the ``.*.tmp`` files and folders in ``folder`` whose writer is dead (see
    ``is_dead_temporary``); returns them. Never raises for a file another cleaner removed first
    or a folder this process may not write."""
    folder = Path(folder)
    try:
        candidates = sorted(folder.glob(".*.tmp")) if folder.is_dir() else []
    except OSError:
        return []
    removed = []
    for path in candidates:
        if not is_dead_temporary(path, max_age=max_age):
            continue
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue  # read-only folder: nothing to clean
        removed.append(path)
    return removed


def write_atomic(path, write_fn: Callable, *, mode: str = "wb") -> Path:
    """Calls ``write_fn(file_object)`` on a private temporary file, then renames it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temporary_prefix(path.name), suffix=".tmp")
    try:
        share_file(fd)
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
