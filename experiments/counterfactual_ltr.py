"""Counterfactual learning to rank from logged clicks: test NDCG@10 against the number of logged clicks,
as in Joachims, Swaminathan & Schnabel (WSDM 2017, §6, the semi-synthetic experiments' curves).

Protocol (``jaxrank.counterfactual``): a logging ranker (RankSVM on ``logging_fraction`` = 1% of the
training queries) shows its top ``K = 10`` of every training query; position-based users examine rank
``k`` with ``(1/k)^η`` (or ULTRA's eye-tracking table to the power ``η``) and click an examined document
of grade ``g`` with ``ε− + (ε+ − ε−)(2^g − 1)/(2^G_max − 1)``; queries are drawn uniformly. The sessions
up to each click budget are aggregated into click counts per (query, document, rank)
(``simulate_click_counts``), and every learner trains a linear ranker with Propensity SVM-Rank's
objective (each click ranks its document above every other document of its pairs, ``λ/2‖w‖²``,
full-batch Adam). ``pairs="shown"`` (the default) pairs each click with the other *shown* documents;
``pairs="all"`` with every candidate of the query, as the paper, whose users could examine the whole
ranking: under a top-``K`` cutoff the documents below ``K`` are never clicked whatever their relevance,
so "clicked above every candidate" is biased against them (the item-selection bias of Oosterhuis &
de Rijke, SIGIR 2020) and the learners fall back towards the logging ranker.

The learners:

* ``naive``: propensity 1 (clicks as labels);
* ``ips``: Propensity SVM-Rank with the true propensities ``θ_k / θ_1``;
* ``ips_estimated``: with propensities estimated from ``propensity_sessions`` swap-intervention
  sessions of the same users (``jaxrank.counterfactual.randomization``);
* ``ips_clipped``: true propensities clipped at ``clip`` (τ);
* ``dr``: the doubly robust targets of Oosterhuis (TOIS 2023) with his clipping ``τ = min(10/√N, 1)``
  (``N`` sessions) and a linear DM regression fitted by the clipped pointwise IPS loss, trained with the
  same pairwise objective; with ``pairs="all"`` every document of a logged query gets a target (the DM
  estimate where it was never shown), as in his ``compute_weights``;
* ``full_info``: the shown documents with the true click probabilities of examined documents as labels
  (the ceiling of the same learner on the same lists).

Beside them: the logging ranker and the ``skyline`` (RankSVM on every training query's true labels).
Every (seed, budget) is one lane of one ``jit(vmap(vmap(...)))`` per ``η``; seed ``s`` draws from
``fold_in(key, s)``. Results: mean and 95% CI over seeds per learner, budget and ``η``; the analysis
module states the paper's claims and whether they hold (``experiments.analysis.counterfactual_ltr.verdicts``).

Data: a LETOR folder (default MQ2008, fold 1; its vali split is not used), one SVMlight file split into
five parts (the MSLR-WEB subset: ``experiments.common.letor_datasets``), or synthetic queries when no
data is found (``dataset=auto``), saying so.
"""

import dataclasses
import functools
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from experiments.analysis import counterfactual_ltr as analysis
from experiments.common import letor_datasets
from experiments.common.registry import register
from jaxrank import data, metrics
from jaxrank.counterfactual import (doubly_robust, ips_losses, logging_policy, propensity_svm, randomization, rankers,
                                    simulation, user_models)
from jaxrank.metrics.confidence import mean_ci
from jaxrank.solvers import make_pairs, ranksvm
from jaxrank.utils.checks import check_choice, check_int, check_number

class _Lists(NamedTuple):
    labels: jax.Array  # [Q, L]
    mask: jax.Array  # [Q, L]


