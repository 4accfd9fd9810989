"""Semi-supervised LTR protocol of the LCRA paper (Tsivtsivadze et al. 2012, §4).

Per random split ``s``: 70% of the queries train, 30% test [query level: ours]; a random 20% of the
*training documents* keep their labels [document level: ours], the other training
documents are unlabeled (usable only in ``P̂``); supervised methods (SPD, SPD-MV) see only the
labeled documents. Hyperparameters are chosen by 5-fold cross-validation over the training
queries: a fold's model trains on the other four folds (their labeled docs for ``P`` and their
unlabeled docs for ``P̂``) and is scored by MAP on the held-out fold's *labeled* documents (the
only labels the protocol may read) [ours]. The best grid point (highest mean validation MAP, first
on ties) is retrained on the whole training part and scored by test MAP (binary relevance
``l > 0``, queries without a relevant document count as AP 0, the LETOR convention).

Every (split, fold, grid point) of one method runs in one compiled program: ``vmap`` over splits
and folds builds the per-fold pair tables once, and the grid ``[H]`` is vmapped inside the step so
all grid points share the fold's pair stream (common random numbers make the selection less
noisy); ``lax.scan`` runs the steps. Methods with the same key see the same labeled-pair stream.
"""

import dataclasses
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.learners.pairwise import lcra
from jaxrank.learners.pairwise.lcra import check_sizes
from jaxrank import lanes
from jaxrank.learners.pairwise import pair_sampling
from jaxrank.learners.pairwise.pair_sampling import PairSource, pair_source, pair_steps_block, scan_pair_steps
from jaxrank.metrics import average_precision
from jaxrank.pairs import pairs_per_query
from jaxrank.types import Learner, QueryBatch
from jaxrank.utils.checks import check_number


class Split(NamedTuple):
    """One random split of a ``QueryBatch`` with ``Q`` queries of ``L`` padded docs."""

    train_query: jax.Array  # [Q] bool, query in the training part
    fold: jax.Array  # [Q] i32, CV fold of a training query, -1 for test queries
    labeled: jax.Array  # [Q, L] bool, training docs that keep their labels
    unlabeled: jax.Array  # [Q, L] bool, the other training docs


@dataclasses.dataclass(frozen=True)
class Method:
    """A named variant (static): views ``M``, ``k`` labeled and ``l`` unlabeled pairs per step."""

    name: str
    num_views: int
    num_labeled: int = 1
    num_unlabeled: int = 0

    @property
    def co_regularized(self) -> bool:
        return self.num_unlabeled > 0


CHUNKS_PER_CALL = 32  # step blocks of one call of the lane runner: progress comes between calls

METHODS = {
    "spd": Method("SPD", 1),
    "spd_mv": Method("SPD-MV", 2),
    "lcra_1_1": Method("LCRA-1-1", 2, 1, 1),
    "lcra_1_5": Method("LCRA-1-5", 2, 1, 5),
}


def lcra_method(k: int, l: int) -> Method:
    """``LCRA-k-l``; rejects ``k < 1`` or ``l < 1``."""
    check_sizes(k, l, co_regularized=True)
    return Method(f"LCRA-{k}-{l}", 2, k, l)


def method_learner(method: Method, **options) -> Learner:
    """``lcra`` with ``method``'s views and the other static ``options`` (``lcra.OPTIONS``, defaults for the rest)."""
    if "num_views" in options:
        raise ValueError(f"num_views is set by the method ({method.name}: {method.num_views} views); "
                         f"choose another method instead of num_views={options['num_views']!r}.")
    return lcra.make(**{**lcra.OPTIONS, **options, "num_views": method.num_views})


Grid = dict  # {name: [H, ...]} f32 values of lcra.init's hyperparameters, one row per grid point


