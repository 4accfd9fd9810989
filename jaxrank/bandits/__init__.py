"""Dueling bandits: one module per algorithm (``HPARAMS``, ``OPTIONS``, ``make(**options)`` giving a
``jaxrank.types.Bandit`` of ``init`` / ``step`` / ``best_arm``), the pure single-lane program
``lane.run_lane`` against any ``DuelEnv``, and ``sweep.run_sweep``, which runs many lanes over a device
mesh, resumably (through ``jaxrank.lanes``).

``ALGORITHMS`` is the family's ``jaxrank.registry.Registry``: a new algorithm is one module plus one
line here.
"""

from jaxrank.bandits import (beat_the_mean, ccb, dts, interleaved_filter, lane, merge_dts, merge_rucb, rcs, relabel,
                             rex3, rmed, rucb, savage, scb, self_sparring, sparring)
from jaxrank.bandits.lane import LaneData, Record, Scoring, default_checkpoints, run_lane, scoring, study
from jaxrank.bandits.survival import survival_probe
from jaxrank.bandits.sweep import CPU_COMPILER_OPTIONS, Trace, lane_mesh, run_sweep
from jaxrank.registry import Registry
from jaxrank.types import Bandit, StepInfo

ALGORITHMS = Registry("bandit", {
    "rcs": rcs,
    "rucb": rucb,
    "savage": savage,
    "dts": dts,
    "rmed": rmed,
    "interleaved_filter": interleaved_filter,
    "beat_the_mean": beat_the_mean,
    "merge_rucb": merge_rucb,
    "merge_dts": merge_dts,
    "ccb": ccb,
    "scb": scb,
    "sparring": sparring,
    "self_sparring": self_sparring,
    "rex3": rex3,
})

__all__ = [
    "ALGORITHMS",
    "Bandit",
    "CPU_COMPILER_OPTIONS",
    "LaneData",
    "Record",
    "Scoring",
    "StepInfo",
    "Trace",
    "beat_the_mean",
    "ccb",
    "default_checkpoints",
    "dts",
    "interleaved_filter",
    "lane",
    "lane_mesh",
    "merge_dts",
    "merge_rucb",
    "rcs",
    "relabel",
    "rex3",
    "rmed",
    "rucb",
    "run_lane",
    "run_sweep",
    "savage",
    "scb",
    "scoring",
    "self_sparring",
    "sparring",
    "study",
    "survival_probe",
    "sweep",
]
