"""Rank-based click-through-rate model (RCTR; Chuklin, Markov, de Rijke, *Click Models for Web Search*,
2015, ch. 3 "Click-through rate models"; PyClick's ``RCTR``).

Position ``r`` is clicked with probability ``ρ_r``, independently of the document. Fitted by counting
per position (maximum likelihood, ch. 4). It cannot tell documents apart, so its relevance estimate is 0 for every
pair (as PyClick's ``predict_relevance``).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, log_probs, observed, rank_sum, rank_table, shown_log_probs, spread)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "counting"


class RCTRParams(NamedTuple):
    ctr: Array  # [K] logit ρ_r


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> RCTRParams:
    check_sizes(num_pairs, num_positions)
    return RCTRParams(filled((num_positions,), prob, dtype))


def click_log_probs(params: RCTRParams, log: SessionLog) -> Array:
    log_ctr = log_probs(rank_table(params.ctr, log.mask.shape[-1]))[0]
    return shown_log_probs(spread(log_ctr, log.mask.shape), log.mask)


def click_probs(params: RCTRParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def conditional_log_probs(params: RCTRParams, log: SessionLog) -> Array:
    return observed(click_log_probs(params, log), log.clicks, log.mask)


def relevance(params: RCTRParams, pairs: Array) -> Array:
    return jnp.zeros(jnp.shape(pairs), params.ctr.dtype)


def sample(key: PRNGKey, params: RCTRParams, pairs: Array, mask: Array) -> Array:
    ctr = jax.nn.sigmoid(rank_table(params.ctr, jnp.shape(mask)[-1]))
    return mask & (jax.random.uniform(key, jnp.shape(mask)) < ctr)


def statistics(params: RCTRParams, log: SessionLog) -> Statistics:
    size = params.ctr.shape[0]
    return Statistics(RCTRParams(rank_sum(log.clicks.astype(params.ctr.dtype), log.mask, size)),
                      RCTRParams(rank_sum(jnp.ones(log.mask.shape, params.ctr.dtype), log.mask, size)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("rctr", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, chunk_size=chunk_size)
