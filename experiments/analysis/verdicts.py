"""Verdicts: whether each claim of a paper holds in a run, decided from the run's summary alone.

Every analysis module exposes ``verdicts(summary) -> list[Verdict]`` and prints them in a
"Verdicts" section (``section``); ``paper_report`` gathers them into one table. A verdict is
``(claim, verdict, detail)``: the claim as tested, one of ``VERDICTS``, and the measured figures
that decide it (95% intervals where there are runs).

One rule set for every part, so a verdict reads the same everywhere:

* Intervals are 95% intervals of a mean over runs (seeds, permutations, folds, splits):
  ``mean ± t·sd/√n`` (Student t, ``jaxrank.metrics.statistics``, the experiments' own intervals
  included, so three folds are not read as tightly as ninety runs); the half-widths of two
  independent means combine in quadrature (``spread``); paired runs (the same folds or splits for
  both methods) use the interval of their differences.
* A claimed *direction* ("A beats B") holds when the difference's 95% interval lies on the claimed
  side of 0 and fails when it lies on the other side. Inside the noise it fails when the paper's own
  gap lies above our interval (a gap that size would have shown), and is not testable otherwise:
  more runs are needed (``direction``).
* A claimed *bound* ("above 0.91", "at least 3×") holds when our estimate is on the claimed side,
  fails when our whole 95% interval is on the other side, and is not testable in between: the
  noise allows both (``at_least`` / ``at_most``; a band, ``meets``, the same way).
* A paper *number* is matched when it lies within our 95% interval widened by the paper's own
  spread where it prints one (``matches``).
* A paper's *rounded* figure ("roughly a third less", "about 2× sooner", "≈ 200") is matched when
  our estimate lies among the values that would be written that way (fails when our whole interval
  misses them, not testable when only the interval reaches them): those nearer the figure than
  its neighbouring round figures, midpoints taken geometrically (``meets``; each claim states its
  band, e.g. "about 2×" = 1.41..2.45, between 1× and 3×).
"""

import math
from typing import NamedTuple, Optional, Sequence

from jaxrank.metrics import statistics

HOLDS = "holds"
FAILS = "does not hold"
UNTESTABLE = "not testable here"
VERDICTS = (HOLDS, FAILS, UNTESTABLE)
Z95 = statistics.normal_quantile(0.975)  # two-sided 95% normal quantile, 1.96
HEADING = "#### Verdicts"  # the section's first line; paper_report splits tables there


class Verdict(NamedTuple):
    claim: str
    verdict: str  # one of VERDICTS
    detail: str  # the measured figures that decide it


def check(verdicts) -> list:
    """``verdicts`` as a list of ``Verdict``; raises ValueError on a malformed entry."""
    out = []
    for item in verdicts:
        if not isinstance(item, (tuple, list)) or len(item) != 3 or not all(isinstance(s, str) for s in item):
            raise ValueError(f"a verdict is (claim, verdict, detail), three strings; got {item!r}.")
        if item[1] not in VERDICTS:
            raise ValueError(f"verdict {item[1]!r} of claim {item[0]!r} must be one of {VERDICTS}.")
        out.append(Verdict(*item))
    return out


def spread(*halves: float) -> float:
    """Half-width of a sum or difference of independent estimates: the half-widths in quadrature."""
    return math.sqrt(sum(h * h for h in halves))


def t95(df: int) -> float:
    """Two-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1; got {df}.")
    return statistics.t_quantile(0.975, df)


def half_width(sd: float, n: int) -> float:
    """95% half-width (Student t) of a mean of ``n`` values with standard deviation ``sd``; 0 when
    ``n < 2`` (no spread to measure)."""
    return float(statistics.half_width(sd, n))


def mean_half(values) -> tuple[float, float]:
    """Mean and 95% half-width (Student t) of a list of values over independent runs."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_half needs at least one value.")
    mean, half = statistics.mean_ci(values)
    return float(mean), float(half)


def binomial_half(p: float, n: int) -> float:
    """95% half-width of a proportion ``p`` estimated from ``n`` draws (normal approximation)."""
    return float(statistics.proportion_half(p, n))


def ratio(a: float, half_a: float, b: float, half_b: float) -> tuple[float, float]:
    """``a / b`` and its 95% half-width by the delta method (independent ``a`` and ``b``); ``b`` must
    not be 0 (the caller says what a zero means)."""
    if b == 0:
        raise ValueError(f"ratio {a} / 0: the denominator is 0.")
    r = a / b
    return r, abs(r) * spread(half_a / a if a else 0.0, half_b / b)


