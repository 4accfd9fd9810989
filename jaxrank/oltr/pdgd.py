"""Pairwise Differentiable Gradient Descent (Oosterhuis & de Rijke, CIKM 2018, Algorithm 1), linear or neural.

Per impression (paper §4):

1. Display: sample the top ``k`` of a Plackett–Luce ranking, ``P(d | D) = e^{f(d)} / Σ_{d'∈D} e^{f(d')}``
   position by position without replacement (eq. 1–2). We draw it with the Gumbel-top-k trick,
   ``top_k(f(d) + g_d)`` with i.i.d. standard Gumbel ``g``, which has exactly this law
   (``jaxrank.clicks.plackett_luce``).
2. Infer pair preferences from clicks under the click-skip-above assumption (eq. 3, §4.1): a
   clicked document is preferred over every unclicked document above the last click and over the
   first unclicked document after it (the authors' ``_update_to_clicks``).
3. Debias each pair ``d_k ≻ d_l`` with ``ρ(d_k, d_l, R, D) = P(R*(d_k, d_l) | f) / (P(R | f) +
   P(R*(d_k, d_l) | f))`` (eq. 9), where ``R*`` swaps the two documents in the displayed list.
4. Step along the weighted pairwise gradient (eq. 10)
   ``∇f ≈ Σ_{d_k ≻_c d_l} ρ(d_k, d_l, R, D) ∇P(d_k ≻ d_l | D, f)`` with
   ``P(d_k ≻ d_l) = e^{f(d_k)} / (e^{f(d_k)} + e^{f(d_l)})`` (eq. 5): ``w ← w + η ∇f``. The sum
   gathers into one weight per displayed document, ``∇f ≈ Σ_i c_i ∇_w f(d_i)`` (``pdgd_weights``),
   so the step holds for any differentiable model: ``c @ x`` for the linear model, ``jax.vjp`` of
   the network for the neural one (``jaxrank.oltr.scorers``; the authors' ``update_to_documents``).

``P(R*) / P(R)`` only involves positions ``i < r ≤ j`` between the pair (positions ``i < j``): the
numerators of eq. 2 are the same documents and at ``r ≤ i`` or ``r > j`` the remaining sets agree,
so ``log P(R*) − log P(R) = Σ_{i<r≤j} [LSE(D_r) − LSE(D_r \\ {R_j} ∪ {R_i})]`` with ``D_r`` the
documents not shown above ``r`` (undisplayed documents included) and ``LSE`` the log-sum-exp of
``f``. Computed for every position pair at once, ``O(k³ + L)`` per impression, from sums of
positive terms only (no cancellation). The default ``η = 0.1`` is the authors'
(github.com/HarrieO/OnlineLearningToRank ``algorithms/PDGD/pdgd.py``; their ``scripts/CIKM2018.py``
also decays it by 0.9999977 per update, ``learning_rate_decay``). The pairs, ``ρ`` and the pair
weights follow that file's ``_update_to_clicks``.

``model="neural"`` is the paper's PDGD (neural) (§4.3): one hidden layer of 64 sigmoid units,
η = 0.1 like the linear model (the authors' ``algorithms/PDGD/deeppdgd.py`` defaults to 0.01, which
their ``scripts/CIKM2018.py`` overrides with 0.1), initial weights drawn from ``init``'s key.

Random draws of one impression: ``jax.random.gumbel(key, (L,))``.
"""

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks.plackett_luce import plackett_luce_top_k
from jaxrank.oltr import scorers
from jaxrank.oltr.base import MODEL_OPTIONS, check_features, check_list_size, check_rates, params
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, Ranker, RankerInfo
from jaxrank.utils.checks import check_int


class PDGDState(NamedTuple):
    w: Any  # the scoring model's parameters: [D] f32 (linear) or scorers.NeuralParams
    learning_rate: jax.Array  # [] f32, η (decayed after every update with a pair)
    learning_rate_decay: jax.Array  # [] f32
    t: jax.Array  # [] i32, impressions seen


def inferred_pairs(clicks: Array, shown: Array) -> Array:
    """``[k, k]`` bool, ``[a, b]`` True when position ``a`` is preferred over position ``b``
    (click-skip-above plus the first unclicked position after the last click, §4.1)."""
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    positions = jnp.arange(clicked.shape[-1])
    last_click = jnp.max(jnp.where(clicked, positions, -2))
    observed = shown & (positions <= last_click + 1)
    return clicked[:, None] & (observed & ~clicked)[None, :]


