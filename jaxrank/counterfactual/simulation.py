"""Logged clicks of the semi-synthetic protocol: sessions of a logging policy and a simulated user.

The sessions are those of the package's one session simulator, ``jaxrank.click_models.generate``
(``generate_sessions``, and its per-session ``session_sampler`` for the click counts): session ``s``
derives ``key_query, key_rank, key_click, key_intervene = split(fold_in(key, s), 4)``, so it is the
same whatever the number of sessions and however they are chunked. A session

1. draws its query uniformly from the ``Q`` queries (Joachims et al., WSDM 2017, §6: queries are
   sampled from the training set);
2. shows the logging policy's top ``K`` (``jaxrank.counterfactual.logging_policy.shown_documents``:
   the ranking by ``scores``, plus ``temperature`` · Gumbel noise for a stochastic policy);
3. optionally applies an ``intervention(key_intervene, docs [K], shown [K]) -> docs [K]`` (a static
   function, e.g. the swap of ``jaxrank.counterfactual.randomization``);
4. clicks with the user: a ``jaxrank.clicks.AffineClickModel`` (position-based or trust bias,
   ``jaxrank.counterfactual.user_models``) or a ``jaxrank.clicks.CascadeModel``, on the shown
   documents' true grades.

Two outputs:

* ``simulate_sessions``: a ``jaxrank.data.sessions.SessionLog`` (query ``q``'s document ``d`` is pair
  ``q·L + d``, ``doc = d``), for logs that fit in memory (``S·K`` entries);
* ``simulate_click_counts``: the ``ClickCounts`` (clicks and displays per query, document and rank)
  of the sessions up to each of several **click budgets** (the x-axis of Joachims et al.'s Figure:
  "number of training clicks"), accumulated chunk by chunk in a ``lax.while_loop``, so 10⁷ clicks need
  ``O(Q·L·K)`` memory, never a session array. Budget ``b`` keeps every session that starts before the
  ``b``-th click (so it ends with at least ``b`` clicks, at most one session's worth more).

A deterministic logger's sessions depend on its displayed lists only: ``shown_lists`` turns them
(e.g. ``logging_policy.ragged_shown_documents`` of a ragged collection) into ``[Q, K]`` queries whose
stored order is the display order, and ``simulate_click_counts`` on those draws the same sessions, bit
for bit, as on the full ``[Q, L]`` lists, in ``O(Q·K²)`` memory; ``position_clicks`` reads the clicks
per displayed rank off the counts.
"""

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.click_models.generate import check_simulator, fixed_lists, generate_sessions, session_sampler
from jaxrank.clicks.fitted import SimulatedUser
from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_choice, check_int, check_number

DEFAULT_CHUNK = 1 << 14  # sessions per step of simulate_click_counts
BUDGET_UNITS = ("clicks", "sessions")


class ClickCounts(NamedTuple):
    """Aggregated logged clicks (leading axes, e.g. ``[C]`` budgets or ``[S]`` seeds, in front)."""

    clicks: Array  # [..., Q, L, K] f32 clicks on document d of query q when shown at rank k
    displays: Array  # [..., Q, L, K] f32 times document d of query q was shown at rank k
    sessions: Array  # [..., Q] f32 sessions of query q
    num_clicks: Array  # [...] f32 clicks in all


class ShownLists(NamedTuple):
    """A deterministic logger's displayed lists as queries of the simulation (display order = stored order)."""

    labels: Array  # [Q, K] f32 true grade of the document shown at each rank, 0 where none
    mask: Array  # [Q, K] bool, a document is shown at the rank


def shown_lists(labels: Array, rows: Array, shown: Array) -> ShownLists:
    """``ShownLists`` of flat grades ``labels [N]`` at the shown ``rows [Q, K]`` (``shown [Q, K]``)."""
    return ShownLists(jnp.where(shown, jnp.asarray(labels, jnp.float32)[rows], 0.0), jnp.asarray(shown, bool))


def position_clicks(counts: "ClickCounts") -> Array:
    """``[..., Q, K]`` clicks at each displayed rank of counts simulated on ``ShownLists`` (their diagonal)."""
    return jnp.diagonal(counts.clicks, axis1=-2, axis2=-1)


