"""Estimate a preference matrix ``P`` of rankers by many simulated interleaved comparisons.

Zoghi et al. (WSDM 2014, §6) estimate ``P`` for the MSLR feature rankers with 80,000 probabilistic
interleaving comparisons per pair (perfect click model), then run the bandits on that matrix.
Each comparison here is exactly one ``InterleavedDuelEnv.duel``: a uniform query, an interleaved
list (SPEC §4.6 / §4.7), cascade clicks (§4.8), the outcome, and a fair coin on ties. So
``P[i, j]`` is the fraction of the ``n`` comparisons of the pair that ranker ``i`` (shown as
ranker 1) won, ``P[j, i] = 1 - P[i, j]`` and the diagonal is 1/2.

Speed. The rankers are fixed, so each ranker's ranking of each query is computed once (on the
host: ``lexsort``, ties by document index as in ``jaxrank.clicks``). A comparison then works in
rank space and never sorts or scans the ``N`` documents: ranker ``a`` samples a rank among its
ranks not yet shown with weights ``r^-τ`` by inverting the cumulative table ``C[r] = Σ_{s<=r}
s^-τ`` after skipping the at most ``L - 1`` shown ranks (an ``O(L^2)`` correction), which is the
same distribution as ``jaxrank.clicks.probabilistic_interleave``. Team-draft's "highest-ranked
document not yet shown" is the first rank not in that small set. Cost per comparison is
``O(L^2)`` whatever ``N`` is.

Determinism: comparison ``c`` of pair ``(i, j)`` uses ``fold_in(fold_in(fold_in(key, i), j), c)``,
so results do not depend on the chunk size or on the other arms. All pairs x comparisons form one
flat index that is cut into chunks of ``chunk_size`` lanes: one compiled, vmapped chunk function,
progress printed between chunks.
"""

import functools
import time
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks import CascadeModel, cascade_clicks, probabilistic_outcome, team_draft_outcome
from jaxrank.envs.ranker_duel import check_duel_inputs, first_wins
from jaxrank.types import Array, QueryBatch


class Rankings(NamedTuple):
    """Each ranker's fixed ranking of each query (ties by document index, padding last)."""

    ranks: Array  # [K, Q, N] i32, 1-based rank of each document (padding gets ranks after the real docs)
    order: Array  # [K, Q, N] i32, order[k, q, r - 1] = the document at rank r
    num_docs: Array  # [Q] i32, real documents per query
    labels: Array  # [Q, N] f32


class Estimate(NamedTuple):
    """Raw counts behind a preference matrix (numpy, float64/int64)."""

    pref: np.ndarray  # [K, K] f64, P[i, j] = fraction of comparisons won by i (ties by coin), diag 1/2
    counts: np.ndarray  # [K, K] i64, comparisons of each pair (0 on the diagonal)
    wins: np.ndarray  # [K, K] i64, wins[i, j] = comparisons of (i, j) won by i
    ties: np.ndarray  # [K, K] i64, comparisons whose outcome was 0 (settled by the coin), symmetric
    seconds: float  # wall time after compile
    compile_seconds: float


def rankings(queries: QueryBatch, rankers) -> Rankings:
    """Computes every ranker's ranking of every query once (host numpy, float32 scores).

    Ties are broken by document index (the earlier document first), masked documents go last:
    the convention of ``jaxrank.clicks``' interleaving functions.
    """
    features = np.asarray(queries.features, np.float32)
    mask = np.asarray(queries.mask, bool)
    scores = np.einsum("qnd,kd->kqn", features, np.asarray(rankers, np.float32))  # [K, Q, N]
    # lexsort sorts by the last key first and is stable: real docs first, then descending score, then index.
    order = np.lexsort((-scores, np.broadcast_to(~mask, scores.shape)), axis=-1).astype(np.int32)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, order.shape[-1] + 1, dtype=np.int32)[None, None], axis=-1)
    return Rankings(jnp.asarray(ranks), jnp.asarray(order), jnp.asarray(mask.sum(-1).astype(np.int32)),
                    jnp.asarray(queries.labels, jnp.float32))


class RankWeights(NamedTuple):
    """Probabilistic interleave's rank weights, tabulated once (gathers, not ``pow``, per comparison)."""

    weight: Array  # [N + 1] f32, weight[r] = r^-τ, weight[0] = 0
    cumulative: Array  # [N + 1] f32, C[r] = Σ_{s=1..r} s^-τ, C[0] = 0 (summed in f64)


def rank_weights_table(num_docs: int, tau: float) -> RankWeights:
    """``RankWeights`` for ranks ``0..N`` and exponent ``τ``."""
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


