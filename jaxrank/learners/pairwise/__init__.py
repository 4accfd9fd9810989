"""Stochastic pairwise learners: SPD (pairwise Pegasos), SPD-MV and LCRA-k-l
(Tsivtsivadze, Hofmann, Heskes 2012), their pair samplers and the semi-supervised protocol."""

from jaxrank.learners.pairwise.lcra import LCRAState, check_sizes, lcra, random_views, score, train
from jaxrank.learners.pairwise.pairs import (
    SAMPLERS,
    PairBatch,
    PairDraws,
    PairSource,
    check_pairs,
    num_ordered_pairs,
    pair_source,
    partner_counts,
    sample_pair_indices,
    sample_pairs,
    unlabeled_counts,
)
from jaxrank.learners.pairwise.spd import SPDState, learning_rate, spd

__all__ = [
    "LCRAState",
    "PairBatch",
    "PairDraws",
    "PairSource",
    "SAMPLERS",
    "SPDState",
    "check_pairs",
    "check_sizes",
    "lcra",
    "learning_rate",
    "num_ordered_pairs",
    "pair_source",
    "partner_counts",
    "random_views",
    "sample_pair_indices",
    "sample_pairs",
    "score",
    "spd",
    "train",
    "unlabeled_counts",
]
