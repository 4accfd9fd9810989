"""SOLAR's online protocol (Wang et al. 2015, Algorithm 1) as plain NumPy loops, with PA-II.

The random choices (query permutation, a uniform per instance for the order inside a query,
a coin per pair for the flip) are inputs, so a test can replay the draws of a JAX pass; everything
else — which instances exist, their order, the updates and which model scores which query — is
derived here one query and one instance at a time.
"""

import numpy as np


def canonical_pairs(labels, mask):
    """``[(q, i, j)]`` with ``l_i > l_j``, both real; query-major, then i, then j."""
    out = []
    for q in range(labels.shape[0]):
        for i in range(labels.shape[1]):
            for j in range(labels.shape[1]):
                if mask[q, i] and mask[q, j] and labels[q, i] > labels[q, j]:
                    out.append((q, i, j))
    return out


def online_pa2(features, labels, mask, order, uniforms, flips, c):
    """Returns ``(w_final [D], w_before [Q, D])``: ``w_before[k]`` scored the k-th visited query."""
    pairs = canonical_pairs(labels, mask)
    w = np.zeros(features.shape[2])
    w_before = []
    for q in order:
        w_before.append(w.copy())
        mine = sorted((uniforms[n], n) for n, (pq, _, _) in enumerate(pairs) if pq == q)
        for _, n in mine:
            _, i, j = pairs[n]
            y = -1.0 if flips[n] else 1.0
            z = y * (features[q, i] - features[q, j])
            loss = max(0.0, 1.0 - y * w.dot(z))
            if loss > 0:
                w = w + loss / (z.dot(z) + 1.0 / (2.0 * c)) * y * z
    return w, np.asarray(w_before)