def probabilistic_list(key, ranks_first, order_first, ranks_second, order_second, num_docs, table: RankWeights,
                       list_size: int):
    """Rank-space probabilistic interleave of one query (same distribution as ``jaxrank.clicks``).

    Args:
      key: PRNG key.
      ranks_first, order_first, ranks_second, order_second: ``[N]`` i32 rankings of the two rankers.
      num_docs: ``[]`` i32 real documents ``n``.
      table: ``RankWeights`` for the query's ``N`` and ``τ``.
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
        doc = jnp.where(from_second, order_second[rank - 1], order_first[rank - 1])
        other = jnp.where(from_second, shown_first, shown_second)
        total_other = table.cumulative[num_docs] - jnp.sum(jnp.where(valid, table.weight[other], 0.0))
        total_1 = jnp.where(from_second, total_other, total_chosen)
        total_2 = jnp.where(from_second, total_chosen, total_other)
        r1, r2 = ranks_first[doc], ranks_second[doc]
        p1 = table.weight[r1] / jnp.maximum(total_1, jnp.finfo(jnp.float32).tiny)
        p2 = table.weight[r2] / jnp.maximum(total_2, jnp.finfo(jnp.float32).tiny)
        carry = (shown_first.at[slot].set(r1), shown_second.at[slot].set(r2))
        return carry, (jnp.where(shown, doc, -1), shown, jnp.where(shown, p2 / (p1 + p2), 0.5))

    start = (jnp.zeros(list_size, jnp.int32), jnp.zeros(list_size, jnp.int32))
    _, (docs, shown, prob_second) = jax.lax.scan(position, start, (slots, uniforms))
    return docs, shown, prob_second


def team_draft_list(key, ranks_first, order_first, ranks_second, order_second, num_docs, list_size: int):
    """Rank-space team-draft interleave of one query (same distribution as ``jaxrank.clicks``).

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
        doc = jnp.where(second_picks, order_second[top_2 - 1], order_first[top_1 - 1])
        team = jnp.where(shown, jnp.where(second_picks, 2, 1), 0).astype(jnp.int32)
        carry = (shown_first.at[slot].set(ranks_first[doc]), shown_second.at[slot].set(ranks_second[doc]),
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
    args = (tables.ranks[i, q], tables.order[i, q], tables.ranks[j, q], tables.order[j, q], tables.num_docs[q])
    if method == "probabilistic":
        docs, shown, prob_second = probabilistic_list(key_list, *args, weights, list_size)
    else:
        docs, shown, team = team_draft_list(key_list, *args, list_size)
    labels = jnp.where(shown, tables.labels[q, jnp.maximum(docs, 0)], 0.0)
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


def estimate_wins(queries: QueryBatch, rankers, click_model: CascadeModel, method: str, num_comparisons: int,
                  key, *, list_size: int = 10, tau: float = 3.0, chunk_size: int = 1 << 16,
                  verbose: bool = True, progress_seconds: float = 10.0) -> Estimate:
    """``estimate_preference_matrix`` with the raw counts (wins, ties) and timings."""
    weights = check_duel_inputs(queries, rankers, click_model, method=method, list_size=list_size, tau=tau)
    num_arms = weights.shape[0]
    if num_arms < 2:
        raise ValueError(f"need at least 2 rankers; got {num_arms}.")
    if isinstance(num_comparisons, bool) or not isinstance(num_comparisons, (int, np.integer)) or num_comparisons < 1:
        raise ValueError(f"num_comparisons must be an int >= 1; got {num_comparisons!r}.")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an int >= 1; got {chunk_size!r}.")
    pairs = np.array([(i, j) for i in range(num_arms) for j in range(i + 1, num_arms)], np.int32)
    total = len(pairs) * int(num_comparisons)
    if total + chunk_size >= 2**31:
        raise ValueError(f"{len(pairs)} pairs x {num_comparisons} comparisons is too many for int32 indices.")
    chunk_size = int(min(chunk_size, total))
    tables = rankings(queries, weights)
    args = (key, jnp.zeros((), jnp.int32), jnp.asarray(num_comparisons, jnp.int32), jnp.asarray(pairs), tables,
            CascadeModel(jnp.asarray(click_model.click_prob, jnp.float32), jnp.asarray(click_model.stop_prob, jnp.float32)),
            rank_weights_table(queries.features.shape[-2], tau))
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


def estimate_preference_matrix(queries: QueryBatch, rankers, click_model: CascadeModel, method: str,
                               num_comparisons: int, key, *, list_size: int = 10, tau: float = 3.0,
                               chunk_size: int = 1 << 16, verbose: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Estimates ``P`` for the rankers by ``num_comparisons`` interleaved comparisons per pair.

    Args:
      queries: ``QueryBatch`` (``features [Q, N, D]``), sampled uniformly per comparison.
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
