"""Paper experiments; importing this package registers each of them."""

from experiments import (  # noqa: F401
    condorcet_probability,
    feature_rankers,
    lcra_table,
    paper_report,
    preference_matrix,
    rcs_accuracy,
    rcs_alpha,
    rcs_regret,
    rcs_scaling,
    solar_batch,
    solar_online,
    solar_scalability,
    sparse_ranksvm,
)
