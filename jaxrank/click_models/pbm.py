"""Position-based model (PBM; Richardson, Dominowska, Ragno, WWW 2007; Craswell et al., WSDM 2008;
Chuklin, Markov, de Rijke, *Click Models for Web Search*, 2015, ch. 3 "Position-based model", EM in
ch. 4; PyClick's ``PBM``).

Position ``r`` is examined with ``ε_r``, the pair shown there attracts with ``α_qd``, independently,
and a click happens iff both: ``P(C_r = 1) = ε_r α_qd``, the same with or without the clicks above.

EM (fitted by ``jaxrank.click_models.fit_em``): with ``c`` the observed click at ``r``, the posteriors
are ``P(A = 1 | c) = 1`` if clicked, else ``α (1 - ε) / (1 - α ε)``, and ``P(E = 1 | c) = 1`` if
clicked, else ``ε (1 - α) / (1 - α ε)``; each shown position adds its posterior to the numerator and
1 to the denominator of its pair's ``α`` and its rank's ``ε`` (PyClick's ``PBMAttrEM``/``PBMExamEM``).
The relevance estimate is ``α``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, gather_rows, log1mexp, observed, pair_sum, rank_sum, rank_table,
                                       shown_log_probs, spread)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "em"


class PBMParams(NamedTuple):
    attraction: Array  # [P] logit α_qd
    examination: Array  # [K] logit ε_r


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> PBMParams:
    check_sizes(num_pairs, num_positions)
    return PBMParams(filled((num_pairs,), prob, dtype), filled((num_positions,), prob, dtype))


def click_log_probs(params: PBMParams, log: SessionLog) -> Array:
    # logarithms of the tables, then gathers: O(P + K) logarithms, not two per position
    log_attr = jax.nn.log_sigmoid(params.attraction)[log.pair]
    log_exam = spread(jax.nn.log_sigmoid(rank_table(params.examination, log.mask.shape[-1])), log.mask.shape)
    return shown_log_probs(log_attr + log_exam, log.mask)


def click_probs(params: PBMParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def conditional_log_probs(params: PBMParams, log: SessionLog) -> Array:
    # Positions are independent: conditioning on the clicks above changes nothing.
    return observed(click_log_probs(params, log), log.clicks, log.mask)


def relevance(params: PBMParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs])


def sample(key: PRNGKey, params: PBMParams, pairs: Array, mask: Array) -> Array:
    u_exam, u_attr = jax.random.uniform(key, (2,) + jnp.shape(mask))
    exam = jax.nn.sigmoid(rank_table(params.examination, jnp.shape(mask)[-1]))
    return mask & (u_exam < exam) & (u_attr < jax.nn.sigmoid(params.attraction[pairs]))


def skip_posteriors(log_attr, log_not_attr, log_exam, log_not_exam) -> tuple[Array, Array]:
    """``(P(A = 1 | C = 0), P(E = 1 | C = 0))``: ``α (1 - ε) / (1 - α ε)`` and ``ε (1 - α) / (1 - α ε)``
    from the log-probabilities (broadcast together)."""
    log_no_click = log1mexp(log_attr + log_exam)
    return jnp.exp(log_attr + log_not_exam - log_no_click), jnp.exp(log_exam + log_not_attr - log_no_click)


def _probs(params: PBMParams, pairs: Array, num_positions: int):
    """``(α, 1 - α, ε, 1 - ε)`` per position in probability space (the E-step's form): the sigmoids
    of the ``[P]`` and ``[K]`` tables, then one gather of ``(α, 1 - α)`` rows; no logarithm per position."""
    tables = [jax.nn.sigmoid(sign * params.attraction) for sign in (1, -1)]
    attr, not_attr = gather_rows(tables, pairs)
    exam = rank_table(params.examination, num_positions)
    return attr, not_attr, jax.nn.sigmoid(exam), jax.nn.sigmoid(-exam)


def counts(params: PBMParams, log: SessionLog) -> Statistics:
    """What does not depend on the parameters: a click is an attraction and an examination, every
    shown position a trial of its pair's ``α`` and its rank's ``ε``."""
    dtype = params.attraction.dtype
    num_pairs, num_positions = params.attraction.shape[0], params.examination.shape[0]
    ones = jnp.ones(log.mask.shape, dtype)
    clicked = log.clicks & log.mask
    return Statistics(
        PBMParams(pair_sum(ones, log.pair, clicked, num_pairs), rank_sum(ones, clicked, num_positions)),
        PBMParams(pair_sum(ones, log.pair, log.mask, num_pairs), rank_sum(ones, log.mask, num_positions)))


def statistics(params: PBMParams, log: SessionLog) -> Statistics:
    """The rest of the E-step (``counts`` adds the part that does not depend on the parameters): the
    skipped positions' posteriors ``α (1 - ε) / (1 - α ε)`` and ``ε (1 - α) / (1 - α ε)``, with
    ``1 - α ε = (1 - α) + α (1 - ε)`` (a sum of two non-negative terms: no cancellation near 1)."""
    attr, not_attr, exam, not_exam = _probs(params, log.pair, log.mask.shape[-1])
    attr_not_exam = attr * not_exam
    no_click = not_attr + attr_not_exam
    skipped = log.mask & ~log.clicks
    num_pairs, num_positions = params.attraction.shape[0], params.examination.shape[0]
    attr_sum = pair_sum(attr_not_exam / no_click, log.pair, skipped, num_pairs)
    exam_sum = rank_sum(exam * not_attr / no_click, skipped, num_positions)
    return Statistics(PBMParams(attr_sum, exam_sum), PBMParams(jnp.zeros_like(attr_sum), jnp.zeros_like(exam_sum)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("pbm", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, counts, chunk_size=chunk_size)
