"""SOLAR's online protocol (Wang et al., ACL 2015, Algorithm 1 and eq. 3) as compiled programs over
query collections of any size: one pass of a learner over the queries (``run_pass``) and the
protocol over permutations with its per-query metrics (``online_protocol``).

One pass visits the queries in a random order. Inside a query it draws the instances in a
uniformly random order without replacement (``jaxrank.utils.swap_or_not.shuffle_index``) and flips each pair
``(z, +1) → (−z, −1)`` with probability ½; each step feeds ``z = x_i − x_j`` (or ``x_i`` and its
grade) to ``learner.step``. The steps run in blocks of ``BLOCK``: the block's draws and its inputs
``[BLOCK, D]`` are computed in one vectorised call (a gather inside the step loop made ``vmap``-ed
lanes as slow as separate runs on CPU), then a ``lax.scan`` over segments of ``SEGMENT`` steps
applies them, each segment unrolled over its slice of the inputs (scanning over the vmapped inputs
themselves would copy them into scan-major layout first), or handed whole to ``learner.steps`` when
the learner has a block form (SOLAR-II). Every visit's steps are padded to whole segments (masked
steps), so a visit starts at a segment: the snapshot is kept once a segment rather than once a
step, and the draws that depend on the visit are made once a segment. MQ2008's 80,925 pairs take
84,656 steps. Per lane the pass holds ``O(Q + BLOCK · D)`` numbers besides the learner's state;
documents and instances are shared by all lanes.

Before the first instance of each visited query, ``learner.params(state)`` is written to a
``[Q + 1, ...]`` buffer, so every query is scored with the model as it stood before learning from
it; queries without instances (one document, one grade) are scored with the model of the next
query that has instances, or the final one.

Scoring runs after the pass over buckets of queries of similar length (``jaxrank.data.buckets``):
each query's documents are scored with its snapshot, and NDCG@1/5/10 and AP break score ties with
noise drawn from ``fold_in(key, q)``, query ``q``'s own key, so a value does not depend on how the
queries are blocked.
"""

import functools
import inspect
from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes, metrics
from jaxrank.data.ragged import Queries, as_ragged, map_queries
from jaxrank.learners.online.streams import Documents, InstanceStream, documents, instance_stream
from jaxrank.utils.swap_or_not import shuffle_index
from jaxrank.types import Learner

TOPN = (1, 5, 10)
METRIC_NAMES = tuple(f"ndcg@{k}" for k in TOPN) + ("map",)
BLOCK = 4096  # steps whose draws are computed together
BLOCKS_PER_CALL = 32  # blocks of one call of the lane runner: progress and checkpoints come between calls
SEGMENT = 16  # every visit starts a segment of this many steps: snapshots are taken once a segment
MIN_LIST = 32  # smallest block list size when scoring (fewer block shapes to compile)


class Pass(NamedTuple):
    state: object  # the learner's state after the pass
    order: jax.Array  # [Q] i32, order[k] = the query visited k-th
    params: object  # learner params [Q, ...]: the model that scored the k-th visited query (or None)


class PassCarry(NamedTuple):
    """A pass in progress: the learner's state, the snapshot buffer and the pass's per-visit draws."""

    state: object  # the learner's state
    buffer: object  # params [Q + 1, ...] before each visit (row Q takes the other writes), or None
    order: jax.Array  # [Q] i32, the query visited k-th
    words: jax.Array  # [Q] u32, each query's shuffle word
    count: jax.Array  # [Q] i32, instances of the k-th visit
    ends: jax.Array  # [Q] i32, cumulative instances after the k-th visit
    slots: jax.Array  # [Q] i32, the k-th visit's steps padded to whole segments
    slot_ends: jax.Array  # [Q] i32, cumulative padded steps after the k-th visit
    key_steps: jax.Array  # the flips' key


