"""Beta distributions of win counts: exact samples (``beta_sample``) and ``log P(Beta(a, b) >= 1/2)``
for integer-valued counts, accurate in float32.

Sampling (the one Beta sampler of the Thompson-sampling bandits: D-TS, MergeDTS, Self-Sparring,
Sparring-TS): ``Beta(a, b) = X / (X + Y)`` with ``X ~ Gamma(a)``, ``Y ~ Gamma(b)``. A gamma of integer
shape up to 4 is a sum of exponentials (``-log`` of a product of uniforms); any other shape takes
two Marsaglia & Tsang (2000, ACM TOMS 26(3), "A simple method for generating gamma variables")
proposals from Box-Muller normals, the first accepted being the draw (a proposal is rejected a few
percent of the time for shapes near 1, less for larger ones); an entry whose two proposals are both
rejected is redrawn in a ``while`` loop that takes no trip unless some entry (of any vmapped lane)
needs it. So a draw costs 8 uniforms (``uniforms``: both 32-bit words of each Threefry block) and
no per-element loop; it is exact in law.

Tail probabilities: For integers ``a, b >= 1``, ``P(Beta(a, b) >= 1/2) = P(Bin(a + b - 1, 1/2) <= a - 1)``. Small
cases (``a + b <= TABLE_SIZE``) are read from a table of exact binomial sums; larger ones use the
Peizer-Pratt normal approximation of the binomial tail (Peizer & Pratt 1968, JASA 63), whose
absolute error is below 1e-5 there. Both avoid float32 ``betainc``, which loses about 4e-2 for
counts near 3e4 because ``lgamma`` terms of size ~3e5 cancel.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr

from jaxrank.types import Array
from jaxrank.utils import prng

TABLE_SIZE = 64


def _exact_table(size: int) -> np.ndarray:
    """``table[a - 1, b - 1] = log P(Beta(a, b) >= 1/2)`` for ``1 <= a, b <= size``."""
    table = np.zeros((size, size))
    for a in range(1, size + 1):
        for b in range(1, size + 1):
            n = a + b - 1
            table[a - 1, b - 1] = math.log(sum(math.comb(n, k) for k in range(a)) / 2**n)
    return table


_TABLE = _exact_table(TABLE_SIZE).astype(np.float32)


def _peizer_pratt(a: Array, b: Array) -> Array:
    """Peizer-Pratt ``z`` with ``P(Bin(n, 1/2) <= a - 1) ~ Phi(z)``, ``n = a + b - 1``.

    With ``S = a - 1/2``, ``F = b - 1/2`` the general formula simplifies at ``p = 1/2`` to
    ``d = (a - b)/2 + 0.02 (1/(2a) - 1/(2b))`` and ``T = S log(2S/n) + F log(2F/n)``, computed
    with ``log1p`` so the two nearly cancelling terms keep their precision.
    """
    n = a + b - 1.0
    x = (a - b) / n
    d = 0.5 * (a - b) + 0.01 * (1.0 / a - 1.0 / b)
    t = (a - 0.5) * jnp.log1p(x) + (b - 0.5) * jnp.log1p(-x)
    gap = 0.5 * jnp.abs(a - b)
    z = d / jnp.maximum(gap, 0.5) * jnp.sqrt(2.0 * jnp.maximum(t, 0.0) / (1.0 + 1.0 / (6.0 * n)))
    return jnp.where(a == b, 0.0, z)


def log_prob_beta_at_least_half(a: Array, b: Array) -> Array:
    """``log P(Beta(a, b) >= 1/2)`` elementwise for integer-valued ``a, b >= 1`` (float32)."""
    a = jnp.asarray(a, jnp.float32)
    b = jnp.asarray(b, jnp.float32)
    small = (a <= TABLE_SIZE) & (b <= TABLE_SIZE)
    i = jnp.clip(a, 1, TABLE_SIZE).astype(jnp.int32) - 1
    j = jnp.clip(b, 1, TABLE_SIZE).astype(jnp.int32) - 1
    return jnp.where(small, jnp.asarray(_TABLE)[i, j], log_ndtr(_peizer_pratt(a, b)))


def _is_threefry(key) -> bool:
    return (str(jax.random.key_impl(key)) == "threefry2x32" and jax.config.jax_threefry_partitionable
            and key.shape == ())


def uniforms(key, num: int) -> jax.Array:
    """``[num]`` independent uniforms in [0, 1): both 32-bit words of each Threefry-2x32 block (one
    hash per two numbers), top 23 bits as in ``jax.random.uniform``; ``jax.random.uniform`` for
    other key implementations."""
    if not _is_threefry(key):
        return jax.random.uniform(key, (num,))
    k = jax.random.key_data(key)
    half = -(-num // 2)
    b1, b2 = prng.threefry2x32(k[0], k[1], jnp.zeros(half, jnp.uint32), jnp.arange(half, dtype=jnp.uint32))
    mantissa = (jnp.concatenate([b1, b2])[:num] >> np.uint32(9)) | np.uint32(0x3F800000)
    return jnp.maximum(np.float32(0.0), jax.lax.bitcast_convert_type(mantissa, jnp.float32) - np.float32(1.0))


def cos_sin_2pi(u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(cos 2πu, sin 2πu)`` for ``u`` in [0, 1), float32 to about 2 ulp: the nearest quarter turn
    ``q`` is exact (``u - q/4`` rounds nothing), then Cephes' ``sinf`` / ``cosf`` minimax polynomials on
    ``|r| <= π/4``. Polynomials vectorise where XLA:CPU's ``cos`` and ``sin`` do not, and this pair
    was the costliest part of a MergeDTS step."""
    quarter = jnp.round(4.0 * u)
    r = np.float32(2.0 * np.pi) * (u - 0.25 * quarter)
    r2 = r * r
    sin_r = r + r * r2 * (-1.6666654611e-1 + r2 * (8.3321608736e-3 + r2 * -1.9515295891e-4))
    cos_r = 1.0 - 0.5 * r2 + r2 * r2 * (4.166664568298827e-2 + r2 * (-1.388731625493765e-3 + r2 * 2.443315711809948e-5))
    q = quarter.astype(jnp.int32) & 3
    cos = jnp.where(q == 0, cos_r, jnp.where(q == 1, -sin_r, jnp.where(q == 2, -cos_r, sin_r)))
    sin = jnp.where(q == 0, sin_r, jnp.where(q == 1, cos_r, jnp.where(q == 2, -sin_r, -cos_r)))
    return cos, sin


