"""Uniform choices among masked candidates driven by one uniform number (no extra PRNG draws).

Each takes ``u`` in [0, 1) and picks the ``floor(u * m)``-th of the ``m`` candidates, which is a
uniform choice; algorithms draw all the ``u``'s of a step with one uniform draw (``jaxrank.utils.prng``).

The "first index whose running sum passes ``r``" search that these choices (and categorical draws)
need is ``first_passing``: a plain ``cumsum`` up to 32 entries, and beyond that
``_blocked_first_passing``, the same search in two levels of ``ceil(sqrt(K))`` blocks (CPU tuning:
XLA:CPU lowers a ``cumsum`` of ``K`` entries to ``K^2`` additions; at ``K = 136`` that dominates a
bandit step).
"""

import math

import jax.numpy as jnp

from jaxrank.types import Array

_DIRECT_MAX = 32


def _exclusive_cumsum(x: Array) -> Array:
    return jnp.concatenate([jnp.zeros((1,), x.dtype), jnp.cumsum(x)[:-1]])


def first_passing(x: Array, r: Array) -> Array:
    """Smallest ``i`` with ``x_0 + ... + x_i > r`` for ``x [K] >= 0`` (i32).

    Meaningful only when ``sum(x) > r``; callers check that themselves. Integer ``x`` gives the exact
    index; float ``x`` sums in blocks (running sums rounded once per block boundary).
    """
    num = x.shape[0]
    if num <= _DIRECT_MAX:  # static: K^2 <= 1024 additions
        return jnp.minimum(jnp.sum(jnp.cumsum(x) <= r), num - 1).astype(jnp.int32)
    return _blocked_first_passing(x, r)


def _blocked_first_passing(x: Array, r: Array) -> Array:
    """``first_passing`` in ``O(K)`` additions instead of a ``K^2`` cumsum (XLA:CPU's lowering): the
    block whose running total first passes ``r``, then the entry inside it."""
    num = x.shape[0]
    size = math.isqrt(max(num - 1, 0)) + 1  # ceil(sqrt(K)) entries per block, static
    num_blocks = -(-num // size)
    blocks = jnp.pad(x, (0, num_blocks * size - num)).reshape(num_blocks, size)
    before = _exclusive_cumsum(jnp.sum(blocks, axis=1))  # [B] total of the earlier blocks
    # Running sums are nondecreasing, so the first one above r sits after all those <= r.
    block = jnp.minimum(jnp.sum(before + jnp.sum(blocks, axis=1) <= r), num_blocks - 1)
    inner = before[block] + jnp.cumsum(blocks[block])  # [size] running sums inside that block
    offset = jnp.minimum(jnp.sum(inner <= r), size - 1)
    return jnp.minimum(block * size + offset, num - 1).astype(jnp.int32)


def random_choice(u: Array, where: Array) -> Array:
    """Index of a uniformly chosen True entry of ``where [K]`` (0 if none is True)."""
    count = jnp.sum(where)
    rank = jnp.minimum(jnp.floor(u * count), jnp.maximum(count - 1, 0)).astype(jnp.int32)
    return jnp.where(count > 0, first_passing(where.astype(jnp.int32), rank), 0).astype(jnp.int32)


def random_argmax(u: Array, values: Array, where=None) -> Array:
    """Index of a maximum of ``values [K]`` over ``where``, ties broken uniformly."""
    where = jnp.ones(values.shape, bool) if where is None else where
    best = jnp.max(jnp.where(where, values, -jnp.inf))
    return random_choice(u, where & (values == best))


def random_argmin(u: Array, values: Array, where=None) -> Array:
    """Index of a minimum of ``values [K]`` over ``where``, ties broken uniformly."""
    return random_argmax(u, -values, where)
