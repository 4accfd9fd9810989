"""Condorcet SAVAGE (Urvoy, Clérot, Féraud, Naamane, ICML 2013), the explore-then-exploit
baseline of Zoghi et al. (2014). Horizon-aware: ``delta = 1/T``.

While more than one arm is active: duel the active pair compared least often (ties uniform),
then drop every active arm ``i`` that some arm ``j`` beats confidently,
``p̂_ij + c(n_ij) < 1/2`` with ``c(n) = sqrt(ln(K(K-1) T / delta) / (2n))`` (a union bound over
pairs and steps). With one arm left, duel it with itself until ``T``. Report: the remaining arm,
or among the active arms the one beating the most others on the estimates, ties uniform.
If an elimination round would remove every active arm (possible only without a Condorcet
winner), the round is skipped.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import copeland_guess, duel, record_duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmin
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # T, the number of steps of the run (δ = 1/T; Urvoy et al., ICML 2013); the paper has no default:
    # run_sweep sets num_steps unless given, and 10^6 stands in for a direct init(key, K).
    "horizon": 1e6,
}
OPTIONS = {}


class SavageState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = times i beat j
    active: jax.Array  # [K] bool, arms that may still be the Condorcet winner
    t: jax.Array  # [] i32, duels so far
    horizon: jax.Array  # [] f32, T


def init(key, num_arms: int, *, horizon=HPARAMS["horizon"]) -> SavageState:
    """Every arm active; ``horizon >= 1`` is the number of steps the run will take."""
    del key
    if horizon is None:
        raise ValueError("Condorcet SAVAGE needs the horizon T: init(..., horizon=T) "
                         "(jaxrank.bandits.run_sweep sets it to num_steps unless given).")
    check_number("horizon", horizon, low=1, low_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    return SavageState(jnp.zeros((num_arms, num_arms), jnp.float32), jnp.ones(num_arms, bool),
                       jnp.zeros((), jnp.int32), jnp.asarray(horizon, jnp.float32))


def confidence_radius(totals, num_arms: int, horizon):
    """``c(n) = sqrt(ln(K (K-1) T^2) / (2 n))`` for ``n > 0`` (``delta = 1/T``)."""
    log_term = jnp.log(num_arms * (num_arms - 1.0)) + 2.0 * jnp.log(horizon)
    return jnp.sqrt(log_term / (2.0 * jnp.maximum(totals, 1.0)))


def step(key, state: SavageState, env):
    """One step of Condorcet SAVAGE (Urvoy, Clérot, Féraud, Naamane, ICML 2013).

    While more than one arm is active, the active pair ``i < j`` compared least often so far (ties
    uniform) duels; the win matrix gains one, then every active arm ``i`` with
    ``p̂_ij + c(n_ij) < 1/2`` for some ``j`` (``n_ij > 0``) is deactivated, ``c(n)`` the
    union-bound radius with ``δ = 1/T`` (``confidence_radius``). An elimination round that would
    leave no arm is skipped. Once one arm is left it duels itself until the horizon: exploitation
    starts at ``|A| = 1``, our choice of stopping rule (Lerot's ``SAVAGESampler`` instead stops
    once one arm's lower bounds all exceed 1/2).

    Args:
      key: this step's PRNG key.
      state: the ``SavageState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with the pair played (``first == second`` when
      exploiting), all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_pair, u_duel = prng.uniform(key_draws, (2,))
    num_arms = state.wins.shape[0]
    arms = jnp.arange(num_arms)
    totals = state.wins + state.wins.T
    pairs = state.active[:, None] & state.active[None, :] & (arms[:, None] < arms[None, :])
    flat = random_argmin(u_pair, totals.reshape(-1), pairs.reshape(-1))
    exploring = jnp.sum(state.active) > 1
    remaining = jnp.argmax(state.active).astype(jnp.int32)
    first = jnp.where(exploring, flat // num_arms, remaining).astype(jnp.int32)
    second = jnp.where(exploring, flat % num_arms, remaining).astype(jnp.int32)

    first_won = duel(key_env, env, u_duel, first, second)
    wins = record_duel(state.wins, first, second, first_won)
    totals = wins + wins.T
    estimate = wins / jnp.maximum(totals, 1.0)
    beaten = (totals > 0) & (estimate + confidence_radius(totals, num_arms, state.horizon) < 0.5)
    survivors = state.active & ~jnp.any(beaten & ~jnp.eye(num_arms, dtype=bool), axis=1)
    active = jnp.where(jnp.any(survivors), survivors, state.active)
    return state._replace(wins=wins, active=active, t=state.t + 1), StepInfo(first, second, first_won)


def best_arm(key, state: SavageState) -> jax.Array:
    """The last active arm, or the active arm beating the most others on the estimates."""
    return copeland_guess(state.wins, prng.uniform(key), state.active)


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
