"""The doubly robust (DR) relevance estimate for position and trust bias (Oosterhuis, TOIS 2023).

The user clicks a document ``d`` shown at rank ``k`` with ``P(C = 1) = α_k R_d + β_k`` (the affine
model of ``jaxrank.counterfactual.user_models``; ``β = 0`` is the position-based model). Examination,
the treatment, is never observed, so the estimator uses the **expected treatment** of each document
under the logging policy, ``ρ_d = E_{y∼π}[α_{rank(d | y)}]`` (0 where not shown), in place of the
actual one. With a regression estimate ``R̂_d`` (the direct method, DM), one logged interaction gives

    R̂^DR_d = R̂_d + (c_d − α_{k(d)} R̂_d − β_{k(d)}) / max(ρ_d, τ)      (α = β = 0 when d is not shown),

(the paper's DR estimator, §5; HarrieO/2022-doubly-robust-LTR ``utils/estimators.py``
``compute_weights``, whose clicks and treatments are per-document averages over the logged sessions:
``(ctr − β̄ − (ᾱ − ᾱ_clip) R̂) / ᾱ_clip``, the same expression summed). Its expectation over the
rankings and clicks is ``R̂ + (ρR + β̄ − ρR̂ − β̄)/ρ = R`` whatever ``R̂`` (τ = 0): unbiased when the
expected treatment is right, and when ``R̂`` is right even under clipping, where the IPS estimate
``(c − β)/max(ρ, τ)`` (``affine_ips_targets``; Vardasbi, Oosterhuis & de Rijke, CIKM 2020) is biased.
Both are affine in the clicks, so averaging them over a query's sessions gives the same expression
with click rates and the shown documents' average ``α``, ``β`` per session.

The estimates are targets: train with a loss of ``jaxrank.counterfactual.ips_losses`` given
``clicks = R̂^DR`` and ``propensities = 1``. Oosterhuis fits the DM regression ``R̂`` to the clicks
with the clipped IPS cross-entropy (``utils/optimization.py``
``optimize_regressor_counterfactual_param_given``): ``pointwise_ips_loss`` on ``affine_ips_targets``.
"""

from typing import Optional

import jax.numpy as jnp

from jaxrank.types import Array


def _denominator(expected_alpha, clip):
    rho = jnp.asarray(expected_alpha)
    return rho if clip is None else jnp.maximum(rho, clip)


def affine_ips_targets(clicks: Array, beta_shown: Array, expected_alpha: Array, *, clip=None,
                       where: Optional[Array] = None) -> Array:
    """``[..., L]`` ``(c − β_{k(d)}) / max(ρ_d, τ)``; 0 where ``ρ = 0`` or outside ``where``.

    Args:
      clicks: ``[..., L]`` clicks (or click rates over a query's sessions).
      beta_shown: ``[..., L]`` ``β`` of the rank each document was shown at (0 when not shown), or its average.
      expected_alpha: ``[..., L]`` ``ρ_d = E_π[α_{rank(d)}]``.
      clip: ``τ``, or ``None``.
    """
    rho = _denominator(expected_alpha, clip)
    valid = rho > 0 if where is None else (rho > 0) & where
    return jnp.where(valid, (clicks - beta_shown) / jnp.where(valid, rho, 1.0), 0.0)


def doubly_robust_targets(clicks: Array, alpha_shown: Array, beta_shown: Array, expected_alpha: Array,
                          regression: Array, *, clip=None, where: Optional[Array] = None) -> Array:
    """``[..., L]`` ``R̂ + (c − α_{k(d)} R̂ − β_{k(d)}) / max(ρ, τ)`` (module docstring); ``R̂`` alone where
    ``ρ = 0`` (a document the policy never shows keeps its regression estimate), 0 outside ``where``.

    Args:
      clicks: ``[..., L]`` clicks or click rates.
      alpha_shown, beta_shown: ``[..., L]`` ``α``, ``β`` of the rank each document was shown at (0 when not
        shown), or their averages over the sessions (the actual treatment).
      expected_alpha: ``[..., L]`` ``ρ_d`` (the expected treatment).
      regression: ``[..., L]`` the DM estimate ``R̂_d`` (its gradient is not stopped).
      clip: ``τ``, or ``None``.
    """
    rho = _denominator(expected_alpha, clip)
    shown = rho > 0
    residual = (clicks - alpha_shown * regression - beta_shown) / jnp.where(shown, rho, 1.0)
    targets = regression + jnp.where(shown, residual, 0.0)
    return targets if where is None else jnp.where(where, targets, 0.0)
