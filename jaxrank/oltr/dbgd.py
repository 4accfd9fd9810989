"""Dueling Bandit Gradient Descent (Yue & Joachims, ICML 2009, Algorithm 2) for a linear ranker.

Per impression: draw ``u`` uniformly on the unit sphere, build the candidate ``w' = w + δu``,
interleave the rankings of ``w`` (ranker 1) and ``w'`` (ranker 2) for the query, and if the clicks
prefer the candidate take the step ``w ← w + η u`` (Algorithm 2, lines 4–9, with exploration step
``δ`` and exploitation step ``γ``, written ``η`` here as in the online LTR literature). The
feasible-set projection ``P_W`` of the paper is omitted, as in the DBGD baselines of Schuth et al.
(WSDM 2016) and Oosterhuis & de Rijke (CIKM 2018) and the authors' code
(github.com/HarrieO/OnlineLearningToRank ``algorithms/DBGD/tddbgd.py``, ``pdbgd.py``), whose
defaults ``δ = 1``, ``η = 0.01`` are ours.

Interleaving: ``"team_draft"`` (Radlinski et al. 2008, as the two-ranker case of team-draft
multileaving, ``jaxrank.clicks.multileave``, whose rounds of two picks in random order are
Algorithm 1's coin flips; each ranker's top ``L`` from ``top_ranks``, no sort) or ``"probabilistic"``
(Hofmann et al. 2011, ``τ = 3``, ``jaxrank.clicks.interleave``; one sort per ranker). The candidate
wins when it gets more clicks (team draft) or the outcome is > 0 (probabilistic); a tie keeps ``w``.

Random draws of one impression: ``key_dir, key_list = jax.random.split(key)``; ``u`` from
``unit_vectors(key_dir, 1, D)``; the interleaver consumes ``key_list``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.clicks.interleave import probabilistic_interleave, probabilistic_outcome
from jaxrank.clicks.multileave import team_draft_multileave_credit, team_draft_multileave_from_ranks
from jaxrank.oltr.base import OnlineRanker, check_common, check_features, linear_scores, top_ranks, unit_vectors
from jaxrank.utils.checks import check_choice, check_number

INTERLEAVINGS = ("team_draft", "probabilistic")
_TIE_TOLERANCE = 1e-6


class DBGDState(NamedTuple):
    weights: jax.Array  # [D] f32, current ranker w
    learning_rate: jax.Array  # [] f32, η (decayed after every win)
    learning_rate_decay: jax.Array  # [] f32
    delta: jax.Array  # [] f32, exploration step δ
    tau: jax.Array  # [] f32, probabilistic-interleave softmax exponent
    t: jax.Array  # [] i32, impressions seen


def dbgd(learning_rate=0.01, delta=1.0, *, learning_rate_decay=1.0, interleaving: str = "probabilistic",
         tau=3.0, list_size: int = 10) -> OnlineRanker:
    """DBGD as an ``OnlineRanker`` (see ``jaxrank.oltr.base``).

    Args:
      learning_rate: ``η > 0``, the step towards a winning candidate.
      delta: ``δ > 0``, the candidate's distance from ``w``.
      learning_rate_decay: factor in ``(0, 1]`` applied to ``η`` after each win.
      interleaving: ``"team_draft"`` or ``"probabilistic"`` (static).
      tau: ``τ > 0`` of probabilistic interleaving.
      list_size: ``L`` (static), the displayed list length.
    """
    check_common(learning_rate, learning_rate_decay, list_size)
    check_number("delta", delta, low=0.0, fix="use a positive exploration step such as 1")
    check_number("tau", tau, low=0.0, fix="use a positive softmax exponent such as 3")
    check_choice("interleaving", interleaving, INTERLEAVINGS)

    def init(key, num_features: int) -> DBGDState:
        del key  # w starts at zero
        f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
        return DBGDState(jnp.zeros(num_features, jnp.float32), f32(learning_rate), f32(learning_rate_decay),
                         f32(delta), f32(tau), jnp.zeros((), jnp.int32))

    def rank(state: DBGDState, key, features, where):
        check_features(features, where)
        key_dir, key_list = jax.random.split(key)
        direction = unit_vectors(key_dir, 1, features.shape[-1])[0]
        current = linear_scores(state, features)
        candidate = features @ (state.weights + state.delta * direction)
        if interleaving == "team_draft":
            ranks = top_ranks(jnp.stack([current, candidate]), jnp.asarray(where, bool), list_size)
            docs, shown, credit = team_draft_multileave_from_ranks(key_list, ranks, where, list_size=list_size)
        else:
            docs, shown, credit = probabilistic_interleave(key_list, current, candidate, where, list_size=list_size,
                                                           tau=state.tau)
        return docs, shown, (direction, credit)

    def update(state: DBGDState, features, where, docs, shown, clicks, aux) -> DBGDState:
        del features, where, docs
        direction, credit = aux
        if interleaving == "team_draft":
            clicks_per_team = team_draft_multileave_credit(credit, clicks, shown, 2)
            outcome = clicks_per_team[1] - clicks_per_team[0]
        else:
            outcome = probabilistic_outcome(credit, clicks, shown)
        # An f32 DP can leave a tie (e.g. posteriors of exactly 1/2) at ±1e-8: still a tie.
        won = outcome > _TIE_TOLERANCE
        return state._replace(
            weights=state.weights + jnp.where(won, state.learning_rate, 0.0) * direction,
            learning_rate=jnp.where(won, state.learning_rate * state.learning_rate_decay, state.learning_rate),
            t=state.t + 1,
        )

    return OnlineRanker(init, rank, update, linear_scores)
