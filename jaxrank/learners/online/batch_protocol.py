"""SOLAR's batch protocol (Wang et al., ACL 2015, §5.3.1): one random online pass over each fold's
training set per hyperparameter setting (the folds as lanes of ``jaxrank.lanes``, the grid vmapped
inside each lane over the fold's shared pass; the hyperparameters are leaves of the learner's
state, so the grid compiles once), then validation and test metrics of the final
models under the standard and the LETOR-script conventions (SOLAR eq. 1–2; LETOR
``Eval-Score-4.0.pl``)."""

import functools
from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data.ragged import Queries, as_ragged, map_queries
from jaxrank import lanes
from jaxrank.learners.online import streams
from jaxrank.learners.online.online_pass import (
    BLOCK,
    BLOCKS_PER_CALL,
    MIN_LIST,
    SEGMENT,
    apply_block,
    block_inputs,
    check_init,
    num_blocks,
    query_keys,
    query_metrics,
    start_pass,
)
from jaxrank.learners.online.streams import stack_folds
from jaxrank.types import Learner


class BatchResult(NamedTuple):
    vali: jax.Array  # [F, H, 4] validation NDCG@1/5/10, MAP (standard convention)
    test: jax.Array  # [F, H, 4] test, standard convention (SOLAR eq. 1–2)
    test_letor: jax.Array  # [F, H, 4] test, LETOR-script convention (Eval-Score-4.0.pl)


def fold_keys(key, num_folds: int) -> tuple:
    """``(key_pass [F], key_ties [F], key_init [F])``: fold ``f`` trains with ``fold_in(key, f)``
    (the same order for every setting), breaks metric ties with ``fold_in(fold_in(key, f), 1)`` and
    initialises the learner with ``fold_in(fold_in(key, f), 2)``."""
    keys = jax.vmap(lambda f: jax.random.fold_in(key, f))(jnp.arange(num_folds))
    return keys, jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys), jax.vmap(lambda k: jax.random.fold_in(k, 2))(keys)


def grid_size(hparams: dict) -> int:
    """``H`` of a grid ``{name: [H] values}``; ``ValueError`` unless every entry has the same length."""
    sizes = {name: np.size(v) for name, v in hparams.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"every hyperparameter of the grid needs the same number of settings; got {sizes}.")
    return next(iter(sizes.values()), 1)


class BatchConfig(NamedTuple):
    """The static configuration of ``batch_study`` (hashable: jit's cache key)."""

    learner: Learner
    dtype: Any


def batch_study(learner: Learner, *, dtype=jnp.float32) -> lanes.Study:
    """One fold of the batch protocol as a lane (``jaxrank.lanes``): the lane's key draws the pass
    (``fold_in(key, 2)`` initialises the learner), ``data`` is the grid ``{name: [H]}`` (every grid
    point shares the fold's pass draws), ``lane_data = (docs, stream)`` the fold's, one chunk per block
    (``chunks = arange(max blocks over the folds)``; a fold's blocks past its pass change nothing).
    The result is the final ``params`` ``[H, ...]``."""
    return lanes.bound_study(BatchConfig(learner, dtype), _batch_init, _batch_advance, _batch_result)


def _batch_init(config: BatchConfig, key, hparams, grid, lane_data):
    docs, stream = lane_data
    num_features = docs.features.shape[-1]
    learner = config.learner
    states = jax.vmap(lambda h: learner.init(jax.random.fold_in(key, 2), num_features, config.dtype, **h))(grid)
    return start_pass(key, learner, states, stream, snapshots=False)


