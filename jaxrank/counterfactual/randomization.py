"""Propensities from randomised swap interventions (Joachims, Swaminathan & Schnabel, WSDM 2017, §6;
Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, "RandPair" with the pivot at rank 1).

Each session draws a rank ``r`` uniformly from ``0..K-1`` and swaps the documents at ranks 0 and ``r``
of the logging policy's list (``r = 0``, or ``r`` beyond the shown list, leaves it unchanged). Under
the position-based model the document the logger puts first, ``d_1``, is then clicked at rank ``r``
with ``θ_r γ(d_1)``, and in the unchanged (control) sessions at rank 0 with ``θ_0 γ(d_1)``; the
assignment is random, so both groups see the same distribution of ``d_1`` and

    p_r / p_1 = θ_r / θ_0 = [clicks at r in swap-r sessions / swap-r sessions]
                            / [clicks at 0 in control sessions / control sessions],

both groups restricted to the sessions whose list reaches rank ``r`` (a short list cannot be
swapped, so the control side must exclude it too, or the two groups see different queries).

``swap_intervention`` is the ``intervention`` of ``jaxrank.counterfactual.simulation.simulate_sessions``;
``swap_ranks`` recomputes each session's ``r`` from the same keys; ``swap_propensities`` takes
optional per-session weights (``jaxrank.counterfactual.bootstrap`` resamples with them).
"""

from typing import Optional

import jax
import jax.numpy as jnp

from jaxrank.click_models.generate import session_keys
from jaxrank.counterfactual.simulation import simulate_sessions
from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog
from jaxrank.types import Array, PRNGKey


def swap_rank(key: PRNGKey, num_positions: int) -> Array:
    """``[]`` i32 the rank swapped with rank 0, uniform in ``0..K-1``."""
    return jax.random.randint(key, (), 0, num_positions)


def swap_intervention(key: PRNGKey, docs: Array, shown: Array) -> Array:
    """``[K]`` the list with ranks 0 and ``r = swap_rank(key, K)`` swapped (unchanged when ``r`` is not shown)."""
    r = swap_rank(key, docs.shape[-1])
    r = jnp.where(shown[r], r, 0)
    return docs.at[0].set(docs[r]).at[r].set(docs[0])


def swap_ranks(key: PRNGKey, num_sessions: int, num_positions: int) -> Array:
    """``[S]`` i32 the ``r`` each session of a log simulated with ``key`` drew (``session_keys``' 4th key)."""
    return jax.vmap(lambda s: swap_rank(session_keys(key, s)[3], num_positions))(jnp.arange(num_sessions))


def swap_sessions(key: PRNGKey, queries, num_sessions: int, user, *, scores: Optional[Array] = None,
                  num_positions: int = DEFAULT_POSITIONS) -> tuple[SessionLog, Array]:
    """``(log, swap_rank [S])``: sessions of the deterministic logging policy with swap interventions."""
    log = simulate_sessions(key, queries, num_sessions, user, scores=scores, num_positions=num_positions,
                            intervention=swap_intervention)
    return log, swap_ranks(key, num_sessions, num_positions)


def swap_propensities(log: SessionLog, swap_rank: Array, session_weights: Optional[Array] = None) -> Array:
    """``[K]`` ``p_r / p_1`` (this module's docstring); ``p_1 = 1``, NaN for a rank without data.

    Args:
      log: the sessions (``swap_sessions``).
      swap_rank: ``[S]`` each session's ``r``.
      session_weights: ``[S]`` optional weights (bootstrap resampling counts).
    """
    num_positions = log.mask.shape[-1]
    weight = jnp.ones(log.mask.shape[0], jnp.float32) if session_weights is None else session_weights
    ranks = jnp.arange(num_positions)
    reaches = log.mask  # [S, K]: the list reaches rank r
    clicks = log.clicks.astype(jnp.float32)
    swapped = (swap_rank[:, None] == ranks) & reaches  # [S, K]
    control = (swap_rank == 0)[:, None] & reaches
    treated_rate = jnp.sum(weight[:, None] * swapped * clicks, 0) / jnp.sum(weight[:, None] * swapped, 0)
    control_rate = jnp.sum(weight[:, None] * control * clicks[:, :1], 0) / jnp.sum(weight[:, None] * control, 0)
    return (treated_rate / control_rate).at[0].set(1.0)
