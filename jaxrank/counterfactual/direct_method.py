"""The direct method (DM) of doubly robust estimation: a regression ``R̂(x) ∈ (0, 1)`` of relevance
on features, fitted to logged clicks (Oosterhuis, TOIS 2023, §5-6).

The loss is the reference's clipped, bias-corrected cross-entropy over the documents with
``ρ_d > 0`` (HarrieO/2022-doubly-robust-LTR ``utils/optimization.py``
``optimize_regressor_counterfactual_param_given``):

    − mean_d [ (c̄_d − β̄_d)/max(ρ_d, τ) · log R̂_d + (ρ_d − c̄_d + β̄_d)/max(ρ_d, τ) · log(1 − R̂_d) ],

whose expectation (``τ = 0``) is the cross-entropy against the true relevance. The model is linear
with an intercept, ``σ(x·w + b)``, or the reference's MLP with hidden layers ``[32, 32]`` (sigmoid units, its
``utils/nnmodel.py``; a sigmoid output), fitted by full-batch Adam; every ``eval_every`` steps the
same loss on the validation split's clicks is measured and the parameters with the lowest one are
kept (the reference's early stopping, without the stop: a fixed step count keeps lanes aligned).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_choice, check_int

MODELS = ("linear", "mlp")
HIDDEN = (32, 32)


class DMInfo(NamedTuple):
    train_loss: Array  # [E] f32 training loss at each evaluation
    vali_loss: Array  # [E] f32 validation loss at each evaluation
    best: Array  # [] i32 the evaluation whose parameters are kept


def init(key: PRNGKey, num_features: int, model: str = "linear"):
    """Initial parameters: zeros for ``"linear"``; Glorot-uniform weights and zero biases for ``"mlp"``."""
    check_choice("model", model, MODELS)
    if model == "linear":
        return [(jnp.zeros((num_features, 1), jnp.float32), jnp.zeros(1, jnp.float32))]
    sizes = (num_features, *HIDDEN, 1)
    keys = jax.random.split(key, len(sizes) - 1)
    layers = []
    for k, (fan_in, fan_out) in zip(keys, zip(sizes[:-1], sizes[1:])):
        limit = jnp.sqrt(6.0 / (fan_in + fan_out))
        layers.append((jax.random.uniform(k, (fan_in, fan_out), jnp.float32, -limit, limit),
                       jnp.zeros(fan_out, jnp.float32)))
    return layers


def logits(params, features: Array) -> Array:
    """``[...]`` the pre-sigmoid output for ``features [..., D]``."""
    x = features
    for w, b in params[:-1]:
        x = jax.nn.sigmoid(x @ w + b)
    w, b = params[-1]
    return (x @ w + b)[..., 0]


def predict(params, features: Array) -> Array:
    """``[...]`` ``R̂ = σ(logits)``."""
    return jax.nn.sigmoid(logits(params, features))


def loss(params, features: Array, ctr: Array, alpha: Array, beta: Array, rho: Array, where: Array, clip) -> Array:
    """``[]`` the clipped DM loss (module docstring) over ``where & (ρ > 0)``; ``alpha`` is unused by the
    loss (the reference weighs by the propensity alone) and kept for the caller's symmetry."""
    del alpha
    included = where & (rho > 0)
    denom = jnp.where(included, jnp.maximum(rho, clip), 1.0)
    positive = (ctr - beta) / denom
    negative = (rho - ctr + beta) / denom
    z = logits(params, features)
    per_doc = positive * jax.nn.log_sigmoid(z) + negative * jax.nn.log_sigmoid(-z)
    return -jnp.sum(jnp.where(included, per_doc, 0.0)) / jnp.maximum(jnp.sum(included), 1)


def fit(key: PRNGKey, train, vali, clip, *, model: str = "linear", num_steps: int = 500, eval_every: int = 25,
        learning_rate=0.01):
    """``(params, DMInfo)``: Adam on the training log's loss, the parameters of the evaluation with the
    lowest validation loss kept.

    Args:
      key: initialisation key (the MLP's).
      train, vali: ``ClickLog``-like (``features, where, ctr, alpha, beta, rho``) of the two splits.
      clip: ``τ``.
      model: ``"linear"`` or ``"mlp"``.
      num_steps: Adam steps (a multiple of ``eval_every``).
      eval_every: steps between validation checks.
      learning_rate: Adam's step size (may be traced).
    """
    check_int("eval_every", eval_every, minimum=1)
    check_int("num_steps", num_steps, minimum=eval_every)
    params = init(key, train.features.shape[-1], model)
    optimizer = optax.adam(jnp.asarray(learning_rate, jnp.float32))

    def of(log, p):
        return loss(p, log.features, log.ctr, log.alpha, log.beta, log.rho, log.where, clip)

    def train_step(carry, _):
        p, opt = carry
        value, grad = jax.value_and_grad(lambda q: of(train, q))(p)
        updates, opt = optimizer.update(grad, opt, p)
        return (optax.apply_updates(p, updates), opt), value

    def round_(carry, i):
        p, opt, best_p, best_loss, best_i = carry
        (p, opt), values = jax.lax.scan(train_step, (p, opt), None, length=eval_every)
        v = of(vali, p)
        better = v < best_loss
        best_p = jax.tree.map(lambda new, old: jnp.where(better, new, old), p, best_p)
        return (p, opt, best_p, jnp.where(better, v, best_loss), jnp.where(better, i + 1, best_i)), (values[-1], v)

    start = of(vali, params)
    carry = (params, optimizer.init(params), params, start, jnp.zeros((), jnp.int32))
    (_, _, best, _, best_i), (train_loss, vali_loss) = jax.lax.scan(
        round_, carry, jnp.arange(num_steps // eval_every))
    return best, DMInfo(train_loss, vali_loss, best_i)
