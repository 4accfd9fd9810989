"""Global click-through-rate model (GCTR, also the random click model; Chuklin, Markov, de Rijke,
*Click Models for Web Search*, 2015, ch. 3 "Random click model"; PyClick's ``GCTR``).

Every shown position is clicked with one probability ``ρ``, independently: ``P(C_r = 1) = ρ``.
Fitted by counting (maximum likelihood, ch. 4): ``ρ = (1 + #clicks) / (2 + #shown positions)`` with PyClick's
pseudo-counts. Its relevance estimate is ``ρ`` for every pair.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, log_probs, observed, shown_log_probs, spread, total)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "counting"


class GCTRParams(NamedTuple):
    ctr: Array  # [] logit ρ


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> GCTRParams:
    check_sizes(num_pairs, num_positions)
    return GCTRParams(filled((), prob, dtype))


def click_log_probs(params: GCTRParams, log: SessionLog) -> Array:
    return shown_log_probs(spread(log_probs(params.ctr)[0], log.mask.shape), log.mask)


def click_probs(params: GCTRParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def conditional_log_probs(params: GCTRParams, log: SessionLog) -> Array:
    return observed(click_log_probs(params, log), log.clicks, log.mask)


def relevance(params: GCTRParams, pairs: Array) -> Array:
    return jnp.broadcast_to(jax.nn.sigmoid(params.ctr), jnp.shape(pairs))


def sample(key: PRNGKey, params: GCTRParams, pairs: Array, mask: Array) -> Array:
    return mask & (jax.random.uniform(key, jnp.shape(mask)) < jax.nn.sigmoid(params.ctr))


def statistics(params: GCTRParams, log: SessionLog) -> Statistics:
    return Statistics(GCTRParams(total(log.clicks.astype(params.ctr.dtype), log.mask)),
                      GCTRParams(total(jnp.ones(log.mask.shape, params.ctr.dtype), log.mask)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("gctr", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, chunk_size=chunk_size)
