"""SOLAR (Wang, Wan, Zhang, Hoi, ACL 2015): online pairwise learners on pair differences.

SOLAR-I is PA-II with the squared hinge (paper eq. 4–6; Crammer et al. 2006); SOLAR-II is AROW with a
full covariance (paper eq. 7–9; Crammer, Kulesza, Dredze 2009). ``step`` learns from one pair
``(z, y)``; ``update(state, query)`` runs one query's pair slots in order (``pairs.py``) and also
takes a ready ``Pairs``.
Documents are scored by ``features @ w``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners.linear import linear_readout, linear_score
from jaxrank.learners.online.pairs import pairwise_update
from jaxrank.types import OnlineLearner
from jaxrank.utils.checks import check_number


class SolarFirstOrderState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    t: jax.Array  # [] i32, queries seen


class SolarSecondOrderState(NamedTuple):
    w: jax.Array  # [D] f32, mean
    sigma: jax.Array  # [D, D] f32, covariance
    t: jax.Array  # [] i32, queries seen


score = linear_score  # ``[..., L]`` scores ``features @ w`` of any state or readout with a ``w`` leaf


def solar_first_order(c=1e-5) -> OnlineLearner:
    """SOLAR-I: ``ℓ = max(0, 1 − y wᵀz)``, ``τ = ℓ / (‖z‖² + 1/(2C))``, ``w += τ y z``. ``C > 0``."""
    check_number("c", c, low=0)
    c = jnp.asarray(c, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> SolarFirstOrderState:
        del key
        return SolarFirstOrderState(w=jnp.zeros(num_features, dtype), t=jnp.zeros((), jnp.int32))

    def step(state: SolarFirstOrderState, z, y):
        w = state.w
        loss = jnp.maximum(0.0, 1.0 - y * (w @ z))
        tau = loss / (z @ z + 0.5 / c.astype(w.dtype))
        return state._replace(w=w + tau * y * z), loss, loss > 0

    return OnlineLearner(init, pairwise_update(step), step, linear_readout, linear_score)


def solar_second_order(gamma=1e4, guard: bool = True) -> OnlineLearner:
    """SOLAR-II (AROW): on a pair with ``ℓ = max(0, 1 − y wᵀz) > 0`` (always if ``guard=False``),
    ``β = zᵀΣz + γ``, ``w += (ℓ/β) y Σz``, ``Σ −= (Σz)(Σz)ᵀ/β``. ``γ > 0``; ``guard`` is static."""
    check_number("gamma", gamma, low=0)
    gamma = jnp.asarray(gamma, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> SolarSecondOrderState:
        del key
        return SolarSecondOrderState(
            w=jnp.zeros(num_features, dtype), sigma=jnp.eye(num_features, dtype=dtype), t=jnp.zeros((), jnp.int32)
        )

    def step(state: SolarSecondOrderState, z, y):
        w, sigma = state.w, state.sigma
        loss = jnp.maximum(0.0, 1.0 - y * (w @ z))
        sz = sigma @ z
        beta = z @ sz + gamma.astype(w.dtype)
        updated = loss > 0 if guard else jnp.ones((), bool)
        w = jnp.where(updated, w + (loss / beta) * y * sz, w)
        sigma = jnp.where(updated, sigma - jnp.outer(sz, sz) / beta, sigma)
        return state._replace(w=w, sigma=sigma), loss, updated

    return OnlineLearner(init, pairwise_update(step), step, linear_readout, linear_score)
