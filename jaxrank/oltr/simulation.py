"""The user simulation and evaluation of online learning to rank (Oosterhuis & de Rijke, CIKM 2018, §6).

One impression: draw a training query uniformly at random, let the ranker show ``k = 10``
documents, simulate cascade clicks on them (``jaxrank.clicks.cascade_clicks`` with the perfect /
navigational / informational models, or any user of ``jaxrank.clicks.user_clicks``, e.g. a click model
fitted to a log: ``jaxrank.clicks.fitted``), and let the ranker learn from the clicks. Two measures:

* offline: NDCG@10 of the current ranker on the held-out test queries, at a few checkpoints;
* online: NDCG@10 of each displayed list, accumulated as ``Σ_t γ^{t-1} NDCG_t`` with ``γ = 0.9995``
  (the discounted cumulative NDCG of Hofmann et al. 2013 used in the paper; the authors'
  ``utils/singlesimulation.py``), plus the plain mean of each stretch between checkpoints.

Both use ``jaxrank.metrics`` (a query with no relevant document has NDCG 0). One run is a lane of
``jaxrank.lanes``: ``study`` gives its ``init`` / ``advance`` / ``result``, each chunk of work is
the stretch between two checkpoints (a ``fori_loop`` over its impressions, then the offline
evaluation). ``simulate`` is one run as a pure function; ``simulate_grid`` runs every (fold, click
model, run) as lanes of one program with ``jaxrank.lanes.run_lanes`` (sharded, resumable).
Impression ``t`` of a run uses ``fold_in(key_steps, t)`` split into ``key_query, key_rank, key_click``,
with ``key_init, key_steps = split(key_run)``.

Shapes: ``Q`` queries, each padded to ``L`` candidate documents of ``D`` features (as
``jaxrank.types.QueryBatch``), ``F`` folds stacked, ``k`` displayed positions.
"""

from typing import Any, Mapping, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes
from jaxrank.clicks.fitted import SimulatedUser, user_clicks
from jaxrank.clicks.models import STOP_RULES
from jaxrank.data.ragged import bucket_size, pad_queries
from jaxrank.metrics.ranking import dcg, ndcg, ranked_dcg
from jaxrank.types import Array, PRNGKey, QueryBatch, Ranker
from jaxrank.utils.checks import check_choice, check_int, check_number

ONLINE_DISCOUNT = 0.9995
_EVAL_QUERIES = 16  # test queries scored at once by a non-linear ranker's offline evaluation


class ClickQueries(NamedTuple):
    """Padded queries for the simulation; several can be stacked on a leading axis (folds)."""

    features: Array  # [Q, L, D] f32, zero on padding
    labels: Array  # [Q, L] f32 relevance grades, zero on padding
    mask: Array  # [Q, L] bool, True for real documents
    ideal_dcg: Array  # [Q] f32, DCG@topn of the ideal ordering (0: no relevant document)
    num_queries: Array  # [] i32, queries 0..num_queries-1 are real (the rest pad a stack)


def click_queries(queries: QueryBatch, *, topn: int = 10) -> ClickQueries:
    """``ClickQueries`` from a padded ``QueryBatch`` (``jaxrank.data.pad_queries``).

    Raises:
      ValueError: for no query at all, or a NaN or infinite feature (naming query and document).
    """
    check_int("topn", topn, minimum=1)
    features, mask = np.asarray(queries.features, np.float32), np.asarray(queries.mask, bool)
    if features.shape[0] == 0:
        raise ValueError("click_queries got 0 queries; the simulation draws its queries from them (a fold or part "
                         "with no query cannot be used).")
    bad = ~np.isfinite(features) & mask[..., None]
    if bad.any():
        q, d, j = (int(i[0]) for i in np.nonzero(bad))
        raise ValueError(f"feature {j} of document {d} of query {q} is {features[q, d, j]}; the rankers need finite "
                         "features (drop or impute it, as jaxrank.data's loaders require).")
    labels = jnp.asarray(np.where(mask, np.asarray(queries.labels, np.float32), 0.0))
    mask = jnp.asarray(mask)
    ideal_dcg = dcg(labels, labels, where=mask, topn=topn, reduce_fn=None)
    return ClickQueries(jnp.asarray(features), labels, mask, ideal_dcg, jnp.asarray(labels.shape[0], jnp.int32))


