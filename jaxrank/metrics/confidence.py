"""The interval of a mean over runs, at its former import path: ``jaxrank.metrics.statistics.mean_ci``."""

from jaxrank.metrics.statistics import mean_ci

__all__ = ["mean_ci"]
