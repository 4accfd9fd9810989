"""Click simulation (cascade, position-based) and interleaved comparisons of two rankers."""

from jaxrank.clicks.interleave import (
    balanced_interleave,
    balanced_outcome,
    probabilistic_interleave,
    probabilistic_interleave_from_ranks,
    probabilistic_outcome,
    score_ranks,
    team_draft_interleave,
    team_draft_outcome,
)
from jaxrank.clicks.models import (
    CASCADE_GRADES,
    CASCADE_MODELS,
    CascadeModel,
    PositionBasedModel,
    cascade_clicks,
    cascade_model,
    check_click_model,
    make_cascade_model,
    make_position_based_model,
    position_based_clicks,
)

__all__ = [
    "CASCADE_GRADES",
    "CASCADE_MODELS",
    "CascadeModel",
    "PositionBasedModel",
    "balanced_interleave",
    "balanced_outcome",
    "cascade_clicks",
    "cascade_model",
    "check_click_model",
    "make_cascade_model",
    "make_position_based_model",
    "position_based_clicks",
    "probabilistic_interleave",
    "probabilistic_interleave_from_ranks",
    "probabilistic_outcome",
    "score_ranks",
    "team_draft_interleave",
    "team_draft_outcome",
]
