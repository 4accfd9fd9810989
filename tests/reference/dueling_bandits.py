"""Slow, obviously-correct NumPy references for the dueling-bandit algorithms (test reference only).

Written straight from the papers: RCS (Zoghi, Whiteson, de Rijke, Munos, WSDM 2014, Algorithm 1;
regret eq. 1), RUCB (Zoghi, Whiteson, Munos, de Rijke, ICML 2014, Algorithm 1) and Condorcet SAVAGE
(Urvoy, Clérot, Féraud, Naamane, ICML 2013). No code is shared with ``jaxrank``. Every random
choice comes from an ``np.random.Generator`` passed in explicitly, and one run's steps are plain
sequential Python loops.

Conventions
-----------
* Arms are 0-based row indices of the preference matrix ``P`` (``P[i, j]`` = probability that arm
  i beats arm j). Steps ``t`` are 1-based.
* A duel ``(first, second)`` is one draw ``rng.random() < P[first, second]``: ``True`` means
  ``first`` won. The winner's row of the win matrix is incremented: ``W[first, second] += 1`` if
  first won, else ``W[second, first] += 1``. A self-duel ``(a, a)`` still draws (P[a, a] = 1/2)
  and increments ``W[a, a]``, which no rule ever reads.
* "Ties uniform": ``rng.choice`` over all maximisers (or minimisers), always called, even when
  there is one candidate.
* Each algorithm is a small class with ``step(rng, P) -> (first, second)`` (advances ``self.t``,
  updates ``self.W``) and ``report(rng) -> arm`` (the best-arm guess on the current state).

Resolved ambiguities (see also the docstrings):
* ``x/0 := 1`` is applied to each fraction of the UCB separately: ``W/(W+Wᵀ) -> 1`` and
  ``(α ln t)/(W+Wᵀ) -> 1`` where ``W+Wᵀ = 0``; an unexplored pair thus has ``U = 1 + sqrt(1) = 2``
  at every t, t = 1 included.
* RCS: in the measure-zero event that several arms pass ``Θ_cj >= 1/2 ∀j``, one of them is
  picked uniformly.
* RUCB: when ``C = ∅`` the default treats C as {c} for the rest of the step, so B becomes {c}
  (a reading made here, as duelpy's ``RelativeUCB`` does; in the ICML'14 paper B ← B ∩ ∅ = ∅
  and neither branch fires, which ``empty_c_sets_b=False`` gives).
* RUCB report: ``W_cj/(W_cj+W_jc) > 1/2`` is read as ``W_cj > W_jc`` (an unexplored pair is
  not a win, i.e. the x/0 := 1 rule is *not* used for the report).
* SAVAGE: eliminations of one step are decided on the pre-removal active set and applied all
  at once; if they would empty A (needs a confident 3-cycle, never happens with a Condorcet
  winner in practice) A is left unchanged. The report when |A| > 1 counts wins over all
  other arms (``report_over="all"``) with candidates restricted to A; ``"active"`` counts only
  wins over other active arms.
"""

import math

import numpy as np

__all__ = [
    "select_rankers",
    "condorcet_winner",
    "step_regret",
    "duel",
    "ucb_matrix",
    "copeland_counts",
    "RCS",
    "RUCB",
    "SAVAGE",
    "UniformPairs",
    "simulate",
]


# ----------------------------------------------------------------------------------------------
# problem helpers (Zoghi et al., WSDM 2014, §2 and §5)
# ----------------------------------------------------------------------------------------------


def select_rankers(P, K):
    """The paper's ranker selection: ids 1..n as strings, sorted as strings, first K.

    Returns ``(P_sub, ids)``: the K×K submatrix (row of id ``f`` = ``f - 1``) and the ids as ints,
    in the string-sorted order (arm a of ``P_sub`` is feature ``ids[a]``).
    """
    P = np.asarray(P, dtype=float)
    n = P.shape[0]
    names = sorted(str(i) for i in range(1, n + 1))[:K]
    ids = [int(s) for s in names]
    rows = [f - 1 for f in ids]
    sub = np.array([[P[r, c] for c in rows] for r in rows], dtype=float)
    return sub, ids


