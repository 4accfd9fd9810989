"""Slow NumPy references of the MergeDTS authors' baselines (github.com/chang-li/MergeDTS,
``dueling_bandits/rex3.py``, ``sparring.py``, ``sparring_exp3.py``), written from that code's logic
as a test reference only; they share no code with ``jaxrank``. ``R`` runs advance together (every
line is the per-run rule applied to each run) because one run at a time in Python is too slow for a
parity test of tens of runs.

* REX3: weights ``w = 1``, ``t = 1``; each step ``γ_t = min(1/2, sqrt(K ln K / max(t, 10⁴)))``,
  ``p = (1 − γ_t) w / Σ w + γ_t / K``, two arms drawn from ``p`` with replacement; after the duel,
  unless the two arms are the same, ``w_winner *= exp(γ_t / (p_winner K))`` and
  ``w_loser *= exp(−γ_t / (p_loser K))``; ``t += 1``.
* Sparring-UCB: per side wins ``w = 0`` and plays ``n = 1`` (one phantom play), ``t = 1``; each side
  plays ``argmax w/n + sqrt(α ln t / n)`` (ties uniform); the side of the winner gains a win (a
  self-duel's win goes to a side by a fair coin), both sides one play; ``t += 1``.
* Sparring-Exp3: per side weights ``w = 1``, ``t = 1``; ``γ_t = min(1, sqrt(K ln K / max(t, 10⁴)))``,
  each side draws from its ``(1 − γ_t) w / Σ w + γ_t / K``; the winning side's played arm (a
  self-duel's: a fair coin's side) gets ``w *= exp(γ_t / (p K))``; ``t += 1``.

A duel of ``(i, j)`` is won by ``i`` with probability ``P[i, j]``. Weights are rescaled by their
maximum after each update (``w / Σ w`` is unchanged), so they do not overflow.
"""

import math

import numpy as np

__all__ = ["simulate"]


def _argmax_uniform_ties(rng, values):
    best = values.max(axis=-1, keepdims=True)
    return np.argmax(np.where(values == best, rng.random(values.shape), -1.0), axis=-1)


def _draw(rng, p):
    """One draw per row of ``p [..., K]`` by inverse CDF."""
    cdf = np.cumsum(p, axis=-1)
    cdf[..., -1] = np.inf
    return np.argmax(rng.random(p.shape[:-1] + (1,)) < cdf, axis=-1)


def _anytime_gamma(K, t, cap):
    return min(cap, math.sqrt(K * math.log(K) / max(t, 1e4)))


def simulate(P, T, num_runs, seed, algorithm, alpha=0.51):
    """Final cumulative Condorcet regret ``[num_runs]`` after ``T`` steps, ``Σ_t (Δ_x + Δ_y) / 2``.

    ``algorithm``: ``"rex3"``, ``"sparring_ucb"`` or ``"sparring_exp3"`` (the authors' versions);
    ``alpha``: Sparring-UCB's exploration (their ``demo.py``: 0.51).
    """
    P = np.asarray(P, dtype=float)
    K = P.shape[0]
    winner = next(w for w in range(K) if all(P[w, j] > 0.5 for j in range(K) if j != w))
    gap = P[winner] - 0.5
    rng = np.random.default_rng(seed)
    runs = np.arange(num_runs)
    total = np.zeros(num_runs)
    w = np.ones((num_runs, 2, K)) if algorithm != "sparring_ucb" else np.zeros((num_runs, 2, K))
    n = np.ones((num_runs, 2, K))
    for t in range(1, T + 1):
        if algorithm == "rex3":
            gamma = _anytime_gamma(K, t, 0.5)
            p = (1 - gamma) * w[:, 0] / w[:, 0].sum(axis=1, keepdims=True) + gamma / K  # [R, K]
            x, y = _draw(rng, p), _draw(rng, p)
        elif algorithm == "sparring_ucb":
            index = w / n + np.sqrt(alpha * math.log(t) / n)  # [R, 2, K]
            arms = _argmax_uniform_ties(rng, index)
            x, y = arms[:, 0], arms[:, 1]
        else:
            gamma = _anytime_gamma(K, t, 1.0)
            p = (1 - gamma) * w / w.sum(axis=2, keepdims=True) + gamma / K  # [R, 2, K]
            arms = _draw(rng, p)
            x, y = arms[:, 0], arms[:, 1]
        x_won = rng.random(num_runs) < P[x, y]
        win, lose = np.where(x_won, x, y), np.where(x_won, y, x)
        total += (gap[x] + gap[y]) / 2.0
        if algorithm == "rex3":
            differ = x != y
            w[runs, 0, win] *= np.where(differ, np.exp(gamma / (p[runs, win] * K)), 1.0)
            w[runs, 0, lose] *= np.where(differ, np.exp(-gamma / (p[runs, lose] * K)), 1.0)
            w[:, 0] /= w[:, 0].max(axis=1, keepdims=True)
            continue
        # The winning side: left if x won and x != y, right if y won and x != y, a coin if x == y.
        side = np.where(x == y, (rng.random(num_runs) < 0.5).astype(int), np.where(x_won, 0, 1))
        if algorithm == "sparring_ucb":
            w[runs, side, win] += 1.0
        else:
            w[runs, side, win] *= np.exp(gamma / (p[runs, side, win] * K))
            w /= w.max(axis=2, keepdims=True)
        n[runs, 0, x] += 1.0
        n[runs, 1, y] += 1.0
    return total
