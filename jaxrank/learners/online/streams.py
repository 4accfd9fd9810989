"""Instance streams of SOLAR's protocols (Wang et al., ACL 2015, Algorithm 1): every training
instance of a query collection once, grouped by query in file order, as flat document indices
(8 bytes an instance): the preference pairs ``(i, j)``, ``l_i > l_j`` (``jaxrank.pairs.PairIndex``)
for pairwise learners, the documents for pointwise ones. Built once on the host and shared by every
lane of a study (``vmap`` over permutations, folds, grids)."""

from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data.ragged import Queries, as_ragged
from jaxrank.pairs import preference_pairs


class InstanceStream(NamedTuple):
    first: jax.Array  # [T] i32 flat index of document i
    second: jax.Array  # [T] i32 flat index of document j (pairs, l_i > l_j) or i again (documents)
    offsets: jax.Array  # [Q + 1] i32, query q's instances are offsets[q]:offsets[q + 1]


class Documents(NamedTuple):
    features: jax.Array  # [N, D] the documents' features
    labels: jax.Array  # [N] f32 grades


def instance_stream(queries: Queries, instances: str = "pairs") -> InstanceStream:
    """The canonical instances of ``queries`` (built once on the host, on the device).

    Args:
      queries: ``RaggedQueries`` or ``QueryBatch``.
      instances: ``"pairs"`` or ``"documents"`` (``Learner.instances``).

    Raises:
      ValueError: for an unknown kind, or a collection with no instance at all.
    """
    queries = as_ragged(queries)
    if instances == "pairs":
        pairs = preference_pairs(queries)
        first, second, offsets = pairs.first, pairs.second, pairs.offsets
    elif instances == "documents":
        first = second = np.arange(queries.num_documents, dtype=np.int32)
        offsets = queries.offsets
    else:
        raise ValueError(f"instances must be 'pairs' or 'documents'; got {instances!r}.")
    if first.size == 0:
        raise ValueError(
            f"the collection ({queries.num_queries} queries) has no training {instances}: every query has a single "
            "document or a single grade. Check the labels, or the file passed."
        )
    return InstanceStream(jax.device_put(first.astype(np.int32)), jax.device_put(second.astype(np.int32)),
                          jax.device_put(offsets.astype(np.int32)))


def documents(queries: Queries, dtype=jnp.float32) -> Documents:
    """The device copy of the documents that a pass reads."""
    queries = as_ragged(queries)
    return Documents(jax.device_put(queries.features.astype(dtype, copy=False)), jax.device_put(queries.labels))


def stack_folds(folds: Sequence[Queries], instances: str, dtype=jnp.float32) -> tuple[Documents, InstanceStream]:
    """Every fold's documents and instances, padded to common sizes and stacked (leaves ``[F, ...]``);
    a padded fold has extra queries without instances, so a pass over it is the unpadded fold's."""
    folds = [as_ragged(f) for f in folds]
    streams = [instance_stream(f, instances) for f in folds]
    size = {name: max(getattr(s, name).shape[0] for s in streams) for name in InstanceStream._fields}
    num_docs = max(f.num_documents for f in folds)

    def pad_stream(s):
        tail = size["offsets"] - s.offsets.shape[0]  # extra queries without instances
        return InstanceStream(jnp.pad(s.first, (0, size["first"] - s.first.shape[0])),
                              jnp.pad(s.second, (0, size["second"] - s.second.shape[0])),
                              jnp.pad(s.offsets, (0, tail), mode="edge"))

    stream = jax.tree.map(lambda *a: jnp.stack(a), *[pad_stream(s) for s in streams])
    docs = Documents(
        jnp.stack([jnp.pad(jnp.asarray(f.features, dtype), ((0, num_docs - f.num_documents), (0, 0))) for f in folds]),
        jnp.stack([jnp.pad(jnp.asarray(f.labels), (0, num_docs - f.num_documents)) for f in folds]))
    return docs, stream
