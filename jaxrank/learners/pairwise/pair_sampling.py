"""Pair samplers for SPD and LCRA (Tsivtsivadze, Hofmann, Heskes 2012, §2.1; sofia-ml).

The paper draws two training documents uniformly at random until they share a query and have
different labels: the accepted ordered pair ``(a, b)`` is then uniform over the *ordered* valid
pairs ``P``. Rejection has no fixed cost, so the samplers here draw the same distribution in two
exact, fixed-cost stages:

* ``"exact"`` (default): document ``a`` with probability ``n_a / |P|``, where ``n_a`` is its number
  of valid partners, then ``b`` uniformly among those partners. ``P(a, b) = n_a/|P| · 1/n_a = 1/|P|``,
  which is the rejection sampler's law; marginally the query is drawn ∝ its number of valid
  ordered pairs and the pair is uniform inside it.
* ``"sofia_rank"``: sofia-ml's ``StochasticRankLoop`` (Sculley 2009): ``a`` uniform over all labeled
  documents, ``b`` uniform among the documents of its query with another label. When ``a`` has no
  partner sofia-ml skips the iteration (its step counter still advances): the draw comes back with
  ``valid=False`` and the learners leave the weights untouched for that step.

Unlabeled pairs ``P̂`` (same query, ``a ≠ b``, labels ignored) use the exact two-stage draw over the
``unlabeled`` documents.

Layout. A ``PairSource`` holds the training set as ``N`` flat documents with query offsets, so
its memory grows with the documents, never with ``Q × L_max`` or ``L_max²``: a ``RaggedQueries``
gives its ``N`` documents, a padded ``QueryBatch`` is viewed as ``N = Q·L`` documents whose padding
is never labeled (a reshape, so ``pair_source`` stays jittable over traced masks). Building it
counts the partners of every document by sorting (``O(N log N)``); a draw is one ``searchsorted``
over the first-stage cdf (``O(log N)``) and a scan of a window of ``W`` documents (``W`` = the
longest query, ``L`` for a ``QueryBatch``) starting at ``a``'s query: ``b`` is the ``r``-th valid
partner of ``a`` in document order. A ``RaggedQueries`` draws the same documents as its padded
view.

Label of a pair: the graded difference ``y = l_a − l_b`` (the paper's); the learners take its sign
for the hinge loss unless asked for the graded label (our default; the paper does not say).
"""

import dataclasses
import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data.ragged import Queries
from jaxrank.pairs import PairBatch
from jaxrank.types import RaggedQueries

SAMPLERS = ("exact", "sofia_rank")
STEP_BLOCK = 512  # steps whose pairs are drawn and gathered together by ``scan_pair_steps``


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["features", "labels", "labeled", "unlabeled", "query", "offsets", "labeled_cdf", "unlabeled_cdf",
                 "num_pairs"],
    meta_fields=["window"],
)
@dataclasses.dataclass(frozen=True)
class PairSource:
    """A training set ready for pair sampling: ``N`` flat documents of ``Q`` queries (a pytree).

    ``window`` (static) is ``W``, the longest query's number of documents: the second stage scans
    ``W`` documents from the query's first one.
    """

    features: jax.Array  # [N, D] f32
    labels: jax.Array  # [N] f32 graded relevance (only read where labeled)
    labeled: jax.Array  # [N] bool, documents whose labels may be used (pairs in P)
    unlabeled: jax.Array  # [N] bool, documents usable only in unlabeled pairs P̂
    query: jax.Array  # [N] i32, the query of each document
    offsets: jax.Array  # [Q + 1] i32, query q owns documents offsets[q]:offsets[q + 1]
    labeled_cdf: jax.Array  # [N] i32, cumulative first-stage weights of labeled docs
    unlabeled_cdf: jax.Array  # [N] i32, cumulative first-stage weights of unlabeled docs
    num_pairs: jax.Array  # [] i32, |P|: ordered valid labeled pairs
    window: int  # W, static

    @property
    def num_documents(self) -> int:
        return self.features.shape[-2]


class PairDraws(NamedTuple):
    """Ordered pairs as flat document indices of a ``PairSource`` (query of a draw: ``source.query[a]``)."""

    a: jax.Array  # [n] i32 first document
    b: jax.Array  # [n] i32 second document (meaningless where not valid)
    valid: jax.Array  # [n] bool