def _batch_advance(config: BatchConfig, carry, chunk, grid, lane_data):
    docs, stream = lane_data
    learner = config.learner
    x, y, live, _ = block_inputs(learner, carry, chunk, docs, stream, dtype=config.dtype)
    states, _ = jax.vmap(lambda state: apply_block(learner, state, x, y, live, snapshots=False))(carry.state)
    sizes = (stream.offsets[1:] - stream.offsets[:-1]).astype(jnp.int32)
    in_pass = chunk < -(-jnp.sum(-(-sizes // SEGMENT) * SEGMENT) // BLOCK)  # this fold's blocks
    return carry._replace(state=jax.tree.map(lambda new, old: jnp.where(in_pass, new, old), states, carry.state))


def _batch_result(config: BatchConfig, carry, grid, lane_data):
    return jax.vmap(config.learner.params)(carry.state)


def batch_protocol(key, learner: Learner, hparams: dict, train: Sequence[Queries], vali: Sequence[Queries],
                   test: Sequence[Queries], *, dtype=jnp.float32, mesh=None, label=None) -> BatchResult:
    """SOLAR's batch protocol: one random pass over each fold's train set per setting (the number of
    passes is our choice; the paper does not give it), the folds as lanes of the lane runner
    (``batch_study``).

    Args:
      key: the folds' keys (``fold_keys``).
      learner: a ``Learner`` with ``step`` (``jaxrank.learners.LEARNERS.build(name, **options)``).
      hparams: the grid ``{name: [H] values}`` of ``learner.init``'s hyperparameters (e.g.
        ``{"c": [1e-5, 1e-4]}``); every setting runs in one program.
      train, vali, test: one collection per fold (``RaggedQueries`` or ``QueryBatch``).
      mesh, label: the lane runner's (``jaxrank.lanes.run_lanes``).
    """
    num_grid = grid_size(hparams)
    grid = {name: np.asarray(v, np.float32).reshape(-1) for name, v in hparams.items()}
    train, vali, test = ([as_ragged(b) for b in split] for split in (train, vali, test))
    key_pass, key_ties, key_init = fold_keys(key, len(train))
    for h in range(num_grid):  # rejects bad values before anything is traced
        check_init(learner, key_init[0], train[0].num_features, dtype, {k: v[h] for k, v in grid.items()})
    docs, stream = stack_folds(train, learner.instances, dtype)
    blocks = max(num_blocks(streams.InstanceStream(*(a[f] for a in stream))) for f in range(len(train)))
    params = lanes.run_lanes(batch_study(learner, dtype=dtype), key_pass, data=grid, lane_data=(docs, stream),
                             chunks=np.arange(blocks, dtype=np.int32), chunks_per_call=BLOCKS_PER_CALL, mesh=mesh,
                             label=label)
    return evaluate_folds(key_ties, learner.score, params, vali, test, dtype=dtype)


def evaluate_folds(keys, score, params, vali: Sequence[Queries], test: Sequence[Queries], *,
                   dtype=jnp.float32) -> BatchResult:
    """Validation and test metrics of params ``[F, H, ...]`` (one model per fold and grid value).

    ``keys [F]``: fold ``f`` breaks ties with ``keys[f]``; ``score(params, features [..., L, D]) ->
    [..., L]`` is the learner's scoring.
    """
    out = {"vali": [], "test": [], "test_letor": []}
    for f in range(len(vali)):
        fold_params = jax.tree.map(lambda r: r[f], params)  # [H, ...]
        for name, batch, compat in (("vali", vali[f], False), ("test", test[f], False), ("test_letor", test[f], True)):
            out[name].append(mean_query_metrics(keys[f], score, fold_params, batch, letor_compat=compat, dtype=dtype))
    return BatchResult(*(jnp.asarray(np.stack(out[n])) for n in BatchResult._fields))


@functools.partial(jax.jit, static_argnames=("score", "dtype", "letor_compat"))
def _metrics_block(batch, params, key, rows, *, score, dtype, letor_compat):
    """``[H, B, 4]``: the per-query metrics of one bucket under each of ``H`` models. Static in the
    scoring function: learners that score alike (``linear.score``) share the compiles."""

    def one(p):
        scores = score(p, batch.features.astype(dtype))
        return query_metrics(scores, batch.labels, batch.mask, key=query_keys(key, rows), letor_compat=letor_compat)

    return jax.vmap(one)(params)


def mean_query_metrics(key, score, params, queries: Queries, *, letor_compat: bool = False,
                       dtype=jnp.float32) -> np.ndarray:
    """``[H, 4]`` NDCG@1/5/10 and MAP over the queries, for each of ``H`` models (params leaves ``[H, ...]``).

    ``score`` is the learner's scoring function; query ``q`` breaks ties with ``fold_in(key, q)``.
    """
    per_query = map_queries(lambda b: _metrics_block(b.batch, params, key, jnp.asarray(b.queries, jnp.int32),
                                                     score=score, dtype=dtype, letor_compat=letor_compat),
                            queries, axis=1, minimum=MIN_LIST)  # [H, Q, 4]
    return per_query.mean(axis=1)
