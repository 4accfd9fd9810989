"""Pieces shared by DBGD, MGD and PDGD (the contract itself is ``jaxrank.types.Ranker``).

Every ranker scores documents with a model of ``jaxrank.oltr.scorers``, the static option ``model``:
``"linear"``, ``f(x) = w·x`` with ``w`` starting at zero (the authors' ``LinearModel``,
github.com/HarrieO/OnlineLearningToRank ``models/linearmodel.py``), or ``"neural"``, one hidden
layer of ``hidden_units`` sigmoid units (``models/neuralmodel.py``). The state's ``w`` is the
model's parameter pytree (``[D]`` for the linear model), ``params(state)`` returns it and
``score(params, features [..., D])`` is the model's ``apply``. DBGD and MGD perturb all of it at
once: one unit vector over the concatenation of every weight (``ravel_pytree``), as the authors'
``models/evolutionneuralmodel.py`` ``sample_candidates``. After every effective update the learning
rate is multiplied by ``learning_rate_decay`` (same files; 1 keeps it constant).

Shapes: one query's candidate documents are ``features [L, D]`` with ``where [L]`` marking the real
ones (padded, as ``jaxrank.types.QueryBatch``); the displayed list holds ``k = list_size`` positions;
``P`` is the number of model parameters (``D`` for the linear model).
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from jaxrank.oltr import scorers
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_int, check_number

__all__ = ["MODEL_OPTIONS", "TIE_TOLERANCE", "CandidateState", "check_features", "check_list_size",
           "check_outcome_samples", "check_rates", "init_candidates", "params", "perturbed", "step_towards", "top_ranks",
           "unit_vectors"]

# The static options that choose the scoring model, shared by every ranker's OPTIONS (jaxrank.oltr.scorers).
MODEL_OPTIONS = {
    "model": "linear",  # "linear" or "neural" (the PDGD paper's Tables 3-4 run both for DBGD and PDGD)
    "hidden_units": 64,  # width of the neural model's sigmoid layer (64 in the paper, §4.3); unused by "linear"
}


# A probabilistic outcome computed in f32 can leave a tie (posteriors of exactly 1/2) at ±1e-8: still a tie.
TIE_TOLERANCE = 1e-6


class CandidateState(NamedTuple):
    """State of the rankers that compare the current ranker with perturbed candidates (DBGD, MGD)."""

    w: Any  # the current ranker's parameters: [D] f32 (linear) or scorers.NeuralParams
    learning_rate: jax.Array  # [] f32, η (decayed after every update)
    learning_rate_decay: jax.Array  # [] f32
    delta: jax.Array  # [] f32, exploration step δ: candidates are w + δu
    tau: jax.Array  # [] f32, softmax exponent of probabilistic interleaving / multileaving
    t: jax.Array  # [] i32, impressions seen


def params(state) -> Any:
    """The model's parameters ``w`` (``[D]`` for a linear ranker): all its scores need."""
    return state.w


def check_rates(learning_rate, learning_rate_decay) -> None:
    """One-line ``ValueError`` for an impossible step size or decay (traced values pass unchecked)."""
    check_number("learning_rate", learning_rate, low=0.0, high=float("inf"),
                 fix="use a finite positive step size such as 0.01")
    check_number("learning_rate_decay", learning_rate_decay, low=0.0, high=1.0, high_inclusive=True,
                 fix="use a factor in (0, 1], 1 for a constant rate")


def check_outcome_samples(outcome_samples, comparison: str) -> None:
    """One-line ``ValueError`` unless ``outcome_samples`` is 0 (exact) or, for a probabilistic comparison, ``N >= 1``."""
    check_int("outcome_samples", outcome_samples, minimum=0,
              fix="use 0 for the exact outcome or the number of sampled assignments (10000 in the authors' code)")
    if outcome_samples and comparison != "probabilistic":
        raise ValueError(f"outcome_samples={outcome_samples} applies to probabilistic comparisons only, not "
                         f"{comparison!r}; leave it at 0.")


def check_list_size(list_size) -> None:
    check_int("list_size", list_size, minimum=1, fix="show at least one document (10 in the papers)")


