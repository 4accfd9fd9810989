"""Propensities from intervention harvesting (Agarwal, Zaitsev, Wang, Li, Najork & Joachims, WSDM 2019).

Logs of several logging rankers show some (query, document) pairs at different ranks: no
intervention is needed. For ranks ``k ≠ k'`` the **interventional set** ``S_{k,k'}`` holds the pairs
shown at ``k`` by some ranker and at ``k'`` by another; on it, under the position-based model,

    ĉ_k^{k,k'} = Σ_{(q,d) ∈ S_{k,k'}} CTR_k(q, d),   E[ĉ_k^{k,k'}] = θ_k Σ_{(q,d) ∈ S_{k,k'}} γ_{qd},

with ``CTR_k(q, d)`` the click rate of ``d`` over its impressions at rank ``k``, and
``n^{k,k'} = |S_{k,k'}|`` (each pair weighs 1, as ultr-bias-toolkit's ``build_intervention_sets``:
per-pair click rates summed per rank pair). Since ``ĉ_k^{k,k'}`` and ``ĉ_{k'}^{k,k'}`` share the sum of
``γ``, their ratio estimates ``θ_{k'}/θ_k``:

* ``pivot_propensities``: ``p_k / p_1 = ĉ_k^{1,k} / ĉ_1^{1,k}`` (the pivot rank 1);
* ``adjacent_chain_propensities``: ``p_{k+1}/p_k = ĉ_{k+1}^{k,k+1} / ĉ_k^{k,k+1}``, chained by products;
* ``all_pairs_propensities``: the extremum estimator over **every** pair, maximising
  ``Σ_{k≠k'} ĉ_k^{k,k'} log(θ_k r_{kk'}) + (n^{k,k'} − ĉ_k^{k,k'}) log(1 − θ_k r_{kk'})`` over ``θ`` and
  a relevance ``r_{kk'} = r_{k'k}`` per *unordered* rank pair (indexed by the pair itself: the toolkit's
  ``AllPairsPBM`` embeds ``k · k'``, which also merges distinct pairs with equal products such as
  (1, 6) and (2, 3)); by Adam on logits in a ``lax.scan``.

Every estimate is relative to rank 1 (``p_1 = 1``); ranks with no interventional data come out NaN.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.types import Array


class InterventionSets(NamedTuple):
    """Harvested statistics of every ordered rank pair ``(k, k')`` (diagonal zero)."""

    clicks: Array  # [K, K] f32 ĉ_k^{k,k'}: Σ over S_{k,k'} of the click rate at rank k
    size: Array  # [K, K] f32 n^{k,k'} = |S_{k,k'}| (symmetric)


def intervention_sets(counts: ClickCounts) -> InterventionSets:
    """The interventional sets of pooled logs (counts of every ranker summed: ``[Q, L, K]``)."""
    shown = counts.displays > 0  # [Q, L, K]
    ctr = jnp.where(shown, counts.clicks / jnp.where(shown, counts.displays, 1.0), 0.0)
    shown = shown.astype(jnp.float32)
    off_diagonal = 1.0 - jnp.eye(shown.shape[-1], dtype=jnp.float32)
    clicks = jnp.einsum("qdk,qdl->kl", ctr, shown) * off_diagonal
    size = jnp.einsum("qdk,qdl->kl", shown, shown) * off_diagonal
    return InterventionSets(clicks, size)


def pivot_propensities(sets: InterventionSets) -> Array:
    """``[K]`` ``ĉ_k^{1,k} / ĉ_1^{1,k}``."""
    return (sets.clicks[:, 0] / sets.clicks[0, :]).at[0].set(1.0)


def adjacent_chain_propensities(sets: InterventionSets) -> Array:
    """``[K]`` products of the adjacent ratios ``ĉ_{k+1}^{k,k+1} / ĉ_k^{k,k+1}``."""
    k = jnp.arange(sets.clicks.shape[0] - 1)
    ratios = sets.clicks[k + 1, k] / sets.clicks[k, k + 1]
    return jnp.concatenate([jnp.ones(1, ratios.dtype), jnp.cumprod(ratios)])


def pair_index(num_positions: int) -> np.ndarray:
    """``[K, K]`` i32 index of the unordered pair ``{k, k'}`` in ``0..K(K-1)/2 - 1`` (the diagonal gets 0 and is
    never read)."""
    index = np.zeros((num_positions, num_positions), np.int32)
    rows, cols = np.triu_indices(num_positions, 1)
    index[rows, cols] = np.arange(rows.size)
    index[cols, rows] = np.arange(rows.size)
    return index


def all_pairs_objective(params, sets: InterventionSets) -> Array:
    """The all-pairs negative log-likelihood (module docstring) of ``params = (exam logits [K], relevance
    logits [K(K-1)/2])``, divided by ``Σ n``."""
    exam_logits, rel_logits = params
    num_positions = exam_logits.shape[0]
    rel = rel_logits[pair_index(num_positions)]
    log_p = jax.nn.log_sigmoid(exam_logits)[:, None] + jax.nn.log_sigmoid(rel)
    log_not_p = jnp.log1p(-jnp.exp(jnp.minimum(log_p, -1e-7)))
    valid = sets.size > 0
    ll = jnp.where(valid, sets.clicks * log_p + (sets.size - sets.clicks) * log_not_p, 0.0)
    return -jnp.sum(ll) / jnp.maximum(jnp.sum(sets.size), 1.0)


def all_pairs_propensities(sets: InterventionSets, *, num_steps: int = 2000, learning_rate=0.05) -> Array:
    """``[K]`` ``θ_k / θ_1`` of the all-pairs extremum estimator (module docstring; from all logits 0)."""
    num_positions = sets.clicks.shape[0]
    params = (jnp.zeros(num_positions, jnp.float32), jnp.zeros(num_positions * (num_positions - 1) // 2, jnp.float32))
    optimizer = optax.adam(learning_rate)

    def step(carry, _):
        params, state = carry
        grad = jax.grad(all_pairs_objective)(params, sets)
        updates, state = optimizer.update(grad, state, params)
        return (optax.apply_updates(params, updates), state), None

    (params, _), _ = jax.lax.scan(step, (params, optimizer.init(params)), None, length=num_steps)
    theta = jax.nn.sigmoid(params[0])
    seen = jnp.sum(sets.size, axis=1) > 0  # a rank in no interventional set is not identified
    return jnp.where(seen, theta / theta[0], jnp.nan)
