"""Propensities by regression EM (Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018, §4).

The position-based model ``P(C = 1) = θ_k γ_{qd}`` with the relevance given by a regression on the
document's features, ``γ_{qd} = σ(wᵀx_{qd} + b)``, so sparse (query, document) pairs share strength.
EM over the hidden examination ``E`` and relevance ``R`` of every impression:

* E-step (the paper's posteriors, as TF-Ranking's ``losses_impl.py`` and ultr-reproducibility
  ``src/loss.py`` ``regression_em`` compute them): a click means ``E = R = 1``; an impression without
  a click has ``P(E = 1 | C = 0) = θ(1 − γ)/(1 − θγ)`` and ``P(R = 1 | C = 0) = (1 − θ)γ/(1 − θγ)``.
* M-step: ``θ_k`` = the expected share of examined impressions at rank ``k`` (closed form); the
  relevance regression is refitted to the soft labels ``P(R = 1 | ·)`` of every impression (the paper
  fits GBDT to labels sampled from them; here a weighted logistic regression with a small ℓ2 term,
  ``newton_steps`` Newton steps warm-started from the previous iteration).

The log enters as ``ClickCounts`` (clicks and impressions per query, document and rank): the
impressions of one (document, rank) cell share their posteriors, so an iteration costs ``O(Q·L·K +
Q·L·D²)`` whatever the number of sessions (``jaxrank.counterfactual.bootstrap`` resamples the sessions
and recounts).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.types import Array


class RegressionEM(NamedTuple):
    examination: Array  # [K] f32 θ_k
    weights: Array  # [D] f32 w of the relevance regression
    bias: Array  # [] f32 b


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


def fit(counts: ClickCounts, features: Array, *, num_iterations: int = 200, newton_steps: int = 3, lam=1e-6,
        init=0.5) -> RegressionEM:
    """Regression EM on pooled click counts (this module's docstring).

    Args:
      counts: ``ClickCounts [Q, L, K]`` (several logging rankers may be summed).
      features: ``[Q, L, D]``.
      num_iterations: EM iterations. EM moves slowly along the examination-relevance trade-off: on a
        log of 800k sessions (4 rankers, ``θ = 1/k``) 50 iterations left ``θ_2/θ_1`` at 0.493, 200 at 0.501.
      newton_steps: Newton steps of the relevance regression per M-step.
      lam: ℓ2 weight of the regression (per impression); it keeps the logits finite when a grade is always
        clicked once examined (``ε+ = 1``). It biases the examination: on a 10⁶-click log (one-hot grade
        features, ``θ = 1/k``) ``1e-4`` left ``θ_5/θ_1`` at 0.1974 for 0.2 whatever the iterations,
        ``1e-6`` at 0.1998.
      init: the starting ``θ_k`` (the regression starts at ``w = 0``, ``b = 0``: ``γ = 0.5``).

    Returns:
      the fitted ``RegressionEM``; ``propensities`` gives ``θ_k / θ_1``.
    """
    num_positions = counts.clicks.shape[-1]
    features = jnp.asarray(features, jnp.float32)
    clicks, shown = counts.clicks, counts.displays
    model = RegressionEM(jnp.full(num_positions, init, jnp.float32), jnp.zeros(features.shape[-1], jnp.float32),
                         jnp.zeros((), jnp.float32))

    def iteration(model, _):
        gamma = relevance(model, features)[..., None]  # [Q, L, 1]
        theta = model.examination
        no_click = jnp.maximum(1.0 - theta * gamma, 1e-12)
        skipped = shown - clicks
        examined = clicks + skipped * theta * (1.0 - gamma) / no_click  # [Q, L, K] expected examined impressions
        relevant = clicks + skipped * (1.0 - theta) * gamma / no_click
        theta = jnp.sum(examined, axis=(0, 1)) / jnp.maximum(jnp.sum(shown, axis=(0, 1)), 1e-12)
        impressions = jnp.sum(shown, -1)
        soft = jnp.sum(relevant, -1) / jnp.maximum(impressions, 1e-12)
        w, b = _logistic_newton(model.weights, model.bias, features, soft, impressions, lam, newton_steps)
        return RegressionEM(jnp.clip(theta, 1e-6, 1.0), w, b), None

    model, _ = jax.lax.scan(iteration, model, None, length=num_iterations)
    return model


def propensities(model: RegressionEM) -> Array:
    """``[K]`` ``θ_k / θ_1``."""
    return model.examination / model.examination[0]
