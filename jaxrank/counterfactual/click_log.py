"""Logged click counts turned into the per-document statistics every learner reads (``ClickLog``).

For a user affine in relevance (``user_models.AffineClickModel``: ``P(C = 1) = α_k R + β_k``) and
the counts of a query's sessions (``simulation.ClickCounts``: clicks and displays per document and
rank), each document ``d`` gets

* ``c̄_d = Σ_k clicks_dk / n_q``, its clicks per session of the query;
* ``ᾱ_d = Σ_k displays_dk α_k / n_q`` and ``β̄_d`` likewise: the treatment it actually received,
  averaged over the sessions;
* ``ρ_d = Σ_k displays_dk α̃_k / n_q`` with ``α̃`` the propensities the learner is given (the true
  ``α``, or estimates): the frequency estimate of the expected treatment ``E_π[α_{k(d)}]``, as
  HarrieO/2022-doubly-robust-LTR computes it (``utils/estimators.py`` ``update_statistics`` with
  ``frequency_estimate=True``). For a deterministic logger it is ``α̃`` at ``d``'s rank.

With ``ρ = ᾱ`` (true propensities) and no clipping the doubly robust estimate equals IPS: the two
differ through ``τ`` and the documents a query's sessions never showed (Oosterhuis, TOIS 2023, §5).
"""

import jax.numpy as jnp

from jaxrank.counterfactual.learners.base import ClickLog
from jaxrank.types import Array


def click_log(clicks: Array, displays: Array, sessions: Array, features: Array, where: Array, alpha: Array,
              beta: Array, relevance: Array, *, propensities=None, regression=None) -> ClickLog:
    """The ``ClickLog`` of one set of counts.

    Args:
      clicks, displays: ``[Q, L, K]`` per document and rank.
      sessions: ``[Q]`` sessions per query.
      features: ``[Q, L, D]``.
      where: ``[Q, L]`` the candidates.
      alpha, beta: ``[K]`` the user's true ``α``, ``β`` per rank.
      relevance: ``[Q, L]`` true ``P(relevant | d)``.
      propensities: ``[K]`` the ``α̃`` given to the learners (default ``alpha``).
      regression: ``[Q, L]`` a direct-method estimate (default 0).
    """
    per_session = 1.0 / jnp.maximum(sessions, 1.0)[:, None]
    alpha = jnp.asarray(alpha, jnp.float32)
    given = alpha if propensities is None else jnp.asarray(propensities, jnp.float32)
    ctr = jnp.sum(clicks, axis=-1) * per_session
    mean_alpha = displays @ alpha * per_session
    mean_beta = displays @ jnp.asarray(beta, jnp.float32) * per_session
    rho = displays @ given * per_session
    total = jnp.maximum(jnp.sum(sessions), 1.0)
    regression = jnp.zeros_like(ctr) if regression is None else regression
    mask = lambda x: jnp.where(where, x, 0.0)  # noqa: E731
    return ClickLog(features, where, mask(ctr), mask(mean_alpha), mask(mean_beta), mask(rho), mask(regression),
                    mask(relevance), sessions / total)
