"""Propensities from a fitted click model: the examination probabilities of the position-based model
(PBM; Craswell et al., WSDM 2008; Chuklin, Markov & de Rijke, *Click Models for Web Search*, 2015,
ch. 3–4) fitted by EM with one free attraction per (query, document) pair (PyClick's conventions:
start at 1/2, pseudo-counts ``(1, 2)``, cap ``1 - 10⁻⁶``).

The PBM's clicks at one (pair, rank) cell are exchangeable, so its EM needs only the ``[P, K]`` counts
of clicks and displays per cell, summed once: every iteration then costs ``O(P·K)`` instead of a pass
over the sessions, and gives the iterates of ``jaxrank.click_models.fit_em`` with
``jaxrank.click_models.pbm`` (the E-step's posteriors, ch. 4, are the same for every skip in a cell).

Relative to rank 1, ``θ_k / θ_1`` is the propensity of Joachims et al. (WSDM 2017, "click models take
the role of the propensity estimator"). The examination is identified only when pairs appear at
several ranks (a stochastic logger, several rankers, or interventions); under one deterministic
ranker every pair sits at one rank and the EM keeps its starting examination there. The default 200
EM iterations (PyClick's 50 are not enough for the examination: on 800k sessions of 4 rankers with
``θ = 1/k``, 50 iterations left ``θ_2/θ_1`` at 0.484).
``jaxrank.counterfactual.regression_em`` is the same model with relevance regressed on features.
"""

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import PRIOR, PROB_CAP, Statistics, check_fit_log, log_probs, maximize
from jaxrank.click_models.pbm import PBMParams, init, skip_posteriors
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array
from jaxrank.utils.checks import check_int


def cell_counts(log: SessionLog, num_pairs: int) -> tuple[Array, Array]:
    """``([P, K] clicks, [P, K] displays)`` of each (pair, rank) cell of ``log``."""
    num_positions = log.mask.shape[-1]
    cells = num_pairs * num_positions
    index = jnp.where(log.mask, log.pair * num_positions + jnp.arange(num_positions), cells).ravel()
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    clicks = jnp.zeros(cells, dtype).at[index].add(log.clicks.ravel().astype(dtype), mode="drop")
    displays = jnp.zeros(cells, dtype).at[index].add(1.0, mode="drop")
    return clicks.reshape(num_pairs, num_positions), displays.reshape(num_pairs, num_positions)


def pbm_em(clicks: Array, displays: Array, num_iterations: int = 200) -> PBMParams:
    """The PBM fitted by ``num_iterations`` EM iterations on ``[P, K]`` cell counts (logits)."""
    skips = displays - clicks

    def iteration(params, _):
        log_attr, log_not_attr = (x[:, None] for x in log_probs(params.attraction))
        log_exam, log_not_exam = (x[None, :] for x in log_probs(params.examination))
        attr_skip, exam_skip = skip_posteriors(log_attr, log_not_attr, log_exam, log_not_exam)  # [P, K] each
        attr, exam = clicks + skips * attr_skip, clicks + skips * exam_skip
        stats = Statistics(PBMParams(attr.sum(1), exam.sum(0)), PBMParams(displays.sum(1), displays.sum(0)))
        return maximize(stats, params, prior=PRIOR, cap=PROB_CAP), None

    params = init(*clicks.shape, dtype=clicks.dtype)
    return jax.lax.scan(iteration, params, None, length=num_iterations)[0]


def pbm_examination(log: SessionLog, *, num_iterations: int = 200, num_pairs=None) -> Array:
    """``[K]`` the fitted PBM's examination probabilities ``θ_k``.

    Args:
      log: the sessions; traceable (a bootstrap maps over resampled logs) when ``num_pairs`` is given.
      num_iterations: EM iterations.
      num_pairs: size of the pair table; default ``int(log.num_pairs)``.
    """
    check_int("num_iterations", num_iterations, minimum=1)
    num_pairs = int(log.num_pairs) if num_pairs is None else num_pairs
    check_fit_log(log, num_pairs)
    return jax.nn.sigmoid(pbm_em(*cell_counts(log, num_pairs), num_iterations).examination)


def pbm_propensities(log: SessionLog, *, num_iterations: int = 200, num_pairs=None) -> Array:
    """``[K]`` ``θ_k / θ_1`` of the PBM fitted to ``log``."""
    theta = pbm_examination(log, num_iterations=num_iterations, num_pairs=num_pairs)
    return theta / theta[0]
