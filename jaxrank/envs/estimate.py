"""Estimate a preference matrix ``P`` of rankers by many simulated interleaved comparisons.

Zoghi et al. (WSDM 2014, §6) estimate ``P`` for the MSLR feature rankers with 80,000 probabilistic
interleaving comparisons per pair (perfect click model), then run the bandits on that matrix.
Each comparison here is exactly one ``InterleavedDuelEnv.duel``: a uniform query, an interleaved
list (probabilistic or team-draft interleave), cascade clicks, the outcome, and a fair coin on ties. So
``P[i, j]`` is the fraction of the ``n`` comparisons of the pair that ranker ``i`` (shown as
ranker 1) won, ``P[j, i] = 1 - P[i, j]`` and the diagonal is 1/2.

Speed. The rankers are fixed, so each ranker's ranking of each query is computed once (on the
host, ties by document index as in ``jaxrank.clicks``) and stored flat like ``RaggedQueries``:
``ranks [K, N]`` and ``order [K, N]`` (int16 while the longest query has fewer than 32,768
documents), so memory grows with the ``N`` documents, never with ``Q x L_max``. A comparison then
builds its list with ``jaxrank.clicks``' interleavers over ``TableRankings``, which work in rank
space, reading single entries through the query's offset: a ranker samples a rank among its
ranks not yet shown with weights ``r^-τ`` by inverting the cumulative table ``C[r] = Σ_{s<=r} s^-τ``
after skipping the at most ``L - 1`` shown ranks (``sample_rank``, an ``O(L^2)`` correction), and
team draft's "highest-ranked document not yet shown" is the first rank not in that small set.
Cost per comparison is ``O(L^2)`` whatever the query's length. Memory: the ``2 K N`` table
entries (the 136 MSLR feature rankers on MSLR-WEB30K's 3.77M documents: 2 GB) plus bounded host
scratch while they are built (see ``rankings``).

Determinism: comparison ``c`` of pair ``(i, j)`` draws from ``fold_in(fold_in(fold_in(key, i), j), c)``
alone. The pairs are the lanes of ``jaxrank.lanes.run_lanes`` (sharded over every device, in
chunks of comparisons, resumable from a checkpoint), and the counts do not depend on the chunking,
the other pairs or the number of devices.
"""

import functools
import time
from typing import Iterator, NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes
from jaxrank.clicks import SimulatedUser
from jaxrank.data.ragged import as_ragged
from jaxrank.envs.ranker_duel import check_duel_inputs, device_user, interleaved_duel
from jaxrank.types import Array, QueryBatch, RaggedQueries

Queries = Union[RaggedQueries, QueryBatch]
MAX_DOCS_PER_BLOCK = 1 << 16  # keeps (query index, within-query position) within 32 bits of a sort key
_FLAT_KEY_BITS = 32  # (ranker, query, position) bits that fit beside the 32 score bits: one flat sort per block


class Rankings(NamedTuple):
    """Each ranker's fixed ranking of each query, flat over the ``N`` documents (ties by document index).

    Row ``offsets[q] + m`` is document ``m`` of query ``q`` (file order, as in ``RaggedQueries``).
    Integer tables are int16 while the longest query has fewer than 32,768 documents, else int32.
    """

    ranks: Array  # [K, N] i16/i32, ranks[k, offsets[q] + m] = 1-based rank of document m of query q under ranker k
    order: Array  # [K, N] i16/i32, order[k, offsets[q] + r - 1] = the (within-query) document at rank r
    offsets: Array  # [Q] i32, first row of each query
    num_docs: Array  # [Q] i32, documents per query
    labels: Array  # [N] f32

    def query(self, rankers: Array, q: Array, weights: Optional["RankWeights"] = None) -> "TableRankings":
        """Rankers ``rankers [n]``' rankings of query ``q``, read lazily (no ``[L]`` copy)."""
        return TableRankings(self.ranks, self.order, jnp.asarray(rankers, jnp.int32), self.offsets[q],
                             self.num_docs[q], weights)


