"""What every counterfactual learner shares: the per-document click log, the pairwise ranking
objective on relevance targets, and its L-BFGS step.

A learner turns a ``ClickLog`` into one relevance **target** per document (``targets``: the click
rate, an IPS, DM or doubly robust estimate, or the true relevance) and fits a linear ranker
``s = x·w`` to the targets with one objective for every learner (so rows differ by their targets
alone, the skyline included):

    J(w) = Σ_q ω_q Σ_{d ∈ where_q} t_d Σ_{j ∈ where_q, j ≠ d} h_δ(s_d − s_j) + (λ/2)‖w‖²,

with ``ω_q`` the query's share of the sessions and ``h_δ`` the Huberised hinge (Chapelle, 2007,
"Training a support vector machine in the primal", §4): ``1 − z − δ/2`` for ``z ≤ 1 − δ``,
``(1 − z)²/(2δ)`` up to ``z = 1``, 0 beyond. With ``δ → 0`` it is the hinge of Propensity
SVM-Rank (Joachims, Swaminathan & Schnabel, WSDM 2017, §5: each click ranked above every other
candidate, its slacks weighted by ``1/ρ``); ``J`` is affine in the targets, so an unbiased target
gives an unbiased objective. ``h_δ`` is smooth, so the gradient norm reported by every step is a
statement of optimality (the nonsmooth hinge has none). Negative targets (doubly robust estimates
can be) keep ``J`` bounded below: ``h_δ`` grows linearly and the penalty quadratically.

The pairwise sum costs ``O(L log L)`` per query (one sort and prefix sums of the sorted scores
and their squares), never ``[Q, L, L]``.

The step is one iteration of optax's L-BFGS with a halving backtracking line search (full batch), keys first:
``step(key, state, log) -> (state, StepInfo)``.
"""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrank.types import Array, PRNGKey

SMOOTHING = 0.5  # δ of the Huberised hinge
_LOW = -1e30  # the score of a document outside ``where`` in the sorted scores


class ClickLog(NamedTuple):
    """Per-document statistics of logged sessions (``[Q, L]`` unless stated; 0 outside ``where``)."""

    features: Array  # [Q, L, D] f32
    where: Array  # [Q, L] bool, the candidates each target is ranked against
    ctr: Array  # [Q, L] f32 clicks per session of the query
    alpha: Array  # [Q, L] f32 ᾱ_d: the α of the ranks d was shown at, averaged over the query's sessions
    beta: Array  # [Q, L] f32 β̄_d, likewise
    rho: Array  # [Q, L] f32 the propensity (expected treatment) of d, 0 where never shown
    regression: Array  # [Q, L] f32 the direct method's estimate R̂_d (0 without one)
    relevance: Array  # [Q, L] f32 the true P(relevant | d) (full information)
    weights: Array  # [Q] f32 ω_q: the query's share of the sessions (sums to 1 over the logged queries)


class LearnerState(NamedTuple):
    params: Array  # [D] f32 ranker weights
    opt_state: optax.OptState  # L-BFGS memory (history of 10 steps)
    lam: Array  # [] f32 λ
    clip: Array  # [] f32 τ (unused by learners that do not clip)
    count: Array  # [] i32 steps taken


class StepInfo(NamedTuple):
    objective: Array  # [] f32 J(w) before the step
    grad_norm: Array  # [] f32 ‖∇J(w)‖ before the step (optimality)


class Optimality(NamedTuple):
    """How close a fit is to the minimiser of ``J`` (both 0 at the minimiser)."""

    relative_grad: Array  # ‖∇J(w_T)‖ / ‖∇J(0)‖
    last_decrease: Array  # (J(w_{T−m}) − J(w_T)) / (J(0) − J(w_T)): the share of the decrease from w = 0
    # made by the last m steps (0 when the objective has stopped moving)


def optimality(start_objective, start_grad, earlier_objective, objective, grad_norm) -> Optimality:
    """``Optimality`` from ``J`` and ``‖∇J‖`` at ``w = 0``, ``J`` ``m`` steps before the end, and at the end."""
    tiny = jnp.finfo(jnp.float32).tiny
    total = jnp.maximum(start_objective - objective, tiny)
    last = jnp.maximum(earlier_objective - objective, 0.0) / total
    return Optimality(grad_norm / jnp.maximum(start_grad, tiny), last)


class CounterfactualLearner(NamedTuple):
    """``init(key, num_features, **hparams) -> state``; ``step(key, state, log) -> (state, info)``;
    ``targets(state, log) -> [Q, L]``; ``score(params, features) -> scores``."""

    init: Callable
    step: Callable
    targets: Callable
    score: Callable