def num_blocks(stream: InstanceStream) -> int:
    """Blocks of ``BLOCK`` padded steps in a pass over ``stream`` (the same for every permutation)."""
    sizes = np.diff(np.asarray(stream.offsets, np.int64))
    return int(-(-np.sum(-(-sizes // SEGMENT) * SEGMENT) // BLOCK))


def start_pass(key, learner: Learner, state, stream: InstanceStream, *, snapshots: bool = True) -> PassCarry:
    """The draws of a pass that depend on the visit (``run_pass`` documents them) and an empty buffer."""
    num_queries = stream.offsets.shape[0] - 1
    key_perm, key_order, key_steps = jax.random.split(key, 3)
    order = jax.random.permutation(key_perm, num_queries).astype(jnp.int32)
    words = jax.random.bits(key_order, (num_queries,), jnp.uint32)
    sizes = (stream.offsets[1:] - stream.offsets[:-1]).astype(jnp.int32)
    count = sizes[order]  # instances of the k-th visit
    slots = -(-count // SEGMENT) * SEGMENT  # the k-th visit's steps padded to whole segments
    buffer = (jax.tree.map(lambda a: jnp.zeros((num_queries + 1,) + a.shape, a.dtype), learner.params(state))
              if snapshots else None)
    return PassCarry(state, buffer, order, words, count, jnp.cumsum(count), slots, jnp.cumsum(slots), key_steps)


def block_inputs(learner: Learner, carry: PassCarry, b, docs: Documents, stream: InstanceStream, *,
                 dtype=jnp.float32) -> tuple:
    """Block ``b``'s padded steps, vectorised: the learner inputs ``x [BLOCK, D]``, ``y [BLOCK]``,
    whether each step is real (``live``) and the snapshot row of each segment. Depends on the pass's
    draws only, not on the learner's state, so a grid of states shares it."""
    features = docs.features.astype(dtype)
    labels = docs.labels.astype(dtype)
    num_queries = stream.offsets.shape[0] - 1
    order, words, count, ends, slots, slot_ends = (carry.order, carry.words, carry.count, carry.ends, carry.slots,
                                                   carry.slot_ends)
    # A segment belongs to one visit, so everything that depends on the visit (its query, size,
    # shuffle key, the shuffle's round keys) is computed once a segment.
    first_t = b * BLOCK + SEGMENT * jnp.arange(BLOCK // SEGMENT, dtype=jnp.int32)  # [S] first step of each segment
    k = jnp.searchsorted(slot_ends, first_t, side="right").astype(jnp.int32)  # Q past the last visit
    kk = jnp.minimum(k, num_queries - 1)
    q, n = order[kk], count[kk]
    m = (first_t - (slot_ends[kk] - slots[kk]))[:, None] + jnp.arange(SEGMENT, dtype=jnp.int32)  # [S, SEGMENT]
    live = (k < num_queries)[:, None] & (m < n[:, None])
    shuffled = shuffle_index(words[q][:, None], jnp.where(live, m, 0).astype(jnp.uint32),
                             jnp.maximum(n, 1).astype(jnp.uint32)[:, None])
    instance = jnp.where(live, stream.offsets[q][:, None] + shuffled.astype(jnp.int32), 0).reshape(BLOCK)
    step = jnp.where(live, (ends[kk] - n)[:, None] + m, 0).reshape(BLOCK)  # the instance's step in the unpadded pass
    live = live.reshape(BLOCK)
    first = jnp.min(jnp.where(live, step, jnp.iinfo(jnp.int32).max)) // BLOCK  # live steps span <= 2 blocks
    first = jnp.minimum(first, jnp.iinfo(jnp.int32).max // BLOCK - 1)
    bits = jnp.concatenate([jax.random.bits(jax.random.fold_in(carry.key_steps, first + i), (BLOCK,), jnp.uint32)
                            for i in (0, 1)])
    flip = bits[jnp.clip(step - first * BLOCK, 0, 2 * BLOCK - 1)] & 1
    sign = jnp.where(flip == 1, -1.0, 1.0).astype(dtype)
    starts = (k < num_queries) & (m[:, 0] == 0)  # a visit starts only at a segment's first step
    snapshot = jnp.where(starts, k, num_queries)  # row Q takes the other segments' writes
    # The block's inputs, gathered in one vectorised call (a gather inside the step loop made
    # vmapped lanes as slow as separate runs on CPU).
    i = stream.first[instance]
    if learner.instances == "pairs":
        x, y = sign[:, None] * (features[i] - features[stream.second[instance]]), sign
    else:
        x, y = features[i], labels[i]
    return x, y, live, snapshot


def apply_block(learner: Learner, state, x, y, live, *, snapshots: bool = True):
    """The block's steps from ``state``: returns ``(state, params before each segment)`` (``None``
    without snapshots). A segment slices its inputs and unrolls its steps: a scan over vmapped inputs
    would first copy them into scan-major layout, lane by lane."""

    def segment(state, first):
        before = learner.params(state) if snapshots else None
        xs, ys, lives = (jax.lax.dynamic_slice_in_dim(a, first, SEGMENT) for a in (x, y, live))
        if learner.steps is not None:
            return learner.steps(state, xs, ys, lives), before
        for t in range(SEGMENT):
            new, _ = learner.step(state, xs[t], ys[t])
            state = jax.tree.map(lambda a, b: jnp.where(lives[t], a, b), new, state)  # noqa: B023
        return state, before

    return jax.lax.scan(segment, state, SEGMENT * jnp.arange(BLOCK // SEGMENT, dtype=jnp.int32))


def pass_block(learner: Learner, carry: PassCarry, b, docs: Documents, stream: InstanceStream, *,
               dtype=jnp.float32) -> PassCarry:
    """Block ``b`` of a pass: its ``BLOCK`` padded steps (blocks past the pass's end change nothing)."""
    snapshots = carry.buffer is not None
    x, y, live, snapshot = block_inputs(learner, carry, b, docs, stream, dtype=dtype)
    state, befores = apply_block(learner, carry.state, x, y, live, snapshots=snapshots)
    buffer = carry.buffer
    if snapshots:  # one scatter a block: the params before each visit's first instance
        buffer = jax.tree.map(lambda buf, r: buf.at[snapshot].set(r), buffer, befores)
    return carry._replace(state=state, buffer=buffer)


def finish_pass(learner: Learner, carry: PassCarry) -> Pass:
    """The ``Pass`` of a finished carry: queries without instances take the next visit's snapshot."""
    num_queries = carry.order.shape[0]
    if carry.buffer is None:
        return Pass(carry.state, carry.order, None)
    position = jnp.arange(num_queries + 1, dtype=jnp.int32)
    has_instances = jnp.concatenate([carry.count > 0, jnp.ones(1, bool)])
    next_nonempty = jax.lax.cummin(jnp.where(has_instances, position, num_queries), reverse=True)  # [Q + 1]
    buffer = jax.tree.map(lambda b, r: b.at[num_queries].set(r), carry.buffer, learner.params(carry.state))
    return Pass(carry.state, carry.order, jax.tree.map(lambda b: b[next_nonempty[:num_queries]], buffer))


def run_pass(key, learner: Learner, state, docs: Documents, stream: InstanceStream, *, snapshots: bool = True,
             dtype=jnp.float32) -> Pass:
    """One online pass over the queries in a random order (SOLAR Algorithm 1; the order inside a
    query and the random flips are our choice, the paper does not say). Pure: jit and vmap it.

    Args:
      key: draws the query permutation, the order inside each query and the pair flips:
        ``(key_perm, key_order, key_steps) = split(key, 3)``; the queries are visited in the order
        ``permutation(key_perm, Q)``; query ``q``'s instances in the order ``shuffle_index(w_q, m, n_q)``,
        ``m = 0 .. n_q − 1``, with ``w = bits(key_order, (Q,))``; the pass's ``t``-th instance (padding
        not counted) flips its pair when the lowest bit of ``bits(fold_in(key_steps, t // BLOCK),
        (BLOCK,))[t mod BLOCK]`` is set.
      learner: a ``Learner`` with ``step`` (and ``instances`` matching ``stream``).
      state: the learner's state to start from (``learner.init(key, D, dtype, **hparams)``).
      docs, stream: from ``streams.documents`` and ``streams.instance_stream``.
      snapshots: keep ``learner.params`` before each visited query (``Pass.params``).
      dtype: the features' dtype in the pass (the state's, from ``init``).
    """
    carry = start_pass(key, learner, state, stream, snapshots=snapshots)
    sizes = (stream.offsets[1:] - stream.offsets[:-1]).astype(jnp.int32)
    blocks = -(-jnp.sum(-(-sizes // SEGMENT) * SEGMENT) // BLOCK)  # num_blocks, traced
    carry = jax.lax.fori_loop(0, blocks, lambda b, c: pass_block(learner, c, b, docs, stream, dtype=dtype), carry)
    return finish_pass(learner, carry)


class PassConfig(NamedTuple):
    """The static configuration of ``pass_study`` (hashable: jit's cache key)."""

    learner: Learner
    snapshots: bool
    dtype: Any


def pass_study(learner: Learner, *, snapshots: bool = True, dtype=jnp.float32) -> lanes.Study:
    """One permutation of the online protocol as a lane (``jaxrank.lanes``): ``data = (docs, stream)``,
    one chunk per block (``chunks = arange(num_blocks(stream))``), the lane's key split by
    ``lane_keys``; the result is its ``Pass``."""
    return lanes.bound_study(PassConfig(learner, bool(snapshots), dtype), _pass_init, _pass_advance,
                             _pass_result)


def _pass_init(config: PassConfig, key, hparams, data, lane_data):
    docs, stream = data
    _, _, key_init = lane_keys(key)
    state = config.learner.init(key_init, docs.features.shape[-1], config.dtype, **hparams)
    return start_pass(lane_keys(key)[0], config.learner, state, stream, snapshots=config.snapshots)


def _pass_advance(config: PassConfig, carry, chunk, data, lane_data):
    return pass_block(config.learner, carry, chunk, *data, dtype=config.dtype)


def _pass_result(config: PassConfig, carry, data, lane_data):
    return finish_pass(config.learner, carry)


def query_metrics(scores, labels, mask, *, key=None, letor_compat: bool = False) -> jax.Array:
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


def lane_keys(key) -> tuple:
    """``(key_pass, key_ties, key_init)`` of one permutation's key: ``split(key)`` draws the pass and
    breaks score ties; ``fold_in(key, 2)`` is ``learner.init``'s key (the online learners draw nothing)."""
    key_pass, key_ties = jax.random.split(key)
    return key_pass, key_ties, jax.random.fold_in(key, 2)


def cumulative_mean(per_query: jax.Array) -> jax.Array:
    """``[..., Q, 4] -> [..., Q, 4]``: the online cumulative metric after ``k + 1`` queries (eq. 3)."""
    counts = jnp.arange(1, per_query.shape[-2] + 1, dtype=per_query.dtype)[:, None]
    return jnp.cumsum(per_query, axis=-2) / counts


def check_init(learner: Learner, key, num_features: int, dtype, hparams: dict):
    """``learner.init`` on concrete values, before anything is traced: its range checks run, and an
    unknown name (a static option among them) is a ``ValueError`` listing ``init``'s hyperparameters."""
    try:
        return learner.init(key, num_features, dtype, **hparams)
    except TypeError as err:
        names = [p.name for p in inspect.signature(learner.init).parameters.values() if p.kind == p.KEYWORD_ONLY]
        raise ValueError(f"{sorted(hparams)} are not all hyperparameters of this learner's init ({err}); "
                         f"hyperparameters: {', '.join(names) or 'none'} (static options go to make()).") from None


def online_passes(keys, learner: Learner, docs: Documents, stream: InstanceStream, *, hparams: Optional[dict] = None,
                  dtype=jnp.float32, mesh=None, checkpoint=None, label: Optional[str] = None) -> Pass:
    """The passes of the online protocol, one lane per key (``keys [P]``, ``lane_keys`` splits each),
    on the lane runner (``jaxrank.lanes.run_lanes``: sharded over ``mesh``, one block of steps per
    chunk, resumable with ``checkpoint``). ``hparams``: ``{name: value}`` shared by the lanes.
    Returns the ``Pass`` with leaves ``[P, ...]`` (numpy)."""
    num_lanes = int(np.shape(jax.random.key_data(keys))[0])
    hparams = {k: np.full(num_lanes, v, np.float32) for k, v in (hparams or {}).items()}
    blocks = num_blocks(stream)
    return lanes.run_lanes(pass_study(learner, dtype=dtype), keys, hparams, data=(docs, stream),
                           chunks=np.arange(blocks, dtype=np.int32), chunks_per_call=BLOCKS_PER_CALL, mesh=mesh,
                           checkpoint=checkpoint, label=label, progress=np.arange(1, blocks + 1) * BLOCK)


@functools.partial(jax.jit, static_argnames=("score", "dtype"))
def _score_block(batch, snapshots, rows, key_ties, queries, *, score, dtype):
    """``[P, B, 4]`` metrics of a bucket's queries, each scored with its row of ``snapshots [P, Q, ...]``.
    Static in the scoring function: learners that score alike (``linear.score``) share the compiles."""

    def lane(snapshots, rows, key):
        chosen = jax.tree.map(lambda r: r[rows], snapshots)
        scores = jax.vmap(score)(chosen, batch.features.astype(dtype))
        return query_metrics(scores, batch.labels, batch.mask, key=query_keys(key, queries))

    return jax.vmap(lane)(snapshots, rows, key_ties)


def score_passes(keys, learner: Learner, queries: Queries, passes: Pass, *, dtype=jnp.float32) -> jax.Array:
    """``[P, Q, 4]`` metrics of the k-th visited query of each pass, scored with its snapshot.

    ``keys [P]`` are the permutation keys the passes were run with; query ``q`` of pass ``p`` breaks
    ties with ``fold_in(key_ties, q)``, ``key_ties = lane_keys(keys[p])[1]``.
    """
    queries = as_ragged(queries)
    order = np.asarray(passes.order)
    rank = np.argsort(order, axis=1)  # [P, Q] the visit position of each query
    key_ties = jax.vmap(lambda k: lane_keys(k)[1])(keys)

    def block(bucket):
        rows = jnp.asarray(rank[:, np.maximum(bucket.queries, 0)])
        return _score_block(bucket.batch, passes.params, rows, key_ties, jnp.asarray(bucket.queries, jnp.int32),
                            score=learner.score, dtype=dtype)

    by_query = map_queries(block, queries, axis=1, minimum=MIN_LIST)  # [P, Q, 4]
    return jnp.asarray(np.take_along_axis(by_query, order[:, :, None], axis=1))


def online_protocol(key, learner: Learner, queries: Queries, num_permutations: int = 10, *,
                    hparams: Optional[dict] = None, dtype=jnp.float32) -> OnlineResult:
    """SOLAR's online protocol (Algorithm 1, eq. 3) over ``num_permutations`` random permutations.

    Args:
      key: permutation ``p`` uses ``fold_in(key, p)`` (``permutation_keys``, ``lane_keys``).
      learner: a ``Learner`` with ``step`` (``jaxrank.learners.LEARNERS.build(name, **options)``).
      queries: ``RaggedQueries`` (any size) or ``QueryBatch``.
      hparams: ``{name: value}`` for ``learner.init`` (its defaults otherwise).

    The mean of ``cumulative[:, -1]`` over permutations is the paper's Table 2 entry.
    """
    if num_permutations < 1:
        raise ValueError(f"num_permutations must be >= 1; got {num_permutations}.")
    queries = as_ragged(queries)
    stream = instance_stream(queries, learner.instances)
    keys = permutation_keys(key, num_permutations)
    check_init(learner, lane_keys(keys[0])[2], queries.num_features, dtype, hparams or {})
    passes = online_passes(keys, learner, documents(queries, dtype), stream, hparams=hparams, dtype=dtype)
    per_query = score_passes(keys, learner, queries, passes, dtype=dtype)
    return OnlineResult(per_query, cumulative_mean(per_query), passes.order)
