"""Dueling Bandit Gradient Descent (Yue & Joachims, ICML 2009, Algorithm 2), linear or neural.

Per impression: draw ``u`` uniformly on the unit sphere, build the candidate ``w' = w + δu``,
interleave the rankings of ``w`` (ranker 1) and ``w'`` (ranker 2) for the query, and if the clicks
prefer the candidate take the step ``w ← w + η u`` (Algorithm 2, lines 4–9, with exploration step
``δ`` and exploitation step ``γ``, written ``η`` here as in the online LTR literature). The
feasible-set projection ``P_W`` of the paper is omitted, as in the DBGD baselines of Schuth et al.
(WSDM 2016) and Oosterhuis & de Rijke (CIKM 2018) and the authors' code
(github.com/HarrieO/OnlineLearningToRank ``algorithms/DBGD/tddbgd.py``, ``pdbgd.py``), whose
defaults ``δ = 1``, ``η = 0.01`` are ``HPARAMS``.

Model (``jaxrank.oltr.scorers``): ``model="neural"`` is the paper's DBGD (neural) (Oosterhuis & de
Rijke 2018, §4.3: one layer of 64 sigmoid units, "same parameters" as the linear DBGD, so the same
``HPARAMS``); ``w`` is then the network's weights and ``u`` one unit vector over all of them
(hidden weights, hidden biases and output weights concatenated), the authors' ``Neural_P_DBGD``
(``algorithms/DBGD/neural/pdbgd.py``) with ``models/evolutionneuralmodel.py`` ``sample_candidates``
and ``update_to_mean_winners`` (whose step towards the winning candidate is ``η u``).

Interleaving: ``"team_draft"`` (Radlinski et al. 2008, as the two-ranker case of team-draft
multileaving, ``jaxrank.clicks.multileave``, whose rounds of two picks in random order are
Algorithm 1's coin flips; each ranker's top ``k`` from ``top_ranks``, no sort) or ``"probabilistic"``
(Hofmann et al. 2011, ``τ = 3``, ``jaxrank.clicks.interleave``; one sort per ranker). The candidate
wins when it gets more clicks (team draft) or the outcome is > 0 (probabilistic); a tie keeps ``w``.
The probabilistic outcome is exact (``click_difference_law``); ``outcome_samples=N`` replaces it by
the authors' estimate from ``N`` sampled assignments (``PM_n_samples = 10000`` in their ``pdbgd.py``),
under which an exact tie is a win almost half the time (``jaxrank.clicks.lists.sampled_outcome``).

Random draws of one impression: ``key_dir, key_list, key_outcome = jax.random.split(key, 3)``;
``u`` from ``unit_vectors(key_dir, 1, P)`` (``P`` model parameters, ``D`` for the linear model); the
interleaver consumes ``key_list``; ``outcome_samples`` draws from ``key_outcome`` (three independent
keys: ``fold_in(key, 1)`` would be ``key_list`` itself under partitionable Threefry). The neural
model's initial weights come from ``init``'s key (``scorers.neural_init``).
"""

import functools

import jax
import jax.numpy as jnp

from jaxrank.clicks.interleave import probabilistic_interleave, probabilistic_outcome
from jaxrank.clicks.lists import click_difference_law, sampled_outcome
from jaxrank.clicks.multileave import team_draft_multileave_credit, team_draft_multileave_from_ranks
from jaxrank.oltr import scorers
from jaxrank.oltr.base import (MODEL_OPTIONS, TIE_TOLERANCE, CandidateState, check_features, check_list_size,
                               check_outcome_samples, init_candidates, params, perturbed, step_towards, top_ranks)
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Ranker, RankerInfo
from jaxrank.utils.checks import check_choice

INTERLEAVINGS = ("team_draft", "probabilistic")

HPARAMS = {
    # η, the step towards a winning candidate: the authors' DBGD default
    # (github.com/HarrieO/OnlineLearningToRank algorithms/DBGD/tddbgd.py, pdbgd.py).
    "learning_rate": 0.01,
    # δ, the candidate's distance from w (Yue & Joachims 2009, Algorithm 2; 1 in the authors' code, same files).
    "delta": 1.0,
    # Factor applied to η after each win; 1 keeps η constant (models/linearmodel.py of the authors' code;
    # their scripts/CIKM2018.py runs 0.9999977, which the oltr experiment uses).
    "learning_rate_decay": 1.0,
    # τ of probabilistic interleaving's 1/rank^τ softmax (Hofmann et al., CIKM 2011; the authors' pdbgd.py).
    "tau": 3.0,
}