def pairwise_sums(scores: Array, where: Array, smoothing=SMOOTHING) -> Array:
    """``[..., L]`` ``Σ_{j ∈ where, j ≠ d} h_δ(s_d − s_j)`` for every ``d`` (0 outside ``where``), in
    ``O(L log L)``: sorted scores, three suffix sums and two searches per document."""
    delta = jnp.asarray(smoothing, scores.dtype)
    order = jnp.sort(jnp.where(where, scores, _LOW), axis=-1)  # ascending; outside documents first
    valid = order > 0.5 * _LOW
    value = jnp.where(valid, order, 0.0)

    def suffix(x):  # [..., L + 1] Σ_{m ≥ i} x_m
        total = jnp.cumsum(x[..., ::-1], axis=-1)[..., ::-1]
        return jnp.concatenate([total, jnp.zeros_like(total[..., :1])], axis=-1)

    def search(threshold, side):  # [..., L] first sorted position at the threshold of each document
        rows = order.reshape(-1, order.shape[-1])
        found = jax.vmap(lambda o, t: jnp.searchsorted(o, t, side=side))(rows, threshold.reshape(rows.shape))
        return found.reshape(scores.shape)

    def at(table, index):
        return jnp.take_along_axis(table, index, axis=-1)

    count, first, second = suffix(valid.astype(scores.dtype)), suffix(value), suffix(value * value)
    # j is in the linear part when s_j >= s_d - 1 + δ, in the quadratic part when s_d - 1 < s_j < s_d - 1 + δ
    lin_at, quad_at = search(scores - 1.0 + delta, "left"), search(scores - 1.0, "right")
    a = 1.0 - scores
    n_lin, s_lin = at(count, lin_at), at(first, lin_at)
    n_quad, s_quad = at(count, quad_at) - n_lin, at(first, quad_at) - s_lin
    q_quad = at(second, quad_at) - at(second, lin_at)
    linear = n_lin * (a - 0.5 * delta) + s_lin
    quadratic = (n_quad * a * a + 2.0 * a * s_quad + q_quad) / (2.0 * delta)
    own = 1.0 - 0.5 * delta  # j = d: z = 0, in the linear part for δ <= 1
    return jnp.where(where, linear + quadratic - own, 0.0)


def objective(params: Array, features, where, weights, targets, lam, smoothing=SMOOTHING) -> Array:
    """``J(w)`` (module docstring) of ``params [D]``: ``features [Q, L, D]``, candidates ``where [Q, L]``,
    query weights ``weights [Q]``, ``targets [Q, L]``; or tuples of them, one per block of queries padded
    to one width (``J`` sums the blocks' data terms)."""
    if not isinstance(features, tuple):
        features, where, weights, targets = (features,), (where,), (weights,), (targets,)
    data = 0.0
    for x, m, omega, t in zip(features, where, weights, targets):
        per_doc = pairwise_sums(x @ params, m, smoothing)
        data = data + jnp.sum(omega * jnp.sum(jnp.where(m, t, 0.0) * per_doc, axis=-1))
    return data + 0.5 * lam * jnp.sum(params * params)


# backtracking (Armijo) rather than optax's default zoom line search: under ``vmap`` over many rows
# the zoom search's nested loops compile and run several times slower for the same iterates' quality.
# Halving (optax's default shrinks by 0.8) because under ``vmap`` every row waits for the row that
# backtracks most: on MQ2008 it halves the time of 60 iterations at the same gradient norms.
_LBFGS = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(
    max_backtracking_steps=12, decrease_factor=0.5, store_grad=True))


def init_state(num_features: int, lam, clip) -> LearnerState:
    params = jnp.zeros(num_features, jnp.float32)
    return LearnerState(params, _LBFGS.init(params), jnp.asarray(lam, jnp.float32), jnp.asarray(clip, jnp.float32),
                        jnp.zeros((), jnp.int32))


def fit_step(state: LearnerState, features, where, weights, targets,
             smoothing=SMOOTHING) -> tuple[LearnerState, StepInfo]:
    """One L-BFGS iteration on ``J`` with fixed ``targets`` (``objective``'s arguments); the info holds
    ``J`` and ``‖∇J‖`` at the parameters the step started from (computed by the step anyway)."""
    def fn(w):
        return objective(w, features, where, weights, targets, state.lam, smoothing)

    value, grad = optax.value_and_grad_from_state(fn)(state.params, state=state.opt_state)
    updates, opt_state = _LBFGS.update(grad, state.opt_state, state.params, value=value, grad=grad, value_fn=fn)
    params = optax.apply_updates(state.params, updates)
    state = state._replace(params=params, opt_state=opt_state, count=state.count + 1)
    return state, StepInfo(value, jnp.linalg.norm(grad))


def train(key: PRNGKey, learner: "CounterfactualLearner", state: LearnerState, log: ClickLog, num_steps: int):
    """``(state, StepInfo [T])``: ``num_steps`` steps of ``learner`` on ``log`` in one ``lax.scan``
    (step ``t`` gets ``fold_in(key, t)``)."""
    return jax.lax.scan(lambda s, t: learner.step(jax.random.fold_in(key, t), s, log), state, jnp.arange(num_steps))


def score(params: Array, features: Array) -> Array:
    """``[...]`` ``features [..., D] @ params``."""
    return features @ params


def make(targets_fn: Callable[[LearnerState, ClickLog], Array], hparams: dict, *,
         smoothing: float = SMOOTHING) -> CounterfactualLearner:
    """The learner whose targets are ``targets_fn(state, log)``; ``hparams`` its ``HPARAMS`` (λ, τ)."""
    def init(key: PRNGKey, num_features: int, **settings) -> LearnerState:
        del key  # w = 0: the objective's minimiser does not depend on where it starts when convex
        values = {**hparams, **settings}
        return init_state(num_features, values["lam"], values.get("clip", 0.0))

    def step(key: PRNGKey, state: LearnerState, log: ClickLog):
        del key  # full batch, deterministic
        return fit_step(state, log.features, log.where, log.weights, targets_fn(state, log), smoothing)

    return CounterfactualLearner(init, step, targets_fn, score)
