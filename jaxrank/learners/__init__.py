"""Learning-to-rank learners over explicit state pytrees."""

from jaxrank.learners.base import Learner

__all__ = ["Learner"]
