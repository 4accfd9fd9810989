"""SOLAR's evaluation protocols (Wang et al., ACL 2015, Algorithm 1, eq. 3, §5.2 and §5.3) as
compiled programs over query collections of any size.

Instances. An ``InstanceStream`` lists every training instance once, grouped by query in file
order: the preference pairs ``(i, j)``, ``l_i > l_j`` (``jaxrank.pairs.PairIndex``) for pairwise
learners, the documents for pointwise ones, as flat document indices (8 bytes an instance).

One pass (``run_pass``) visits the queries in a random order. Inside a query it draws the
instances in a uniformly random order without replacement (the keyed swap-or-not permutation of
``shuffle_index``, computed for any position without storing the permutation) and flips each pair
``(z, +1) → (−z, −1)`` with probability ½; each step feeds ``z = x_i − x_j`` (or ``x_i`` and its
grade) to ``learner.step``. The steps run in blocks of ``BLOCK``: the block's draws and its inputs
``[BLOCK, D]`` are computed in one vectorised call (a gather inside the step loop made ``vmap``-ed
lanes as slow as separate runs on CPU), then a ``lax.scan`` over segments of ``SEGMENT`` steps
applies them, each segment unrolled over its slice of the inputs (scanning over the vmapped inputs
themselves would copy them into scan-major layout first), or handed whole to ``learner.steps`` when
the learner has a block form (SOLAR-II). Every visit's steps are padded to whole
segments (masked steps), so a visit starts at a segment: the readout is kept once a segment
rather than once a step, and the draws that depend on the visit are made once a segment.
MQ2008's 80,925 pairs take 84,656 steps.
Per lane the pass holds ``O(Q + BLOCK · D)`` numbers besides the learner's state; documents and
instances are shared by all lanes (``vmap`` over permutations, folds, grids).
Before the first instance of each visited query the learner's ``readout`` is written to a
``[Q + 1, ...]`` buffer, so every query is scored with the model as it stood before learning from
it; queries without instances (one document, one grade) are scored with the model of the next
query that has instances, or the final one.

Scoring runs after the pass over buckets of queries of similar length (``jaxrank.data.buckets``):
each query's documents are scored with its readout, and NDCG@1/5/10 and AP break score ties with
noise drawn from ``fold_in(key, q)``, query ``q``'s own key, so a value does not depend on how the
queries are blocked.

* ``online_protocol``: paper Algorithm 1 and eq. 3, per-query NDCG@k and AP before learning over
  ``num_permutations`` permutations (``vmap``), with the cumulative curves.
* ``batch_protocol``: one pass over each fold's training set per hyperparameter value (``vmap``
  over folds × grid), then validation and test metrics of the final models under the standard and
  the LETOR-script conventions (SOLAR eq. 1–2; LETOR ``Eval-Score-4.0.pl``).
"""

import functools
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import metrics
from jaxrank.data.ragged import Queries, as_ragged, map_queries
from jaxrank.types import OnlineLearner
from jaxrank.utils.checks import check_keywords
from jaxrank.pairs import preference_pairs

TOPN = (1, 5, 10)
METRIC_NAMES = tuple(f"ndcg@{k}" for k in TOPN) + ("map",)
BLOCK = 4096  # steps whose draws are computed together
SEGMENT = 16  # every visit starts a segment of this many steps: snapshots are taken once a segment
SWAP_ROUNDS = 64  # rounds of the swap-or-not shuffle inside a query
MIN_LIST = 32  # smallest block list size when scoring (fewer block shapes to compile)


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
      instances: ``"pairs"`` or ``"documents"`` (``OnlineLearner.instances``).

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


class Pass(NamedTuple):
    state: object  # the learner's state after the pass
    order: jax.Array  # [Q] i32, order[k] = the query visited k-th
    readouts: object  # learner readouts [Q, ...]: the model that scored the k-th visited query (or None)