# ---------------------------------------------------------------- partner counts


def partner_counts(labels: jax.Array, labeled: jax.Array, query: jax.Array, num_queries: int) -> jax.Array:
    """``[N]`` i32 valid partners of each document: labeled documents of its query with another label.

    ``n_a = #labeled(q) − #labeled(q, label l_a)`` for a labeled ``a`` of query ``q``, else 0, by one
    sort on ``(query, labeled, label)`` and segment sums: ``O(N log N)``, no ``[L, L]`` table.
    Jittable and vmappable.

    Args:
      labels: ``[N]`` graded relevance.
      labeled: ``[N]`` bool.
      query: ``[N]`` int query index in ``[0, num_queries)`` (any order).
      num_queries: ``Q`` (static).
    """
    num_docs = labels.shape[-1]
    labeled = labeled.astype(bool)
    order = jnp.lexsort((labels, (~labeled).astype(jnp.int32), query))  # by query, labeled first, label
    q_s, use_s, lab_s = query[order], labeled[order], labels[order]
    new = (q_s[1:] != q_s[:-1]) | (use_s[1:] != use_s[:-1]) | (lab_s[1:] != lab_s[:-1])
    group = jnp.cumsum(jnp.concatenate([jnp.zeros(1, jnp.int32), new.astype(jnp.int32)]))
    same = jax.ops.segment_sum(jnp.ones(num_docs, jnp.int32), group, num_segments=num_docs, indices_are_sorted=True)
    per_query = jax.ops.segment_sum(labeled.astype(jnp.int32), query, num_segments=num_queries)
    sorted_counts = jnp.where(use_s, per_query[q_s] - same[group], 0)
    return jnp.zeros(num_docs, jnp.int32).at[order].set(sorted_counts, unique_indices=True)


def unlabeled_counts(unlabeled: jax.Array, query: jax.Array, num_queries: int) -> jax.Array:
    """``[N]`` i32 unlabeled partners: ``#unlabeled(q) − 1`` for an unlabeled document of query ``q``, else 0."""
    unlabeled = unlabeled.astype(bool)
    per_query = jax.ops.segment_sum(unlabeled.astype(jnp.int32), query, num_segments=num_queries)
    return jnp.where(unlabeled, per_query[query] - 1, 0).astype(jnp.int32)


# ---------------------------------------------------------------- flat view of either container


class _Flat(NamedTuple):
    features: jax.Array  # [N, D]
    labels: jax.Array  # [N]
    labeled: jax.Array  # [N] bool
    unlabeled: jax.Array  # [N] bool
    query: jax.Array  # [N] i32
    offsets: jax.Array  # [Q + 1] i32
    num_queries: int
    window: int


def _check_mask(name: str, mask, shape: tuple, container: str, fix: str) -> None:
    if tuple(np.shape(mask)) != shape:
        raise ValueError(f"{name} must be a bool mask of shape {shape} over the documents of the {container}; "
                         f"got shape {tuple(np.shape(mask))}; {fix}.")


