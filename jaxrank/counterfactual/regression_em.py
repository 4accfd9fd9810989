"""Propensities by regression EM (Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, §4).

The position-based model ``P(C = 1) = θ_k γ_{qd}`` with the relevance given by a regression on the
document's features, ``γ_{qd} = σ(wᵀx_{qd} + b)``, so sparse (query, document) pairs share strength.
EM over the hidden examination ``E`` and relevance ``R`` of every impression:

* E-step (the paper's posteriors, as TF-Ranking's ``losses_impl.py`` and ultr-reproducibility
  ``src/loss.py`` ``regression_em`` compute them): a click means ``E = R = 1``; an impression without
  a click has ``P(E = 1 | C = 0) = θ(1 − γ)/(1 − θγ)`` and ``P(R = 1 | C = 0) = (1 − θ)γ/(1 − θγ)``,
  the position-based model's skip posteriors (``jaxrank.click_models.pbm.skip_posteriors``, with the
  attraction ``γ``).
* M-step: ``θ_k`` = the expected share of examined impressions at rank ``k`` (closed form); the
  relevance regression is refitted to the soft labels ``P(R = 1 | ·)`` of every impression (the paper
  fits GBDT to labels sampled from them; here a weighted logistic regression with a small ℓ2 term
  ``lam``, ``newton_steps`` Newton steps warm-started from the previous iteration).

The M-step is a regression, not the Bernoulli M-step of ``jaxrank.click_models.em``, so the iterations
run as steps of the propensity-estimator family (``step``, ``jaxrank.counterfactual.propensity_estimator
.estimate``): ``init(key, data, lam=, init=)`` keeps ``λ`` as an f32 leaf of the state.

The log enters as ``ClickCounts`` (clicks and impressions per query, document and rank): the
impressions of one (document, rank) cell share their posteriors, so an iteration costs ``O(Q·L·K +
Q·L·D²)`` whatever the number of sessions (``jaxrank.counterfactual.bootstrap`` resamples the sessions
and recounts).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import log1mexp, log_probs
from jaxrank.click_models.pbm import skip_posteriors
from jaxrank.counterfactual.propensity_estimator import PropensityData, PropensityEstimator, as_leaf, propensity_data
from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int

# lam: ℓ2 weight of the regression (per impression); it keeps the logits finite when a grade is always clicked
# once examined (ε+ = 1). It biases the examination: on a 10⁶-click log (one-hot grade features, θ = 1/k) 1e-4
# left θ_5/θ_1 at 0.1974 for 0.2 whatever the iterations, 1e-6 at 0.1998. init: the starting θ_k (the
# regression starts at w = 0, b = 0: γ = 0.5).
HPARAMS = {"lam": 1e-6, "init": 0.5}
OPTIONS = {"newton_steps": 3}  # Newton steps of the relevance regression per M-step
# EM moves slowly along the examination-relevance trade-off: on a log of 800k sessions (4 rankers, θ = 1/k)
# 50 iterations left θ_2/θ_1 at 0.493, 200 at 0.501.
NUM_ITERATIONS = 200


class RegressionEM(NamedTuple):
    examination: Array  # [K] f32 θ_k
    weights: Array  # [D] f32 w of the relevance regression
    bias: Array  # [] f32 b
    lam: Array  # [] f32 λ, the regression's ℓ2 weight
    iteration: Array  # [] i32 EM iterations done


class RegressionEMInfo(NamedTuple):
    log_likelihood: Array  # [] Σ over impressions of log P(C = c) under the model the E-step used
    iteration: Array  # [] i32 EM iterations done after this one


def relevance(model: RegressionEM, features: Array) -> Array:
    """``[...]`` ``γ = σ(wᵀx + b)`` of ``features [..., D]``."""
    return jax.nn.sigmoid(features @ model.weights + model.bias)


def _logistic_newton(w, b, features, targets, weights, lam, steps):
    """Weighted logistic regression on soft targets by Newton's method (``D + 1`` unknowns)."""
    x = jnp.concatenate([features, jnp.ones(features.shape[:-1] + (1,), features.dtype)], -1).reshape(
        -1, features.shape[-1] + 1)
    t, a = targets.reshape(-1), weights.reshape(-1)
    penalty = jnp.full(x.shape[1], lam, x.dtype).at[-1].set(0.0)  # no penalty on the bias
    total = jnp.maximum(jnp.sum(a), 1.0)

    def newton(theta, _):
        p = jax.nn.sigmoid(x @ theta)
        grad = x.T @ (a * (p - t)) / total + penalty * theta
        hess = (x * (a * p * (1 - p))[:, None]).T @ x / total + jnp.diag(penalty) + 1e-8 * jnp.eye(x.shape[1])
        return theta - jnp.linalg.solve(hess, grad), None

    theta, _ = jax.lax.scan(newton, jnp.concatenate([w, b[None]]), None, length=steps)
    return theta[:-1], theta[-1]