class Estimate(NamedTuple):
    """Raw counts behind a preference matrix (numpy, float64/int64)."""

    pref: np.ndarray  # [K, K] f64, P[i, j] = fraction of comparisons won by i (ties by coin), diag 1/2
    counts: np.ndarray  # [K, K] i64, comparisons of each pair (0 on the diagonal)
    wins: np.ndarray  # [K, K] i64, wins[i, j] = comparisons of (i, j) won by i
    ties: np.ndarray  # [K, K] i64, comparisons whose outcome was 0 (settled by the coin), symmetric
    seconds: float  # wall time of the comparisons (compile included; the rankings excluded)


def rank_dtype(list_size: int):
    """int16 when every rank and position of a ``list_size``-document query fits, else int32."""
    if list_size >= 2**31:
        raise ValueError(f"a query has {list_size} documents; at most 2^31 - 1 are supported.")
    return np.int16 if list_size < 2**15 else np.int32


def _query_blocks(offsets: np.ndarray, max_docs: int) -> Iterator[tuple[int, int]]:
    """``(q0, q1)``: runs of whole contiguous queries of at most ``max_docs`` documents (a longer query alone)."""
    q, num_queries = 0, offsets.shape[0] - 1
    while q < num_queries:
        end = int(np.searchsorted(offsets, offsets[q] + max_docs, side="right")) - 1
        end = min(max(end, q + 1), num_queries)
        yield q, end
        q = end


def _descending_key(scores: np.ndarray) -> np.ndarray:
    """``uint32`` keys that sort ``scores`` descending: NaN last, ``-0.0`` equal to ``0.0``.

    The order of ``np.lexsort((-scores, ...))``: IEEE bits mapped to a monotone integer, inverted.
    """
    s = scores + np.float32(0.0)  # -0.0 + 0.0 = +0.0: the two zeros tie, as in a float comparison
    u = s.view(np.uint32)
    key = np.where(u >> np.uint32(31), u, ~u & np.uint32(0x7FFFFFFF))
    key[np.isnan(s)] = np.uint32(0xFFFFFFFF)
    return key


def _rank_block(features: np.ndarray, weights: np.ndarray, lengths: np.ndarray, ranks: np.ndarray,
                order: np.ndarray) -> None:
    """Ranks the contiguous queries of one block under ``weights``; fills ``ranks`` and ``order`` in place.

    Args:
      features: ``[n, D]`` f32, the block's documents (whole queries, file order).
      weights: ``[k, D]`` f32 rankers.
      lengths: ``[B]`` documents of each of the block's queries (sum ``n``).
      ranks, order: ``[k, n]`` views of ``Rankings.ranks`` / ``.order`` for these rankers and rows.

    One ``uint64`` key per (ranker, document): ``(group, descending score, position)`` bit-packed,
    with ``group`` the query (and, when the bits allow, the ranker: one flat sort for all of them).
    Keys are unique, so an unstable sort gives the stable order: ties by document position.
    """
    num_rankers, n = weights.shape[0], features.shape[0]
    num_queries = lengths.shape[0]
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)  # [n] first row of each row's query
    position = np.arange(n) - starts  # [n] within-query index
    pbits = int(lengths.max() - 1).bit_length()
    qbits = (num_queries - 1).bit_length()
    flat = (num_rankers - 1).bit_length() + qbits + pbits <= _FLAT_KEY_BITS
    group = np.repeat(np.arange(num_queries, dtype=np.uint64), lengths)[None]  # [1, n]
    if flat:
        group = group + (np.arange(num_rankers, dtype=np.uint64) * np.uint64(num_queries))[:, None]
    scores = np.einsum("nd,kd->kn", features, weights)  # [k, n] f32
    keys = (group << np.uint64(32 + pbits)) | (_descending_key(scores).astype(np.uint64) << np.uint64(pbits))
    keys |= position.astype(np.uint64)
    keys = np.sort(keys.reshape(-1)).reshape(keys.shape) if flat else np.sort(keys, axis=-1)
    ranked = (keys & np.uint64((1 << pbits) - 1)).astype(np.int64)  # [k, n] document at each rank position
    order[:] = ranked
    np.put_along_axis(ranks, starts[None] + ranked, (position + 1)[None].astype(ranks.dtype), axis=-1)