def init_candidates(key, num_features: int, scorer: scorers.Scorer, *, learning_rate, delta, learning_rate_decay,
                    tau) -> CandidateState:
    """``w = scorer.init(key, D)`` and the hyperparameters as f32 leaves, checked when concrete."""
    check_int("num_features", num_features, minimum=1)
    check_rates(learning_rate, learning_rate_decay)
    check_number("delta", delta, low=0.0, high=float("inf"), fix="use a finite positive exploration step such as 1")
    check_number("tau", tau, low=0.0, high=float("inf"), fix="use a finite positive softmax exponent such as 3")
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return CandidateState(scorer.init(key, num_features), f32(learning_rate), f32(learning_rate_decay),
                          f32(delta), f32(tau), jnp.zeros((), jnp.int32))


def unit_vectors(key: PRNGKey, num_vectors: int, num_features: int) -> Array:
    """``[n, D]`` f32 directions uniform on the unit sphere: normalised standard normals
    (Yue & Joachims 2009, Algorithm 2; the authors' ``sample_candidates``)."""
    vectors = jax.random.normal(key, (num_vectors, num_features), jnp.float32)
    return vectors / jnp.linalg.norm(vectors, axis=-1, keepdims=True)


def perturbed(key: PRNGKey, state: CandidateState, num_candidates: int) -> tuple[Array, Any]:
    """``(directions [n, P], candidates)``: ``u_j`` from ``unit_vectors(key, n, P)`` over the flattened
    parameters and the candidates ``w + δ u_j`` (``w``'s pytree with a leading ``[n]`` axis on every
    leaf). One draw over every weight, hidden layer, bias and output alike, as the authors'
    ``sample_candidates`` (``models/linearmodel.py``, ``models/evolutionneuralmodel.py``)."""
    flat, unravel = ravel_pytree(state.w)
    directions = unit_vectors(key, num_candidates, flat.shape[0])
    return directions, jax.vmap(unravel)(flat[None, :] + state.delta * directions)


def step_towards(state: CandidateState, step: Array, won: Array) -> CandidateState:
    """``w ← w + η step`` and ``η ← η · decay`` when ``won``; counts the impression either way.

    ``step`` is flat, ``[P]``, in the order of ``ravel_pytree(state.w)``."""
    rate = jnp.where(won, state.learning_rate, 0.0)
    return state._replace(
        w=jax.tree.map(lambda w, s: w + rate * s, state.w, ravel_pytree(state.w)[1](step)),
        learning_rate=jnp.where(won, state.learning_rate * state.learning_rate_decay, state.learning_rate),
        t=state.t + 1,
    )


def check_features(features, where) -> None:
    shape, where_shape = jnp.shape(features), jnp.shape(where)
    if len(shape) != 2 or where_shape != shape[:1]:
        raise ValueError(f"features must be [L, D] and where [L] (one query; vmap for a batch); got {shape} "
                         f"and {where_shape}.")


def top_ranks(scores: Array, where: Array, depth: int) -> Array:
    """``[n, L]`` i32 ranks equal to ``score_ranks`` on each ranker's top ``depth`` real documents,
    ``depth + 1`` on the other real documents and ``L + 1`` on padding.

    Team-draft multileaving only ever takes a ranker's best document not yet shown, and at most
    ``k - 1`` are shown before a ranker's last pick, so ``depth = k`` gives the same lists as the
    full ranks, from ``lax.top_k`` (ties by index, as ``score_ranks``) instead of a sort, and a
    one-hot comparison instead of a scatter (both slow per impression on CPU).
    """
    num_docs = scores.shape[-1]
    depth = min(depth, num_docs)
    _, top = jax.lax.top_k(jnp.where(where[None, :], scores, -jnp.inf), depth)  # [n, depth]
    hits = top[:, :, None] == jnp.arange(num_docs)[None, None, :]  # [n, depth, L]
    ranks = jnp.where(jnp.any(hits, axis=1), jnp.argmax(hits, axis=1) + 1, depth + 1)
    return jnp.where(where[None, :], ranks, num_docs + 1).astype(jnp.int32)
