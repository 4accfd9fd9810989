"""``jaxrank.pairs.preference_pairs``: the pairs of every query in order, in blocks of bounded size
whatever the longest query, and the one power-of-two bucketing shared with ``jaxrank.data``."""

import tracemalloc

import numpy as np
import pytest

from jaxrank.pairs import preference_pairs
from jaxrank.types import RaggedQueries


def _queries(lengths, seed=0, relevant=0.3):
    rng = np.random.default_rng(seed)
    n = int(sum(lengths))
    labels = np.where(rng.random(n) < relevant, rng.integers(1, 3, n), 0).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return RaggedQueries(np.zeros((n, 1), np.float32), labels, offsets, np.arange(len(lengths), dtype=np.int64))


def _brute_force(queries):
    first, second, counts = [], [], []
    for q in range(queries.offsets.size - 1):
        lo, hi = queries.offsets[q], queries.offsets[q + 1]
        pairs = [(i, j) for i in range(lo, hi) for j in range(lo, hi) if queries.labels[i] > queries.labels[j]]
        first += [i for i, _ in pairs]
        second += [j for _, j in pairs]
        counts.append(len(pairs))
    return np.asarray(first), np.asarray(second), np.concatenate([[0], np.cumsum(counts)])


@pytest.mark.parametrize("block_cells", [1, 64, 1000, 1 << 24])
def test_pairs_match_brute_force_for_any_block_size(block_cells):
    """Short queries batched, long ones (``L^2 > block_cells``) in row blocks: same pairs, same order."""
    queries = _queries([1, 2, 5, 9, 300, 17, 33, 3, 130, 64])
    got = preference_pairs(queries, block_cells=block_cells)
    first, second, offsets = _brute_force(queries)
    np.testing.assert_array_equal(got.first, first)
    np.testing.assert_array_equal(got.second, second)
    np.testing.assert_array_equal(got.offsets, offsets)
    assert got.first.dtype == np.int32 and got.second.dtype == np.int32


def test_scratch_of_a_long_query_is_bounded_by_the_block_budget():
    """One 3,000-document query (bucket 4,096) among small ones: with ``block_cells = 2^16`` the scratch
    stays near 2^16 slots, not the ``[1, 4096, 4096]`` mask of the whole query (16 MiB and more)."""
    queries = _queries([20] * 50 + [3000] + [20] * 50, relevant=0.05)
    preference_pairs(queries, block_cells=1 << 16)  # warm up numpy's lazily allocated internals
    tracemalloc.start()
    try:
        pairs = preference_pairs(queries, block_cells=1 << 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    output = pairs.first.nbytes + pairs.second.nbytes + pairs.offsets.nbytes
    assert pairs.num_pairs > 100_000
    assert peak - output < 4 * 2**20, f"scratch {(peak - output) / 2**20:.1f} MiB"


def test_bucket_sizes_are_the_powers_of_two_at_or_above_each_length():
    from jaxrank.data import bucket_size, bucket_sizes

    lengths = np.array([0, 1, 2, 3, 4, 5, 8, 9, 1000, 1024, 1025, 2**40 + 1])
    expected = np.array([1, 1, 2, 4, 4, 8, 8, 16, 1024, 1024, 2048, 2**41])
    np.testing.assert_array_equal(bucket_sizes(lengths, minimum=1), expected)
    np.testing.assert_array_equal(bucket_sizes(lengths), np.maximum(expected, 8))
    assert [bucket_size(n) for n in (1, 8, 9, 1000)] == [8, 8, 16, 1024]
    assert bucket_size(3, minimum=1) == 4
    with pytest.raises(ValueError, match="num_docs must be >= 1; got 0"):
        bucket_size(0)
