"""Dueling bandits: one module per algorithm with ``init`` / ``step`` / ``best_arm``."""

from jaxrank.bandits import rcs, rucb, savage
from jaxrank.bandits.base import StepInfo
from jaxrank.bandits.simulate import Trace, default_checkpoints, simulate

__all__ = ["StepInfo", "Trace", "default_checkpoints", "rcs", "rucb", "savage", "simulate"]
