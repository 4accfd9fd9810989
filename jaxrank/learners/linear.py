"""Linear scoring shared by the learners: ``params(state)`` is the weight leaf ``w [D]`` and
``score(params, features) = features @ w`` (``jaxrank.types.Learner``)."""

import jax


def params(state) -> jax.Array:
    """``w [D]``: what a linear learner scores with (its state's weight leaf)."""
    return state.w


def score(w: jax.Array, features: jax.Array) -> jax.Array:
    """``[...]`` scores ``features [..., D] @ w``."""
    return features @ w