def _check(queries, user, scores, temperature, num_positions):
    check_int("num_positions", num_positions, minimum=1)
    check_number("temperature", temperature, low=0.0, low_inclusive=True)
    labels, mask = jnp.asarray(queries.labels, jnp.float32), jnp.asarray(queries.mask, bool)
    if labels.ndim != 2 or labels.shape != mask.shape:
        raise ValueError(f"queries must hold labels and mask [Q, L]; got {labels.shape} and {mask.shape}.")
    check_simulator(user, num_positions, labels.size)
    scores = jnp.zeros(labels.shape, jnp.float32) if scores is None else jnp.asarray(scores, jnp.float32)
    if scores.shape != labels.shape:
        raise ValueError(f"scores must be [Q, L] = {labels.shape}; got {scores.shape}.")
    stochastic = isinstance(temperature, jax.core.Tracer) or float(temperature) > 0
    return labels, mask, scores, jnp.asarray(temperature, jnp.float32), stochastic


def simulate_sessions(key: PRNGKey, queries, num_sessions: int, user: SimulatedUser, *, scores: Optional[Array] = None,
                      temperature=0.0, num_positions: int = DEFAULT_POSITIONS,
                      intervention: Optional[Callable] = None) -> SessionLog:
    """``num_sessions`` logged sessions (this module's docstring): ``jaxrank.click_models.generate_sessions``
    with a simulated user.

    Args:
      key: PRNG key.
      queries: ``labels [Q, L]`` (true grades) and ``mask [Q, L]`` (a ``QueryBatch``).
      num_sessions: ``S``.
      user: ``jaxrank.clicks.AffineClickModel``, ``CascadeModel`` or ``FittedUser`` (document ``d`` of
        query ``q`` is id ``q·L + d``).
      scores: ``[Q, L]`` logging scores (default all equal: the stored order).
      temperature: Plackett–Luce temperature of the logging policy (0: deterministic).
      num_positions: ``K`` shown.
      intervention: optional static ``intervention(key, docs [K], shown [K]) -> docs [K]``.

    Returns:
      a ``SessionLog`` of device arrays (``num_pairs = Q·L``).
    """
    return generate_sessions(key, queries, num_sessions, user, scores=scores, temperature=temperature,
                             num_positions=num_positions, intervention=intervention)


def display_frequencies(counts: ClickCounts) -> Array:
    """``[..., Q, L, K]`` the logged share of each query's sessions showing ``d`` at rank ``k`` (0 for a
    query without sessions): the frequency estimate of the placement probabilities."""
    sessions = counts.sessions[..., :, None, None]
    return counts.displays / jnp.maximum(sessions, 1.0)


def click_rates(counts: ClickCounts) -> Array:
    """``[..., Q, L]`` clicks per session of each document, summed over the ranks it was shown at."""
    return jnp.sum(counts.clicks, axis=-1) / jnp.maximum(counts.sessions[..., :, None], 1.0)


def session_counts(log: SessionLog, num_queries: int, num_docs: int) -> ClickCounts:
    """The ``ClickCounts [Q, L, K]`` of a session log (its ``doc`` field is the document's index in its query)."""
    num_positions = log.mask.shape[-1]
    cells = num_queries * num_docs * num_positions
    index = (log.query[:, None] * num_docs + log.doc) * num_positions + jnp.arange(num_positions)
    index = jnp.where(log.mask, index, cells).ravel()  # out of range: dropped
    clicks = jnp.zeros(cells, jnp.float32).at[index].add(log.clicks.ravel().astype(jnp.float32), mode="drop")
    displays = jnp.zeros(cells, jnp.float32).at[index].add(1.0, mode="drop")
    sessions = jnp.zeros(num_queries, jnp.float32).at[log.query].add(1.0)
    shape = (num_queries, num_docs, num_positions)
    return ClickCounts(clicks.reshape(shape), displays.reshape(shape), sessions, jnp.sum(clicks))


