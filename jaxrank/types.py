"""Shared array aliases and the padded query container.

Dimension letters used in docstrings across jaxrank: ``Q`` queries, ``L`` documents per
query (padded), ``D`` features, ``K`` arms, ``T`` steps, ``S`` seeds, ``H`` hyperparameter
settings.
"""

from typing import NamedTuple, Protocol

import jax

Array = jax.Array
PRNGKey = jax.Array


class QueryBatch(NamedTuple):
    """Queries padded to a common list size; padding is zero and masked out.

    Works as a pytree: ``jax.tree.map(lambda x: x[i], batch)`` selects query ``i`` and
    ``lax.scan`` over a batch visits one query at a time.
    """

    features: Array  # [Q, L, D] f32, zero on padding
    labels: Array  # [Q, L] f32 graded relevance, zero on padding
    mask: Array  # [Q, L] bool, True for real documents
    qid: Array  # [Q] i32 query id from the source file

    @property
    def num_queries(self) -> int:
        return self.features.shape[-3]

    @property
    def list_size(self) -> int:
        return self.features.shape[-2]

    @property
    def num_features(self) -> int:
        return self.features.shape[-1]


class MetricFn(Protocol):
    """``metric(scores, labels, *, where=None, topn=None, key=None, reduce_fn=...)``."""

    def __call__(self, scores: Array, labels: Array, **kwargs) -> Array: ...