def condorcet_winner(P):
    """The arm w with P[w, j] > 1/2 for every j != w, or None."""
    P = np.asarray(P, dtype=float)
    K = P.shape[0]
    for w in range(K):
        if all(P[w, j] > 0.5 for j in range(K) if j != w):
            return w
    return None


def step_regret(P, i, j, w=None):
    """r = (Δ_wi + Δ_wj)/2 with Δ_wk = P[w, k] - 1/2 (Zoghi et al., WSDM 2014, eq. 1).

    w defaults to the Condorcet winner.
    """
    if w is None:
        w = condorcet_winner(P)
        if w is None:
            raise ValueError("P has no Condorcet winner")
    return ((P[w, i] - 0.5) + (P[w, j] - 0.5)) / 2.0


def duel(rng, P, first, second):
    """One Bernoulli duel: True iff ``first`` beats ``second`` (``rng.random() < P[first, second]``)."""
    return bool(rng.random() < P[first, second])


def _record(W, first, second, first_won):
    if first_won:
        W[first, second] += 1
    else:
        W[second, first] += 1


def _choice(rng, candidates):
    """Uniform choice from a non-empty list of arms."""
    candidates = list(candidates)
    return int(candidates[int(rng.integers(len(candidates)))])


def _argmax_uniform(rng, values, candidates=None):
    """Uniformly chosen index among the maximisers of ``values`` (restricted to ``candidates``)."""
    if candidates is None:
        candidates = range(len(values))
    candidates = list(candidates)
    best = max(values[k] for k in candidates)
    return _choice(rng, [k for k in candidates if values[k] == best])


def _argmin_uniform(rng, values, candidates=None):
    if candidates is None:
        candidates = range(len(values))
    candidates = list(candidates)
    best = min(values[k] for k in candidates)
    return _choice(rng, [k for k in candidates if values[k] == best])


def ucb_matrix(W, t, alpha):
    """U = W/(W+Wᵀ) + sqrt(α ln t / (W+Wᵀ)), each x/0 := 1 separately, then U_ii = 1/2.

    Plain double loop, written element by element.
    """
    W = np.asarray(W, dtype=float)
    K = W.shape[0]
    log_t = math.log(t)
    U = np.empty((K, K))
    for i in range(K):
        for j in range(K):
            n = W[i, j] + W[j, i]
            mean = W[i, j] / n if n > 0 else 1.0
            rad2 = alpha * log_t / n if n > 0 else 1.0
            U[i, j] = mean + math.sqrt(rad2)
    for i in range(K):
        U[i, i] = 0.5
    return U


def copeland_counts(W, candidates=None, opponents=None):
    """#{j in opponents, j != i : W_ij > W_ji} for each i in candidates (dict arm -> count)."""
    K = W.shape[0]
    candidates = range(K) if candidates is None else candidates
    opponents = list(range(K)) if opponents is None else list(opponents)
    return {i: sum(1 for j in opponents if j != i and W[i, j] > W[j, i]) for i in candidates}


def _copeland_report(rng, W, candidates=None, opponents=None):
    counts = copeland_counts(W, candidates, opponents)
    arms = list(counts)
    best = max(counts.values())
    return _choice(rng, [a for a in arms if counts[a] == best])


# ----------------------------------------------------------------------------------------------
# RCS (Zoghi et al., WSDM 2014, Algorithm 1)
# ----------------------------------------------------------------------------------------------


