"""The dueling-bandit contract shared by every algorithm module.

A module defines ``init(key, num_arms, **hparams) -> State``, ``step(state, key, env) ->
(state, StepInfo)`` and ``best_arm(state, key) -> i32`` (the arm it would report if stopped
now). States are NamedTuples of arrays; hyperparameters live in the state so they can be vmapped.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.types import Array
from jaxrank.utils import random_argmax


class StepInfo(NamedTuple):
    first: Array  # [] i32, the first arm of the duel (the champion / candidate)
    second: Array  # [] i32, its opponent (equal to first for a self-duel)
    first_won: Array  # [] bool


def check_hparams(**named) -> None:
    """Rejects impossible Python-level hyperparameters before anything compiles."""
    for name, (value, lower, inclusive) in named.items():
        if isinstance(value, (int, float)) and not (value >= lower if inclusive else value > lower):
            bound = f">= {lower}" if inclusive else f"> {lower}"
            raise ValueError(f"{name} must be {bound}; got {value}.")


def duel(env, key, u: Array, first: Array, second: Array) -> Array:
    """Asks ``env`` whether ``first`` beats ``second``.

    ``u`` is a uniform the bandit drew together with its own choices (one PRNG call per step is
    much cheaper than two on CPU). Environments that need just one uniform (preference matrices,
    ``duel_from_uniform``) use it; any other environment gets a key independent of ``u``.
    """
    if hasattr(env, "duel_from_uniform"):
        return env.duel_from_uniform(u, first, second)
    return env.duel(jax.random.fold_in(key, 1), first, second)


def record_duel(wins: Array, first: Array, second: Array, first_won: Array) -> Array:
    """Adds one win to ``wins [K, K]``: ``wins[first, second]`` if ``first`` won, else the mirror."""
    winner = jnp.where(first_won, first, second)
    loser = jnp.where(first_won, second, first)
    return wins.at[winner, loser].add(1.0)


def copeland_guess(wins: Array, u: Array, where=None) -> Array:
    """The arm beating the most others on the scoresheet, ``argmax_i #{j: W_ij > W_ji}``, ties uniform."""
    beats = jnp.sum(wins > wins.T, axis=1).astype(jnp.float32)
    return random_argmax(u, beats, where)


def ucb_from_counts(wins: Array, totals: Array, t: Array, alpha: Array) -> Array:
    """Zoghi et al. (2014) UCB ``W/N + sqrt(alpha ln t / N)``, ``N = W + W^T``, elementwise.

    ``x/0 := 1`` is applied to each fraction, so an unexplored pair has ``U = 2``; callers set
    the diagonal to 1/2.

    Args:
      wins: ``[...]`` wins of the row arm over the column arm.
      totals: ``[...]`` comparisons of the pair, ``W + W^T``.
      t: the 1-based step number.
    """
    explored = totals > 0
    safe = jnp.where(explored, totals, 1.0)
    mean = jnp.where(explored, wins / safe, 1.0)
    width = jnp.where(explored, alpha * jnp.log(t.astype(jnp.float32)) / safe, 1.0)
    return mean + jnp.sqrt(width)
