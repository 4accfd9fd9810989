"""SOLAR's evaluation protocols (SPEC §1.4–1.5) as single compiled programs.

An ``InstanceStream`` lists every training instance of a ``QueryBatch`` once, in a canonical
order: ordered pairs ``(i, j)`` with ``l_i > l_j`` for pairwise learners, real documents for
pointwise ones. One *pass* (``run_pass``) draws a random query permutation, a random order of the
instances inside each query and (for pairs) a random flip ``(z, +1) → (−z, −1)`` of each, then
runs ``learner.step`` over the whole stream in one ``lax.scan`` — no padding to the largest
query, so MQ2008's 80,925 pairs take 80,925 steps. Before the first instance of each query the
learner's ``readout`` is written into a ``[Q+1, ...]`` buffer (row ``Q`` takes the writes of the
other steps), so every query is scored with the model as it stood *before* learning from it;
queries without instances (one document, one grade) are scored too, with the model of the next
query that has instances, or the final one.

* ``online_protocol``: paper Algorithm 1 and eq. 3 — per-query NDCG@k and AP before learning,
  over ``num_permutations`` permutations (``vmap``), with the cumulative curves.
* ``batch_protocol``: one pass over each fold's training set per hyperparameter value
  (``vmap`` over folds × grid), then validation and test metrics of the final models, under the
  standard and the LETOR-script conventions (SPEC §5.1, §5.3).
"""

import functools
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import metrics
from jaxrank.data.padding import stack_batches
from jaxrank.learners.base import Learner
from jaxrank.types import QueryBatch

TOPN = (1, 5, 10)
METRIC_NAMES = tuple(f"ndcg@{k}" for k in TOPN) + ("map",)


class InstanceStream(NamedTuple):
    query: jax.Array  # [T] i32, query index in the batch; Q on padding instances
    first: jax.Array  # [T] i32, document i
    second: jax.Array  # [T] i32, document j (pairs, l_i > l_j) or i again (documents)
    target: jax.Array  # [T] f32, +1 for pairs, the grade for documents


def instance_stream(batch: QueryBatch, instances: str = "pairs", length: int | None = None) -> InstanceStream:
    """The canonical instance list of ``batch`` (built once with NumPy; data, not traced).

    Args:
      batch: ``features [Q, L, D]``, ``labels [Q, L]``, ``mask [Q, L]``.
      instances: ``"pairs"`` or ``"documents"`` (``Learner.instances``).
      length: pad ``T`` to this length with inert instances (query index ``Q``), so the folds of
        a batch protocol share one shape. Default: no padding.
    """
    labels, mask = np.asarray(batch.labels), np.asarray(batch.mask)
    num_queries = labels.shape[0]
    if instances == "pairs":
        pref = mask[:, :, None] & mask[:, None, :] & (labels[:, :, None] > labels[:, None, :])
        query, first, second = (a.astype(np.int32) for a in np.nonzero(pref))
        target = np.ones(len(query), np.float32)
    elif instances == "documents":
        query, first = (a.astype(np.int32) for a in np.nonzero(mask))
        second, target = first, labels[query, first].astype(np.float32)
    else:
        raise ValueError(f"instances must be 'pairs' or 'documents'; got {instances!r}.")
    if len(query) == 0:
        raise ValueError(
            f"the batch ({num_queries} queries) has no training {instances}: every query has a single "
            "document or a single grade. Check the labels, or the file passed."
        )
    if length is not None:
        if length < len(query):
            raise ValueError(f"length={length} is shorter than the {len(query)} {instances} of the batch.")
        pad = length - len(query)
        query = np.concatenate([query, np.full(pad, num_queries, np.int32)])
        first, second = (np.concatenate([a, np.zeros(pad, np.int32)]) for a in (first, second))
        target = np.concatenate([target, np.zeros(pad, np.float32)])
    return InstanceStream(*(jnp.asarray(a) for a in (query, first, second, target)))


class Pass(NamedTuple):
    state: object  # the learner's state after the pass
    order: jax.Array  # [Q] i32, order[k] = the query visited k-th
    readouts: object  # learner readouts [Q, ...]: the model that scored the k-th visited query (or None)


