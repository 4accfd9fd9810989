"""The examination chain shared by the cascade family: CM, DCM, CCM, DBN and SDBN (Chuklin, Markov,
de Rijke, *Click Models for Web Search*, 2015, ch. 3).

The user examines position 0. At an examined position ``r`` they click iff the document attracts
them (``α_r``). After no click they examine ``r + 1`` with probability ``k⁰_r``; after a click a
latent branch ``b`` is drawn with ``P(b)`` (DBN's and CCM's satisfaction) and they examine
``r + 1`` with ``k_b``. Once a position is not examined, none below is. A model is this chain with
its own ``α``, ``k⁰`` and branches (``Chain``); padded positions are made transparent (never
attractive, always passed), so a session shorter than ``K`` behaves as if the list ended there.

Everything is in log space over the last axis (positions), with any batch axes in front:

* ``log_examination``: the filter ``ε_r = P(E_r = 1 | C_<r)``: ``ε_0 = 1``; after a click
  ``ε_{r+1} = Σ_b P(b) k_b``; after none ``ε_{r+1} = ε_r (1 - α_r) k⁰_r / (1 - ε_r α_r)``; then
  ``P(C_r = 1 | C_<r) = ε_r α_r`` (the book's conditional click probabilities);
* ``unconditional``: ``P(E_{r+1} = 1) = P(E_r = 1) (α_r Σ_b P(b) k_b + (1 - α_r) k⁰_r)``;
* ``posterior``: forward–backward over the ≤ 10 positions: with ``β_r = P(C_≥r | E_r = 1)`` and
  ``z_r = 1[no click at ≥ r] = P(C_≥r | E_r = 0)``, every posterior of the E-step is
  ``ε_r · (the factors of one step) · (β_{r+1} or z_{r+1}) / P(C_≥r | C_<r)``;
* ``sample``: all uniforms at once; examination is the exclusive cumulative product of "continued".
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import log1mexp, spread
from jaxrank.types import Array, PRNGKey


class Chain(NamedTuple):
    """One or many sessions' chain factors, positions on the last axis (``[..., K]``)."""

    log_attr: Array  # [..., K] log α_r, -inf on padding
    log_not_attr: Array  # [..., K] log(1 - α_r), 0 on padding
    log_skip_cont: Array  # [..., K] log k⁰_r = log P(E_{r+1} = 1 | E_r = 1, C_r = 0), 0 on padding
    log_branch: tuple  # B x [..., K] log P(b | C_r = 1) (they sum to 1)
    log_branch_cont: tuple  # B x [..., K] log k_b = log P(E_{r+1} = 1 | E_r = 1, C_r = 1, b)


class Posterior(NamedTuple):
    """Posteriors of one E-step given all clicks of the session, ``[..., K]`` each."""

    not_examined: Array  # P(E_r = 0 | C)
    skip: Array  # P(E_r = 1, C_r = 0 | C): 0 on clicked positions
    skip_cont: Array  # P(E_r = 1, C_r = 0, E_{r+1} = 1 | C)
    branch: tuple  # B x P(C_r = 1, b | C): 0 on positions without a click
    branch_cont: tuple  # B x P(C_r = 1, b, E_{r+1} = 1 | C)


def make_chain(log_attr, log_not_attr, log_skip_cont, log_branch, log_branch_cont, mask) -> Chain:
    """A ``Chain`` with every factor broadcast to ``mask``'s shape and padding made transparent."""
    shape = mask.shape
    full = lambda x: spread(x, shape)  # noqa: E731  (a gather: see base.spread)
    return Chain(
        jnp.where(mask, full(log_attr), -jnp.inf),
        jnp.where(mask, full(log_not_attr), 0.0),
        jnp.where(mask, full(log_skip_cont), 0.0),
        tuple(full(w) for w in log_branch),
        tuple(full(k) for k in log_branch_cont),
    )


def _log_sum(terms):
    """``log Σ exp(t)`` of a few same-shaped arrays (pairwise ``logaddexp``: no stacking, no max pass)."""
    return functools.reduce(jnp.logaddexp, terms)


def log_click_cont(chain: Chain) -> Array:
    """``[..., K]`` ``log Σ_b P(b) k_b``: examining the next position after a click."""
    return _log_sum([w + k for w, k in zip(chain.log_branch, chain.log_branch_cont)])


def _scan(step, init, xs, reverse=False):
    """``lax.scan`` over the last axis of every leaf of ``xs``; outputs get it back as their last axis."""
    xs = jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), xs)
    _, ys = jax.lax.scan(step, init, xs, reverse=reverse)
    return jax.tree.map(lambda y: jnp.moveaxis(y, 0, -1), ys)


