"""Argument checks shared by every module: one-line ``ValueError``s that name the argument, the bad
value and the fix, raised at the Python boundary before anything compiles.

Traced values (inside ``jit`` or ``vmap``) cannot be inspected and pass through unchecked, so a
factory checks its Python or concrete-array hyperparameters when it is called.
"""

import inspect
from typing import Callable, Iterable, Optional

import jax
import numpy as np


def _traced(value) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value))


def _bound(low, high, low_inclusive: bool, high_inclusive: bool) -> str:
    if low is not None and high is not None:
        return f"in {'[' if low_inclusive else '('}{low:g}, {high:g}{']' if high_inclusive else ')'}"
    if low is not None:
        return f"{'>=' if low_inclusive else '>'} {low:g}"
    return f"{'<=' if high_inclusive else '<'} {high:g}"


def check_number(name: str, value, *, low: Optional[float] = None, high: Optional[float] = None,
                 low_inclusive: bool = False, high_inclusive: bool = False, fix: str = "") -> None:
    """Rejects a number (or any element of an array of them) outside the bounds, or NaN.

    Example: ``check_number("alpha", alpha, low=0)`` raises ``alpha must be > 0; got -1.``
    """
    if value is None or _traced(value):
        return
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}.") from None
    ok = ~np.isnan(arr)
    if low is not None:
        ok &= arr >= low if low_inclusive else arr > low
    if high is not None:
        ok &= arr <= high if high_inclusive else arr < high
    if not np.all(ok):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bad = repr(value)
        else:
            bad = repr(float(arr[~ok].ravel()[0] if arr.ndim else arr))
        raise ValueError(f"{name} must be {_bound(low, high, low_inclusive, high_inclusive)}; got {bad}"
                         f"{'; ' + fix if fix else ''}.")


def check_int(name: str, value, *, minimum: Optional[int] = None, fix: str = "") -> None:
    """Rejects anything but an integer (``2.5``, ``True``, ``"3"``) or one below ``minimum``."""
    if _traced(value):
        return
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an int; got {value!r} ({type(value).__name__}){'; ' + fix if fix else ''}.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value}{'; ' + fix if fix else ''}.")


def check_choice(name: str, value, choices: Iterable) -> None:
    """Rejects a value that is not one of ``choices``, listing them."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}.")


def check_distinct_choices(name: str, values, choices: Iterable) -> None:
    """Rejects an empty or repeating ``values``, or one that is not among ``choices``."""
    values = tuple(values)
    if not values or len(set(values)) != len(values):
        raise ValueError(f"{name} must name each of its values once; got {values}.")
    for value in values:
        check_choice(name, value, choices)


def check_key(name: str, key) -> None:
    """Rejects anything but a PRNG key: a typed key (``jax.random.key(seed)``) or a raw uint32 ``[2]``."""
    if _traced(key):
        return
    if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return
    if isinstance(key, (jax.Array, np.ndarray)) and key.dtype == np.uint32 and key.shape[-1:] == (2,):
        return
    raise ValueError(f"{name} must be a PRNG key such as jax.random.key(0); got {key!r}.")


def check_keywords(owner: str, given: Iterable[str], accepts: Callable, *, skip: int = 0) -> None:
    """Rejects keyword names that ``accepts`` (a function) does not take, listing those it does.

    ``skip`` leading positional parameters are not offered as keywords (e.g. ``key, num_arms``).
    """
    params = list(inspect.signature(accepts).parameters.values())[skip:]
    known = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ValueError(f"{owner} has no hyperparameter {unknown[0]!r}; it takes {', '.join(known) or 'none'}.")
