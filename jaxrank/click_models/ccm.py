"""Click chain model (CCM; Guo, Liu, Kannan, Minka, Taylor, Wang, Faloutsos, WWW 2009; Chuklin, Markov,
de Rijke, *Click Models for Web Search*, 2015, ch. 3 "Click chain model", EM in ch. 4; PyClick's
``CCM``).

The user examines position 0; an examined document attracts with ``α_qd`` (a click). After no click
the user goes on with ``τ₁``; after a click on a document that does not satisfy them with ``τ₂``, on
one that does with ``τ₃``, where a clicked document satisfies with the same ``α_qd`` (the model's one
relevance): ``P(E_{r+1} = 1 | C_r = 1) = τ₂ (1 - α) + τ₃ α``. This is the chain of
``jaxrank.click_models.chain`` with ``k⁰ = τ₁`` and the click branches "satisfied" (``P = α``,
``k = τ₃``) and "not satisfied" (``P = 1 - α``, ``k = τ₂``).

EM with the exact posteriors of the chain (``chain.posterior``). ``α`` is shared by the attraction
``A_r`` of every shown position and the satisfaction ``S_r`` of every click, so its numerator is
``Σ P(A_r = 1 | C) + Σ_clicks P(S_r = 1 | C)`` and its denominator the positions plus the clicks (as
PyClick's ``CCMAttrEM`` counts them); ``τ₁``, ``τ₂``, ``τ₃`` count ``E_{r+1} = 1`` over the examined
positions of their kind that have a position below. (PyClick's ``α`` update approximates the
satisfaction part as DBN's, counting it at the last click only, which assumes ``τ₃ = 0``.) PyClick's
EM also has DBN's two defects (``jaxrank.click_models.dbn``; ``docs/guide.md``, "Click models"): a
session without clicks adds nothing to ``α``'s numerator off the clicks and never stops, and
``_get_tail_clicks`` reads the top positions' parameters for the tail below ``start_rank`` in the
``τ`` updates. On a generated log of a DBN user (``docs/results.md``: 400 training sessions, 28.5%
without a click) PyClick's CCM reaches test LL −0.3423 after 50 iterations, this one −0.3077,
PyClick's with both defects switched off −0.3122 (nearly all of the gap is the first). The
relevance estimate is ``α²``: attractive and satisfying (PyClick's ``predict_relevance``).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import chain
from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, gather_rows, log_probs, pair_sum, shown_log_probs, total)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "em"


class CCMParams(NamedTuple):
    attraction: Array  # [P] logit α_qd (attraction and satisfaction)
    tau1: Array  # [] logit τ₁, going on after no click
    tau2: Array  # [] logit τ₂, going on after a click that did not satisfy
    tau3: Array  # [] logit τ₃, going on after a click that satisfied


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> CCMParams:
    check_sizes(num_pairs, num_positions)
    return CCMParams(filled((num_pairs,), prob, dtype), filled((), prob, dtype), filled((), prob, dtype),
                     filled((), prob, dtype))


def _chain(params: CCMParams, pairs: Array, mask: Array) -> chain.Chain:
    log_attr, log_not_attr = log_probs(params.attraction[pairs])
    log_tau1, log_tau2, log_tau3 = (log_probs(t)[0] for t in (params.tau1, params.tau2, params.tau3))
    return chain.make_chain(log_attr, log_not_attr, log_tau1, (log_attr, log_not_attr), (log_tau3, log_tau2), mask)


def conditional_log_probs(params: CCMParams, log: SessionLog) -> Array:
    return chain.observed(_chain(params, log.pair, log.mask), log.clicks, log.mask)


def click_log_probs(params: CCMParams, log: SessionLog) -> Array:
    return shown_log_probs(chain.unconditional(_chain(params, log.pair, log.mask)), log.mask)


def click_probs(params: CCMParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def relevance(params: CCMParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs]) ** 2


def sample(key: PRNGKey, params: CCMParams, pairs: Array, mask: Array) -> Array:
    return chain.sample(key, _chain(params, pairs, mask))


def _probs(params: CCMParams, pair: Array, mask: Array) -> chain.Probs:
    """The chain in probability space (the E-step's form)."""
    attr, not_attr = gather_rows([jax.nn.sigmoid(params.attraction), jax.nn.sigmoid(-params.attraction)], pair)
    (tau1, tau2, tau3), (stop1, stop2, stop3) = ([jax.nn.sigmoid(sign * t) for t in (params.tau1, params.tau2,
                                                                                    params.tau3)] for sign in (1, -1))
    return chain.make_probs(attr, not_attr, tau1, stop1, (attr, not_attr), (tau3, tau2), (stop3, stop2), mask)


def counts(params: CCMParams, log: SessionLog) -> Statistics:
    """What does not depend on the parameters: a click is an attraction, every position one trial of ``α``
    and every click a second one."""
    dtype, size = params.attraction.dtype, params.attraction.shape[0]
    ones = jnp.ones(log.mask.shape, dtype)
    clicked = log.clicks & log.mask
    zero = jnp.zeros((), dtype)
    return Statistics(CCMParams(pair_sum(ones, log.pair, clicked, size), zero, zero, zero),
                      CCMParams(pair_sum(1.0 + clicked.astype(dtype), log.pair, log.mask, size), zero, zero, zero))


def statistics(params: CCMParams, log: SessionLog) -> Statistics:
    """The rest of the E-step (``counts`` adds the part that does not depend on the parameters)."""
    pair, clicks, mask = log.pair.T, log.clicks.T, log.mask.T  # positions first: see chain.posterior
    probs = _probs(params, pair, mask)
    post = chain.posterior(probs, clicks)
    satisfied, unsatisfied = post.branch
    satisfied_cont, unsatisfied_cont = post.branch_cont
    attr = satisfied + probs.attr * post.not_examined  # P(S_r = 1 | C) on clicks, P(A_r = 1 | C) elsewhere
    has_next = chain.has_next(mask)
    size = params.attraction.shape[0]
    return Statistics(
        CCMParams(pair_sum(attr, pair, mask, size), total(post.skip_cont, has_next),
                  total(unsatisfied_cont, has_next), total(satisfied_cont, has_next)),
        CCMParams(jnp.zeros((size,), params.attraction.dtype), total(post.skip, has_next),
                  total(unsatisfied, has_next), total(satisfied, has_next)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("ccm", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, counts, chunk_size=chunk_size)
