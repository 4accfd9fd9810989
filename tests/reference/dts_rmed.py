"""Slow NumPy references for Double Thompson Sampling and RMED1 (test reference only).

Written from the papers, sharing no code with ``jaxrank``:

* D-TS: Wu & Liu, "Double Thompson Sampling for Dueling Bandits", NIPS 2016, Algorithm 1.
* RMED1: Komiyama, Honda, Kashima, Nakagawa, "Regret Lower Bound and Optimal Algorithm in Dueling
  Bandit Problem", COLT 2015, Algorithm 1 (initial phase L = 1, f(K) = 0.3 K^1.01) with the RMED1
  opponent subroutine (Algorithm 2).

Conventions: arms are 0-based rows of ``P`` (``P[i, j]`` = probability that i beats j); steps ``t``
are 1-based; ``W[i, j]`` counts the wins of i over j; a duel ``(first, second)`` is ``u < P[first,
second]`` for a fresh uniform ``u`` (True: first won); a self-duel adds to ``W[a, a]``, which no
rule reads. Every random choice comes from the ``np.random.Generator`` passed in.

``DTSRuns`` advances ``R`` independent runs at once (arrays ``[R, K, K]``) because one run at a
time in Python is too slow for the 90-run parity test; every line is the per-run rule applied to
each run, and ties are broken by a fresh uniform priority per arm (the tied arm with the largest
priority wins, a uniform choice). ``RMED1`` is one run in plain Python (lists, sets, floats) that
follows the pseudo-code step by step and keeps ``I_i`` up to date for the two arms a duel touches.
``*_loop`` functions are element-by-element versions used to check hand-built states.
"""

import math

import numpy as np

__all__ = [
    "condorcet_winner",
    "dts_bounds_loop",
    "dts_candidates_loop",
    "DTSRuns",
    "kl_half",
    "rmed_divergence_loop",
    "RMED1",
    "simulate_dts",
    "simulate_rmed1",
]


def condorcet_winner(P):
    P = np.asarray(P, dtype=float)
    for w in range(P.shape[0]):
        if all(P[w, j] > 0.5 for j in range(P.shape[0]) if j != w):
            return w
    return None


def _regret(P, w, i, j):
    """(Δ_wi + Δ_wj) / 2 with Δ_wk = P[w, k] - 1/2."""
    return ((P[w, i] - 0.5) + (P[w, j] - 0.5)) / 2.0


# ----------------------------------------------------------------------------------------------
# Double Thompson Sampling
# ----------------------------------------------------------------------------------------------


def dts_bounds_loop(W, t, alpha):
    """(U, L) of Algorithm 1 (phase 1), one entry at a time: W/N ± sqrt(α ln t / N), x/0 := 1, diag 1/2."""
    W = np.asarray(W, dtype=float)
    K = W.shape[0]
    U, L = np.empty((K, K)), np.empty((K, K))
    for i in range(K):
        for j in range(K):
            if i == j:
                U[i, j] = L[i, j] = 0.5
                continue
            n = W[i, j] + W[j, i]
            mean = W[i, j] / n if n > 0 else 1.0
            rad = math.sqrt(alpha * math.log(t) / n) if n > 0 else 1.0
            U[i, j], L[i, j] = mean + rad, mean - rad
    return U, L


def dts_candidates_loop(W, t, alpha):
    """The set C of Algorithm 1 (phase 1): arms maximising #{j != i : U_ij > 1/2}."""
    U, _ = dts_bounds_loop(W, t, alpha)
    K = U.shape[0]
    score = [sum(1 for j in range(K) if j != i and U[i, j] > 0.5) for i in range(K)]
    return {i for i in range(K) if score[i] == max(score)}


def _uniform_tiebreak_argmax(rng, values, allowed):
    """Per row: a uniformly chosen maximiser of ``values`` among ``allowed`` (both [R, K])."""
    best = np.max(np.where(allowed, values, -np.inf), axis=1, keepdims=True)
    tied = allowed & (values == best)
    priority = np.where(tied, rng.random(values.shape), -1.0)
    return np.argmax(priority, axis=1)


