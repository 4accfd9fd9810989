"""Small pure helpers shared by algorithms: tie-breaking choices and special functions."""

from jaxrank.utils.beta import log_prob_beta_at_least_half
from jaxrank.utils.choice import random_argmax, random_argmin, random_choice

__all__ = ["log_prob_beta_at_least_half", "random_argmax", "random_argmin", "random_choice"]
