"""Pair instances of one padded query (SOLAR's triplet instances, Wang et al., ACL 2015, §3.1).

Slots run row-major over ``i < j`` of the padded list: ``(0, 1), (0, 2), …, (0, L−1), (1, 2), …``,
``P = L·(L−1)/2`` slots in all. Slot ``(i, j)`` is ``valid`` when both documents are real and their
grades differ; its instance is ``z = x_i − x_j`` with sign ``s = sign(l_i − l_j)`` (``+1``: ``i``
must rank above ``j``). Invalid slots hold ``z = 0`` and ``s = 0``. The index arrays come from
NumPy at trace time, so nothing loops over pairs.

Every pairwise learner's ``update`` accepts either a query or a ready ``QueryPairs``.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.pairs import QueryPairs
from jaxrank.types import UpdateInfo


def pair_index(list_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)`` of the ``L·(L−1)/2`` slots, row-major over ``i < j``."""
    first, second = np.triu_indices(list_size, k=1)
    return first.astype(np.int32), second.astype(np.int32)


def num_pair_slots(list_size: int) -> int:
    return list_size * (list_size - 1) // 2


def query_pairs(query) -> QueryPairs:
    """The padded pair instances of one query (``features [L, D]``, ``labels [L]``, ``mask [L]``)."""
    first, second = pair_index(query.features.shape[-2])
    x, labels, mask = query.features, query.labels, query.mask
    diff = labels[first] - labels[second]
    valid = mask[first] & mask[second] & (diff != 0)
    sign = jnp.where(valid, jnp.sign(diff), 0).astype(x.dtype)
    z = jnp.where(valid[:, None], x[first] - x[second], 0).astype(x.dtype)
    return QueryPairs(z=z, sign=sign, valid=valid, first=jnp.asarray(first), second=jnp.asarray(second))


def as_pairs(query_or_pairs) -> QueryPairs:
    return query_or_pairs if isinstance(query_or_pairs, QueryPairs) else query_pairs(query_or_pairs)


def scan_pairs(step, state, pairs: QueryPairs):
    """Runs ``step(state, z, s) -> (new_state, InstanceInfo)`` over the slots in order.

    Invalid slots leave the state untouched. Returns ``(state, UpdateInfo)``: ``loss`` (the mean of
    the per-slot losses before each update over valid slots; 0 when there are none), ``updates``
    (slots that changed the model) and ``instances`` (valid slots).
    """

    def body(carry, slot):
        state, updates, loss_sum = carry
        z, s, valid = slot
        new_state, info = step(state, z, s)
        state = jax.tree.map(lambda new, old: jnp.where(valid, new, old), new_state, state)
        updates = updates + (valid & info.updated).astype(jnp.int32)
        loss_sum = loss_sum + jnp.where(valid, info.loss, 0).astype(loss_sum.dtype)
        return (state, updates, loss_sum), None

    dtype = pairs.z.dtype
    init = (state, jnp.zeros((), jnp.int32), jnp.zeros((), dtype))
    (state, updates, loss_sum), _ = jax.lax.scan(body, init, (pairs.z, pairs.sign, pairs.valid))
    count = pairs.valid.sum().astype(jnp.int32)
    loss = loss_sum / jnp.maximum(count, 1).astype(dtype)
    return state, UpdateInfo(loss=loss, updates=updates, instances=count)


def pairwise_update(step, state, query):
    """``update(state, query | QueryPairs)`` of a learner with the one-pair ``step``: the slots in
    order, then ``t += 1`` (bind ``step`` with ``functools.partial``)."""
    state, info = scan_pairs(step, state, as_pairs(query))
    return state._replace(t=state.t + 1), info


__all__ = ["QueryPairs", "as_pairs", "num_pair_slots", "pair_index", "pairwise_update", "query_pairs",
           "scan_pairs"]
