"""Propensities from a fitted click model: the examination probabilities of the position-based model
(PBM; Craswell et al., WSDM 2008; Chuklin, Markov & de Rijke, *Click Models for Web Search*, 2015,
ch. 3–4) fitted by EM with one free attraction per (query, document) pair (PyClick's conventions:
start at 1/2, pseudo-counts ``(1, 2)``, cap ``1 - 10⁻⁶``, the ``HPARAMS``).

The PBM's clicks at one (pair, rank) cell are exchangeable, so its EM needs only the ``[P, K]`` counts
of clicks and displays per cell (``CellLog``), summed once: every iteration then costs ``O(P·K)``
instead of a pass over the sessions. The fit is the package's one EM loop,
``jaxrank.click_models.em.run_em``, with ``CELL_PBM``: the PBM of ``jaxrank.click_models.pbm`` (its
parameters, its skip posteriors ``pbm.skip_posteriors``, ch. 4) reading cells instead of sessions,
so its iterates are those of ``jaxrank.click_models.fit_em`` on the sessions themselves.

Relative to rank 1, ``θ_k / θ_1`` is the propensity of Joachims et al. (WSDM 2017, "click models take
the role of the propensity estimator"). The examination is identified only when pairs appear at
several ranks (a stochastic logger, several rankers, or interventions); under one deterministic
ranker every pair sits at one rank and the EM keeps its starting examination there. The default 200
EM iterations (PyClick's 50 are not enough for the examination: on 800k sessions of 4 rankers with
``θ = 1/k``, 50 iterations left ``θ_2/θ_1`` at 0.484).
``jaxrank.counterfactual.regression_em`` is the same model with relevance regressed on features.

Family contract (``jaxrank.counterfactual.propensity_estimator``): ``init(key, data, **HPARAMS)`` gives
the ``EMState`` of the ``Q·L`` pairs of ``data``, ``step`` one EM iteration ``(EMState, EMInfo)``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import em, pbm
from jaxrank.click_models.base import (EM_HPARAMS, ClickModel, Statistics, check_fit_log, log1mexp, log_probs,
                                       rank_table)
from jaxrank.counterfactual.propensity_estimator import PropensityData, PropensityEstimator
from jaxrank.data.sessions import SessionLog
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = {}
NUM_ITERATIONS = 200


class CellLog(NamedTuple):
    """A log as its ``[P, K]`` cells (pair ``p`` shown at rank ``k``)."""

    clicks: Array  # [P, K] clicks
    displays: Array  # [P, K] displays


def cell_counts(log: SessionLog, num_pairs: int) -> tuple[Array, Array]:
    """``([P, K] clicks, [P, K] displays)`` of each (pair, rank) cell of ``log``."""
    num_positions = log.mask.shape[-1]
    cells = num_pairs * num_positions
    index = jnp.where(log.mask, log.pair * num_positions + jnp.arange(num_positions), cells).ravel()
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    clicks = jnp.zeros(cells, dtype).at[index].add(log.clicks.ravel().astype(dtype), mode="drop")
    displays = jnp.zeros(cells, dtype).at[index].add(1.0, mode="drop")
    return clicks.reshape(num_pairs, num_positions), displays.reshape(num_pairs, num_positions)


def _factors(params: pbm.PBMParams, num_positions: int):
    log_attr, log_not_attr = (x[:, None] for x in log_probs(params.attraction))  # [P, 1]
    log_exam, log_not_exam = (x[None, :] for x in log_probs(rank_table(params.examination, num_positions)))  # [1, K]
    return log_attr, log_not_attr, log_exam, log_not_exam


def _click_log_probs(params: pbm.PBMParams, cells: CellLog) -> Array:
    """``[P, K]`` ``log P(C = 1) = log α_p + log ε_k`` of every cell."""
    log_attr, _, log_exam, _ = _factors(params, cells.clicks.shape[-1])
    return log_attr + log_exam


def _cell_log_likelihood(params: pbm.PBMParams, cells: CellLog) -> Array:
    """``[P, K]`` the log-probability of each cell's clicks and skips (positions are independent)."""
    log_click = _click_log_probs(params, cells)
    return cells.clicks * log_click + (cells.displays - cells.clicks) * log1mexp(log_click)


def _statistics(params: pbm.PBMParams, cells: CellLog) -> Statistics:
    """The PBM's E-step on cells: a click counts 1 for ``α`` and ``ε``, a skip its posterior."""
    attr_skip, exam_skip = pbm.skip_posteriors(*_factors(params, cells.clicks.shape[-1]))  # [P, K] each
    skips = cells.displays - cells.clicks
    attr, exam = cells.clicks + skips * attr_skip, cells.clicks + skips * exam_skip
    return Statistics(pbm.PBMParams(attr.sum(1), exam.sum(0)),
                      pbm.PBMParams(cells.displays.sum(1), cells.displays.sum(0)))


# the PBM of jaxrank.click_models.pbm on [P, K] cells: one chunk (no sessions to chunk), its log-likelihood
# per cell
CELL_PBM = ClickModel("pbm_cells", pbm.init, _cell_log_likelihood, _click_log_probs,
                      lambda params, cells: jnp.exp(_click_log_probs(params, cells)), pbm.relevance, pbm.sample,
                      _statistics, "em", chunk_size=None)


def _cells(data: PropensityData) -> CellLog:
    num_positions = data.counts.clicks.shape[-1]
    return CellLog(data.counts.clicks.reshape(-1, num_positions), data.counts.displays.reshape(-1, num_positions))


def init(key: PRNGKey, data: PropensityData, **hparams) -> em.EMState:
    """The EM state of the ``Q·L`` pairs and ``K`` ranks of ``data``, every probability at ``init``."""
    values = hparams_with_defaults("propensity estimator 'pbm_em'", HPARAMS, OPTIONS, hparams)
    num_queries, num_docs, num_positions = data.counts.clicks.shape
    return em.init(CELL_PBM, key, num_queries * num_docs, num_positions, **values, dtype=jnp.float32)


def step(key: PRNGKey, state: em.EMState, data: PropensityData) -> tuple[em.EMState, em.EMInfo]:
    """One EM iteration (``jaxrank.click_models.em.em_step``) on the cells of ``data``."""
    del key  # EM is deterministic
    return em.em_step(CELL_PBM, state, _cells(data))


def propensities(state: em.EMState) -> Array:
    """``[K]`` ``θ_k / θ_1`` of the fitted examination."""
    theta = jax.nn.sigmoid(state.params.examination)
    return theta / theta[0]


def make() -> PropensityEstimator:
    return PropensityEstimator(init, step, propensities)


def pbm_em(clicks: Array, displays: Array, num_iterations: int = NUM_ITERATIONS) -> pbm.PBMParams:
    """The PBM fitted by ``num_iterations`` EM iterations (``run_em``) on ``[P, K]`` cell counts (logits)."""
    state = em.init(CELL_PBM, None, *clicks.shape, dtype=clicks.dtype)
    return em.run_em(CELL_PBM, state, CellLog(clicks, displays), num_iterations)[0].params


def pbm_examination(log: SessionLog, *, num_iterations: int = NUM_ITERATIONS, num_pairs=None) -> Array:
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


def pbm_propensities(log: SessionLog, *, num_iterations: int = NUM_ITERATIONS, num_pairs=None) -> Array:
    """``[K]`` ``θ_k / θ_1`` of the PBM fitted to ``log``."""
    theta = pbm_examination(log, num_iterations=num_iterations, num_pairs=num_pairs)
    return theta / theta[0]