def make_grid(method: Method, lambdas, mus=(0.0,), eta0s=(1.0,), *, tie_view_lambdas: bool = True,
              fixed: dict = None) -> Grid:
    """Cartesian grid of ``lcra.init``'s hyperparameters, ``{name: [H, ...]}`` (the jaxrank grid
    convention: row ``h`` across every name is setting ``h``): λ per view (tied or one λ per view), μ (only for
    co-regularized methods), η0; ``fixed`` ``{name: value}`` adds the other hyperparameters
    (e.g. ``clamp``), the same at every point."""
    check_number("lambdas", lambdas, low=0, fix="use a positive grid such as 1e-6..1e-1")
    check_number("mus", mus, low=0, low_inclusive=True)
    check_number("eta0s", eta0s, low=0)
    m = method.num_views
    lam_sets = [(x,) * m for x in lambdas] if tie_view_lambdas else list(itertools.product(lambdas, repeat=m))
    mus = tuple(mus) if method.co_regularized else (0.0,)
    rows = list(itertools.product(lam_sets, mus, eta0s))
    grid = {"lam": jnp.asarray([r[0] for r in rows], jnp.float32), "mu": jnp.asarray([r[1] for r in rows], jnp.float32),
            "eta0": jnp.asarray([r[2] for r in rows], jnp.float32)}
    for name, value in (fixed or {}).items():
        if name in grid:
            raise ValueError(f"{name} is searched over the grid; set it through the grid's values, not as a fixed value.")
        grid[name] = jnp.full(len(rows), value, jnp.float32)
    return grid


def semi_supervised_split(key, mask: jax.Array, *, train_fraction: float = 0.7, label_fraction: float = 0.2,
                          num_folds: int = 5) -> Split:
    """Random query-level train/test split, document-level labeled subset and CV folds.

    Args:
      key: PRNG key of the split.
      mask: ``[Q, L]`` bool real documents (every query has at least one).
      train_fraction: share of queries in the training part (``round(f·Q)`` of them).
      label_fraction: share of training documents that keep their labels (``round(f·n)``, at least 1).
      num_folds: CV folds over the training queries (static).

    Returns:
      ``Split``; vmappable over ``key``.
    """
    key_query, key_docs = jax.random.split(key)
    num_queries = mask.shape[0]
    num_train = int(round(train_fraction * num_queries))
    rank = jnp.argsort(jax.random.permutation(key_query, num_queries))  # query's place in a random order
    train_query = rank < num_train
    fold = jnp.where(train_query, rank % num_folds, -1).astype(jnp.int32)
    train_docs = mask & train_query[:, None]
    u = jnp.where(train_docs, jax.random.uniform(key_docs, mask.shape), 2.0)
    num_labeled = jnp.maximum(jnp.round(label_fraction * train_docs.sum()), 1).astype(jnp.int32)
    threshold = jnp.sort(u.reshape(-1))[num_labeled - 1]
    labeled = train_docs & (u <= threshold)
    return Split(train_query=train_query, fold=fold, labeled=labeled, unlabeled=train_docs & ~labeled)


class FitCarry(NamedTuple):
    """A grid of fits in progress: the states ``[H, ...]``, the lane's sampling tables (the batch's
    features left out: ``fit_source`` puts them back, so lanes do not carry copies) and the key of
    the pair stream."""

    states: object
    source: PairSource
    key_steps: jax.Array


def start_fit(key_views, key_steps, learner: Learner, method: Method, batch: QueryBatch, labeled, unlabeled,
              grid: Grid, *, sampler: str = "exact") -> FitCarry:
    """The initial states of every grid point (views from ``key_views``) and the training set's tables."""
    source = pair_source(batch, labeled, unlabeled if method.co_regularized else None, sampler=sampler)
    num_features, dtype = batch.features.shape[-1], batch.features.dtype
    states = jax.vmap(lambda hparams: learner.init(key_views, num_features, dtype, **hparams))(grid)
    return FitCarry(states, dataclasses.replace(source, features=jnp.zeros((0, num_features), dtype)), key_steps)


def fit_source(carry: FitCarry, batch: QueryBatch) -> PairSource:
    """The carry's sampling tables with the batch's features (a reshape of the shared batch)."""
    return dataclasses.replace(carry.source, features=batch.features.reshape(-1, batch.features.shape[-1]))


