"""Shared array aliases and the two query containers.

Dimension letters used in docstrings across jaxrank: ``Q`` queries, ``N`` documents, ``L``
documents per query (padded), ``D`` features, ``P`` preference pairs, ``K`` arms, ``T`` steps,
``S`` seeds, ``H`` hyperparameter settings.

* ``RaggedQueries``: documents stored flat with query offsets, so memory grows with the documents
  whatever the longest query. The loaders return it; every large-data path reads it.
* ``QueryBatch``: queries padded to one list size ``L`` with a mask, ``[Q, L, ...]`` arrays that
  ``lax.scan`` visits query by query; convenient for small data (``jaxrank.data.pad_queries``).
"""

from typing import Any, Callable, NamedTuple, Optional, Protocol

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


# --------------------------------------------------------------------------------------------
# The contracts every algorithm module follows (``jaxrank.registry`` for the module layout)
#
# One rule for keys: anything that draws randomness takes the PRNG key as its first argument
# (as JAX and gymnax do); a function that draws nothing takes no key. Continuous hyperparameters
# are f32 leaves of the state, set by ``init(key, size, **hparams)``; static switches are bound by
# the module's ``make(**options)``. Every ``step`` / ``update`` returns ``(state, info)`` with a
# NamedTuple ``info``, and keeps the state's tree, shapes and dtypes (``lax.scan`` requires it).
# --------------------------------------------------------------------------------------------


class UpdateInfo(NamedTuple):
    """What one ``update`` of a learner reports."""

    loss: Array  # [] mean loss of the batch's valid instances before the update (0 if none)
    updates: Array  # [] i32 instances that changed the model
    instances: Array  # [] i32 valid instances in the batch


class InstanceInfo(NamedTuple):
    """What one ``Learner.step`` on a single instance reports."""

    loss: Array  # [] loss of the instance before the update
    updated: Array  # [] bool, the instance changed the model


class Learner(NamedTuple):
    """A learner to rank over an explicit state pytree (``jaxrank.learners``), built by its module's
    ``make(**options)``:

    * ``init(key, num_features, dtype=f32, **hparams) -> state``;
    * ``update(state, batch) -> (state, UpdateInfo)``: one batch of the kind ``batches`` names:
      ``"queries"``, one padded query (``QueryBatch`` leaves without the ``Q`` axis: the online
      learners); ``"pairs"``, one step's sampled pairs (``jaxrank.pairs.PairBatch``: SPD and
      LCRA). ``lax.scan`` over batches is training; ``vmap`` covers seeds and hyperparameter grids;
    * ``params(state)``: what scoring needs (``w [D]`` for a linear model), so a protocol keeps one
      snapshot per query without copying a covariance; ``score(params, features [..., D]) -> [...]``.

    Learners driven instance by instance (the online protocols, SOLAR paper Algorithm 1) also give
    ``step(state, x, y) -> (state, InstanceInfo)`` (``instances`` says what ``x`` is: ``"pairs"``,
    ``x = x_i − x_j`` ``[D]`` with ``y = ±1``; ``"documents"``, ``x = x_i`` with ``y`` its grade) and
    may give ``steps(state, x [S, ...], y [S], live [S]) -> state``, ``S`` steps in order with those
    not ``live`` skipped, when a block form is faster (SOLAR-II).
    """

    init: Callable[..., Any]
    update: Callable[..., tuple[Any, UpdateInfo]]
    params: Callable[[Any], Any]
    score: Callable[..., Array]
    step: Optional[Callable[..., tuple[Any, InstanceInfo]]] = None
    instances: str = "pairs"
    steps: Optional[Callable[..., Any]] = None
    batches: str = "queries"


class DuelEnv(Protocol):
    """Answers duels between arms: the environment every dueling bandit plays against.

    ``duel(key, i, j, u=None) -> [] bool``: whether arm ``i`` beats arm ``j`` in one comparison.
    Bandits pass ``u``, a uniform in [0, 1) they drew together with their own choices (one PRNG
    call per step is much cheaper than two on CPU), and a ``key`` independent of it: a preference
    matrix answers ``u < P[i, j]`` from ``u`` alone; an environment that needs more randomness
    (interleaving with simulated clicks) draws it from ``key``; without ``u`` every environment
    draws from ``key``. Implementations are NamedTuples: the type picks the behaviour, the leaves
    are data, so an environment passes through ``jit`` and ``vmap``.
    """

    def duel(self, key: PRNGKey, i: Array, j: Array, u: Array | None = None) -> Array: ...


class StepInfo(NamedTuple):
    """What one bandit step reports: the duel it played."""

    first: Array  # [] i32, the first arm of the duel (the champion / candidate)
    second: Array  # [] i32, its opponent (equal to first for a self-duel)
    first_won: Array  # [] bool


class Bandit(NamedTuple):
    """A dueling bandit (``jaxrank.bandits``), built by its module's ``make(**options)``:

    * ``init(key, num_arms, **hparams) -> state`` (hyperparameters live in the state, so they vmap);
    * ``step(key, state, env: DuelEnv) -> (state, StepInfo)``: choose a pair, duel, update;
    * ``best_arm(key, state) -> [] i32``: the arm it would report if stopped now.
    """

    init: Callable[..., Any]
    step: Callable[..., tuple[Any, StepInfo]]
    best_arm: Callable[..., Array]


class RankerInfo(NamedTuple):
    """What one ``Ranker.update`` reports."""

    updated: Array  # [] bool, the impression changed the model


class Ranker(NamedTuple):
    """An online learner to rank from clicks (``jaxrank.oltr``: DBGD, MGD, PDGD), built by its module's
    ``make(**options)``; it learns from one simulated impression at a time (one query, one displayed
    list, its clicks).

    * ``init(key, num_features, **hparams) -> state``;
    * ``rank(key, state, features [L, D], where [L]) -> (docs [k] i32, shown [k] bool, aux)``: the
      list shown to the user (``docs = -1`` where not shown) and what ``update`` needs to credit clicks;
    * ``update(state, features, where, docs, shown, clicks [k] bool, aux) -> (state, RankerInfo)``;
    * ``params(state)`` and ``score(params, features [..., D]) -> [...]``: the current (production)
      ranker, for offline evaluation; ``params`` is a pytree (``w [D]`` for a linear model,
      ``jaxrank.oltr.scorers.NeuralParams`` for a network).
    """

    init: Callable[..., Any]
    rank: Callable[..., tuple[Array, Array, Any]]
    update: Callable[..., tuple[Any, RankerInfo]]
    params: Callable[[Any], Any]
    score: Callable[..., Array]
