"""Prank (Crammer & Singer, NIPS 2001), pointwise and pairwise, the baselines of SOLAR (Wang et al.,
ACL 2015, §5.2).

Pointwise: weights ``w`` and thresholds ``b_1 ≤ … ≤ b_{K−1}`` (``b_K = +∞``); grade ``l`` is rank
``y = l + 1``. Predict ``ŷ = min{r : wᵀx − b_r < 0}``. Only when ``ŷ ≠ y``: ``y_r = +1`` if ``y > r``
else ``−1``, ``τ_r = y_r`` where ``y_r (wᵀx − b_r) ≤ 0`` else 0, ``w += (Σ_r τ_r) x``, ``b_r −= τ_r``.
``update`` visits the query's real documents in index order (a protocol permutes them itself).
Ranking scores (neither paper says; both are offered here): ``score_by="raw"`` ranks by ``wᵀx``;
``score_by="rank"`` by the predicted rank ``ŷ`` (ties left to the caller's random tie breaking).

Pairwise: Prank on the pair instances with one threshold (our reading; SOLAR gives no details): update
``w += y z``, ``b −= y`` when ``y (wᵀz − b) ≤ 0``; rank documents by ``wᵀx``. (Strict K = 2 Prank
would not update on ``wᵀz − b = 0`` with ``y = +1``; the symmetric rule used here does.)
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners.linear import linear_readout, linear_score
from jaxrank.learners.online.pairs import pairwise_update
from jaxrank.types import OnlineLearner, UpdateInfo
from jaxrank.utils.checks import check_choice, check_int


class PrankState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    b: jax.Array  # [K-1] f32, thresholds b_1 ≤ … ≤ b_{K−1}
    t: jax.Array  # [] i32, queries seen


class PrankPairwiseState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    b: jax.Array  # [] f32, the single threshold
    t: jax.Array  # [] i32, queries seen


score = linear_score  # ``[..., L]`` raw scores ``wᵀx`` (``score_by="raw"``)


def predict_rank(state, features: jax.Array) -> jax.Array:
    """``[..., L]`` i32 predicted ranks ``ŷ ∈ 1..K`` (``score_by="rank"``) of a state or readout with ``w``, ``b``."""
    below = (features @ state.w)[..., None] - state.b < 0  # [..., K-1]
    below = jnp.concatenate([below, jnp.ones(below.shape[:-1] + (1,), bool)], axis=-1)
    return (jnp.argmax(below, axis=-1) + 1).astype(jnp.int32)


def _rank_readout(state: PrankState) -> PrankState:
    return state


def _rank_score(readout, features):
    return predict_rank(readout, features).astype(features.dtype)


def prank_pointwise(num_grades: int, score_by: str = "raw") -> OnlineLearner:
    """Pointwise Prank over grades ``0..num_grades−1`` (static, ``>= 2``); ``score_by`` in {raw, rank}."""
    check_int("num_grades", num_grades, minimum=2)
    check_choice("score_by", score_by, ("raw", "rank"))
    num_thresholds = int(num_grades) - 1
    ranks = jnp.arange(1, num_thresholds + 1)  # [K-1] r

    def init(key, num_features: int, dtype=jnp.float32) -> PrankState:
        del key
        return PrankState(
            w=jnp.zeros(num_features, dtype), b=jnp.zeros(num_thresholds, dtype), t=jnp.zeros((), jnp.int32)
        )

    def step(state: PrankState, x, label):
        """One document: returns ``(state, |ŷ − y|, ŷ ≠ y)``."""
        w, b = state.w, state.b
        y = jnp.round(label).astype(jnp.int32) + 1
        margin = x @ w - b  # [K-1]
        below = jnp.concatenate([margin < 0, jnp.ones((1,), bool)])
        y_hat = jnp.argmax(below).astype(jnp.int32) + 1
        wrong = y_hat != y
        y_r = jnp.where(y > ranks, 1, -1).astype(w.dtype)
        tau = jnp.where(wrong & (y_r * margin <= 0), y_r, 0)
        state = state._replace(w=w + tau.sum() * x, b=b - tau)
        return state, jnp.abs(y_hat - y).astype(w.dtype), wrong

    def update(state: PrankState, query):
        def body(carry, doc):
            state, mistakes, abs_loss = carry
            x, label, real = doc
            new, loss, wrong = step(state, x, label)
            state = jax.tree.map(lambda n, o: jnp.where(real, n, o), new, state)
            return (state, mistakes + (real & wrong).astype(jnp.int32), abs_loss + jnp.where(real, loss, 0)), None

        dtype = state.w.dtype
        init_carry = (state, jnp.zeros((), jnp.int32), jnp.zeros((), dtype))
        docs = (query.features.astype(dtype), query.labels, query.mask)
        (state, mistakes, abs_loss), _ = jax.lax.scan(body, init_carry, docs)
        count = query.mask.sum().astype(jnp.int32)
        info = UpdateInfo(loss=abs_loss / jnp.maximum(count, 1).astype(dtype), updates=mistakes, instances=count)
        return state._replace(t=state.t + 1), info

    if score_by == "rank":
        return OnlineLearner(init, update, step, _rank_readout, _rank_score, instances="documents")
    return OnlineLearner(init, update, step, linear_readout, linear_score, instances="documents")


def prank_pairwise() -> OnlineLearner:
    """Pairwise Prank (one threshold, our reading of SOLAR's "Prank (Pairwise)"); info ``loss`` is the mistake rate over the query's pairs."""

    def init(key, num_features: int, dtype=jnp.float32) -> PrankPairwiseState:
        del key
        return PrankPairwiseState(w=jnp.zeros(num_features, dtype), b=jnp.zeros((), dtype), t=jnp.zeros((), jnp.int32))

    def step(state: PrankPairwiseState, z, y):
        mistake = y * (state.w @ z - state.b) <= 0
        new = state._replace(w=jnp.where(mistake, state.w + y * z, state.w), b=jnp.where(mistake, state.b - y, state.b))
        return new, mistake.astype(state.w.dtype), mistake

    return OnlineLearner(init, pairwise_update(step), step, linear_readout, linear_score)