@functools.partial(jax.jit, static_argnames=("num_positions", "chunk_size", "max_chunks", "stochastic", "by_sessions"))
def _click_counts(key, labels, mask, scores, temperature, user, budgets, *, num_positions, chunk_size, max_chunks,
                  stochastic, by_sessions=False):
    num_queries, num_docs = labels.shape
    lists = None if stochastic else fixed_lists(mask, num_positions, scores=scores)
    session = session_sampler(key, labels, mask, num_queries, simulator=user, scores=scores, temperature=temperature,
                              lists=lists, num_positions=num_positions)
    num_budgets = budgets.shape[0]
    cells = num_queries * num_docs * num_positions
    zeros = (jnp.zeros((num_budgets + 1) * cells, jnp.float32), jnp.zeros((num_budgets + 1) * cells, jnp.float32),
             jnp.zeros((num_budgets + 1) * num_queries, jnp.float32))

    def chunk(carry):
        c, total, (clicks_acc, displays_acc, sessions_acc) = carry
        s = c * chunk_size + jnp.arange(chunk_size)
        q, docs, shown, clicks = jax.vmap(session)(s)
        per_session = jnp.sum(clicks, axis=-1, dtype=jnp.int32)
        before = s if by_sessions else total + jnp.cumsum(per_session) - per_session
        # the budget interval each session falls in: budget b keeps the sessions starting before its b-th click
        interval = jnp.sum(before[:, None] >= budgets[None, :], axis=-1)  # [n] in 0..C (C: beyond every budget)
        base = interval * cells + (q * num_docs) * num_positions
        index = base[:, None] + docs * num_positions + jnp.arange(num_positions)
        index = jnp.where(shown, index, (num_budgets + 1) * cells).ravel()
        clicks_acc = clicks_acc.at[index].add(clicks.ravel().astype(jnp.float32), mode="drop")
        displays_acc = displays_acc.at[index].add(1.0, mode="drop")
        sessions_acc = sessions_acc.at[interval * num_queries + q].add(1.0)
        return c + 1, total + jnp.sum(per_session), (clicks_acc, displays_acc, sessions_acc)

    def more(carry):
        c, total, _ = carry
        done = c * chunk_size if by_sessions else total
        return (done < budgets[-1]) & (c < max_chunks)

    num_chunks, total, (clicks, displays, sessions) = jax.lax.while_loop(more, chunk, (0, jnp.int32(0), zeros))
    shape = (num_budgets + 1, num_queries, num_docs, num_positions)
    # per-interval sums -> per-budget totals; the last interval (beyond every budget) is dropped
    clicks, displays = (jnp.cumsum(x.reshape(shape), axis=0)[:num_budgets] for x in (clicks, displays))
    sessions = jnp.cumsum(sessions.reshape(num_budgets + 1, num_queries), axis=0)[:num_budgets]
    return ClickCounts(clicks, displays, sessions, jnp.sum(clicks, axis=(1, 2, 3))), num_chunks


def simulate_click_counts(key: PRNGKey, queries, user: SimulatedUser, click_budgets, *, scores: Optional[Array] = None,
                          temperature=0.0, num_positions: int = DEFAULT_POSITIONS, chunk_size: int = DEFAULT_CHUNK,
                          max_sessions: int = 1 << 30, budget_unit: str = "clicks") -> ClickCounts:
    """``ClickCounts`` with a leading ``[C]`` axis: the sessions up to each click budget (module docstring).

    The sessions are those of ``simulate_sessions`` with the same key (session ``s`` is the same), drawn
    ``chunk_size`` at a time until the largest budget is reached (or ``max_sessions``).

    Args:
      key: PRNG key.
      queries: ``labels [Q, L]``, ``mask [Q, L]``.
      user: ``AffineClickModel``, ``CascadeModel`` or ``FittedUser``.
      click_budgets: ``C`` increasing click counts (e.g. ``(10**2, 10**3, ..., 10**7)``).
      scores, temperature, num_positions: the logging policy (``simulate_sessions``).
      chunk_size: sessions per ``while_loop`` step (memory ``chunk_size · L``).
      max_sessions: stop after this many sessions even if the budget is not reached (a user who never
        clicks); the counts then hold fewer clicks than asked (``num_clicks`` says how many).
      budget_unit: ``"clicks"`` (Joachims et al.'s x-axis) or ``"sessions"`` (Oosterhuis, TOIS 2023's:
        budget ``b`` keeps the first ``b`` sessions).

    Returns:
      ``ClickCounts`` with leaves ``[C, Q, L, K]``, ``[C, Q]`` and ``[C]``, in float32: a count above
      ``2^24`` (about 1.7·10⁷) in one cell, or in total, is rounded to float32's precision.
    """
    check_int("chunk_size", chunk_size, minimum=1)
    budgets = np.asarray(click_budgets, np.int64)
    # the int32 click counter runs up to one chunk of sessions past the largest budget
    limit = 2**31 - 1 - chunk_size * num_positions
    if budgets.ndim != 1 or budgets.size == 0 or (budgets < 1).any() or (np.diff(budgets) <= 0).any() \
            or budgets[-1] > limit:
        raise ValueError(f"click_budgets must be increasing positive click counts of at most 2^31 - 1 - chunk_size·K "
                         f"= {limit}; got {click_budgets!r}.")
    check_int("max_sessions", max_sessions, minimum=1)
    check_choice("budget_unit", budget_unit, BUDGET_UNITS)
    labels, mask, scores, temperature, stochastic = _check(queries, user, scores, temperature, num_positions)
    counts, _ = _click_counts(key, labels, mask, scores, temperature, user, jnp.asarray(budgets, jnp.int32),
                              num_positions=num_positions, chunk_size=chunk_size,
                              max_chunks=max(1, -(-max_sessions // chunk_size)), stochastic=stochastic,
                              by_sessions=budget_unit == "sessions")
    return counts
