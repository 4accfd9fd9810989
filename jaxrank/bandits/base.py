"""Pieces shared by the dueling-bandit modules (the contract itself is ``jaxrank.types.Bandit``):
building a module's ``Bandit``, asking the environment for a duel, the win scoresheet, Copeland
guesses, RUCB-style bounds."""

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Array, Bandit, DuelEnv
from jaxrank.utils import prng, random_argmax
from jaxrank.utils.choice import first_passing


def flag_variants(init: Callable, step: Callable, best_arm: Callable, option: str) -> dict[bool, Bandit]:
    """The two ``Bandit``s of a module with one on/off option (``init``'s keyword ``option`` bound), built
    once at import so that ``make`` with equal options returns the same object (``jit`` caches by it)."""
    return {flag: Bandit(functools.partial(init, **{option: flag}), step, best_arm) for flag in (False, True)}


def pick_flag(variants: dict[bool, Bandit], option: str, value) -> Bandit:
    """``variants[value]`` for a bool ``value``; ``ValueError`` naming ``option`` and the value otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{option} is an on/off option of make(); got {value!r}; pass True or False.")
    return variants[bool(value)]


def split_step_key(key, num: int) -> tuple:
    """``num`` independent keys of a step key, one per consumer (the bandit's uniforms, the
    environment, a redraw loop, ...): the keys of ``jax.random.split(key, num)``, bit for bit for
    threefry keys (computed as ``prng.fold_in(key, i)``, unrolled). A step never draws from ``key``
    itself, so no consumer reads the Threefry blocks of another."""
    return tuple(prng.fold_in(key, i) for i in range(num))


def duel(key_env, env: DuelEnv, u: Array, first: Array, second: Array) -> Array:
    """Asks ``env`` whether ``first`` beats ``second`` (the ``DuelEnv`` contract, ``jaxrank.types``).

    ``u`` is a uniform the bandit drew together with its own choices; ``key_env`` is the
    environment's own key (``split_step_key``) for any other randomness.
    """
    return env.duel(key_env, first, second, u)


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


def exp3_probabilities(log_weights: Array, gamma: Array) -> Array:
    """``[..., K]`` Exp3's ``p = (1 − γ) w / Σ w + γ / K`` from ``log w`` (Auer et al., 2002; REX3 and
    Sparring-EXP3 draw their arms from it)."""
    num_arms = log_weights.shape[-1]
    return (1.0 - gamma) * jax.nn.softmax(log_weights, axis=-1) + gamma / num_arms


def draw_from(u: Array, p: Array) -> Array:
    """The arm ``i`` with ``p_0 + ... + p_{i-1} <= u Σp < p_0 + ... + p_i`` (``u`` uniform in [0, 1),
    ``p [K]``): an inverse-CDF draw from ``p``."""
    return first_passing(p, u * jnp.sum(p))