@functools.partial(jax.jit, donate_argnums=0)
def _put_rows(table: Array, rows: Array, start: Array) -> Array:
    """``table`` with rows ``start ..`` replaced by ``rows`` (in place: the old table is donated)."""
    return jax.lax.dynamic_update_slice_in_dim(table, rows, start, axis=0)


def rankings(queries: Queries, rankers, *, rankers_per_pass: int = 16,
             docs_per_block: int = MAX_DOCS_PER_BLOCK) -> Rankings:
    """Computes every ranker's ranking of every query once (float32 scores, sorted on the host).

    Ties are broken by document index (the earlier document first): the convention of
    ``jaxrank.clicks``' interleaving functions. Memory: the result (``2 K N`` int16 on the device)
    plus host scratch of ``rankers_per_pass`` rows of ``N`` (staged, then copied to the device) and
    ``O(rankers_per_pass x docs_per_block)`` for scoring and sorting one block of queries.

    Args:
      queries: ``RaggedQueries`` (or a ``QueryBatch``, converted with ``as_ragged``).
      rankers: ``[K, D]`` linear rankers, score = ``features @ rankers[k]``.
      rankers_per_pass: rankers scored and sorted together.
      docs_per_block: documents of contiguous whole queries sorted together (a longer query alone);
        at most 65,536. Neither setting changes the result.

    Returns:
      ``Rankings`` on the default device.
    """
    queries = as_ragged(queries)
    weights = np.asarray(rankers, np.float32)
    if weights.ndim != 2 or weights.shape[1] != queries.num_features:
        raise ValueError(f"rankers must be [K, D] with D = {queries.num_features} (the queries' features); "
                         f"got shape {weights.shape}.")
    if isinstance(rankers_per_pass, bool) or not isinstance(rankers_per_pass, (int, np.integer)) \
            or rankers_per_pass < 1:
        raise ValueError(f"rankers_per_pass must be an int >= 1; got {rankers_per_pass!r}.")
    if not isinstance(docs_per_block, (int, np.integer)) or not 1 <= docs_per_block <= MAX_DOCS_PER_BLOCK:
        raise ValueError(f"docs_per_block must be an int in [1, {MAX_DOCS_PER_BLOCK}]; got {docs_per_block!r}.")
    num_rankers, num_docs = weights.shape[0], queries.num_documents
    if num_docs >= 2**31:
        raise ValueError(f"{num_docs} documents: row indices must fit int32 (split the collection).")
    offsets = np.asarray(queries.offsets, np.int64)
    dtype = rank_dtype(queries.list_size)
    ranks = jnp.zeros((num_rankers, num_docs), dtype)
    order = jnp.zeros((num_rankers, num_docs), dtype)
    blocks = list(_query_blocks(offsets, int(docs_per_block)))
    for k0 in range(0, num_rankers, int(rankers_per_pass)):
        w = weights[k0:k0 + rankers_per_pass]
        host_ranks = np.empty((w.shape[0], num_docs), dtype)
        host_order = np.empty((w.shape[0], num_docs), dtype)
        for q0, q1 in blocks:
            lo, hi = int(offsets[q0]), int(offsets[q1])
            _rank_block(queries.features[lo:hi], w, np.diff(offsets[q0:q1 + 1]), host_ranks[:, lo:hi],
                        host_order[:, lo:hi])
        start = jnp.asarray(k0, jnp.int32)
        ranks = _put_rows(ranks, host_ranks, start)
        order = _put_rows(order, host_order, start)
        del host_ranks, host_order
    return Rankings(ranks, order, jnp.asarray(offsets[:-1], jnp.int32), jnp.asarray(np.diff(offsets), jnp.int32),
                    jnp.asarray(queries.labels, jnp.float32))