def _flat_view(queries: Queries, labeled, unlabeled) -> _Flat:
    """Both containers as flat documents; a ``QueryBatch`` (possibly traced) by a reshape."""
    if isinstance(queries, RaggedQueries):
        offsets = np.asarray(queries.offsets, np.int64)
        num_docs = queries.num_documents
        if queries.num_queries < 1 or num_docs < 1:
            raise ValueError(f"the training set is empty ({queries.num_queries} queries, {num_docs} documents); "
                             "pass a collection with at least one query.")
        if num_docs >= 2**31:
            raise ValueError(f"{num_docs:,} documents do not fit in int32 indices; split the collection "
                             "(e.g. by fold).")
        fix = "ragged masks are [N] over the flat documents (use pad_queries for [Q, L] masks)"
        for name, mask in (("labeled", labeled), ("unlabeled", unlabeled)):
            if mask is not None:
                _check_mask(name, mask, (num_docs,), "RaggedQueries", fix)
        labeled = jnp.ones(num_docs, bool) if labeled is None else jnp.asarray(labeled, bool)
        unlabeled = jnp.zeros(num_docs, bool) if unlabeled is None else jnp.asarray(unlabeled, bool)
        query = np.repeat(np.arange(queries.num_queries, dtype=np.int32), np.diff(offsets))
        # device_put moves the host arrays once (jnp.asarray would hold a second host-sized copy on CPU)
        features, labels = jax.device_put((queries.features, queries.labels))
        return _Flat(features, labels, labeled, unlabeled, jax.device_put(query),
                     jax.device_put(offsets.astype(np.int32)), queries.num_queries, queries.list_size)
    mask = jnp.asarray(queries.mask, bool)
    if mask.ndim != 2:
        raise ValueError(f"expected a QueryBatch of [Q, L] queries; got a mask of shape {mask.shape} "
                         "(stacked folds? build one PairSource per fold, or vmap pair_source over them).")
    num_queries, list_size = mask.shape
    fix = "QueryBatch masks are [Q, L] like batch.mask"
    for name, m in (("labeled", labeled), ("unlabeled", unlabeled)):
        if m is not None:
            _check_mask(name, m, mask.shape, "QueryBatch", fix)
    labeled = mask if labeled is None else jnp.asarray(labeled, bool) & mask
    unlabeled = jnp.zeros_like(mask) if unlabeled is None else jnp.asarray(unlabeled, bool) & mask
    num_docs = num_queries * list_size
    features = jnp.asarray(queries.features)
    return _Flat(features.reshape(num_docs, features.shape[-1]), jnp.asarray(queries.labels).reshape(num_docs),
                 labeled.reshape(num_docs), unlabeled.reshape(num_docs),
                 jnp.repeat(jnp.arange(num_queries, dtype=jnp.int32), list_size, total_repeat_length=num_docs),
                 jnp.arange(num_queries + 1, dtype=jnp.int32) * list_size, num_queries, list_size)


@functools.partial(jax.jit, static_argnames=("num_queries", "sampler"))
def _tables(labels, labeled, unlabeled, query, *, num_queries: int, sampler: str):
    """First-stage cdfs ``[N]``, ``|P|`` and whether an int32 cdf overflowed (a prefix turned negative)."""
    pair_cdf = jnp.cumsum(partner_counts(labels, labeled, query, num_queries))
    labeled_cdf = jnp.cumsum(labeled.astype(jnp.int32)) if sampler == "sofia_rank" else pair_cdf
    unlabeled_cdf = jnp.cumsum(unlabeled_counts(unlabeled, query, num_queries))
    overflow = (pair_cdf.min() < 0) | (unlabeled_cdf.min() < 0)
    return labeled_cdf, unlabeled_cdf, pair_cdf[-1], overflow


# ---------------------------------------------------------------- public API


def num_ordered_pairs(queries: Queries, labeled: Optional[jax.Array] = None) -> jax.Array:
    """``[Q]`` i32 ordered valid pairs ``(a, b)`` per query (both labeled, labels differ); padding is
    never paired. ``labeled``: ``[N]`` (``RaggedQueries``) or ``[Q, L]`` (``QueryBatch``), default all."""
    flat = _flat_view(queries, labeled, None)
    counts = partner_counts(flat.labels, flat.labeled, flat.query, flat.num_queries)
    return jax.ops.segment_sum(counts, flat.query, num_segments=flat.num_queries, indices_are_sorted=True)


