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
works in rank space, reading single entries through its query's offset, and never sorts or scans
a list: ranker ``a`` samples a rank among its ranks not yet shown with weights ``r^-τ`` by
inverting the cumulative table ``C[r] = Σ_{s<=r} s^-τ`` after skipping the at most ``L - 1`` shown
ranks (an ``O(L^2)`` correction), which is the same distribution as
``jaxrank.clicks.probabilistic_interleave`` (Hofmann et al., CIKM 2011). Team-draft's
(Radlinski et al., CIKM 2008) "highest-ranked document not yet shown" is the first rank not in that
small set. Cost per comparison is ``O(L^2)`` whatever the query's length.
Memory: the ``2 K N`` table entries (the 136 MSLR feature rankers on MSLR-WEB30K's 3.77M
documents: 2 GB) plus bounded host scratch while they are built (see ``rankings``).

Determinism: comparison ``c`` of pair ``(i, j)`` uses ``fold_in(fold_in(fold_in(key, i), j), c)``,
so results do not depend on the chunk size or on the other arms. All pairs x comparisons form one
flat index that is cut into chunks of ``chunk_size`` lanes: one compiled, vmapped chunk function,
progress printed between chunks.
"""

import functools
import time
from typing import Iterator, NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks import CascadeModel, cascade_clicks, probabilistic_outcome, team_draft_outcome
from jaxrank.data.ragged import as_ragged
from jaxrank.envs.ranker_duel import check_duel_inputs, first_wins
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

    def query(self, ranker: Array, q: Array) -> "QueryRanking":
        """Ranker ``ranker``'s ranking of query ``q``, read lazily (no ``[L]`` copy)."""
        return QueryRanking(self.ranks, self.order, ranker, self.offsets[q])


class QueryRanking(NamedTuple):
    """One ranker's ranking of one query: scalar reads through the query's offset into ``Rankings``."""

    ranks: Array  # [K, N] Rankings.ranks
    order: Array  # [K, N] Rankings.order
    ranker: Array  # [] i32 k
    offset: Array  # [] i32 the query's first row

    def rank_of(self, doc: Array) -> Array:
        """``[]`` i32 1-based rank of within-query document ``doc``."""
        return self.ranks[self.ranker, self.offset + doc].astype(jnp.int32)

    def doc_at(self, rank: Array) -> Array:
        """``[]`` i32 within-query document at 1-based ``rank``."""
        return self.order[self.ranker, self.offset + rank - 1].astype(jnp.int32)


class Estimate(NamedTuple):
    """Raw counts behind a preference matrix (numpy, float64/int64)."""

    pref: np.ndarray  # [K, K] f64, P[i, j] = fraction of comparisons won by i (ties by coin), diag 1/2
    counts: np.ndarray  # [K, K] i64, comparisons of each pair (0 on the diagonal)
    wins: np.ndarray  # [K, K] i64, wins[i, j] = comparisons of (i, j) won by i
    ties: np.ndarray  # [K, K] i64, comparisons whose outcome was 0 (settled by the coin), symmetric
    seconds: float  # wall time after compile
    compile_seconds: float


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


def probabilistic_list(key, first: QueryRanking, second: QueryRanking, num_docs, table: RankWeights,
                       list_size: int):
    """Rank-space probabilistic interleave (Hofmann et al., CIKM 2011) of one query.

    The same distribution as ``jaxrank.clicks.probabilistic_interleave``.

    Args:
      key: PRNG key.
      first, second: the two rankers' ``QueryRanking`` of the query.
      num_docs: ``[]`` i32 documents ``n`` of the query.
      table: ``RankWeights`` covering ranks up to ``n`` (``rank_weights_table(longest query, τ)``).
      list_size: ``L`` (static).

    Returns:
      ``(docs [L] i32 (-1 unshown), shown [L] bool, prob_second [L] f32)``.
    """
    uniforms = jax.random.uniform(key, (list_size, 2))  # (coin, pick) per position
    slots = jnp.arange(list_size)

    def position(carry, x):
        shown_first, shown_second = carry  # [L] ranks of the shown docs under ranker 1 / 2
        slot, u = x
        valid = slots < slot
        shown = slot < num_docs
        from_second = u[0] < 0.5
        # Only the ranker that won the coin samples; the other one's remaining weight is still needed.
        chosen = jnp.where(from_second, shown_second, shown_first)
        rank, total_chosen = sample_rank(u[1], chosen, valid, table, num_docs)
        doc = jnp.where(from_second, second.doc_at(rank), first.doc_at(rank))
        other = jnp.where(from_second, shown_first, shown_second)
        total_other = table.cumulative[num_docs] - jnp.sum(jnp.where(valid, table.weight[other], 0.0))
        total_1 = jnp.where(from_second, total_other, total_chosen)
        total_2 = jnp.where(from_second, total_chosen, total_other)
        r1, r2 = first.rank_of(doc), second.rank_of(doc)
        p1 = table.weight[r1] / jnp.maximum(total_1, jnp.finfo(jnp.float32).tiny)
        p2 = table.weight[r2] / jnp.maximum(total_2, jnp.finfo(jnp.float32).tiny)
        carry = (shown_first.at[slot].set(r1), shown_second.at[slot].set(r2))
        return carry, (jnp.where(shown, doc, -1), shown, jnp.where(shown, p2 / (p1 + p2), 0.5))

    start = (jnp.zeros(list_size, jnp.int32), jnp.zeros(list_size, jnp.int32))
    _, (docs, shown, prob_second) = jax.lax.scan(position, start, (slots, uniforms))
    return docs, shown, prob_second


