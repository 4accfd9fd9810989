"""Budget checks run before any work: a config's sizes against int32 and the memory this process may
use, its hyperparameters against what the run can use, and a one-line estimate of the time it takes.

Every refusal is a one-line ``ValueError`` that names the value and the largest that fits::

    `num_runs=1000000000`: the run would allocate 74.5 GiB (offline curves 40 GiB, ...) but 7.6 GiB
    is available; the largest that fits is 101000000.

An experiment turns its ``Config`` into the bytes of the arrays it will allocate and the work it will
do (steps x lanes) and calls ``check_memory``/``check_int32``/``check_count`` before loading data or
compiling, then ``announce`` with the work and a rate measured on a 2-core CPU.
"""

import math
import os
import resource
from pathlib import Path
from typing import Mapping, Optional

INT32_MAX = 2**31 - 1
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
_CGROUP_USAGE = ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes")
_UNLIMITED = 1 << 60  # cgroup v1 reports "no limit" as a huge number near 2**63


class NonFiniteError(ValueError):
    """A finite hyperparameter made the run's numbers non-finite; the message names it (one line).

    ``experiments.common.registry`` deletes the run's checkpoints on this error: they hold the
    broken state, and resuming them would repeat the failure.
    """


def _read_int(path: str) -> Optional[int]:
    try:
        text = Path(path).read_text().split()[0]
    except (OSError, IndexError):
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available() -> Optional[int]:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_bytes() -> int:
    """Bytes this process may still allocate: ``MemAvailable`` of ``/proc/meminfo``, capped by the
    address-space limit (``RLIMIT_AS``, less what the process already maps) and by the cgroup's
    memory limit (less its usage) when set. Elsewhere (no ``/proc``): the physical memory from
    ``os.sysconf``, or 8 GiB when even that is unknown."""
    candidates = []
    free = _meminfo_available()
    if free is None:
        try:
            free = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            free = 8 << 30
    candidates.append(free)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        mapped = _read_int("/proc/self/statm")
        used = mapped * resource.getpagesize() if mapped is not None else 0
        candidates.append(max(soft - used, 0))
    for limit_path, usage_path in zip(_CGROUP_LIMITS, _CGROUP_USAGE):
        limit = _read_int(limit_path)
        if limit is not None and limit < _UNLIMITED:
            candidates.append(max(limit - (_read_int(usage_path) or 0), 0))
            break
    return int(min(candidates))


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"  # pragma: no cover


def format_seconds(s: float) -> str:
    """``95`` -> ``"1.6 min"``; ``40000`` -> ``"11.1 h"``."""
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.1f} min"
    if s < 86400 * 2:
        return f"{s / 3600:.1f} h"
    if s < 86400 * 365 * 2:
        return f"{s / 86400:.1f} days"
    return f"{s / (86400 * 365):.3g} years"


def check_count(name: str, value, *, largest, why: str) -> None:
    """Refuses ``value > largest`` with ``"`name=value`: why; the largest that fits is largest."``"""
    if value > largest:
        raise ValueError(f"`{name}={value}`: {why}; the largest that fits is {largest}.")


def check_int32(name: str, value: int, *, factor: int = 1, what: str = "") -> None:
    """Refuses ``value * factor`` beyond int32 (the counters and indices the run keeps in int32):
    ``factor`` is what multiplies ``value`` in the largest such number (e.g. lanes x list size).
    ``what`` names that number in the message."""
    total = value * factor
    label = what or (f"{name} x {factor}" if factor != 1 else name)
    check_count(name, value, largest=INT32_MAX // max(int(factor), 1),
                why=f"{label} = {total:,} overflows the int32 counters and indices (at most {INT32_MAX:,})")


def check_memory(arrays: Mapping[str, float], *, name: str, value, per_unit: Optional[float] = None,
                 available: Optional[int] = None) -> int:
    """Refuses a run whose arrays do not fit in memory; returns their total in bytes.

    Args:
      arrays: ``{what: bytes}`` of the arrays the run will hold at once, from its config.
      name, value: the config field that sets their size (named in the message).
      per_unit: bytes added per unit of ``value``; the rest of the total is fixed. ``None``: the
        total is proportional to ``value``.
      available: the budget in bytes; default ``available_bytes()``.

    Raises:
      ValueError: one line naming ``name=value``, the total (its three largest parts), the bytes
        available and the largest ``value`` that fits.
    """
    total = float(sum(arrays.values()))
    budget = available_bytes() if available is None else int(available)
    if total <= budget:
        return int(total)
    if per_unit is None:
        per_unit = total / value if value else total
    fixed = max(total - per_unit * value, 0.0)
    largest = max(int(math.floor((budget - fixed) / per_unit)), 0) if per_unit > 0 else 0
    parts = sorted(arrays.items(), key=lambda kv: -kv[1])[:3]
    detail = ", ".join(f"{what} {format_bytes(b)}" for what, b in parts)
    check_count(name, value, largest=largest,
                why=f"the run would allocate {format_bytes(total)} ({detail}) but {format_bytes(budget)} is available")
    return int(total)  # pragma: no cover  (value <= largest yet total > budget: rounding only)


def check_finite_positive(name: str, value) -> None:
    """Refuses NaN, ±inf, zero, a negative number or a non-number."""
    try:
        ok = math.isfinite(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool):
        raise ValueError(f"`{name}={value}`: must be a finite number > 0.")


def check_learning_rate(name: str, value, *, largest: Optional[float] = None, why: str = "") -> None:
    """A step size: finite and > 0, and at most ``largest`` when the run knows a bound (``why``
    says where it comes from)."""
    check_finite_positive(name, value)
    if largest is not None:
        check_count(name, value, largest=largest, why=why or "a larger step makes the loss non-finite")


def check_finite_result(name: str, value, what: str, values) -> None:
    """After a stretch of work: raises ``NonFiniteError`` naming ``name=value`` when ``values`` (an
    array or scalar of ``what``, e.g. the loss or the weights) hold NaN or ±inf."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.isfinite(arr).sum())
        raise NonFiniteError(f"`{name}={value}`: {what} became non-finite ({bad} of {arr.size} values); "
                             f"lower {name} (no checkpoint of this run is kept).")


def announce(experiment: str, *, work: float, rate: float, unit: str, note: str = "") -> float:
    """Prints ``[experiment] work: N unit, about T at R unit/s (2-core CPU)`` before the run starts and
    returns the estimated seconds. ``rate`` is measured (or documented) per 2-core CPU."""
    seconds = work / rate if rate > 0 else float("inf")
    print(f"[{experiment}] work: {work:,.0f} {unit}; about {format_seconds(seconds)} at {rate:,.0f} {unit}/s "
          f"on a 2-core CPU{'; ' + note if note else ''}.", flush=True)
    return seconds
