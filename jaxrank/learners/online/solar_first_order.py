"""SOLAR-I (Wang, Wan, Zhang, Hoi, ACL 2015, eq. 4–6): PA-II with the squared hinge on pair
differences (Crammer et al. 2006).

On a pair ``(z, y)``: ``ℓ = max(0, 1 − y wᵀz)``, ``τ = ℓ / (‖z‖² + 1/(2C))``, ``w += τ y z``.
``step`` learns from one pair; ``update(state, query)`` runs one query's pair slots in order
(``pair_slots``) and also takes a ready ``QueryPairs``. Documents are scored by ``features @ w``.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.learners.online.pair_slots import pairwise_update
from jaxrank.types import InstanceInfo, Learner
from jaxrank.utils.checks import check_number

HPARAMS = {
    "c": 1e-5,  # aggressiveness C of PA-II; SOLAR paper §5.2 (online experiments)
}
OPTIONS: dict = {}


class SolarFirstOrderState(NamedTuple):
    w: jax.Array  # [D] weights
    c: jax.Array  # [] f32, C
    t: jax.Array  # [] i32, queries seen


def init(key, num_features: int, dtype=jnp.float32, *, c=HPARAMS["c"]) -> SolarFirstOrderState:
    """``w = 0``; ``C > 0`` (checked when concrete)."""
    del key
    check_number("c", c, low=0, fix="C is PA-II's aggressiveness, e.g. 1e-5 (SOLAR §5.2)")
    return SolarFirstOrderState(w=jnp.zeros(num_features, dtype), c=jnp.asarray(c, jnp.float32),
                                t=jnp.zeros((), jnp.int32))


def step(state: SolarFirstOrderState, z, y):
    """One pair (eq. 5–6): returns ``(state, InstanceInfo(ℓ, ℓ > 0))``."""
    w = state.w
    loss = jnp.maximum(0.0, 1.0 - y * (w @ z))
    tau = loss / (z @ z + 0.5 / state.c.astype(w.dtype))
    return state._replace(w=w + tau * y * z), InstanceInfo(loss=loss, updated=loss > 0)


def make() -> Learner:
    """SOLAR-I as a ``jaxrank.types.Learner`` (no static options)."""
    return Learner(init=init, update=functools.partial(pairwise_update, step), params=linear.params,
                   score=linear.score, step=step)
