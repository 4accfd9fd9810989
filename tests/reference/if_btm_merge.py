"""Slow, obviously-correct NumPy/Python references: Interleaved Filter, Beat-the-Mean, MergeRUCB.

Written from the papers' pseudo-code, sharing no code with ``jaxrank`` (test reference only):

* Interleaved Filter IF1/IF2: Yue, Broder, Kleinberg, Joachims, "The K-armed dueling bandits
  problem", COLT 2009 / JCSS 2012, Algorithms 1 and 2, ``δ = 1/(T K²)``,
  ``c_t = sqrt(log(1/δ)/t)``.
* Beat-the-Mean: Yue & Joachims, "Beat the mean bandit", ICML 2011, Algorithm 1 (online),
  ``δ = 1/(2TK)``, ``c_{δ,γ}(n) = 3γ² sqrt(log(1/δ)/n)``.
* MergeRUCB: Zoghi, Whiteson, de Rijke, "MergeRUCB: a method for large-scale online ranker
  evaluation", WSDM 2015, Algorithm 1, with ``C = ((4α-1)K²/((2α-1)δ))^{1/(2α-1)}`` handled in
  log space; details the paper leaves open follow the authors' Lerot ``mergeRUCBSampler``.

Each algorithm is written as a Python *generator* that follows the pseudo-code's loops literally
(``while W: for b in W: compare ...``) and yields every duel ``(first, second)`` it makes; a duel
is ``rng.random() < P[first, second]`` (True: ``first`` won). When exploration is over the object
sets ``exploit_arm`` and yields only self-duels of that arm, so ``cumulative_regret`` can add the
rest of the horizon in one go. Arms are 0-based; every random choice uses the ``np.random.Generator``
passed in; ties are broken uniformly over the tied arms.

Resolved ambiguities (shared with the JAX versions, see their docstrings): IF visits ``W`` in
index order and, when several arms beat ``b̂`` confidently after a pass, takes the one with the
lowest ``P̂_b̂b'``; BTM draws the opponent from all of ``W`` (the evaluated arm included);
MergeRUCB skips single-arm batches, merges when every batch is a singleton, prunes a batch
simultaneously (never emptying it), uses ``x/0 := 1`` in the UCB and ends stage ``s`` at
``<= K/2^s`` arms. Here, as in Lerot, the batches are shuffled before the merge sorts them by size
(the JAX version orders equal sizes from a random label instead).
"""

import math

import numpy as np

__all__ = [
    "BeatTheMean",
    "InterleavedFilter",
    "MergeRUCB",
    "btm_radius",
    "condorcet_winner",
    "cumulative_regret",
    "if_pass_decision",
    "if_radius",
    "merge_batches",
    "merge_log_c",
    "merge_log_t_c",
    "merge_prune",
    "merge_ucb",
]


# ----------------------------------------------------------------------------------------------
# shared problem helpers
# ----------------------------------------------------------------------------------------------


def condorcet_winner(P):
    """The arm w with P[w, j] > 1/2 for all j != w (None if there is none)."""
    K = len(P)
    for w in range(K):
        if all(P[w][j] > 0.5 for j in range(K) if j != w):
            return w
    return None


def cumulative_regret(algo, P, T):
    """Σ_t (Δ_wi + Δ_wj)/2 over the first T duels of ``algo``, Δ_wk = P[w, k] - 1/2."""
    P = np.asarray(P, dtype=float)
    w = condorcet_winner(P)
    gap = [float(P[w, k]) - 0.5 for k in range(len(P))]
    total = 0.0
    for t in range(T):
        if algo.exploit_arm is not None:  # only self-duels of one arm from here on
            return total + (T - t) * gap[algo.exploit_arm]
        i, j = next(algo.duels)
        total += 0.5 * (gap[i] + gap[j])
    return total


def _uniform(rng, arms):
    """A uniform draw from ``arms`` (``floor(u n)``, u ~ U[0, 1): cheaper than ``rng.integers``)."""
    arms = list(arms)
    return arms[min(int(rng.random() * len(arms)), len(arms) - 1)]


def _argmin(rng, arms, value):
    best = min(value(a) for a in arms)
    return _uniform(rng, [a for a in arms if value(a) == best])


def _argmax(rng, arms, value):
    best = max(value(a) for a in arms)
    return _uniform(rng, [a for a in arms if value(a) == best])


# ----------------------------------------------------------------------------------------------
# Interleaved Filter (IF1 / IF2)
# ----------------------------------------------------------------------------------------------


def if_radius(t, horizon, K):
    """c_t = sqrt(log(1/δ)/t), δ = 1/(T K²)."""
    return math.sqrt(math.log(horizon * K * K) / t)