class RCS:
    """Relative Confidence Sampling.

    ``count_every_time=True`` (paper, default): N_c += 1 at every step; False: only when the champion
    comes from the argmin-N fallback (Lerot). ``w_init``: initial value of every W entry (0 for the
    paper; 1 for Lerot's prior offset, which then also enters U).
    """

    def __init__(self, K, alpha=0.501, count_every_time=True, w_init=0.0):
        self.K = K
        self.alpha = alpha
        self.count_every_time = count_every_time
        self.W = np.full((K, K), float(w_init))
        self.N = np.zeros(K, dtype=np.int64)
        self.t = 0
        self.last_champion_from_tournament = None

    def champion(self, rng):
        K, W = self.K, self.W
        # I. simulated round-robin tournament
        theta = np.full((K, K), 0.5)
        iu, ju = np.triu_indices(K, k=1)  # all i < j, row-major
        samples = rng.beta(W[iu, ju] + 1.0, W[ju, iu] + 1.0)
        for s, i, j in zip(samples, iu, ju):
            theta[i, j] = s
            theta[j, i] = 1.0 - s
        winners = [c for c in range(K) if all(theta[c, j] >= 0.5 for j in range(K) if j != c)]
        if winners:
            c = _choice(rng, winners)
            self.last_champion_from_tournament = True
            if self.count_every_time:
                self.N[c] += 1
        else:
            c = _argmin_uniform(rng, self.N)
            self.last_champion_from_tournament = False
            self.N[c] += 1
        return c

    def step(self, rng, P):
        self.t += 1
        c = self.champion(rng)
        # II. UCB relative to the champion
        U = ucb_matrix(self.W, self.t, self.alpha)
        d = _argmax_uniform(rng, U[:, c])
        # III. duel and update
        _record(self.W, c, d, duel(rng, P, c, d))
        return c, d

    def report(self, rng):
        return _copeland_report(rng, self.W)


# ----------------------------------------------------------------------------------------------
# RUCB, ICML'14 version with the hypothesised-best set B (Zoghi et al., ICML 2014, Algorithm 1)
# ----------------------------------------------------------------------------------------------


class RUCB:
    """Relative UCB (ICML'14). ``empty_c_sets_b``: when C = ∅ (c drawn uniformly from all arms),
    True (our reading, as duelpy) treats C as {c}, so B ← {c}; False (paper text) sets B ← ∅."""

    def __init__(self, K, alpha=0.501, empty_c_sets_b=True):
        self.K = K
        self.alpha = alpha
        self.empty_c_sets_b = empty_c_sets_b
        self.W = np.zeros((K, K))
        self.B = set()
        self.t = 0

    def step(self, rng, P):
        K = self.K
        self.t += 1
        U = ucb_matrix(self.W, self.t, self.alpha)
        C = [c for c in range(K) if all(U[c, j] >= 0.5 for j in range(K))]
        if not C:
            c = _choice(rng, range(K))
            if self.empty_c_sets_b:
                C = [c]
            else:
                self.B = set()
        if C:
            self.B = self.B & set(C)
            if len(C) == 1:
                self.B = set(C)
                c = C[0]
            else:
                outside = [a for a in C if a not in self.B]
                probs = np.array(
                    [0.5 if a in self.B else 1.0 / (2 ** len(self.B) * len(outside)) for a in C]
                )
                assert abs(probs.sum() - 1.0) < 1e-12
                c = int(C[int(rng.choice(len(C), p=probs))])
        # d: argmax_j U_jc, ties uniform; if c is among several maximisers it is excluded.
        col = U[:, c]
        best = col.max()
        maximisers = [j for j in range(K) if col[j] == best]
        if len(maximisers) > 1 and c in maximisers:
            maximisers.remove(c)
        d = _choice(rng, maximisers)
        _record(self.W, c, d, duel(rng, P, c, d))
        return c, d

    def report(self, rng):
        # argmax_c #{j : W_cj/(W_cj+W_jc) > 1/2}  ==  #{j : W_cj > W_jc}
        return _copeland_report(rng, self.W)


# ----------------------------------------------------------------------------------------------
# Condorcet SAVAGE (Urvoy et al., ICML 2013)
# ----------------------------------------------------------------------------------------------