def _gamma_proposals(u: jax.Array, shape: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``Gamma(shape)`` for ``shape [n] >= 1`` from ``u [4n]`` (4 uniforms per entry): ``(value, whether
    it is a draw)``, both ``[n]``.

    An integer shape ``a <= 4`` is a sum of ``a`` Exp(1): ``-log Π_{i<a} (1 - u_i)``, always a draw.
    Other shapes take two Marsaglia & Tsang (2000) proposals (Box-Muller normals), the first
    accepted being the draw: with ``d = a - 1/3``, ``y = x / sqrt(9d)``, ``d (1 + y)³`` is accepted
    when ``y > -1`` and ``log u < x²/2 + d (3 log1p(y) - y (3 + y (3 + y)))`` (``= x²/2 + d (1 - v
    + log v)``). Win counts make small integer shapes common (an arm never beaten gives ``a = 1``),
    and they are where the rejection rate is highest (5% a proposal at ``a = 1``).
    """
    n = shape.shape[0]
    rows = u.reshape(4, n)
    u_radius, u_angle, u_accept = rows[0], rows[1], rows[2:]
    small = (shape <= 4.0) & (shape == jnp.floor(shape))
    factors = [jnp.where(shape > i, 1.0 - rows[i], 1.0) for i in range(4)]  # (1 - u) in (0, 1]
    exp_sum = -jnp.log(factors[0] * factors[1] * factors[2] * factors[3])
    radius = jnp.sqrt(-2.0 * jnp.log1p(-u_radius))
    x = radius * jnp.stack(cos_sin_2pi(u_angle))  # [2, n]
    d = shape - 1.0 / 3.0
    y = jax.lax.rsqrt(9.0 * d) * x
    valid = y > -1.0
    log_v_terms = 3.0 * jnp.log1p(jnp.where(valid, y, 0.0)) - y * (3.0 + y * (3.0 + y))
    accept = valid & (jnp.log(u_accept) < 0.5 * x * x + d * log_v_terms)
    value = d * (1.0 + y) ** 3
    return (jnp.where(small, exp_sum, jnp.where(accept[0], value[0], value[1])),
            small | accept[0] | accept[1])


def _gamma_redraw(key, shape: jax.Array, sample: jax.Array, missing: jax.Array) -> jax.Array:
    """``sample [n]`` with its ``missing`` entries drawn from ``Gamma(shape)``, in rounds of two
    proposals (uniforms from ``fold_in(key, round)``). One flat loop: no trip unless some entry (of
    any vmapped lane) is missing."""
    n = shape.shape[0]

    def round_(carry):
        r, missing, sample = carry
        value, ok = _gamma_proposals(uniforms(prng.fold_in(key, r), 4 * n), shape)
        return r + 1, missing & ~ok, jnp.where(missing & ok, value, sample)

    init = (jnp.zeros((), jnp.int32), missing, sample)
    return jax.lax.while_loop(lambda c: jnp.any(c[1]), round_, init)[2]


def beta_sample(key, u: jax.Array, a: jax.Array, b: jax.Array, where=None) -> jax.Array:
    """``Beta(a, b)``, ``a, b >= 1`` (``[n]`` each), as ``X / (X + Y)`` of two gammas, from ``u [8n]``
    (and ``key`` for the rare entries whose two proposals are both rejected). Exact in law, on the
    entries of ``where [n]`` (default all; the others may keep a rejected proposal, so that the redraw
    loop runs only for entries that are read)."""
    shape = jnp.concatenate([a, b])
    value, ok = _gamma_proposals(u, shape)
    needed = jnp.ones(shape.shape, bool) if where is None else jnp.concatenate([where, where])
    g = _gamma_redraw(key, shape, value, ~ok & needed)
    total = g[: a.shape[0]] + g[a.shape[0]:]  # 0 only when both sums of exponentials are 0 (probability 2^-46)
    return jnp.where(total > 0, g[: a.shape[0]] / total, 0.5)
