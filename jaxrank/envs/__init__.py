"""Environments that answer duels between arms (rankers): preference matrices, or rankers
interleaved on learning-to-rank queries with simulated clicks; and preference-matrix estimation."""

from jaxrank.envs.estimate import estimate_preference_matrix
from jaxrank.envs.ranker_duel import (
    InterleavedDuelEnv,
    ProbabilisticDuelEnv,
    TeamDraftDuelEnv,
    paper_feature_ids,
    ranker_duel_env,
    single_feature_rankers,
)

from jaxrank.envs.matrix import (
    PrefMatrixEnv,
    check_preference_matrix,
    condorcet_matrix,
    condorcet_winner,
    cyclic_matrix,
    select_rankers,
)

__all__ = [
    "InterleavedDuelEnv",
    "PrefMatrixEnv",
    "ProbabilisticDuelEnv",
    "TeamDraftDuelEnv",
    "check_preference_matrix",
    "condorcet_matrix",
    "condorcet_winner",
    "cyclic_matrix",
    "estimate_preference_matrix",
    "paper_feature_ids",
    "ranker_duel_env",
    "select_rankers",
    "single_feature_rankers",
]