def pair_source(
    queries: Queries,
    labeled: Optional[jax.Array] = None,
    unlabeled: Optional[jax.Array] = None,
    *,
    sampler: str = "exact",
) -> PairSource:
    """Builds the sampling tables of a training set (module docstring), in ``O(N log N)``.

    Args:
      queries: a ``RaggedQueries`` (``N`` documents, any size; its host arrays are moved to the
        device once) or a padded ``QueryBatch`` (``features [Q, L, D]``, ``labels [Q, L]``,
        ``mask [Q, L]``, viewed as ``N = Q·L`` documents). With a ``QueryBatch`` the function is
        jittable and vmappable over the masks (the LCRA protocol builds one source per split × fold).
      labeled: documents whose labels may be used: ``[N]`` bool for a ``RaggedQueries``, ``[Q, L]``
        for a ``QueryBatch`` (``& mask``); default every document.
      unlabeled: documents for ``P̂``, same shape; default none.
      sampler: ``"exact"`` or ``"sofia_rank"`` (static), see the module docstring.

    Returns:
      A ``PairSource``. Call ``check_pairs`` on it outside ``jit`` to reject a set with no pair.

    Raises:
      ValueError: for an unknown sampler, masks of the wrong shape, an empty collection, or (when
        concrete) 2^31 or more first-stage weights (int32 cdf): split the collection.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}; got {sampler!r}.")
    flat = _flat_view(queries, labeled, unlabeled)
    labeled_cdf, unlabeled_cdf, num_pairs, overflow = _tables(flat.labels, flat.labeled, flat.unlabeled, flat.query,
                                                              num_queries=flat.num_queries, sampler=sampler)
    if not isinstance(overflow, jax.core.Tracer) and bool(overflow):
        raise ValueError("the training set has 2^31 or more ordered pairs (labeled or unlabeled), more than the int32 "
                         "sampling tables hold; split the collection (e.g. by fold) or keep fewer unlabeled documents.")
    return PairSource(features=flat.features, labels=flat.labels, labeled=flat.labeled, unlabeled=flat.unlabeled,
                      query=flat.query, offsets=flat.offsets, labeled_cdf=labeled_cdf, unlabeled_cdf=unlabeled_cdf,
                      num_pairs=num_pairs, window=flat.window)


def check_pairs(source: PairSource, *, need_unlabeled: bool = False) -> None:
    """Raises ValueError when the (concrete) source has no valid labeled pair (or no unlabeled pair
    when ``need_unlabeled``); a stacked source is rejected when any of its members is."""
    if int(jnp.min(source.num_pairs)) == 0:
        raise ValueError(
            "the training set has no valid pair: no query has two labeled documents with different "
            "labels; give queries with at least two distinct grades (or keep more labels)."
        )
    if need_unlabeled and int(jnp.min(source.unlabeled_cdf[..., -1])) == 0:
        raise ValueError(
            "co-regularization needs unlabeled pairs but no query has two unlabeled documents; "
            "pass an unlabeled mask or set mu = 0."
        )


def _searchsorted(cdf: jax.Array, u: jax.Array) -> jax.Array:
    # first index with cdf > u: the u-th unit of weight belongs to it
    return jnp.searchsorted(cdf, u, side="right", method="scan_unrolled").astype(jnp.int32)


def _draw_one(key, source: PairSource, unlabeled: bool):
    """One ordered pair ``(a, b, valid)`` of flat documents: ``a`` from the cdf, ``b`` the ``r``-th
    valid partner of ``a`` in document order, ``r`` uniform; ``O(log N + W)``."""
    cdf = source.unlabeled_cdf if unlabeled else source.labeled_cdf
    num_docs, width = cdf.shape[0], source.window
    key_a, key_b = jax.random.split(key)
    total = cdf[-1]
    a = _searchsorted(cdf, jax.random.randint(key_a, (), 0, jnp.maximum(total, 1)))
    a = jnp.minimum(a, num_docs - 1)
    q = source.query[a]
    start, stop = source.offsets[q], source.offsets[q + 1]
    lo = jnp.minimum(start, num_docs - width)  # the window [lo, lo + W) holds the query; lo = start but at the end
    pos = lo + jnp.arange(width, dtype=jnp.int32)
    window = functools.partial(jax.lax.dynamic_slice_in_dim, start_index=lo, slice_size=width)
    if unlabeled:
        row = window(source.unlabeled) & source.unlabeled[a] & (pos != a)
    else:
        row = window(source.labeled) & source.labeled[a] & (window(source.labels) != source.labels[a])
    row = row & (pos >= start) & (pos < stop)  # [W] valid partners of a, in document order
    n = row.sum()
    r = jax.random.randint(key_b, (), 0, jnp.maximum(n, 1))
    b = lo + jnp.minimum(_searchsorted(jnp.cumsum(row.astype(jnp.int32)), r), width - 1)
    return a, b, (total > 0) & (n > 0)


def sample_pair_indices(key, source: PairSource, num_draws: int, *, unlabeled: bool = False) -> PairDraws:
    """``PairDraws(a, b, valid)``, each ``[num_draws]`` flat document indices of i.i.d. draws from
    ``P`` (or ``P̂``); draw ``i`` uses ``jax.random.split(key, num_draws)[i]``. The draws are
    vmapped: scratch memory ``O(num_draws · W)``, so draw large samples in chunks."""
    one = functools.partial(_draw_one, source=source, unlabeled=unlabeled)
    return PairDraws(*jax.vmap(one)(jax.random.split(key, num_draws)))


def sample_pairs(key, source: PairSource, num_labeled: int = 1, num_unlabeled: int = 0) -> PairBatch:
    """Draws ``k = num_labeled`` pairs from ``P`` and ``l = num_unlabeled`` from ``P̂`` (i.i.d.).

    Args:
      key: PRNG key for this step.
      source: from ``pair_source``.
      num_labeled, num_unlabeled: static batch sizes ``k`` and ``l``.

    Returns:
      ``PairBatch`` with ``p [k, D]``, ``y [k]``, ``valid [k]``, ``p_hat [l, D]``, ``valid_hat [l]``.
    """
    key_lab, key_unl = jax.random.split(key)
    dtype = source.features.dtype

    def gather(a, b, valid):
        p = source.features[a] - source.features[b]  # [n, D]: two rows per draw, never a whole query
        p = jnp.where(valid[:, None], p, 0.0).astype(dtype)
        y = jnp.where(valid, source.labels[a] - source.labels[b], 0.0).astype(dtype)
        return p, y

    a, b, valid = sample_pair_indices(key_lab, source, num_labeled)
    p, y = gather(a, b, valid)
    a, b, valid_hat = sample_pair_indices(key_unl, source, num_unlabeled, unlabeled=True)
    p_hat, _ = gather(a, b, valid_hat)
    return PairBatch(p=p, y=y, valid=valid, p_hat=p_hat, valid_hat=valid_hat)


def scan_pair_steps(key, update: Callable, state, source: PairSource, *, num_steps: int, num_labeled: int = 1,
                    num_unlabeled: int = 0):
    """``num_steps`` calls ``state = update(state, pairs)``, step ``t`` on ``sample_pairs(fold_in(key, t), ...)``.

    The draws and feature rows of ``STEP_BLOCK`` steps are taken in one vectorised call, then a
    ``lax.scan`` applies the updates: a gather inside the step loop made ``vmap``-ed runs on CPU as
    slow as separate ones. Step ``t``'s pairs do not depend on ``num_steps`` or on the blocking.
    Holds ``STEP_BLOCK × (k + l) × D`` numbers per lane. Returns the final state.
    """

    def draw(t):
        return sample_pairs(jax.random.fold_in(key, t), source, num_labeled, num_unlabeled)

    def steps(state, ts):
        return jax.lax.scan(lambda s, pairs: (update(s, pairs), None), state, jax.vmap(draw)(ts))[0]

    full, rest = divmod(num_steps, STEP_BLOCK)
    if full:
        blocks = jnp.arange(full * STEP_BLOCK, dtype=jnp.int32).reshape(full, STEP_BLOCK)
        state, _ = jax.lax.scan(lambda s, ts: (steps(s, ts), None), state, blocks)
    if rest:
        state = steps(state, jnp.arange(full * STEP_BLOCK, num_steps, dtype=jnp.int32))
    return state


def pair_steps_block(key, update: Callable, state, source: PairSource, first_step, *, num_steps: int,
                     num_labeled: int = 1, num_unlabeled: int = 0):
    """Steps ``first_step .. first_step + STEP_BLOCK − 1`` of ``scan_pair_steps`` (the same draws and
    updates); steps from ``num_steps`` on change nothing. One chunk of the lane runner."""
    ts = first_step + jnp.arange(STEP_BLOCK, dtype=jnp.int32)
    pairs = jax.vmap(lambda t: sample_pairs(jax.random.fold_in(key, t), source, num_labeled, num_unlabeled))(ts)

    def body(state, step):
        t, batch = step
        return jax.tree.map(lambda new, old: jnp.where(t < num_steps, new, old), update(state, batch), state), None

    return jax.lax.scan(body, state, (ts, pairs))[0]
