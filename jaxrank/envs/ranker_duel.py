"""Dueling environments whose arms are rankers compared by interleaving on simulated clicks.

Zoghi, Whiteson, de Rijke, Munos (WSDM 2014, §5): the arms are linear rankers (in the paper
single features, documents sorted by decreasing feature value). One duel samples a query
uniformly from a ``QueryBatch``, interleaves the two rankers' lists (probabilistic interleave,
Hofmann et al. CIKM 2011, or team-draft, Radlinski et al. CIKM 2008), simulates cascade clicks on
the shown list (``jaxrank.clicks.models``, or a fitted click model: ``jaxrank.clicks.fitted``) and
credits the clicks; a tie (outcome 0, e.g. no
clicks) is a fair coin, as in Lerot's ``SamplerSystem.update_solution``. Because queries are
i.i.d. and ties are coin flips, each duel is a Bernoulli(p_ij) draw for a fixed ``P``, which
``jaxrank.envs.estimate.estimate_preference_matrix`` estimates once.

The env is a NamedTuple: its type (``ProbabilisticDuelEnv`` or ``TeamDraftDuelEnv``) picks the
interleaving method and its leaves are data, so it passes through ``jit`` and works with every
bandit's ``step(state, key, env)`` through the ``DuelEnv`` contract (``env.duel(key, i, j, u)``).
Build it with ``ranker_duel_env``, which validates the inputs before anything is traced.
"""

from typing import Callable, NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks import (CascadeModel, FittedUser, SimulatedUser, check_user, probabilistic_outcome,
                            team_draft_outcome, user_clicks)
from jaxrank.clicks.interleave import probabilistic_interleave_rankings, team_draft_interleave_rankings
from jaxrank.clicks.lists import DocumentRankings, QueryRankings, check_tau_range, score_ranks, softmax_weights
from jaxrank.data.ragged import pad_queries
from jaxrank.types import Array, PRNGKey, QueryBatch, RaggedQueries

METHODS = ("probabilistic", "team_draft")


def paper_feature_ids(num_features: int, num_arms: int) -> list[int]:
    """The RCS paper's rankers: feature ids ``1..D`` sorted as strings, the first ``K``.

    For MSLR (D = 136) and K = 10: 1, 10, 100, 101, ..., 107.
    """
    if not 1 <= num_arms <= num_features:
        raise ValueError(f"num_arms must be in [1, {num_features}] (the number of features); got {num_arms}.")
    return sorted(range(1, num_features + 1), key=str)[:num_arms]


def single_feature_rankers(feature_ids: Sequence[int], num_features: int) -> Array:
    """One-hot linear rankers ``[K, D]`` f32: ranker ``k`` scores a document by feature ``feature_ids[k]``.

    Args:
      feature_ids: 1-based feature ids as in LETOR/MSLR files (``1 .. D``).
      num_features: ``D``.

    Raises:
      ValueError: naming the first id outside ``[1, D]`` (or a non-integer id).
    """
    ids = list(feature_ids)
    if not ids:
        raise ValueError("feature_ids is empty: need at least one ranker.")
    for f in ids:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or not 1 <= f <= num_features:
            raise ValueError(f"feature id {f!r} is outside [1, {num_features}] (ids are 1-based, as in LETOR files).")
    return jnp.asarray(np.eye(num_features, dtype=np.float32)[np.asarray(ids) - 1])


TIE_TOLERANCE = 1e-6


def first_wins(outcome: Array, u_tie: Array) -> Array:
    """``[]`` bool: the first ranker wins when ``outcome < 0``; a tie is a fair coin on ``u_tie``.

    ``|outcome| <= 1e-6`` counts as a tie: probabilistic interleave's ``P(o > 0) - P(o < 0)`` is
    exactly 0 in symmetric cases (e.g. clicks credited 0.3/0.7 and 0.7/0.3) that float32 rounding
    can leave at ±1e-8, and such a comparison must not depend on how the batch was vectorised.
    """
    return jnp.where(outcome < -TIE_TOLERANCE, True, jnp.where(outcome > TIE_TOLERANCE, False, u_tie < 0.5))