def fmt(value: float, half: Optional[float] = None, digits: int = 3) -> str:
    """``"0.512 ± 0.004"`` (or just the value)."""
    return f"{value:.{digits}f}" if half is None else f"{value:.{digits}f} ± {half:.{digits}f}"


def direction(diff: float, half: float, *, paper_gap: Optional[float] = None,
              runs: str = "these runs") -> tuple[str, str]:
    """Verdict on the claim ``diff > 0`` from a measured difference and its 95% half-width.

    Returns ``(verdict, reason)``: holds when ``diff - half > 0``; fails when ``diff + half < 0``, or
    when the difference is inside the noise but the paper's own gap ``paper_gap`` (> 0) lies above
    our interval (``diff + half < paper_gap``: a gap that size would have shown); otherwise not
    testable: ``runs`` are too few.
    """
    if diff - half > 0:
        return HOLDS, "significant in the claimed direction"
    if diff + half < 0:
        return FAILS, "significant in the opposite direction"
    if paper_gap is not None and diff + half < abs(paper_gap):
        return FAILS, f"within noise, and the paper's gap {abs(paper_gap):.3g} lies above our interval"
    return UNTESTABLE, f"within the noise of {runs}: more runs needed"


def _three_way(inside: bool, reaches: bool) -> str:
    return HOLDS if inside else (UNTESTABLE if reaches else FAILS)


def at_least(value: float, half: float, bound: float) -> str:
    """Claim ``value ≥ bound``: holds when the estimate is at or above it, fails when the whole 95%
    interval is below it, and is not testable when only the interval reaches it."""
    return _three_way(value >= bound, value + half >= bound)


def at_most(value: float, half: float, bound: float) -> str:
    """Claim ``value ≤ bound``: the mirror of ``at_least``."""
    return _three_way(value <= bound, value - half <= bound)


def matches(value: float, half: float, paper: float, paper_half: float = 0.0) -> str:
    """``HOLDS`` when the paper's number lies within our interval widened by its own spread."""
    return HOLDS if abs(value - paper) <= spread(half, paper_half) else FAILS


def meets(value: float, half: float, low: float, high: float) -> str:
    """Claim ``low ≤ value ≤ high``: holds when the estimate is in the band, fails when the whole 95%
    interval misses it, and is not testable when only the interval reaches it."""
    return _three_way(low <= value <= high, value + half >= low and value - half <= high)


def between(a: float, b: float) -> float:
    """The geometric midpoint of two round figures: where one stops being nearer than the other."""
    return math.sqrt(a * b)


def worst(verdicts: Sequence[str]) -> str:
    """One verdict for a claim made of several checks that must all hold: any failure fails it;
    otherwise any untestable check leaves it untestable; else it holds (nothing: untestable)."""
    if FAILS in verdicts:
        return FAILS
    if UNTESTABLE in verdicts or not verdicts:
        return UNTESTABLE
    return HOLDS


def where_testable(verdicts: Sequence[str]) -> str:
    """One verdict for a claim checked on several settings (matrices, sets) where some cannot test
    it: any failure fails it; else it holds if it held wherever it could be tested; else untestable.
    The detail must name the settings that could not test it."""
    if FAILS in verdicts:
        return FAILS
    return HOLDS if HOLDS in verdicts else UNTESTABLE


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def rows(verdicts) -> list[str]:
    """Markdown table rows ``| claim | verdict | detail |`` with the header."""
    lines = ["| claim | verdict | detail |", "|---|---|---|"]
    for v in check(verdicts):
        mark = {HOLDS: "holds", FAILS: "**does not hold**", UNTESTABLE: "*not testable here*"}[v.verdict]
        lines.append(f"| {_cell(v.claim)} | {mark} | {_cell(v.detail)} |")
    return lines


def section(verdicts) -> str:
    """The "Verdicts" section of a part's table: a heading, then one row per claim."""
    return "\n".join([HEADING, "", *rows(verdicts)]) + "\n"


def with_section(table: str, verdicts_fn, results: dict) -> str:
    """``table`` followed by the Verdicts section of ``verdicts_fn(results)``; a verdict function that
    fails leaves one "not testable here" line with its error rather than losing the table."""
    try:
        verdicts = check(verdicts_fn(results))
    except Exception as e:  # noqa: BLE001 (the table must be written whatever the verdicts do)
        verdicts = [Verdict("every claim of this part", UNTESTABLE,
                            f"the verdict function failed: {type(e).__name__}: {e}".splitlines()[0])]
    return table.rstrip("\n") + "\n\n" + section(verdicts)
