"""The hyperparameter-grid convention of jaxrank: a dict ``{name: [H, ...] array}`` whose row ``h``
across every name is setting ``h``, the names being the hyperparameters of the ``init`` they feed
(``jaxrank.bandits.run_sweep(..., hparams=)``, ``batch_protocol(key, learner, hparams, ...)``, the
LCRA protocol's ``make_grid``). Every setting of a grid runs in one compiled program."""

import itertools

import numpy as np


def grid(**axes) -> dict:
    """The Cartesian product of named value lists as a grid ``{name: [H] array}`` (last name fastest).

    Example: ``grid(alpha=[0.1, 0.5], delta=[0.01])`` gives ``{"alpha": [0.1, 0.5], "delta": [0.01, 0.01]}``.
    """
    if not axes:
        raise ValueError("grid needs at least one named list of values, e.g. grid(alpha=[0.1, 0.5]).")
    for name, values in axes.items():
        if np.ndim(values) != 1 or len(values) == 0:
            raise ValueError(f"grid axis {name!r} must be a non-empty 1-D list of values; got {values!r}.")
    rows = list(itertools.product(*axes.values()))
    return {name: np.asarray([row[i] for row in rows]) for i, name in enumerate(axes)}