def stack_queries(parts: Sequence[ClickQueries]) -> ClickQueries:
    """Stacks query sets (e.g. the folds) on a new leading axis, padding ``Q`` and ``L`` with
    masked queries/documents; ``num_queries`` keeps each part's own count."""
    num_q = max(p.features.shape[0] for p in parts)
    num_docs = max(p.features.shape[1] for p in parts)

    def pad(x, value=0):
        widths = [(0, num_q - x.shape[0])] + ([(0, num_docs - x.shape[1])] + [(0, 0)] * (x.ndim - 2)
                                              if x.ndim > 1 else [])
        return jnp.pad(x, widths, constant_values=value)

    return ClickQueries(
        jnp.stack([pad(p.features) for p in parts]), jnp.stack([pad(p.labels) for p in parts]),
        jnp.stack([pad(p.mask, False) for p in parts]), jnp.stack([pad(p.ideal_dcg) for p in parts]),
        jnp.stack([p.num_queries for p in parts]))


def stack_folds(folds: Mapping[int, tuple], fold_ids: Sequence[int], *, topn: int = 10):
    """``(train, test, L)``: the folds ``fold_ids`` of ``{fold: (train, test)}`` (ragged or padded
    queries) padded to one list size ``L`` (a power-of-two bucket, ``jaxrank.data.bucket_size``) and
    stacked ``[F, ...]`` as ``simulate_grid`` reads them.

    Raises:
      ValueError: for a repeated fold (its lanes would duplicate others) or a part with no query.
    """
    fold_ids = list(fold_ids)
    if not fold_ids or len(set(fold_ids)) != len(fold_ids):
        raise ValueError(f"folds must name each fold once; got {tuple(fold_ids)} (a repeated fold runs the same "
                         "lanes twice).")
    for k in fold_ids:
        for part, queries in zip(("train", "test"), folds[k]):
            if queries.num_queries == 0:
                raise ValueError(f"fold {k}'s {part} part has 0 queries; choose folds whose parts hold queries.")
    num_docs = bucket_size(int(max(np.asarray(q.lengths if hasattr(q, "lengths") else q.mask.sum(-1)).max()
                                   for k in fold_ids for q in folds[k])))

    def stack(part):
        return stack_queries([click_queries(pad_queries(folds[k][part], num_docs), topn=topn) for k in fold_ids])

    return stack(0), stack(1), num_docs


def displayed_ndcg(ranked_labels: Array, shown: Array, ideal_dcg: Array) -> Array:
    """``[]`` NDCG of one displayed list: ``DCG(list) / ideal_dcg``, 0 when ``ideal_dcg = 0``."""
    value = ranked_dcg(ranked_labels, where=shown)
    return jnp.where(ideal_dcg > 0, value / jnp.where(ideal_dcg > 0, ideal_dcg, 1.0), 0.0)


def impression(key: PRNGKey, ranker: Ranker, state, train: ClickQueries, click_model: SimulatedUser, fold=0, *,
               stop_rule: str = "after_click"):
    """One simulated impression: ``(state, NDCG of the displayed list)``.

    ``train`` is ``ClickQueries`` stacked over folds (``stack_queries``); the query comes from ``fold``;
    ``stop_rule`` is ``jaxrank.clicks.cascade_clicks``'s. A ``FittedUser`` numbers document ``d`` of
    query ``q`` of fold ``f`` as ``(f·Q + q)·L + d`` (``jaxrank.clicks.fitted``).
    """
    key_query, key_rank, key_click = jax.random.split(key, 3)
    q = jax.random.randint(key_query, (), 0, train.num_queries[fold])
    features, labels, where = train.features[fold, q], train.labels[fold, q], train.mask[fold, q]
    docs, shown, aux = ranker.rank(key_rank, state, features, where)
    ranked_labels = jnp.where(shown, labels[jnp.maximum(docs, 0)], 0.0)
    num_queries, num_docs = train.labels.shape[-2:]
    ranked_ids = (fold * num_queries + q) * num_docs + jnp.maximum(docs, 0)
    clicks = user_clicks(key_click, click_model, ranked_labels, ranked_ids, shown, stop_rule=stop_rule)
    state, _ = ranker.update(state, features, where, docs, shown, clicks, aux)
    return state, displayed_ndcg(ranked_labels, shown, train.ideal_dcg[fold, q])


