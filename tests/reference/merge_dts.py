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
    MergeRUCB,
    _argmax,
    _argmin,
    cumulative_regret,
    merge_log_t_c,
    merge_prune,
)

# The MergeRUCB reference's regret, pruning and bound offsets are re-exported for the tests.
__all__ = ["log_c", "first_candidate", "second_candidate", "MergeDTS", "cumulative_regret", "merge_log_t_c",
           "merge_prune"]


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


class MergeDTS(MergeRUCB):
    """One run of MergeDTS: MergeRUCB's run with the duel picked by double Thompson sampling."""

    exploit_draws = False

    def __init__(self, P, rng, alpha=1.01, epsilon=0.01, partition_size=4, c=0.0):
        super().__init__(P, rng, alpha, partition_size=partition_size, log_c=log_c(alpha, epsilon, len(P), c))

    def pick(self, B, log_t_c):
        c = first_candidate(self.rng, self.W, B)
        return c, second_candidate(self.rng, self.W, B, c)
