"""Preference pairs of a query collection, as index arrays over its flat documents.

Every pairwise method in jaxrank reads the pairs ``(i, j)`` of documents of one query with
``l_i > l_j``. ``PairIndex`` lists them once, as two ``[P]`` int32 arrays of flat document indices
(8 bytes a pair), grouped by query in file order and, inside a query, ordered by ``(i, j)``
(row-major over the query's documents). Memory grows with the pairs, never with
``Q × L_max²`` or with ``P × D``: a pair's difference vector ``x_i − x_j`` is gathered when used.

The index is built on the host in blocks of queries of similar length (at most ``block_cells``
``(i, j)`` slots at a time), so building it for MSLR-WEB30K (about 200M pairs) needs no dense
``[Q, L, L]`` mask.
"""

from typing import NamedTuple

import numpy as np

from jaxrank.data.ragged import Queries, as_ragged


class PairIndex(NamedTuple):
    """The preference pairs of a ``RaggedQueries`` (host arrays)."""

    first: np.ndarray  # [P] i32 flat index of the preferred document i (l_i > l_j)
    second: np.ndarray  # [P] i32 flat index of the other document j
    offsets: np.ndarray  # [Q + 1] i64, query q's pairs are first/second[offsets[q]:offsets[q + 1]]

    @property
    def num_pairs(self) -> int:
        return self.first.shape[0]

    @property
    def counts(self) -> np.ndarray:
        """``[Q]`` pairs per query."""
        return np.diff(self.offsets)


def preference_pairs(queries: Queries, *, block_cells: int = 1 << 24) -> PairIndex:
    """Every ``(i, j)`` with ``l_i > l_j`` inside each query (see the module docstring).

    Args:
      queries: ``RaggedQueries`` or ``QueryBatch`` (padding is never paired).
      block_cells: ``(i, j)`` slots examined at once (bounds the scratch memory).

    Raises:
      ValueError: when there are 2^31 pairs or more (int32 indices).
    """
    queries = as_ragged(queries)
    offsets, labels = queries.offsets, queries.labels
    lengths = np.diff(offsets)
    counts = pairs_per_query(labels, offsets)
    total = int(counts.sum())
    if total >= 2**31:
        raise ValueError(f"{total:,} preference pairs do not fit in int32 indices; split the collection "
                         "(e.g. by fold) before building its pairs.")
    pair_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    first = np.empty(total, np.int32)
    second = np.empty(total, np.int32)
    sizes = 1 << np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    for size in np.unique(sizes):
        members = np.flatnonzero(sizes == size)
        rows = max(1, block_cells // int(size * size))
        for start in range(0, members.size, rows):
            q = members[start:start + rows]
            positions = np.arange(size)
            mask = positions < lengths[q][:, None]
            docs = np.where(mask, offsets[q][:, None] + positions, 0)
            lab = np.where(mask, labels[docs], 0.0)
            pref = mask[:, :, None] & mask[:, None, :] & (lab[:, :, None] > lab[:, None, :])
            b, i, j = np.nonzero(pref)  # ordered by (row, i, j): each query's pairs contiguous and in order
            slot = pair_offsets[q][b] + np.arange(b.size) - np.searchsorted(b, np.arange(q.size))[b]
            first[slot] = docs[b, i]
            second[slot] = docs[b, j]
    return PairIndex(first, second, pair_offsets)


def pairs_per_query(labels: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``[Q]`` i64 preference pairs of each query: ``(n² − Σ_g n_g²) / 2`` over its grades ``g``."""
    owner = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    order = np.lexsort((labels, owner))
    key_q, key_l = owner[order], labels[order]
    new_group = np.r_[True, (key_q[1:] != key_q[:-1]) | (key_l[1:] != key_l[:-1])]
    group_start = np.flatnonzero(new_group)
    group_size = np.diff(np.r_[group_start, owner.size])
    same_grade = np.bincount(key_q[group_start], weights=group_size.astype(np.float64) ** 2,
                             minlength=offsets.shape[0] - 1)
    n = np.diff(offsets).astype(np.float64)
    return np.round((n * n - same_grade) / 2).astype(np.int64)