def _log_swap_ratio(displayed: Array, shown: Array, rest_lse: Array) -> Array:
    """``[k, k]``: ``log P(R*_{ij}) − log P(R)`` for positions ``i, j`` (symmetric, 0 on the diagonal).

    ``displayed [k]`` scores in display order, ``rest_lse`` the log-sum-exp of the undisplayed
    documents' scores (``-inf`` if none). Row ``r`` of the sums is scaled by ``m_r``, the largest
    score still remaining at ``r``, so ``Z_r >= 1``; sums only add positive terms (no cancellation).
    """
    num = displayed.shape[-1]
    pos = jnp.arange(num)
    f = jnp.where(shown, displayed, -jnp.inf)
    at_or_below = pos[None, :] >= pos[:, None]  # [r, s]: s still remaining at r
    suffix = jnp.where(at_or_below, f[None, :], -jnp.inf)
    m = jnp.maximum(jnp.max(suffix, axis=-1), rest_lse)  # [r]
    m = jnp.where(jnp.isfinite(m), m, 0.0)
    e = jnp.where(at_or_below, jnp.exp(suffix - m[:, None]), 0.0)  # [r, s]
    rest = jnp.exp(rest_lse - m)  # [r]
    z = jnp.sum(e, axis=-1) + rest  # Z_r = Σ_{d ∈ D_r} e^{f(d) - m_r}
    # Y_{r,j} = Z_r without R_j, summed directly; swapped set D_r \ {R_j} ∪ {R_i} adds e^{f_i - m_r}.
    y = (e @ (1.0 - jnp.eye(num, dtype=e.dtype))) + rest[:, None]  # [r, j]
    e_upper = jnp.exp(f[None, :] - m[:, None])  # [r, i]
    # Only the triples i < r <= j enter (a static list, ~k³/6): gather, log, and sum over r.
    i, r, j = (np.asarray(v, np.int32) for v in zip(*[(i, r, j) for j in range(num) for r in range(1, j + 1)
                                                       for i in range(r)])) if num > 1 else ([], [], [])
    if num > 1:
        terms = jnp.log(z[r]) - jnp.log(y[r, j] + e_upper[r, i])
        log_ratio = jnp.zeros((num, num), terms.dtype).at[i, j].add(terms)
    else:
        log_ratio = jnp.zeros((num, num), jnp.float32)
    log_ratio = jnp.nan_to_num(log_ratio, nan=0.0)  # opposite infinite terms: only for score gaps beyond f32
    return jnp.where(pos[:, None] < pos[None, :], log_ratio, log_ratio.T)


def pdgd_weights(scores: Array, where: Array, docs: Array, shown: Array, clicks: Array) -> Array:
    """``[k]`` f32 ``c``: PDGD's gradient of one impression (eq. 10) is ``Σ_i c_i ∇f(d_i)`` over the
    displayed documents ``d_i = docs[i]`` (0 where not shown); ``c_i`` sums ``ρ ∂P(d_a ≻ d_b)/∂f``
    over the pairs, ``+`` where ``d_i`` is preferred and ``−`` where it is not.

    Args:
      scores: ``[L]`` the model's scores ``f(d)`` of the query's documents.
      where: ``[L]`` bool, real documents.
      docs: ``[k]`` i32 displayed documents (-1 where not shown).
      shown: ``[k]`` bool.
      clicks: ``[k]`` bool clicks on the displayed positions.
    """
    safe = jnp.maximum(docs, 0)
    displayed = jnp.where(shown, scores[safe], 0.0)
    # Compare instead of scatter: a scatter per impression is slow under vmap on CPU.
    on_list = jnp.any((jnp.arange(scores.shape[-1])[:, None] == safe[None, :]) & shown[None, :], axis=-1)
    rest_lse = jax.nn.logsumexp(jnp.where(where & ~on_list, scores, -jnp.inf))
    pairs = inferred_pairs(clicks, shown)  # [a, b]: a ≻ b
    rho = jax.nn.sigmoid(_log_swap_ratio(displayed, shown, rest_lse))  # P(R*) / (P(R) + P(R*))
    gap = displayed[:, None] - displayed[None, :]
    # ∇P(d_a ≻ d_b) = σ(gap) σ(−gap) (∇f(d_a) − ∇f(d_b)) (eq. 5): +weight on a, −weight on b.
    weight = jnp.where(pairs, rho * jax.nn.sigmoid(gap) * jax.nn.sigmoid(-gap), 0.0)
    per_position = jnp.sum(weight, axis=1) - jnp.sum(weight, axis=0)  # [k]
    return jnp.where(shown, per_position, 0.0)


