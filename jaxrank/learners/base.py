"""The learner contract (optax-shaped): a factory of hyperparameters returns a ``Learner``.

* ``init(key, num_features, dtype=f32) -> state``.
* ``update(state, query) -> (state, info)``: one padded query (the leaves of a ``QueryBatch``
  without the leading ``Q`` axis), its instances in a fixed order, so ``lax.scan`` over a batch is
  online learning and ``vmap`` covers seeds and hyperparameter grids.
* ``step(state, x, y) -> (state, loss, updated)``: one instance. ``instances`` says what an
  instance is: ``"pairs"`` — ``x = x_i − x_j`` ``[D]`` with ``y = ±1``; ``"documents"`` —
  ``x = x_i`` ``[D]`` with ``y`` its grade. Protocols that order instances themselves (random
  query permutations, shuffles and flips; ``protocol.py``) drive ``step`` directly.
* ``readout(state)``: the part of the state that scoring needs (e.g. ``w [D]``), so a protocol can
  keep one snapshot per query without copying a covariance; ``score(readout, features [..., L, D])
  -> [..., L]`` ranks documents (higher first).

Hyperparameters are arrays (never used in Python ``if`` or shapes), so a grid compiles once.
"""

from typing import Any, Callable, NamedTuple, Optional


class Learner(NamedTuple):
    init: Callable[..., Any]
    update: Callable[..., tuple[Any, dict]]
    step: Optional[Callable[..., tuple]] = None
    readout: Optional[Callable[[Any], Any]] = None
    score: Optional[Callable[..., Any]] = None
    instances: str = "pairs"


class LinearReadout(NamedTuple):
    w: Any  # [D] f32, the scoring vector


def linear_readout(state) -> LinearReadout:
    """``readout`` of any learner whose state scores with a ``w [D]`` leaf."""
    return LinearReadout(w=state.w)


def linear_score(readout, features):
    """``[..., L]`` scores ``features [..., L, D] @ w``."""
    return features @ readout.w
