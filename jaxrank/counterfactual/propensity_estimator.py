"""What every propensity estimator shares: its data, its contract and the loop that runs it.

An estimator (registered in ``jaxrank.counterfactual.PROPENSITY_ESTIMATORS``) is a module with
``HPARAMS`` (continuous hyperparameters, cited defaults), ``OPTIONS`` (static switches) and
``make(**options) -> PropensityEstimator``:

* ``init(key, data, **hparams) -> state``: the state sized off ``data`` (``P = Q·L`` pairs, ``K`` ranks,
  ``D`` features: like optax's ``init(params)``, sizes are read from shapes, never stored), the
  hyperparameters as f32 leaves, so a grid of them is lanes of one program;
* ``step(key, state, data) -> (state, info)``: one iteration (an EM iteration, an optimiser step; a
  closed-form estimator computes its estimate), ``info`` a NamedTuple;
* ``propensities(state) -> [K]``: the estimate relative to rank 1, ``θ_k / θ_1``.

``data`` is a ``PropensityData``: the pooled ``ClickCounts [Q, L, K]`` of the logs (one ranker's or
several rankers' summed, ``jaxrank.counterfactual.simulation``) and the documents' features (only the
relevance regression of ``regression_em`` reads them). ``estimate`` runs ``num_steps`` steps in one
``lax.scan``.
"""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.types import Array, PRNGKey


class PropensityData(NamedTuple):
    """What a propensity estimator reads."""

    counts: ClickCounts  # clicks, displays [Q, L, K]; sessions [Q]; num_clicks []
    features: Array  # [Q, L, D] f32 the documents' features (D may be 0 for estimators that ignore them)


class PropensityEstimator(NamedTuple):
    """``init(key, data, **hparams) -> state``; ``step(key, state, data) -> (state, info)``;
    ``propensities(state) -> [K]`` (this module's docstring)."""

    init: Callable
    step: Callable
    propensities: Callable


def propensity_data(counts: ClickCounts, features=None) -> PropensityData:
    """``PropensityData`` of ``counts [Q, L, K]`` and ``features [Q, L, D]`` (default: none, ``D = 0``)."""
    shape = counts.clicks.shape[:-1]
    features = jnp.zeros(shape + (0,), jnp.float32) if features is None else jnp.asarray(features, jnp.float32)
    if features.shape[:-1] != shape:
        raise ValueError(f"features must be [Q, L, D] with [Q, L] = {list(shape)} (the counts'); got "
                         f"{list(features.shape)}.")
    return PropensityData(counts, features)


def estimate(key: PRNGKey, estimator: PropensityEstimator, state, data: PropensityData, num_steps: int):
    """``(state, info [T])``: ``num_steps`` steps of ``estimator`` in one ``lax.scan`` (step ``t`` gets
    ``fold_in(key, t)``)."""
    return jax.lax.scan(lambda s, t: estimator.step(jax.random.fold_in(key, t), s, data), state,
                        jnp.arange(num_steps))


def as_leaf(value) -> Array:
    """A hyperparameter as the f32 state leaf the contract asks for."""
    return jnp.asarray(value, jnp.float32)