class DTSRuns:
    """D-TS for R independent runs; ``W`` is [R, K, K]."""

    def __init__(self, num_runs, K, alpha=0.51):
        self.alpha = alpha
        self.W = np.zeros((num_runs, K, K))
        self.t = 0

    def bounds(self, t):
        """[R, K, K] U and L (vectorised ``dts_bounds_loop``)."""
        W = self.W
        N = W + np.swapaxes(W, 1, 2)
        seen = N > 0
        safe = np.where(seen, N, 1.0)
        mean = np.where(seen, W / safe, 1.0)
        rad = np.where(seen, np.sqrt(self.alpha * math.log(t) / safe), 1.0)
        U, L = mean + rad, mean - rad
        d = np.arange(W.shape[1])
        U[:, d, d] = 0.5
        L[:, d, d] = 0.5
        return U, L

    def select(self, rng):
        """(first, second), each [R], for step ``self.t + 1`` (does not advance the state)."""
        R, K, _ = self.W.shape
        t = self.t + 1
        runs = np.arange(R)
        U, L = self.bounds(t)
        # Phase 1: C from the optimistic Copeland score (diagonal U_ii = 1/2 never counts).
        zeta = np.sum(U > 0.5, axis=2)
        C = zeta == zeta.max(axis=1, keepdims=True)
        iu, ju = np.triu_indices(K, k=1)
        theta = np.full((R, K, K), 0.5)
        sample = rng.beta(self.W[:, iu, ju] + 1.0, self.W[:, ju, iu] + 1.0)
        theta[:, iu, ju] = sample
        theta[:, ju, iu] = 1.0 - sample
        copeland = np.sum(theta > 0.5, axis=2)
        first = _uniform_tiebreak_argmax(rng, copeland.astype(float), C)
        # Phase 2: θ2_i ~ Beta(W[i, first] + 1, W[first, i] + 1), "i beats first"; θ2_first = 1/2.
        a = self.W[runs, :, first] + 1.0  # column `first`: W[r, i, first]
        b = self.W[runs, first, :] + 1.0  # row `first`: W[r, first, i]
        theta2 = rng.beta(a, b)
        theta2[runs, first] = 0.5
        allowed = L[runs, :, first] <= 0.5  # l_{i, first} <= 1/2
        second = _uniform_tiebreak_argmax(rng, theta2, allowed)
        return first, second

    def step(self, rng, P):
        first, second = self.select(rng)
        first_won = rng.random(first.shape) < P[first, second]
        winner = np.where(first_won, first, second)
        loser = np.where(first_won, second, first)
        np.add.at(self.W, (np.arange(first.size), winner, loser), 1.0)
        self.t += 1
        return first, second

    def report(self, rng):
        """[R] empirical Copeland winners #{j : W_ij > W_ji}, ties uniform."""
        wins = np.sum(self.W > np.swapaxes(self.W, 1, 2), axis=2).astype(float)
        return _uniform_tiebreak_argmax(rng, wins, np.ones_like(wins, bool))


def simulate_dts(P, T, num_runs, seed, alpha=0.51):
    """Final cumulative regret [num_runs] after T steps."""
    P = np.asarray(P, dtype=float)
    w = condorcet_winner(P)
    rng = np.random.default_rng(seed)
    alg = DTSRuns(num_runs, P.shape[0], alpha)
    total = np.zeros(num_runs)
    for _ in range(T):
        i, j = alg.step(rng, P)
        total += _regret(P, w, i, j)
    return total


# ----------------------------------------------------------------------------------------------
# RMED1
# ----------------------------------------------------------------------------------------------


def kl_half(p):
    """d(p, 1/2) for a Bernoulli, with 0 log 0 = 0."""
    out = 0.0
    if p > 0:
        out += p * math.log(2 * p)
    if p < 1:
        out += (1 - p) * math.log(2 * (1 - p))
    return out