def init(key: PRNGKey, data: PropensityData, **hparams) -> RegressionEM:
    """``θ_k = init`` for the ``K`` ranks of ``data``, the regression at ``w = 0``, ``b = 0`` over its ``D`` features."""
    del key  # EM is deterministic
    values = hparams_with_defaults("propensity estimator 'regression_em'", HPARAMS, OPTIONS, hparams)
    num_positions, num_features = data.counts.clicks.shape[-1], data.features.shape[-1]
    return RegressionEM(jnp.full(num_positions, values["init"], jnp.float32), jnp.zeros(num_features, jnp.float32),
                        jnp.zeros((), jnp.float32), as_leaf(values["lam"]), jnp.zeros((), jnp.int32))


def em_step(model: RegressionEM, data: PropensityData, newton_steps: int) -> tuple[RegressionEM, RegressionEMInfo]:
    """One EM iteration (this module's docstring)."""
    clicks, shown, features = data.counts.clicks, data.counts.displays, data.features
    log_gamma, log_not_gamma = (x[..., None] for x in log_probs(features @ model.weights + model.bias))  # [Q, L, 1]
    log_theta, log_not_theta = jnp.log(model.examination), jnp.log1p(-model.examination)  # [K]
    relevant_skip, examined_skip = skip_posteriors(log_gamma, log_not_gamma, log_theta, log_not_theta)
    skipped = shown - clicks
    examined = clicks + skipped * examined_skip  # [Q, L, K] expected examined impressions
    relevant = clicks + skipped * relevant_skip
    log_click = log_gamma + log_theta
    log_lik = jnp.sum(jnp.where(clicks > 0, clicks * log_click, 0.0)
                      + jnp.where(skipped > 0, skipped * log1mexp(log_click), 0.0))
    theta = jnp.sum(examined, axis=(0, 1)) / jnp.maximum(jnp.sum(shown, axis=(0, 1)), 1e-12)
    impressions = jnp.sum(shown, -1)
    soft = jnp.sum(relevant, -1) / jnp.maximum(impressions, 1e-12)
    w, b = _logistic_newton(model.weights, model.bias, features, soft, impressions, model.lam, newton_steps)
    iteration = model.iteration + 1
    return model._replace(examination=jnp.clip(theta, 1e-6, 1.0), weights=w, bias=b,
                          iteration=iteration), RegressionEMInfo(log_lik, iteration)


def propensities(model: RegressionEM) -> Array:
    """``[K]`` ``θ_k / θ_1``."""
    return model.examination / model.examination[0]


def make(*, newton_steps: int = OPTIONS["newton_steps"]) -> PropensityEstimator:
    check_int("newton_steps", newton_steps, minimum=1)

    def step(key: PRNGKey, state: RegressionEM, data: PropensityData):
        del key  # EM is deterministic
        return em_step(state, data, newton_steps)

    return PropensityEstimator(init, step, propensities)


def fit(counts: ClickCounts, features: Array, *, num_iterations: int = NUM_ITERATIONS,
        newton_steps: int = OPTIONS["newton_steps"], **hparams) -> RegressionEM:
    """Regression EM on pooled click counts: ``num_iterations`` steps of ``make(newton_steps=)`` from
    ``init(…, **hparams)`` (``HPARAMS``: ``lam``, ``init``).

    Args:
      counts: ``ClickCounts [Q, L, K]`` (several logging rankers may be summed).
      features: ``[Q, L, D]``.
      num_iterations: EM iterations.
      newton_steps: Newton steps of the relevance regression per M-step.
      hparams: ``lam``, ``init`` (``HPARAMS``' comments).

    Returns:
      the fitted ``RegressionEM``; ``propensities`` gives ``θ_k / θ_1``.
    """
    check_int("num_iterations", num_iterations, minimum=1)
    check_int("newton_steps", newton_steps, minimum=1)
    data = propensity_data(counts, features)
    return jax.lax.scan(lambda model, _: em_step(model, data, newton_steps), init(None, data, **hparams), None,
                        length=num_iterations)[0]
