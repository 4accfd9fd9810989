"""Slow NumPy reference for Sparring (test reference only), written from the papers and sharing no
code with ``jaxrank``:

* Sparring: Ailon, Karnin, Joachims, "Reducing Dueling Bandits to Cardinal Bandits", ICML 2014:
  a left and a right multi-armed bandit pick ``x`` and ``y`` independently; after the duel the left
  one is told ``1{x won}`` and the right one ``1{y won}``.
* UCB: Auer, Cesa-Bianchi, Fischer, MLJ 2002 (UCB1, Fig. 1) with ``2`` replaced by ``alpha``: each
  arm once, then ``argmax mean_i + sqrt(alpha ln n / n_i)``, ``n`` the plays so far.
* Thompson sampling: Agrawal & Goyal, COLT 2012, Algorithm 1 (Beta(S + 1, F + 1) posteriors).
* Exp3: Auer, Cesa-Bianchi, Freund, Schapire, SIAM J. Comput. 2002, Fig. 1.

Conventions: ``P[i, j]`` is the probability that arm i beats arm j; a duel is ``u < P[x, y]`` for
a fresh uniform ``u``. ``SparringRuns`` advances ``R`` independent runs at once (arrays
``[R, 2, K]``, axis 1 the left and right bandit) because one run at a time in Python is too slow
for the 90-run parity test; every line is the per-run rule applied to each run. Ties are broken
by a fresh uniform priority per arm (the tied arm with the largest priority wins, a uniform
choice). Exp3's weights are kept as plain ``w`` rescaled by their maximum after every update,
which leaves ``w / Σ w`` unchanged.
"""

import math

import numpy as np

__all__ = ["SparringRuns", "simulate_sparring"]


def _uniform_tiebreak_argmax(rng, values):
    """Along the last axis: a uniformly chosen maximiser of ``values``."""
    best = np.max(values, axis=-1, keepdims=True)
    priority = np.where(values == best, rng.random(values.shape), -1.0)
    return np.argmax(priority, axis=-1)


class SparringRuns:
    """Sparring for R independent runs over K arms; ``inner`` in {"ucb", "ts", "exp3"}."""

    def __init__(self, num_runs, K, inner, alpha=0.51, gamma=0.1):
        self.inner, self.alpha, self.gamma, self.K = inner, alpha, gamma, K
        self.S = np.zeros((num_runs, 2, K))  # rewards (wins) per run, instance, arm
        self.N = np.zeros((num_runs, 2, K))  # plays
        self.w = np.ones((num_runs, 2, K))  # Exp3 weights
        self.n = 0  # plays of each instance so far (one per duel)

    def probabilities(self):
        """[R, 2, K] Exp3's p = (1 - γ) w / Σ w + γ / K."""
        return (1.0 - self.gamma) * self.w / self.w.sum(axis=2, keepdims=True) + self.gamma / self.K

    def select(self, rng):
        """[R, 2] arms (left, right) for the next duel (does not advance the state)."""
        if self.inner == "ucb":
            unplayed = self.N == 0
            with np.errstate(divide="ignore", invalid="ignore"):
                index = self.S / self.N + np.sqrt(self.alpha * math.log(max(self.n, 1)) / self.N)
            index = np.where(unplayed, np.inf, index)  # each arm once, unplayed ones tied first
            return _uniform_tiebreak_argmax(rng, index)
        if self.inner == "ts":
            theta = rng.beta(self.S + 1.0, self.N - self.S + 1.0)
            return _uniform_tiebreak_argmax(rng, theta)
        cdf = np.cumsum(self.probabilities(), axis=2)
        u = rng.random(cdf.shape[:2] + (1,)) * cdf[:, :, -1:]
        return np.minimum(np.sum(cdf <= u, axis=2), self.K - 1)

    def step(self, rng, P):
        arms = self.select(rng)
        x, y = arms[:, 0], arms[:, 1]
        x_won = rng.random(x.shape) < P[x, y]
        reward = np.stack([x_won, ~x_won], axis=1).astype(float)  # [R, 2]: left, right
        runs = np.arange(x.size)[:, None]
        side = np.arange(2)[None, :]
        if self.inner == "exp3":
            p = self.probabilities()[runs, side, arms]
            self.w[runs, side, arms] *= np.exp(self.gamma * reward / (p * self.K))
            self.w /= self.w.max(axis=2, keepdims=True)
        self.S[runs, side, arms] += reward
        self.N[runs, side, arms] += 1.0
        self.n += 1
        return x, y


def simulate_sparring(P, T, num_runs, seed, inner="ucb", alpha=0.51, gamma=0.1):
    """Final cumulative Condorcet regret [num_runs] after T steps: Σ_t (Δ_x + Δ_y) / 2, Δ_k = P[w, k] - 1/2."""
    P = np.asarray(P, dtype=float)
    K = P.shape[0]
    winner = next(w for w in range(K) if all(P[w, j] > 0.5 for j in range(K) if j != w))
    gap = P[winner] - 0.5
    rng = np.random.default_rng(seed)
    alg = SparringRuns(num_runs, K, inner, alpha, gamma)
    total = np.zeros(num_runs)
    for _ in range(T):
        x, y = alg.step(rng, P)
        total += (gap[x] + gap[y]) / 2.0
    return total
