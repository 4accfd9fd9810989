"""Paper experiments; importing this package registers each of them."""

from experiments import feature_rankers, rcs_accuracy, rcs_alpha, rcs_regret, rcs_scaling  # noqa: F401
