"""Prank (Crammer & Singer, NIPS 2001), pointwise and pairwise (SPEC §1.6).

Pointwise: weights ``w`` and thresholds ``b_1 ≤ … ≤ b_{K−1}`` (``b_K = +∞``); grade ``l`` is rank
``y = l + 1``. Predict ``ŷ = min{r : wᵀx − b_r < 0}``. Only when ``ŷ ≠ y``: ``y_r = +1`` if ``y > r``
else ``−1``, ``τ_r = y_r`` where ``y_r (wᵀx − b_r) ≤ 0`` else 0, ``w += (Σ_r τ_r) x``, ``b_r −= τ_r``.
``update`` visits the query's real documents in index order (a protocol permutes the query first).
Ranking scores (SPEC §1.6 (a)/(b)): ``score`` = ``wᵀx``; ``predict_rank`` = ``ŷ`` (ties left to the
caller's random tie breaking).

Pairwise: Prank on the pair instances with one threshold, as SPEC §1.6 defines it: update
``w += s z``, ``b −= s`` when ``s (wᵀz − b) ≤ 0``; rank documents by ``wᵀx``. (Strict K = 2 Prank
would not update on ``wᵀz − b = 0`` with ``s = +1``; the SPEC's symmetric rule does.)
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import check_hparams
from jaxrank.learners.base import Learner
from jaxrank.learners.online.pairs import as_pairs, scan_pairs


class PrankState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    b: jax.Array  # [K-1] f32, thresholds b_1 ≤ … ≤ b_{K−1}
    t: jax.Array  # [] i32, queries seen


class PrankPairwiseState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    b: jax.Array  # [] f32, the single threshold
    t: jax.Array  # [] i32, queries seen


def score(state, features: jax.Array) -> jax.Array:
    """``[..., L]`` raw scores ``wᵀx`` (SPEC §1.6 (a))."""
    return features @ state.w


def predict_rank(state: PrankState, features: jax.Array) -> jax.Array:
    """``[..., L]`` i32 predicted ranks ``ŷ ∈ 1..K`` (SPEC §1.6 (b))."""
    below = (features @ state.w)[..., None] - state.b < 0  # [..., K-1]
    below = jnp.concatenate([below, jnp.ones(below.shape[:-1] + (1,), bool)], axis=-1)
    return (jnp.argmax(below, axis=-1) + 1).astype(jnp.int32)


def prank_pointwise(num_grades: int) -> Learner:
    """Pointwise Prank over grades ``0..num_grades−1`` (static, ``>= 2``)."""
    check_hparams(num_grades=(num_grades, 2, True))
    num_thresholds = int(num_grades) - 1

    def init(key, num_features: int, dtype=jnp.float32) -> PrankState:
        del key
        return PrankState(
            w=jnp.zeros(num_features, dtype), b=jnp.zeros(num_thresholds, dtype), t=jnp.zeros((), jnp.int32)
        )

    ranks = jnp.arange(1, num_thresholds + 1)  # [K-1] r

    def body(carry, doc):
        w, b, mistakes, abs_loss = carry
        x, label, real = doc
        y = jnp.round(label).astype(jnp.int32) + 1
        margin = x @ w - b  # [K-1]
        below = jnp.concatenate([margin < 0, jnp.ones((1,), bool)])
        y_hat = jnp.argmax(below).astype(jnp.int32) + 1
        wrong = real & (y_hat != y)
        y_r = jnp.where(y > ranks, 1, -1).astype(w.dtype)
        tau = jnp.where(wrong & (y_r * margin <= 0), y_r, 0)
        carry = (
            w + tau.sum() * x,
            b - tau,
            mistakes + wrong.astype(jnp.int32),
            abs_loss + jnp.where(real, jnp.abs(y_hat - y), 0).astype(abs_loss.dtype),
        )
        return carry, None

    def update(state: PrankState, query):
        dtype = state.w.dtype
        init_carry = (state.w, state.b, jnp.zeros((), jnp.int32), jnp.zeros((), dtype))
        docs = (query.features.astype(dtype), query.labels, query.mask)
        (w, b, mistakes, abs_loss), _ = jax.lax.scan(body, init_carry, docs)
        count = query.mask.sum().astype(jnp.int32)
        info = {"updates": mistakes, "docs": count, "loss": abs_loss / jnp.maximum(count, 1).astype(dtype)}
        return PrankState(w=w, b=b, t=state.t + 1), info

    return Learner(init, update)


def prank_pairwise() -> Learner:
    """Pairwise Prank (SPEC §1.6); info ``loss`` is the mistake rate over the query's pairs."""

    def init(key, num_features: int, dtype=jnp.float32) -> PrankPairwiseState:
        del key
        return PrankPairwiseState(w=jnp.zeros(num_features, dtype), b=jnp.zeros((), dtype), t=jnp.zeros((), jnp.int32))

    def step(carry, z, s):
        w, b = carry
        mistake = s * (w @ z - b) <= 0
        new = (jnp.where(mistake, w + s * z, w), jnp.where(mistake, b - s, b))
        return new, mistake.astype(w.dtype), mistake

    def update(state: PrankPairwiseState, query):
        (w, b), info = scan_pairs(step, (state.w, state.b), as_pairs(query))
        return PrankPairwiseState(w=w, b=b, t=state.t + 1), info

    return Learner(init, update)
