"""Propensity SVM-Rank (Joachims, Swaminathan & Schnabel, WSDM 2017, §5).

Each logged click on a document ``d`` of a query becomes a training instance "``d`` above every other
candidate ``j`` of the query", with one hinge slack per ``j``, weighted by the inverse propensity of
the click (the examination probability of the rank ``d`` was clicked at):

    min_w  (λ/2)‖w‖² + (1/n) Σ_clicks (1/ρ_d) Σ_{j ≠ d} max(0, 1 − wᵀ(x_d − x_j)),

with ``n`` the number of clicks (SVM-Rank's ``½‖w‖² + (C/n) Σ ξ`` with ``λ = 1/C``). Its data term is an
upper bound of the IPS estimate of the average rank of the relevant documents, unbiased in
expectation over the clicks (§4). The authors' solver is the cutting-plane SVM-struct of
``svm_proprank`` (not public here); the objective is the same, minimised here by full-batch Adam on
the subgradient (``jaxrank.counterfactual.rankers.fit``; jaxrank's Newton RankSVM solvers take no
per-pair weights and use the squared hinge). The pairs are every other document of ``where``: the
candidates passed in (the paper ranks each click above all candidate results; pass the displayed
documents alone for clicked-vs-other-displayed pairs). ``propensities = 1`` gives the naive
(biased) SVM-Rank on clicks.

Only clicked documents carry weight, and under a deterministic top-``K`` logger only the ``K`` shown
documents of a query can be clicked: ``displayed_objective`` evaluates the same objective on
``[Q, K, L]`` pairs (each shown document against every candidate) instead of ``[Q, L, L]``.

At the scale of MSLR-WEB30K (3.8M documents, up to 1,251 per query) even ``[Q, K, L]`` is mostly padding:
``ragged_objective`` takes the documents flat (``features [N, D]``), the shown documents as flat
``rows [Q, K]`` and each query's candidates in a ``RaggedLayout`` (blocks of queries whose candidate
counts round up to one power of two), and forms the ``[B, K, L_b]`` hinges of each block's candidates
against the ``K`` shown documents of their query: memory and work are ``O(N·K)`` (padding at most
doubles them) plus the two passes over the features (scores, gradient) of each step; no pair or
per-pair feature array exists.

The trainer keeps the family contract: ``make(num_steps=)`` gives ``PropensitySVM(init, step, score)``;
``init(key, num_features, lam=, clip=, learning_rate=)`` stores ``λ``, ``τ`` (0: no clipping) and Adam's
step size as f32 leaves of the ``SVMState`` (a grid of them is lanes of one program); ``step(key, state,
data)`` is one Adam step (``jaxrank.counterfactual.rankers``) on ``objective`` for a ``ClickData`` or on
``ragged_objective`` for a ``RaggedClickData`` (the data's type chooses). ``train`` and ``ragged_train``
run ``num_steps`` of them from ``w = 0``.
"""

from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.counterfactual import rankers
from jaxrank.counterfactual.ips_losses import ips_weights, pairwise_ips_hinge_loss
from jaxrank.counterfactual.rankers import FitInfo, FitState, FitStepInfo
from jaxrank.data.ragged import bucket_sizes
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, PRNGKey

# lam: λ = 1/C of SVM-Rank (Joachims et al., WSDM 2017, §6 select C on validation clicks; jaxrank's default, the
# counterfactual learners' λ); clip: τ = 0, no clipping; learning_rate: the Adam trainer's (rankers.HPARAMS).
HPARAMS = {"lam": 1e-3, "clip": 0.0, "learning_rate": rankers.HPARAMS["learning_rate"]}
OPTIONS = dict(rankers.OPTIONS)  # num_steps: the step-size schedule's horizon


def num_clicks(clicks: Array, where: Array, weights=None) -> Array:
    """``[]`` ``n = Σ weights_q Σ_{d ∈ where} clicks_qd`` (click rates times sessions = clicks)."""
    per_list = jnp.sum(jnp.where(where, clicks, 0.0), axis=-1)
    return jnp.sum(per_list if weights is None else per_list * weights)


