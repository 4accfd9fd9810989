"""The learner contract (optax-shaped): a factory of hyperparameters returns ``Learner(init, update)``.

``init(key, num_features) -> state`` and ``update(state, query) -> (state, info)`` where ``query`` is
one padded query (the leaves of a ``QueryBatch`` without the leading ``Q`` axis), so ``lax.scan`` over
a batch is online learning and ``vmap`` covers seeds, permutations and hyperparameter grids.
Hyperparameters are arrays (never used in Python ``if`` or shapes), so a grid compiles once.
"""

from typing import Any, Callable, NamedTuple


class Learner(NamedTuple):
    init: Callable[..., Any]
    update: Callable[..., tuple[Any, dict]]
