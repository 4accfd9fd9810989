"""Stochastic pairwise learners of the LCRA paper (Tsivtsivadze, Hofmann, Heskes 2012), one module
each: SPD (``spd``, pairwise Pegasos) and LCRA (``lcra``, SPD-MV and LCRA-k-l as its variants); their
pair samplers (``pair_sampling``) and the paper's semi-supervised protocol (``semi_supervised``)."""

from jaxrank.learners.pairwise import lcra, pair_sampling, semi_supervised, spd
from jaxrank.learners.pairwise.lcra import LCRAState, check_sizes, random_views, train
from jaxrank.learners.pairwise.pair_sampling import (
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
from jaxrank.learners.pairwise.spd import SPDState, learning_rate

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
    "pair_sampling",
    "pair_source",
    "partner_counts",
    "random_views",
    "sample_pair_indices",
    "sample_pairs",
    "semi_supervised",
    "spd",
    "train",
    "unlabeled_counts",
]