class RankWeights(NamedTuple):
    """Probabilistic interleave's rank weights, tabulated once (gathers, not ``pow``, per comparison)."""

    weight: Array  # [L + 1] f32, weight[r] = r^-τ, weight[0] = 0
    cumulative: Array  # [L + 1] f32, C[r] = Σ_{s=1..r} s^-τ, C[0] = 0 (summed in f64)


def rank_weights_table(num_docs: int, tau: float) -> RankWeights:
    """``RankWeights`` for ranks ``0..L`` (``L`` = ``num_docs``, the longest query) and exponent ``τ``."""
    r = np.arange(1, num_docs + 1, dtype=np.float64)
    w = r ** -float(tau)
    return RankWeights(jnp.asarray(np.concatenate([[0.0], w]), jnp.float32),
                       jnp.asarray(np.concatenate([[0.0], np.cumsum(w)]), jnp.float32))


def _skip_shown(rank: Array, shown_ranks: Array, valid: Array, step: int) -> Array:
    """Moves ``rank`` up past shown ranks (``valid`` entries of ``shown_ranks``) until it is free."""
    for _ in range(shown_ranks.shape[-1]):
        rank = rank + step * jnp.any(valid & (shown_ranks == rank)).astype(rank.dtype)
    return rank


def sample_rank(u: Array, shown_ranks: Array, valid: Array, table: RankWeights, num_docs: Array):
    """Samples a rank among ``1..n`` minus the shown ones with ``P(r) ∝ r^-τ`` by one uniform.

    Inverse CDF over ranks with the shown ranks removed: with ``F(r) = C[r] - Σ_{shown ρ <= r}
    ρ^-τ`` (non-decreasing, flat at shown ranks) the draw is the smallest ``r`` with
    ``F(r) > t``, ``t = u · F(n)``. The shown ranks below it are exactly those with
    ``F(ρ) <= t``, so ``r = searchsorted(C, t + Σ_{ρ: F(ρ) <= t} ρ^-τ)``: ``O(L^2)`` with no loop
    over documents.

    Args:
      u: ``[]`` uniform in [0, 1).
      shown_ranks: ``[L]`` i32 ranks (under this ranker) of the documents shown so far.
      valid: ``[L]`` bool, which entries of ``shown_ranks`` are set.
      table: ``RankWeights`` from ``rank_weights_table``.
      num_docs: ``[]`` i32, ``n``.

    Returns:
      ``(rank, total)``: the 1-based rank (i32) and ``F(n)``, the remaining weight (f32).
    """
    cumulative = table.cumulative
    w_shown = jnp.where(valid, table.weight[shown_ranks], 0.0)  # [L]
    total = cumulative[num_docs] - jnp.sum(w_shown)
    t = u * total
    below = valid[:, None] & (shown_ranks[:, None] <= shown_ranks[None, :])  # [i, j]: ρ_i <= ρ_j
    f_shown = cumulative[shown_ranks] - jnp.sum(jnp.where(below, w_shown[:, None], 0.0), axis=0)
    skipped = jnp.sum(jnp.where(valid & (f_shown <= t), w_shown, 0.0))
    rank = jnp.searchsorted(cumulative, t + skipped, side="right").astype(jnp.int32)
    # Float rounding can land on a shown rank or past n (probability ~1e-7): step to a free rank.
    rank = _skip_shown(jnp.clip(rank, 1, num_docs), shown_ranks, valid, 1)
    rank = _skip_shown(jnp.minimum(rank, num_docs), shown_ranks, valid, -1)
    return rank, total


