"""The ragged query layout: flat documents with query offsets, views of it, and per-query work in buckets.

``RaggedQueries`` stores the ``N`` documents once (``[N, D]``) and the queries as offsets, so memory
is proportional to the documents: one 1,251-document query no longer pads 31,000 others to 2,048
(MSLR-WEB30K's padded batch would be 94% padding). Per-query computations (metrics, scoring each
query with its own model) run over *buckets*: queries grouped by list size rounded up to a power of
two, gathered into padded ``[B, L]`` blocks of at most ``max_cells`` documents. Padding is then at
most 2x per bucket, and only a few block shapes (powers of two in ``B`` and ``L``) ever compile.
"""

import functools
from typing import Callable, Iterator, NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data.svmlight import SVMLightData
from jaxrank.types import QueryBatch, RaggedQueries

Queries = Union[RaggedQueries, QueryBatch]
DENSE_LIMIT_BYTES = 1 << 30  # a padded batch larger than this, and over half padding, is refused
BLOCK_BYTES = 1 << 26  # the features of one bucket block: 64 MiB


def bucket_sizes(lengths, *, minimum: int = 8) -> np.ndarray:
    """``[Q]`` i64: each length (``[Q]`` ints, 0 counted as 1) padded up to a power of two, at least
    ``minimum``: the list sizes of buckets, so few block shapes ever compile."""
    lengths = np.maximum(np.asarray(lengths, np.int64), 1)
    _, exponent = np.frexp((lengths - 1).astype(np.float64))  # bit length of n - 1, exact below 2^53
    return np.maximum(minimum, np.left_shift(1, exponent.astype(np.int64)))


def bucket_size(num_docs: int, *, minimum: int = 8) -> int:
    """One list length padded up to a power of two (at least ``minimum``); see ``bucket_sizes``."""
    if num_docs < 1:
        raise ValueError(f"num_docs must be >= 1; got {num_docs}.")
    return int(bucket_sizes(np.asarray([num_docs]), minimum=minimum)[0])


def query_lengths(qids: np.ndarray) -> np.ndarray:
    """Documents per query ``[Q]`` for contiguous ``qids [N]``, in file order."""
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    return np.diff(np.r_[starts, qids.size])


def document_query(offsets: np.ndarray) -> np.ndarray:
    """``[N]`` i64: the query of each document."""
    return np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))