def _grid_update(learner: Learner):
    def body(states, pairs):
        return jax.vmap(learner.update, in_axes=(0, None))(states, pairs)[0]

    return body


def fit_grid(key_views, key_steps, learner: Learner, method: Method, batch: QueryBatch, labeled, unlabeled,
             grid: Grid, *, num_steps: int, sampler: str = "exact") -> jax.Array:
    """Trains every grid point on one training set (shared pair stream). Returns ``w [H, M, D]``.
    The whole fit as one pure function (the lanes of ``cross_validate`` run it in chunks).

    ``key_views`` draws the views (``learner.init``; the same for every grid point), ``key_steps``
    the pairs; ``learner`` is ``lcra`` built with ``method.num_views`` views; ``labeled``/``unlabeled``
    are ``[Q, L]`` masks of the training documents; ``grid`` holds ``init``'s hyperparameters ``[H, ...]``.
    """
    source = pair_source(batch, labeled, unlabeled if method.co_regularized else None, sampler=sampler)
    num_features, dtype = batch.features.shape[-1], batch.features.dtype
    states = jax.vmap(lambda hparams: learner.init(key_views, num_features, dtype, **hparams))(grid)
    states = scan_pair_steps(key_steps, _grid_update(learner), states, source, num_steps=num_steps,
                             num_labeled=method.num_labeled, num_unlabeled=method.num_unlabeled)
    return states.w


def _advance_fit(learner: Learner, method: Method, carry: FitCarry, first_step, batch: QueryBatch,
                 num_steps: int) -> FitCarry:
    states = pair_steps_block(carry.key_steps, _grid_update(learner), carry.states, fit_source(carry, batch),
                              first_step, num_steps=num_steps, num_labeled=method.num_labeled,
                              num_unlabeled=method.num_unlabeled)
    return carry._replace(states=states)


def _step_chunks(num_steps: int) -> np.ndarray:
    """The first step of each chunk of ``pair_sampling.STEP_BLOCK`` steps."""
    return np.arange(0, num_steps, pair_sampling.STEP_BLOCK, dtype=np.int32)


def _progress(num_steps: int) -> np.ndarray:
    return np.minimum((np.arange(_step_chunks(num_steps).size) + 1) * pair_sampling.STEP_BLOCK, num_steps)


def _mean_ap(w_avg, batch: QueryBatch, query_idx, query_ok, where):
    """Mean AP over the selected queries ``query_idx [n]`` (``query_ok`` masks padding) for each
    ``w_avg [H, D]``; lists with no document in ``where`` are left out. Non-finite scores give 0."""
    x = batch.features[query_idx]  # [n, L, D]
    where = where[query_idx] & query_ok[:, None]
    scores = jnp.einsum("nld,hd->hnl", x, w_avg)
    ap = average_precision(scores, jnp.broadcast_to(batch.labels[query_idx], scores.shape),
                           where=jnp.broadcast_to(where, scores.shape), reduce_fn=None)  # [H, n]
    has = where.any(-1)
    value = jnp.sum(jnp.where(has, ap, 0.0), -1) / jnp.maximum(has.sum(), 1)
    finite = jnp.all(jnp.isfinite(w_avg), -1)
    return jnp.where(finite, value, 0.0)


def _keys(key):
    """Named keys of one split: the split itself, the views, CV steps, final steps."""
    return (jax.random.fold_in(key, 0), jax.random.fold_in(key, 1), jax.random.fold_in(key, 2),
            jax.random.fold_in(key, 3))


def _split_of(key, batch: QueryBatch, *, train_fraction: float, label_fraction: float, num_folds: int) -> Split:
    return semi_supervised_split(_keys(key)[0], batch.mask, train_fraction=train_fraction,
                                 label_fraction=label_fraction, num_folds=num_folds)