def team_draft_list(key, first: QueryRanking, second: QueryRanking, num_docs, list_size: int):
    """Rank-space team-draft interleave (Radlinski et al., CIKM 2008) of one query.

    The same lists as ``jaxrank.clicks.team_draft_interleave`` for the same key. Arguments as
    ``probabilistic_list``.

    Returns:
      ``(docs [L] i32 (-1 unshown), shown [L] bool, team [L] i32 in {0, 1, 2})``.
    """
    coins = jax.random.uniform(key, (list_size,))
    slots = jnp.arange(list_size)

    def position(carry, x):
        shown_first, shown_second, size_first, size_second = carry
        slot, u = x
        valid = slots < slot
        shown = slot < num_docs
        second_picks = jnp.where(size_first == size_second, u < 0.5, size_second < size_first)
        top_1 = _skip_shown(jnp.ones((), jnp.int32), shown_first, valid, 1)
        top_2 = _skip_shown(jnp.ones((), jnp.int32), shown_second, valid, 1)
        doc = jnp.where(second_picks, second.doc_at(top_2), first.doc_at(top_1))
        team = jnp.where(shown, jnp.where(second_picks, 2, 1), 0).astype(jnp.int32)
        carry = (shown_first.at[slot].set(first.rank_of(doc)), shown_second.at[slot].set(second.rank_of(doc)),
                 size_first + (team == 1), size_second + (team == 2))
        return carry, (jnp.where(shown, doc, -1), shown, team)

    zero = jnp.zeros((), jnp.int32)
    start = (jnp.zeros(list_size, jnp.int32), jnp.zeros(list_size, jnp.int32), zero, zero)
    _, (docs, shown, team) = jax.lax.scan(position, start, (slots, coins))
    return docs, shown, team


def compare(key, i, j, tables: Rankings, click_model: CascadeModel, weights: RankWeights, *, method: str,
            list_size: int):
    """One interleaved comparison of rankers ``i`` and ``j``: ``(first_won, tie)`` bools.

    The same steps as ``InterleavedDuelEnv.duel`` (uniform query, interleave, cascade clicks,
    outcome, coin on ties), on precomputed rankings.
    """
    key_query, key_list, key_clicks, key_tie = jax.random.split(key, 4)
    q = jax.random.randint(key_query, (), 0, tables.num_docs.shape[0])
    args = (tables.query(i, q), tables.query(j, q), tables.num_docs[q])
    if method == "probabilistic":
        docs, shown, prob_second = probabilistic_list(key_list, *args, weights, list_size)
    else:
        docs, shown, team = team_draft_list(key_list, *args, list_size)
    labels = jnp.where(shown, tables.labels[tables.offsets[q] + jnp.maximum(docs, 0)], 0.0)
    clicks = cascade_clicks(key_clicks, labels, shown, click_model)
    if method == "probabilistic":
        outcome = probabilistic_outcome(prob_second, clicks, shown)
    else:
        outcome = team_draft_outcome(team, clicks, shown)
    return first_wins(outcome, jax.random.uniform(key_tie)), outcome == 0.0


@functools.partial(jax.jit, static_argnames=("chunk_size", "method", "list_size"))
def _chunk(key, start, num_comparisons, pairs, tables, click_model, weights, *, chunk_size, method, list_size):
    """Wins and ties per pair ``[P]`` i32 for flat comparisons ``start .. start + chunk_size - 1``."""
    num_pairs = pairs.shape[0]
    flat = start + jnp.arange(chunk_size, dtype=jnp.int32)
    valid = flat < num_pairs * num_comparisons
    pair = jnp.minimum(flat // num_comparisons, num_pairs - 1)
    c = flat % num_comparisons

    def one(p, c):
        i, j = pairs[p, 0], pairs[p, 1]
        key_c = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, i), j), c)
        return compare(key_c, i, j, tables, click_model, weights, method=method, list_size=list_size)

    won, tie = jax.vmap(one)(pair, c)
    wins = jax.ops.segment_sum((won & valid).astype(jnp.int32), pair, num_segments=num_pairs)
    ties = jax.ops.segment_sum((tie & valid).astype(jnp.int32), pair, num_segments=num_pairs)
    return wins, ties


