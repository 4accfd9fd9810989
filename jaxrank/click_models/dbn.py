"""Dynamic Bayesian network model (DBN; Chapelle & Zhang, WWW 2009; Chuklin, Markov, de Rijke, *Click
Models for Web Search*, 2015, ch. 3 "Dynamic Bayesian network model", EM in ch. 4; PyClick's ``DBN``).

The user examines position 0; an examined document attracts with ``α_qd`` (a click), a clicked one
satisfies with ``σ_qd``; a satisfied user stops, any other goes on with ``γ`` (the chain of
``jaxrank.click_models.chain`` with ``k⁰ = γ`` and, after a click, the branches "satisfied"
(``P = σ``, ``k = 0``) and "not satisfied" (``P = 1 - σ``, ``k = γ``)).

EM with the exact posteriors of the chain (``chain.posterior``, in probability space from the last
click: above it every position is examined and every click unsatisfied). The latent
variables are ``A_r`` at every shown position, ``S_r`` at every click and ``E_{r+1}`` after every
examined, unsatisfied position that has a position below it; each is a Bernoulli trial of its
parameter, so per iteration

* ``α``: ``Σ P(A_r = 1 | C)`` over the pair's positions (1 if clicked, else ``α P(E_r = 0 | C)``)
  over their number;
* ``σ``: ``Σ P(S_r = 1 | C)`` over the pair's clicks over their number;
* ``γ``: ``Σ P(E_r = 1, S_r = 0, E_{r+1} = 1 | C)`` over ``Σ P(E_r = 1, S_r = 0 | C)``.

PyClick's updates are closed forms of the same posteriors for ``α`` and ``σ``, but use the
unconditional ``P(E_r = 1)`` where the posterior needs ``P(E_r = 1 | C_<r)`` below the last click,
and count the continuation after the last position too. Two defects of its EM cost more
(``docs/guide.md``, "Click models"): ``get_last_click_rank()`` is the session's length for a session
without clicks, so such a session adds nothing to ``α``'s numerator and never stops in ``γ``'s
update; and ``_get_tail_clicks`` scores the positions below ``start_rank`` with the top positions'
parameters in ``γ``'s update. On a generated log of a DBN user (``docs/results.md``: 400 training
sessions, 28.5% without a click) PyClick's DBN reaches test LL −0.3398 after 50 iterations, this one
−0.3087, PyClick's with both defects switched off −0.3098 (nearly all of the gap is the first). The
relevance estimate is ``α σ``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import chain
from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, gather_rows, log_probs, pair_sum, shown_log_probs, spread, total)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "em"


class DBNParams(NamedTuple):
    attraction: Array  # [P] logit α_qd
    satisfaction: Array  # [P] logit σ_qd
    continuation: Array  # [] logit γ


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> DBNParams:
    check_sizes(num_pairs, num_positions)
    return DBNParams(filled((num_pairs,), prob, dtype), filled((num_pairs,), prob, dtype), filled((), prob, dtype))


def _chain(params: DBNParams, pairs: Array, mask: Array) -> chain.Chain:
    log_attr, log_not_attr = log_probs(params.attraction[pairs])
    log_sat, log_not_sat = log_probs(params.satisfaction[pairs])
    log_gamma = log_probs(params.continuation)[0]
    return chain.make_chain(log_attr, log_not_attr, log_gamma, (log_sat, log_not_sat), (-jnp.inf, log_gamma), mask)


def conditional_log_probs(params: DBNParams, log: SessionLog) -> Array:
    return chain.observed(_chain(params, log.pair, log.mask), log.clicks, log.mask)


def session_log_probs(params: DBNParams, log: SessionLog) -> Array:
    """``[S]`` ``log P(C)`` of each session in closed form (the sum of ``conditional_log_probs``; the
    gradient fit's objective, without a pass per position).

    Every position up to the last click ``l`` is examined and every click above ``l`` unsatisfied, so
    ``log P(C) = Σ_{r ≤ l} log P(A_r = c_r) + Σ_{r < l} (c_r log(1 - σ_r) + log γ)
    + log(σ_l + (1 - σ_l)(1 - γ + γ u_{l+1}))``, with ``u_r = P(no click at ≥ r | E_r = 1)
    = (1 - α_r)(1 - γ + γ u_{r+1})`` and ``u_n = 1`` below the ``n`` shown positions; without a click,
    ``log P(C) = log u_0``. With ``Λ_j = Σ_{i ≤ j} log((1 - α_i) γ)`` (one cumulative sum) the recursion
    unrolls to ``u_{l+1} = Σ_{l < j < n} e^{Λ_j - Λ_l} (1 - γ) / γ + e^{Λ_{n-1} - Λ_l}``, a ``logsumexp``.
    """
    clicks, mask = log.clicks, log.mask
    shape = mask.shape
    tables = [jax.nn.log_sigmoid(sign * x) for x in (params.attraction, params.satisfaction) for sign in (1, -1)]
    log_attr, log_not_attr, log_sat, log_not_sat = gather_rows(tables, log.pair)
    # spread: gathers, so that γ's gradient is a scatter-add in the sessions' order (see base.spread)
    log_gamma, log_not_gamma = (spread(x, shape) for x in log_probs(params.continuation))
    ranks = jnp.arange(shape[-1])
    last = jnp.max(jnp.where(clicks, ranks, -1), axis=-1, keepdims=True)  # [S, 1], -1 without a click
    at_last = ranks == last
    head = (jnp.where(ranks <= last, jnp.where(clicks, log_attr, log_not_attr), 0.0)
            + jnp.where(ranks < last, jnp.where(clicks, log_not_sat, 0.0) + log_gamma, 0.0))
    cum = jnp.cumsum(jnp.where(mask, log_not_attr + log_gamma, 0.0), axis=-1)  # Λ_j (padding adds 0)
    cum_last = jnp.sum(jnp.where(at_last, cum, 0.0), axis=-1)  # Λ_l (0 without a click)
    below = jnp.where(mask & (ranks > last), cum - cum_last[:, None] + log_not_gamma - log_gamma, -jnp.inf)
    log_u = jnp.logaddexp(jax.nn.logsumexp(below, axis=-1), cum[:, -1] - cum_last)  # log u_{l+1}
    at = lambda x: jnp.sum(jnp.where(at_last, x, 0.0), axis=-1)  # noqa: E731  (the value at l)
    after_last = jnp.logaddexp(at(log_sat),
                               at(log_not_sat) + jnp.logaddexp(log_not_gamma[:, 0], log_gamma[:, 0] + log_u))
    return jnp.sum(head, axis=-1) + jnp.where(last[:, 0] >= 0, after_last, log_u)


def click_log_probs(params: DBNParams, log: SessionLog) -> Array:
    return shown_log_probs(chain.unconditional(_chain(params, log.pair, log.mask)), log.mask)


def click_probs(params: DBNParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def relevance(params: DBNParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs]) * jax.nn.sigmoid(params.satisfaction[pairs])


def sample(key: PRNGKey, params: DBNParams, pairs: Array, mask: Array) -> Array:
    return chain.sample(key, _chain(params, pairs, mask))


def _probs(params: DBNParams, pair: Array, mask: Array) -> chain.Probs:
    """The chain in probability space (the E-step's form): one gather of ``(α, 1 - α, σ, 1 - σ)`` rows."""
    tables = [jax.nn.sigmoid(sign * x) for x in (params.attraction, params.satisfaction) for sign in (1, -1)]
    attr, not_attr, sat, not_sat = gather_rows(tables, pair)
    gamma, not_gamma = jax.nn.sigmoid(params.continuation), jax.nn.sigmoid(-params.continuation)
    zero = jnp.zeros((), gamma.dtype)
    return chain.make_probs(attr, not_attr, gamma, not_gamma, (sat, not_sat), (zero, gamma), (1.0 - zero, not_gamma),
                            mask)


def counts(params: DBNParams, log: SessionLog) -> Statistics:
    """What does not depend on the parameters: a click is an attraction, every position a trial of ``α``,
    every click one of ``σ``."""
    dtype, size = params.attraction.dtype, params.attraction.shape[0]
    ones = jnp.ones(log.mask.shape, dtype)
    clicked = log.clicks & log.mask
    zero = jnp.zeros((size,), dtype)
    return Statistics(DBNParams(pair_sum(ones, log.pair, clicked, size), zero, jnp.zeros((), dtype)),
                      DBNParams(pair_sum(ones, log.pair, log.mask, size), pair_sum(ones, log.pair, clicked, size),
                                jnp.zeros((), dtype)))


def statistics(params: DBNParams, log: SessionLog) -> Statistics:
    """The rest of the E-step (``counts`` adds the part that does not depend on the parameters)."""
    pair, clicks, mask = log.pair.T, log.clicks.T, log.mask.T  # positions first: see chain.posterior
    probs = _probs(params, pair, mask)
    post = chain.posterior(probs, clicks)
    attr = probs.attr * post.not_examined  # P(A_r = 1 | C) off the clicks (0 above the last click)
    satisfied, unsatisfied = post.branch
    _, unsatisfied_cont = post.branch_cont
    has_next = chain.has_next(mask)
    size = params.attraction.shape[0]
    # α's numerator off the clicks and σ's on them: one segment sum over [α | σ] (each is 0 where the other is not).
    both = pair_sum(attr + satisfied, pair + size * clicks, mask, 2 * size)
    return Statistics(
        DBNParams(both[:size], both[size:], total(post.skip_cont + unsatisfied_cont, has_next)),
        DBNParams(jnp.zeros_like(both[:size]), jnp.zeros_like(both[:size]), total(post.skip + unsatisfied, has_next)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("dbn", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, counts, session_log_probs, chunk_size=chunk_size)
