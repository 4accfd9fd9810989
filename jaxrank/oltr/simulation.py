"""The user simulation and evaluation of online learning to rank (Oosterhuis & de Rijke, CIKM 2018, §6).

One impression: draw a training query uniformly at random, let the ranker show ``L = 10``
documents, simulate cascade clicks on them (``jaxrank.clicks.cascade_clicks`` with the perfect /
navigational / informational models), and let the ranker learn from the clicks. Two measures:

* offline: NDCG@10 of the current ranker on the held-out test queries, at a few checkpoints;
* online: NDCG@10 of each displayed list, accumulated as ``Σ_t γ^{t-1} NDCG_t`` with ``γ = 0.9995``
  (the discounted cumulative NDCG of Hofmann et al. 2013 used in the paper; the authors'
  ``utils/singlesimulation.py``), plus the plain mean of each stretch between checkpoints.

A query with no relevant document has NDCG 0 (online and offline, ``jaxrank.metrics.ndcg``).
Everything runs inside one compiled program: a ``lax.scan`` over the stretches between
checkpoints, a ``fori_loop`` over the impressions of a stretch, and ``jax.vmap`` over lanes
(runs × click models × folds) outside. Impression ``t`` of a run uses ``fold_in(key_run, t)``
split into ``key_query, key_rank, key_click``.
"""

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks.models import CascadeModel, cascade_clicks
from jaxrank.metrics.ranking import ndcg
from jaxrank.oltr.base import OnlineRanker
from jaxrank.types import Array, QueryBatch
from jaxrank.utils.checks import check_int, check_number

ONLINE_DISCOUNT = 0.9995


class ClickQueries(NamedTuple):
    """Padded queries for the simulation; several can be stacked on a leading axis (folds)."""

    features: Array  # [Q, N, D] f32, zero on padding
    labels: Array  # [Q, N] f32 relevance grades, zero on padding
    mask: Array  # [Q, N] bool, True for real documents
    ideal_dcg: Array  # [Q] f32, DCG@topn of the ideal ordering (0: no relevant document)
    num_queries: Array  # [] i32, queries 0..num_queries-1 are real (the rest pad a stack)


def _dcg_gains(labels):
    return jnp.exp2(labels) - 1.0


def _discounts(num: int):
    return 1.0 / jnp.log2(jnp.arange(2, num + 2, dtype=jnp.float32))


def click_queries(queries: QueryBatch, *, topn: int = 10) -> ClickQueries:
    """``ClickQueries`` from a padded ``QueryBatch`` (``jaxrank.data.pad_queries``)."""
    check_int("topn", topn, minimum=1)
    labels = np.where(np.asarray(queries.mask), np.asarray(queries.labels, np.float32), 0.0)
    ideal = -np.sort(-labels, axis=-1)[..., :topn]
    ideal_dcg = np.sum((np.exp2(ideal) - 1.0) / np.log2(np.arange(2, ideal.shape[-1] + 2)), axis=-1)
    return ClickQueries(jnp.asarray(queries.features, jnp.float32), jnp.asarray(labels, jnp.float32),
                        jnp.asarray(queries.mask, bool), jnp.asarray(ideal_dcg, jnp.float32),
                        jnp.asarray(labels.shape[0], jnp.int32))


def stack_queries(parts: Sequence[ClickQueries]) -> ClickQueries:
    """Stacks query sets (e.g. the folds) on a new leading axis, padding ``Q`` and ``N`` with
    masked queries/documents; ``num_queries`` keeps each part's own count."""
    num_q = max(p.features.shape[0] for p in parts)
    num_n = max(p.features.shape[1] for p in parts)

    def pad(x, value=0):
        widths = [(0, num_q - x.shape[0])] + ([(0, num_n - x.shape[1])] + [(0, 0)] * (x.ndim - 2) if x.ndim > 1 else [])
        return jnp.pad(x, widths, constant_values=value)

    return ClickQueries(
        jnp.stack([pad(p.features) for p in parts]), jnp.stack([pad(p.labels) for p in parts]),
        jnp.stack([pad(p.mask, False) for p in parts]), jnp.stack([pad(p.ideal_dcg) for p in parts]),
        jnp.stack([p.num_queries for p in parts]))


def displayed_ndcg(ranked_labels: Array, shown: Array, ideal_dcg: Array) -> Array:
    """``[]`` NDCG of one displayed list: ``DCG(list) / ideal_dcg``, 0 when ``ideal_dcg = 0``."""
    gains = jnp.where(shown, _dcg_gains(ranked_labels), 0.0)
    dcg = jnp.sum(gains * _discounts(gains.shape[-1]))
    return jnp.where(ideal_dcg > 0, dcg / jnp.where(ideal_dcg > 0, ideal_dcg, 1.0), 0.0)


def impression(ranker: OnlineRanker, state, key, train: ClickQueries, click_model: CascadeModel):
    """One simulated impression: ``(state, NDCG of the displayed list)``."""
    key_query, key_rank, key_click = jax.random.split(key, 3)
    q = jax.random.randint(key_query, (), 0, train.num_queries)
    features, labels, where = train.features[q], train.labels[q], train.mask[q]
    docs, shown, aux = ranker.rank(state, key_rank, features, where)
    ranked_labels = jnp.where(shown, labels[jnp.maximum(docs, 0)], 0.0)
    clicks = cascade_clicks(key_click, ranked_labels, shown, click_model)
    state = ranker.update(state, features, where, docs, shown, clicks, aux)
    return state, displayed_ndcg(ranked_labels, shown, train.ideal_dcg[q])


