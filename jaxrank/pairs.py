"""Preference pairs: every pairwise method reads pairs ``(i, j)`` of documents of one query with
``l_i > l_j``, and this module names each form they take.

* ``PairIndex`` (host): every pair of a collection once, as two ``[P]`` int32 arrays of flat
  document indices (8 bytes a pair), grouped by query in file order and, inside a query, ordered
  by ``(i, j)`` (row-major over the query's documents); built by ``preference_pairs`` in blocks of
  queries of similar length, so MSLR-WEB30K's ~200M pairs need no ``[Q, L, L]`` mask. The online
  protocols' instance streams and the solvers' pair operators are made from it.
* ``PairRows`` / ``IndexedPairs`` (device): the pair operator ``(A w)_p = wᵀ(x_i − x_j)`` of the
  RankSVM solvers (``jaxrank.solvers.pairwise``), as explicit difference rows ``[P, D]`` (small
  collections) or as the documents plus ``PairIndex``'s indices (large ones); ``PairOperator`` is
  either.
* ``QueryPairs`` (device): the ``L(L−1)/2`` padded pair slots of one padded query, what an online
  learner's ``update(state, query)`` runs through (``jaxrank.learners.online.pair_slots``).
* ``PairBatch`` (device): one SGD step's sampled pairs of SPD and LCRA
  (``jaxrank.learners.pairwise.pair_sampling.sample_pairs``).

Memory grows with the pairs, never with ``Q × L_max²``; ``[P, D]`` rows only where ``P`` is small.
"""

from typing import NamedTuple, Union

import jax
import numpy as np

from jaxrank.data.ragged import Queries, as_ragged, bucket_sizes


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


class PairRows(NamedTuple):
    """The pair operator as explicit difference rows (small collections)."""

    diffs: jax.Array  # [P, D] float, x_i − x_j of pair p (l_i > l_j, same query), zero on padding
    valid: jax.Array  # [P] bool, False on padding pairs
    num_pairs: jax.Array  # [] float, N_p = valid.sum() (at least 1)

    @property
    def features(self):  # dtype and D for the solvers
        return self.diffs


class IndexedPairs(NamedTuple):
    """The pair operator as the documents and each pair's two document indices (large collections)."""

    features: jax.Array  # [N, D] float, the documents (zero rows on padding documents)
    first: jax.Array  # [P] i32, the preferred document i of pair p (sorted: PairIndex order)
    second: jax.Array  # [P] i32, the other document j
    valid: jax.Array  # [P] bool, False on padding pairs
    num_pairs: jax.Array  # [] float, N_p = valid.sum() (at least 1)


PairOperator = Union[PairRows, IndexedPairs]


class QueryPairs(NamedTuple):
    """The padded pair slots ``(i, j)``, ``i < j``, of one padded query, row-major; slot ``p`` holds
    ``z = x_i − x_j`` with sign ``sign(l_i − l_j)`` when both documents are real and differ in grade."""

    z: jax.Array  # [P, D] f32, x_i − x_j; zero on invalid slots
    sign: jax.Array  # [P] f32, sign(l_i − l_j) ∈ {−1, +1}; zero on invalid slots
    valid: jax.Array  # [P] bool, both documents real and l_i ≠ l_j
    first: jax.Array  # [P] i32, i
    second: jax.Array  # [P] i32, j


class PairBatch(NamedTuple):
    """One SGD step's pairs: ``k`` labeled and ``l`` unlabeled difference vectors."""

    p: jax.Array  # [k, D] f32, x_a − x_b
    y: jax.Array  # [k] f32, graded l_a − l_b (0 where not valid)
    valid: jax.Array  # [k] bool, False only for a skipped sofia_rank draw
    p_hat: jax.Array  # [l, D] f32, x_a − x_b of unlabeled pairs
    valid_hat: jax.Array  # [l] bool, False when the set has no unlabeled pair


def preference_pairs(queries: Queries, *, block_cells: int = 1 << 22) -> PairIndex:
    """Every ``(i, j)`` with ``l_i > l_j`` inside each query (see the module docstring).

    Queries of similar length are examined together, a block of ``[B, L, L]`` slots at a time; a
    query longer than ``sqrt(block_cells)`` alone, ``[H, n]`` slots (``H`` of its documents against
    all ``n``) at a time. Either way a block holds at most ``block_cells`` slots (or one row), so the
    scratch memory is bounded whatever the longest query; only the ``[P]`` output grows with the pairs.

    Args:
      queries: ``RaggedQueries`` or ``QueryBatch`` (padding is never paired).
      block_cells: ``(i, j)`` slots examined at once (bounds the scratch memory: about 30 bytes a slot
        where every slot is a pair).

    Returns:
      ``PairIndex``: ``first, second [P]`` i32 flat document indices, ``offsets [Q + 1]`` i64.

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
    sizes = bucket_sizes(lengths, minimum=1)
    for size in np.unique(sizes):
        members = np.flatnonzero(sizes == size)
        if size * size > block_cells:
            for q in members:
                _long_query_pairs(labels, int(offsets[q]), int(lengths[q]), int(pair_offsets[q]), block_cells,
                                  first, second)
            continue
        rows = block_cells // int(size * size)
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


def _long_query_pairs(labels: np.ndarray, start: int, length: int, slot: int, block_cells: int,
                      first: np.ndarray, second: np.ndarray) -> None:
    """Writes the pairs of the query of documents ``start:start + length`` from ``slot`` on, in
    ``(i, j)`` order, examining ``[H, length]`` slots (``H = block_cells // length``) at a time.
    Only documents above the query's lowest grade can be preferred, so only they are rows."""
    lab = labels[start:start + length]
    rows = np.flatnonzero(lab > lab.min())
    height = max(1, block_cells // length)
    for top in range(0, rows.size, height):
        block = rows[top:top + height]
        flat = np.flatnonzero(lab[block, None] > lab[None, :])  # row-major: (i, j) order
        i, j = np.divmod(flat, length)
        first[slot:slot + flat.size] = start + block[i]
        second[slot:slot + flat.size] = start + j
        slot += flat.size


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