def if_pass_decision(rng, b_hat, W, wins, n, horizon, K, variant=2):
    """Lines 12-21 after a pass. ``wins[b]``/``n[b]``: b̂'s record against b this round.

    Returns ``(b_hat, W, switched)``; on a switch the caller resets the records.
    """
    p = {b: wins[b] / n[b] for b in W}
    c = {b: if_radius(n[b], horizon, K) for b in W}
    # lines 12-14: b̂ beats b and 1/2 lies outside (P̂ - c, P̂ + c)
    W = [b for b in W if not (p[b] > 0.5 and p[b] - c[b] > 0.5)]
    # line 15: some b' beats b̂ confidently
    winners = [b for b in W if p[b] < 0.5 and p[b] + c[b] < 0.5]
    if not winners:
        return b_hat, W, False
    new = _argmin(rng, winners, lambda b: p[b])
    if variant == 2:  # IF2 lines 16-18: prune everything that lost to the old b̂ on average
        W = [b for b in W if not p[b] > 0.5]
    W = [b for b in W if b != new]  # b̂ ← b', W ← W \ {b'}
    return new, W, True


class InterleavedFilter:
    def __init__(self, P, rng, horizon, variant=2):
        self.P = np.asarray(P, dtype=float).tolist()
        self.rng = rng
        self.K = len(P)
        self.horizon = horizon
        self.variant = variant
        self.b_hat = int(rng.integers(self.K))  # line 3: b̂ chosen at random
        self.W = [b for b in range(self.K) if b != self.b_hat]  # line 4
        self.exploit_arm = None
        self.duels = self._run()

    def _run(self):
        wins = {b: 0 for b in self.W}
        n = {b: 0 for b in self.W}
        while self.W:  # line 7
            for b in list(self.W):  # lines 8-11: one pass, b̂ against every b in W
                won = self.rng.random() < self.P[self.b_hat][b]
                wins[b] += int(won)
                n[b] += 1
                yield self.b_hat, b
            self.b_hat, self.W, switched = if_pass_decision(
                self.rng, self.b_hat, self.W, wins, n, self.horizon, self.K, self.variant)
            if switched:  # new round: reset every estimate
                wins = {b: 0 for b in self.W}
                n = {b: 0 for b in self.W}
        self.exploit_arm = self.b_hat
        while True:
            self.rng.random()
            yield self.b_hat, self.b_hat


# ----------------------------------------------------------------------------------------------
# Beat-the-Mean (online)
# ----------------------------------------------------------------------------------------------


def btm_radius(n, horizon, K, gamma=1.0):
    """c_{δ,γ}(n) = 3γ² sqrt(log(1/δ)/n), δ = 1/(2TK); 1 when n = 0."""
    if n == 0:
        return 1.0
    return 3.0 * gamma**2 * math.sqrt(math.log(2.0 * horizon * K) / n)


class BeatTheMean:
    def __init__(self, P, rng, horizon, gamma=1.0):
        self.P = np.asarray(P, dtype=float).tolist()
        self.rng = rng
        self.K = len(P)
        self.horizon = horizon
        self.gamma = gamma
        self.W = list(range(self.K))  # W_1
        # the record of b against each opponent b' (so comparisons with a removed arm can be deleted)
        self.wins = [[0] * self.K for _ in range(self.K)]
        self.plays = [[0] * self.K for _ in range(self.K)]
        self.exploit_arm = None
        self.duels = self._run()

    def n_b(self, b):
        return sum(self.plays[b][o] for o in self.W)

    def w_b(self, b):
        return sum(self.wins[b][o] for o in self.W)

    def p_hat(self, b):
        n = self.n_b(b)
        return 0.5 if n == 0 else self.w_b(b) / n

    def _run(self):
        # n_b and w_b are kept as running sums of the records against W (recomputed on removal).
        n = {b: 0 for b in self.W}
        w = {b: 0 for b in self.W}
        while len(self.W) > 1:  # line 10
            fewest = min(n[a] for a in self.W)
            b = _uniform(self.rng, [a for a in self.W if n[a] == fewest])  # line 11
            b2 = _uniform(self.rng, self.W)  # line 12
            won = self.rng.random() < self.P[b][b2]
            self.plays[b][b2] += 1  # lines 13-14: only b's record changes
            self.wins[b][b2] += int(won)
            n[b] += 1
            w[b] += int(won)
            yield b, b2
            p = {a: (0.5 if n[a] == 0 else w[a] / n[a]) for a in self.W}
            c = btm_radius(min(n.values()), self.horizon, self.K, self.gamma)
            lowest = min(p.values())
            if lowest + c <= max(p.values()) - c:  # line 16
                worst = _uniform(self.rng, [a for a in self.W if p[a] == lowest])  # line 17
                self.W.remove(worst)  # lines 18-19: drop it and every comparison against it
                n = {a: self.n_b(a) for a in self.W}
                w = {a: self.w_b(a) for a in self.W}
        self.exploit_arm = self.W[0]
        while True:
            self.rng.random()
            yield self.W[0], self.W[0]


# ----------------------------------------------------------------------------------------------
# MergeRUCB
# ----------------------------------------------------------------------------------------------