def run_pass(learner: Learner, batch: QueryBatch, stream: InstanceStream, key, *, snapshots: bool = True,
             dtype=jnp.float32) -> Pass:
    """One online pass over ``batch`` in a random query order (SPEC §1.4 steps 1, 2c, 2d).

    ``key`` draws the query permutation, the order inside each query and the pair flips. With
    ``snapshots`` the readout before each visited query is kept (``Pass.readouts``).
    """
    num_queries = batch.features.shape[0]
    num_instances = stream.query.shape[0]
    key_perm, key_order, key_flip = jax.random.split(key, 3)
    order = jax.random.permutation(key_perm, num_queries).astype(jnp.int32)
    position = jnp.full(num_queries + 1, num_queries, jnp.int32).at[order].set(jnp.arange(num_queries, dtype=jnp.int32))
    visit = position[stream.query]  # [T] visiting position of each instance's query; Q on padding
    steps = jnp.lexsort((jax.random.uniform(key_order, (num_instances,)), visit)).astype(jnp.int32)
    visit_sorted = visit[steps]
    starts = jnp.concatenate([jnp.ones(1, bool), visit_sorted[1:] != visit_sorted[:-1]])
    if learner.instances == "pairs":
        flips = jnp.where(jax.random.bernoulli(key_flip, 0.5, (num_instances,)), -1.0, 1.0).astype(dtype)
    else:
        flips = jnp.ones(num_instances, dtype)
    features = batch.features.astype(dtype)
    state = learner.init(None, features.shape[-1], dtype)
    buffer = (
        jax.tree.map(lambda a: jnp.zeros((num_queries + 1,) + a.shape, a.dtype), learner.readout(state))
        if snapshots else None
    )

    def body(carry, xs):
        state, buffer = carry
        idx, start, row = xs
        q = jnp.minimum(stream.query[idx], num_queries - 1)
        x_first = features[q, stream.first[idx]]
        if learner.instances == "pairs":
            x = flips[idx] * (x_first - features[q, stream.second[idx]])
            y = flips[idx] * stream.target[idx].astype(dtype)
        else:
            x, y = x_first, stream.target[idx].astype(dtype)
        if snapshots:
            slot = jnp.where(start, row, num_queries)
            buffer = jax.tree.map(lambda b, r: b.at[slot].set(r), buffer, learner.readout(state))
        new, _, _ = learner.step(state, x, y)
        valid = stream.query[idx] < num_queries
        state = jax.tree.map(lambda n, o: jnp.where(valid, n, o), new, state)
        return (state, buffer), None

    (state, buffer), _ = jax.lax.scan(body, (state, buffer), (steps, starts, visit_sorted), unroll=8)
    if not snapshots:
        return Pass(state, order, None)
    final = learner.readout(state)
    buffer = jax.tree.map(lambda b, r: b.at[num_queries].set(r), buffer, final)
    has_row = jnp.zeros(num_queries + 1, bool).at[jnp.where(starts, visit_sorted, num_queries)].set(True)[:num_queries]
    rows = jax.lax.cummin(jnp.where(has_row, jnp.arange(num_queries), num_queries), reverse=True)
    return Pass(state, order, jax.tree.map(lambda b: b[rows], buffer))


def query_metrics(scores, labels, mask, key=None, *, letor_compat: bool = False) -> jax.Array:
    """``[..., 4]`` NDCG@1, NDCG@5, NDCG@10 and AP per query (``scores, labels, mask [..., L]``).

    Queries without a relevant document get 0 (SPEC §1.4 step 4). ``key`` breaks score ties at
    random (the standard convention); the LETOR-script convention keeps list order.
    """
    kw = dict(where=mask, reduce_fn=None, letor_compat=letor_compat, key=None if letor_compat else key)
    values = [metrics.ndcg(scores, labels, topn=k, **kw) for k in TOPN]
    values.append(metrics.average_precision(scores, labels, **kw))
    return jnp.nan_to_num(jnp.stack(values, axis=-1))


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


def online_protocol(learner: Learner, batch: QueryBatch, key, num_permutations: int = 10, *,
                    dtype=jnp.float32) -> OnlineResult:
    """SOLAR's online protocol (Algorithm 1, eq. 3) over ``num_permutations`` random permutations.

    The mean of ``cumulative[:, -1]`` over permutations is the paper's Table 2 entry.
    """
    stream = instance_stream(batch, learner.instances)
    per_query, order = online_program(learner, dtype)(batch, stream, permutation_keys(key, num_permutations))
    return OnlineResult(per_query, cumulative_mean(per_query), order)


