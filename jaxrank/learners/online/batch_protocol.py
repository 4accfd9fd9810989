"""SOLAR's batch protocol (Wang et al., ACL 2015, §5.3.1): one random online pass over each fold's
training set per hyperparameter setting (``vmap`` over folds × grid; the hyperparameters are leaves
of the learner's state, so the grid compiles once), then validation and test metrics of the final
models under the standard and the LETOR-script conventions (SOLAR eq. 1–2; LETOR
``Eval-Score-4.0.pl``)."""

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data.ragged import Queries, as_ragged, map_queries
from jaxrank.learners.online.online_pass import MIN_LIST, check_init, query_keys, query_metrics, run_pass
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


def batch_protocol(key, learner: Learner, hparams: dict, train: Sequence[Queries], vali: Sequence[Queries],
                   test: Sequence[Queries], *, dtype=jnp.float32) -> BatchResult:
    """SOLAR's batch protocol: one random pass over each fold's train set per setting (the number of
    passes is our choice; the paper does not give it).

    Args:
      key: the folds' keys (``fold_keys``).
      learner: a ``Learner`` with ``step`` (``jaxrank.learners.LEARNERS.build(name, **options)``).
      hparams: the grid ``{name: [H] values}`` of ``learner.init``'s hyperparameters (e.g.
        ``{"c": [1e-5, 1e-4]}``, or ``jaxrank.utils.grid(...)``); every setting runs in one program.
      train, vali, test: one collection per fold (``RaggedQueries`` or ``QueryBatch``).
    """
    num_grid = grid_size(hparams)
    grid = {name: np.asarray(v, np.float32).reshape(-1) for name, v in hparams.items()}
    train, vali, test = ([as_ragged(b) for b in split] for split in (train, vali, test))
    key_pass, key_ties, key_init = fold_keys(key, len(train))
    for h in range(num_grid):  # rejects bad values before anything is traced
        check_init(learner, key_init[0], train[0].num_features, dtype, {k: v[h] for k, v in grid.items()})
    docs, stream = stack_folds(train, learner.instances, dtype)

    def one(docs, stream, key_pass, key_init, hparams):
        state = learner.init(key_init, docs.features.shape[-1], dtype, **hparams)
        return learner.params(run_pass(key_pass, learner, state, docs, stream, snapshots=False, dtype=dtype).state)

    over_grid = jax.vmap(one, in_axes=(None, None, None, None, 0))
    program = jax.jit(jax.vmap(over_grid, in_axes=(0, 0, 0, 0, None)))
    params = program(docs, stream, key_pass, key_init, {k: jnp.asarray(v) for k, v in grid.items()})
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
        return query_metrics(scores, batch.labels, batch.mask, query_keys(key, rows), letor_compat=letor_compat)

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
