"""Linear scoring shared by the online learners: the readout ``w [D]`` and ``score = features @ w``
(the ``readout`` / ``score`` of ``jaxrank.types.OnlineLearner``)."""

from typing import Any, NamedTuple


class LinearReadout(NamedTuple):
    w: Any  # [D] f32, the scoring vector


def linear_readout(state) -> LinearReadout:
    """``readout`` of any learner whose state scores with a ``w [D]`` leaf."""
    return LinearReadout(w=state.w)


def linear_score(readout, features):
    """``[..., L]`` scores ``features [..., L, D] @ w``."""
    return features @ readout.w
