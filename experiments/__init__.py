"""Paper experiments; importing this package registers each of them."""

from experiments import feature_rankers  # noqa: F401
