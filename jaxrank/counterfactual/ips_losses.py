"""Inverse-propensity-scored (IPS) ranking losses over logged clicks, with rax's calling convention.

Every loss is ``loss(scores [..., L], clicks [..., L], propensities [..., L], *, where=None, clip=None,
weights=None, reduce_fn=jnp.mean)``: the last axis is one list (one query's documents), leading axes
are lists; ``where`` marks the documents the loss ranges over (rax semantics: fully masked lists leave
the reduction, ``reduce_fn=None`` returns per-list values ``[...]``); ``weights [...]`` multiplies each
list's loss (e.g. its number of sessions when ``clicks`` are per-session click rates).

Each document's click is reweighted by its inverse propensity (Joachims, Swaminathan & Schnabel, WSDM
2017, §4: the IPS estimator of a loss that is additive over the relevant documents),

    w_d = c_d / max(ρ_d, τ)          (0 where ρ_d = 0 or outside ``where``),

with ``ρ_d`` the probability that the user examined ``d`` (its rank's examination for a deterministic
logger; the policy-aware expected examination of ``jaxrank.counterfactual.policy_aware`` for a
stochastic top-k one) and ``τ = clip`` the propensity clipping threshold (Joachims et al. 2017, §6
"propensity clipping"; Strehl et al. 2010), which lowers variance at the price of bias. Under the
position-based model ``E[c_d] = ρ_d γ_d``, so ``E[w_d] = γ_d`` (τ = 0), the click probability of an
examined document; **every loss below is affine in ``w``**, hence its expectation over the clicks (and
its gradient's) equals the same loss with ``w = γ``: the full-information loss. Passing
``propensities = 1`` gives the naive loss (clicks as labels), ``clicks = γ`` and ``propensities = 1``
the full-information (skyline) loss, and ``clicks =`` a doubly robust estimate
(``jaxrank.counterfactual.doubly_robust``) with ``propensities = 1`` the DR loss.

* ``pointwise_ips_loss``: ``Σ_d −[w_d log σ(s_d) + (1 − w_d) log(1 − σ(s_d))]`` (Bekker et al. 2019;
  Saito et al., WSDM 2020; ultr-reproducibility ``src/loss.py`` ``pointwise_sigmoid_ips``, without
  its label clip so the loss stays affine in ``w``).
* ``listwise_ips_loss``: ``−Σ_d w_d log softmax(s)_d`` over ``where`` (Ai et al., SIGIR 2018, the
  IPW softmax loss; ULTRA ``dla.py`` ``click_weighted_softmax_cross_entropy_loss`` per list, before
  its batch normalisation).
* ``pairwise_ips_hinge_loss``: ``Σ_d w_d Σ_{j ∈ where, j ≠ d} max(0, margin − (s_d − s_j))``, the data
  term of Propensity SVM-Rank (Joachims et al. 2017, §5: each clicked document ranked above every
  other candidate, its slacks weighted by ``1/ρ``), an upper bound of the IPS estimate of the rank
  of the relevant documents (``jaxrank.counterfactual.propensity_svm``).
"""

from typing import Callable, Optional

import jax
import jax.numpy as jnp

from jaxrank.types import Array

ReduceFn = Optional[Callable[..., Array]]
_NEG = -1e30  # the score of a masked document inside a softmax


def _check(scores, clicks, propensities, where):
    shape = jnp.shape(scores)
    if len(shape) == 0:
        raise ValueError("scores must be [..., L] (the last axis is one list); got a scalar.")
    for name, value in (("clicks", clicks), ("propensities", propensities), ("where", where)):
        if value is not None and jnp.shape(value) != shape:
            raise ValueError(f"{name} must have the shape of scores {shape}; got {jnp.shape(value)}.")


def ips_weights(clicks: Array, propensities: Array, *, where: Optional[Array] = None, clip=None) -> Array:
    """``[..., L]`` ``c / max(ρ, τ)``; 0 where ``ρ = 0`` (never examined: nothing to correct) or outside
    ``where``. ``clip = None`` is ``τ = 0``."""
    rho = jnp.asarray(propensities)
    if clip is not None:
        rho = jnp.maximum(rho, clip)
    valid = rho > 0 if where is None else (rho > 0) & where
    return jnp.where(valid, clicks / jnp.where(valid, rho, 1.0), 0.0)


def _reduce(per_list, where, weights, reduce_fn: ReduceFn):
    if weights is not None:
        per_list = per_list * weights
    if reduce_fn is None:
        return per_list
    has_docs = jnp.ones(per_list.shape, bool) if where is None else jnp.any(where, axis=-1)
    return reduce_fn(per_list, where=has_docs)


def pointwise_ips_loss(scores: Array, clicks: Array, propensities: Array, *, where: Optional[Array] = None, clip=None,
                       weights: Optional[Array] = None, reduce_fn: ReduceFn = jnp.mean) -> Array:
    """IPS sigmoid cross-entropy ``Σ_d −[w_d log σ(s_d) + (1 − w_d) log(1 − σ(s_d))]`` (module docstring)."""
    _check(scores, clicks, propensities, where)
    w = ips_weights(clicks, propensities, where=where, clip=clip)
    per_doc = -(w * jax.nn.log_sigmoid(scores) + (1.0 - w) * jax.nn.log_sigmoid(-scores))
    inside = jnp.ones(jnp.shape(scores), bool) if where is None else where
    return _reduce(jnp.sum(jnp.where(inside, per_doc, 0.0), axis=-1), where, weights, reduce_fn)


def listwise_ips_loss(scores: Array, clicks: Array, propensities: Array, *, where: Optional[Array] = None, clip=None,
                      weights: Optional[Array] = None, reduce_fn: ReduceFn = jnp.mean) -> Array:
    """IPS softmax cross-entropy ``−Σ_d w_d log softmax(s)_d``, the softmax over ``where`` (module docstring)."""
    _check(scores, clicks, propensities, where)
    w = ips_weights(clicks, propensities, where=where, clip=clip)
    inside = jnp.ones(jnp.shape(scores), bool) if where is None else where
    # masked documents leave the softmax through a huge negative score rather than -inf, so that a fully
    # masked list gives a finite loss (0) and zero gradients instead of NaN
    lse = jax.nn.logsumexp(jnp.where(inside, scores, _NEG), axis=-1, keepdims=True)
    per_list = -jnp.sum(jnp.where(inside, w * (scores - lse), 0.0), axis=-1)
    return _reduce(per_list, where, weights, reduce_fn)


def pairwise_ips_hinge_loss(scores: Array, clicks: Array, propensities: Array, *, where: Optional[Array] = None,
                            clip=None, weights: Optional[Array] = None, reduce_fn: ReduceFn = jnp.mean,
                            margin=1.0) -> Array:
    """Propensity SVM-Rank's data term ``Σ_d w_d Σ_{j ∈ where, j ≠ d} max(0, margin − (s_d − s_j))``.

    Built as ``[..., L, L]`` pair hinges: for the padded lists of one query (``L`` up to a few hundred).
    """
    _check(scores, clicks, propensities, where)
    w = ips_weights(clicks, propensities, where=where, clip=clip)
    inside = jnp.ones(jnp.shape(scores), bool) if where is None else where
    num_docs = jnp.shape(scores)[-1]
    others = inside[..., None, :] & ~jnp.eye(num_docs, dtype=bool)
    hinge = jnp.maximum(0.0, margin - (scores[..., :, None] - scores[..., None, :]))
    per_doc = jnp.sum(jnp.where(others, hinge, 0.0), axis=-1)
    return _reduce(jnp.sum(w * per_doc, axis=-1), where, weights, reduce_fn)