def objective(w: Array, features: Array, clicks: Array, propensities: Array, *, where: Array, lam, clip=None,
              weights=None, num_instances=None) -> Array:
    """``(λ/2)‖w‖² + (1/n) Σ_q weights_q · pairwise_ips_hinge_loss(features_q @ w, …)`` (module docstring).

    Args:
      w: ``[D]``.
      features: ``[Q, L, D]``.
      clicks: ``[Q, L]`` clicks (or per-session click rates, with ``weights`` the sessions ``[Q]``).
      propensities: ``[Q, L]`` examination probability of each document's clicks.
      where: ``[Q, L]`` the candidates.
      lam: ``λ``.
      clip: propensity clipping ``τ``.
      weights: ``[Q]`` or ``None``.
      num_instances: ``n`` (default ``num_clicks``: pass the logged clicks when ``clicks`` are estimates such
        as doubly robust targets, whose sum is not a count).
    """
    data = pairwise_ips_hinge_loss(features @ w, clicks, propensities, where=where, clip=clip, weights=weights,
                                   reduce_fn=jnp.sum)
    n = num_clicks(clicks, where, weights) if num_instances is None else num_instances
    return data / jnp.maximum(n, 1.0) + 0.5 * lam * (w @ w)


def displayed_objective(w: Array, features: Array, candidates: Array, docs: Array, clicks: Array,
                        propensities: Array, *, lam, clip=None, weights=None, num_instances=None) -> Array:
    """``objective`` with the clicks on the shown documents only, in ``O(Q·K·L)``; a click on a document
    that is not a candidate counts nowhere (as in ``objective``).

    Args:
      w: ``[D]``.
      features: ``[Q, L, D]`` every candidate.
      candidates: ``[Q, L]`` bool, the documents each click is ranked against.
      docs: ``[Q, K]`` i32 the shown documents (distinct within a query; any index where ``clicks`` is 0).
      clicks, propensities: ``[Q, K]`` per shown position.
      lam, clip, weights, num_instances: as ``objective`` (``num_instances`` defaults to the clicks' sum).
    """
    scores = features @ w  # [Q, L]
    shown_scores = jnp.take_along_axis(scores, docs, axis=-1)  # [Q, K]
    hinge = jnp.maximum(0.0, 1.0 - (shown_scores[..., :, None] - scores[..., None, :]))  # [Q, K, L]
    others = candidates[..., None, :] & (jnp.arange(scores.shape[-1]) != docs[..., None])
    per_click = jnp.sum(jnp.where(others, hinge, 0.0), axis=-1)
    clicks = jnp.where(jnp.take_along_axis(candidates, docs, axis=-1), clicks, 0.0)
    per_list = jnp.sum(ips_weights(clicks, propensities, clip=clip) * per_click, axis=-1)
    data = jnp.sum(per_list if weights is None else per_list * weights)
    n = jnp.sum(clicks if weights is None else clicks * weights[..., None]) if num_instances is None else num_instances
    return data / jnp.maximum(n, 1.0) + 0.5 * lam * (w @ w)


class RaggedLayout(NamedTuple):
    """The candidates of every query in a few padded blocks: queries grouped by their number of candidates
    rounded up to a power of two (``jaxrank.data.ragged``'s buckets), so padding is at most 2x."""

    slots: tuple  # per block [B, L_b] i32: the flat row of each candidate, N (a padding row) past the list
    queries: tuple  # per block [B] i32: the query of each row
    counts: Array  # [Q] i32 candidates of each query (a query without any is in no block)


def ragged_layout(offsets, candidates=None, *, minimum: int = 8) -> RaggedLayout:
    """``RaggedLayout`` of flat queries (host numpy, once per data set).

    Args:
      offsets: ``[Q + 1]`` query offsets.
      candidates: ``[N]`` bool, the documents a click is ranked against (default all); a click's own
        document never counts as its pair.
      minimum: the smallest block width.
    """
    offsets = np.asarray(offsets, np.int64)
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or (np.diff(offsets) < 0).any():
        raise ValueError(f"offsets must be [Q + 1] non-decreasing from 0; got {offsets.tolist()[:8]}"
                         f"{' ...' if offsets.size > 8 else ''} of shape {offsets.shape}.")
    num_docs = int(offsets[-1])
    if candidates is not None and np.shape(candidates) != (num_docs,):
        raise ValueError(f"candidates must be [N] = [{num_docs}] (one per document); got shape {np.shape(candidates)}.")
    query_of = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    rows = np.arange(num_docs) if candidates is None else np.flatnonzero(np.asarray(candidates, bool))
    counts = np.bincount(query_of[rows], minlength=offsets.shape[0] - 1)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    width = bucket_sizes(counts, minimum=minimum)
    slots, queries = [], []
    for size in np.unique(width[counts > 0]):
        members = np.flatnonzero((width == size) & (counts > 0))
        position = np.arange(size)
        inside = position < counts[members, None]
        index = np.where(inside, starts[members, None] + position, 0)
        slots.append(jnp.asarray(np.where(inside, rows[index], num_docs), jnp.int32))
        queries.append(jnp.asarray(members, jnp.int32))
    return RaggedLayout(tuple(slots), tuple(queries), jnp.asarray(counts, jnp.int32))


