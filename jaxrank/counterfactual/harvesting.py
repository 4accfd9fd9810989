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

Family contract (``jaxrank.counterfactual.propensity_estimator``): ``make(method=)`` picks one of
``METHODS``; ``init(key, data, learning_rate=)`` keeps Adam's step size as an f32 leaf of the optimiser
state (optax's ``inject_hyperparams``); ``step`` is one Adam step of the all-pairs estimator (the
closed-form pivot and chain estimates are recomputed by each step).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxrank.counterfactual.propensity_estimator import PropensityData, PropensityEstimator, as_leaf
from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_choice, check_int

METHODS = ("all_pairs", "pivot", "adjacent_chain")
# Adam's step size of the all-pairs estimator (jaxrank's: ultr-bias-toolkit fits AllPairsPBM by gradient descent
# without a published step; 0.05 reaches the extremum within 2000 steps on the logs of the tests)
HPARAMS = {"learning_rate": 0.05}
OPTIONS = {"method": "all_pairs"}
NUM_STEPS = 2000


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


class HarvestingState(NamedTuple):
    params: tuple  # ([K] examination logits, [K(K-1)/2] relevance logits) of the all-pairs estimator
    opt_state: Any  # Adam's state, its learning rate an f32 leaf (optax.inject_hyperparams)
    estimate: Array  # [K] f32 the current θ_k / θ_1
    count: Array  # [] i32 steps taken


class HarvestingInfo(NamedTuple):
    objective: Array  # [] the all-pairs negative log-likelihood before the step


def _adam(learning_rate):
    return optax.inject_hyperparams(optax.adam)(learning_rate=learning_rate)


def _init(num_positions: int, learning_rate) -> HarvestingState:
    params = (jnp.zeros(num_positions, jnp.float32), jnp.zeros(num_positions * (num_positions - 1) // 2, jnp.float32))
    return HarvestingState(params, _adam(as_leaf(learning_rate)).init(params), jnp.ones(num_positions, jnp.float32),
                           jnp.zeros((), jnp.int32))


def _all_pairs_estimate(params, sets: InterventionSets) -> Array:
    theta = jax.nn.sigmoid(params[0])
    seen = jnp.sum(sets.size, axis=1) > 0  # a rank in no interventional set is not identified
    return jnp.where(seen, theta / theta[0], jnp.nan)


def _step(state: HarvestingState, sets: InterventionSets, method: str) -> tuple[HarvestingState, HarvestingInfo]:
    if method == "all_pairs":
        value, grad = jax.value_and_grad(all_pairs_objective)(state.params, sets)
        # the learning rate is read from the state: inject_hyperparams' update uses opt_state.hyperparams
        updates, opt_state = _adam(state.opt_state.hyperparams["learning_rate"]).update(grad, state.opt_state,
                                                                                        state.params)
        params = optax.apply_updates(state.params, updates)
        estimate = _all_pairs_estimate(params, sets)
    else:
        value, params, opt_state = all_pairs_objective(state.params, sets), state.params, state.opt_state
        estimate = (pivot_propensities if method == "pivot" else adjacent_chain_propensities)(sets)
    return HarvestingState(params, opt_state, estimate, state.count + 1), HarvestingInfo(value)


def init(key: PRNGKey, data: PropensityData, **hparams) -> HarvestingState:
    """All logits 0 (``θ_k / θ_1 = 1``) for the ``K`` ranks of ``data``."""
    del key  # the estimators are deterministic
    values = hparams_with_defaults("propensity estimator 'harvesting'", HPARAMS, OPTIONS, hparams)
    return _init(data.counts.clicks.shape[-1], values["learning_rate"])


def propensities(state: HarvestingState) -> Array:
    """``[K]`` ``θ_k / θ_1`` (NaN for a rank without interventional data)."""
    return state.estimate


def make(*, method: str = OPTIONS["method"]) -> PropensityEstimator:
    check_choice("method", method, METHODS)

    def step(key: PRNGKey, state: HarvestingState, data: PropensityData):
        del key
        return _step(state, intervention_sets(data.counts), method)

    return PropensityEstimator(init, step, propensities)


def all_pairs_propensities(sets: InterventionSets, *, num_steps: int = NUM_STEPS, **hparams) -> Array:
    """``[K]`` ``θ_k / θ_1`` of the all-pairs extremum estimator (module docstring; from all logits 0):
    ``num_steps`` steps of ``make(method="all_pairs")`` on ``sets``, ``hparams``: ``learning_rate``."""
    check_int("num_steps", num_steps, minimum=1)
    values = hparams_with_defaults("propensity estimator 'harvesting'", HPARAMS, OPTIONS, hparams)
    state = _init(sets.clicks.shape[0], values["learning_rate"])
    state, _ = jax.lax.scan(lambda s, _: _step(s, sets, "all_pairs"), state, None, length=num_steps)
    return state.estimate
