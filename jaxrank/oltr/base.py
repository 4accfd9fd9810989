"""Pieces shared by DBGD, MGD and PDGD (the contract itself is ``jaxrank.types.OnlineRanker``).

Every learner here is linear, ``f(x) = w·x``, with ``w`` starting at zero (as in the authors'
``LinearModel``, github.com/HarrieO/OnlineLearningToRank ``models/linearmodel.py``). After every
effective update the learning rate is multiplied by ``learning_rate_decay`` (same file; 1 keeps
it constant).
"""

import jax
import jax.numpy as jnp

from jaxrank.types import Array, OnlineRanker, PRNGKey
from jaxrank.utils.checks import check_int, check_number

__all__ = ["OnlineRanker", "check_common", "check_features", "linear_scores", "top_ranks", "unit_vectors"]


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
