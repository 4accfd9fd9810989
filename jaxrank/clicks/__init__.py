"""Click simulation (cascade, position-based), interleaved comparisons of two rankers and multileaved
comparisons of many, and the displayed top ``k`` by score or Plackett–Luce sampling."""

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
    STOP_RULES,
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
from jaxrank.clicks.multileave import (
    multileave_preferences,
    probabilistic_multileave,
    probabilistic_multileave_credit,
    probabilistic_multileave_from_ranks,
    probabilistic_multileave_preferences,
    team_draft_multileave,
    team_draft_multileave_credit,
    team_draft_multileave_from_ranks,
)
from jaxrank.clicks.plackett_luce import plackett_luce_top_k, top_k_list

__all__ = [
    "CASCADE_GRADES",
    "STOP_RULES",
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
    "multileave_preferences",
    "position_based_clicks",
    "probabilistic_interleave",
    "probabilistic_interleave_from_ranks",
    "probabilistic_multileave",
    "probabilistic_multileave_credit",
    "probabilistic_multileave_from_ranks",
    "probabilistic_multileave_preferences",
    "plackett_luce_top_k",
    "probabilistic_outcome",
    "score_ranks",
    "team_draft_interleave",
    "team_draft_multileave",
    "team_draft_multileave_credit",
    "team_draft_multileave_from_ranks",
    "team_draft_outcome",
    "top_k_list",
]
