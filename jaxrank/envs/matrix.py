"""Dueling environments defined by a preference matrix ``P`` (Bernoulli duels).

``P[i, j]`` is the probability that arm ``i`` beats arm ``j`` in one comparison; a valid matrix
has ``P + P^T = 1`` and ``1/2`` on the diagonal. Helpers check a matrix, find its Condorcet
winner, pick the RCS paper's rankers (Zoghi et al. 2014, §5: feature ids sorted as strings,
first K), generate synthetic Condorcet and cyclic matrices, and search a matrix for subsets of arms
without a Condorcet winner (the Copeland setting of Zoghi et al., NIPS 2015).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Array, PRNGKey


class PrefMatrixEnv(NamedTuple):
    """Duels drawn as ``Bernoulli(P[i, j])`` (a ``jaxrank.types.DuelEnv``); vmappable over stacked matrices."""

    pref: Array  # [K, K] f32, P(i beats j)

    @property
    def num_arms(self) -> int:
        return self.pref.shape[-1]

    def duel(self, key: PRNGKey, i: Array, j: Array, u: Optional[Array] = None) -> Array:
        """True when arm ``i`` beats arm ``j``: ``u < P[i, j]`` with the caller's uniform ``u``, or one
        drawn from ``key`` (a duel of an arm with itself is a fair coin)."""
        u = jax.random.uniform(key) if u is None else u
        return u < self.pref[i, j]


def check_preference_matrix(pref, *, atol: float = 1e-6, name: str = "P") -> np.ndarray:
    """Returns ``pref`` as float64 after checking it is a valid preference matrix.

    Raises:
      ValueError: naming the first offending entry (not square, K < 2, NaN, outside [0, 1],
        diagonal not 1/2, or ``P + P^T != 1``).
    """
    p = np.asarray(pref, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise ValueError(f"{name} must be a square K x K matrix; got shape {p.shape}.")
    if p.shape[0] < 2:
        raise ValueError(f"{name} needs at least 2 arms; got K = {p.shape[0]}.")
    checks = [
        (~np.isfinite(p), "is not finite"),
        ((p < -atol) | (p > 1 + atol), "is outside [0, 1]"),
        (np.abs(np.diag(np.diag(p)) - np.diag(np.full(p.shape[0], 0.5))) > atol, "is on the diagonal but not 1/2"),
        (np.abs(p + p.T - 1.0) > atol, "breaks P[i, j] + P[j, i] = 1"),
    ]
    for bad, problem in checks:
        if np.any(bad):
            i, j = map(int, np.argwhere(bad)[0])
            raise ValueError(f"{name}[{i}, {j}] = {float(p[i, j])!r} {problem} (tolerance {atol}).")
    return p


def condorcet_winner(pref) -> Optional[int]:
    """The arm that beats every other with probability > 1/2, or None."""
    p = np.asarray(pref)
    beats = (p > 0.5) | np.eye(p.shape[0], dtype=bool)
    winners = np.flatnonzero(beats.all(axis=1))
    return int(winners[0]) if winners.size else None


def select_rankers(pref, num_arms: int) -> tuple[np.ndarray, list[int]]:
    """The RCS paper's ranker subset: feature ids ``1..n`` sorted as strings, the first ``K``.

    Returns:
      ``(P[ids - 1][:, ids - 1] [K, K], ids)`` with 1-based feature ids, e.g. for MSLR
      (136 features) and K = 10: 1, 10, 100, 101, ..., 107.
    """
    p = np.asarray(pref)
    if not 2 <= num_arms <= p.shape[0]:
        raise ValueError(f"num_arms must be in [2, {p.shape[0]}]; got {num_arms}.")
    ids = sorted(range(1, p.shape[0] + 1), key=str)[:num_arms]
    rows = np.asarray(ids) - 1
    return p[np.ix_(rows, rows)], ids


def condorcet_matrix(key: PRNGKey, num_arms: int, *, min_gap: float = 0.05, max_gap: float = 0.4) -> Array:
    """A random ``[K, K]`` matrix whose arm 0 beats every other arm; other pairs are random.

    Arm 0 beats arm j with probability ``1/2 + U(min_gap, max_gap)``; the rest are uniform in
    ``[1/2 - max_gap, 1/2 + max_gap]``, so cycles among the other arms are common.
    """
    key_win, key_rest = jax.random.split(key)
    upper = 0.5 + jax.random.uniform(key_rest, (num_arms, num_arms), minval=-max_gap, maxval=max_gap)
    upper = upper.at[0].set(0.5 + jax.random.uniform(key_win, (num_arms,), minval=min_gap, maxval=max_gap))
    triu = jnp.triu(upper, 1)
    return triu + jnp.tril(1.0 - triu.T, -1) + 0.5 * jnp.eye(num_arms)


def cyclic_matrix(num_arms: int, *, gap: float = 0.2) -> Array:
    """A ``[K, K]`` matrix with no Condorcet winner: arm i beats arm i+1 (mod K) by ``gap``.

    Every other pair ties at 1/2 except that each arm loses to its predecessor, so every
    arm is beaten by someone.
    """
    if num_arms < 3:
        raise ValueError(f"a cycle needs at least 3 arms; got {num_arms}.")
    nxt = jnp.roll(jnp.eye(num_arms), 1, axis=1)  # nxt[i, i+1] = 1
    return 0.5 + gap * (nxt - nxt.T)


def copeland_subsets(pref: np.ndarray, num_arms: int, count: int, seed: int, *, max_tries: int = 100_000) -> list:
    """``count`` distinct sorted subsets of ``num_arms`` arms of ``pref`` without a Condorcet winner,
    from a seeded search over uniformly drawn subsets (0-based arm ids)."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(max_tries):
        arms = np.sort(rng.choice(pref.shape[0], num_arms, replace=False))
        if condorcet_winner(pref[np.ix_(arms, arms)]) is None and arms.tolist() not in found:
            found.append(arms.tolist())
            if len(found) == count:
                return found
    raise ValueError(f"found only {len(found)} of {count} subsets of {num_arms} arms without a Condorcet winner "
                     f"in {max_tries} draws; lower copeland_num_subsets or change copeland_num_arms.")