def interleaved_duel(key: PRNGKey, num_queries, query: Callable, click_model: SimulatedUser, *, method: str,
                     list_size: int) -> tuple[Array, Array]:
    """One interleaved comparison of two rankers: ``(first_won [] bool, outcome [] f32)``.

    Samples a query uniformly, interleaves the two rankers' lists (``method``), simulates cascade
    clicks on the shown list and credits them; a tie is a fair coin (``first_wins``).

    Args:
      key: PRNG key, split into ``(query, list, clicks, tie)``.
      num_queries: ``Q``, the queries to sample from.
      query: ``query(q) -> (rankings, labels, offset)``: the two rankers' ``QueryRankings`` of
        query ``q`` and the grades of its documents, document ``d`` at ``labels[offset + d]``
        (``offset + d`` is also its id for a ``FittedUser``).
      click_model: ``CascadeModel`` or another ``jaxrank.clicks.SimulatedUser``.
      method: ``"probabilistic"`` or ``"team_draft"`` (static).
      list_size: ``L`` (static).
    """
    key_query, key_list, key_clicks, key_tie = jax.random.split(key, 4)
    rankings, labels, offset = query(jax.random.randint(key_query, (), 0, num_queries))
    if method == "probabilistic":
        docs, shown, prob_second = probabilistic_interleave_rankings(key_list, rankings, list_size=list_size)
    else:
        docs, shown, team = team_draft_interleave_rankings(key_list, rankings, list_size=list_size)
    ids = offset + jnp.maximum(docs, 0)  # docs = -1 is never read
    shown_labels = jnp.where(shown, labels[ids], 0.0)
    clicks = user_clicks(key_clicks, click_model, shown_labels, ids, shown)
    if method == "probabilistic":
        outcome = probabilistic_outcome(prob_second, clicks, shown)
    else:
        outcome = team_draft_outcome(team, clicks, shown)
    return first_wins(outcome, jax.random.uniform(key_tie)), outcome


class InterleavedDuelEnv(NamedTuple):
    """Duels between linear rankers by interleaving; use a subclass (it picks the method)."""

    queries: QueryBatch  # features [Q, N, D] f32, labels [Q, N] f32, mask [Q, N] bool, qid [Q] i32
    rankers: Array  # [K, D] f32 linear rankers, score = features @ rankers[k]
    click_model: SimulatedUser  # click_prob [G] f32, stop_prob [G] f32; a FittedUser's tables are [Q·N]
    list_positions: Array  # [L] i32 = 0..L-1; its length is the (static) result-list size
    tau: Array  # [] f32 softmax exponent of probabilistic interleave (unused by team-draft)

    method = None  # class attribute, not a leaf: "probabilistic" or "team_draft"

    @property
    def num_arms(self) -> int:
        return self.rankers.shape[-2]

    @property
    def list_size(self) -> int:
        return self.list_positions.shape[-1]

    def duel(self, key: PRNGKey, i: Array, j: Array, u: Optional[Array] = None) -> Array:
        """``[]`` bool, True when ranker ``i`` (shown as ranker 1) beats ranker ``j``.

        Samples a query uniformly, interleaves the two rankers' lists, simulates clicks and
        credits them; a tie is a fair coin. ``i == j`` is a fair coin too (every outcome ties).
        Every draw comes from ``key``; the bandit's uniform ``u`` is not needed.
        """
        del u

        def query(q):
            features, where = self.queries.features[q], self.queries.mask[q]  # [N, D], [N]
            ranks = jnp.stack([score_ranks(features @ self.rankers[i], where),
                               score_ranks(features @ self.rankers[j], where)])
            num_docs = self.queries.labels.shape[-1]  # flat: document d of query q is q·N + d
            return self.rankings(ranks, where), self.queries.labels.reshape(-1), q * num_docs

        return interleaved_duel(key, self.queries.features.shape[-3], query, self.click_model, method=self.method,
                                list_size=self.list_size)[0]


class ProbabilisticDuelEnv(InterleavedDuelEnv):
    """Probabilistic interleave (Hofmann et al. 2011) with the marginalised outcome."""

    __slots__ = ()
    method = "probabilistic"

    def rankings(self, ranks: Array, where: Array) -> QueryRankings:
        check_tau_range(self.tau, self.list_size)
        return DocumentRankings(ranks, where, softmax_weights(ranks, where, self.tau))


class TeamDraftDuelEnv(InterleavedDuelEnv):
    """Team-draft interleave (Radlinski et al. 2008): the team with more clicks wins."""

    __slots__ = ()
    method = "team_draft"

    def rankings(self, ranks: Array, where: Array) -> QueryRankings:
        return DocumentRankings(ranks, where)


_ENV_TYPES = {"probabilistic": ProbabilisticDuelEnv, "team_draft": TeamDraftDuelEnv}


def check_method(method: str) -> None:
    if method not in _ENV_TYPES:
        raise ValueError(f"unknown interleaving method {method!r}; known: {', '.join(METHODS)}.")