OPTIONS = {
    "interleaving": "probabilistic",  # "team_draft" or "probabilistic" (the PDGD paper's DBGD baseline, §6)
    "list_size": 10,  # k, the displayed list length (10 in the PDGD paper, §6)
    # 0: the exact probabilistic outcome; N: the authors' sampled estimate (10,000 in their pdbgd.py).
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
    hparams = hparams_with_defaults("ranker 'dbgd'", HPARAMS, OPTIONS, hparams)
    return init_candidates(key, num_features, scorer, **hparams)


def rank(key, state: CandidateState, features, where, *, scorer: scorers.Scorer, interleaving: str, list_size: int):
    """Interleaves ``w`` (ranker 1) with the candidate ``w + δu`` (ranker 2): ``(docs [k], shown [k], aux)``."""
    check_features(features, where)
    key_dir, key_list, key_outcome = jax.random.split(key, 3)
    directions, candidates = perturbed(key_dir, state, 1)
    direction = directions[0]  # [P]
    current = scorer.apply(state.w, features)
    candidate = scorer.apply(jax.tree.map(lambda c: c[0], candidates), features)
    if interleaving == "team_draft":
        ranks = top_ranks(jnp.stack([current, candidate]), jnp.asarray(where, bool), list_size)
        docs, shown, credit = team_draft_multileave_from_ranks(key_list, ranks, where, list_size=list_size)
    else:
        docs, shown, credit = probabilistic_interleave(key_list, current, candidate, where, list_size=list_size,
                                                       tau=state.tau)
    return docs, shown, (direction, credit, key_outcome)


def update(state: CandidateState, features, where, docs, shown, clicks, aux, *, interleaving: str,
           outcome_samples: int):
    """``w ← w + η u`` when the clicks prefer the candidate: ``(state, RankerInfo)``."""
    del features, where, docs
    direction, credit, key_outcome = aux
    tolerance = 0.0  # counts (team-draft) and sampled estimates are exact multiples: any margin wins
    if interleaving == "team_draft":
        clicks_per_team = team_draft_multileave_credit(credit, clicks, shown, 2)
        outcome = clicks_per_team[1] - clicks_per_team[0]
    elif outcome_samples:
        credit = jnp.clip(credit, 0.0, 1.0)
        win, loss = click_difference_law(credit, 1.0 - credit, clicks & shown)
        outcome = sampled_outcome(key_outcome, win, loss, outcome_samples)
    else:
        outcome, tolerance = probabilistic_outcome(credit, clicks, shown), TIE_TOLERANCE
    won = outcome > tolerance
    return step_towards(state, direction, won), RankerInfo(updated=won)


def make(*, interleaving: str = OPTIONS["interleaving"], list_size: int = OPTIONS["list_size"],
         model: str = OPTIONS["model"], hidden_units: int = OPTIONS["hidden_units"],
         outcome_samples: int = OPTIONS["outcome_samples"]) -> Ranker:
    """DBGD as a ``jaxrank.types.Ranker`` with the static options bound.

    Args:
      interleaving: ``"team_draft"`` or ``"probabilistic"``.
      list_size: ``k``, the displayed list length.
      model: ``"linear"`` or ``"neural"`` (``jaxrank.oltr.scorers``).
      hidden_units: the neural model's hidden layer width (unused by the linear model).
      outcome_samples: ``0`` for the exact probabilistic outcome, ``N`` for the authors' estimate from
        ``N`` sampled assignments (probabilistic interleaving only).
    """
    check_choice("interleaving", interleaving, INTERLEAVINGS)
    check_list_size(list_size)
    check_outcome_samples(outcome_samples, interleaving)
    scorer = scorers.make(model, hidden_units)
    return Ranker(functools.partial(init, scorer=scorer),
                  functools.partial(rank, scorer=scorer, interleaving=interleaving, list_size=list_size),
                  functools.partial(update, interleaving=interleaving, outcome_samples=outcome_samples), params,
                  scorer.apply)
