"""Confidence intervals of means over independent runs (seeds, permutations, folds)."""

import math
from typing import Union

import numpy as np

Axis = Union[int, tuple[int, ...]]


def mean_ci(values, axis: Axis = 0, *, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """Mean and half-width of the normal confidence interval (95% for ``z = 1.96``) over ``axis``.

    ``half = z · std(ddof=1) / sqrt(n)`` with ``n`` the number of values reduced; 0 when ``n = 1``.

    Args:
      values: ``[...]`` samples; the runs lie along ``axis`` (one axis or several).
      axis: the axis or axes of the runs.

    Returns:
      ``(mean, half)``, both of ``values``' shape without ``axis``.
    """
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        values = values.astype(np.float64)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    n = math.prod(values.shape[a] for a in axes)
    mean = values.mean(axis=axes)
    if n <= 1:
        return mean, np.zeros_like(mean)
    return mean, z * values.std(axis=axes, ddof=1) / np.sqrt(n)
