"""Slow NumPy references for the Copeland dueling bandits CCB and SCB (test reference only).

Written from Zoghi, Karnin, Whiteson, de Rijke, "Copeland Dueling Bandits", NIPS 2015, sharing no
code with ``jaxrank``:

* ``CCB``: Algorithm 1 (Copeland Confidence Bound), one run in plain Python (lists and sets).
* ``SCB``: Algorithm 3 (Scalable Copeland Bandits) around Algorithm 2 (the approximate Copeland
  winner search) and the KL-based elimination of Algorithm 4, written as a generator that yields
  the duels in the order the pseudo-code asks for them.

The points the paper leaves open are settled as ``jaxrank.bandits.ccb`` / ``scb`` document them:
CCB's line 13 falls back to all arms when ``B^c`` has no arm with ``l_jc <= 1/2``; SCB resolves a pair
when ``n d(p̂, 1/2) > ln(4 n K² / δ) + 2 ln max(ln n, 1)``, uses ``β_t = ln(4 t K / δ) + 2 ln max(ln t, 1)``,
stops the search at ``|S| = 1`` or when every pair of an arm of ``S`` is resolved (answer: most resolved
wins), keeps ``W`` across epochs, and draws each arm's opponent when the arm's turn comes.

Conventions: arms are 0-based rows of ``P``; ``W[i][j]`` counts the wins of i over j; a duel
``(first, second)`` is ``u < P[first][second]`` for a fresh uniform ``u``; Copeland regret of a duel
``(i, j)`` is ``cpld(a*) - (cpld(i) + cpld(j)) / 2``. Every random choice comes from the
``np.random.Generator`` passed in.
"""

import math

import numpy as np

__all__ = ["CCB", "SCB", "copeland_regret", "copeland_scores", "cyclic_matrix", "kl", "random_subset", "simulate"]


def copeland_scores(P):
    K = len(P)
    return [sum(1 for j in range(K) if j != i and P[i][j] > 0.5) / (K - 1) for i in range(K)]


def copeland_regret(P, i, j):
    s = copeland_scores(P)
    return max(s) - (s[i] + s[j]) / 2.0


def _duel(rng, P, W, first, second):
    won = rng.random() < P[first][second]
    if won:
        W[first][second] += 1
    else:
        W[second][first] += 1
    return won


def _most_wins(rng, W, arms):
    """Among ``arms``, one beating the most others on the scoresheet (ties uniform)."""
    K = len(W)
    count = {i: sum(1 for j in range(K) if W[i][j] > W[j][i]) for i in arms}
    best = max(count.values())
    return int(rng.choice([i for i in sorted(arms) if count[i] == best]))


# ----------------------------------------------------------------------------------------------
# CCB, Algorithm 1
# ----------------------------------------------------------------------------------------------


def ccb_bounds(W, t, alpha):
    """(U, L) of line 6, one entry at a time: W/N ± sqrt(α ln t / N), x/0 := 1, u_ii = l_ii = 1/2."""
    K = len(W)
    U = [[0.5] * K for _ in range(K)]
    L = [[0.5] * K for _ in range(K)]
    for i in range(K):
        for j in range(K):
            if i == j:
                continue
            n = W[i][j] + W[j][i]
            mean = W[i][j] / n if n > 0 else 1.0
            radius = math.sqrt(alpha * math.log(t) / n) if n > 0 else 1.0
            U[i][j], L[i][j] = mean + radius, mean - radius
    return U, L


