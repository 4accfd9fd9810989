"""A slow, independent NumPy MergeDTS (Li, Markov, de Rijke, Zoghi, TOIS 2020, Algorithm 1) for
the parity tests: one run at a time, plain Python lists, true Beta draws (``Generator.beta``).

The batches, pruning, merges and stages are MergeRUCB's, taken from the MergeRUCB reference
(``tests/reference/if_btm_merge.py``); inside the visited batch ``B``:

* ``θ_ij ~ Beta(W_ij + 1, W_ji + 1)`` for ``i < j`` in ``B``, ``θ_ji = 1 - θ_ij``; the first
  candidate ``c`` maximises ``#{j ∈ B : θ_ij > 1/2}`` (ties uniform);
* ``θ⁽²⁾_jc ~ Beta(W_jc + 1, W_cj + 1)`` for ``j ∈ B``, ``j != c``; the second candidate ``d``
  minimises it (the authors' ``relative_sample``); ``d = c`` if ``B = {c}``.
"""

import numpy as np

from tests.reference.if_btm_merge import (
    _argmax,
    _argmin,
    cumulative_regret,  # noqa: F401  (re-exported for the tests)
    end_merge_stage,
    merge_log_t_c,
    merge_prune,
)


def log_c(alpha, epsilon, K, c=0.0):
    """``ln C``: ``C`` itself when given, else ``((4α - 1) K² / ((2α - 1) ε))^{1/(2α - 1)}``."""
    if c > 0:
        return float(np.log(c))
    return float(np.log((4 * alpha - 1) * K * K / ((2 * alpha - 1) * epsilon)) / (2 * alpha - 1))


def first_candidate(rng, W, B):
    """Copeland winner of ``B`` under one antisymmetric Thompson sample (ties uniform)."""
    beats = {i: 0 for i in B}
    for a, i in enumerate(B):
        for j in B[a + 1:]:
            lo, hi = min(i, j), max(i, j)
            theta = rng.beta(W[lo][hi] + 1, W[hi][lo] + 1)  # θ_lo,hi; θ_hi,lo = 1 - θ_lo,hi
            if theta > 0.5:
                beats[lo] += 1
            elif theta < 0.5:
                beats[hi] += 1
    return _argmax(rng, B, lambda i: beats[i])


def second_candidate(rng, W, B, c):
    """The arm of ``B \\ {c}`` with the lowest ``θ⁽²⁾_jc ~ Beta(W_jc + 1, W_cj + 1)``; ``c`` if alone."""
    rivals = [j for j in B if j != c]
    if not rivals:
        return c
    theta = {j: rng.beta(W[j][c] + 1, W[c][j] + 1) for j in rivals}
    return _argmin(rng, rivals, lambda j: theta[j])


class MergeDTS:
    """One run; ``duels`` yields ``(c, d)`` forever; ``exploit_arm`` is set once one arm is left."""

    def __init__(self, P, rng, alpha=1.01, epsilon=0.01, partition_size=4, c=0.0):
        self.P = np.asarray(P, dtype=float).tolist()
        self.rng = rng
        self.K = K = len(self.P)
        self.alpha = alpha
        self.M = partition_size
        self.log_c = log_c(alpha, epsilon, K, c)
        perm = [int(a) for a in rng.permutation(K)]
        self.batches = [perm[s:s + partition_size] for s in range(0, K, partition_size)]
        self.W = [[0] * K for _ in range(K)]
        self.t = 0
        self.stage = 1
        self.pointer = -1
        self.exploit_arm = None
        self.dropped = []
        self.duels = self._run()

    def _run(self):
        while sum(len(b) for b in self.batches) > 1:
            self.t += 1
            nb = len(self.batches)
            k = next(k % nb for k in range(self.pointer + 1, self.pointer + 1 + nb)
                     if len(self.batches[k % nb]) >= 2)
            self.pointer = k
            B = merge_prune(self.W, self.batches[k], merge_log_t_c(self.t, self.log_c), self.alpha)
            self.dropped += [i for i in self.batches[k] if i not in B]
            self.batches[k] = B
            c = first_candidate(self.rng, self.W, B)
            d = second_candidate(self.rng, self.W, B, c)
            if self.rng.random() < self.P[c][d]:
                self.W[c][d] += 1
            else:
                self.W[d][c] += 1
            yield c, d
            end_merge_stage(self)
        self.exploit_arm = self.batches[0][0]
        while True:
            yield self.exploit_arm, self.exploit_arm