def offline_ndcg(ranker: Ranker, params, test: ClickQueries, *, topn: int = 10) -> Array:
    """``[]`` mean NDCG@topn of the ranker ``params`` over the test queries.

    Ties keep document order (``lax.top_k``); they only occur before the first update (``w = 0``).
    """
    return ndcg(ranker.score(params, test.features), test.labels, where=test.mask, topn=topn)


def log_checkpoints(num_impressions: int, num_points: int = 16) -> tuple[int, ...]:
    """``0`` and about ``num_points`` log-spaced impression counts up to ``num_impressions``."""
    check_int("num_impressions", num_impressions, minimum=1)
    points = np.unique(np.round(np.logspace(0, np.log10(num_impressions), num_points)).astype(int))
    return (0,) + tuple(int(p) for p in points)


class SimulationResult(NamedTuple):
    offline: Array  # [C] f32, offline NDCG@10 at each checkpoint
    online: Array  # [C] f32, discounted cumulative NDCG of the displayed lists up to each checkpoint
    display: Array  # [C] f32, mean NDCG of the lists displayed since the previous checkpoint (0 at 0)
    params: Any  # ranker.params of the final state (w [D] for a linear ranker, a pytree for a network)


class Lane(NamedTuple):
    """What differs between the lanes of a grid, besides the key and hyperparameters."""

    fold: Array  # [] i32, index into the stacked folds of the study's data
    click_model: SimulatedUser  # [G] leaves of a cascade user, [N] of a FittedUser


class Carry(NamedTuple):
    key: PRNGKey  # key_steps of the run
    state: Any  # the ranker's state
    total: Array  # [] f32, discounted cumulative NDCG so far
    factor: Array  # [] f32, γ^t
    offline: Array  # [C] f32
    online: Array  # [C] f32
    display: Array  # [C] f32


def _check_checkpoints(checkpoints) -> tuple[int, ...]:
    checkpoints = tuple(int(c) for c in checkpoints)
    if not checkpoints or checkpoints[0] != 0 or any(b <= a for a, b in zip(checkpoints, checkpoints[1:])):
        raise ValueError(f"checkpoints must increase strictly from 0; got {checkpoints}.")
    return checkpoints


