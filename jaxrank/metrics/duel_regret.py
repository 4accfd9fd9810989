"""Dueling-bandit regret (Zoghi et al., WSDM 2014, §2, eq. 1): ``r_t = (Δ_1i + Δ_1j) / 2``, ``Δ_1k = P_1k - 1/2``.

Arm 1 is the Condorcet winner; a duel of the winner with itself costs nothing.
"""

import numpy as np

from jaxrank.envs.matrix import check_preference_matrix, condorcet_winner


def regret_table(pref) -> tuple[np.ndarray, int]:
    """Per-duel regret ``[K, K]`` (float32) and the Condorcet winner's index.

    Raises:
      ValueError: if ``pref`` is not a valid preference matrix or has no Condorcet winner,
        since regret is defined relative to that winner.
    """
    p = check_preference_matrix(pref)
    winner = condorcet_winner(p)
    if winner is None:
        raise ValueError(
            "this preference matrix has no Condorcet winner, so Condorcet regret is undefined; "
            "pick a subset of arms that has one (jaxrank.envs.condorcet_winner) or report win rates instead."
        )
    gap = p[winner] - 0.5
    return (0.5 * (gap[:, None] + gap[None, :])).astype(np.float32), winner