class FitConfig(NamedTuple):
    """The static configuration of ``cv_study`` and ``final_fit_study`` (hashable: jit's cache key)."""

    learner: Learner
    method: Method
    num_steps: int
    sampler: str
    num_folds: int
    train_fraction: float
    label_fraction: float

    def split_of(self, key, batch: QueryBatch) -> Split:
        return _split_of(key, batch, train_fraction=self.train_fraction, label_fraction=self.label_fraction,
                         num_folds=self.num_folds)


def cv_study(learner: Learner, method: Method, *, num_steps: int, sampler: str = "exact", num_folds: int = 5,
             train_fraction: float = 0.7, label_fraction: float = 0.2) -> lanes.Study:
    """One (split, fold) of the cross-validation as a lane (``jaxrank.lanes``): the lane's key is the
    split's (``split_keys``), ``lane_data`` the fold, ``data = (batch, grid)``; every grid point
    shares the fold's pair stream; one chunk per ``pair_sampling.STEP_BLOCK`` steps (``chunks`` their first steps).
    The result is the validation MAP ``[H]`` on the held-out fold's labeled documents."""
    config = FitConfig(learner, method, num_steps, sampler, num_folds, train_fraction, label_fraction)
    return lanes.bound_study(config, _cv_init, _cv_advance, _cv_result)


def _cv_init(config: FitConfig, key, hparams, data, fold):
    batch, grid = data
    _, key_views, key_cv, _ = _keys(key)
    split = config.split_of(key, batch)
    others = (split.fold >= 0) & (split.fold != fold)
    fit = start_fit(key_views, jax.random.fold_in(key_cv, fold), config.learner, config.method, batch,
                    split.labeled & others[:, None], split.unlabeled & others[:, None], grid, sampler=config.sampler)
    return fit, key


def _cv_advance(config: FitConfig, carry, first_step, data, fold):
    fit, key = carry
    return _advance_fit(config.learner, config.method, fit, first_step, data[0], config.num_steps), key


