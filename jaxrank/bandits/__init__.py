"""Dueling bandits: one module per algorithm with ``init`` / ``step`` / ``best_arm``.

RCS, RUCB and Condorcet SAVAGE (the RCS paper's comparison), plus Double Thompson Sampling,
RMED1, Interleaved Filter, Beat-the-Mean and MergeRUCB. ``simulate`` runs any of them, sharded
over ``lane_mesh()`` (all devices) and, with ``checkpoint_dir``, resumable.
"""

from jaxrank.bandits import beat_the_mean, dts, interleaved_filter, merge_rucb, rcs, rmed, rucb, savage
from jaxrank.bandits.base import StepInfo
from jaxrank.bandits.simulate import Trace, default_checkpoints, lane_mesh, simulate

__all__ = [
    "StepInfo",
    "Trace",
    "beat_the_mean",
    "default_checkpoints",
    "dts",
    "interleaved_filter",
    "lane_mesh",
    "merge_rucb",
    "rcs",
    "rmed",
    "rucb",
    "savage",
    "simulate",
]
