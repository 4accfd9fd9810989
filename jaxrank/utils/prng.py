"""``fold_in`` and ``uniform`` for the per-step draws of long ``lax`` loops, bit-identical to
``jax.random.fold_in`` / ``jax.random.uniform`` for threefry keys.

CPU tuning: JAX lowers the Threefry-2x32 hash (Salmon et al., SC 2011: 20 rounds of add, rotate,
xor, with a key injection every 4 rounds) as a 5-trip ``while`` loop to keep programs small; inside
a bandit's step loop that nested loop costs more than the hash (two draws are most of an RCS step at
K = 10). ``threefry2x32`` writes the same hash out round by round, so XLA fuses it with the code around it. The bits
are the same as JAX's (with the default ``jax_threefry_partitionable`` counter layout); any other
key implementation, or the legacy layout, falls back to ``jax.random``.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Array, PRNGKey

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x: Array, r: int) -> Array:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(k1: Array, k2: Array, x1: Array, x2: Array) -> tuple[Array, Array]:
    """Threefry-2x32 (20 rounds) of the counter pair ``(x1, x2)`` under the key ``(k1, k2)``,
    elementwise over broadcast ``uint32`` arrays, unrolled."""
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x1, x2 = x1 + ks[0], x2 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = x1 + x2
            x2 = x1 ^ _rotate_left(x2, r)
        x1 = x1 + ks[(i + 1) % 3]
        x2 = x2 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x1, x2


def _is_threefry(key: PRNGKey) -> bool:
    return (jnp.issubdtype(key.dtype, jax.dtypes.prng_key) and key.shape == ()
            and str(jax.random.key_impl(key)) == "threefry2x32" and jax.config.jax_threefry_partitionable)


def fold_in(key: PRNGKey, data) -> PRNGKey:
    """``jax.random.fold_in(key, data)`` for a scalar typed ``key`` and a 32-bit integer ``data``."""
    if not _is_threefry(key):
        return jax.random.fold_in(key, data)
    k = jax.random.key_data(key)
    x1, x2 = threefry2x32(k[0], k[1], jnp.uint32(0), jnp.asarray(data).astype(jnp.uint32))
    return jax.random.wrap_key_data(jnp.stack([x1, x2]), impl=jax.random.key_impl(key))


def uniform(key: PRNGKey, shape: tuple[int, ...] = ()) -> Array:
    """``jax.random.uniform(key, shape)``: float32 in ``[0, 1)``, the same values."""
    if not _is_threefry(key):
        return jax.random.uniform(key, shape)
    k = jax.random.key_data(key)
    counts = jnp.arange(int(np.prod(shape, dtype=np.int64)), dtype=jnp.uint32).reshape(shape)
    b1, b2 = threefry2x32(k[0], k[1], jnp.zeros(shape, jnp.uint32), counts)
    mantissa = ((b1 ^ b2) >> np.uint32(9)) | np.uint32(0x3F800000)  # 23 random bits in [1, 2)
    floats = jax.lax.bitcast_convert_type(mantissa, jnp.float32) - np.float32(1.0)
    return jnp.maximum(np.float32(0.0), floats)