class CCB:
    """Algorithm 1, one run."""

    def __init__(self, K, alpha=0.51):
        self.K, self.alpha, self.t = K, alpha, 0
        self.W = [[0] * K for _ in range(K)]
        self.reset()

    def reset(self):  # lines 2-4
        self.B = set(range(self.K))
        self.Bi = [set() for _ in range(self.K)]
        self.LC = self.K

    def update(self, rng, U, L):
        """Lines 7-9; returns C_t (sorted list)."""
        K = self.K
        Cpld = [sum(1 for k in range(K) if k != i and U[i][k] >= 0.5) for i in range(K)]
        cpld = [sum(1 for k in range(K) if k != i and L[i][k] >= 0.5) for i in range(K)]
        C = [i for i in range(K) if Cpld[i] == max(Cpld)]
        # A. Reset disproven hypotheses.
        if any(L[i][j] > 0.5 for i in range(K) for j in self.Bi[i]):
            self.reset()
        # B. Remove non-Copeland winners.
        for i in sorted(self.B):
            if any(Cpld[i] < cpld[j] for j in range(K)):
                self.B.discard(i)
                if len(self.Bi[i]) != self.LC + 1:
                    self.Bi[i] = {k for k in range(K) if U[i][k] < 0.5}
        if not self.B:
            self.reset()
        # C. Add Copeland winners.
        for i in C:
            if cpld[i] == Cpld[i]:
                self.B.add(i)
                self.Bi[i] = set()
                self.LC = K - 1 - Cpld[i]
                for j in range(K):
                    if j == i:
                        continue
                    if len(self.Bi[j]) < self.LC + 1:
                        self.Bi[j] = set()
                    elif len(self.Bi[j]) > self.LC + 1:
                        self.Bi[j] = set(int(x) for x in rng.choice(sorted(self.Bi[j]), self.LC + 1, replace=False))
        return C

    def select(self, rng, U, L, C):
        """Lines 10-13: the duel (c, d)."""
        K = self.K
        if rng.random() < 0.25:  # line 10
            pairs = [(i, j) for i in range(K) for j in sorted(self.Bi[i]) if L[i][j] <= 0.5 <= U[i][j]]
            if pairs:
                return pairs[int(rng.integers(len(pairs)))]
        both = [i for i in C if i in self.B]  # line 11
        if both and rng.random() < 2.0 / 3.0:
            C = both
        c = int(rng.choice(C))  # line 12
        pool = sorted(self.Bi[c]) if rng.random() < 0.5 else list(range(K))  # line 13
        plausible = [j for j in pool if L[j][c] <= 0.5]
        if not plausible:
            plausible = [j for j in range(K) if L[j][c] <= 0.5]
        top = max(U[j][c] for j in plausible)
        best = [j for j in plausible if U[j][c] == top]
        if len(best) > 1:
            best = [j for j in best if j != c]
        return c, int(rng.choice(best))

    def step(self, rng, P):
        self.t += 1
        U, L = ccb_bounds(self.W, self.t, self.alpha)
        C = self.update(rng, U, L)
        c, d = self.select(rng, U, L, C)
        _duel(rng, P, self.W, c, d)
        return c, d

    def report(self, rng):
        return _most_wins(rng, self.W, range(self.K))


# ----------------------------------------------------------------------------------------------
# SCB, Algorithms 2-4
# ----------------------------------------------------------------------------------------------


def kl(p, q):
    """Bernoulli KL divergence d(p, q), 0 ln 0 = 0."""
    out = 0.0
    if p > 0:
        out += math.inf if q <= 0 else p * math.log(p / q)
    if p < 1:
        out += math.inf if q >= 1 else (1 - p) * math.log((1 - p) / (1 - q))
    return out


def _loglog(x):
    return 2.0 * math.log(max(math.log(x), 1.0))


def kl_interval(mean, count, bar):
    """(L, U): min and max q with count d(mean, q) <= bar, by float64 bisection."""
    if count * kl(mean, 1.0) <= bar:
        hi = 1.0
    else:
        a, b = mean, 1.0
        for _ in range(60):
            m = (a + b) / 2
            a, b = (m, b) if count * kl(mean, m) <= bar else (a, m)
        hi = a
    if count * kl(mean, 0.0) <= bar:
        lo = 0.0
    else:
        a, b = 0.0, mean
        for _ in range(60):
            m = (a + b) / 2
            a, b = (a, m) if count * kl(mean, m) <= bar else (m, b)
        lo = b
    return lo, hi