def check_duel_inputs(queries: Union[RaggedQueries, QueryBatch], rankers, click_model: SimulatedUser, *,
                      method: str, list_size: int, tau) -> np.ndarray:
    """Python-level validation shared by the env and the estimator; returns ``rankers`` as ``[K, D]`` f32.

    ``queries`` is a ``RaggedQueries`` (flat labels ``[N]``) or a ``QueryBatch`` (labels ``[Q, L]``
    under ``mask``); only real documents' labels are checked.

    Raises:
      ValueError: naming the bad value: unknown method, ``list_size < 1``, ``tau <= 0``, rankers
        not ``[K, D]`` with the queries' ``D``, non-finite weights, click probabilities outside
        [0, 1], or labels above the click model's top grade.
    """
    check_method(method)
    if isinstance(list_size, bool) or not isinstance(list_size, (int, np.integer)) or list_size < 1:
        raise ValueError(f"list_size must be an int >= 1; got {list_size!r}.")
    if not np.ndim(tau) == 0 or not float(tau) > 0.0:
        raise ValueError(f"tau must be a positive scalar; got {tau!r}.")
    weights = np.asarray(rankers, dtype=np.float32)
    num_features = queries.features.shape[-1]
    if weights.ndim != 2 or weights.shape[1] != num_features or weights.shape[0] < 1:
        raise ValueError(f"rankers must be [K, D] with D = {num_features} (the queries' features); "
                         f"got shape {weights.shape}.")
    if not np.all(np.isfinite(weights)):
        k = int(np.argwhere(~np.isfinite(weights))[0, 0])
        raise ValueError(f"ranker {k} has a non-finite weight.")
    if isinstance(click_model, FittedUser):  # ids: flat rows of RaggedQueries, q·N + d of a QueryBatch
        check_user(click_model, int(np.prod(np.shape(queries.labels))))
        return weights
    check_user(click_model)
    num_grades = np.shape(click_model.click_prob)[-1]
    labels = np.asarray(queries.labels)
    if isinstance(queries, QueryBatch):
        labels = labels[np.asarray(queries.mask)]
    if labels.size and labels.max() > num_grades - 1:
        raise ValueError(f"the queries have grade {labels.max():g} but the click model has only {num_grades} "
                         f"grades (0..{num_grades - 1}); use cascade_model(name, num_grades={int(labels.max()) + 1}).")
    return weights


def device_user(click_model: SimulatedUser) -> SimulatedUser:
    """``click_model`` with f32 device leaves (a ``CascadeModel`` is rebuilt from its two vectors)."""
    if isinstance(click_model, CascadeModel):
        return CascadeModel(jnp.asarray(click_model.click_prob, jnp.float32),
                            jnp.asarray(click_model.stop_prob, jnp.float32))
    return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), click_model)


def ranker_duel_env(queries: Union[RaggedQueries, QueryBatch], rankers, click_model: SimulatedUser, *,
                    method: str = "probabilistic", list_size: int = 10, tau: float = 3.0) -> InterleavedDuelEnv:
    """A validated interleaving duel env over ``queries``.

    Args:
      queries: ``QueryBatch`` (``features [Q, N, D]``); ``RaggedQueries`` are padded with
        ``jaxrank.data.pad_queries`` (small data: the env keeps every query on the device; for a
        large collection estimate ``P`` with ``jaxrank.envs.estimate`` and duel on the matrix).
      rankers: ``[K, D]`` linear rankers, e.g. ``single_feature_rankers(ids, D)``.
      click_model: ``CascadeModel`` with at least as many grades as the labels need, or a
        ``FittedUser`` over the padded queries' ``Q·N`` documents (``q·N + d``).
      method: ``"probabilistic"`` (the RCS paper's oracle) or ``"team_draft"``.
      list_size: ``L``, the result-list length (10 in the paper); ``min(L, #docs)`` are shown.
      tau: probabilistic interleave's softmax exponent (3 in the paper).

    Returns:
      ``ProbabilisticDuelEnv`` or ``TeamDraftDuelEnv``.
    """
    if isinstance(queries, RaggedQueries):
        queries = pad_queries(queries)
    weights = check_duel_inputs(queries, rankers, click_model, method=method, list_size=list_size, tau=tau)
    return _ENV_TYPES[method](
        queries=queries,
        rankers=jnp.asarray(weights),
        click_model=device_user(click_model),
        list_positions=jnp.arange(list_size, dtype=jnp.int32),
        tau=jnp.asarray(tau, jnp.float32),
    )