class TableRankings(NamedTuple):
    """``jaxrank.clicks.lists.QueryRankings`` of ``n`` rankers on one query of ``Rankings``, in rank space.

    The state is the ranks ``[n, L]`` (under each ranker) of the documents shown so far and their
    count: the highest-ranked free document is the first rank not among them (``_skip_shown``) and
    a softmax draw is ``sample_rank``, so a list costs ``O(L^2)`` whatever the query's length.
    Documents are drawn by inverse CDF in rank order (``jaxrank.clicks`` draws in document order
    on a padded query: the same distribution).
    """

    ranks: Array  # [K, N] Rankings.ranks
    order: Array  # [K, N] Rankings.order
    rankers: Array  # [n] i32 rows of the tables
    offset: Array  # [] i32 the query's first row
    num_docs: Array  # [] i32 documents n of the query
    weights: Optional[RankWeights] = None  # covering ranks up to n (probabilistic lists only)

    def rank_of(self, doc: Array) -> Array:
        """``[n]`` i32 1-based rank of within-query document ``doc`` under each ranker."""
        return self.ranks[self.rankers, self.offset + doc].astype(jnp.int32)

    def doc_at(self, ranker: Array, rank: Array) -> Array:
        """``[]`` i32 within-query document at 1-based ``rank`` of ranker ``ranker`` (``0..n-1``)."""
        return self.order[self.rankers[ranker], self.offset + rank - 1].astype(jnp.int32)

    def start(self, list_size: int):
        return jnp.zeros((self.rankers.shape[0], list_size), jnp.int32), jnp.zeros((), jnp.int32)

    def best(self, state, ranker: Array) -> Array:
        shown_ranks, count = state
        valid = jnp.arange(shown_ranks.shape[-1]) < count
        return self.doc_at(ranker, _skip_shown(jnp.ones((), jnp.int32), shown_ranks[ranker], valid, 1))

    def draw(self, state, ranker: Array, u: Array) -> Array:
        shown_ranks, count = state
        valid = jnp.arange(shown_ranks.shape[-1]) < count
        return self.doc_at(ranker, sample_rank(u, shown_ranks[ranker], valid, self.weights, self.num_docs)[0])

    def chances(self, state, doc: Array) -> tuple[Array, Array]:
        shown_ranks, count = state
        valid = jnp.arange(shown_ranks.shape[-1]) < count
        total = jnp.stack([self.weights.cumulative[self.num_docs]
                           - jnp.sum(jnp.where(valid, self.weights.weight[shown_ranks[k]], 0.0))
                           for k in range(shown_ranks.shape[0])])
        return self.weights.weight[self.rank_of(doc)], total

    def take(self, state, doc: Array, shown: Array):
        del shown  # positions after the last shown one are never read (valid counts the slots before)
        shown_ranks, count = state
        return shown_ranks.at[:, count].set(self.rank_of(doc)), count + 1


def compare(key, i, j, tables: Rankings, click_model: SimulatedUser, weights: RankWeights, *, method: str,
            list_size: int):
    """One interleaved comparison of rankers ``i`` and ``j``: ``(first_won, tie)`` bools.

    ``InterleavedDuelEnv.duel`` (uniform query, interleave, cascade clicks, outcome, coin on
    ties) on the precomputed rankings.
    """
    def query(q):
        return tables.query(jnp.stack([i, j]), q, weights), tables.labels, tables.offsets[q]

    won, outcome = interleaved_duel(key, tables.num_docs.shape[0], query, click_model, method=method,
                                    list_size=list_size)
    return won, outcome == 0.0


class ComparisonConfig(NamedTuple):
    """The static configuration of ``comparison_study`` (hashable: jit's cache key)."""

    method: str
    list_size: int
    block: int