PAIRS = ("shown", "all")
LEARNERS = ("naive", "ips", "ips_estimated", "ips_clipped", "dr", "full_info")
EXAMINATION = ("inverse_rank", "eye_tracking")


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder (MQ2008), one SVMlight file (MSLR-WEB_Fold1_subset), "synthetic", or "auto"
    fold: int = 1
    etas: tuple[float, ...] = (0.5, 1.0, 2.0)
    examination: str = "inverse_rank"  # (1/k)^η, or ULTRA's eye_tracking table^η
    click_budgets: tuple[int, ...] = (100, 1_000, 10_000, 100_000, 1_000_000)
    num_seeds: int = 8
    num_positions: int = 10  # K shown
    logging_fraction: float = 0.01
    eps_minus: float = 0.1
    eps_plus: float = 1.0
    learners: tuple[str, ...] = LEARNERS
    pairs: str = "shown"  # each click against the other shown documents, or "all" candidates (module docstring)
    lam: float = 1e-3  # λ of every objective (SVM-Rank's 1/C)
    clip: float = 0.1  # τ of ips_clipped, on propensities relative to rank 1
    num_steps: int = 300  # Adam steps of every fit
    learning_rate: float = 0.05
    propensity_sessions: int = 100_000  # swap-intervention sessions per seed for ips_estimated
    chunk_size: int = 16_384  # sessions per simulation step
    seed: int = 0


def _check(config: Config) -> None:
    for learner in config.learners:
        check_choice("learners", learner, LEARNERS)
    check_choice("examination", config.examination, EXAMINATION)
    check_choice("pairs", config.pairs, PAIRS)
    check_int("num_seeds", config.num_seeds, minimum=1)
    check_int("num_positions", config.num_positions, minimum=2)
    check_int("num_steps", config.num_steps, minimum=1)
    check_int("propensity_sessions", config.propensity_sessions, minimum=1)
    check_number("logging_fraction", config.logging_fraction, low=0.0, high=1.0, high_inclusive=True)
    check_number("clip", config.clip, low=0.0, low_inclusive=True)
    budgets = np.asarray(config.click_budgets)
    if not config.etas or budgets.size == 0 or (budgets < 1).any() or (np.diff(budgets) <= 0).any():
        raise ValueError(f"click_budgets must be increasing positive counts and etas non-empty; got "
                         f"{config.click_budgets} and {config.etas}.")


def _examination(config: Config, eta: float):
    if config.examination == "eye_tracking":
        return user_models.eye_tracking(config.num_positions, eta)
    return user_models.inverse_rank(config.num_positions, eta)


def _ndcg(w, test, key):
    return metrics.ndcg(test.features @ w, test.labels, where=test.mask, topn=10, key=key)


def _lane(clicks, sessions, theta_hat, key, shared, *, config: Config):
    """Test NDCG@10 ``[M]`` of every learner trained on one seed's counts up to one budget.

    clicks: ``[Q, K]`` clicks per displayed position; sessions: ``[Q]``; theta_hat: ``[K]`` estimated
    relative propensities. Each click ranks its document above every other document of ``candidates``
    (the shown ones, or every candidate; ``propensity_svm.displayed_objective``).
    """
    features, candidates, docs, shown, gamma, theta, test = (
        shared[k] for k in ("features", "candidates", "docs", "shown", "gamma", "theta", "test"))
    rate = clicks / jnp.maximum(sessions, 1.0)[:, None]
    sampled = sessions > 0
    n = jnp.sum(clicks)
    ones = jnp.ones_like(rate)
    theta, theta_hat = jnp.broadcast_to(theta, rate.shape), jnp.broadcast_to(theta_hat, rate.shape)
    w0 = jnp.zeros(features.shape[-1])
    fit = dict(num_steps=config.num_steps, learning_rate=config.learning_rate)

    def svm(targets, propensities, clip=None):
        def objective(w):
            return propensity_svm.displayed_objective(w, features, candidates, docs, jnp.where(shown, targets, 0.0),
                                                      propensities, lam=config.lam, clip=clip, weights=sessions,
                                                      num_instances=n)

        return rankers.fit(objective, w0, **fit)[0]

    def dr():
        tau = jnp.minimum(10.0 / jnp.sqrt(jnp.maximum(jnp.sum(sessions), 1.0)), 1.0)  # Oosterhuis's α clip
        shown_features = jnp.take_along_axis(features, docs[..., None], axis=1)
        regression = rankers.ranker_objective(ips_losses.pointwise_ips_loss, shown_features, lam=config.lam,
                                              clicks=rate, propensities=theta, where=shown & sampled[:, None],
                                              clip=tau, weights=sessions / jnp.maximum(jnp.sum(sessions), 1.0),
                                              reduce_fn=jnp.sum)
        v, _ = rankers.fit(regression, w0, **fit)
        if config.pairs == "shown":  # deterministic logger: the expected treatment is the actual one, θ_k
            targets = doubly_robust.doubly_robust_targets(rate, theta, jnp.zeros_like(rate), theta,
                                                          jax.nn.sigmoid(shown_features @ v), clip=tau)
            return svm(targets, ones)
        rows = jnp.arange(docs.shape[0])[:, None]

        def per_document(x):  # [Q, K] on the shown positions -> [Q, L]
            return jnp.zeros(candidates.shape, x.dtype).at[rows, docs].add(jnp.where(shown, x, 0.0))

        rho = per_document(theta)
        where = candidates & sampled[:, None]
        targets = doubly_robust.doubly_robust_targets(per_document(rate), rho, jnp.zeros_like(rho), rho,
                                                      jax.nn.sigmoid(features @ v), clip=tau, where=where)
        # every candidate of a sampled query gets a target (the DM estimate where never shown): [Q, L, L] pairs
        return rankers.fit(lambda w: propensity_svm.objective(
            w, features, targets, jnp.ones_like(targets), where=where, lam=config.lam, weights=sessions,
            num_instances=n), w0, **fit)[0]

    learners = {
        "naive": lambda: svm(rate, ones),
        "ips": lambda: svm(rate, theta),
        "ips_estimated": lambda: svm(rate, theta_hat),
        "ips_clipped": lambda: svm(rate, theta, config.clip),
        "dr": dr,
        "full_info": lambda: svm(gamma, ones),
    }
    return jnp.stack([_ndcg(learners[name](), test, key) for name in config.learners])