def estimate_wins(queries: Queries, rankers, click_model: CascadeModel, method: str, num_comparisons: int,
                  key, *, list_size: int = 10, tau: float = 3.0, chunk_size: int = 1 << 16,
                  verbose: bool = True, progress_seconds: float = 10.0) -> Estimate:
    """``estimate_preference_matrix`` with the raw counts (wins, ties) and timings."""
    weights = check_duel_inputs(queries, rankers, click_model, method=method, list_size=list_size, tau=tau)
    queries = as_ragged(queries)
    if queries.num_queries == 0:
        raise ValueError("the collection has no query with a document: nothing to compare on.")
    num_arms = weights.shape[0]
    if num_arms < 2:
        raise ValueError(f"need at least 2 rankers; got {num_arms}.")
    if isinstance(num_comparisons, bool) or not isinstance(num_comparisons, (int, np.integer)) or num_comparisons < 1:
        raise ValueError(f"num_comparisons must be an int >= 1; got {num_comparisons!r}.")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1; got {chunk_size!r}.")
    pairs = np.stack(np.triu_indices(num_arms, 1), axis=-1).astype(np.int32)  # (0, 1), (0, 2), ..., row-major
    total = len(pairs) * int(num_comparisons)
    if total + chunk_size >= 2**31:
        raise ValueError(f"{len(pairs)} pairs x {num_comparisons} comparisons is too many for int32 indices.")
    chunk_size = int(min(chunk_size, total))
    start = time.perf_counter()
    tables = jax.block_until_ready(rankings(queries, weights))
    if verbose:
        print(f"[estimate] rankings of {num_arms} rankers x {queries.num_documents:,} documents "
              f"({queries.num_queries:,} queries, longest {queries.list_size}) in {time.perf_counter() - start:.1f} s",
              flush=True)
    args = (key, jnp.zeros((), jnp.int32), jnp.asarray(num_comparisons, jnp.int32), jnp.asarray(pairs), tables,
            CascadeModel(jnp.asarray(click_model.click_prob, jnp.float32), jnp.asarray(click_model.stop_prob, jnp.float32)),
            rank_weights_table(queries.list_size, tau))
    static = dict(chunk_size=chunk_size, method=method, list_size=int(list_size))

    wins = np.zeros(len(pairs), np.int64)
    ties = np.zeros(len(pairs), np.int64)
    offsets = range(0, total, chunk_size)
    start = time.perf_counter()
    first = jax.block_until_ready(_chunk(*args, **static))  # offset 0: compile (cached per shape) + one chunk
    first_seconds = time.perf_counter() - start
    start = last = time.perf_counter()
    for n, offset in enumerate(offsets):
        chunk_wins, chunk_ties = first if n == 0 else _chunk(key, jnp.asarray(offset, jnp.int32), *args[2:], **static)
        wins += np.asarray(chunk_wins)
        ties += np.asarray(chunk_ties)
        done = min(offset + chunk_size, total)
        now = time.perf_counter()
        if verbose and n > 0 and (now - last >= progress_seconds or done == total):
            last = now
            print(f"[estimate] {done:,}/{total:,} comparisons, {(done - chunk_size) / (now - start):,.0f}/s "
                  f"after compile (first chunk incl. compile {first_seconds:.1f} s)", flush=True)
    later = time.perf_counter() - start
    # Time after compile: the later chunks, plus the first chunk at their average speed.
    per_chunk = later / (len(offsets) - 1) if len(offsets) > 1 else first_seconds
    seconds = later + per_chunk
    compile_seconds = max(first_seconds - per_chunk, 0.0)

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
    return Estimate(pref, counts, w, t, seconds, compile_seconds)


def estimate_preference_matrix(queries: Queries, rankers, click_model: CascadeModel, method: str,
                               num_comparisons: int, key, *, list_size: int = 10, tau: float = 3.0,
                               chunk_size: int = 1 << 16, verbose: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Estimates ``P`` for the rankers by ``num_comparisons`` interleaved comparisons per pair.

    Args:
      queries: ``RaggedQueries`` (or a ``QueryBatch``, converted with ``as_ragged``: its empty
        queries are dropped); each comparison samples one of the ``Q`` queries uniformly.
      rankers: ``[K, D]`` linear rankers (e.g. ``single_feature_rankers``).
      click_model: ``CascadeModel`` (``cascade_model("perfect", 5)`` for MSLR, as the paper).
      method: ``"probabilistic"`` or ``"team_draft"``.
      num_comparisons: ``n`` per pair (80,000 in the paper).
      key: PRNG key; comparison ``c`` of pair ``(i, j)`` uses ``fold_in`` keys of ``(i, j, c)``.
      list_size: ``L`` shown documents (10).
      tau: probabilistic interleave's exponent (3).
      chunk_size: comparisons per compiled chunk (bounds memory; does not change the result).
      verbose: print progress (comparisons/s) between chunks.

    Returns:
      ``(P [K, K] f64, counts [K, K] i64)``: ``P[i, j]`` = fraction of the pair's comparisons won
      by ``i`` (a tie is a fair coin), ``P[j, i] = 1 - P[i, j]``, diagonal 1/2; ``counts[i, j]`` =
      ``n`` off the diagonal, 0 on it.
    """
    est = estimate_wins(queries, rankers, click_model, method, num_comparisons, key, list_size=list_size, tau=tau,
                        chunk_size=chunk_size, verbose=verbose)
    return est.pref, est.counts