def widest_cycle(pref: np.ndarray) -> tuple[list, float]:
    """The Condorcet cycle ``a ≻ b ≻ c ≻ a`` of ``pref [K, K]`` whose smallest margin ``p - 1/2`` is
    largest: ``([a, b, c], margin)`` (0-based; margin <= 0 when ``pref`` has no cycle of three)."""
    gap = np.asarray(pref, np.float64) - 0.5
    # smallest[a, b, c] = min(gap[a, b], gap[b, c], gap[c, a])
    smallest = np.minimum(np.minimum(gap[:, :, None], gap[None, :, :]), gap.T[:, None, :])
    a, b, c = np.unravel_index(int(np.argmax(smallest)), smallest.shape)
    return [int(a), int(b), int(c)], float(smallest[a, b, c])


def cycle_subsets(pref: np.ndarray, num_arms: int, count: int, seed: int, *, filler_margin: float,
                  pair_gap: float, max_tries: int = 1_000) -> list:
    """``count`` distinct sorted subsets of ``num_arms`` arms of ``pref`` (0-based) without a Condorcet
    winner and with resolvable gaps: the three arms of ``widest_cycle(pref)``, which become the
    subset's tied Copeland winners, and ``num_arms - 3`` arms drawn (seeded, greedily in a random
    order) among those all three beat by ``>= filler_margin``, each ``>= pair_gap`` from 1/2
    against the others drawn."""
    cycle, margin = widest_cycle(pref)
    if margin <= 0 or num_arms < 3:
        raise ValueError(f"cycle subsets need a Condorcet cycle of three arms and num_arms >= 3 (got num_arms = "
                         f"{num_arms}, widest cycle margin {margin:.4f}); use copeland_subsets=uniform.")
    gap = np.abs(np.asarray(pref, np.float64) - 0.5)
    beaten = np.flatnonzero(np.min(pref[cycle], axis=0) - 0.5 >= filler_margin)
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(max_tries):
        fillers = []
        for j in rng.permutation(beaten):
            if len(fillers) == num_arms - 3:
                break
            if all(gap[j, f] >= pair_gap for f in fillers):
                fillers.append(int(j))
        arms = sorted(cycle + fillers)
        if len(arms) == num_arms and arms not in found:
            found.append(arms)
            if len(found) == count:
                return found
    raise ValueError(f"found only {len(found)} of {count} cycle subsets of {num_arms} arms ({beaten.size} arms are "
                     f"beaten by the cycle {cycle} by >= {filler_margin}); lower copeland_num_arms, "
                     f"copeland_filler_margin or copeland_pair_gap.")
