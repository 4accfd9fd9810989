"""Dueling bandits: one module per algorithm with ``init`` / ``step`` / ``best_arm`` (the
``jaxrank.types.Bandit`` contract), the pure single-lane ``run`` against any ``DuelEnv``, and
``simulate``, the driver that runs many lanes over a device mesh, resumably.

``ALGORITHMS`` maps each algorithm's name to its module; ``algorithm(name)`` looks one up.
"""

from jaxrank.bandits import beat_the_mean, ccb, dts, interleaved_filter, merge_dts, merge_rucb, rcs, rmed, rucb, savage, scb
from jaxrank.bandits.driver import Trace, lane_mesh, simulate
from jaxrank.bandits.run import Record, Scoring, default_checkpoints, run, scoring
from jaxrank.types import Bandit, StepInfo

ALGORITHMS: dict[str, Bandit] = {
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
}


def algorithm(name: str) -> Bandit:
    """The bandit module registered as ``name`` (``ValueError`` listing the names otherwise)."""
    if name not in ALGORITHMS:
        raise ValueError(f"unknown bandit {name!r}; registered: {', '.join(ALGORITHMS)}.")
    return ALGORITHMS[name]


__all__ = [
    "ALGORITHMS",
    "Record",
    "Scoring",
    "StepInfo",
    "Trace",
    "algorithm",
    "beat_the_mean",
    "ccb",
    "default_checkpoints",
    "dts",
    "interleaved_filter",
    "lane_mesh",
    "merge_dts",
    "merge_rucb",
    "rcs",
    "rmed",
    "rucb",
    "run",
    "savage",
    "scb",
    "scoring",
    "simulate",
]