def normalize_documents(features: np.ndarray, offsets: np.ndarray, *, block_cells: int = 1 << 22) -> np.ndarray:
    """Min-max scales each feature to [0, 1] within each query (LETOR QueryLevelNorm), in place.

    Args:
      features: ``[N, D]`` f32.
      offsets: ``[Q + 1]`` query offsets.

    Returns:
      ``features``; a feature constant within a query becomes 0. Computed in float64 a block of
      queries at a time (about ``block_cells`` values, one query at least).
    """
    block = max(1, block_cells // max(features.shape[1], 1))
    q = 0
    num_queries = offsets.shape[0] - 1
    while q < num_queries:
        end = int(np.searchsorted(offsets, offsets[q] + block, side="right")) - 1
        end = min(max(end, q + 1), num_queries)
        lo_doc, hi_doc = int(offsets[q]), int(offsets[end])
        x = features[lo_doc:hi_doc].astype(np.float64)
        starts = offsets[q:end] - lo_doc
        lo = np.minimum.reduceat(x, starts, axis=0)
        hi = np.maximum.reduceat(x, starts, axis=0)
        owner = np.repeat(np.arange(end - q), np.diff(offsets[q:end + 1]))
        span = (hi - lo)[owner]
        scaled = np.where(span > 0, (x - lo[owner]) / np.where(span > 0, span, 1.0), 0.0)
        features[lo_doc:hi_doc] = scaled
        q = end
    return features


def ragged_queries(data: SVMLightData, *, normalize: bool = False, in_place: bool = False) -> RaggedQueries:
    """Documents of a parsed file (queries contiguous, as the parser checks) as ``RaggedQueries``.

    With ``normalize``, ``in_place=True`` scales ``data.features`` itself instead of a copy (the
    loaders own their arrays; this saves one ``[N, D]`` copy at peak)."""
    lengths = query_lengths(data.qids)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    features = np.asarray(data.features, np.float32)
    if normalize:
        owned = in_place and features is data.features and features.flags.writeable
        features = normalize_documents(features if owned else features.copy(), offsets)
    return RaggedQueries(features, np.asarray(data.labels, np.float32), offsets,
                         np.asarray(data.qids[offsets[:-1]], np.int64))


def as_ragged(queries: Queries) -> RaggedQueries:
    """The flat layout of either container (a ``QueryBatch`` loses its padding and empty queries)."""
    if isinstance(queries, RaggedQueries):
        return queries
    mask = np.asarray(queries.mask, bool)
    if mask.ndim != 2:
        raise ValueError(f"expected a QueryBatch of [Q, L] queries; got a mask of shape {mask.shape} "
                         "(stacked folds? pass one fold at a time).")
    keep = mask.any(axis=1)  # real documents keep their order; padding and empty queries go
    lengths = mask.sum(axis=1)[keep]
    qid = np.asarray(queries.qid, np.int64)[keep] if queries.qid is not None else np.flatnonzero(keep)
    return RaggedQueries(
        features=np.asarray(queries.features, np.float32)[mask],
        labels=np.asarray(queries.labels, np.float32)[mask],
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        qid=qid,
    )


def _padded_block(queries: RaggedQueries, rows: np.ndarray, list_size: int, features: bool):
    """Host arrays of the padded block of queries ``rows`` (``-1``: a fully masked row)."""
    lengths = np.where(rows >= 0, queries.lengths[np.maximum(rows, 0)], 0)
    positions = np.arange(list_size)
    mask = positions < np.minimum(lengths, list_size)[:, None]
    docs = np.where(mask, queries.offsets[np.maximum(rows, 0)][:, None] + positions, -1)
    take = np.maximum(docs, 0)
    labels = np.where(mask, queries.labels[take], 0.0).astype(np.float32)
    x = None
    if features:
        x = queries.features[take]
        x[~mask] = 0.0
    qid = np.where(rows >= 0, queries.qid[np.maximum(rows, 0)], -1)
    return docs, x, labels, mask, qid


def pad_queries(queries: Queries, list_size: Optional[int] = None, *, minimum: int = 8) -> QueryBatch:
    """The padded ``QueryBatch`` of ``queries`` (small data).

    Args:
      queries: ``RaggedQueries`` (or a ``QueryBatch``, re-padded).
      list_size: ``L``; default the power of two (at least ``minimum``) above the longest query.
        Longer queries keep their first ``L`` documents, with a warning.

    Raises:
      ValueError: when the batch would exceed 1 GiB and be mostly padding (use the ragged layout).
    """
    queries = as_ragged(queries)
    longest = queries.list_size
    size = bucket_size(max(longest, 1), minimum=minimum) if list_size is None else int(list_size)
    if size < 1:
        raise ValueError(f"list_size must be >= 1; got {list_size}.")
    if longest > size:
        import warnings

        warnings.warn(f"truncated {int(np.sum(queries.lengths > size))} queries longer than list_size={size} "
                      f"(the longest has {longest} documents)", stacklevel=2)
    dense_bytes = queries.num_queries * size * max(queries.num_features, 1) * 4
    if dense_bytes > DENSE_LIMIT_BYTES and dense_bytes > 2 * queries.features.nbytes:
        raise ValueError(
            f"a padded QueryBatch of {queries.num_queries} queries x {size} documents x {queries.num_features} features "
            f"would take {dense_bytes / 2**30:.1f} GiB, {1 - queries.features.nbytes / dense_bytes:.0%} of it padding "
            f"(the longest query has {longest} documents): keep the ragged layout (load with layout='ragged', "
            "the default), which every jaxrank entry point reads."
        )
    _, x, labels, mask, qid = _padded_block(queries, np.arange(queries.num_queries), size, True)
    return QueryBatch(jax.device_put(x), jax.device_put(labels), jax.device_put(mask), qid)


def _gather_documents(offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(docs, lengths)``: the flat documents of queries ``index`` in that order, and their counts."""
    lengths = np.diff(offsets)[index]
    placed = np.cumsum(lengths) - lengths
    docs = np.arange(int(lengths.sum())) - np.repeat(placed - offsets[index], lengths)
    return docs, lengths


def take_queries(queries: Queries, index) -> RaggedQueries:
    """The queries ``index`` (a subset, or a new order) of ``queries``."""
    queries = as_ragged(queries)
    index = np.asarray(index, np.int64).reshape(-1)
    docs, lengths = _gather_documents(queries.offsets, index)
    return RaggedQueries(queries.features[docs], queries.labels[docs],
                         np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), queries.qid[index])


def concat_queries(parts: Sequence[Queries]) -> RaggedQueries:
    """The queries of every part, in order (e.g. a fold's three splits: all of a LETOR set)."""
    parts = [as_ragged(p) for p in parts]
    widths = {p.num_features for p in parts}
    if len(widths) != 1:
        raise ValueError(f"parts disagree on the number of features: {sorted(widths)}.")
    lengths = np.concatenate([p.lengths for p in parts])
    return RaggedQueries(np.concatenate([p.features for p in parts]), np.concatenate([p.labels for p in parts]),
                         np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                         np.concatenate([p.qid for p in parts]))


class Bucket(NamedTuple):
    """A padded block of queries of similar list size (``B`` rows of ``L`` documents)."""

    queries: np.ndarray  # [B] i64 query index, -1 on padding rows
    docs: np.ndarray  # [B, L] i64 flat document index, -1 on padding
    batch: QueryBatch  # features [B, L, D] (empty [B, L, 0] without features), labels, mask on the device


def buckets(queries: Queries, *, features: bool = True, max_cells: Optional[int] = None,
            minimum: int = 8) -> Iterator[Bucket]:
    """The queries in padded blocks, by list size (powers of two from ``minimum``).

    Each block holds at most ``max_cells`` document slots (at least one query) and has a power of
    two of rows, padded with fully masked rows; every block of one list size has the same shape,
    so a function jitted over blocks compiles once per list size. ``max_cells`` defaults to the
    power of two that keeps a block's features within ``BLOCK_BYTES`` (at most ``2^18`` slots).
    ``features=False`` leaves the feature array empty (for work on scores given per document).
    """
    queries = as_ragged(queries)
    if max_cells is None:
        max_cells = default_cells(queries.num_features if features else 0)
    sizes = bucket_sizes(queries.lengths, minimum=minimum)
    for size in np.unique(sizes):
        members = np.flatnonzero(sizes == size)
        cap = 1 << (max(1, max_cells // int(size)).bit_length() - 1)  # largest power of two that fits
        rows = min(cap, bucket_size(members.size, minimum=1))
        for start in range(0, members.size, rows):
            chunk = members[start:start + rows]
            chunk = np.concatenate([chunk, np.full(rows - chunk.size, -1)])
            docs, x, labels, mask, qid = _padded_block(queries, chunk, int(size), features)
            if x is None:
                x = np.zeros(mask.shape + (0,), np.float32)
            yield Bucket(chunk, docs, QueryBatch(jax.device_put(x), jax.device_put(labels), jax.device_put(mask), qid))


def default_cells(num_features: int) -> int:
    """Document slots per block: a power of two in ``[2^10, 2^18]`` whose ``[cells, D]`` float32
    features fit in ``BLOCK_BYTES``."""
    cells = BLOCK_BYTES // (4 * max(num_features, 1))
    return 1 << min(18, max(10, cells.bit_length() - 1))


def map_queries(fn: Callable[[Bucket], jax.Array], queries: Queries, *, axis: int = 0, **bucket_kwargs) -> np.ndarray:
    """Runs ``fn`` on every bucket and gathers its per-query output into one array over queries.

    Args:
      fn: ``Bucket -> [..., B, ...]`` values with the bucket's rows on ``axis`` (jit it: it is
        called once per block, and compiles once per block shape).
      queries: either container.
      axis: the query axis of ``fn``'s output and of the result.
      **bucket_kwargs: ``features``, ``max_cells``, ``minimum`` (see ``buckets``).

    Returns:
      numpy ``[..., Q, ...]``: row ``q`` holds query ``q``'s values.
    """
    queries = as_ragged(queries)
    out = None
    for bucket in buckets(queries, **bucket_kwargs):
        values = np.moveaxis(np.asarray(fn(bucket)), axis, 0)
        real = bucket.queries >= 0
        if out is None:
            out = np.zeros((queries.num_queries,) + values.shape[1:], values.dtype)
        out[bucket.queries[real]] = values[real]
    return np.moveaxis(out, 0, axis)


def linear_query_values(fn: Callable, queries: Queries, weights) -> np.ndarray:
    """Per-query values of linear rankers: ``fn(scores, labels, mask [K, B, L], rows [B]) -> [K, B, ...]``
    on every bucket, with ``scores = x · weights[k]``; returns ``[K, Q, ...]``.

    ``weights [K, D]`` (any leading shape, flattened to ``K`` and restored). ``fn`` is jitted here,
    once per bucket shape; ``rows`` are the bucket's query indices (−1 on padding rows).
    """
    weights = jnp.asarray(weights)
    lead = weights.shape[:-1]
    flat = weights.reshape((-1, weights.shape[-1]))
    out = map_queries(lambda b: _linear_values(fn, b.batch, flat, jnp.asarray(b.queries, jnp.int32)), queries, axis=1)
    return out.reshape(lead + out.shape[1:])


@functools.partial(jax.jit, static_argnums=0)  # jit's own cache: one program per (fn, block shape)
def _linear_values(fn, batch, weights, rows):
    """``fn`` on the scores ``[K, B, L]`` of ``weights [K, D]`` over one bucket's ``batch``."""
    scores = jnp.einsum("bld,kd->kbl", batch.features.astype(weights.dtype), weights)
    return fn(scores, jnp.broadcast_to(batch.labels, scores.shape), jnp.broadcast_to(batch.mask, scores.shape), rows)