def log_examination(chain: Chain, clicks: Array) -> Array:
    """``[..., K]`` ``log ε_r = log P(E_r = 1 | C_<r)`` given the observed clicks (the filter)."""

    def step(log_eps, x):
        log_attr, log_not_attr, log_skip, log_click, click = x
        denominator = log1mexp(log_eps + log_attr)  # log P(C_r = 0 | C_<r)
        after_skip = jnp.where(denominator > -jnp.inf, log_eps + log_not_attr + log_skip - denominator, -jnp.inf)
        return jnp.where(click, log_click, after_skip), log_eps

    init = jnp.zeros(clicks.shape[:-1], chain.log_attr.dtype)
    return _scan(step, init, (chain.log_attr, chain.log_not_attr, chain.log_skip_cont, log_click_cont(chain), clicks))


def conditional(chain: Chain, clicks: Array) -> Array:
    """``[..., K]`` ``log P(C_r = 1 | C_<r)`` given the observed clicks."""
    return log_examination(chain, clicks) + chain.log_attr


def unconditional(chain: Chain) -> Array:
    """``[..., K]`` unconditional ``log P(C_r = 1)``."""
    step = jnp.logaddexp(chain.log_attr + log_click_cont(chain), chain.log_not_attr + chain.log_skip_cont)
    log_exam = jnp.cumsum(step, axis=-1)
    log_exam = jnp.concatenate([jnp.zeros_like(log_exam[..., :1]), log_exam[..., :-1]], axis=-1)
    return log_exam + chain.log_attr


def _continue(log_k, log_future_next, none_next):
    """``log(k β_{r+1} + (1 - k) z_{r+1})``: what the rest of the session costs after going on with ``k``."""
    return jnp.logaddexp(log_k + log_future_next, jnp.where(none_next, log1mexp(log_k), -jnp.inf))


def _shift(x, last):
    """``x_{r+1}`` along the last axis, with ``last`` after the end."""
    return jnp.concatenate([x[..., 1:], jnp.full_like(x[..., :1], last)], axis=-1)


def log_future(chain: Chain, clicks: Array) -> tuple[Array, Array]:
    """``(log β_r, z_r)``: ``log P(C_≥r | E_r = 1)`` and whether no click is at ``r`` or below."""

    def step(carry, x):
        log_future_next, none_next = carry
        log_attr, log_not_attr, log_skip, log_branch, log_branch_cont, click = x
        after_click = log_attr + _log_sum([w + _continue(k, log_future_next, none_next)
                                           for w, k in zip(log_branch, log_branch_cont)])
        after_skip = log_not_attr + _continue(log_skip, log_future_next, none_next)
        out = (jnp.where(click, after_click, after_skip), none_next & ~click)
        return out, out

    batch = clicks.shape[:-1]
    init = (jnp.zeros(batch, chain.log_attr.dtype), jnp.ones(batch, bool))
    return _scan(step, init, (chain.log_attr, chain.log_not_attr, chain.log_skip_cont, chain.log_branch,
                              chain.log_branch_cont, clicks), reverse=True)


def posterior(chain: Chain, clicks: Array) -> Posterior:
    """The E-step's posteriors of one or many sessions (forward–backward, in log space)."""
    log_eps = log_examination(chain, clicks)
    log_beta, none = log_future(chain, clicks)
    log_beta_next, none_next = _shift(log_beta, 0.0), _shift(none, True)
    log_unexamined = jnp.where(none, log1mexp(log_eps), -jnp.inf)  # log P(E_r = 0, C_≥r | C_<r)
    log_norm = jnp.logaddexp(log_eps + log_beta, log_unexamined)  # log P(C_≥r | C_<r)
    base = log_eps - log_norm

    def prob(log_value, where):
        return jnp.where(where, jnp.exp(log_value), 0.0)

    skip_base = base + chain.log_not_attr
    click_base = base + chain.log_attr
    return Posterior(
        not_examined=jnp.exp(log_unexamined - log_norm),
        skip=prob(skip_base + _continue(chain.log_skip_cont, log_beta_next, none_next), ~clicks),
        skip_cont=prob(skip_base + chain.log_skip_cont + log_beta_next, ~clicks),
        branch=tuple(prob(click_base + w + _continue(k, log_beta_next, none_next), clicks)
                     for w, k in zip(chain.log_branch, chain.log_branch_cont)),
        branch_cont=tuple(prob(click_base + w + k + log_beta_next, clicks)
                          for w, k in zip(chain.log_branch, chain.log_branch_cont)),
    )


def sample(key: PRNGKey, chain: Chain) -> Array:
    """``[..., K]`` bool clicks drawn from the chain (padding is never clicked).

    Drawing the branch and then ``k_b`` gives the same clicks as going on with ``Σ_b P(b) k_b``
    directly, so one uniform per position decides attraction and one decides continuation.
    """
    u_attr, u_cont = jax.random.uniform(key, (2,) + chain.log_attr.shape)
    attracted = u_attr < jnp.exp(chain.log_attr)  # u < p with u in [0, 1): p = 0 never, p = 1 always
    cont = u_cont < jnp.exp(jnp.where(attracted, log_click_cont(chain), chain.log_skip_cont))
    examined = jnp.cumprod(cont.astype(jnp.int32), axis=-1) > 0
    examined = jnp.concatenate([jnp.ones_like(examined[..., :1]), examined[..., :-1]], axis=-1)
    return attracted & examined