def comparison_study(method: str, list_size: int, block: int) -> lanes.Study:
    """The estimate as a ``jaxrank.lanes.Study``: one lane per pair ``(i, j)``, chunks of ``block`` comparisons.

    The lane's key is ``fold_in(fold_in(key, i), j)`` and comparison ``c`` draws from
    ``fold_in(lane key, c)`` alone, so the counts do not depend on the block, the chunks per call,
    the other pairs or the devices. ``data = (tables, click_model, weights, num_comparisons)``,
    ``lane_data = [2] i32`` the pair, a chunk is the first comparison ``[] i32`` of its block
    (comparisons ``>= num_comparisons`` are padding and not counted). The carry and the result
    hold the pair's ``(wins of i, ties)`` ``[] i32``.
    """
    return lanes.bound_study(ComparisonConfig(method, int(list_size), int(block)), _comparison_init,
                             _comparison_advance, _comparison_result)


def _comparison_init(config: ComparisonConfig, key, hparams, data, pair):
    del config, hparams, data, pair
    zero = jnp.zeros((), jnp.int32)
    return key, zero, zero


def _comparison_advance(config: ComparisonConfig, carry, start, data, pair):
    key, wins, ties = carry
    tables, click_model, weights, num_comparisons = data
    c = start + jnp.arange(config.block, dtype=jnp.int32)
    won, tie = jax.vmap(lambda c: compare(jax.random.fold_in(key, c), pair[0], pair[1], tables, click_model,
                                          weights, method=config.method, list_size=config.list_size))(c)
    valid = c < num_comparisons
    return key, wins + jnp.sum(won & valid, dtype=jnp.int32), ties + jnp.sum(tie & valid, dtype=jnp.int32)


def _comparison_result(config: ComparisonConfig, carry, data, pair):
    del config, data, pair
    return carry[1], carry[2]


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an int >= 1; got {value!r}.")
    return int(value)


