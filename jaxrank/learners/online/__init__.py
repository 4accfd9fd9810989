"""Online pairwise learners of the SOLAR paper (Wang et al., ACL 2015), one module each: SOLAR-I
(``solar_first_order``), SOLAR-II (``solar_second_order``) and its baselines Prank (``prank_pointwise``,
``prank_pairwise``) and the committee perceptron (``committee_perceptron``); and the paper's protocols:
instance streams (``streams``), the online pass and protocol
(``online_pass``), the batch protocol (``batch_protocol``)."""

from jaxrank.learners.online import (
    batch_protocol,
    committee_perceptron,
    online_pass,
    pair_slots,
    prank_pairwise,
    prank_pointwise,
    solar_first_order,
    solar_second_order,
    streams,
)
from jaxrank.learners.online.batch_protocol import BatchResult
from jaxrank.learners.online.committee_perceptron import CommitteeState
from jaxrank.learners.online.online_pass import OnlineResult, Pass, online_protocol, run_pass
from jaxrank.learners.online.pair_slots import QueryPairs, num_pair_slots, pair_index, query_pairs
from jaxrank.learners.online.prank_pairwise import PrankPairwiseState
from jaxrank.learners.online.prank_pointwise import PrankParams, PrankState, predict_rank
from jaxrank.learners.online.solar_first_order import SolarFirstOrderState
from jaxrank.learners.online.solar_second_order import SolarSecondOrderState
from jaxrank.learners.online.streams import Documents, InstanceStream, documents, instance_stream

__all__ = [
    "BatchResult",
    "CommitteeState",
    "Documents",
    "InstanceStream",
    "OnlineResult",
    "Pass",
    "PrankPairwiseState",
    "PrankParams",
    "PrankState",
    "QueryPairs",
    "SolarFirstOrderState",
    "SolarSecondOrderState",
    "batch_protocol",
    "committee_perceptron",
    "documents",
    "instance_stream",
    "num_pair_slots",
    "online_pass",
    "online_protocol",
    "pair_index",
    "pair_slots",
    "prank_pairwise",
    "prank_pointwise",
    "predict_rank",
    "query_pairs",
    "run_pass",
    "solar_first_order",
    "solar_second_order",
    "streams",
]