def ragged_objective(w: Array, features: Array, layout: RaggedLayout, rows: Array, clicks: Array,
                     propensities: Array, *, lam, clip=None, weights=None, num_instances=None) -> Array:
    """``objective`` over flat documents: ``(λ/2)‖w‖² + (1/n) Σ_q weights_q Σ_k c_qk / max(ρ_qk, τ)
    Σ_{j ∈ candidates_q, j ≠ rows_qk} max(0, 1 − (s_{rows_qk} − s_j))`` with ``s = features @ w``; a
    click on a document that is not a candidate counts nowhere (as in ``objective``).

    Args:
      w: ``[D]``.
      features: ``[N, D]`` flat documents.
      layout: ``ragged_layout`` of the queries' candidates.
      rows: ``[Q, K]`` i32 flat row of the document shown at each rank (any row where ``clicks`` is 0).
      clicks, propensities: ``[Q, K]`` per shown rank.
      lam, clip, weights, num_instances: as ``objective`` (``n`` defaults to the clicks, times ``weights``).
    """
    scores = features @ w  # [N]: with the gradient's features.T @ g, the two passes over the data a step
    padded = jnp.concatenate([scores, jnp.zeros(1, scores.dtype)])
    shown = scores[rows]  # [Q, K]
    click_weights = ips_weights(clicks, propensities, clip=clip)
    counted = clicks if weights is None else clicks * weights[:, None]
    if weights is not None:
        click_weights = click_weights * weights[:, None]
    data, n = 0.0, 0.0
    for slots, queries in zip(layout.slots, layout.queries):  # a few static block shapes
        own = slots[:, None, :] == rows[queries][:, :, None]  # [B, K, L_b]
        others = (slots[:, None, :] < scores.shape[0]) & ~own
        hinge = jnp.maximum(0.0, 1.0 - (shown[queries][:, :, None] - padded[slots][:, None, :]))  # [B, K, L_b]
        per_click = jnp.sum(jnp.where(others, hinge, 0.0), axis=-1)
        candidate = jnp.any(own, axis=-1)  # [B, K] the clicked document is one of the query's candidates
        data = data + jnp.sum(jnp.where(candidate, click_weights[queries] * per_click, 0.0))
        n = n + jnp.sum(jnp.where(candidate, counted[queries], 0.0))
    n = n if num_instances is None else num_instances
    return data / jnp.maximum(n, 1.0) + 0.5 * lam * (w @ w)


def ragged_pairs(layout: RaggedLayout, rows: Array, clicks: Array, num_docs: int) -> Array:
    """``[]`` i32 the (click, other candidate) pairs ``ragged_objective`` sums: each clicked ``(q, k)`` cell
    on a candidate times the other candidates of ``q``."""
    total = jnp.zeros((), jnp.int32)
    for slots, queries in zip(layout.slots, layout.queries):
        num_candidates = jnp.sum(slots < num_docs, axis=-1)  # [B]
        own = jnp.any(slots[:, None, :] == rows[queries][:, :, None], axis=-1)  # [B, K]
        total = total + jnp.sum(jnp.where((clicks[queries] > 0) & own, num_candidates[:, None] - 1, 0))
    return total


class ClickData(NamedTuple):
    """The padded data of ``objective``."""

    features: Array  # [Q, L, D]
    clicks: Array  # [Q, L] clicks (or click rates, with weights the sessions)
    propensities: Array  # [Q, L] examination probability of each document's clicks
    where: Array  # [Q, L] bool candidates
    weights: Optional[Array] = None  # [Q] or None
    num_instances: Optional[Array] = None  # [] n, or None for num_clicks