def estimate_wins(key, queries: Queries, rankers, click_model: SimulatedUser, method: str, num_comparisons: int, *,
                  list_size: int = 10, tau: float = 3.0, chunk_size: int = 1 << 16,
                  comparisons_per_call: int = 1 << 22, mesh=None, checkpoint: Optional[lanes.Checkpoint] = None,
                  verbose: bool = True) -> Estimate:
    """``estimate_preference_matrix`` with the raw counts (wins, ties) and the wall time.

    Runs on ``jaxrank.lanes.run_lanes``: one lane per pair, sharded over ``mesh`` (default every
    device), in chunks of ``chunk_size`` comparisons over all pairs (``chunk_size // #pairs`` per
    pair, at least 1: bounds memory), ``comparisons_per_call`` per compiled call (progress and
    checkpoints come between calls). With ``checkpoint`` (``lanes.Checkpoint``) a killed run
    resumes from its last call. None of these settings changes the counts.
    """
    queries = as_ragged(queries)  # a FittedUser numbers these flat rows (offsets[q] + d)
    weights = check_duel_inputs(queries, rankers, click_model, method=method, list_size=list_size, tau=tau)
    if queries.num_queries == 0:
        raise ValueError("the collection has no query with a document: nothing to compare on.")
    num_arms = weights.shape[0]
    if num_arms < 2:
        raise ValueError(f"need at least 2 rankers; got {num_arms}.")
    num_comparisons = _check_count("num_comparisons", num_comparisons)
    chunk_size = _check_count("chunk_size", chunk_size)
    comparisons_per_call = _check_count("comparisons_per_call", comparisons_per_call)
    if num_comparisons >= 2**31 - chunk_size:
        raise ValueError(f"num_comparisons = {num_comparisons} is too many for int32 comparison indices.")
    pairs = np.stack(np.triu_indices(num_arms, 1), axis=-1).astype(np.int32)  # (0, 1), (0, 2), ..., row-major
    num_pairs = len(pairs)
    block = min(max(chunk_size // num_pairs, 1), num_comparisons)  # comparisons per pair per chunk
    num_chunks = -(-num_comparisons // block)
    num_calls = -(-num_chunks // max(comparisons_per_call // (block * num_pairs), 1))
    chunks_per_call = -(-num_chunks // num_calls)  # pads at most one chunk per call
    starts = np.arange(num_calls * chunks_per_call, dtype=np.int32) * block

    start = time.perf_counter()
    tables = jax.block_until_ready(rankings(queries, weights))
    if verbose:
        print(f"[estimate] rankings of {num_arms} rankers x {queries.num_documents:,} documents "
              f"({queries.num_queries:,} queries, longest {queries.list_size}) in {time.perf_counter() - start:.1f} s",
              flush=True)
    data = (tables, device_user(click_model), rank_weights_table(queries.list_size, tau),
            jnp.asarray(num_comparisons, jnp.int32))
    lane_keys = jax.vmap(lambda ij: jax.random.fold_in(jax.random.fold_in(key, ij[0]), ij[1]))(jnp.asarray(pairs))
    if checkpoint is not None:
        checkpoint = checkpoint._replace(inputs={**checkpoint.inputs, "study": "estimate_wins", "method": method,
                                                 "list_size": int(list_size), "block": block})
    start = time.perf_counter()
    wins, ties = lanes.run_lanes(comparison_study(method, int(list_size), block), lane_keys, data=data, lane_data=pairs,
                                 chunks=starts, chunks_per_call=chunks_per_call, mesh=mesh, checkpoint=checkpoint,
                                 label="estimate" if verbose else None,
                                 progress=np.minimum(starts + block, num_comparisons))
    seconds = time.perf_counter() - start

    w = np.zeros((num_arms, num_arms), np.int64)
    t = np.zeros((num_arms, num_arms), np.int64)
    counts = np.zeros((num_arms, num_arms), np.int64)
    i, j = pairs[:, 0], pairs[:, 1]
    w[i, j], w[j, i] = wins, num_comparisons - wins
    t[i, j] = t[j, i] = ties
    counts[i, j] = counts[j, i] = num_comparisons
    pref = np.full((num_arms, num_arms), 0.5)
    pref[i, j] = wins / num_comparisons
    pref[j, i] = 1.0 - pref[i, j]
    return Estimate(pref, counts, w, t, seconds)


def estimate_preference_matrix(key, queries: Queries, rankers, click_model: SimulatedUser, method: str,
                               num_comparisons: int, **options) -> tuple[np.ndarray, np.ndarray]:
    """Estimates ``P`` for the rankers by ``num_comparisons`` interleaved comparisons per pair.

    Args:
      key: PRNG key; comparison ``c`` of pair ``(i, j)`` draws from
        ``fold_in(fold_in(fold_in(key, i), j), c)`` alone.
      queries: ``RaggedQueries`` (or a ``QueryBatch``, converted with ``as_ragged``: its empty
        queries are dropped); each comparison samples one of the ``Q`` queries uniformly.
      rankers: ``[K, D]`` linear rankers (e.g. ``single_feature_rankers``).
      click_model: ``CascadeModel`` (``cascade_model("perfect", 5)`` for MSLR, as the paper), or a
        ``FittedUser`` over the ragged queries' ``N`` rows (``jaxrank.clicks.fitted``).
      method: ``"probabilistic"`` or ``"team_draft"``.
      num_comparisons: ``n`` per pair (80,000 in the paper).
      **options: ``estimate_wins``' keyword arguments: ``list_size`` (10), ``tau`` (3), and how it
        runs (``chunk_size``, ``comparisons_per_call``, ``mesh``, ``checkpoint``, ``verbose``),
        which does not change the result.

    Returns:
      ``(P [K, K] f64, counts [K, K] i64)``: ``P[i, j]`` = fraction of the pair's comparisons won
      by ``i`` (a tie is a fair coin), ``P[j, i] = 1 - P[i, j]``, diagonal 1/2; ``counts[i, j]`` =
      ``n`` off the diagonal, 0 on it.
    """
    est = estimate_wins(key, queries, rankers, click_model, method, num_comparisons, **options)
    return est.pref, est.counts
