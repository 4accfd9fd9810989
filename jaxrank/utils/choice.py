"""Uniform choices among masked candidates driven by one uniform number (no extra PRNG draws).

Each takes ``u`` in [0, 1) and picks the ``floor(u * m)``-th of the ``m`` candidates, which is a
uniform choice; algorithms draw all the ``u``'s of a step with one ``jax.random.uniform`` call.
"""

import jax.numpy as jnp

from jaxrank.types import Array


def random_choice(u: Array, where: Array) -> Array:
    """Index of a uniformly chosen True entry of ``where [K]`` (0 if none is True)."""
    count = jnp.sum(where)
    rank = jnp.minimum(jnp.floor(u * count), jnp.maximum(count - 1, 0))
    return jnp.argmax(jnp.cumsum(where) > rank).astype(jnp.int32)


def random_argmax(u: Array, values: Array, where=None) -> Array:
    """Index of a maximum of ``values [K]`` over ``where``, ties broken uniformly."""
    where = jnp.ones(values.shape, bool) if where is None else where
    best = jnp.max(jnp.where(where, values, -jnp.inf))
    return random_choice(u, where & (values == best))


def random_argmin(u: Array, values: Array, where=None) -> Array:
    """Index of a minimum of ``values [K]`` over ``where``, ties broken uniformly."""
    return random_argmax(u, -values, where)
