"""Rankers trained on logged clicks: a linear or small neural scoring model fitted by full-batch Adam.

The models are ``jaxrank.oltr.scorers`` (``"linear"``: ``f(x) = w·x`` from ``w = 0``; ``"neural"``: one
hidden layer of sigmoid units, ``f(x) = v·σ(xW + b)``). ``fit`` minimises any pure ``objective(params)``
(a loss of ``jaxrank.counterfactual.ips_losses`` on ``apply(params, features)``, plus an ℓ2 term) with
optax's Adam on a cosine-decayed step size, ``num_steps`` full-batch steps in one ``lax.scan``: the
training sets of the protocol (a few hundred queries, their logged top-10 lists) fit in memory, and a
fixed step count keeps ``vmap`` over seeds and settings one compiled program. ``ranker_objective``
builds the usual objective: the loss over every query's list plus ``(λ/2)‖params‖²``.
"""

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrank.oltr import scorers
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int

MODELS = scorers.MODELS


class FitInfo(NamedTuple):
    losses: Array  # [T] f32 objective before each step
    final: Array  # [] f32 objective after the last step


def init_ranker(key: PRNGKey, num_features: int, *, model: str = "linear", hidden_units: int = 16):
    """The model's initial parameters (``jaxrank.oltr.scorers``)."""
    return scorers.make(model, hidden_units).init(key, num_features)


def ranker_scores(params, features: Array, *, model: str = "linear") -> Array:
    """``[...]`` scores of ``features [..., D]``."""
    return scorers.make(model).apply(params, features)


def l2_penalty(params) -> Array:
    """``½‖params‖²`` over every leaf."""
    return 0.5 * sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(params))


def ranker_objective(loss_fn: Callable[..., Array], features: Array, *, model: str = "linear", lam=0.0,
                     **loss_kwargs) -> Callable[[Any], Array]:
    """``params -> loss_fn(apply(params, features), **loss_kwargs) + λ ½‖params‖²``.

    Args:
      loss_fn: a loss of ``jaxrank.counterfactual.ips_losses`` (positional ``scores, clicks, propensities``
        passed in ``loss_kwargs`` as ``clicks=``, ``propensities=``), any reduction.
      features: ``[Q, L, D]``.
      model: ``"linear"`` or ``"neural"``.
      lam: ``λ``.
    """
    scorer = scorers.make(model)

    def objective(params):
        return loss_fn(scorer.apply(params, features), **loss_kwargs) + lam * l2_penalty(params)

    return objective


def fit(objective: Callable[[Any], Array], params, *, num_steps: int = 500, learning_rate=0.05):
    """Minimises ``objective(params)`` with ``num_steps`` Adam steps (cosine-decayed ``learning_rate``).

    Pure: jit it (or the function that builds ``objective`` and calls it), and ``vmap`` over seeds or
    settings; ``learning_rate`` may be traced. Returns ``(params, FitInfo)``.
    """
    check_int("num_steps", num_steps, minimum=1)
    optimizer = optax.adam(optax.cosine_decay_schedule(jnp.asarray(learning_rate, jnp.float32), num_steps))

    def step(carry, _):
        params, opt_state = carry
        value, grad = jax.value_and_grad(objective)(params)
        updates, opt_state = optimizer.update(grad, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), value

    (params, _), losses = jax.lax.scan(step, (params, optimizer.init(params)), None, length=num_steps)
    return params, FitInfo(losses, objective(params))
