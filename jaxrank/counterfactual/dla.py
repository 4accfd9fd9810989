"""The Dual Learning Algorithm (DLA; Ai, Bi, Luo, Guo & Croft, SIGIR 2018): a ranker and a propensity
model learned jointly from clicks, each with an IPS softmax loss weighted by the other's output.

On a displayed list of ``K`` positions with clicks ``c_k``, the ranker's scores ``s_k`` and the
propensity model's logits ``g_k`` (one free logit per rank: ULTRA's ``DenoisingNet`` is a linear
layer on the one-hot position):

* ranking loss ``−Σ_k c_k (P̂_1 / P̂_k) log softmax(s)_k``, with ``P̂ = softmax(g)`` (the paper's
  eq. 9–10: the propensity model's output, normalised by the first rank, as the inverse propensity);
* examination loss ``−Σ_k c_k (R̂_1 / R̂_k) log softmax(g)_k``, with ``R̂ = softmax(s)`` (the dual
  problem: relevance as the "propensity" of examination).

Both weights are constants to the other loss (ULTRA ``ultra/learning_algorithm/dla.py``:
``get_normalized_weights`` and the two ``click_weighted_softmax_cross_entropy_loss`` calls;
ultr-reproducibility ``src/loss.py`` ``dual_learning_algorithm`` with ``normalize_weights``, clipped at
``max_weight``), so the sum of the two losses trains each model on its own loss. Both are
``jaxrank.counterfactual.ips_losses.listwise_ips_loss`` with relative propensities ``P̂_k / P̂_1``
(resp. ``R̂_k / R̂_1``) and clipping ``τ = 1 / max_weight``. With the true propensities in ``g`` the
ranking loss is the IPS listwise loss, unbiased up to the factor ``θ_1``.
"""

from typing import Optional

import jax
import jax.numpy as jnp

from jaxrank.counterfactual.ips_losses import ReduceFn, listwise_ips_loss
from jaxrank.counterfactual.rankers import l2_penalty
from jaxrank.oltr import scorers
from jaxrank.types import Array

_NEG = -1e30


def relative_softmax(logits: Array, where: Optional[Array] = None) -> Array:
    """``[..., K]`` ``softmax(logits)_k / softmax(logits)_1`` = ``exp(logits_k − logits_1)`` over ``where`` (1 at
    masked positions); the first position must be shown."""
    rel = jnp.exp(logits - logits[..., :1])
    return rel if where is None else jnp.where(where, rel, 1.0)


def dla_losses(scores: Array, propensity_logits: Array, clicks: Array, *, where: Optional[Array] = None,
               max_weight=None, weights: Optional[Array] = None, reduce_fn: ReduceFn = jnp.mean
               ) -> tuple[Array, Array]:
    """``(ranking_loss, examination_loss)`` of the displayed lists (module docstring).

    Args:
      scores: ``[..., K]`` ranker scores of the shown documents, in display order.
      propensity_logits: ``[K]`` (or ``[..., K]``) the propensity model's logits per rank.
      clicks: ``[..., K]`` clicks (or click rates) per position.
      where: ``[..., K]`` shown positions (a prefix starting at the first).
      max_weight: clip of the inverse relative propensities (ULTRA's ``max_propensity_weight``), or ``None``.
      weights: ``[...]`` list weights (e.g. sessions when ``clicks`` are rates).
      reduce_fn: over lists, as ``jaxrank.counterfactual.ips_losses``.
    """
    logits = jnp.broadcast_to(propensity_logits, jnp.shape(scores))
    clip = None if max_weight is None else 1.0 / jnp.asarray(max_weight, jnp.float32)
    exam = jax.lax.stop_gradient(relative_softmax(logits, where))
    rel = jax.lax.stop_gradient(relative_softmax(scores, where))
    kw = dict(where=where, clip=clip, weights=weights, reduce_fn=reduce_fn)
    return listwise_ips_loss(scores, clicks, exam, **kw), listwise_ips_loss(logits, clicks, rel, **kw)


def propensities(propensity_logits: Array) -> Array:
    """``[K]`` the propensity model's estimate relative to rank 1, ``softmax(g)_k / softmax(g)_1``."""
    return relative_softmax(propensity_logits)


def objective(params, features: Array, clicks: Array, *, where: Optional[Array] = None, model: str = "linear",
              max_weight=None, weights: Optional[Array] = None, lam=0.0) -> Array:
    """``ranking_loss + examination_loss + λ ½‖ranker‖²`` summed over the lists, for joint training with
    ``jaxrank.counterfactual.rankers.fit``: each model only receives its own loss's gradient, and the value
    is no objective that training must lower (each loss's weights are the other model's moving output).

    Args:
      params: ``(ranker params, propensity logits [K])`` (``rankers.init_ranker`` and zeros).
      features: ``[..., K, D]`` the shown documents in display order.
      clicks, where, max_weight, weights: as ``dla_losses``.
      model: the ranker, ``"linear"`` or ``"neural"`` (``jaxrank.oltr.scorers``).
      lam: ℓ2 weight on the ranker.
    """
    ranker, logits = params
    scores = scorers.make(model).apply(ranker, features)
    ranking, examination = dla_losses(scores, logits, clicks, where=where, max_weight=max_weight, weights=weights,
                                      reduce_fn=jnp.sum)
    return ranking + examination + lam * l2_penalty(ranker)