class RaggedClickData(NamedTuple):
    """The flat data of ``ragged_objective``."""

    features: Array  # [N, D]
    layout: RaggedLayout
    rows: Array  # [Q, K] i32 flat row shown at each rank
    clicks: Array  # [Q, K]
    propensities: Array  # [Q, K]
    weights: Optional[Array] = None  # [Q] or None
    num_instances: Optional[Array] = None  # [] or None


class SVMState(NamedTuple):
    fit: FitState  # w [D] f32 (fit.params), Adam's state and step size
    lam: Array  # [] f32 λ
    clip: Array  # [] f32 τ (0: no clipping)


class PropensitySVM(NamedTuple):
    """``init(key, num_features, **hparams) -> SVMState``; ``step(key, state, data) -> (SVMState,
    FitStepInfo)``; ``score(w, features) -> scores``."""

    init: Callable
    step: Callable
    score: Callable


def data_objective(data, lam, clip) -> Callable[[Array], Array]:
    """``w -> objective`` of ``data``: ``objective`` of a ``ClickData``, ``ragged_objective`` of a
    ``RaggedClickData``."""
    if isinstance(data, RaggedClickData):
        return lambda w: ragged_objective(w, data.features, data.layout, data.rows, data.clicks, data.propensities,
                                          lam=lam, clip=clip, weights=data.weights, num_instances=data.num_instances)
    return lambda w: objective(w, data.features, data.clicks, data.propensities, where=data.where, lam=lam, clip=clip,
                               weights=data.weights, num_instances=data.num_instances)


def score(w: Array, features: Array) -> Array:
    """``[...]`` ``features [..., D] @ w``."""
    return features @ w


def make(*, num_steps: int = OPTIONS["num_steps"]) -> PropensitySVM:
    trainer = rankers.make(num_steps=num_steps)

    def init(key: PRNGKey, num_features: int, **hparams) -> SVMState:
        values = hparams_with_defaults("Propensity SVM-Rank", HPARAMS, OPTIONS, hparams)
        w0 = jnp.zeros(num_features, jnp.float32)
        return SVMState(trainer.init(key, w0, learning_rate=values["learning_rate"]),
                        jnp.asarray(values["lam"], jnp.float32), jnp.asarray(values["clip"], jnp.float32))

    def step(key: PRNGKey, state: SVMState, data) -> tuple[SVMState, FitStepInfo]:
        fit, info = trainer.step(key, state.fit, data_objective(data, state.lam, state.clip))
        return state._replace(fit=fit), info

    return PropensitySVM(init, step, score)


def _train(data, num_features: int, lam, clip, num_steps: int, learning_rate) -> tuple[Array, FitInfo]:
    svm = make(num_steps=num_steps)
    state = svm.init(None, num_features, lam=lam, clip=0.0 if clip is None else clip, learning_rate=learning_rate)
    state, infos = jax.lax.scan(lambda s, _: svm.step(None, s, data), state, None, length=num_steps)
    w = state.fit.params
    return w, FitInfo(infos.loss, data_objective(data, state.lam, state.clip)(w))


def ragged_train(features: Array, layout: RaggedLayout, rows: Array, clicks: Array, propensities: Array, *, lam,
                 clip=None, weights=None, num_instances=None, num_steps: int = OPTIONS["num_steps"],
                 learning_rate=HPARAMS["learning_rate"]) -> tuple[Array, FitInfo]:
    """``(w [D], FitInfo)``: ``ragged_objective`` minimised from ``w = 0`` by ``num_steps`` steps of
    ``make(num_steps=)`` (pure; jit it)."""
    data = RaggedClickData(features, layout, rows, clicks, propensities, weights, num_instances)
    return _train(data, features.shape[-1], lam, clip, num_steps, learning_rate)


def train(features: Array, clicks: Array, propensities: Array, *, where: Array, lam, clip=None, weights=None,
          num_instances=None, num_steps: int = OPTIONS["num_steps"],
          learning_rate=HPARAMS["learning_rate"]) -> tuple[Array, FitInfo]:
    """``(w [D], FitInfo)``: the objective minimised from ``w = 0`` by ``num_steps`` steps of
    ``make(num_steps=)`` (pure; jit and vmap it)."""
    data = ClickData(features, clicks, propensities, where, weights, num_instances)
    return _train(data, features.shape[-1], lam, clip, num_steps, learning_rate)
