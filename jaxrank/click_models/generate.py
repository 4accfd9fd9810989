"""Simulated session logs: draw queries, show a ranking of each, and let a click model click.

Session ``s`` uses ``key_query, key_rank, key_click = split(fold_in(key, s), 3)``, so it is the same
whatever the number of sessions; all sessions are drawn at once under ``vmap``. A session

1. draws its query uniformly from the real queries;
2. shows the first ``K`` documents of a ranking: a fixed ``ranking [Q, R]`` of document indices, or
   the top ``K`` of a Plackett–Luce draw from ``softmax(scores [Q, L] / temperature)`` (stored order
   when no scores), the project's one sampler ``jaxrank.clicks.plackett_luce.plackett_luce_top_k``
   (``temperature = 0``: the deterministic ranking, ties broken by index);
3. clicks with either a simulator of ``jaxrank.clicks`` on the shown documents' graded labels
   (``CascadeModel``, ``PositionBasedModel``) or a fitted model's ``sample`` (a ``ClickModel`` of
   ``jaxrank.click_models`` with its ``params``).

Ids: query ``q``'s document ``d`` (its index in the padded query) is pair ``q·L + d``; ``doc`` is ``d``;
``num_pairs = Q·L``, ``num_queries = Q``.
"""

import functools
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.click_models.base import ClickModel
from jaxrank.click_models.parametrization import pair_fields
from jaxrank.clicks.models import CascadeModel, PositionBasedModel, cascade_clicks, position_based_clicks
from jaxrank.clicks.plackett_luce import plackett_luce_top_k
from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog, check_session_log
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int, check_number


def _shown(key_rank, q, labels_mask, scores, ranking, temperature, num_positions):
    """``(docs [K] i32, shown [K] bool)`` of query ``q``'s displayed list."""
    mask = labels_mask[q]
    num_docs = mask.shape[0]
    if ranking is not None:
        docs = ranking[q]
        docs = jnp.pad(docs, (0, max(num_positions - docs.shape[0], 0)), constant_values=-1)[:num_positions]
        shown = (docs >= 0) & mask[jnp.clip(docs, 0, num_docs - 1)]
    else:
        docs, shown = plackett_luce_top_k(key_rank, scores[q], mask, num_positions, temperature=temperature)
    return jnp.where(shown, docs, 0), shown


@functools.partial(jax.jit, static_argnames=("num_sessions", "num_positions", "model"))
def _generate(key, labels, labels_mask, num_queries, scores, ranking, temperature, simulator, params, *,
              num_sessions, num_positions, model):
    num_docs = labels.shape[1]

    def session(s):
        key_query, key_rank, key_click = jax.random.split(jax.random.fold_in(key, s), 3)
        q = jax.random.randint(key_query, (), 0, num_queries)
        docs, shown = _shown(key_rank, q, labels_mask, scores, ranking, temperature, num_positions)
        pairs = jnp.where(shown, q * num_docs + docs, 0)
        if model is not None:
            clicks = model.sample(key_click, params, pairs, shown)
        elif isinstance(simulator, CascadeModel):
            clicks = cascade_clicks(key_click, labels[q, docs], shown, simulator)
        else:
            clicks = position_based_clicks(key_click, labels[q, docs], shown, simulator)
        return q, pairs, docs, clicks & shown, shown

    query, pair, doc, clicks, mask = jax.vmap(session)(jnp.arange(num_sessions))
    return SessionLog(query.astype(jnp.int32), pair.astype(jnp.int32), doc.astype(jnp.int32), clicks, mask,
                      jnp.asarray(labels.shape[0] * num_docs, jnp.int32), jnp.asarray(labels.shape[0], jnp.int32))


