"""SOLAR's online protocol (Wang et al. 2015, Algorithm 1) as plain NumPy loops, with PA-II.

The random draws are inputs, so a test can replay those of a JAX pass: the query permutation, one
32-bit shuffle key per query and one word per step whose lowest bit flips the pair. The order
inside a query is the swap-or-not permutation (Hoang, Morris & Rogaway, CRYPTO 2012) of its
instances under the query's key, written out here with Python integers from its definition;
everything else — which instances exist and in which canonical order, the updates and which model
scores which query — is derived here one query and one instance at a time.
"""

import numpy as np

MASK = 0xFFFFFFFF
ROUNDS = 64


def mix(x: int) -> int:
    """MurmurHash3's fmix32."""
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & MASK
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & MASK
    return x ^ (x >> 16)


def swap_or_not(x: int, n: int, key: int) -> int:
    """Position ``x`` of ``[0, n)`` under the keyed permutation: round ``r`` draws ``K = ⌊mix(key ⊕ r·φ)·n / 2^32⌋``
    and swaps ``x`` with ``(K − x) mod n`` when bit 31 of ``mix(mix(key + r·c) ⊕ max(x, partner))`` is set."""
    for r in range(ROUNDS):
        k = (mix(key ^ ((r * 0x9E3779B9) & MASK)) * n) >> 32
        partner = (k - x) % n
        if mix(mix((key + r * 0x632BE5AB) & MASK) ^ max(x, partner)) >> 31:
            x = partner
    return x


def canonical_pairs(labels, mask):
    """``[(q, i, j)]`` with ``l_i > l_j``, both real; query-major, then i, then j."""
    out = []
    for q in range(labels.shape[0]):
        for i in range(labels.shape[1]):
            for j in range(labels.shape[1]):
                if mask[q, i] and mask[q, j] and labels[q, i] > labels[q, j]:
                    out.append((q, i, j))
    return out


def shuffled_visits(pairs, order, keys, flips):
    """``[(q, [(i, j, flipped), ...])]`` in visiting order: query ``q``'s pairs in the order of its key,
    consuming one flip word per instance."""
    step, visits = 0, []
    for q in order:
        mine = [(i, j) for pq, i, j in pairs if pq == q]
        drawn = []
        for m in range(len(mine)):
            i, j = mine[swap_or_not(m, len(mine), int(keys[q]))]
            drawn.append((i, j, bool(int(flips[step]) & 1)))
            step += 1
        visits.append((q, drawn))
    return visits


def _replay(features, labels, mask, order, keys, flips, state, step):
    """Runs ``step(state, z, y) -> state`` over the visits' pairs (``state[0]`` is ``w``);
    returns ``(state, w_before [Q, D])``: ``w_before[k]`` scored the k-th visited query."""
    w_before = []
    for q, drawn in shuffled_visits(canonical_pairs(labels, mask), order, keys, flips):
        w_before.append(state[0].copy())
        for i, j, flipped in drawn:
            y = -1.0 if flipped else 1.0
            state = step(state, y * (features[q, i] - features[q, j]), y)
    return state, np.asarray(w_before)


def online_pa2(features, labels, mask, order, keys, flips, c):
    """PA-II (SOLAR-I): returns ``(w_final [D], w_before [Q, D])``."""

    def step(state, z, y):
        (w,) = state
        loss = max(0.0, 1.0 - y * w.dot(z))
        return (w + loss / (z.dot(z) + 1.0 / (2.0 * c)) * y * z,) if loss > 0 else state

    (w,), w_before = _replay(features, labels, mask, order, keys, flips, (np.zeros(features.shape[2]),), step)
    return w, w_before


def online_arow(features, labels, mask, order, keys, flips, gamma, guard=True):
    """AROW (SOLAR-II; ``guard``: only on pairs with a positive loss): ``(w_final [D], sigma_final [D, D],
    w_before [Q, D])``."""

    def step(state, z, y):
        w, sigma = state
        loss = max(0.0, 1.0 - y * w.dot(z))
        if guard and loss <= 0:
            return state
        sz = sigma.dot(z)
        beta = z.dot(sz) + gamma
        return w + loss / beta * y * sz, sigma - np.outer(sz, sz) / beta

    d = features.shape[2]
    (w, sigma), w_before = _replay(features, labels, mask, order, keys, flips, (np.zeros(d), np.eye(d)), step)
    return w, sigma, w_before


def pass_draws(key, num_queries: int, num_instances: int, block: int):
    """The random inputs of one pass key, drawn with ``jax.random`` as ``protocol.run_pass``
    documents them: the query order ``[Q]``, a shuffle key per query ``[Q]`` and a flip word per
    step (``block`` steps a fold-in key)."""
    import jax
    import jax.numpy as jnp

    key_perm, key_order, key_steps = jax.random.split(key, 3)
    order = np.asarray(jax.random.permutation(key_perm, num_queries))
    keys = np.asarray(jax.random.bits(key_order, (num_queries,), jnp.uint32))
    blocks = -(-num_instances // block)
    flips = np.concatenate([np.asarray(jax.random.bits(jax.random.fold_in(key_steps, b), (block,), jnp.uint32))
                            for b in range(blocks)])
    return order, keys, flips
