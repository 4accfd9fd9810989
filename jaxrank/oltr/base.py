"""Pieces shared by DBGD, MGD and PDGD (the contract itself is ``jaxrank.types.OnlineRanker``).

Every learner here is linear, ``f(x) = w·x``, with ``w`` starting at zero (as in the authors'
``LinearModel``, github.com/HarrieO/OnlineLearningToRank ``models/linearmodel.py``). After every
effective update the learning rate is multiplied by ``learning_rate_decay`` (same file; 1 keeps
it constant).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.types import Array, OnlineRanker, PRNGKey
from jaxrank.utils.checks import check_int, check_number

__all__ = ["TIE_TOLERANCE", "CandidateState", "OnlineRanker", "check_candidates", "check_common", "check_features",
           "init_candidates", "linear_scores", "step_towards", "top_ranks", "unit_vectors"]


# A probabilistic outcome computed in f32 can leave a tie (posteriors of exactly 1/2) at ±1e-8: still a tie.
TIE_TOLERANCE = 1e-6


class CandidateState(NamedTuple):
    """State of the learners that compare the current ranker with perturbed candidates (DBGD, MGD)."""

    weights: jax.Array  # [D] f32, current ranker w
    learning_rate: jax.Array  # [] f32, η (decayed after every update)
    learning_rate_decay: jax.Array  # [] f32
    delta: jax.Array  # [] f32, exploration step δ: candidates are w + δu
    tau: jax.Array  # [] f32, softmax exponent of probabilistic interleaving / multileaving
    t: jax.Array  # [] i32, impressions seen


def linear_scores(state, features: Array) -> Array:
    """``features [..., D] @ state.weights [D]``."""
    return jnp.asarray(features, jnp.float32) @ state.weights


def unit_vectors(key: PRNGKey, num_vectors: int, num_features: int) -> Array:
    """``[n, D]`` f32 directions uniform on the unit sphere: normalised standard normals
    (Yue & Joachims 2009, Algorithm 2; the authors' ``sample_candidates``)."""
    vectors = jax.random.normal(key, (num_vectors, num_features), jnp.float32)
    return vectors / jnp.linalg.norm(vectors, axis=-1, keepdims=True)


def check_common(learning_rate, learning_rate_decay, list_size) -> None:
    """One-line ``ValueError`` for an impossible step size, decay or list length."""
    check_number("learning_rate", learning_rate, low=0.0, fix="use a positive step size such as 0.01")
    check_number("learning_rate_decay", learning_rate_decay, low=0.0, high=1.0, high_inclusive=True,
                 fix="use a factor in (0, 1], 1 for a constant rate")
    check_int("list_size", list_size, minimum=1, fix="show at least one document (10 in the papers)")


def check_candidates(learning_rate, delta, learning_rate_decay, tau, list_size) -> None:
    """``check_common`` plus the candidates' step ``δ`` and the softmax exponent ``τ``."""
    check_common(learning_rate, learning_rate_decay, list_size)
    check_number("delta", delta, low=0.0, fix="use a positive exploration step such as 1")
    check_number("tau", tau, low=0.0, fix="use a positive softmax exponent such as 3")


def init_candidates(num_features: int, learning_rate, delta, learning_rate_decay, tau) -> CandidateState:
    """``w = 0`` and the hyperparameters as f32 arrays."""
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return CandidateState(jnp.zeros(num_features, jnp.float32), f32(learning_rate), f32(learning_rate_decay),
                          f32(delta), f32(tau), jnp.zeros((), jnp.int32))


def step_towards(state: CandidateState, step: Array, won: Array) -> CandidateState:
    """``w ← w + η step`` and ``η ← η · decay`` when ``won``; counts the impression either way."""
    return state._replace(
        weights=state.weights + jnp.where(won, state.learning_rate, 0.0) * step,
        learning_rate=jnp.where(won, state.learning_rate * state.learning_rate_decay, state.learning_rate),
        t=state.t + 1,
    )


def check_features(features, where) -> None:
    shape, where_shape = jnp.shape(features), jnp.shape(where)
    if len(shape) != 2 or where_shape != shape[:1]:
        raise ValueError(f"features must be [N, D] and where [N] (one query; vmap for a batch); got {shape} "
                         f"and {where_shape}.")


def top_ranks(scores: Array, where: Array, depth: int) -> Array:
    """``[n, N]`` i32 ranks equal to ``score_ranks`` on each ranker's top ``depth`` real documents,
    ``depth + 1`` on the other real documents and ``N + 1`` on padding.

    Team-draft multileaving only ever takes a ranker's best document not yet shown, and at most
    ``L - 1`` are shown before a ranker's last pick, so ``depth = L`` gives the same lists as the
    full ranks, from ``lax.top_k`` (ties by index, as ``score_ranks``) instead of a sort, and a
    one-hot comparison instead of a scatter (both slow per impression on CPU).
    """
    num_docs = scores.shape[-1]
    depth = min(depth, num_docs)
    _, top = jax.lax.top_k(jnp.where(where[None, :], scores, -jnp.inf), depth)  # [n, depth]
    hits = top[:, :, None] == jnp.arange(num_docs)[None, None, :]  # [n, depth, N]
    ranks = jnp.where(jnp.any(hits, axis=1), jnp.argmax(hits, axis=1) + 1, depth + 1)
    return jnp.where(where[None, :], ranks, num_docs + 1).astype(jnp.int32)