def generate_sessions(key: PRNGKey, queries, num_sessions: int, click_model, *, params=None,
                      scores: Optional[Array] = None, ranking: Optional[Array] = None, temperature=0.0,
                      num_positions: int = DEFAULT_POSITIONS) -> SessionLog:
    """``num_sessions`` simulated sessions (see this module's docstring).

    Args:
      key: PRNG key.
      queries: padded queries with ``labels [Q, L]`` and ``mask [Q, L]`` (``jaxrank.types.QueryBatch``
        or ``jaxrank.oltr.ClickQueries``, whose ``num_queries`` limits the drawn queries).
      num_sessions: ``S``.
      click_model: a ``jaxrank.clicks`` ``CascadeModel`` / ``PositionBasedModel`` (clicks from the
        shown documents' labels) or a ``ClickModel`` of ``jaxrank.click_models`` (clicks from its
        ``sample`` with ``params``, whose pair tables need ``Q·L`` entries).
      params: the fitted model's parameters (only with a ``ClickModel``).
      scores: ``[Q, L]`` ranker scores (default: all equal, the stored order).
      ranking: ``[Q, R]`` i32 document indices in display order, ``-1`` for none (instead of scores).
      temperature: Plackett–Luce temperature of the noise added to ``scores``.
      num_positions: ``K``, positions shown per session.

    Returns:
      a ``SessionLog`` of device arrays.

    Raises:
      ValueError: for a bad size, shapes that do not match ``queries``, a ranking whose shown
        documents are not a prefix, a click model without (or with stray) ``params``, or pair tables
        smaller than ``Q·L``.
    """
    check_int("num_sessions", num_sessions, minimum=1)
    check_int("num_positions", num_positions, minimum=1)
    check_number("temperature", temperature, low=0.0, low_inclusive=True)
    labels, labels_mask = jnp.asarray(queries.labels, jnp.float32), jnp.asarray(queries.mask, bool)
    if labels.ndim != 2 or labels.shape != labels_mask.shape:
        raise ValueError(f"queries must hold labels and mask [Q, L] (one fold); got {labels.shape} and "
                         f"{labels_mask.shape}.")
    num_queries = getattr(queries, "num_queries", labels.shape[0])
    num_queries = jnp.asarray(num_queries, jnp.int32)
    if isinstance(click_model, ClickModel):
        if params is None:
            raise ValueError(f"click model {click_model.name!r} samples from fitted parameters; pass params=.")
        model, simulator = click_model, None
        needed = labels.shape[0] * labels.shape[1]
        for field in pair_fields(model):
            size = jnp.shape(getattr(params, field))[0]
            if size < needed:
                raise ValueError(f"params.{field} has {size} pairs but the queries hold Q·L = {needed} (pair q·L + d); "
                                 f"fit or init the model with num_pairs >= {needed}.")
    elif isinstance(click_model, (CascadeModel, PositionBasedModel)):
        if params is not None:
            raise ValueError(f"{type(click_model).__name__} simulates from labels; params= is for a ClickModel.")
        model, simulator = None, click_model
    else:
        raise ValueError(f"click_model must be a jaxrank.clicks CascadeModel / PositionBasedModel or a "
                         f"jaxrank.click_models ClickModel; got {type(click_model).__name__}.")
    if ranking is not None:
        if scores is not None:
            raise ValueError("pass scores= or ranking=, not both.")
        ranking = jnp.asarray(ranking, jnp.int32)
        if ranking.ndim != 2 or ranking.shape[0] != labels.shape[0]:
            raise ValueError(f"ranking must be [Q, R] with Q = {labels.shape[0]}; got {ranking.shape}.")
        real = int(num_queries)
        _check_ranking(np.asarray(ranking)[:real], np.asarray(labels_mask)[:real], num_positions)
        scores = jnp.zeros(labels.shape, jnp.float32)
    else:
        scores = jnp.zeros(labels.shape, jnp.float32) if scores is None else jnp.asarray(scores, jnp.float32)
        if scores.shape != labels.shape:
            raise ValueError(f"scores must be [Q, L] = {labels.shape}; got {scores.shape}.")
    log = _generate(key, labels, labels_mask, num_queries, scores, ranking, jnp.asarray(temperature, jnp.float32),
                    simulator, params, num_sessions=num_sessions, num_positions=num_positions, model=model)
    check_session_log(log)
    return log


def _check_ranking(ranking: np.ndarray, mask: np.ndarray, num_positions: int) -> None:
    docs = ranking[:, :num_positions]
    if docs.size and (docs.min() < -1 or docs.max() >= mask.shape[1]):
        raise ValueError(f"ranking entries must be document indices in [0, {mask.shape[1]}) or -1.")
    shown = (docs >= 0) & np.take_along_axis(mask, np.clip(docs, 0, None), axis=1)
    lengths = shown.sum(1)
    bad = np.flatnonzero(~(shown == (np.arange(docs.shape[1]) < lengths[:, None])).all(1) | (lengths == 0))
    if bad.size:
        raise ValueError(f"ranking of query {int(bad[0])} shows {shown[bad[0]].astype(int).tolist()}: the shown real "
                         "documents must come first and be at least one.")
