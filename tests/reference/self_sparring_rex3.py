"""Slow NumPy references for Independent Self-Sparring and REX3 (test reference only).

Written from the papers, sharing no code with ``jaxrank``:

* Self-Sparring: Sui, Zhuang, Burdick, Yue, "Multi-dueling Bandits with Dependent Arms", UAI 2017,
  Algorithm 1 (Independent Self-Sparring) with m = 2 and learning rate η.
* REX3: Gajane, Urvoy, Clérot, "A Relative Exponential Weighing Algorithm for Adversarial
  Utility-based Dueling Bandits", ICML 2015, Algorithm 1, with γ = min(1/2, sqrt(K ln K / T)).

Conventions: arms are 0-based rows of ``P`` (``P[i, j]`` = probability that i beats j); a duel
``(first, second)`` is ``u < P[first, second]`` for a fresh uniform ``u`` (True: first won); every
random choice comes from the ``np.random.Generator`` passed in. Both classes advance ``R``
independent runs at once (arrays ``[R, K]``), because one run at a time in Python is too slow for
the 90-run parity tests; every line is the per-run rule applied to each run. REX3 keeps its weights
as plain float64 numbers ``w`` renormalised to sum 1 after each step (``p`` depends only on their
ratios).
"""

import math

import numpy as np

from tests.reference.dts_rmed import condorcet_winner

__all__ = [
    "condorcet_winner",
    "rex3_gamma",
    "Rex3Runs",
    "SelfSparringRuns",
    "simulate_rex3",
    "simulate_self_sparring",
]


def _duel(rng, P, first, second):
    """[R] bool: whether ``first`` beat ``second`` in each run."""
    return rng.random(first.shape) < P[first, second]


def _regret(P, first, second):
    """[R] (Δ_wf + Δ_ws) / 2 with Δ_wk = P[w, k] - 1/2, w the Condorcet winner."""
    w = condorcet_winner(P)
    return ((P[w, first] - 0.5) + (P[w, second] - 0.5)) / 2.0


# ----------------------------------------------------------------------------------------------
# Independent Self-Sparring
# ----------------------------------------------------------------------------------------------


class SelfSparringRuns:
    """Algorithm 1 of Sui et al. (m = 2) for R runs; ``S``, ``F`` are [R, K], zero at the start."""

    def __init__(self, num_runs, K, eta=1.0):
        self.eta = eta
        self.S = np.zeros((num_runs, K))
        self.F = np.zeros((num_runs, K))

    def select(self, rng):
        """(first, second), each [R]: for j = 1, 2, θ_i ~ Beta(S_i + 1, F_i + 1) for all i, argmax."""
        picks = []
        for _ in range(2):
            theta = rng.beta(self.S + 1.0, self.F + 1.0)
            picks.append(np.argmax(theta, axis=1))  # continuous draws: ties have probability 0
        return picks[0], picks[1]

    def update(self, first, second, first_won):
        """For j, k in {1, 2}, j != k: S_{i_j} += η r_jk, F_{i_j} += η (1 - r_jk), r_21 = 1 - r_12."""
        runs = np.arange(first.size)
        r12 = first_won.astype(float)
        for arm, r in ((first, r12), (second, 1.0 - r12)):
            np.add.at(self.S, (runs, arm), self.eta * r)
            np.add.at(self.F, (runs, arm), self.eta * (1.0 - r))

    def step(self, rng, P):
        first, second = self.select(rng)
        self.update(first, second, _duel(rng, P, first, second))
        return first, second


def simulate_self_sparring(P, T, num_runs, seed, eta=1.0):
    """Final cumulative regret [num_runs] after T steps."""
    P = np.asarray(P, dtype=float)
    rng = np.random.default_rng(seed)
    alg = SelfSparringRuns(num_runs, P.shape[0], eta)
    total = np.zeros(num_runs)
    for _ in range(T):
        first, second = alg.step(rng, P)
        total += _regret(P, first, second)
    return total


# ----------------------------------------------------------------------------------------------
# REX3
# ----------------------------------------------------------------------------------------------


def rex3_gamma(K, T):
    """γ = min(1/2, sqrt(K ln K / T))."""
    return min(0.5, math.sqrt(K * math.log(K) / T))


class Rex3Runs:
    """Algorithm 1 of Gajane et al. for R runs; ``w`` is [R, K], all ones at the start."""

    def __init__(self, num_runs, K, gamma):
        self.gamma = gamma
        self.w = np.ones((num_runs, K))

    def probabilities(self):
        """[R, K] p_i = (1 - γ) w_i / Σ_j w_j + γ / K."""
        K = self.w.shape[1]
        return (1.0 - self.gamma) * self.w / self.w.sum(axis=1, keepdims=True) + self.gamma / K

    def select(self, rng, p):
        """(a, b), each [R]: two independent draws from p (inverse CDF)."""
        cdf = np.cumsum(p, axis=1)
        cdf[:, -1] = np.inf
        a = np.argmax(rng.random((p.shape[0], 1)) < cdf, axis=1)
        b = np.argmax(rng.random((p.shape[0], 1)) < cdf, axis=1)
        return a, b

    def update(self, p, a, b, a_won):
        """ψ = +1 / -1 / 0 (a won / b won / a = b); w_a *= exp(γ ψ / (2 K p_a)), w_b *= exp(-γ ψ / (2 K p_b))."""
        runs = np.arange(a.size)
        K = self.w.shape[1]
        psi = np.where(a == b, 0.0, np.where(a_won, 1.0, -1.0))
        self.w[runs, a] *= np.exp(self.gamma / K * psi / (2.0 * p[runs, a]))
        self.w[runs, b] *= np.exp(-self.gamma / K * psi / (2.0 * p[runs, b]))
        self.w /= self.w.sum(axis=1, keepdims=True)

    def step(self, rng, P):
        p = self.probabilities()
        a, b = self.select(rng, p)
        self.update(p, a, b, _duel(rng, P, a, b))
        return a, b


def simulate_rex3(P, T, num_runs, seed):
    """Final cumulative regret [num_runs] after T steps, γ tuned for the horizon T."""
    P = np.asarray(P, dtype=float)
    rng = np.random.default_rng(seed)
    alg = Rex3Runs(num_runs, P.shape[0], rex3_gamma(P.shape[0], T))
    total = np.zeros(num_runs)
    for _ in range(T):
        a, b = alg.step(rng, P)
        total += _regret(P, a, b)
    return total
