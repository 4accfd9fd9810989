"""Bootstrap confidence intervals of propensity estimates, resampling sessions (Efron & Tibshirani,
*An Introduction to the Bootstrap*, 1993, ch. 13: the percentile interval).

Replicate ``b`` draws ``S`` session indices uniformly with replacement with ``fold_in(key, b)``,
gathers every per-session leaf of the data (a ``SessionLog``, optionally with other ``[S]`` arrays
such as the swap ranks, in any pytree: leaves whose leading axis is ``S``) and re-runs the estimator;
the replicates run one after another in a ``lax.map`` (memory of one resampled log), so the estimator
must be traceable (the propensity estimators of this package are).
"""

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int, check_number


class Interval(NamedTuple):
    estimate: Array  # [K] the estimate on the data itself
    lower: Array  # [K] the (1 - level)/2 quantile of the replicates
    upper: Array  # [K] the (1 + level)/2 quantile
    replicates: Array  # [B, K]


def resample(key: PRNGKey, data: Any, num_sessions: int) -> Any:
    """``data`` with every leaf of leading axis ``num_sessions`` gathered at uniform indices (with replacement)."""
    index = jax.random.randint(key, (num_sessions,), 0, num_sessions)

    def take(x):
        return x[index] if jnp.ndim(x) >= 1 and jnp.shape(x)[0] == num_sessions else x

    return jax.tree.map(take, data)


def bootstrap(key: PRNGKey, data: Any, estimate_fn: Callable[[Any], Array], *, num_sessions: int,
              num_resamples: int = 100, level: float = 0.95) -> Interval:
    """Percentile bootstrap interval of ``estimate_fn(data) -> [K]`` (this module's docstring).

    Args:
      key: PRNG key of the resampling.
      data: pytree of per-session leaves ``[S, ...]`` (and any others, kept as they are).
      estimate_fn: traceable ``data -> [K]``.
      num_sessions: ``S``.
      num_resamples: ``B``.
      level: coverage of the interval.
    """
    check_int("num_resamples", num_resamples, minimum=2)
    check_number("level", level, low=0.0, high=1.0)
    replicates = jax.lax.map(lambda b: estimate_fn(resample(jax.random.fold_in(key, b), data, num_sessions)),
                             jnp.arange(num_resamples))
    tail = (1.0 - level) / 2.0
    lower, upper = jnp.nanquantile(replicates, jnp.array([tail, 1.0 - tail]), axis=0)
    return Interval(estimate_fn(data), lower, upper, replicates)
