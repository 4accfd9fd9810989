"""Inverse propensity scoring (IPS) with the affine correction for trust bias:
``t_d = (c̄_d − β̄_d) / max(ρ_d, τ)`` (Joachims, Swaminathan & Schnabel, WSDM 2017, §4 with
``β = 0``; Vardasbi, Oosterhuis & de Rijke, CIKM 2020; Oosterhuis, TOIS 2023, its IPS baseline and
HarrieO/2022-doubly-robust-LTR ``utils/estimators.py`` ``compute_weights`` without a regression model).
``τ = 0`` is unclipped; ``ρ = 0`` (never shown) gives 0."""

from jaxrank.counterfactual import doubly_robust
from jaxrank.counterfactual.learners import base

HPARAMS = {"lam": 1e-3, "clip": 0.0}  # τ = 0: no clipping (Joachims et al. 2017 clip only in their §6 study)
OPTIONS = {"smoothing": base.SMOOTHING}


def targets(state, log):
    """``[Q, L]`` the IPS estimates."""
    return doubly_robust.affine_ips_targets(log.ctr, log.beta, log.rho, clip=state.clip, where=log.where)


def make(*, smoothing: float = base.SMOOTHING) -> base.CounterfactualLearner:
    return base.make(targets, HPARAMS, smoothing=smoothing)
