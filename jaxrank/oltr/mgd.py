"""Multileave Gradient Descent (Schuth, Oosterhuis, Whiteson, de Rijke, WSDM 2016, Algorithm 1), linear or neural.

Per impression: draw ``n`` directions ``u_1..u_n`` uniformly on the unit sphere, build the
candidates ``w + δ u_j``, multileave the current ranker (ranker 0) with the ``n`` candidates
(rankers ``1..n``), infer from the clicks the set ``B`` of candidates that beat the current
ranker, and take the "mean winner" step ``w ← w + η (1/|B|) Σ_{j∈B} u_j`` (Algorithm 1, MGD-MW;
no step when ``B`` is empty). The defaults ``n = 49`` candidates, ``δ = 1``, ``η = 0.01`` and
probabilistic multileaving are those of the MGD baseline in Oosterhuis & de Rijke (CIKM 2018)
and the authors' code (github.com/HarrieO/OnlineLearningToRank ``algorithms/DBGD/pmgd.py``,
``tdmgd.py``, ``models/linearmodel.py`` ``update_to_mean_winners``). ``model="neural"`` (not in the
paper's tables) perturbs all the network's weights as DBGD's neural model does
(``models/evolutionneuralmodel.py``, which the authors' code builds with ``n_candidates``).

Multileaving (``jaxrank.clicks.multileave``):

* ``"team_draft"`` (Schuth et al., CIKM 2014): candidate ``j`` wins when its team got more
  clicks than ranker 0's. Only each ranker's top ``k`` matters (``top_ranks``, no sort).
* ``"probabilistic"`` (Schuth et al., SIGIR 2015, ``τ = 3``; needs every ranker's full ranking,
  one sort per ranker and impression, which dominates the cost on CPU): candidate ``j`` wins when the
  expected outcome ``P(c_j > c_0) − P(c_j < c_0)`` over the position assignments is > 0, computed
  exactly (``click_difference_law`` of candidate ``j`` against ranker 0) where the authors
  estimate it from 10,000 sampled assignments; ``outcome_samples=N`` draws that estimate instead
  (``jaxrank.clicks.lists.sampled_outcome``: each candidate's estimate has the law of the authors'
  one, though their ``N`` samples are shared by all candidates and ours are drawn per candidate).
  Under it a candidate that ties with ranker 0 joins ``B`` almost half the time.

Random draws of one impression: ``key_dir, key_list, key_outcome = jax.random.split(key, 3)``; the
directions from ``unit_vectors(key_dir, n, P)`` (``P`` model parameters, ``D`` for the linear model);
the multileaver consumes ``key_list``; ``outcome_samples`` draws from ``key_outcome`` (three
independent keys: ``fold_in(key, 1)`` would be ``key_list`` itself under partitionable Threefry).
"""

import functools

import jax
import jax.numpy as jnp

from jaxrank.clicks.interleave import score_ranks
from jaxrank.clicks.lists import click_difference_law, sampled_outcome
from jaxrank.clicks.multileave import (
    multileave_preferences,
    probabilistic_multileave_from_ranks,
    team_draft_multileave_credit,
    team_draft_multileave_from_ranks,
)
from jaxrank.oltr import scorers
from jaxrank.oltr.base import (MODEL_OPTIONS, TIE_TOLERANCE, CandidateState, check_features, check_list_size,
                               check_outcome_samples, init_candidates, params, perturbed, step_towards, top_ranks)
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Ranker, RankerInfo
from jaxrank.utils.checks import check_choice, check_int

MULTILEAVINGS = ("team_draft", "probabilistic")

HPARAMS = {
    # η of the mean-winner step: the MGD baseline of Oosterhuis & de Rijke (CIKM 2018, §6) and the
    # authors' code (github.com/HarrieO/OnlineLearningToRank algorithms/DBGD/pmgd.py, tdmgd.py).
    "learning_rate": 0.01,
    # δ, the candidates' distance from w (Schuth et al. 2016, Algorithm 1; 1 in the authors' code, same files).
    "delta": 1.0,
    # Factor applied to η after each update; 1 keeps η constant (models/linearmodel.py of the authors' code;
    # their scripts/CIKM2018.py runs 0.9999977, which the oltr experiment uses).
    "learning_rate_decay": 1.0,
    # τ of probabilistic multileaving's 1/rank^τ softmax (Schuth et al., SIGIR 2015; the authors' pmgd.py).
    "tau": 3.0,
}

OPTIONS = {
    "num_candidates": 49,  # n, candidates per impression (the PDGD paper's MGD baseline; the authors' pmgd.py)
    "multileaving": "probabilistic",  # "team_draft" or "probabilistic" (the PDGD paper's MGD baseline)
    "list_size": 10,  # k, the displayed list length (10 in the PDGD paper, §6)
    # 0: the exact probabilistic outcome; N: the authors' sampled estimate (10,000 in their pmgd.py,
    # through ProbabilisticMultileave.py).
    "outcome_samples": 0,
    **MODEL_OPTIONS,  # model ("linear" or "neural") and hidden_units
}

