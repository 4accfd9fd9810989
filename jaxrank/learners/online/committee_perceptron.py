"""Committee perceptron (Elsas, Carvalho, Carbonell, WSDM 2008), reconstructed from its description.

A perceptron on pair differences keeps its current hypothesis ``w`` and success count ``c`` (pairs
ranked correctly in a row). On ``s wᵀz > 0``: ``c += 1``. On a mistake: offer ``(w, c)`` to the
committee (fill the first empty slot while fewer than ``N`` members; otherwise replace the member
with the smallest count, lowest index on ties, when ``c`` is strictly larger), then ``w += s z``,
``c = 0``. Score: ``Σ_k c_k w_kᵀx`` over members, or ``wᵀx`` while the committee is empty.
The committee lives in fixed ``[N, D]`` arrays with a ``filled`` mask. The retention rule (success
counts) and the success-weighted vote are our reading: the paper's exact criterion was not available.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.learners.online.pair_slots import pairwise_update
from jaxrank.types import InstanceInfo, Learner
from jaxrank.utils.checks import check_int

HPARAMS: dict = {}
OPTIONS = {
    "num_members": 20,  # committee size N: 20 experts in SOLAR's experiments (Wang et al., ACL 2015, §5.2)
}


class CommitteeState(NamedTuple):
    w: jax.Array  # [D] current hypothesis
    count: jax.Array  # [] i32, its success count
    members: jax.Array  # [N, D] committee hypotheses (zero on empty slots)
    member_counts: jax.Array  # [N] i32, their success counts
    filled: jax.Array  # [N] bool, slot holds a member
    t: jax.Array  # [] i32, queries seen


def params(state: CommitteeState) -> jax.Array:
    """The vote ``Σ_k c_k w_k`` ``[D]``, or the current hypothesis while the committee is empty."""
    weights = jnp.where(state.filled, state.member_counts, 0).astype(state.members.dtype)
    vote = weights @ state.members  # [D]
    return jnp.where(state.filled.any(), vote, state.w)


def init(key, num_features: int, dtype=jnp.float32, *, num_members: int = OPTIONS["num_members"]) -> CommitteeState:
    del key
    return CommitteeState(
        w=jnp.zeros(num_features, dtype),
        count=jnp.zeros((), jnp.int32),
        members=jnp.zeros((num_members, num_features), dtype),
        member_counts=jnp.zeros(num_members, jnp.int32),
        filled=jnp.zeros(num_members, bool),
        t=jnp.zeros((), jnp.int32),
    )


def step(state: CommitteeState, z, y):
    w, count, members, member_counts, filled = state.w, state.count, state.members, state.member_counts, state.filled
    mistake = y * (w @ z) <= 0
    has_room = ~filled.all()
    weakest = jnp.argmin(jnp.where(filled, member_counts, jnp.iinfo(jnp.int32).max))
    slot = jnp.where(has_room, jnp.argmax(~filled), weakest)
    offer = mistake & (has_room | (count > member_counts[weakest]))
    new = state._replace(
        w=jnp.where(mistake, w + y * z, w),
        count=jnp.where(mistake, 0, count + 1),
        members=jnp.where(offer, members.at[slot].set(w), members),
        member_counts=jnp.where(offer, member_counts.at[slot].set(count), member_counts),
        filled=filled | (offer & (jnp.arange(filled.shape[0]) == slot)),
    )
    return new, InstanceInfo(loss=mistake.astype(w.dtype), updated=mistake)


def make(*, num_members: int = OPTIONS["num_members"]) -> Learner:
    """The committee perceptron with ``N = num_members`` (static, ``>= 1``)."""
    check_int("num_members", num_members, minimum=1)
    return Learner(init=functools.partial(init, num_members=int(num_members)),
                   update=functools.partial(pairwise_update, step), params=params, score=linear.score, step=step)
