"""The scoring models of the online rankers: linear, and the neural network of the PDGD paper.

Oosterhuis & de Rijke (CIKM 2018, §4.3, Tables 3–4) run DBGD and PDGD with a linear model and with
"a single hidden layer of 64 hidden nodes with sigmoid activation functions", Xavier-initialised.
Both models follow the authors' code (github.com/HarrieO/OnlineLearningToRank, commit 96712e4):

* ``linear``: ``f(x) = w·x`` with ``w = 0`` at the start (``models/linearmodel.py``).
* ``neural``: ``f(x) = v·σ(x W + b)`` with ``W [D, H]``, a hidden bias ``b [H]`` and a linear output
  layer without bias, ``v [H]`` (``models/neuralmodel.py`` ``NeuralModel.score``). Initialisation,
  as in that file's ``__init__``: every weight independent ``N(0, s²)`` with ``s = 1/fan_in``,
  i.e. ``s = 1/D`` for ``W`` and ``b`` and ``s = 1/H`` for ``v``. The paper calls it Xavier; note
  that the code's standard deviation is ``1/fan_in``, not Glorot & Bengio's ``√(1/fan_in)``-type
  scale; we follow the code.

A model is pure functions over a parameter pytree (``w [D]``, or ``NeuralParams``):

* ``init(key, num_features) -> params`` (the linear model ignores the key);
* ``apply(params, features [..., D]) -> [...]`` for any leading dimensions;
* ``apply_stack(stacked params, features [L, D]) -> [n, L]``: ``n`` models (leading axis on every
  leaf) on one query, for the candidates of DBGD and MGD;
* ``gradient(params, features [k, D], weights [k]) -> params``: ``Σ_i weights_i ∇f(x_i)``, the
  direction of PDGD's pairwise gradient (eq. 10). Linear: ``weights @ features``; neural:
  ``jax.vjp`` of ``apply`` (the authors' ``NeuralModel.backpropagate``).

The linear model keeps the expressions of the linear rankers, so their results are unchanged to the bit.
Learning rates in the paper (§4.3): PDGD neural uses η = 0.1 like PDGD linear; DBGD neural "the same
parameters" as DBGD linear (η = 0.01, δ = 1); so do the rankers' ``HPARAMS`` for either model.
"""

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_choice, check_int, check_key

__all__ = ["MODELS", "NeuralParams", "Scorer", "linear_apply", "linear_init", "make", "neural_apply",
           "neural_init"]

MODELS = ("linear", "neural")


class Scorer(NamedTuple):
    """One scoring model's pure functions (see the module docstring)."""

    init: Callable[[PRNGKey, int], Any]
    apply: Callable[[Any, Array], Array]
    apply_stack: Callable[[Any, Array], Array]
    gradient: Callable[[Any, Array, Array], Any]


class NeuralParams(NamedTuple):
    """One hidden layer of ``H`` sigmoid units (fields in the order of the authors' weight vector:
    ``W`` row-major, then ``b``, then ``v``; ``jax.flatten_util.ravel_pytree`` keeps it)."""

    hidden: jax.Array  # [D, H] f32, W
    bias: jax.Array  # [H] f32, b
    output: jax.Array  # [H] f32, v (no output bias)


def linear_init(key: PRNGKey, num_features: int) -> Array:
    """``w = 0`` ``[D]`` f32."""
    del key  # w starts at zero
    return jnp.zeros(num_features, jnp.float32)


def linear_apply(w: Array, features: Array) -> Array:
    """``features [..., D] @ w [D] -> [...]``."""
    return jnp.asarray(features, jnp.float32) @ w


def _linear_apply_stack(w: Array, features: Array) -> Array:
    return w @ jnp.asarray(features, jnp.float32).T  # [n, D] @ [D, L]


def _linear_gradient(w: Array, features: Array, weights: Array) -> Array:
    del w  # ∇_w (w·x) = x
    return weights @ features


def neural_init(key: PRNGKey, num_features: int, hidden_units: int = 64) -> NeuralParams:
    """``N(0, (1/fan_in)²)`` weights (the authors' ``NeuralModel.__init__``); draws
    ``key_hidden, key_bias, key_output = jax.random.split(key, 3)``, standard normals scaled."""
    check_key("key (the neural model draws its initial weights)", key)
    key_hidden, key_bias, key_output = jax.random.split(key, 3)
    scale_in, scale_out = 1.0 / num_features, 1.0 / hidden_units
    return NeuralParams(scale_in * jax.random.normal(key_hidden, (num_features, hidden_units), jnp.float32),
                        scale_in * jax.random.normal(key_bias, (hidden_units,), jnp.float32),
                        scale_out * jax.random.normal(key_output, (hidden_units,), jnp.float32))


def neural_apply(params: NeuralParams, features: Array) -> Array:
    """``σ(features [..., D] @ W + b) @ v -> [...]``."""
    hidden = jax.nn.sigmoid(jnp.asarray(features, jnp.float32) @ params.hidden + params.bias)
    return hidden @ params.output


def _neural_apply_stack(params: NeuralParams, features: Array) -> Array:
    return jax.vmap(neural_apply, in_axes=(0, None))(params, features)


def _neural_gradient(params: NeuralParams, features: Array, weights: Array) -> NeuralParams:
    _, pullback = jax.vjp(lambda p: neural_apply(p, features), params)
    return pullback(jnp.asarray(weights, jnp.float32))[0]


def make(model: str = "linear", hidden_units: int = 64) -> Scorer:
    """The ``Scorer`` of ``model`` (``"linear"`` or ``"neural"``; ``hidden_units`` only matters for the latter).

    Raises:
      ValueError: for an unknown model or a width below 1.
    """
    check_choice("model", model, MODELS)
    check_int("hidden_units", hidden_units, minimum=1, fix="use a positive width (64 in the paper)")
    if model == "linear":
        return Scorer(linear_init, linear_apply, _linear_apply_stack, _linear_gradient)
    return Scorer(functools.partial(neural_init, hidden_units=hidden_units), neural_apply, _neural_apply_stack,
                  _neural_gradient)
