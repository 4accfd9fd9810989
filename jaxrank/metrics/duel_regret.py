"""Dueling-bandit regret against the best arm(s) of a preference matrix ``P [K, K]``.

* Condorcet regret (Zoghi et al., WSDM 2014, §2, eq. 1): ``r_t = (Δ_1i + Δ_1j) / 2`` with
  ``Δ_1k = P_1k - 1/2`` and arm 1 the Condorcet winner; a duel of the winner with itself costs nothing.
* Copeland regret (Zoghi, Karnin, Whiteson, de Rijke, "Copeland Dueling Bandits", NIPS 2015, §2):
  with the normalised Copeland score ``cpld(k) = #{l != k : P_kl > 1/2} / (K - 1)``,
  ``r_t = cpld(a*) - (cpld(i) + cpld(j)) / 2`` for a Copeland winner ``a*``. It needs no Condorcet
  winner and equals zero exactly for duels between Copeland winners.

Several arms may share the top Copeland score. The rule here: regret is measured against that
score (the same for every winner), and a best-arm guess is correct when it is any of the winners.
"""

import numpy as np

from jaxrank.envs.matrix import check_preference_matrix, condorcet_winner

REGRETS = ("auto", "condorcet", "copeland")


def copeland_scores(pref) -> np.ndarray:
    """``[K]`` f64 normalised Copeland scores ``#{l != k : P_kl > 1/2} / (K - 1)`` (NIPS 2015, §2)."""
    p = check_preference_matrix(pref)
    beats = (p > 0.5) & ~np.eye(p.shape[0], dtype=bool)
    return beats.sum(axis=1) / (p.shape[0] - 1)


def copeland_winners(pref) -> np.ndarray:
    """``[K]`` bool, the arms with the highest Copeland score (a Condorcet winner is the only one)."""
    scores = copeland_scores(pref)
    return scores == scores.max()


def regret_table(pref, regret: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Per-duel regret ``[K, K]`` (float32) and the best arms ``[K]`` (bool).

    Args:
      pref: ``[K, K]`` preference matrix, ``P_ij + P_ji = 1``.
      regret: ``"condorcet"`` (needs a Condorcet winner), ``"copeland"``, or ``"auto"``: Condorcet
        when the matrix has a Condorcet winner, Copeland otherwise.

    Raises:
      ValueError: if ``pref`` is not a valid preference matrix, ``regret`` is unknown, or
        ``regret="condorcet"`` and the matrix has no Condorcet winner.
    """
    if regret not in REGRETS:
        raise ValueError(f"regret must be one of {', '.join(REGRETS)}; got {regret!r}.")
    p = check_preference_matrix(pref)
    winner = condorcet_winner(p)
    if regret == "condorcet" and winner is None:
        raise ValueError(
            "this preference matrix has no Condorcet winner, so Condorcet regret is undefined; "
            "use regret='copeland' (or 'auto'), or pick a subset of arms that has one (jaxrank.envs.condorcet_winner)."
        )
    if regret == "copeland" or winner is None:
        score = copeland_scores(p)
        best = score.max()
        table = best - 0.5 * (score[:, None] + score[None, :])
        return table.astype(np.float32), score == best
    gap = p[winner] - 0.5
    return (0.5 * (gap[:, None] + gap[None, :])).astype(np.float32), np.arange(p.shape[0]) == winner
