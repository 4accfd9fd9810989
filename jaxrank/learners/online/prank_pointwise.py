"""Pointwise Prank (Crammer & Singer, NIPS 2001, Fig. 1), a baseline of SOLAR (Wang et al., ACL 2015, §5.2).

Weights ``w`` and thresholds ``b_1 ≤ … ≤ b_{K−1}`` (``b_K = +∞``); grade ``l`` is rank ``y = l + 1``.
Predict ``ŷ = min{r : wᵀx − b_r < 0}``. Only when ``ŷ ≠ y``: ``y_r = +1`` if ``y > r`` else ``−1``,
``τ_r = y_r`` where ``y_r (wᵀx − b_r) ≤ 0`` else 0, ``w += (Σ_r τ_r) x``, ``b_r −= τ_r``.
``update`` visits the query's real documents in index order (a protocol permutes them itself).
Ranking scores (neither paper says; both are offered here): ``score_by="raw"`` ranks by ``wᵀx``;
``score_by="rank"`` by the predicted rank ``ŷ`` (ties left to the caller's random tie breaking).
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.types import InstanceInfo, Learner, UpdateInfo
from jaxrank.utils.checks import check_choice, check_int

HPARAMS: dict = {}
OPTIONS = {
    "num_grades": 3,  # K: relevance grades 0..K−1 (LETOR 4.0's MQ2007/MQ2008 grade 0, 1, 2)
    "score_by": "raw",  # rank documents by wᵀx ("raw") or by the predicted rank ŷ ("rank")
}
SCORE_BY = ("raw", "rank")


class PrankState(NamedTuple):
    w: jax.Array  # [D] weights
    b: jax.Array  # [K-1] thresholds b_1 ≤ … ≤ b_{K−1}
    t: jax.Array  # [] i32, queries seen


class PrankParams(NamedTuple):
    """What ``score_by="rank"`` scores with."""

    w: jax.Array  # [D]
    b: jax.Array  # [K-1]


def predict_rank(params, features: jax.Array) -> jax.Array:
    """``[...]`` i32 predicted ranks ``ŷ ∈ 1..K`` of ``features [..., D]`` (``params`` or a state with ``w``, ``b``)."""
    below = (features @ params.w)[..., None] - params.b < 0  # [..., K-1]
    below = jnp.concatenate([below, jnp.ones(below.shape[:-1] + (1,), bool)], axis=-1)
    return (jnp.argmax(below, axis=-1) + 1).astype(jnp.int32)


def init(key, num_features: int, dtype=jnp.float32, *, num_grades: int = OPTIONS["num_grades"]) -> PrankState:
    del key
    return PrankState(w=jnp.zeros(num_features, dtype), b=jnp.zeros(num_grades - 1, dtype), t=jnp.zeros((), jnp.int32))


def step(state: PrankState, x, label):
    """One document: returns ``(state, InstanceInfo(|ŷ − y|, ŷ ≠ y))``."""
    w, b = state.w, state.b
    ranks = jnp.arange(1, b.shape[0] + 1)  # [K-1] r
    y = jnp.round(label).astype(jnp.int32) + 1
    margin = x @ w - b  # [K-1]
    below = jnp.concatenate([margin < 0, jnp.ones((1,), bool)])
    y_hat = jnp.argmax(below).astype(jnp.int32) + 1
    wrong = y_hat != y
    y_r = jnp.where(y > ranks, 1, -1).astype(w.dtype)
    tau = jnp.where(wrong & (y_r * margin <= 0), y_r, 0)
    state = state._replace(w=w + tau.sum() * x, b=b - tau)
    return state, InstanceInfo(loss=jnp.abs(y_hat - y).astype(w.dtype), updated=wrong)


def update(state: PrankState, query):
    """The query's real documents in index order; ``loss`` is the mean ``|ŷ − y|``."""

    def body(carry, doc):
        state, mistakes, abs_loss = carry
        x, label, real = doc
        new, info = step(state, x, label)
        state = jax.tree.map(lambda n, o: jnp.where(real, n, o), new, state)
        return (state, mistakes + (real & info.updated).astype(jnp.int32), abs_loss + jnp.where(real, info.loss, 0)), None

    dtype = state.w.dtype
    init_carry = (state, jnp.zeros((), jnp.int32), jnp.zeros((), dtype))
    docs = (query.features.astype(dtype), query.labels, query.mask)
    (state, mistakes, abs_loss), _ = jax.lax.scan(body, init_carry, docs)
    count = query.mask.sum().astype(jnp.int32)
    info = UpdateInfo(loss=abs_loss / jnp.maximum(count, 1).astype(dtype), updates=mistakes, instances=count)
    return state._replace(t=state.t + 1), info


def rank_params(state: PrankState) -> PrankParams:
    return PrankParams(w=state.w, b=state.b)


def rank_score(params: PrankParams, features: jax.Array) -> jax.Array:
    """``[...]`` the predicted ranks as scores (higher rank, higher score)."""
    return predict_rank(params, features).astype(features.dtype)


def make(*, num_grades: int = OPTIONS["num_grades"], score_by: str = OPTIONS["score_by"]) -> Learner:
    """Pointwise Prank over grades ``0..num_grades−1`` (``>= 2``), scoring as ``score_by``; both static."""
    check_int("num_grades", num_grades, minimum=2)
    check_choice("score_by", score_by, SCORE_BY)
    params, score = (rank_params, rank_score) if score_by == "rank" else (linear.params, linear.score)
    return Learner(init=functools.partial(init, num_grades=int(num_grades)), update=update, params=params,
                   score=score, step=step, instances="documents")