def _mulhi(a: jax.Array, b: jax.Array) -> jax.Array:
    """``floor(a · b / 2^32)`` for uint32 ``a, b`` in 32-bit arithmetic: a uniform index in ``[0, b)``."""
    a_lo, a_hi, b_lo, b_hi = a & 0xFFFF, a >> 16, b & 0xFFFF, b >> 16
    mid = a_hi * b_lo + ((a_lo * b_lo) >> 16)
    mid2 = a_lo * b_hi + (mid & 0xFFFF)
    return a_hi * b_hi + (mid >> 16) + (mid2 >> 16)


def _mix(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finaliser: a bijective mix of uint32 values."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def shuffle_index(position: jax.Array, size: jax.Array, key: jax.Array) -> jax.Array:
    """``π(position)`` for the keyed random permutation ``π`` of ``[0, size)`` (swap-or-not, Hoang,
    Morris & Rogaway, CRYPTO 2012), computed for any entry without storing the permutation.

    Round ``r`` draws ``K_r`` uniform in ``[0, size)`` and maps ``x`` to its partner ``K_r − x (mod
    size)`` when a keyed bit of ``max(x, partner)`` is set; every round is an involution, so ``π`` is a
    permutation, and ``SWAP_ROUNDS`` rounds make it close to uniform (3·log2 of a million-pair query).
    All arguments uint32 of one shape (or broadcastable).
    """

    def round_(r, x):
        r = r.astype(jnp.uint32)
        k = _mulhi(_mix(key ^ (r * jnp.uint32(0x9E3779B9))), size)
        partner = jnp.where(k >= x, k - x, k + size - x)
        bit = _mix(_mix(key + r * jnp.uint32(0x632BE5AB)) ^ jnp.maximum(x, partner)) >> 31
        return jnp.where(bit == 1, partner, x)

    return jax.lax.fori_loop(0, SWAP_ROUNDS, round_, position)


def run_pass(learner: OnlineLearner, docs: Documents, stream: InstanceStream, key, *, snapshots: bool = True,
             dtype=jnp.float32) -> Pass:
    """One online pass over the queries in a random order (SOLAR Algorithm 1; the order inside a
    query and the random flips are our choice, the paper does not say).

    ``key`` draws the query permutation, the order inside each query and the pair flips:
    ``(key_perm, key_order, key_steps) = split(key, 3)``; the queries are visited in the order
    ``permutation(key_perm, Q)``; query ``q``'s instances in the order ``shuffle_index(m, n_q, w_q)``,
    ``m = 0 .. n_q − 1``, with ``w = bits(key_order, (Q,))``; the pass's ``t``-th instance (padding not
    counted) flips its pair when the lowest bit of ``bits(fold_in(key_steps, t // BLOCK), (BLOCK,))[t mod
    BLOCK]`` is set. With
    ``snapshots`` the readout before each visited query is kept (``Pass.readouts``).
    """
    features = docs.features.astype(dtype)
    labels = docs.labels.astype(dtype)
    num_queries = stream.offsets.shape[0] - 1
    pairs = learner.instances == "pairs"
    key_perm, key_order, key_steps = jax.random.split(key, 3)
    order = jax.random.permutation(key_perm, num_queries).astype(jnp.int32)
    words = jax.random.bits(key_order, (num_queries,), jnp.uint32)
    sizes = (stream.offsets[1:] - stream.offsets[:-1]).astype(jnp.int32)
    count = sizes[order]  # instances of the k-th visit
    ends = jnp.cumsum(count)  # the k-th visit's instances are steps ends[k] - count[k] .. ends[k] - 1
    slots = -(-count // SEGMENT) * SEGMENT  # the k-th visit's steps padded to whole segments
    slot_ends = jnp.cumsum(slots)
    num_blocks = -(-jnp.sum(-(-sizes // SEGMENT) * SEGMENT) // BLOCK)  # the same for every permutation
    position = jnp.arange(num_queries + 1, dtype=jnp.int32)
    has_instances = jnp.concatenate([count > 0, jnp.ones(1, bool)])
    next_nonempty = jax.lax.cummin(jnp.where(has_instances, position, num_queries), reverse=True)  # [Q + 1]
    state = learner.init(None, features.shape[-1], dtype)
    buffer = (jax.tree.map(lambda a: jnp.zeros((num_queries + 1,) + a.shape, a.dtype), learner.readout(state))
              if snapshots else None)

    def draws(b):
        """The block's padded steps, vectorised: their instance, whether they are real, the snapshot row
        of each segment and the flip. A segment belongs to one visit, so everything that depends on
        the visit (its query, size, shuffle key, the shuffle's round keys) is computed once a segment."""
        first_t = b * BLOCK + SEGMENT * jnp.arange(BLOCK // SEGMENT, dtype=jnp.int32)  # [S] first step of each segment
        k = jnp.searchsorted(slot_ends, first_t, side="right").astype(jnp.int32)  # Q past the last visit
        kk = jnp.minimum(k, num_queries - 1)
        q, n = order[kk], count[kk]
        m = (first_t - (slot_ends[kk] - slots[kk]))[:, None] + jnp.arange(SEGMENT, dtype=jnp.int32)  # [S, SEGMENT]
        live = (k < num_queries)[:, None] & (m < n[:, None])
        shuffled = shuffle_index(jnp.where(live, m, 0).astype(jnp.uint32),
                                 jnp.maximum(n, 1).astype(jnp.uint32)[:, None], words[q][:, None])
        instance = jnp.where(live, stream.offsets[q][:, None] + shuffled.astype(jnp.int32), 0).reshape(BLOCK)
        step = jnp.where(live, (ends[kk] - n)[:, None] + m, 0).reshape(BLOCK)  # the instance's step in the unpadded pass
        live = live.reshape(BLOCK)
        first = jnp.min(jnp.where(live, step, jnp.iinfo(jnp.int32).max)) // BLOCK  # live steps span <= 2 blocks
        first = jnp.minimum(first, jnp.iinfo(jnp.int32).max // BLOCK - 1)
        bits = jnp.concatenate([jax.random.bits(jax.random.fold_in(key_steps, first + i), (BLOCK,), jnp.uint32)
                                for i in (0, 1)])
        flip = bits[jnp.clip(step - first * BLOCK, 0, 2 * BLOCK - 1)] & 1
        sign = jnp.where(flip == 1, -1.0, 1.0).astype(dtype)
        starts = (k < num_queries) & (m[:, 0] == 0)  # a visit starts only at a segment's first step
        snapshot = jnp.where(starts, k, num_queries)  # row Q takes the other segments' writes
        return instance, live, snapshot, sign

    def inputs(instance, sign):
        """The block's learner inputs ``x [BLOCK, D]``, ``y [BLOCK]``, gathered in one vectorised call."""
        i = stream.first[instance]
        if pairs:
            return sign[:, None] * (features[i] - features[stream.second[instance]]), sign
        return features[i], labels[i]

    def block(b, carry):
        state, buffer = carry
        instance, live, snapshot, sign = draws(b)
        x, y = inputs(instance, sign)

        # A segment slices its inputs and unrolls its steps: a scan over vmapped inputs would first
        # copy them into scan-major layout, lane by lane.
        def segment(state, first):
            """``SEGMENT`` steps; returns the readout from before them (a snapshot if a visit starts here)."""
            readout = learner.readout(state) if snapshots else None
            xs, ys, lives = (jax.lax.dynamic_slice_in_dim(a, first, SEGMENT) for a in (x, y, live))
            if learner.steps is not None:
                return learner.steps(state, xs, ys, lives), readout
            for t in range(SEGMENT):
                new, _, _ = learner.step(state, xs[t], ys[t])
                state = jax.tree.map(lambda a, b: jnp.where(lives[t], a, b), new, state)  # noqa: B023
            return state, readout

        state, readouts = jax.lax.scan(segment, state, SEGMENT * jnp.arange(BLOCK // SEGMENT, dtype=jnp.int32))
        if snapshots:  # one scatter a block: the readout before each visit's first instance
            buffer = jax.tree.map(lambda buf, r: buf.at[snapshot].set(r), buffer, readouts)
        return state, buffer

    state, buffer = jax.lax.fori_loop(0, num_blocks, block, (state, buffer))
    if not snapshots:
        return Pass(state, order, None)
    buffer = jax.tree.map(lambda b, r: b.at[num_queries].set(r), buffer, learner.readout(state))
    return Pass(state, order, jax.tree.map(lambda b: b[next_nonempty[:num_queries]], buffer))


def query_metrics(scores, labels, mask, key=None, *, letor_compat: bool = False) -> jax.Array:
    """``[..., 4]`` NDCG@1, NDCG@5, NDCG@10 and AP per query (``scores, labels, mask [..., L]``).

    Queries without a relevant document get 0 (LETOR convention; SOLAR does not say). ``key`` (one key, or one per
    query) breaks score ties at random (the standard convention); the LETOR-script convention keeps
    list order.
    """
    kw = dict(where=mask, reduce_fn=None, letor_compat=letor_compat, key=None if letor_compat else key)
    values = [metrics.ndcg(scores, labels, topn=k, **kw) for k in TOPN]
    values.append(metrics.average_precision(scores, labels, **kw))
    return jnp.nan_to_num(jnp.stack(values, axis=-1))


def query_keys(key, queries: jax.Array) -> jax.Array:
    """``[..., B]`` keys ``fold_in(key, q)`` of queries ``[B]`` (``key`` may carry batch axes)."""
    fold = jax.vmap(jax.random.fold_in, in_axes=(None, 0))
    for _ in range(jnp.ndim(key)):
        fold = jax.vmap(fold, in_axes=(0, None))
    return fold(key, jnp.maximum(queries, 0))


class OnlineResult(NamedTuple):
    per_query: jax.Array  # [P, Q, 4] f32, NDCG@1/5/10 and AP of the k-th visited query, before learning
    cumulative: jax.Array  # [P, Q, 4] f32, online cumulative metric after k+1 queries (paper eq. 3)
    order: jax.Array  # [P, Q] i32, the permutations


def permutation_keys(key, num_permutations: int) -> jax.Array:
    """``[P]`` keys; permutation ``p`` uses ``fold_in(key, p)``, whatever ``P`` is."""
    return jax.vmap(lambda p: jax.random.fold_in(key, p))(jnp.arange(num_permutations))


def cumulative_mean(per_query: jax.Array) -> jax.Array:
    """``[..., Q, 4] -> [..., Q, 4]``: the online cumulative metric after ``k + 1`` queries (eq. 3)."""
    counts = jnp.arange(1, per_query.shape[-2] + 1, dtype=per_query.dtype)[:, None]
    return jnp.cumsum(per_query, axis=-2) / counts


@functools.lru_cache(maxsize=None)
def online_program(learner: OnlineLearner, dtype=jnp.float32):
    """The jitted ``(docs, stream, keys [P]) -> Pass`` with leaves ``[P, ...]`` (one pass per key)."""

    def one(docs, stream, key):
        return run_pass(learner, docs, stream, jax.random.split(key)[0], dtype=dtype)

    return jax.jit(jax.vmap(one, in_axes=(None, None, 0)))


@functools.lru_cache(maxsize=None)
def _scoring_program(score_fn, dtype):
    """Keyed by the learner's scoring function, so learners that score alike share the compiles."""

    def score(batch, readouts, rows, key_ties, queries):
        """``[P, B, 4]`` metrics of the block's queries, each scored with its row of ``readouts [P, Q, ...]``."""

        def lane(readouts, rows, key):
            chosen = jax.tree.map(lambda r: r[rows], readouts)
            scores = jax.vmap(score_fn)(chosen, batch.features.astype(dtype))
            return query_metrics(scores, batch.labels, batch.mask, query_keys(key, queries))

        return jax.vmap(lane)(readouts, rows, key_ties)

    return jax.jit(score)


def score_passes(learner: OnlineLearner, queries: Queries, passes: Pass, keys, *, dtype=jnp.float32) -> jax.Array:
    """``[P, Q, 4]`` metrics of the k-th visited query of each pass, scored with its readout.

    ``keys [P]`` are the permutation keys given to ``online_program``; query ``q`` of pass ``p``
    breaks ties with ``fold_in(split(keys[p])[1], q)``.
    """
    queries = as_ragged(queries)
    order = np.asarray(passes.order)
    rank = np.argsort(order, axis=1)  # [P, Q] the visit position of each query
    key_ties = jax.vmap(lambda k: jax.random.split(k)[1])(keys)
    program = _scoring_program(learner.score, dtype)

    def block(bucket):
        rows = jnp.asarray(rank[:, np.maximum(bucket.queries, 0)])
        return program(bucket.batch, passes.readouts, rows, key_ties, jnp.asarray(bucket.queries, jnp.int32))

    by_query = map_queries(block, queries, axis=1, minimum=MIN_LIST)  # [P, Q, 4]
    return jnp.asarray(np.take_along_axis(by_query, order[:, :, None], axis=1))


def online_protocol(learner: OnlineLearner, queries: Queries, key, num_permutations: int = 10, *,
                    dtype=jnp.float32) -> OnlineResult:
    """SOLAR's online protocol (Algorithm 1, eq. 3) over ``num_permutations`` random permutations.

    Args:
      learner: an online learner (``step``, ``readout``, ``score``).
      queries: ``RaggedQueries`` (any size) or ``QueryBatch``.
      key: permutation ``p`` uses ``fold_in(key, p)``.

    The mean of ``cumulative[:, -1]`` over permutations is the paper's Table 2 entry.
    """
    if num_permutations < 1:
        raise ValueError(f"num_permutations must be >= 1; got {num_permutations}.")
    queries = as_ragged(queries)
    stream = instance_stream(queries, learner.instances)
    keys = permutation_keys(key, num_permutations)
    passes = online_program(learner, dtype)(documents(queries, dtype), stream, keys)
    per_query = score_passes(learner, queries, passes, keys, dtype=dtype)
    return OnlineResult(per_query, cumulative_mean(per_query), passes.order)


class BatchResult(NamedTuple):
    vali: jax.Array  # [F, H, 4] validation NDCG@1/5/10, MAP (standard convention)
    test: jax.Array  # [F, H, 4] test, standard convention (SOLAR eq. 1–2)
    test_letor: jax.Array  # [F, H, 4] test, LETOR-script convention (Eval-Score-4.0.pl)


def _stack_folds(folds, instances: str, dtype):
    """Every fold's documents and instances, padded to common sizes and stacked (leaves ``[F, ...]``)."""
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


def batch_protocol(make_learner: Callable[..., OnlineLearner], hparams: dict, train: Sequence[Queries],
                   vali: Sequence[Queries], test: Sequence[Queries], key, *, dtype=jnp.float32) -> BatchResult:
    """SOLAR's batch protocol (Wang et al. 2015, §5.3.1): one random pass over each fold's train set
    per setting (the number of passes is our choice; the paper does not give it).

    Args:
      make_learner: a learner factory, e.g. ``solar_first_order``.
      hparams: the grid ``{name: [H] values}`` of ``make_learner``'s keyword hyperparameters (e.g.
        ``{"c": [1e-5, 1e-4]}``, or ``jaxrank.utils.grid(...)``); every setting runs in one program.
      train, vali, test: one collection per fold (``RaggedQueries`` or ``QueryBatch``).
      key: fold ``f`` trains with ``fold_in(key, f)`` (the same order for every setting) and
        breaks metric ties with ``fold_in(fold_in(key, f), 1)``.
    """
    check_keywords(getattr(make_learner, "__name__", "the learner"), hparams, make_learner)
    grid = {name: jnp.asarray(v, jnp.float32).reshape(-1) for name, v in hparams.items()}
    sizes = {v.shape[0] for v in grid.values()}
    if len(sizes) != 1:
        raise ValueError(f"every hyperparameter of the grid needs the same number of settings; got "
                         f"{ {k: v.shape[0] for k, v in grid.items()} }.")
    example = make_learner(**{k: np.asarray(v)[0] for k, v in grid.items()})  # checks the values too
    for h in range(1, sizes.pop()):
        make_learner(**{k: np.asarray(v)[h] for k, v in grid.items()})
    train, vali, test = ([as_ragged(b) for b in split] for split in (train, vali, test))
    docs, stream = _stack_folds(train, example.instances, dtype)
    keys = jax.vmap(lambda f: jax.random.fold_in(key, f))(jnp.arange(len(train)))
    readouts = _train_program(make_learner, dtype)(docs, stream, keys, grid)
    return evaluate_folds(example.score, readouts, vali, test, keys, dtype=dtype)


def evaluate_folds(score, readouts, vali: Sequence[Queries], test: Sequence[Queries], keys, *,
                   dtype=jnp.float32) -> BatchResult:
    """Validation and test metrics of readouts ``[F, H, ...]`` (one model per fold and grid value).

    ``score(readout, features [..., L, D]) -> [..., L]`` is the learner's scoring; fold ``f`` breaks
    ties with ``fold_in(keys[f], 1)``.
    """
    out = {"vali": [], "test": [], "test_letor": []}
    for f in range(len(vali)):
        readout = jax.tree.map(lambda r: r[f], readouts)  # [H, ...]
        key_ties = jax.random.fold_in(keys[f], 1)
        for name, batch, compat in (("vali", vali[f], False), ("test", test[f], False), ("test_letor", test[f], True)):
            out[name].append(mean_query_metrics(score, readout, batch, key_ties, letor_compat=compat, dtype=dtype))
    return BatchResult(*(jnp.asarray(np.stack(out[n])) for n in BatchResult._fields))


@functools.lru_cache(maxsize=None)
def _train_program(make_learner, dtype):
    def one(docs, stream, key, hparams):
        learner = make_learner(**hparams)
        state = run_pass(learner, docs, stream, key, snapshots=False, dtype=dtype).state
        return learner.readout(state)

    over_grid = jax.vmap(one, in_axes=(None, None, None, 0))
    return jax.jit(jax.vmap(over_grid, in_axes=(0, 0, 0, None)))


def mean_query_metrics(score, readouts, queries: Queries, key, *, letor_compat: bool = False,
                       dtype=jnp.float32) -> np.ndarray:
    """``[H, 4]`` NDCG@1/5/10 and MAP over the queries, for each of ``H`` readouts (leaves ``[H, ...]``).

    ``score`` is the learner's scoring function; query ``q`` breaks ties with ``fold_in(key, q)``.
    """
    program = _mean_program(score, dtype, letor_compat)
    per_query = map_queries(lambda b: program(b.batch, readouts, key, jnp.asarray(b.queries, jnp.int32)),
                            queries, axis=1, minimum=MIN_LIST)  # [H, Q, 4]
    return per_query.mean(axis=1)


@functools.lru_cache(maxsize=None)
def _mean_program(score, dtype, letor_compat: bool):
    def values(batch, readouts, key, queries):
        def one(readout):
            scores = score(readout, batch.features.astype(dtype))
            return query_metrics(scores, batch.labels, batch.mask, query_keys(key, queries), letor_compat=letor_compat)

        return jax.vmap(one)(readouts)

    return jax.jit(values)
