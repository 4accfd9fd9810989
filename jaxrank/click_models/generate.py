"""Simulated session logs: draw queries, show a ranking of each, and let a click model click. The one
session simulator of the package (``jaxrank.counterfactual.simulation`` draws its logs and click counts
through ``session_sampler``).

Session ``s`` uses ``key_query, key_rank, key_click, key_intervene = split(fold_in(key, s), 4)``
(``session_keys``), so it is the same whatever the number of sessions and however they are chunked;
all sessions are drawn at once under ``vmap``. A session

1. draws its query uniformly from the real queries;
2. shows the first ``K`` documents of a ranking: a fixed ``ranking [Q, R]`` of document indices, or
   the top ``K`` of a Plackett–Luce draw from ``softmax(scores [Q, L] / temperature)`` (stored order
   when no scores), the project's one sampler ``jaxrank.clicks.plackett_luce.plackett_luce_top_k``
   (``temperature = 0``: the deterministic ranking, ties broken by index, computed once for every
   query: ``key_rank`` is then not used);
3. optionally applies an ``intervention(key_intervene, docs [K], shown [K]) -> docs [K]`` (a static
   function, e.g. the swap of ``jaxrank.counterfactual.randomization``);
4. clicks with either a simulator of ``jaxrank.clicks`` on the shown documents' graded labels
   (``CascadeModel``, ``AffineClickModel``, or a ``FittedUser`` on the pair ids: ``jaxrank.clicks.user_clicks``)
   or a fitted model's ``sample`` (a ``ClickModel`` of ``jaxrank.click_models`` with its ``params``).

Ids: query ``q``'s document ``d`` (its index in the padded query) is pair ``q·L + d``; ``doc`` is ``d``
(0 where nothing is shown); ``num_pairs = Q·L``, ``num_queries = Q``.
"""

import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.click_models.base import ClickModel
from jaxrank.click_models.parametrization import pair_fields
from jaxrank.clicks.fitted import FittedUser, check_user, user_clicks
from jaxrank.clicks.models import AffineClickModel, CascadeModel
from jaxrank.clicks.plackett_luce import plackett_luce_top_k, top_k_list
from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog, check_session_log
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int, check_number


def session_keys(key: PRNGKey, session) -> tuple[PRNGKey, PRNGKey, PRNGKey, PRNGKey]:
    """``(key_query, key_rank, key_click, key_intervene)`` of session ``session``."""
    k = jax.random.split(jax.random.fold_in(key, session), 4)
    return k[0], k[1], k[2], k[3]


def fixed_lists(labels_mask: Array, num_positions: int, *, scores: Optional[Array] = None,
                ranking: Optional[Array] = None) -> tuple[Array, Array]:
    """``(docs [Q, K] i32, shown [Q, K] bool)``: every query's displayed list under a deterministic policy,
    the top ``K`` of ``scores [Q, L]`` (ties by the lower index) or the prefix of ``ranking [Q, R]``
    (``-1``: none); ``docs`` is 0 where nothing is shown."""
    if ranking is None:
        docs, shown = top_k_list(scores, labels_mask, num_positions)
    else:
        docs = jnp.pad(ranking, ((0, 0), (0, max(num_positions - ranking.shape[1], 0))),
                       constant_values=-1)[:, :num_positions]
        shown = (docs >= 0) & jnp.take_along_axis(labels_mask, jnp.clip(docs, 0, labels_mask.shape[1] - 1), axis=1)
    return jnp.where(shown, docs, 0), shown


def session_sampler(key: PRNGKey, labels: Array, labels_mask: Array, num_queries, *, simulator=None, model=None,
                    params=None, scores: Optional[Array] = None, temperature=0.0,
                    lists: Optional[tuple[Array, Array]] = None, num_positions: int = DEFAULT_POSITIONS,
                    intervention: Optional[Callable] = None) -> Callable:
    """``session(s) -> (query [] i32, docs [K] i32, shown [K] bool, clicks [K] bool)``: session ``s`` of the
    module docstring, a pure function to ``vmap`` over session indices (traceable arguments; ``model``,
    ``num_positions`` and ``intervention`` static).

    Args:
      key: the log's PRNG key.
      labels, labels_mask: ``[Q, L]`` true grades and real documents.
      num_queries: ``[]`` the first ``num_queries`` queries are drawn.
      simulator: a ``jaxrank.clicks`` simulator, or ``None`` with ``model``.
      model, params: a fitted ``ClickModel`` and its parameters.
      scores, temperature: the Plackett–Luce policy (ignored when ``lists`` is given).
      lists: ``fixed_lists`` of a deterministic policy.
      num_positions: ``K``.
      intervention: optional ``intervention(key, docs [K], shown [K]) -> docs [K]``.
    """
    num_docs = labels.shape[1]

    def session(s):
        key_query, key_rank, key_click, key_intervene = session_keys(key, s)
        q = jax.random.randint(key_query, (), 0, num_queries)
        if lists is None:
            docs, shown = plackett_luce_top_k(key_rank, scores[q], labels_mask[q], num_positions,
                                              temperature=temperature)
            docs = jnp.where(shown, docs, 0)
        else:
            docs, shown = lists[0][q], lists[1][q]
        if intervention is not None:
            docs = intervention(key_intervene, docs, shown)
        if model is not None:
            clicks = model.sample(key_click, params, jnp.where(shown, q * num_docs + docs, 0), shown)
        else:
            clicks = user_clicks(key_click, simulator, labels[q, docs], jnp.where(shown, q * num_docs + docs, 0), shown)
        return q, docs, shown, clicks & shown

    return session


