"""Paper experiments; importing this package registers each of them."""

from experiments import feature_rankers, rcs_regret  # noqa: F401
