"""Online pairwise learners of the SOLAR paper (Wang et al., ACL 2015): SOLAR-I/II and its baselines
Prank (pointwise, pairwise) and the committee perceptron."""

from jaxrank.learners.online import committee_perceptron as committee_perceptron_lib
from jaxrank.learners.online import prank as prank_lib
from jaxrank.learners.online.committee_perceptron import CommitteeState, committee_perceptron
from jaxrank.learners.online.pairs import (
    QueryPairs,
    as_pairs,
    num_pair_slots,
    pair_index,
    pairwise_update,
    query_pairs,
    scan_pairs,
)
from jaxrank.learners.online.prank import (
    PrankPairwiseState,
    PrankState,
    predict_rank,
    prank_pairwise,
    prank_pointwise,
)
from jaxrank.learners.online.solar import (
    SolarFirstOrderState,
    SolarSecondOrderState,
    score,
    solar_first_order,
    solar_second_order,
)

committee_score = committee_perceptron_lib.score
prank_score = prank_lib.score

__all__ = [
    "CommitteeState",
    "QueryPairs",
    "PrankPairwiseState",
    "PrankState",
    "SolarFirstOrderState",
    "SolarSecondOrderState",
    "as_pairs",
    "committee_perceptron",
    "committee_score",
    "num_pair_slots",
    "pair_index",
    "pairwise_update",
    "predict_rank",
    "prank_pairwise",
    "prank_pointwise",
    "prank_score",
    "query_pairs",
    "scan_pairs",
    "score",
    "solar_first_order",
    "solar_second_order",
]