_LINEAR = scorers.make()


def init(key, num_features: int, *, scorer: scorers.Scorer = _LINEAR, **hparams) -> CandidateState:
    """``w = scorer.init(key, D)`` (zero for the linear model; ``make`` binds the scorer) with
    ``HPARAMS`` (overridden by ``hparams``) as f32 leaves.

    Raises:
      ValueError: for an unknown name, a static option, or a value out of range (when concrete).
    """
    hparams = hparams_with_defaults("ranker 'mgd'", HPARAMS, OPTIONS, hparams)
    return init_candidates(key, num_features, scorer, **hparams)


def rank(key, state: CandidateState, features, where, *, scorer: scorers.Scorer, num_candidates: int,
         multileaving: str, list_size: int):
    """Multileaves ``w`` (ranker 0) with the candidates ``w + δ u_j`` (rankers ``1..n``)."""
    check_features(features, where)
    where = jnp.asarray(where, bool)
    key_dir, key_list, key_outcome = jax.random.split(key, 3)
    directions, candidates = perturbed(key_dir, state, num_candidates)  # [n, P], leaves [n, ...]
    rankers = jax.tree.map(lambda w, c: jnp.concatenate([w[None], c]), state.w, candidates)
    scores = scorer.apply_stack(rankers, features)  # [n + 1, L]
    if multileaving == "team_draft":
        ranks = top_ranks(scores, where, list_size)
        docs, shown, credit = team_draft_multileave_from_ranks(key_list, ranks, where, list_size=list_size)
    else:
        ranks = jax.vmap(score_ranks, in_axes=(0, None))(scores, where)
        docs, shown, credit = probabilistic_multileave_from_ranks(key_list, ranks, where, list_size=list_size,
                                                                  tau=state.tau)
    return docs, shown, (directions, credit, key_outcome)


def update(state: CandidateState, features, where, docs, shown, clicks, aux, *, num_candidates: int,
           multileaving: str, outcome_samples: int):
    """The mean-winner step ``w ← w + η (1/|B|) Σ_{j∈B} u_j`` (none when ``B`` is empty)."""
    del features, where, docs
    directions, credit, key_outcome = aux
    if multileaving == "team_draft":
        beats_current = multileave_preferences(
            team_draft_multileave_credit(credit, clicks, shown, num_candidates + 1))[1:, 0] > 0
    else:
        credit = jnp.clip(credit, 0.0, 1.0)
        law = jax.vmap(click_difference_law, in_axes=(1, None, None))  # candidate j against ranker 0: one DP each
        win, loss = law(credit[:, 1:], credit[:, 0], clicks & shown)
        if outcome_samples:
            beats_current = sampled_outcome(key_outcome, win, loss, outcome_samples) > 0
        else:
            beats_current = win - loss > TIE_TOLERANCE
    num_winners = jnp.sum(beats_current)
    step = jnp.sum(jnp.where(beats_current[:, None], directions, 0.0), 0) / jnp.maximum(num_winners, 1)
    updated = num_winners > 0
    return step_towards(state, step, updated), RankerInfo(updated=updated)


def make(*, num_candidates: int = OPTIONS["num_candidates"], multileaving: str = OPTIONS["multileaving"],
         list_size: int = OPTIONS["list_size"], model: str = OPTIONS["model"],
         hidden_units: int = OPTIONS["hidden_units"], outcome_samples: int = OPTIONS["outcome_samples"]) -> Ranker:
    """MGD as a ``jaxrank.types.Ranker`` with the static options bound.

    Args:
      num_candidates: ``n >= 1``.
      multileaving: ``"team_draft"`` or ``"probabilistic"``.
      list_size: ``k``, the displayed list length.
      model: ``"linear"`` or ``"neural"`` (``jaxrank.oltr.scorers``).
      hidden_units: the neural model's hidden layer width (unused by the linear model).
      outcome_samples: ``0`` for the exact probabilistic outcome, ``N`` for the authors' estimate from
        ``N`` sampled assignments (probabilistic multileaving only).
    """
    check_int("num_candidates", num_candidates, minimum=1, fix="MGD needs at least one candidate (49 in the paper)")
    check_choice("multileaving", multileaving, MULTILEAVINGS)
    check_list_size(list_size)
    check_outcome_samples(outcome_samples, multileaving)
    scorer = scorers.make(model, hidden_units)
    static = dict(num_candidates=num_candidates, multileaving=multileaving)
    return Ranker(functools.partial(init, scorer=scorer), functools.partial(rank, scorer=scorer, list_size=list_size,
                                                                            **static),
                  functools.partial(update, outcome_samples=outcome_samples, **static), params, scorer.apply)
