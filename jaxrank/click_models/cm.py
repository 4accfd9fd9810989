"""Cascade model (CM; Craswell, Zoeter, Taylor, Ramsey, WSDM 2008; Chuklin, Markov, de Rijke, *Click
Models for Web Search*, 2015, ch. 3 "Cascade model"; PyClick's ``CM``).

The user scans from the top, clicks the first attractive document (``α_qd``) and stops: the chain of
``jaxrank.click_models.chain`` with ``k⁰ = 1`` and no continuation after a click, so
``P(C_r = 1) = α_r Π_{i<r} (1 - α_i)``.

A click below the first one has probability 0 under the model; its conditional probability is
floored at ``MIN_PROB`` (PyClick's ``CM.PROB_MIN``), so logs with several clicks per session keep a
finite likelihood; no click there has probability ``1 - MIN_PROB`` (as CLAX).

PyClick's ``CM.get_conditional_click_probs`` scores a session differently (``pyclick_conditional_log_probs``,
the ``conventions="pyclick"`` of ``jaxrank.click_models.metrics``): at and above the first click (every
position of a session without clicks) it takes the *unconditional* ``P(C_r = 1) = α_r Π_{i<r} (1 - α_i)``
where the model's conditional is ``α_r``, and below the first click it gives ``PROB_MIN`` to the observed
outcome, clicked or not. Its log-likelihood is therefore far below the model's (a skip below a click
costs ``log 10⁻⁶ ≈ -13.8``), and CM rows of PyClick-based tables compare only under that rule.

Fitted by counting (maximum likelihood, ch. 4): every position up to and including the first click
(all of them in a session without clicks) was examined, so ``α = (1 + #clicks) / (2 + #examined)``
over those positions (PyClick's ``CMAttrMLE``). The relevance estimate is ``α``.
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import chain
from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       clicks_before, filled, log_probs, observed, pair_sum, shown_log_probs)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "counting"
MIN_PROB = 1e-6  # the floor of P(C_r = 1 | a click above), PyClick's CM.PROB_MIN


class CMParams(NamedTuple):
    attraction: Array  # [P] logit α_qd


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> CMParams:
    check_sizes(num_pairs, num_positions)
    return CMParams(filled((num_pairs,), prob, dtype))


def _chain(params: CMParams, pairs: Array, mask: Array) -> chain.Chain:
    log_attr, log_not_attr = log_probs(params.attraction[pairs])
    return chain.make_chain(log_attr, log_not_attr, 0.0, (0.0,), (-jnp.inf,), mask)


def conditional_log_probs(params: CMParams, log: SessionLog) -> Array:
    log_click = chain.conditional(_chain(params, log.pair, log.mask), log.clicks)
    log_click = jnp.where(clicks_before(log.clicks) > 0, math.log(MIN_PROB), log_click)
    return observed(log_click, log.clicks, log.mask)


def pyclick_conditional_log_probs(params: CMParams, log: SessionLog) -> Array:
    """``[S, K]`` PyClick's ``CM.get_conditional_click_probs`` (as logs; 0 on padding): at rank ``r`` at or
    above the first click, ``log P(C_r = c_r)`` with the unconditional ``P(C_r = 1) = α_r Π_{i<r} (1 - α_i)``;
    below it, ``log MIN_PROB`` whether clicked or not."""
    log_attr, log_not_attr = log_probs(params.attraction[log.pair])
    log_not_attr = jnp.where(log.mask, log_not_attr, 0.0)
    log_exam = jnp.cumsum(log_not_attr, axis=-1) - log_not_attr  # log Π_{i<r} (1 - α_i)
    scored = observed(log_attr + log_exam, log.clicks, log.mask)
    return jnp.where(log.mask & (clicks_before(log.clicks) > 0), math.log(MIN_PROB), scored)


def click_log_probs(params: CMParams, log: SessionLog) -> Array:
    return shown_log_probs(chain.unconditional(_chain(params, log.pair, log.mask)), log.mask)


def click_probs(params: CMParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def relevance(params: CMParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs])


def sample(key: PRNGKey, params: CMParams, pairs: Array, mask: Array) -> Array:
    return chain.sample(key, _chain(params, pairs, mask))


def statistics(params: CMParams, log: SessionLog) -> Statistics:
    examined = log.mask & (clicks_before(log.clicks) == 0)
    dtype = params.attraction.dtype
    size = params.attraction.shape[0]
    return Statistics(CMParams(pair_sum(log.clicks.astype(dtype), log.pair, examined, size)),
                      CMParams(pair_sum(jnp.ones(log.mask.shape, dtype), log.pair, examined, size)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("cm", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, chunk_size=chunk_size)
