"""User browsing model (UBM; Dupret & Piwowarski, SIGIR 2008; Chuklin, Markov, de Rijke, *Click Models
for Web Search*, 2015, ch. 3 "User browsing model", EM in ch. 4; PyClick's ``UBM``).

Position ``r`` is examined with ``γ_{r,d}``, where ``d = r - r'`` is its distance to the last click
above it at ``r'`` (``r' = -1``, i.e. ``d = r + 1``, when there is none; positions count from 0, so
``d ∈ 1..r+1``), and a click happens iff examined and attracted (``α_qd``). Given the clicks above,
positions are independent, so ``P(C_r = 1 | C_<r) = α_qd γ_{r,d}``. The table is stored ``[K, K]`` as
``examination[r, d - 1]``, its upper triangle unused. (PyClick indexes ``γ`` by the previous click's
rank, using rank ``M - 1`` of an ``M``-result page for "no click", which merges "no click" with "a
click at the last rank" across pages of different lengths; the book's distance has no such clash.)

The unconditional ``P(C_r = 1)`` sums over where the last click above ``r`` is: with
``L_r(j) = P(the last click above r is at j)``, ``P(C_r = 1) = Σ_j L_r(j) α_r γ_{r,r-j}`` and
``L_{r+1}(j) = L_r(j) (1 - α_r γ_{r,r-j})``, ``L_{r+1}(r) = P(C_r = 1)``: a scan over positions with a
``[K + 1]`` state (PyClick's ``get_full_click_probs``).

EM: as PBM's with ``ε = γ_{r,d}`` of the observed clicks; the examination statistics are summed per
``(r, d)`` (PyClick's ``UBMAttrEM``/``UBMExamEM``). The relevance estimate is ``α``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models.base import (DEFAULT_CHUNK_SIZE, EM_HPARAMS, EM_OPTIONS, ClickModel, Statistics, check_sizes,
                                       filled, gather_rows, log1mexp, log_probs, observed, pair_sum, previous_click,
                                       shown_log_probs)
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array, PRNGKey

HPARAMS = dict(EM_HPARAMS)  # PyClick's: start 0.5, pseudo-counts (1, 2), cap 1 - 10⁻⁶
OPTIONS = dict(EM_OPTIONS)
FITTING = "em"


class UBMParams(NamedTuple):
    attraction: Array  # [P] logit α_qd
    examination: Array  # [K, K] logit γ_{r,d} at [r, d - 1]


def init(num_pairs: int, num_positions: int, *, prob=0.5, dtype=jnp.float32) -> UBMParams:
    check_sizes(num_pairs, num_positions)
    return UBMParams(filled((num_pairs,), prob, dtype), filled((num_positions, num_positions), prob, dtype))


def _gamma_index(clicks: Array) -> tuple[Array, Array]:
    """``(r, d - 1)``, each ``[..., K]``: the row and column of ``γ_{r,d}`` given the clicks above ``r``."""
    ranks = jnp.arange(clicks.shape[-1])
    return jnp.broadcast_to(ranks, clicks.shape), ranks - previous_click(clicks) - 1


def _check_table(params: UBMParams, num_positions: int) -> None:
    if params.examination.shape[0] < num_positions:
        raise ValueError(f"the UBM parameters cover {params.examination.shape[0]} positions but the log has "
                         f"{num_positions}; init the model with num_positions >= {num_positions}.")


def conditional_log_probs(params: UBMParams, log: SessionLog) -> Array:
    _check_table(params, log.clicks.shape[-1])
    ranks, distance = _gamma_index(log.clicks)
    # logarithms of the tables, then gathers: O(P + K²) logarithms, not two per position
    log_attr = jax.nn.log_sigmoid(params.attraction)[log.pair]
    log_gamma = jax.nn.log_sigmoid(params.examination)[ranks, distance]
    return observed(log_attr + log_gamma, log.clicks, log.mask)


def click_log_probs(params: UBMParams, log: SessionLog) -> Array:
    k = log.mask.shape[-1]
    _check_table(params, k)
    log_attr = jnp.where(log.mask, log_probs(params.attraction[log.pair])[0], -jnp.inf)
    log_gamma = log_probs(params.examination)[0]
    # j = -1..K-1 (last click above) at state index j + 1; γ_{r,r-j} sits at [r, r - j - 1].
    last = jnp.arange(-1, k)

    def step(log_last, x):
        r, la = x
        distance = jnp.clip(r - last - 1, 0, k - 1)
        log_click_from = jnp.where(last < r, log_last + la[..., None] + log_gamma[r, distance], -jnp.inf)
        log_click = jax.nn.logsumexp(log_click_from, axis=-1)
        stay = log_last + jnp.where(last < r, log1mexp(la[..., None] + log_gamma[r, distance]), 0.0)
        new = jnp.where(last == r, log_click[..., None], stay)
        return new, log_click

    init = jnp.full(log_attr.shape[:-1] + (k + 1,), -jnp.inf, log_attr.dtype).at[..., 0].set(0.0)
    _, log_click = jax.lax.scan(step, init, (jnp.arange(k), jnp.moveaxis(log_attr, -1, 0)))
    return shown_log_probs(jnp.moveaxis(log_click, 0, -1), log.mask)


def click_probs(params: UBMParams, log: SessionLog) -> Array:
    return jnp.exp(click_log_probs(params, log))


def relevance(params: UBMParams, pairs: Array) -> Array:
    return jax.nn.sigmoid(params.attraction[pairs])


def sample(key: PRNGKey, params: UBMParams, pairs: Array, mask: Array) -> Array:
    k = jnp.shape(mask)[-1]
    _check_table(params, k)
    u_exam, u_attr = jax.random.uniform(key, (2,) + jnp.shape(mask))
    attracted = mask & (u_attr < jax.nn.sigmoid(params.attraction[pairs]))
    gamma = jax.nn.sigmoid(params.examination)

    def step(previous, x):
        r, u, attr = x
        click = attr & (u < gamma[r, r - previous - 1])
        return jnp.where(click, r, previous), click

    init = jnp.full(jnp.shape(mask)[:-1], -1, jnp.int32)
    ranks = jnp.arange(k, dtype=jnp.int32)  # the carry is i32 (also under jax.enable_x64)
    _, clicks = jax.lax.scan(step, init, (ranks, jnp.moveaxis(u_exam, -1, 0), jnp.moveaxis(attracted, -1, 0)))
    return jnp.moveaxis(clicks, 0, -1)


def _cell_sum(values: Array, clicks: Array, mask: Array, size: int) -> Array:
    """``[K', K']`` sums of ``values [S, K]`` per ``γ`` cell ``(r, d - 1)`` of the observed clicks."""
    ranks, distance = _gamma_index(clicks)
    return jax.ops.segment_sum(jnp.where(mask, values, 0).ravel(), (ranks * size + distance).ravel(),
                               num_segments=size * size).reshape(size, size)


def counts(params: UBMParams, log: SessionLog) -> Statistics:
    """What does not depend on the parameters: a click is an attraction and an examination, every
    shown position a trial of its pair's ``α`` and of its cell's ``γ_{r,d}`` (``d`` is fixed by the
    observed clicks)."""
    dtype, size = params.attraction.dtype, params.examination.shape[0]
    _check_table(params, log.mask.shape[-1])
    num_pairs = params.attraction.shape[0]
    ones = jnp.ones(log.mask.shape, dtype)
    clicked = log.clicks & log.mask
    return Statistics(
        UBMParams(pair_sum(ones, log.pair, clicked, num_pairs), _cell_sum(ones, log.clicks, clicked, size)),
        UBMParams(pair_sum(ones, log.pair, log.mask, num_pairs), _cell_sum(ones, log.clicks, log.mask, size)))


def statistics(params: UBMParams, log: SessionLog) -> Statistics:
    """The rest of the E-step (``counts`` adds the part that does not depend on the parameters): PBM's
    skipped-position posteriors with ``ε = γ_{r,d}``, in probability space (``pbm.statistics``)."""
    _check_table(params, log.clicks.shape[-1])
    ranks, distance = _gamma_index(log.clicks)
    attr, not_attr = gather_rows([jax.nn.sigmoid(sign * params.attraction) for sign in (1, -1)], log.pair)
    gamma, not_gamma = (jax.nn.sigmoid(sign * params.examination)[ranks, distance] for sign in (1, -1))
    attr_not_gamma = attr * not_gamma
    no_click = not_attr + attr_not_gamma  # 1 - α γ
    skipped = log.mask & ~log.clicks
    num_pairs, size = params.attraction.shape[0], params.examination.shape[0]
    attr_sum = pair_sum(attr_not_gamma / no_click, log.pair, skipped, num_pairs)
    gamma_sum = _cell_sum(gamma * not_attr / no_click, log.clicks, skipped, size)
    return Statistics(UBMParams(attr_sum, gamma_sum), UBMParams(jnp.zeros_like(attr_sum), jnp.zeros_like(gamma_sum)))


def make(chunk_size=DEFAULT_CHUNK_SIZE) -> ClickModel:
    return ClickModel("ubm", init, conditional_log_probs, click_log_probs, click_probs, relevance, sample, statistics,
                      FITTING, counts, chunk_size=chunk_size)
