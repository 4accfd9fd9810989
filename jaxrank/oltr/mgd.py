"""Multileave Gradient Descent (Schuth, Oosterhuis, Whiteson, de Rijke, WSDM 2016, Algorithm 1) for a linear ranker.

Per impression: draw ``n`` directions ``u_1..u_n`` uniformly on the unit sphere, build the
candidates ``w + δ u_j``, multileave the current ranker (ranker 0) with the ``n`` candidates
(rankers ``1..n``), infer from the clicks the set ``B`` of candidates that beat the current
ranker, and take the "mean winner" step ``w ← w + η (1/|B|) Σ_{j∈B} u_j`` (Algorithm 1, MGD-MW;
no step when ``B`` is empty). The defaults ``n = 49`` candidates, ``δ = 1``, ``η = 0.01`` and
probabilistic multileaving are those of the MGD baseline in Oosterhuis & de Rijke (CIKM 2018)
and the authors' code (github.com/HarrieO/OnlineLearningToRank ``algorithms/DBGD/pmgd.py``,
``tdmgd.py``, ``models/linearmodel.py`` ``update_to_mean_winners``).

Multileaving (``jaxrank.clicks.multileave``):

* ``"team_draft"`` (Schuth et al., CIKM 2014): candidate ``j`` wins when its team got more
  clicks than ranker 0's. Only each ranker's top ``L`` matters (``top_ranks``, no sort).
* ``"probabilistic"`` (Schuth et al., SIGIR 2015, ``τ = 3``; needs every ranker's full ranking,
  one sort per ranker and impression, which dominates the cost on CPU): candidate ``j`` wins when the
  expected outcome ``P(c_j > c_0) − P(c_j < c_0)`` over the position assignments is > 0, computed
  exactly (``probabilistic_multileave_preferences`` for the pair ``(0, j)``) where the authors
  estimate it from 10,000 sampled assignments.

Random draws of one impression: ``key_dir, key_list = jax.random.split(key)``; the directions from
``unit_vectors(key_dir, n, D)``; the multileaver consumes ``key_list``.
"""

import jax
import jax.numpy as jnp

from jaxrank.clicks.interleave import score_ranks
from jaxrank.clicks.multileave import (
    multileave_preferences,
    probabilistic_multileave_from_ranks,
    probabilistic_multileave_preferences,
    team_draft_multileave_credit,
    team_draft_multileave_from_ranks,
)
from jaxrank.oltr.base import (TIE_TOLERANCE, CandidateState, OnlineRanker, check_candidates, check_features,
                               init_candidates, linear_scores, step_towards, top_ranks, unit_vectors)
from jaxrank.utils.checks import check_choice, check_int

MULTILEAVINGS = ("team_draft", "probabilistic")


def mgd(learning_rate=0.01, delta=1.0, *, num_candidates: int = 49, learning_rate_decay=1.0,
        multileaving: str = "probabilistic", tau=3.0, list_size: int = 10) -> OnlineRanker:
    """MGD as an ``OnlineRanker`` (see ``jaxrank.oltr.base``).

    Args:
      learning_rate: ``η > 0``.
      delta: ``δ > 0``, the candidates' distance from ``w``.
      num_candidates: ``n >= 1`` (static).
      learning_rate_decay: factor in ``(0, 1]`` applied to ``η`` after each update.
      multileaving: ``"team_draft"`` or ``"probabilistic"`` (static).
      tau: ``τ > 0`` of probabilistic multileaving.
      list_size: ``L`` (static).
    """
    check_candidates(learning_rate, delta, learning_rate_decay, tau, list_size)
    check_int("num_candidates", num_candidates, minimum=1, fix="MGD needs at least one candidate (49 in the paper)")
    check_choice("multileaving", multileaving, MULTILEAVINGS)

    def init(key, num_features: int) -> CandidateState:
        del key  # w starts at zero
        return init_candidates(num_features, learning_rate, delta, learning_rate_decay, tau)

    def rank(state: CandidateState, key, features, where):
        check_features(features, where)
        where = jnp.asarray(where, bool)
        key_dir, key_list = jax.random.split(key)
        directions = unit_vectors(key_dir, num_candidates, features.shape[-1])  # [n, D]
        rankers = jnp.concatenate([state.weights[None, :], state.weights[None, :] + state.delta * directions])
        scores = rankers @ jnp.asarray(features, jnp.float32).T  # [n + 1, N]
        if multileaving == "team_draft":
            ranks = top_ranks(scores, where, list_size)
            docs, shown, credit = team_draft_multileave_from_ranks(key_list, ranks, where, list_size=list_size)
        else:
            ranks = jax.vmap(score_ranks, in_axes=(0, None))(scores, where)
            docs, shown, credit = probabilistic_multileave_from_ranks(key_list, ranks, where, list_size=list_size,
                                                                      tau=state.tau)
        return docs, shown, (directions, credit)

    def update(state: CandidateState, features, where, docs, shown, clicks, aux) -> CandidateState:
        del features, where, docs
        directions, credit = aux
        if multileaving == "team_draft":
            beats_current = multileave_preferences(
                team_draft_multileave_credit(credit, clicks, shown, num_candidates + 1))[1:, 0] > 0
        else:
            def versus_current(column):  # [L, 2] posteriors of (ranker 0, candidate j)
                return probabilistic_multileave_preferences(column, clicks, shown)[1, 0]

            pairs = jnp.stack([jnp.broadcast_to(credit[:, :1], credit[:, 1:].shape), credit[:, 1:]], -1)  # [L, n, 2]
            beats_current = jax.vmap(versus_current, in_axes=1)(pairs) > TIE_TOLERANCE
        num_winners = jnp.sum(beats_current)
        step = jnp.sum(jnp.where(beats_current[:, None], directions, 0.0), 0) / jnp.maximum(num_winners, 1)
        return step_towards(state, step, num_winners > 0)

    return OnlineRanker(init, rank, update, linear_scores)