def _cv_result(config: FitConfig, carry, data, fold):
    (fit, key), batch = carry, data[0]
    split = config.split_of(key, batch)
    num_val = -(-int(round(config.train_fraction * batch.mask.shape[0])) // config.num_folds)  # largest fold
    in_fold = split.fold == fold
    (idx,) = jnp.nonzero(in_fold, size=num_val, fill_value=0)
    ok = jnp.arange(num_val) < in_fold.sum()
    return _mean_ap(fit.states.w.mean(1), batch, idx, ok, split.labeled)


def cross_validate(split_keys, learner: Learner, method: Method, batch: QueryBatch, grid: Grid, *, num_steps: int,
                   sampler: str = "exact", num_folds: int = 5, train_fraction: float = 0.7,
                   label_fraction: float = 0.2, mesh=None, label=None) -> np.ndarray:
    """Validation MAP ``[S, F, H]`` for ``S`` split keys, ``F`` folds and the ``H`` grid points: the
    ``S × F`` (split, fold) pairs are lanes of the lane runner (``cv_study``; ``mesh`` and ``label``
    are its)."""
    num_splits = int(np.shape(jax.random.key_data(split_keys))[0])
    keys = jnp.repeat(split_keys, num_folds, axis=0)  # lane s·F + f: split s, fold f
    folds = np.tile(np.arange(num_folds, dtype=np.int32), num_splits)
    study = cv_study(learner, method, num_steps=num_steps, sampler=sampler, num_folds=num_folds,
                     train_fraction=train_fraction, label_fraction=label_fraction)
    chunks = _step_chunks(num_steps)
    grid = {k: np.asarray(v) for k, v in grid.items()}
    out = lanes.run_lanes(study, keys, data=(batch, grid), lane_data=folds, chunks=chunks,
                          chunks_per_call=CHUNKS_PER_CALL, mesh=mesh, label=label,
                          progress=_progress(num_steps))
    return out.reshape(num_splits, num_folds, -1)


def final_fit_study(learner: Learner, method: Method, *, num_steps: int, sampler: str = "exact", num_folds: int = 5,
                    train_fraction: float = 0.7, label_fraction: float = 0.2) -> lanes.Study:
    """One split's final fit as a lane: ``lane_data`` the split's chosen grid point (leaves without
    the ``H`` axis), ``data`` the batch; the result is the test MAP ``[]`` on its test queries."""
    config = FitConfig(learner, method, num_steps, sampler, num_folds, train_fraction, label_fraction)
    return lanes.bound_study(config, _final_init, _final_advance, _final_result)


def _final_init(config: FitConfig, key, hparams, batch, chosen):
    _, key_views, _, key_final = _keys(key)
    split = config.split_of(key, batch)
    one = jax.tree.map(lambda x: x[None], chosen)
    return start_fit(key_views, key_final, config.learner, config.method, batch, split.labeled, split.unlabeled, one,
                     sampler=config.sampler), key


def _final_advance(config: FitConfig, carry, first_step, batch, chosen):
    fit, key = carry
    return _advance_fit(config.learner, config.method, fit, first_step, batch, config.num_steps), key


def _final_result(config: FitConfig, carry, batch, chosen):
    fit, key = carry
    split = config.split_of(key, batch)
    num_test = batch.mask.shape[0] - int(round(config.train_fraction * batch.mask.shape[0]))
    (idx,) = jnp.nonzero(~split.train_query, size=num_test, fill_value=0)
    return _mean_ap(fit.states.w.mean(1), batch, idx, jnp.ones(num_test, bool), batch.mask)[0]


def fit_and_test(split_keys, learner: Learner, method: Method, batch: QueryBatch, chosen: Grid, *, num_steps: int,
                 sampler: str = "exact", num_folds: int = 5, train_fraction: float = 0.7,
                 label_fraction: float = 0.2, mesh=None, label=None) -> np.ndarray:
    """Test MAP ``[S]``: split ``s`` retrains with its chosen setting ``chosen[s]`` on the whole
    training part (labeled + unlabeled docs) and is scored on all documents of its test queries; the
    splits are lanes of the lane runner (``final_fit_study``)."""
    study = final_fit_study(learner, method, num_steps=num_steps, sampler=sampler, num_folds=num_folds,
                       train_fraction=train_fraction, label_fraction=label_fraction)
    chunks = _step_chunks(num_steps)
    return lanes.run_lanes(study, split_keys, data=batch, lane_data={k: np.asarray(v) for k, v in chosen.items()},
                           chunks=chunks, chunks_per_call=CHUNKS_PER_CALL, mesh=mesh, label=label,
                           progress=_progress(num_steps))


def select(val_map: jax.Array, grid: Grid):
    """Per split, the grid point with the best mean validation MAP over folds (first on ties).

    Args:
      val_map: ``[S, F, H]``.

    Returns:
      ``(best [S] i32, chosen Grid with leading axis S)``.
    """
    best = jnp.argmax(val_map.mean(1), axis=-1)
    return best, jax.tree.map(lambda x: x[best], grid)


def split_keys(key, num_splits: int) -> jax.Array:
    """``[S]`` keys; split ``s`` uses ``fold_in(key, s)`` whatever ``S`` is."""
    return jax.vmap(lambda s: jax.random.fold_in(key, s))(jnp.arange(num_splits))


def check_batch(batch: QueryBatch) -> None:
    """Rejects a data set with no valid pair at all (before any compile).

    Counts each query's preference pairs from its grade histogram (``jaxrank.pairs.pairs_per_query``),
    ``O(N log N)`` on the real documents, no ``[Q, L, L]`` table.
    """
    mask = np.asarray(batch.mask, bool)
    if mask.ndim != 2:
        raise ValueError(f"expected a QueryBatch of [Q, L] queries; got a mask of shape {mask.shape}.")
    offsets = np.concatenate([[0], np.cumsum(mask.sum(1))]).astype(np.int64)
    if not mask.any() or pairs_per_query(np.asarray(batch.labels)[mask], offsets).sum() == 0:
        raise ValueError("the data set has no valid pair: every query has documents of a single grade; "
                         "ranking needs queries with at least two distinct grades.")
