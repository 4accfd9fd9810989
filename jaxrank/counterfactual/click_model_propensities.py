"""Propensities from a fitted click model: the examination probabilities of the position-based model
(PBM; Craswell et al., WSDM 2008; Chuklin, Markov & de Rijke, *Click Models for Web Search*, 2015,
ch. 3–4) fitted by EM with one free attraction per (query, document) pair
(``jaxrank.click_models.fit_em`` with ``jaxrank.click_models.pbm``, PyClick's conventions).

Relative to rank 1, ``θ_k / θ_1`` is the propensity of Joachims et al. (WSDM 2017, "click models take
the role of the propensity estimator"). The examination is identified only when pairs appear at
several ranks (a stochastic logger, several rankers, or interventions); under one deterministic
ranker every pair sits at one rank and the EM keeps its starting examination there. The default 200
EM iterations (PyClick's 50 are not enough for the examination: on 800k sessions of 4 rankers with
``θ = 1/k``, 50 iterations left ``θ_2/θ_1`` at 0.484).
``jaxrank.counterfactual.regression_em`` is the same model with relevance regressed on features.
"""

import jax

from jaxrank.click_models import CLICK_MODELS, fit_em
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array


def pbm_examination(log: SessionLog, *, num_iterations: int = 200, num_pairs=None, chunk_size=None) -> Array:
    """``[K]`` the fitted PBM's examination probabilities ``θ_k``."""
    params = fit_em(log, CLICK_MODELS.build("pbm"), num_iterations=num_iterations, num_pairs=num_pairs,
                    chunk_size=chunk_size)
    return jax.nn.sigmoid(params.examination)


def pbm_propensities(log: SessionLog, *, num_iterations: int = 200, num_pairs=None, chunk_size=None) -> Array:
    """``[K]`` ``θ_k / θ_1`` of the PBM fitted to ``log``."""
    theta = pbm_examination(log, num_iterations=num_iterations, num_pairs=num_pairs, chunk_size=chunk_size)
    return theta / theta[0]