def pdgd_gradient(scores: Array, features: Array, where: Array, docs: Array, shown: Array, clicks: Array) -> Array:
    """``[D]`` f32 PDGD's estimated gradient of one impression (eq. 10) for a linear model:
    ``pdgd_weights(...) @ features[docs]`` (``∇_w f(d) = x_d``); ``features`` is ``[L, D]``, the
    other arguments as ``pdgd_weights``."""
    return pdgd_weights(scores, where, docs, shown, clicks) @ features[jnp.maximum(docs, 0)]


HPARAMS = {
    # η: the authors' PDGD default (github.com/HarrieO/OnlineLearningToRank algorithms/PDGD/pdgd.py).
    "learning_rate": 0.1,
    # Factor applied to η after each update with a pair; 1 keeps η constant (models/linearmodel.py of the
    # authors' code; their scripts/CIKM2018.py runs 0.9999977, which the oltr experiment uses).
    "learning_rate_decay": 1.0,
}

OPTIONS = {
    "list_size": 10,  # k, the displayed list length (10 in the PDGD paper, §6)
    **MODEL_OPTIONS,  # model ("linear" or "neural") and hidden_units
}

_LINEAR = scorers.make()


def init(key, num_features: int, *, scorer: scorers.Scorer = _LINEAR, **hparams) -> PDGDState:
    """``w = scorer.init(key, D)`` (zero for the linear model; ``make`` binds the scorer) with
    ``HPARAMS`` (overridden by ``hparams``) as f32 leaves.

    Raises:
      ValueError: for an unknown name, a static option, or a value out of range (when concrete).
    """
    hparams = hparams_with_defaults("ranker 'pdgd'", HPARAMS, OPTIONS, hparams)
    check_int("num_features", num_features, minimum=1)
    check_rates(hparams["learning_rate"], hparams["learning_rate_decay"])
    return PDGDState(scorer.init(key, num_features), jnp.asarray(hparams["learning_rate"], jnp.float32),
                     jnp.asarray(hparams["learning_rate_decay"], jnp.float32), jnp.zeros((), jnp.int32))


def rank(key, state: PDGDState, features, where, *, scorer: scorers.Scorer, list_size: int):
    """The top ``k`` of a Plackett–Luce ranking by ``f``: ``(docs [k], shown [k], scores [L])``."""
    check_features(features, where)
    scores = scorer.apply(state.w, features)
    docs, shown = plackett_luce_top_k(key, scores, where, list_size)
    return docs, shown, scores


def update(state: PDGDState, features, where, docs, shown, clicks, aux, *, scorer: scorers.Scorer):
    """``w ← w + η ∇f`` (eq. 10): ``(state, RankerInfo)``; updated when the clicks give a pair."""
    weights = pdgd_weights(aux, jnp.asarray(where, bool), docs, shown, clicks)  # [k]
    gradient = scorer.gradient(state.w, features[jnp.maximum(docs, 0)], weights)
    any_pair = jnp.any(inferred_pairs(clicks, shown))
    state = state._replace(
        w=jax.tree.map(lambda w, g: w + state.learning_rate * g, state.w, gradient),
        learning_rate=jnp.where(any_pair, state.learning_rate * state.learning_rate_decay, state.learning_rate),
        t=state.t + 1,
    )
    return state, RankerInfo(updated=any_pair)


def make(*, list_size: int = OPTIONS["list_size"], model: str = OPTIONS["model"],
         hidden_units: int = OPTIONS["hidden_units"]) -> Ranker:
    """PDGD as a ``jaxrank.types.Ranker`` with the static options bound.

    Args:
      list_size: ``k``, the displayed list length.
      model: ``"linear"`` or ``"neural"`` (``jaxrank.oltr.scorers``).
      hidden_units: the neural model's hidden layer width (unused by the linear model).
    """
    check_list_size(list_size)
    scorer = scorers.make(model, hidden_units)
    return Ranker(functools.partial(init, scorer=scorer), functools.partial(rank, scorer=scorer, list_size=list_size),
                  functools.partial(update, scorer=scorer), params, scorer.apply)