class SCB:
    """Algorithm 3 with Algorithms 2 and 4, one run; ``step`` plays the next duel."""

    def __init__(self, K, epsilon=0.0, first_epoch=1):
        self.K, self.epsilon, self.first_epoch = K, epsilon, first_epoch
        self.W = [[0] * K for _ in range(K)]
        self.S = set(range(K))
        self.answer = None
        self._duels = None

    def is_resolved(self, i, j, log_inv_delta):
        """Algorithm 2, line 1: is the sign of p_ij - 1/2 known at level δ/K²?"""
        n = self.W[i][j] + self.W[j][i]
        if n == 0:
            return False
        bar = math.log(4 * n * self.K**2) + log_inv_delta + _loglog(n)
        return n * kl(self.W[i][j] / n, 0.5) > bar

    def _search(self, rng, log_inv_delta):
        """Algorithm 2 (rewards) driving Algorithm 4 (elimination); yields duels, sets self.answer."""
        K = self.K
        self.S, rewards, t = set(range(K)), [0] * K, 0
        while True:
            for i in sorted(self.S):  # one reward for every arm of S
                j = int(rng.choice([k for k in range(K) if k != i]))
                while not self.is_resolved(i, j, log_inv_delta):
                    yield i, j
                rewards[i] += 1 if self.W[i][j] > self.W[j][i] else 0
            t += 1
            bar = math.log(4 * t * K) + log_inv_delta + _loglog(t)
            bounds = {i: kl_interval(rewards[i] / t, t, bar) for i in self.S}
            best_lower = max(lo for lo, _ in bounds.values())
            self.S = {i for i in self.S if not bounds[i][1] < best_lower}
            best_upper = max(bounds[i][1] for i in self.S)
            known = all(self.is_resolved(i, j, log_inv_delta) for i in self.S for j in range(K) if j != i)
            if len(self.S) == 1 or 1 - best_lower <= (1 + self.epsilon) * (1 - best_upper) or known:
                if known:
                    score = {i: sum(1 for j in range(K) if j != i and self.W[i][j] > self.W[j][i]) for i in self.S}
                else:
                    score = {i: bounds[i][0] for i in self.S}
                top = max(score.values())
                self.answer = int(rng.choice([i for i in sorted(self.S) if score[i] == top]))
                return

    def _epochs(self, rng):
        r = self.first_epoch
        while True:
            T = 2 ** (2**r) if r <= 4 else math.inf
            log_t = 2**r * math.log(2.0)
            log_inv_delta = log_t - math.log(log_t)  # δ = ln(T) / T
            self.answer, steps = None, 0
            for pair in self._search(rng, log_inv_delta):
                yield pair
                steps += 1
                if steps >= T:
                    break
            while steps < T:
                yield self.answer, self.answer
                steps += 1
            r += 1

    def step(self, rng, P):
        if self._duels is None:
            self._duels = self._epochs(rng)
        c, d = next(self._duels)
        _duel(rng, P, self.W, c, d)
        return c, d

    def report(self, rng):
        if self.answer is not None:
            return self.answer
        return _most_wins(rng, self.W, self.S)


def simulate(make, P, T, num_runs, seed, checkpoints=()):
    """Copeland regret of ``num_runs`` runs of ``make()`` on ``P``: ``(final [R], at checkpoints [R, C],
    winners' share of reports at checkpoints [C])``; run r uses ``np.random.default_rng([seed, r])``."""
    P = np.asarray(P, dtype=float).tolist()
    scores = copeland_scores(P)
    best = max(scores)
    checkpoints = list(checkpoints)
    final, at, correct = [], [], np.zeros(len(checkpoints))
    for r in range(num_runs):
        rng = np.random.default_rng([seed, r])
        alg, regret, rec = make(), 0.0, []
        for t in range(1, T + 1):
            i, j = alg.step(rng, P)
            regret += best - (scores[i] + scores[j]) / 2.0
            if t in checkpoints:
                rec.append(regret)
                correct[checkpoints.index(t)] += scores[alg.report(rng)] == best
        final.append(regret)
        at.append(rec)
    return np.array(final), np.array(at), correct / num_runs


