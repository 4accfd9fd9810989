"""SOLAR (Wang, Wan, Zhang, Hoi, ACL 2015): online pairwise learners on pair differences.

SOLAR-I is PA-II with the squared hinge (SPEC §1.2); SOLAR-II is AROW with a full covariance
(SPEC §1.3). ``update(state, query)`` runs one query's pair slots in order (``pairs.py``); it also
takes a ready ``Pairs`` so a protocol can shuffle and flip instances first. Documents are scored
by ``score(state, features) = features @ w``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import check_hparams
from jaxrank.learners.base import Learner
from jaxrank.learners.online.pairs import as_pairs, scan_pairs


class SolarFirstOrderState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    t: jax.Array  # [] i32, queries seen


class SolarSecondOrderState(NamedTuple):
    w: jax.Array  # [D] f32, mean
    sigma: jax.Array  # [D, D] f32, covariance
    t: jax.Array  # [] i32, queries seen


def score(state, features: jax.Array) -> jax.Array:
    """``[..., L]`` scores ``features @ w`` of any linear learner state with a ``w`` leaf."""
    return features @ state.w


def solar_first_order(c=1e-5) -> Learner:
    """SOLAR-I: ``ℓ = max(0, 1 − s wᵀz)``, ``τ = ℓ / (‖z‖² + 1/(2C))``, ``w += τ s z``. ``C > 0``."""
    check_hparams(c=(c, 0.0, False))
    c = jnp.asarray(c, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> SolarFirstOrderState:
        del key
        return SolarFirstOrderState(w=jnp.zeros(num_features, dtype), t=jnp.zeros((), jnp.int32))

    def step(w, z, s):
        loss = jnp.maximum(0.0, 1.0 - s * (w @ z))
        tau = loss / (z @ z + 0.5 / c.astype(w.dtype))
        return w + tau * s * z, loss, loss > 0

    def update(state: SolarFirstOrderState, query):
        w, info = scan_pairs(step, state.w, as_pairs(query))
        return SolarFirstOrderState(w=w, t=state.t + 1), info

    return Learner(init, update)


def solar_second_order(gamma=1e4, guard: bool = True) -> Learner:
    """SOLAR-II (AROW): on a pair with ``ℓ = max(0, 1 − s wᵀz) > 0`` (always if ``guard=False``),
    ``β = zᵀΣz + γ``, ``w += (ℓ/β) s Σz``, ``Σ −= (Σz)(Σz)ᵀ/β``. ``γ > 0``; ``guard`` is static."""
    check_hparams(gamma=(gamma, 0.0, False))
    gamma = jnp.asarray(gamma, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> SolarSecondOrderState:
        del key
        return SolarSecondOrderState(
            w=jnp.zeros(num_features, dtype), sigma=jnp.eye(num_features, dtype=dtype), t=jnp.zeros((), jnp.int32)
        )

    def step(carry, z, s):
        w, sigma = carry
        loss = jnp.maximum(0.0, 1.0 - s * (w @ z))
        sz = sigma @ z
        beta = z @ sz + gamma.astype(w.dtype)
        new = (w + (loss / beta) * s * sz, sigma - jnp.outer(sz, sz) / beta)
        updated = loss > 0 if guard else jnp.ones((), bool)
        new = jax.tree.map(lambda n, o: jnp.where(updated, n, o), new, carry)
        return new, loss, updated

    def update(state: SolarSecondOrderState, query):
        (w, sigma), info = scan_pairs(step, (state.w, state.sigma), as_pairs(query))
        return SolarSecondOrderState(w=w, sigma=sigma, t=state.t + 1), info

    return Learner(init, update)
