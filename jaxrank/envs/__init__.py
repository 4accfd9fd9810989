"""Environments that answer duels between arms (rankers)."""

from jaxrank.envs.matrix import (
    PrefMatrixEnv,
    check_preference_matrix,
    condorcet_matrix,
    condorcet_winner,
    cyclic_matrix,
    select_rankers,
)

__all__ = [
    "PrefMatrixEnv",
    "check_preference_matrix",
    "condorcet_matrix",
    "condorcet_winner",
    "cyclic_matrix",
    "select_rankers",
]
