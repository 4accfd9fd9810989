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

import jax
import jax.numpy as jnp

from jaxrank.clicks.interleave import probabilistic_interleave, probabilistic_outcome
from jaxrank.clicks.multileave import team_draft_multileave_credit, team_draft_multileave_from_ranks
from jaxrank.oltr.base import (TIE_TOLERANCE, CandidateState, OnlineRanker, check_candidates, check_features,
                               init_candidates, linear_scores, step_towards, top_ranks, unit_vectors)
from jaxrank.utils.checks import check_choice

INTERLEAVINGS = ("team_draft", "probabilistic")


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
    check_candidates(learning_rate, delta, learning_rate_decay, tau, list_size)
    check_choice("interleaving", interleaving, INTERLEAVINGS)

    def init(key, num_features: int) -> CandidateState:
        del key  # w starts at zero
        return init_candidates(num_features, learning_rate, delta, learning_rate_decay, tau)

    def rank(state: CandidateState, key, features, where):
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

    def update(state: CandidateState, features, where, docs, shown, clicks, aux) -> CandidateState:
        del features, where, docs
        direction, credit = aux
        if interleaving == "team_draft":
            clicks_per_team = team_draft_multileave_credit(credit, clicks, shown, 2)
            outcome = clicks_per_team[1] - clicks_per_team[0]
        else:
            outcome = probabilistic_outcome(credit, clicks, shown)
        return step_towards(state, direction, outcome > TIE_TOLERANCE)

    return OnlineRanker(init, rank, update, linear_scores)
