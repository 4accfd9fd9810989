"""Shared array aliases and the two query containers.

Dimension letters used in docstrings across jaxrank: ``Q`` queries, ``N`` documents, ``L``
documents per query (padded), ``D`` features, ``P`` preference pairs, ``K`` arms, ``T`` steps,
``S`` seeds, ``H`` hyperparameter settings.

* ``RaggedQueries``: documents stored flat with query offsets, so memory grows with the documents
  whatever the longest query. The loaders return it; every large-data path reads it.
* ``QueryBatch``: queries padded to one list size ``L`` with a mask, ``[Q, L, ...]`` arrays that
  ``lax.scan`` visits query by query; convenient for small data (``jaxrank.data.pad_queries``).
"""

from typing import NamedTuple, Protocol

import jax
import numpy as np

Array = jax.Array
PRNGKey = jax.Array


class QueryBatch(NamedTuple):
    """Queries padded to a common list size; padding is zero and masked out.

    Works as a pytree: ``jax.tree.map(lambda x: x[i], batch)`` selects query ``i`` and
    ``lax.scan`` over a batch visits one query at a time (inside ``jit`` the ``qid`` leaf is
    int32; the host array keeps ids of 2^31 and above).
    """

    features: Array  # [Q, L, D] f32, zero on padding
    labels: Array  # [Q, L] f32 graded relevance, zero on padding
    mask: Array  # [Q, L] bool, True for real documents
    qid: np.ndarray  # [Q] i64 host array, query id from the source file (-1 on padding queries)

    @property
    def num_queries(self) -> int:
        return self.features.shape[-3]

    @property
    def list_size(self) -> int:
        return self.features.shape[-2]

    @property
    def num_features(self) -> int:
        return self.features.shape[-1]


class RaggedQueries(NamedTuple):
    """Queries as flat documents: query ``q`` owns rows ``offsets[q]:offsets[q + 1]`` (file order).

    Host numpy arrays: an algorithm moves what it needs to its device once, so a collection of
    millions of documents is not copied per call. Every query has at least one document.
    """

    features: np.ndarray  # [N, D] f32
    labels: np.ndarray  # [N] f32 graded relevance
    offsets: np.ndarray  # [Q + 1] i64, offsets[0] = 0, offsets[Q] = N
    qid: np.ndarray  # [Q] i64 query id from the source file

    @property
    def num_queries(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def num_documents(self) -> int:
        return self.features.shape[0]

    @property
    def num_features(self) -> int:
        return self.features.shape[-1]

    @property
    def lengths(self) -> np.ndarray:
        """``[Q]`` i64 documents per query."""
        return np.diff(self.offsets)

    @property
    def list_size(self) -> int:
        """The longest query's number of documents."""
        return int(self.lengths.max(initial=0))


class MetricFn(Protocol):
    """``metric(scores, labels, *, where=None, topn=None, key=None, reduce_fn=...)``."""

    def __call__(self, scores: Array, labels: Array, **kwargs) -> Array: ...