def stretches(checkpoints: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks of a run: ``(start, end, index)`` ``[C - 1]`` i32 each, stretch ``c`` running
    impressions ``start..end-1`` and ending at checkpoint ``index = c + 1``."""
    checkpoints = _check_checkpoints(checkpoints)
    bounds = np.asarray(checkpoints, np.int32)
    return bounds[:-1], bounds[1:], np.arange(1, len(bounds), dtype=np.int32)


class StudyConfig(NamedTuple):
    """The static configuration of the protocol's study (hashable: jit's cache key)."""

    ranker: Ranker
    num_checkpoints: int
    discount: float
    topn: int
    stop_rule: str


def study(ranker: Ranker, *, num_checkpoints: int, discount=ONLINE_DISCOUNT, topn: int = 10,
          stop_rule: str = "after_click") -> lanes.Study:
    """One run of the paper's protocol as a ``jaxrank.lanes.Study``.

    ``data = (train, test)``, ``ClickQueries`` stacked over ``F`` folds; ``lane_data`` a ``Lane``;
    ``hparams`` go to ``ranker.init``; the chunks are ``stretches(checkpoints)`` with
    ``num_checkpoints = len(checkpoints)``; ``stop_rule`` is ``jaxrank.clicks.cascade_clicks``'s.
    The result is a ``SimulationResult``. Studies of the same ranker object and settings are equal
    (one compiled program).
    """
    check_int("num_checkpoints", num_checkpoints, minimum=1)
    check_choice("stop_rule", stop_rule, STOP_RULES)
    check_number("discount", discount, low=0.0, high=1.0, low_inclusive=False, high_inclusive=True)
    config = StudyConfig(ranker, int(num_checkpoints), float(discount), int(topn), stop_rule)
    return lanes.bound_study(config, _study_init, _study_advance, _study_result)


def _evaluate(config: StudyConfig, state, test: ClickQueries, fold):
    ranker = config.ranker
    params = ranker.params(state)
    if isinstance(params, jax.Array) and params.ndim == 1:
        # A linear ranker: scores of every fold's test queries, then this lane's. Under vmap a
        # per-lane copy of the fold's features would be [lanes, Q, L, D]; the scores are D times smaller.
        scores = ranker.score(params, test.features)[fold]
    else:
        # A network's hidden layer over every fold would be [lanes, F, Q, L, H]: score the lane's
        # own fold, a few queries at a time.
        scores = jax.lax.map(lambda q: ranker.score(params, test.features[fold, q]),
                             jnp.arange(test.features.shape[1]), batch_size=_EVAL_QUERIES)
    return ndcg(scores, test.labels[fold], where=test.mask[fold], topn=config.topn)


def _study_init(config: StudyConfig, key, hparams, data, lane: Lane) -> Carry:
    train, test = data
    key_init, key_steps = jax.random.split(key)
    state = config.ranker.init(key_init, train.features.shape[-1], **hparams)
    zeros = jnp.zeros(config.num_checkpoints, jnp.float32)
    return Carry(key_steps, state, jnp.zeros((), jnp.float32), jnp.ones((), jnp.float32),
                 zeros.at[0].set(_evaluate(config, state, test, lane.fold)), zeros, zeros)


def _study_advance(config: StudyConfig, carry: Carry, chunk, data, lane: Lane) -> Carry:
    start, end, index = chunk
    train, test = data
    gamma = jnp.asarray(config.discount, jnp.float32)

    def body(t, inner):
        state, total, factor, shown_sum = inner
        state, value = impression(jax.random.fold_in(carry.key, t), config.ranker, state, train, lane.click_model,
                                  lane.fold, stop_rule=config.stop_rule)
        return state, total + factor * value, factor * gamma, shown_sum + value

    state, total, factor, shown_sum = jax.lax.fori_loop(
        start, end, body, (carry.state, carry.total, carry.factor, jnp.zeros((), jnp.float32)))
    mean = shown_sum / jnp.maximum(end - start, 1).astype(jnp.float32)
    return carry._replace(state=state, total=total, factor=factor,
                          offline=carry.offline.at[index].set(_evaluate(config, state, test, lane.fold)),
                          online=carry.online.at[index].set(total), display=carry.display.at[index].set(mean))


def _study_result(config: StudyConfig, carry: Carry, data, lane: Lane) -> SimulationResult:
    del data, lane
    return SimulationResult(carry.offline, carry.online, carry.display, config.ranker.params(carry.state))


def simulate(key: PRNGKey, ranker: Ranker, train: ClickQueries, test: ClickQueries, click_model: SimulatedUser, *,
             checkpoints: Sequence[int], hparams: Optional[Mapping[str, Any]] = None, discount=ONLINE_DISCOUNT,
             topn: int = 10, stop_rule: str = "after_click") -> SimulationResult:
    """One run of the paper's protocol, ``checkpoints[-1]`` impressions from ``train``; pure (jit, vmap).

    Args:
      key: the run's PRNG key (``key_init, key_steps = split(key)``).
      ranker: a ``jaxrank.types.Ranker`` (``jaxrank.oltr.RANKERS.build(name)``).
      train: ``ClickQueries`` the impressions draw from.
      test: ``ClickQueries`` of the offline evaluation.
      click_model: ``CascadeModel`` of the simulated users, or any ``jaxrank.clicks.SimulatedUser`` (a
        ``FittedUser`` numbers ``train``'s documents ``q·L + d``).
      checkpoints: static increasing impression counts starting at 0 (``log_checkpoints``).
      hparams: ``ranker.init``'s hyperparameters (default the module's ``HPARAMS``).
      discount: ``γ`` of the online measure.
      topn: cutoff of the offline NDCG.
      stop_rule: the cascade users' ``jaxrank.clicks.cascade_clicks`` stop rule.

    Returns:
      ``SimulationResult`` with ``[C]`` measures, ``C = len(checkpoints)``.
    """
    chunks = stretches(checkpoints)
    one = lambda x: jnp.expand_dims(x, 0)  # noqa: E731  (one fold)
    data = (jax.tree.map(one, train), jax.tree.map(one, test))
    run = study(ranker, num_checkpoints=len(chunks[0]) + 1, discount=discount, topn=topn, stop_rule=stop_rule)
    return lanes.lane(run, key, dict(hparams or {}), data, Lane(jnp.zeros((), jnp.int32), click_model),
                      jax.tree.map(jnp.asarray, chunks))


def lane_keys(seed: int, fold_ids: Sequence[int], num_models: int, num_runs: int) -> Array:
    """``[F, M, R]`` keys: lane (fold f, click model m, run r) uses ``fold_in(fold_in(fold_in(key(seed), f), m), r)``
    with ``f`` the fold's number (so a fold's runs do not depend on the other folds chosen)."""
    root = jax.random.key(seed)
    runs, models = jnp.arange(num_runs), jnp.arange(num_models)
    one = lambda f, m, r: jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(root, f), m), r)  # noqa: E731
    return jax.vmap(lambda f: jax.vmap(lambda m: jax.vmap(lambda r: one(f, m, r))(runs))(models))(
        jnp.asarray(fold_ids))


def grid_lanes(keys, click_models: SimulatedUser) -> tuple[Array, Lane]:
    """The lanes of a grid in (fold, click model, run) order: ``(keys [N], Lane [N])`` from
    ``keys [F, M, R]`` and ``click_models`` with ``[M, G]`` leaves, ``N = F·M·R``."""
    num_folds, num_models, num_runs = keys.shape
    folds, models = np.meshgrid(np.arange(num_folds), np.arange(num_models), np.arange(num_runs), indexing="ij")[:2]
    lane = Lane(jnp.asarray(folds.reshape(-1), jnp.int32),
                jax.tree.map(lambda x: jnp.asarray(x)[models.reshape(-1)], click_models))
    return keys.reshape(-1), lane


def simulate_grid(keys, ranker: Ranker, train: ClickQueries, test: ClickQueries, click_models: SimulatedUser, *,
                  checkpoints: Sequence[int], hparams: Optional[Mapping[str, Any]] = None, discount=ONLINE_DISCOUNT,
                  topn: int = 10, stop_rule: str = "after_click", checkpoint: Optional[lanes.Checkpoint] = None,
                  label: Optional[str] = None, mesh=None) -> SimulationResult:
    """``simulate`` for every (fold, click model, run): lanes of one program (``jaxrank.lanes.run_lanes``,
    sharded over every device, resumable with a ``checkpoint``), results as numpy ``[F, M, R, ...]``.

    Args:
      keys: ``[F, M, R]`` PRNG keys, one per run (``lane_keys``).
      ranker: a ``jaxrank.types.Ranker`` (``jaxrank.oltr.RANKERS.build(name)``).
      train: ``ClickQueries`` stacked over ``F`` folds (``stack_folds``).
      test: ``ClickQueries`` stacked over the same ``F`` folds.
      click_models: ``CascadeModel`` with ``[M, G]`` leaves, or ``M`` stacked users of one type (a
        ``FittedUser``'s ``[M, N]`` tables are copied to each of its lanes).
      hparams: ``{name: value}``, each a number or an array that broadcasts to ``[F, M, R]``.
      checkpoint, label, mesh: as ``jaxrank.lanes.run_lanes``; each stretch between two
        ``checkpoints`` is one call, so a resumed run continues from the last checkpoint reached.
    """
    shape = tuple(keys.shape)
    if train.features.shape[0] != shape[0] or test.features.shape[0] != shape[0]:
        raise ValueError(f"keys are [F={shape[0]}, M, R] but train and test stack {train.features.shape[0]} and "
                         f"{test.features.shape[0]} folds.")
    flat_keys, lane_data = grid_lanes(keys, click_models)
    grid = {name: np.broadcast_to(np.asarray(value, np.float32), shape).reshape(-1)
            for name, value in (hparams or {}).items()}
    chunks = stretches(checkpoints)
    run = study(ranker, num_checkpoints=len(chunks[0]) + 1, discount=discount, topn=topn, stop_rule=stop_rule)
    out = lanes.run_lanes(run, flat_keys, grid, data=(train, test), lane_data=lane_data, chunks=chunks,
                          progress=chunks[1], checkpoint=checkpoint, label=label, mesh=mesh)
    return jax.tree.map(lambda x: x.reshape(shape + x.shape[1:]), out)