# ----------------------------------------------------------------------------------------------
# Test matrices and the saved parity figures
# ----------------------------------------------------------------------------------------------


def cyclic_matrix(K=10):
    """No Condorcet winner, one Copeland winner: i beats j when (j - i) mod K is in 1..K/2 - 1 (and
    the lower index wins at distance K/2), except that arm 0 also beats arm K - 1; ``|p - 1/2|`` is
    0.2, 0.3 or 0.4 by ``(i + j) mod 3``. Arm 0 beats K/2 + 1 arms and loses to K/2 - 2."""
    P = np.full((K, K), 0.5)
    for i in range(K):
        for j in range(K):
            if i == j:
                continue
            gap = 0.2 + 0.1 * ((i + j) % 3)
            d = (j - i) % K
            wins = 1 <= d < K // 2 or (d == K // 2 and i < j) or (i, j) == (0, K - 1)
            loses = (i, j) == (K - 1, 0)
            P[i, j] = 0.5 + gap if wins and not loses else 0.5 - gap
    return P


def random_subset(P, num_arms, seed):
    """``P`` restricted to ``np.sort(np.random.default_rng(seed).choice(len(P), num_arms, replace=False))``."""
    ids = np.sort(np.random.default_rng(seed).choice(len(P), num_arms, replace=False))
    return np.asarray(P)[np.ix_(ids, ids)], ids


def _measure(args):
    name, matrix, P, T, runs, seed = args
    make = {"ccb": lambda: CCB(len(P)), "scb": lambda: SCB(len(P))}[name]
    final, _, correct = simulate(make, P, T, runs, seed, checkpoints=[T])
    return name, matrix, final.tolist(), float(correct[-1])


def main(argv=None):
    """Writes the parity figures: ``python -m tests.reference.copeland_bandits [--out f.json]``."""
    import argparse
    import json
    from concurrent.futures import ProcessPoolExecutor
    from pathlib import Path

    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(here.parents[1].parent / "shared/data/preference_matrices/MSLR-Perfect.txt"))
    ap.add_argument("--T", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(here / "copeland_k10_T20000.json"))
    a = ap.parse_args(argv)
    mslr, ids = random_subset(np.loadtxt(a.data), 10, MSLR_SUBSET_SEED)
    matrices = {"mslr_perfect_subset": mslr, "cyclic": cyclic_matrix(10)}
    jobs = [(name, m, matrices[m], a.T, a.runs, SEEDS[name]) for m in matrices for name in ("ccb", "scb")]
    out = {"description": (
        "NumPy references tests/reference/copeland_bandits.py (CCB alpha = 0.51, SCB epsilon = 0, first epoch 1): "
        f"Copeland regret at T = {a.T} of {a.runs} runs (run r seeds np.random.default_rng([seed, r])) on "
        f"MSLR-Perfect restricted to the 10 rankers drawn with np.random.default_rng({MSLR_SUBSET_SEED}) "
        "(tests.reference.copeland_bandits.random_subset; no Condorcet winner, three tied Copeland winners) "
        "and on cyclic_matrix(10). Produced by `python -m tests.reference.copeland_bandits`."),
        "T": a.T, "num_runs": a.runs, "seeds": SEEDS, "mslr_feature_ids": [int(i) + 1 for i in ids], "results": {}}
    with ProcessPoolExecutor(a.workers) as ex:
        for name, m, final, correct in ex.map(_measure, jobs):
            out["results"].setdefault(m, {})[name] = {"final_regret": [round(x, 6) for x in final],
                                                      "accuracy_at_T": correct}
            print(f"{m:20s} {name}: regret {np.mean(final):.1f} ± {1.96 * np.std(final, ddof=1) / math.sqrt(len(final)):.1f}")
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")


MSLR_SUBSET_SEED = 95  # the first seed (0, 1, ...) whose 10-ranker subset of MSLR-Perfect has no Condorcet winner
SEEDS = {"ccb": 2015, "scb": 2016}

if __name__ == "__main__":
    main()