class SAVAGE:
    """Condorcet SAVAGE with horizon T, δ = 1/T, c(n) = sqrt(ln(K(K-1)T/δ)/(2n))."""

    def __init__(self, K, T, report_over="all"):
        if report_over not in ("all", "active"):
            raise ValueError(report_over)
        self.K = K
        self.T = T
        self.delta = 1.0 / T
        self.log_term = math.log(K * (K - 1) * T / self.delta)
        self.report_over = report_over
        self.W = np.zeros((K, K))
        self.active = list(range(K))
        self.t = 0

    def radius(self, n):
        return math.sqrt(self.log_term / (2.0 * n))

    def _eliminate(self):
        K, W = self.K, self.W
        beaten = []
        for i in self.active:
            for j in range(K):
                if j == i:
                    continue
                n = W[i, j] + W[j, i]
                if n > 0 and W[i, j] / n + self.radius(n) < 0.5:
                    beaten.append(i)
                    break
        remaining = [a for a in self.active if a not in beaten]
        if remaining:
            self.active = remaining

    def step(self, rng, P):
        self.t += 1
        if len(self.active) == 1:
            a = self.active[0]
            _record(self.W, a, a, duel(rng, P, a, a))
            return a, a
        pairs = [(i, j) for i in self.active for j in self.active if i < j]
        counts = [self.W[i, j] + self.W[j, i] for i, j in pairs]
        fewest = min(counts)
        i, j = pairs[_choice(rng, [k for k, n in enumerate(counts) if n == fewest])]
        _record(self.W, i, j, duel(rng, P, i, j))
        self._eliminate()
        return i, j

    def report(self, rng):
        if len(self.active) == 1:
            return self.active[0]
        opponents = None if self.report_over == "all" else self.active
        return _copeland_report(rng, self.W, candidates=self.active, opponents=opponents)


# ----------------------------------------------------------------------------------------------
# baseline and simulation
# ----------------------------------------------------------------------------------------------


class UniformPairs:
    """Baseline: a uniformly random ordered pair of distinct arms each step."""

    def __init__(self, K):
        self.K = K
        self.W = np.zeros((K, K))
        self.t = 0

    def step(self, rng, P):
        self.t += 1
        i = int(rng.integers(self.K))
        j = int(rng.integers(self.K - 1))
        j = j + 1 if j >= i else j
        _record(self.W, i, j, duel(rng, P, i, j))
        return i, j

    def report(self, rng):
        return _copeland_report(rng, self.W)


def simulate(alg, P, T, rng, checkpoints=()):
    """Run ``alg`` (a fresh instance) for T steps against the Bernoulli oracle on P.

    Returns a dict:
      * ``cum_regret``: float array of length T, cumulative regret after steps 1..T;
      * ``checkpoints``: the sorted checkpoint step counts (each in 1..T);
      * ``correct``: bool array, ``alg.report`` after that many steps == the Condorcet winner;
      * ``suboptimal_fraction``: float array, fraction of steps 1..checkpoint whose pair is not (w, w);
      * ``pairs``: int array (T, 2) of the dueled pairs.
    Reports use their own generator, derived once from ``rng`` at the start, so the run's
    trajectory does not depend on the checkpoints.
    """
    P = np.asarray(P, dtype=float)
    w = condorcet_winner(P)
    if w is None:
        raise ValueError("P has no Condorcet winner")
    checkpoints = sorted(int(c) for c in checkpoints)
    if any(c < 1 or c > T for c in checkpoints):
        raise ValueError("checkpoints must lie in 1..T")
    report_rng = np.random.default_rng(rng.integers(2**63))
    cum = np.empty(T)
    pairs = np.empty((T, 2), dtype=np.int64)
    total = 0.0
    not_ww = 0
    correct, subopt = [], []
    ck = 0
    for t in range(1, T + 1):
        i, j = alg.step(rng, P)
        pairs[t - 1] = (i, j)
        total += step_regret(P, i, j, w)
        cum[t - 1] = total
        if not (i == w and j == w):
            not_ww += 1
        while ck < len(checkpoints) and checkpoints[ck] == t:
            correct.append(alg.report(report_rng) == w)
            subopt.append(not_ww / t)
            ck += 1
    return {
        "cum_regret": cum,
        "checkpoints": np.array(checkpoints, dtype=np.int64),
        "correct": np.array(correct, dtype=bool),
        "suboptimal_fraction": np.array(subopt, dtype=float),
        "pairs": pairs,
    }
