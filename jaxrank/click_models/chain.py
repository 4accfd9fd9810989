"""The examination chain shared by the cascade family: CM, DCM, CCM, DBN and SDBN (Chuklin, Markov,
de Rijke, *Click Models for Web Search*, 2015, ch. 3).

The user examines position 0. At an examined position ``r`` they click iff the document attracts
them (``α_r``). After no click they examine ``r + 1`` with probability ``k⁰_r``; after a click a
latent branch ``b`` is drawn with ``P(b)`` (DBN's and CCM's satisfaction) and they examine
``r + 1`` with ``k_b``. Once a position is not examined, none below is. A model is this chain with
its own ``α``, ``k⁰`` and branches (``Chain``); padded positions are made transparent (never
attractive, always passed), so a session shorter than ``K`` behaves as if the list ended there.

The likelihoods are in log space over the last axis (positions), with any batch axes in front:

* ``log_examination``: the filter ``ε_r = P(E_r = 1 | C_<r)``: ``ε_0 = 1``; after a click
  ``ε_{r+1} = Σ_b P(b) k_b``; after none ``ε_{r+1} = ε_r (1 - α_r) k⁰_r / (1 - ε_r α_r)``; then
  ``P(C_r = 1 | C_<r) = ε_r α_r`` (the book's conditional click probabilities);
* ``unconditional``: ``P(E_{r+1} = 1) = P(E_r = 1) (α_r Σ_b P(b) k_b + (1 - α_r) k⁰_r)``;
* ``posterior``: the E-step's posteriors, in probability space and with positions on the first axis
  (``Probs``): every position up to the last click is examined, so only the part below it needs a
  backward pass (``u_r = P(no click at ≥ r | E_r = 1)``) and a forward one (``P(E_r = 1 | C)``);
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
    """Posteriors of one E-step given all clicks of each session, ``[K, ...]`` each (positions first)."""

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


def _filter(chain: Chain, clicks: Array) -> tuple[Array, Array]:
    """``(log ε_r, log P(C_r = 0 | C_<r))``, each ``[..., K]``, given the observed clicks (the filter)."""

    def step(log_eps, x):
        log_attr, log_not_attr, log_skip, log_click, click = x
        denominator = log1mexp(log_eps + log_attr)  # log P(C_r = 0 | C_<r)
        after_skip = jnp.where(denominator > -jnp.inf, log_eps + log_not_attr + log_skip - denominator, -jnp.inf)
        return jnp.where(click, log_click, after_skip), (log_eps, denominator)

    init = jnp.zeros(clicks.shape[:-1], chain.log_attr.dtype)
    return _scan(step, init, (chain.log_attr, chain.log_not_attr, chain.log_skip_cont, log_click_cont(chain), clicks))


def log_examination(chain: Chain, clicks: Array) -> Array:
    """``[..., K]`` ``log ε_r = log P(E_r = 1 | C_<r)`` given the observed clicks (the filter)."""
    return _filter(chain, clicks)[0]


def conditional(chain: Chain, clicks: Array) -> Array:
    """``[..., K]`` ``log P(C_r = 1 | C_<r)`` given the observed clicks."""
    return log_examination(chain, clicks) + chain.log_attr


def observed(chain: Chain, clicks: Array, mask: Array) -> Array:
    """``[..., K]`` ``log P(C_r = c_r | C_<r)`` of the observed clicks, 0 on padding (the filter's own
    ``log P(C_r = 0 | C_<r)``, not a second ``log1mexp``)."""
    log_eps, log_no_click = _filter(chain, clicks)
    return jnp.where(mask, jnp.where(clicks, log_eps + chain.log_attr, log_no_click), 0.0)


def unconditional(chain: Chain) -> Array:
    """``[..., K]`` unconditional ``log P(C_r = 1)``."""
    step = jnp.logaddexp(chain.log_attr + log_click_cont(chain), chain.log_not_attr + chain.log_skip_cont)
    log_exam = jnp.cumsum(step, axis=-1)
    log_exam = jnp.concatenate([jnp.zeros_like(log_exam[..., :1]), log_exam[..., :-1]], axis=-1)
    return log_exam + chain.log_attr


class Probs(NamedTuple):
    """The chain's factors as probabilities (the E-step's form), each ``[K, ...]`` (positions first) or
    broadcastable to it; every ``1 - p`` is given, computed from the logit, so that it keeps its
    precision near ``p = 1``."""

    attr: Array  # α_r, 0 on padding
    not_attr: Array  # 1 - α_r, 1 on padding
    skip_cont: Array  # k⁰_r, 1 on padding
    skip_stop: Array  # 1 - k⁰_r, 0 on padding
    branch: tuple  # B x P(b | C_r = 1)
    branch_cont: tuple  # B x k_b
    branch_stop: tuple  # B x 1 - k_b


def make_probs(attr, not_attr, skip_cont, skip_stop, branch, branch_cont, branch_stop, mask) -> Probs:
    """A ``Probs`` with padding made transparent (never attractive, always passed)."""
    return Probs(jnp.where(mask, attr, 0.0), jnp.where(mask, not_attr, 1.0), jnp.where(mask, skip_cont, 1.0),
                 jnp.where(mask, skip_stop, 0.0), tuple(branch), tuple(branch_cont), tuple(branch_stop))


def _ratio(num, den):
    """``num / den``, 0 where ``den = 0`` (a continuation the clicks make impossible either way)."""
    return num / jnp.where(den > 0, den, 1.0)


def has_next(mask: Array) -> Array:
    """``[K, ...]`` bool: position ``r`` is shown and so is ``r + 1`` (positions first, as ``posterior``):
    where a continuation ``E_{r+1}`` is a latent event the E-step counts."""
    return jnp.concatenate([mask[1:], jnp.zeros_like(mask[:1])])


def posterior(chain: Probs, clicks: Array) -> Posterior:
    """The E-step's posteriors of many sessions, **positions on the first axis** (``[K, S]``, the layout
    in which each step of the passes below reads contiguous rows), in probability space: no logarithm,
    and nothing underflows (every quantity is a conditional probability or a ratio of them).

    Every position up to the last click ``l`` is examined. Below it no position is clicked:
    ``u_r = P(no click at ≥ r | E_r = 1) = (1 - α_r)(1 - k⁰_r + k⁰_r u_{r+1})`` (``u_K = 1``). The user
    goes on from ``r`` with ``g_r / (g_r + h_r)`` given ``E_r = 1`` and all clicks, where ``g``, ``h``
    weigh going on and stopping: with ``v_r = u_{r+1}``, ``s_r = 1`` at or below ``l`` and ``v_r = 1``,
    ``s_r = 0`` above it (a later click forces going on), ``g = k⁰ v``, ``h = (1 - k⁰) s`` after no click
    and ``g = Σ_b P(b) k_b v``, ``h = Σ_b P(b)(1 - k_b) s`` after one. Then ``P(E_{r+1} = 1 | C) =
    P(E_r = 1 | C) g_r / (g_r + h_r)`` and ``P(E_{r+1} = 0 | C) = P(E_r = 0 | C) + P(E_r = 1 | C) h_r / (g_r +
    h_r)``, from ``P(E_0 = 1 | C) = 1`` (a forward pass that accumulates ``1 - P(E = 1 | C)`` from its
    terms, so that it keeps its precision near 1); a click's branch ``b`` has posterior
    ``P(b) (k_b v + (1 - k_b) s) / (g + h)``, of which ``P(b) k_b v / (g + h)`` goes on."""
    k = clicks.shape[0]
    shape = clicks.shape
    full = lambda x: jnp.broadcast_to(x, shape)  # noqa: E731

    def back(u_next, x):
        not_attr, cont, stop = x
        return not_attr * (stop + cont * u_next), u_next

    ones = jnp.ones(shape[1:], chain.attr.dtype)
    _, u_next = jax.lax.scan(back, ones, (full(chain.not_attr), full(chain.skip_cont), full(chain.skip_stop)),
                             reverse=True)
    ranks = jnp.arange(k).reshape((k,) + (1,) * (len(shape) - 1))
    below = ranks >= jnp.max(jnp.where(clicks, ranks, -1), axis=0)  # no click after r
    v, s = jnp.where(below, u_next, 1.0), below.astype(ones.dtype)
    branch_go = tuple(w * c * v for w, c in zip(chain.branch, chain.branch_cont))
    branch_stop = tuple(w * t * s for w, t in zip(chain.branch, chain.branch_stop))
    go = jnp.where(clicks, sum(branch_go), chain.skip_cont * v)
    stop = jnp.where(clicks, sum(branch_stop), chain.skip_stop * s)
    den = go + stop
    go, stop = _ratio(go, den), _ratio(stop, den)

    def forward(carry, x):
        examined, unexamined = carry
        go, stop = x
        out = (examined * go, unexamined + examined * stop)
        return out, (examined, unexamined, out[0])

    _, (examined, unexamined, examined_next) = jax.lax.scan(forward, (ones, jnp.zeros_like(ones)), (go, stop))
    return Posterior(
        not_examined=unexamined,
        skip=jnp.where(clicks, 0.0, examined),
        skip_cont=jnp.where(clicks, 0.0, examined_next),
        branch=tuple(jnp.where(clicks, _ratio(g + t, den), 0.0) for g, t in zip(branch_go, branch_stop)),
        branch_cont=tuple(jnp.where(clicks, _ratio(g, den), 0.0) for g in branch_go),
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