def rmed_divergence_loop(W, i):
    """I_i = Σ_{j != i, N_ij > 0, μ̂_ij <= 1/2} N_ij d(μ̂_ij, 1/2)."""
    total = 0.0
    for j in range(len(W)):
        n = W[i][j] + W[j][i]
        if j == i or n == 0:
            continue
        mu = W[i][j] / n
        if mu <= 0.5:
            total += n * kl_half(mu)
    return total


class RMED1:
    """One run of RMED1. ``leader_first``: the authors' C++ library rule for m(t) (see step)."""

    def __init__(self, K, kweight=0.3, leader_first=False):
        self.K = K
        self.f = kweight * K**1.01
        self.leader_first = leader_first
        self.W = [[0.0] * K for _ in range(K)]
        self.t = 0
        self.pairs = [(i, j) for i in range(K) for j in range(i + 1, K)]
        self.I = [0.0] * K
        self.LC, self.pos, self.LR, self.LN = None, 0, None, None

    def _argmin(self, rng, values, among):
        best = min(values[k] for k in among)
        tied = [k for k in among if values[k] == best]
        return tied[0] if len(tied) == 1 else tied[int(rng.random() * len(tied))]

    def mu(self, i, j):
        n = self.W[i][j] + self.W[j][i]
        return self.W[i][j] / n

    def opponent(self, rng, l):
        """Algorithm 2: m(t) = argmin_{j in Ô_l} μ̂_lj, or l if Ô_l is empty."""
        O = [j for j in range(self.K) if j != l and self.mu(l, j) <= 0.5]
        if self.leader_first:
            leader = self._argmin(rng, self.I, range(self.K))
            if leader in O:
                return leader
            if not O:
                return leader
        if not O:
            return l
        mus = {j: self.mu(l, j) for j in O}
        return self._argmin(rng, mus, O)

    def _duel(self, rng, P, first, second):
        if rng.random() < P[first, second]:
            self.W[first][second] += 1.0
        else:
            self.W[second][first] += 1.0

    def step(self, rng, P):
        K = self.K
        if self.t < len(self.pairs):  # initial phase: each pair once, lexicographic
            first, second = self.pairs[self.t]
            self._duel(rng, P, first, second)
            self.t += 1
            if self.t == len(self.pairs):  # start the main loop: L_C = L_R = [K]
                self.I = [rmed_divergence_loop(self.W, i) for i in range(K)]
                self.LC, self.pos, self.LR, self.LN = list(range(K)), 0, set(range(K)), set()
            return first, second
        l = self.LC[self.pos]  # l(t): L_C in increasing order
        m = self.opponent(rng, l)  # m(t), Algorithm 2
        self._duel(rng, P, l, m)
        self.t += 1
        self.I[l] = rmed_divergence_loop(self.W, l)  # only rows l and m changed
        self.I[m] = rmed_divergence_loop(self.W, m)
        self.pos += 1
        self.LR.discard(l)  # L_R <- L_R minus l(t)
        best = min(self.I)
        bound = math.log(self.t) + self.f
        for j in range(K):  # L_N gets the arms not in L_R satisfying eq. (4)
            if j not in self.LR and self.I[j] - best <= bound:
                self.LN.add(j)
        if self.pos == len(self.LC):  # loop over: L_C, L_R <- L_N, L_N <- empty
            self.LC, self.pos, self.LR, self.LN = sorted(self.LN), 0, set(self.LN), set()
        return l, m

    def report(self, rng):
        I = [rmed_divergence_loop(self.W, i) for i in range(self.K)]
        return self._argmin(rng, I, range(self.K))


def simulate_rmed1(P, T, num_runs, seed, kweight=0.3, leader_first=False):
    """Final cumulative regret [num_runs] after T steps (runs one after another)."""
    P = np.asarray(P, dtype=float)
    w = condorcet_winner(P)
    gap = [P[w, k] - 0.5 for k in range(P.shape[0])]
    out = np.empty(num_runs)
    for r in range(num_runs):
        rng = np.random.default_rng([seed, r])
        alg = RMED1(P.shape[0], kweight, leader_first)
        total = 0.0
        for _ in range(T):
            i, j = alg.step(rng, P)
            total += (gap[i] + gap[j]) / 2.0
        out[r] = total
    return out