def merge_log_c(alpha, delta, K):
    """ln C, C = ((4α-1)K²/((2α-1)δ))^{1/(2α-1)}, without forming C."""
    return (math.log(4 * alpha - 1) + 2 * math.log(K) - math.log(2 * alpha - 1) - math.log(delta)) / (2 * alpha - 1)


def merge_log_t_c(t, log_c):
    """ln(t + C) from ln C, without forming C."""
    hi, lo = max(math.log(t), log_c), min(math.log(t), log_c)
    return hi + math.log1p(math.exp(lo - hi))


def merge_ucb(W, i, j, log_t_c, alpha):
    """U_ij = W_ij/N + sqrt(α ln(t + C)/N), N = W_ij + W_ji, each x/0 := 1; U_ii = 1/2."""
    if i == j:
        return 0.5
    N = W[i][j] + W[j][i]
    if N == 0:
        return 2.0
    return W[i][j] / N + math.sqrt(alpha * log_t_c / N)


def merge_prune(W, batch, log_t_c, alpha):
    """The batch without its arms i with U_ij < 1/2 for some j in it (unchanged if all would go)."""
    beaten = [i for i in batch if any(merge_ucb(W, i, j, log_t_c, alpha) < 0.5 for j in batch)]
    if len(beaten) == len(batch):
        return list(batch)
    return [i for i in batch if i not in beaten]


def merge_batches(rng, batches, M):
    """Shuffle, sort by size, then pair smallest with largest unless that exceeds 3M/2 arms."""
    old = [list(b) for b in batches]
    order = rng.permutation(len(old))
    old = sorted((old[k] for k in order), key=len)  # stable: equal sizes stay shuffled
    new = []
    i, j = 0, len(old) - 1
    while i <= j:
        if i == j:
            new.append(old[i])
            break
        if len(old[i]) + len(old[j]) > 1.5 * M:
            new.append(old[j])
            j -= 1
        else:
            new.append(old[i] + old[j])
            i += 1
            j -= 1
    return new


def end_merge_stage(run) -> None:
    """End of stage s (MergeRUCB, Algorithm 1): at most K / 2^s arms left, or nothing but
    singletons, merges the batches (twice if one is still at most M/2) and starts stage s + 1."""
    sizes = [len(b) for b in run.batches]
    few = sum(sizes) <= run.K / 2**run.stage
    if (few or max(sizes) < 2) and len(run.batches) > 1:
        run.batches = merge_batches(run.rng, run.batches, run.M)
        if min(len(b) for b in run.batches) <= 0.5 * run.M:
            run.batches = merge_batches(run.rng, run.batches, run.M)
        run.stage += 1
        run.pointer %= len(run.batches)


class MergeRUCB:
    """One run; ``duels`` yields ``(c, d)`` forever; ``exploit_arm`` is set once one arm is left and
    ``dropped`` lists the pruned arms. Subclasses change the duel inside the visited batch
    (``pick``) and ``ln C``."""

    exploit_draws = True  # the exploit phase draws (and ignores) one uniform a step, as the JAX duel does

    def __init__(self, P, rng, alpha=1.01, delta=0.01, partition_size=4, *, log_c=None):
        self.P = np.asarray(P, dtype=float).tolist()
        self.rng = rng
        self.K = K = len(self.P)
        self.alpha = alpha
        self.M = partition_size
        self.log_c = merge_log_c(alpha, delta, K) if log_c is None else log_c
        perm = [int(a) for a in rng.permutation(K)]
        self.batches = [perm[s:s + partition_size] for s in range(0, K, partition_size)]
        self.W = [[0] * K for _ in range(K)]
        self.t = 0
        self.stage = 1
        self.pointer = -1
        self.exploit_arm = None
        self.dropped = []
        self.duels = self._run()

    def pick(self, B, log_t_c):
        """MergeRUCB's duel in batch ``B``: ``c`` uniform, ``d`` the rival with the highest ``U_dc``."""
        c = _uniform(self.rng, B)
        rivals = [j for j in B if j != c]
        if not rivals:
            return c, c
        return c, _argmax(self.rng, rivals, lambda j: merge_ucb(self.W, j, c, log_t_c, self.alpha))

    def _run(self):
        while sum(len(b) for b in self.batches) > 1:
            self.t += 1
            # round robin over the batches with at least two arms
            nb = len(self.batches)
            k = next(k % nb for k in range(self.pointer + 1, self.pointer + 1 + nb)
                     if len(self.batches[k % nb]) >= 2)
            self.pointer = k
            log_t_c = merge_log_t_c(self.t, self.log_c)
            B = merge_prune(self.W, self.batches[k], log_t_c, self.alpha)
            self.dropped += [i for i in self.batches[k] if i not in B]
            self.batches[k] = B
            c, d = self.pick(B, log_t_c)
            if self.rng.random() < self.P[c][d]:
                self.W[c][d] += 1
            else:
                self.W[d][c] += 1
            yield c, d
            end_merge_stage(self)
        self.exploit_arm = self.batches[0][0]
        while True:
            if self.exploit_draws:
                self.rng.random()
            yield self.exploit_arm, self.exploit_arm