@functools.partial(jax.jit, static_argnames=("num_sessions", "num_positions", "model", "intervention", "stochastic"))
def _generate(key, labels, labels_mask, num_queries, scores, ranking, temperature, simulator, params, *,
              num_sessions, num_positions, model, intervention, stochastic):
    lists = None if stochastic else fixed_lists(labels_mask, num_positions, scores=scores, ranking=ranking)
    session = session_sampler(key, labels, labels_mask, num_queries, simulator=simulator, model=model, params=params,
                              scores=scores, temperature=temperature, lists=lists, num_positions=num_positions,
                              intervention=intervention)
    query, doc, mask, clicks = jax.vmap(session)(jnp.arange(num_sessions))
    num_docs = labels.shape[1]
    pair = jnp.where(mask, query[:, None] * num_docs + doc, 0)
    return SessionLog(query.astype(jnp.int32), pair.astype(jnp.int32), doc.astype(jnp.int32), clicks, mask,
                      jnp.asarray(labels.shape[0] * num_docs, jnp.int32), jnp.asarray(labels.shape[0], jnp.int32))


def generate_logs(keys: Array, queries, num_sessions: int, click_model, *, scores: Optional[Array] = None,
                  **options) -> SessionLog:
    """``[N, S, K]`` logs, one per key, as one program: lane ``n`` holds the bytes of
    ``generate_sessions(keys[n], queries, num_sessions, click_model, scores=scores[n], **options)``
    (``scores`` ``[N, Q, L]`` one ranker per lane, or ``[Q, L]`` / ``None`` shared)."""
    per_lane = scores is not None and jnp.ndim(scores) == 3
    one = lambda key, s: generate_sessions(key, queries, num_sessions, click_model, scores=s, **options)  # noqa: E731
    return jax.vmap(one, in_axes=(0, 0 if per_lane else None))(keys, scores)


def check_simulator(simulator, num_positions: int, num_pairs: Optional[int] = None) -> None:
    """Raises ``ValueError`` unless ``simulator`` is a valid ``jaxrank.clicks`` user (``CascadeModel``,
    ``AffineClickModel`` covering ``num_positions`` ranks, or a ``FittedUser`` of ``num_pairs = Q·L``
    documents)."""
    check_user(simulator, num_pairs)
    if isinstance(simulator, AffineClickModel) and simulator.num_positions < num_positions:
        raise ValueError(f"the user model covers {simulator.num_positions} ranks but num_positions={num_positions}; "
                         f"build it for at least {num_positions}.")


def generate_sessions(key: PRNGKey, queries, num_sessions: int, click_model, *, params=None,
                      scores: Optional[Array] = None, ranking: Optional[Array] = None, temperature=0.0,
                      num_positions: int = DEFAULT_POSITIONS, intervention: Optional[Callable] = None) -> SessionLog:
    """``num_sessions`` simulated sessions (see this module's docstring).

    Args:
      key: PRNG key.
      queries: padded queries with ``labels [Q, L]`` and ``mask [Q, L]`` (``jaxrank.types.QueryBatch``
        or ``jaxrank.oltr.ClickQueries``, whose ``num_queries`` limits the drawn queries).
      num_sessions: ``S``.
      click_model: a ``jaxrank.clicks`` ``CascadeModel`` / ``AffineClickModel`` (clicks from the
        shown documents' labels) or a ``ClickModel`` of ``jaxrank.click_models`` (clicks from its
        ``sample`` with ``params``, whose pair tables need ``Q·L`` entries).
      params: the fitted model's parameters (only with a ``ClickModel``).
      scores: ``[Q, L]`` ranker scores (default: all equal, the stored order).
      ranking: ``[Q, R]`` i32 document indices in display order, ``-1`` for none (instead of scores).
      temperature: Plackett–Luce temperature of the noise added to ``scores`` (0: deterministic).
      num_positions: ``K``, positions shown per session.
      intervention: optional static ``intervention(key, docs [K], shown [K]) -> docs [K]``.

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
                raise ValueError(f"params.{field} has {size} pairs but the queries hold Q·L = {needed} "
                                 f"(pair q·L + d); "
                                 f"fit or init the model with num_pairs >= {needed}.")
    elif isinstance(click_model, (CascadeModel, AffineClickModel, FittedUser)):
        if params is not None:
            raise ValueError(f"{type(click_model).__name__} simulates from labels; params= is for a ClickModel.")
        check_simulator(click_model, num_positions, labels.shape[0] * labels.shape[1])
        model, simulator = None, click_model
    else:
        raise ValueError(f"click_model must be a jaxrank.clicks CascadeModel / AffineClickModel / FittedUser or "
                         f"a jaxrank.click_models ClickModel; got {type(click_model).__name__}.")
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
    stochastic = ranking is None and (isinstance(temperature, jax.core.Tracer) or float(temperature) > 0)
    log = _generate(key, labels, labels_mask, num_queries, scores, ranking, jnp.asarray(temperature, jnp.float32),
                    simulator, params, num_sessions=num_sessions, num_positions=num_positions, model=model,
                    intervention=intervention, stochastic=stochastic)
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
