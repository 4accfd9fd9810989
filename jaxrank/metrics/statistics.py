"""Means, confidence intervals and paired t-tests over independent runs (seeds, folds, splits).

One definition of a confidence interval for every reported figure: the Student t interval of a mean
of ``n`` runs,

    mean ± t_{n−1, (1+level)/2} · sd / √n,    sd with ddof = 1,

so three folds are not read as tightly as ninety seeds (at ``n = 30`` the 95% quantile is 2.045,
at ``n = 90`` 1.987, tending to the normal 1.960). A proportion estimated from ``n`` draws takes the
normal (Wald) interval ``p ± z √(p(1−p)/n)``. Paired comparisons are Student's paired t-test on the
differences (Student 1908), ``t = mean(d) / (sd(d)/√n)`` with ``n − 1`` degrees of freedom.

The t distribution is computed here, in float64 NumPy and ``math``, so the library needs no SciPy:
``P(T ≤ t) = 1 − ½ I_{ν/(ν+t²)}(ν/2, ½)`` for ``t ≥ 0`` (Abramowitz & Stegun 26.7.1 with 26.5.27),
the regularised incomplete beta ``I`` by its continued fraction (Abramowitz & Stegun 26.5.8,
evaluated by the modified Lentz method), and quantiles by bisection to full float64 precision.
"""

import math
from typing import NamedTuple, Union

import numpy as np

Axis = Union[int, tuple[int, ...]]

_TINY = 1e-300
_MAX_TERMS = 100_000


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (A&S 26.5.8), modified Lentz; converges for ``x < (a+1)/(a+b+2)``."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            return h
    raise ArithmeticError(f"incomplete beta I_{x}({a}, {b}) did not converge.")


def incomplete_beta(a: float, b: float, x: float, y: float = None) -> float:
    """The regularised incomplete beta ``I_x(a, b)``; ``y = 1 − x`` may be passed exactly."""
    y = 1.0 - x if y is None else y
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def t_cdf(t: float, df: float) -> float:
    """``P(T ≤ t)`` of Student's t with ``df > 0`` degrees of freedom (``df = inf``: the normal)."""
    t, df = float(t), float(df)
    if math.isnan(t) or not df > 0:
        raise ValueError(f"t_cdf needs a number t and df > 0; got t = {t}, df = {df}.")
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    # One tail, ½ I_{ν/(ν+t²)}(ν/2, ½), with both ν/(ν+t²) and t²/(ν+t²) formed without cancellation.
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(prob: float, df: float) -> float:
    """The ``prob`` quantile of Student's t with ``df`` degrees of freedom (``df = inf``: the normal)."""
    prob, df = float(prob), float(df)
    if not 0.0 < prob < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < prob < 1 and df > 0; got prob = {prob}, df = {df}.")
    if prob < 0.5:
        return -t_quantile(1.0 - prob, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < prob:
        lo, hi = hi, 2.0 * hi
    while True:  # bisection until the bracket cannot shrink in float64
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            return hi
        lo, hi = (mid, hi) if t_cdf(mid, df) < prob else (lo, mid)


def normal_quantile(prob: float) -> float:
    """The ``prob`` quantile of the standard normal (1.959964 for 0.975)."""
    return t_quantile(prob, math.inf)


def _check_level(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), e.g. 0.95; got {level!r}.")
    return (1.0 + level) / 2.0


def half_width(sd, n: int, *, level: float = 0.95):
    """Half-width ``t_{n−1} · sd / √n`` of the interval of a mean of ``n`` runs with standard
    deviation ``sd`` (``[...]``, any shape); 0 when ``n < 2`` (no spread to measure)."""
    prob = _check_level(level)
    if n < 2:
        return np.zeros_like(np.asarray(sd, np.float64))[()]
    return t_quantile(prob, n - 1) * np.asarray(sd, np.float64)[()] / math.sqrt(n)


def mean_ci(values, axis: Axis = 0, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Mean and Student t interval half-width over ``axis`` (the module's definition).

    Args:
      values: ``[...]`` samples; the runs lie along ``axis`` (one axis or several, ``n`` values in all).
      axis: the axis or axes of the runs.
      level: the interval's coverage (0.95: a 95% interval).

    Returns:
      ``(mean, half)``, both of ``values``' shape without ``axis``; ``half`` is float64 (0 when ``n = 1``).
    """
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype(np.float64)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    n = math.prod(values.shape[a] for a in axes)
    if n == 0:
        raise ValueError("mean_ci needs at least one value along the runs' axis.")
    mean = values.mean(axis=axes)
    if n == 1:
        _check_level(level)
        return mean, np.zeros_like(mean)
    sd = values.std(axis=axes, ddof=1)
    return mean, t_quantile(_check_level(level), n - 1) * sd / np.sqrt(n)


def proportion_half(p, n: int, *, level: float = 0.95):
    """Half-width ``z √(p(1−p)/n)`` of the normal (Wald) interval of a proportion ``p`` from ``n``
    draws (``inf`` when ``n = 0``)."""
    z = normal_quantile(_check_level(level))
    p = np.asarray(p, np.float64)
    return (z * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n) if n > 0 else np.full_like(p, np.inf))[()]


class PairedTTest(NamedTuple):
    mean_diff: float  # mean of a − b
    t: float  # the t statistic (nan when the differences have no spread or n < 2)
    df: int  # n − 1
    p_value: float  # nan when t is nan
    wins: int  # pairs with a > b
    losses: int  # pairs with a < b


def paired_t_test(a, b, *, alternative: str = "two-sided") -> PairedTTest:
    """Student's paired t-test of ``mean(a − b) = 0`` against ``alternative``: ``"two-sided"``,
    ``"less"`` (``mean(a) < mean(b)``) or ``"greater"``; ``a``, ``b`` are ``[n]`` paired values."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if a.size != b.size:
        raise ValueError(f"paired_t_test needs as many values in a as in b; got {a.size} and {b.size}.")
    d = a - b
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be 'two-sided', 'less' or 'greater'; got {alternative!r}.")
    n = d.size
    mean = float(d.mean()) if n else 0.0
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2 or sd == 0.0:
        return PairedTTest(mean, math.nan, n - 1, math.nan, wins, losses)
    t = mean / (sd / math.sqrt(n))
    below = t_cdf(t, n - 1)
    p = {"less": below, "greater": t_cdf(-t, n - 1), "two-sided": 2.0 * min(below, t_cdf(-t, n - 1))}[alternative]
    return PairedTTest(mean, t, n - 1, min(p, 1.0), wins, losses)