def offline_ndcg(ranker: OnlineRanker, state, test: ClickQueries, *, topn: int = 10) -> Array:
    """``[]`` mean NDCG@topn of the current ranker over the test queries.

    Ties keep document order (``lax.top_k``); they only occur before the first update (``w = 0``).
    """
    scores = ranker.scores(state, test.features)
    return ndcg(scores, test.labels, where=test.mask, topn=topn)


def log_checkpoints(num_impressions: int, num_points: int = 16) -> tuple[int, ...]:
    """``0`` and about ``num_points`` log-spaced impression counts up to ``num_impressions``."""
    check_int("num_impressions", num_impressions, minimum=1)
    points = np.unique(np.round(np.logspace(0, np.log10(num_impressions), num_points)).astype(int))
    return (0,) + tuple(int(p) for p in points)


class SimulationResult(NamedTuple):
    offline: Array  # [C] f32, offline NDCG@10 at each checkpoint
    online: Array  # [C] f32, discounted cumulative NDCG of the displayed lists up to each checkpoint
    display: Array  # [C] f32, mean NDCG of the lists displayed since the previous checkpoint (0 at 0)
    weights: Array  # [D] f32, the final linear ranker


def simulate(ranker: OnlineRanker, key, train: ClickQueries, test: ClickQueries, click_model: CascadeModel, *,
             checkpoints: Sequence[int], discount=ONLINE_DISCOUNT, topn: int = 10) -> SimulationResult:
    """One run of the paper's protocol: ``checkpoints[-1]`` impressions from ``train``.

    Args:
      ranker: an ``OnlineRanker`` (``dbgd``, ``mgd``, ``pdgd``).
      key: the run's PRNG key (``key_init, key_steps = split(key)``).
      train: ``ClickQueries`` the impressions draw from.
      test: ``ClickQueries`` of the offline evaluation.
      click_model: ``CascadeModel`` of the simulated users.
      checkpoints: static increasing impression counts starting at 0 (``log_checkpoints``).
      discount: ``γ`` of the online measure.
      topn: cutoff of the offline NDCG.

    Returns:
      ``SimulationResult``; ``vmap`` for many runs, folds and click models.
    """
    checkpoints = tuple(int(c) for c in checkpoints)
    if not checkpoints or checkpoints[0] != 0 or any(b <= a for a, b in zip(checkpoints, checkpoints[1:])):
        raise ValueError(f"checkpoints must increase strictly from 0; got {checkpoints}.")
    check_number("discount", discount, low=0.0, high=1.0, low_inclusive=False, high_inclusive=True)
    key_init, key_steps = jax.random.split(key)
    state = ranker.init(key_init, train.features.shape[-1])
    discount = jnp.asarray(discount, jnp.float32)

    def stretch(carry, bounds):
        start, end = bounds

        def body(t, inner):
            state, total, factor, shown_sum = inner
            state, value = impression(ranker, state, jax.random.fold_in(key_steps, t), train, click_model)
            return state, total + factor * value, factor * discount, shown_sum + value

        state, total, factor = carry
        state, total, factor, shown_sum = jax.lax.fori_loop(start, end, body, (state, total, factor, 0.0))
        offline = offline_ndcg(ranker, state, test, topn=topn)
        mean = shown_sum / jnp.maximum(end - start, 1).astype(jnp.float32)
        return (state, total, factor), (offline, total, mean)

    bounds = (jnp.asarray(checkpoints[:-1], jnp.int32), jnp.asarray(checkpoints[1:], jnp.int32))
    zero = jnp.zeros((), jnp.float32)
    (state, _, _), (offline, online, display) = jax.lax.scan(stretch, (state, zero, jnp.ones((), jnp.float32)), bounds)
    first = offline_ndcg(ranker, state if len(checkpoints) == 1 else ranker.init(key_init, train.features.shape[-1]),
                         test, topn=topn)
    cat = lambda head, rest: jnp.concatenate([jnp.reshape(head, (1,)), rest])  # noqa: E731
    return SimulationResult(cat(first, offline), cat(zero, online), cat(zero, display), state.weights)


def simulate_grid(ranker: OnlineRanker, keys, train: ClickQueries, test: ClickQueries, click_models: CascadeModel, *,
                  checkpoints: Sequence[int], discount=ONLINE_DISCOUNT, topn: int = 10) -> SimulationResult:
    """``simulate`` for every (fold, click model, run) at once: results with leading axes ``[F, M, R]``.

    Args:
      keys: ``[F, M, R]`` PRNG keys, one per run.
      train: ``ClickQueries`` stacked over ``F`` folds (``stack_queries``).
      test: ``ClickQueries`` stacked over the same ``F`` folds.
      click_models: ``CascadeModel`` with ``[M, G]`` leaves.

    The folds are the outer ``vmap`` so each fold's queries are read in place (the offline
    evaluation is one batched matrix product per fold), not copied per run; ``jit`` the call.
    """
    run = functools.partial(simulate, ranker, checkpoints=checkpoints, discount=discount, topn=topn)
    over_runs = jax.vmap(run, in_axes=(0, None, None, None))
    over_models = jax.vmap(over_runs, in_axes=(0, None, None, 0))
    return jax.vmap(over_models, in_axes=(0, 0, 0, None))(keys, train, test, click_models)
