"""Document-based click-through-rate model (DCTR; Chuklin, Markov, de Rijke, *Click Models for Web
Search*, 2015, ch. 3 "Click-through rate models"; PyClick's ``DCTR``).

A shown (query, document) pair is clicked with probability ``ρ_qd`` whatever its position. Fitted by
counting per pair (maximum likelihood, ch. 4); the relevance estimate is ``ρ_qd``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, log_probs, observed, pair_sum, shown_log_probs)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "counting"


class DCTRParams(NamedTuple):
    ctr: Array  # [P] logit ρ_qd


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> DCTRParams:
    check_sizes(num_pairs, num_positions)
    return DCTRParams(filled((num_pairs,), prob, dtype))


def click_log_probs(params: DCTRParams, log: SessionLog) -> Array:
    return shown_log_probs(log_probs(params.ctr[log.pair])[0], log.mask)


def click_probs(params: DCTRParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def conditional_log_probs(params: DCTRParams, log: SessionLog) -> Array:
    return observed(click_log_probs(params, log), log.clicks, log.mask)


def relevance(params: DCTRParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.ctr[pairs])


def sample(key: PRNGKey, params: DCTRParams, pairs: Array, mask: Array) -> Array:
    return mask & (jax.random.uniform(key, jnp.shape(mask)) < jax.nn.sigmoid(params.ctr[pairs]))


def statistics(params: DCTRParams, log: SessionLog) -> Statistics:
    size = params.ctr.shape[0]
    return Statistics(DCTRParams(pair_sum(log.clicks.astype(params.ctr.dtype), log.pair, log.mask, size)),
                      DCTRParams(pair_sum(jnp.ones(log.mask.shape, params.ctr.dtype), log.pair, log.mask, size)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("dctr", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, chunk_size=chunk_size)
