"""Small helpers shared by every module: tie-breaking choices, special functions, argument checks
(``checks``) and a keyed permutation evaluated at any position (``swap_or_not``)."""

from jaxrank.utils.beta import log_prob_beta_at_least_half
from jaxrank.utils.checks import check_choice, check_int, check_key, check_keywords, check_number
from jaxrank.utils.choice import random_argmax, random_argmin, random_choice

__all__ = [
    "check_choice", "check_int", "check_key", "check_keywords", "check_number", "log_prob_beta_at_least_half",
    "random_argmax", "random_argmin", "random_choice",
]
