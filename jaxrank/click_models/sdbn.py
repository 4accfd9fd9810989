"""Simplified dynamic Bayesian network model (SDBN; Chapelle & Zhang, WWW 2009; Chuklin, Markov, de
Rijke, *Click Models for Web Search*, 2015, ch. 3 "Dynamic Bayesian network model"; PyClick's
``SDBN``).

DBN (``jaxrank.click_models.dbn``) with continuation ``γ = 1``: the user goes on after no click, and
after a click stops iff satisfied (``σ_qd``).

Fitted by counting (ch. 4; PyClick's ``SDBNAttrMLE``, ``SDBNSatMLE``): with ``γ = 1`` every position
down to the last click was examined, and the last click (only it) satisfied the user. So ``α``
counts clicks over the positions ``r <= last click`` (all positions without clicks) and ``σ`` counts,
over a pair's clicks, those that are the session's last. The relevance estimate is ``α σ``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import chain
from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, last_click, log_probs, pair_sum, shown_log_probs)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "counting"


class SDBNParams(NamedTuple):
    attraction: Array  # [P] logit α_qd
    satisfaction: Array  # [P] logit σ_qd


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> SDBNParams:
    check_sizes(num_pairs, num_positions)
    return SDBNParams(filled((num_pairs,), prob, dtype), filled((num_pairs,), prob, dtype))


def _chain(params: SDBNParams, pairs: Array, mask: Array) -> chain.Chain:
    log_attr, log_not_attr = log_probs(params.attraction[pairs])
    log_sat, log_not_sat = log_probs(params.satisfaction[pairs])
    # After a click: satisfied (stop) or not (go on with γ = 1).
    return chain.make_chain(log_attr, log_not_attr, 0.0, (log_sat, log_not_sat), (-jnp.inf, 0.0), mask)


def conditional_log_probs(params: SDBNParams, log: SessionLog) -> Array:
    return chain.observed(_chain(params, log.pair, log.mask), log.clicks, log.mask)


def click_log_probs(params: SDBNParams, log: SessionLog) -> Array:
    return shown_log_probs(chain.unconditional(_chain(params, log.pair, log.mask)), log.mask)


def click_probs(params: SDBNParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def relevance(params: SDBNParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs]) * jax.nn.sigmoid(params.satisfaction[pairs])


def sample(key: PRNGKey, params: SDBNParams, pairs: Array, mask: Array) -> Array:
    return chain.sample(key, _chain(params, pairs, mask))


def statistics(params: SDBNParams, log: SessionLog) -> Statistics:
    dtype = params.attraction.dtype
    ranks = jnp.arange(log.mask.shape[-1])
    last = last_click(log.clicks, log.mask)[..., None]
    examined = log.mask & (ranks <= last)
    clicked = log.clicks & log.mask
    ones = jnp.ones(log.mask.shape, dtype)
    size = params.attraction.shape[0]
    return Statistics(
        SDBNParams(pair_sum(log.clicks.astype(dtype), log.pair, examined, size),
                   pair_sum((ranks == last).astype(dtype), log.pair, clicked, size)),
        SDBNParams(pair_sum(ones, log.pair, examined, size), pair_sum(ones, log.pair, clicked, size)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("sdbn", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, chunk_size=chunk_size)