@functools.lru_cache(maxsize=None)
def online_program(learner: Learner, dtype=jnp.float32):
    """The jitted ``(batch, stream, keys [P]) -> (per_query [P, Q, 4], order [P, Q])``."""

    def one(batch, stream, key):
        key_pass, key_ties = jax.random.split(key)
        run = run_pass(learner, batch, stream, key_pass, dtype=dtype)
        visited = jax.tree.map(lambda a: a[run.order], batch)
        scores = jax.vmap(learner.score)(run.readouts, visited.features.astype(dtype))
        return query_metrics(scores, visited.labels, visited.mask, key_ties), run.order

    return jax.jit(jax.vmap(one, in_axes=(None, None, 0)))


class BatchResult(NamedTuple):
    vali: jax.Array  # [F, H, 4] validation NDCG@1/5/10, MAP (standard convention)
    test: jax.Array  # [F, H, 4] test, standard convention (SPEC §5.1)
    test_letor: jax.Array  # [F, H, 4] test, LETOR-script convention (SPEC §5.3)


def _mean_over_queries(values, mask):
    """``[..., Q, 4] -> [..., 4]`` mean over real (not fully masked) queries."""
    real = jnp.any(mask, axis=-1)[..., None].astype(values.dtype)
    return jnp.sum(values * real, axis=-2) / jnp.maximum(jnp.sum(real, axis=-2), 1)


def batch_protocol(make_learner: Callable[[jax.Array], Learner], hparams, train: Sequence[QueryBatch],
                   vali: Sequence[QueryBatch], test: Sequence[QueryBatch], key, *, dtype=jnp.float32) -> BatchResult:
    """SOLAR's batch protocol (SPEC §1.5): one random pass over each fold's train set per value.

    Args:
      make_learner: hyperparameter (a traced scalar) ``-> Learner``, e.g. ``solar_first_order``.
      hparams: ``[H]`` grid, checked by the caller (all values are run in one program).
      train, vali, test: one ``QueryBatch`` per fold.
      key: fold ``f`` trains with ``fold_in(key, f)`` (the same order for every grid value).
    """
    instances = make_learner(jnp.float32(1.0)).instances
    streams = [instance_stream(b, instances) for b in train]
    length = max(s.query.shape[0] for s in streams)
    q_max = max(b.features.shape[0] for b in train)
    streams = [instance_stream(b, instances, length) for b in train]
    # padding instances must point past every fold's real queries: re-index them to Q_max
    streams = [s._replace(query=jnp.where(s.query >= b.features.shape[0], q_max, s.query)) for s, b in zip(streams, train)]
    stream = jax.tree.map(lambda *a: jnp.stack(a), *streams)
    keys = jax.vmap(lambda f: jax.random.fold_in(key, f))(jnp.arange(len(train)))
    program = _batch_program(make_learner, dtype)
    vali_m, test_m, test_l = program(stack_batches(train), stack_batches(vali), stack_batches(test), stream, keys,
                                     jnp.asarray(hparams, jnp.float32))
    return BatchResult(vali_m, test_m, test_l)


@functools.lru_cache(maxsize=None)
def _batch_program(make_learner, dtype):
    def one(train, vali, test, stream, key, hparam):
        learner = make_learner(hparam)
        state = run_pass(learner, train, stream, key, snapshots=False, dtype=dtype).state
        readout = learner.readout(state)

        def evaluate(batch, letor_compat):
            scores = learner.score(readout, batch.features.astype(dtype))
            values = query_metrics(scores, batch.labels, batch.mask, jax.random.fold_in(key, 1), letor_compat=letor_compat)
            return _mean_over_queries(values, batch.mask)

        return evaluate(vali, False), evaluate(test, False), evaluate(test, True)

    over_grid = jax.vmap(one, in_axes=(None, None, None, None, None, 0))
    return jax.jit(jax.vmap(over_grid, in_axes=(0, 0, 0, 0, 0, None)))
