"""Dependent click model (DCM; Guo, Liu, Wang, WSDM 2009; Chuklin, Markov, de Rijke, *Click Models for
Web Search*, 2015, ch. 3 "Dependent click model"; PyClick's ``DCM``).

A cascade in which the user goes on after a click at rank ``r`` with probability ``λ_r`` (and always
after no click): the chain of ``jaxrank.click_models.chain`` with ``k⁰ = 1`` and one branch after a
click with ``k = λ_r``.

Fitted by counting under the book's simplifying assumption (ch. 4, PyClick's ``DCMAttrMLE``,
``DCMContMLE``): the user examined every position down to the last click and stopped there
satisfied (a session without clicks was examined to the end). So ``α`` counts clicks over the
positions ``r <= last click``, and ``λ_r`` counts, over the clicks at rank ``r``, those that are not
the last click. The relevance estimate is ``α``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import chain
from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, last_click, log_probs, pair_sum, rank_sum, rank_table, shown_log_probs)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "counting"


class DCMParams(NamedTuple):
    attraction: Array  # [P] logit α_qd
    continuation: Array  # [K] logit λ_r, going on after a click at rank r


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> DCMParams:
    check_sizes(num_pairs, num_positions)
    return DCMParams(filled((num_pairs,), prob, dtype), filled((num_positions,), prob, dtype))


def _chain(params: DCMParams, pairs: Array, mask: Array) -> chain.Chain:
    log_attr, log_not_attr = log_probs(params.attraction[pairs])
    log_lambda = log_probs(rank_table(params.continuation, mask.shape[-1]))[0]
    return chain.make_chain(log_attr, log_not_attr, 0.0, (0.0,), (log_lambda,), mask)


def conditional_log_probs(params: DCMParams, log: SessionLog) -> Array:
    return chain.observed(_chain(params, log.pair, log.mask), log.clicks, log.mask)


def click_log_probs(params: DCMParams, log: SessionLog) -> Array:
    return shown_log_probs(chain.unconditional(_chain(params, log.pair, log.mask)), log.mask)


def click_probs(params: DCMParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def relevance(params: DCMParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs])


def sample(key: PRNGKey, params: DCMParams, pairs: Array, mask: Array) -> Array:
    return chain.sample(key, _chain(params, pairs, mask))


def statistics(params: DCMParams, log: SessionLog) -> Statistics:
    dtype = params.attraction.dtype
    ranks = jnp.arange(log.mask.shape[-1])
    last = last_click(log.clicks, log.mask)[..., None]
    examined = log.mask & (ranks <= last)
    clicked = log.clicks & log.mask
    ones = jnp.ones(log.mask.shape, dtype)
    num_pairs, num_positions = params.attraction.shape[0], params.continuation.shape[0]
    return Statistics(
        DCMParams(pair_sum(log.clicks.astype(dtype), log.pair, examined, num_pairs),
                  rank_sum((ranks != last).astype(dtype), clicked, num_positions)),
        DCMParams(pair_sum(ones, log.pair, examined, num_pairs), rank_sum(ones, clicked, num_positions)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("dcm", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, chunk_size=chunk_size)
