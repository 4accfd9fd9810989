"""Per-document arrays to a padded, masked ``QueryBatch``; list-size buckets; per-query norms."""

import logging
from typing import Optional, Sequence

import jax.numpy as jnp
import numpy as np

from jaxrank.data.svmlight import SVMLightData
from jaxrank.types import QueryBatch

_log = logging.getLogger(__name__)


def bucket_size(num_docs: int, *, minimum: int = 8) -> int:
    """Pads a list length up to a power of two (at least ``minimum``) so few shapes compile."""
    if num_docs < 1:
        raise ValueError(f"num_docs must be >= 1; got {num_docs}.")
    return max(minimum, 1 << (int(num_docs) - 1).bit_length())


def query_lengths(qids: np.ndarray) -> np.ndarray:
    """Documents per query ``[Q]`` for contiguous ``qids [N]``, in file order."""
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    return np.diff(np.r_[starts, qids.size])


def normalize_per_query(features: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Min-max scales each feature to [0, 1] within each query (LETOR QueryLevelNorm).

    Args:
      features: ``[Q, L, D]``.
      mask: ``[Q, L]`` bool.

    Returns:
      ``[Q, L, D]``; a feature constant within a query becomes 0, padding stays 0.
    """
    m = mask[..., None]
    lo = np.min(np.where(m, features, np.inf), axis=1, keepdims=True)
    hi = np.max(np.where(m, features, -np.inf), axis=1, keepdims=True)
    span = hi - lo
    scaled = np.where(span > 0, (features - lo) / np.where(span > 0, span, 1.0), 0.0)
    return np.where(m, scaled, 0.0)


def group_queries(data: SVMLightData, *, list_size: Optional[int] = None, normalize: bool = False) -> QueryBatch:
    """Groups documents by query into a padded batch.

    Args:
      data: parsed documents whose queries are contiguous (the parser checks this).
      list_size: ``L``; default the bucket of the longest query. Longer queries keep their first
        ``L`` documents in file order, and the truncation is logged.
      normalize: min-max normalise features per query (``normalize_per_query``).

    Returns:
      ``QueryBatch`` with ``features [Q, L, D]``, ``labels [Q, L]``, ``mask [Q, L]``, ``qid [Q]``.
    """
    lengths = query_lengths(data.qids)
    size = bucket_size(int(lengths.max())) if list_size is None else int(list_size)
    if size < 1:
        raise ValueError(f"list_size must be >= 1; got {list_size}.")
    if lengths.max() > size:
        _log.warning("truncated %d queries longer than list_size=%d (longest has %d documents)",
                     int(np.sum(lengths > size)), size, int(lengths.max()))
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    query = np.repeat(np.arange(lengths.size), lengths)
    position = np.arange(data.qids.size) - starts[query]
    keep = position < size
    query, position = query[keep], position[keep]

    num_queries, num_features = lengths.size, data.features.shape[1]
    features = np.zeros((num_queries, size, num_features), np.float64)
    labels = np.zeros((num_queries, size), np.float32)
    mask = np.zeros((num_queries, size), bool)
    features[query, position] = data.features[keep]
    labels[query, position] = data.labels[keep]
    mask[query, position] = True
    if normalize:
        features = normalize_per_query(features, mask)
    return QueryBatch(
        features=jnp.asarray(features, jnp.float32),
        labels=jnp.asarray(labels),
        mask=jnp.asarray(mask),
        qid=jnp.asarray(data.qids[starts], jnp.int32),
    )


def stack_batches(batches: Sequence[QueryBatch]) -> QueryBatch:
    """Stacks batches (e.g. one per fold) into ``[F, Q_max, L_max, D]``, padding with fully masked
    queries and documents (zero features and labels, ``qid`` −1)."""
    q_max = max(b.features.shape[0] for b in batches)
    l_max = max(b.features.shape[1] for b in batches)
    dims = {b.features.shape[2] for b in batches}
    if len(dims) != 1:
        raise ValueError(f"batches disagree on the number of features: {sorted(dims)}.")

    def pad(b):
        dq, dl = q_max - b.features.shape[0], l_max - b.features.shape[1]
        return (np.pad(np.asarray(b.features), ((0, dq), (0, dl), (0, 0))),
                np.pad(np.asarray(b.labels), ((0, dq), (0, dl))),
                np.pad(np.asarray(b.mask), ((0, dq), (0, dl))),
                np.pad(np.asarray(b.qid), (0, dq), constant_values=-1))

    return QueryBatch(*(jnp.asarray(np.stack(a)) for a in zip(*[pad(b) for b in batches])))

