"""Rankers trained on logged clicks: a linear or small neural scoring model fitted by full-batch Adam.

The models are ``jaxrank.oltr.scorers`` (``"linear"``: ``f(x) = w·x`` from ``w = 0``; ``"neural"``: one
hidden layer of sigmoid units, ``f(x) = v·σ(xW + b)``). ``fit`` minimises any pure ``objective(params)``
(a loss of ``jaxrank.counterfactual.ips_losses`` on ``apply(params, features)``, plus an ℓ2 term) with
optax's Adam on a cosine-decayed step size, ``num_steps`` full-batch steps in one ``lax.scan``: the
training sets of the protocol (a few hundred queries, their logged top-10 lists) fit in memory, and a
fixed step count keeps ``vmap`` over seeds and settings one compiled program. ``ranker_objective``
builds the usual objective: the loss over every query's list plus ``(λ/2)‖params‖²``.

The trainer keeps the family contract: ``make(num_steps=)`` (the schedule's horizon, static) gives
``Trainer(init, step)``; ``init(key, params, learning_rate=)`` stores the step size as an f32 leaf of
the ``FitState`` (a grid of step sizes is lanes of one program); ``step(key, state, objective)`` is one
Adam step, ``(state, FitStepInfo)``. ``fit`` runs ``num_steps`` of them in one ``lax.scan``.
"""

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxrank.oltr import scorers
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int

MODELS = scorers.MODELS
HPARAMS = {"learning_rate": 0.05}  # Adam's initial step size (jaxrank's default; cosine-decayed to 0)
OPTIONS = {"num_steps": 500}  # the cosine schedule's horizon


class FitState(NamedTuple):
    params: Any  # the model's parameters
    opt_state: Any  # Adam's moments and the schedule's step count
    learning_rate: Array  # [] f32 the initial step size
    count: Array  # [] i32 steps taken


class FitStepInfo(NamedTuple):
    loss: Array  # [] f32 objective before the step


class FitInfo(NamedTuple):
    losses: Array  # [T] f32 objective before each step
    final: Array  # [] f32 objective after the last step


class Trainer(NamedTuple):
    """``init(key, params, **hparams) -> FitState``; ``step(key, state, objective) -> (FitState, FitStepInfo)``."""

    init: Callable
    step: Callable


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


def _adam(learning_rate, num_steps: int):
    return optax.adam(optax.cosine_decay_schedule(learning_rate, num_steps))


def make(*, num_steps: int = OPTIONS["num_steps"]) -> Trainer:
    """Full-batch Adam with the step size decayed to 0 over ``num_steps`` steps (cosine)."""
    check_int("num_steps", num_steps, minimum=1)

    def init(key: PRNGKey, params, **hparams) -> FitState:
        del key  # the model's initial parameters are given
        values = hparams_with_defaults("ranker trainer", HPARAMS, OPTIONS, hparams)
        learning_rate = jnp.asarray(values["learning_rate"], jnp.float32)
        return FitState(params, _adam(learning_rate, num_steps).init(params), learning_rate, jnp.zeros((), jnp.int32))

    def step(key: PRNGKey, state: FitState, objective: Callable[[Any], Array]) -> tuple[FitState, FitStepInfo]:
        del key  # full batch, deterministic
        value, grad = jax.value_and_grad(objective)(state.params)
        updates, opt_state = _adam(state.learning_rate, num_steps).update(grad, state.opt_state, state.params)
        return FitState(optax.apply_updates(state.params, updates), opt_state, state.learning_rate,
                        state.count + 1), FitStepInfo(value)

    return Trainer(init, step)


def fit(objective: Callable[[Any], Array], params, *, num_steps: int = OPTIONS["num_steps"],
        learning_rate=HPARAMS["learning_rate"]):
    """Minimises ``objective(params)`` with ``num_steps`` Adam steps (cosine-decayed ``learning_rate``): the
    trainer's ``init`` and ``num_steps`` of its ``step`` in one ``lax.scan``.

    Pure: jit it (or the function that builds ``objective`` and calls it), and ``vmap`` over seeds or
    settings; ``learning_rate`` may be traced. Returns ``(params, FitInfo)``.
    """
    trainer = make(num_steps=num_steps)
    state = trainer.init(None, params, learning_rate=learning_rate)
    state, infos = jax.lax.scan(lambda s, _: trainer.step(None, s, objective), state, None, length=num_steps)
    return state.params, FitInfo(infos.loss, objective(state.params))
