"""Simulated users of the semi-synthetic counterfactual-LTR protocol: who clicks what, at which rank.

Every user here but the cascade is a ``jaxrank.clicks.AffineClickModel`` of the position-based family
(Vardasbi, Oosterhuis & de Rijke, CIKM 2020, "affine corrections"; Oosterhuis, TOIS 2023, §3): a
document of grade ``g`` at rank ``k`` (0-based) is clicked with

    P(C = 1 | g, k) = alpha[k] · relevance[g] + beta[k]

(``jaxrank.clicks.position_based_clicks``). This module builds the two settings of the literature:

* **position-based** (Joachims, Swaminathan & Schnabel, WSDM 2017, §6's simulation; Ai et al., SIGIR
  2018): ``alpha[k] = θ_k`` the examination probability, ``beta = 0``, ``relevance[g] = P(click |
  examined, g)``. Examination curves: ``inverse_rank`` ``θ_k = (1/(k+1))^η`` (Joachims et al. 2017;
  Oosterhuis's ``multi_click_models.py``: ``(1./(rank+1.))**eta``) or ``eye_tracking`` (ULTRA's
  ``PositionBiasedModel.setExamProb``: ``[0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]``
  raised to ``η``). Click noise ``graded_click_probability``: ULTRA's ``ClickModel.setClickProb``,
  ``ε− + (ε+ − ε−)(2^g − 1)/(2^G_max − 1)``.
* **trust bias** (Agarwal, Wang, Li, Bendersky & Najork, WWW 2019; Oosterhuis, TOIS 2023): an examined
  non-relevant document is clicked with a rank-dependent ``ε−_k`` and a relevant one with ``ε+_k``, so
  ``alpha[k] = θ_k (ε+_k − ε−_k)``, ``beta[k] = θ_k ε−_k`` with ``relevance[g] = P(relevant | g)``.
  ``trust_bias("oosterhuis")`` is the TOIS paper's ``default`` model (HarrieO/2022-doubly-robust-LTR
  ``utils/click_generation.py`` ``get_alpha_beta``: ``θ_k = 0.35/(k+1) + 0.65/(1 + 0.05k)``,
  ``ε+_k = 1/(1 + 0.005k)``, ``ε−_k = 0.65/(k+1)``, relevance ``g / G_max``); ``trust_bias("ultra")``
  is ULTRA's ``TrustBiasedModel`` (eye-tracking ``θ_k``, ``ε+_k = 1 − (k+2)/100``, ``ε−_k =
  0.65/(k+1)``, relevance the graded click probability).

The cascade user (clicks stop the scan) is not affine; it is ``jaxrank.clicks.CascadeModel``, and
``ultra_cascade`` builds ULTRA's (``example/ClickModel/cascade.json``: graded click probability, stop
after the first click).
"""

import jax.numpy as jnp
import numpy as np

from jaxrank.clicks.models import (AffineClickModel, CascadeModel, make_affine_click_model, make_cascade_model,
                                   make_position_based_model)
from jaxrank.types import Array
from jaxrank.utils.checks import check_choice, check_int, check_number

EYE_TRACKING = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)  # ULTRA's PBM table, ranks 1-10
TRUST_BIAS_MODELS = ("oosterhuis", "ultra")


def inverse_rank(num_positions: int, eta=1.0) -> Array:
    """``[K]`` examination ``θ_k = (1/(k+1))^η`` (Joachims et al., WSDM 2017, §6)."""
    check_int("num_positions", num_positions, minimum=1)
    check_number("eta", eta, low=0.0, low_inclusive=True)
    return (1.0 / jnp.arange(1, num_positions + 1, dtype=jnp.float32)) ** jnp.float32(eta)


def eye_tracking(num_positions: int = 10, eta=1.0) -> Array:
    """``[K]`` ULTRA's eye-tracking examination table raised to ``η``; ranks beyond 10 keep the last value
    (ULTRA's ``getExamProb``)."""
    check_int("num_positions", num_positions, minimum=1)
    check_number("eta", eta, low=0.0, low_inclusive=True)
    table = np.asarray(EYE_TRACKING, np.float32)[np.minimum(np.arange(num_positions), len(EYE_TRACKING) - 1)]
    return jnp.asarray(table) ** jnp.float32(eta)


def graded_click_probability(max_grade: int, eps_minus=0.1, eps_plus=1.0) -> Array:
    """``[G]`` ``ε− + (ε+ − ε−)(2^g − 1)/(2^G_max − 1)`` for grades ``0..G_max`` (ULTRA's ``setClickProb``;
    ``G_max = 4``: ``[0.1, 0.16, 0.28, 0.52, 1.0]``)."""
    check_int("max_grade", max_grade, minimum=1)
    check_number("eps_minus", eps_minus, low=0.0, high=1.0, low_inclusive=True, high_inclusive=True)
    check_number("eps_plus", eps_plus, low=0.0, high=1.0, low_inclusive=True, high_inclusive=True)
    gain = (2.0 ** jnp.arange(max_grade + 1, dtype=jnp.float32) - 1.0) / (2.0 ** max_grade - 1.0)
    return jnp.float32(eps_minus) + jnp.float32(eps_plus - eps_minus) * gain


def position_based(examination, click_probability) -> AffineClickModel:
    """The position-based user (Joachims et al., WSDM 2017, §6; ULTRA's ``PositionBiasedModel``):
    ``jaxrank.clicks.make_position_based_model(examination [K], click_probability [G])``."""
    return make_position_based_model(examination, click_probability)


def trust_bias(num_positions: int, max_grade: int, kind: str = "oosterhuis", *, eta=1.0) -> AffineClickModel:
    """A trust-bias user (this module's docstring): ``kind`` ``"oosterhuis"`` (TOIS 2023's ``default``) or
    ``"ultra"`` (ULTRA's ``TrustBiasedModel``, its ``epsilon_1_neg = 0.65``, examination to the power ``η``)."""
    check_choice("kind", kind, TRUST_BIAS_MODELS)
    check_int("num_positions", num_positions, minimum=1)
    k = jnp.arange(num_positions, dtype=jnp.float32)
    if kind == "oosterhuis":
        theta = 0.35 / (k + 1.0) + 0.65 / (1.0 + 0.05 * k)
        eps_plus, eps_minus = 1.0 / (1.0 + 0.005 * k), 0.65 / (k + 1.0)
        relevance = jnp.arange(max_grade + 1, dtype=jnp.float32) / max_grade
    else:
        theta = eye_tracking(num_positions, eta)
        eps_plus, eps_minus = 1.0 - (k + 2.0) / 100.0, 0.65 / (k + 1.0)
        relevance = graded_click_probability(max_grade)
    return make_affine_click_model(theta * (eps_plus - eps_minus), theta * eps_minus, relevance)


def ultra_cascade(max_grade: int, eps_minus=0.1, eps_plus=1.0) -> CascadeModel:
    """ULTRA's cascade user: click with the graded click probability, stop after the first click."""
    click = graded_click_probability(max_grade, eps_minus, eps_plus)
    return make_cascade_model(click, jnp.ones_like(click))