def _estimate_propensities(keys, train, user, scores, config: Config):
    """``[S, K]`` swap-intervention estimates (non-positive or missing ranks floored at 1e-3)."""
    def one(key, labels, mask, user, scores):
        log, r = randomization.swap_sessions(key, _Lists(labels, mask), config.propensity_sessions, user,
                                             scores=scores, num_positions=config.num_positions)
        return randomization.swap_propensities(log, r)

    # the data enter as arguments, not as constants folded into the program
    estimate = jax.jit(jax.vmap(one, in_axes=(0, None, None, None, None)))(keys, train.labels, train.mask, user, scores)
    return jnp.where(jnp.isfinite(estimate) & (estimate > 1e-3), estimate, 1e-3)


@register("counterfactual_ltr", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Test NDCG@10 vs logged clicks for every learner and ``η`` (module docstring)."""
    _check(config)
    ds = letor_datasets.resolve(config.dataset, "counterfactual_ltr", single_file=True)
    train_r, _, test_r = letor_datasets.fold(ds, config.fold, config.seed)
    train, test = data.pad_queries(train_r), data.pad_queries(test_r)
    root = jax.random.key(config.seed)
    key_logging, key_eval, key_sim, key_swap = (jax.random.fold_in(root, i) for i in range(4))
    start = time.perf_counter()
    w0, _, chosen = logging_policy.train_logging_ranker(key_logging, train_r, fraction=config.logging_fraction)
    skyline, _ = jax.jit(ranksvm)(make_pairs(train_r), jnp.float32(config.lam))
    seed_keys = jax.vmap(lambda s: jax.random.fold_in(key_eval, s))(jnp.arange(config.num_seeds))
    logging_ndcg = float(_ndcg(w0, test, key_eval))
    skyline_ndcg = float(_ndcg(skyline, test, key_eval))
    scores = train.features @ w0
    docs, shown = logging_policy.deterministic_lists(scores, train.mask, config.num_positions)
    grades = jnp.take_along_axis(train.labels, docs, axis=1)
    rows = jnp.arange(docs.shape[0])[:, None]
    shown_docs = jnp.zeros(train.mask.shape, bool).at[rows, docs].max(shown)  # [Q, L]
    candidates = shown_docs if config.pairs == "shown" else train.mask
    max_grade = max(int(np.asarray(train.labels).max()), 1)
    click_prob = user_models.graded_click_probability(max_grade, config.eps_minus, config.eps_plus)
    gamma = jnp.where(shown, click_prob[grades.astype(jnp.int32)], 0.0)
    budgets = tuple(int(b) for b in config.click_budgets)
    lane = functools.partial(_lane, config=config)
    grid = jax.jit(jax.vmap(jax.vmap(lane, in_axes=(0, 0, None, None, None)), in_axes=(0, 0, 0, 0, None)))
    curves, propensities, clicks_logged = {}, {}, {}
    for i, eta in enumerate(config.etas):
        theta = _examination(config, eta)
        user = user_models.position_based(theta, click_prob)
        sim_keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.fold_in(key_sim, i), s))(
            jnp.arange(config.num_seeds))
        counts = jax.vmap(lambda k: simulation.simulate_click_counts(
            k, train, user, budgets, scores=scores, num_positions=config.num_positions,
            chunk_size=config.chunk_size))(sim_keys)
        clicks = _shown_clicks(counts.clicks, docs)  # [S, C, Q, K]
        swap_keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.fold_in(key_swap, i), s))(
            jnp.arange(config.num_seeds))
        theta_hat = _estimate_propensities(swap_keys, train, user, scores, config)
        shared = dict(features=train.features, candidates=candidates, docs=docs, shown=shown, gamma=gamma,
                      theta=theta / theta[0], test=test)
        ndcg = np.asarray(grid(clicks, counts.sessions, theta_hat, seed_keys, shared))  # [S, C, M]
        curves[f"{eta:g}"] = {name: _summary(ndcg[..., m]) for m, name in enumerate(config.learners)}
        propensities[f"{eta:g}"] = {"true": _rounded(theta / theta[0]), "estimated_mean": _rounded(theta_hat.mean(0))}
        clicks_logged[f"{eta:g}"] = _rounded(counts.num_clicks.mean(0), 1)
        data.write_npz(run_dir / f"ndcg_eta{eta:g}.npz", ndcg=ndcg, learners=np.asarray(config.learners))
        print(f"[counterfactual_ltr] η = {eta:g}: " + ", ".join(
            f"{name} {curves[f'{eta:g}'][name]['mean'][-1]:.4f}" for name in config.learners)
            + f" at {budgets[-1]:,} clicks ({time.perf_counter() - start:.0f}s)", flush=True)
    return {
        "dataset": ds.name,
        "source": ds.source,
        "fold": config.fold,
        "examination": config.examination,
        "etas": [f"{eta:g}" for eta in config.etas],
        "click_budgets": list(budgets),
        "num_seeds": config.num_seeds,
        "num_positions": config.num_positions,
        "learners": list(config.learners),
        "logging_queries": len(chosen),
        "logging_ndcg": round(logging_ndcg, 6),
        "skyline_ndcg": round(skyline_ndcg, 6),
        "clicks_logged": clicks_logged,
        "propensities": propensities,
        "curves": curves,
        "settings": {"pairs": config.pairs, "lam": config.lam, "clip": config.clip, "eps_minus": config.eps_minus,
                     "eps_plus": config.eps_plus, "num_steps": config.num_steps,
                     "learning_rate": config.learning_rate, "propensity_sessions": config.propensity_sessions},
        "timings": {"seconds": round(time.perf_counter() - start, 1)},
    }


def _shown_clicks(clicks, docs):
    """``[..., Q, K]`` the clicks at each displayed position: ``clicks[..., q, docs[q, k], k]``."""
    index = jnp.broadcast_to(docs[..., None], clicks.shape[:-3] + docs.shape + (1,))
    per_doc = jnp.take_along_axis(clicks, index, axis=-2)  # [..., Q, K, K]: the document at position i, every rank
    return jnp.diagonal(per_doc, axis1=-2, axis2=-1)


def _rounded(values, digits: int = 6) -> list:
    """A JSON list of ``values`` rounded in float64 (float32 values print with spurious digits)."""
    return np.round(np.asarray(values, np.float64), digits).tolist()


def _summary(values) -> dict:
    """Mean, 95% CI and std over seeds (axis 0) of ``[S, C]``."""
    values = np.asarray(values, np.float64)
    mean, half = mean_ci(values, axis=0)
    std = values.std(axis=0, ddof=1) if values.shape[0] > 1 else np.zeros(values.shape[1])
    return {"mean": _rounded(mean), "ci95": _rounded(half), "std": _rounded(std)}
