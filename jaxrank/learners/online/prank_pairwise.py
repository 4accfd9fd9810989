"""Pairwise Prank, a baseline of SOLAR (Wang et al., ACL 2015, §5.2): Prank (Crammer & Singer, NIPS
2001) on the pair instances with one threshold (our reading; SOLAR gives no details).

On a pair ``(z, y)``: when ``y (wᵀz − b) ≤ 0``, ``w += y z`` and ``b −= y``; documents are ranked by
``wᵀx``. (Strict K = 2 Prank would not update on ``wᵀz − b = 0`` with ``y = +1``; the symmetric rule
used here does.) ``InstanceInfo.loss`` is the mistake (0 or 1), so ``UpdateInfo.loss`` is the
query's mistake rate.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.learners.online.pair_slots import pairwise_update
from jaxrank.types import InstanceInfo, Learner

HPARAMS: dict = {}
OPTIONS: dict = {}


class PrankPairwiseState(NamedTuple):
    w: jax.Array  # [D] weights
    b: jax.Array  # [] the single threshold
    t: jax.Array  # [] i32, queries seen


def init(key, num_features: int, dtype=jnp.float32) -> PrankPairwiseState:
    del key
    return PrankPairwiseState(w=jnp.zeros(num_features, dtype), b=jnp.zeros((), dtype), t=jnp.zeros((), jnp.int32))


def step(state: PrankPairwiseState, z, y):
    mistake = y * (state.w @ z - state.b) <= 0
    new = state._replace(w=jnp.where(mistake, state.w + y * z, state.w), b=jnp.where(mistake, state.b - y, state.b))
    return new, InstanceInfo(loss=mistake.astype(state.w.dtype), updated=mistake)


def make() -> Learner:
    """Pairwise Prank as a ``jaxrank.types.Learner`` (no static options)."""
    return Learner(init=init, update=functools.partial(pairwise_update, step), params=linear.params,
                   score=linear.score, step=step)
