"""Beat-the-Mean (Yue & Joachims, ICML 2011, Algorithm 1, the online version).

Explore-then-exploit with a known horizon ``T``, relaxation ``γ`` (``>= 1`` in the paper's
analysis, 1 by default; any ``γ > 0`` is accepted) and ``δ = 1/(2TK)`` (the online setting). Each active arm ``b`` of the working set ``W_ℓ`` keeps ``w_b`` wins in
``n_b`` comparisons against opponents drawn uniformly from ``W_ℓ``, so ``P̂_b = w_b / n_b``
(``1/2`` if ``n_b = 0``, line 6) estimates how often ``b`` beats the *mean* arm of ``W_ℓ``.
Each step (lines 10-21):

* line 11: ``b = argmin_{W_ℓ} n_b`` (ties uniform); line 12: ``b'`` uniform from ``W_ℓ``;
  ``b`` and ``b'`` duel; lines 13-14: only ``b``'s record changes (``n_b += 1``, ``w_b += won``);
* line 16: with ``n* = min_{W_ℓ} n_b`` and ``c* = c_{δ,γ}(n*) = 3γ² sqrt(log(1/δ) / n*)``
  (``c* = 1`` when ``n* = 0``, line 8), if ``min P̂ + c* <= max P̂ - c*`` then (lines 17-19) the
  arm with the lowest ``P̂`` (ties uniform) leaves ``W_ℓ`` and every comparison *against* it is
  deleted from the other arms' records.

Once one arm is left it is exploited (duelled with itself) until ``T``; ``best_arm`` is
``argmax_{W_ℓ} P̂_b`` (line 23), ties uniform.

The per-pair counts ``wins[b, b']`` and ``plays[b, b']`` (row: the arm whose record it is) make
the deletion a mask: ``n_b = Σ_{b' ∈ W_ℓ} plays[b, b']``.

Resolved ambiguities [ours]: ``b'`` is drawn from all of ``W_ℓ``, ``b`` included (the paper's
"select ``b' ∈ W_ℓ`` at random"; the mean arm includes ``b``; Lerot's ``BeatTheMeanSampler``
does the same, duelpy excludes ``b``); a self-comparison counts as a comparison of ``b``. At
most one arm is removed per step, as in the pseudo-code. The radius uses the paper's ``3γ²``
(Lerot writes ``3γ``; the two agree at the default ``γ = 1``).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax, random_argmin, random_choice
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # T, the number of steps of the run (δ = 1/(2TK), the online setting; Yue & Joachims, ICML 2011, §4); the paper has no default:
    # run_sweep sets num_steps unless given, and 10^6 stands in for a direct init(key, K).
    "horizon": 1e6,
    # Relaxed stochastic transitivity γ of the radius 3γ² sqrt(log(1/δ)/n): 1, the paper's analysis needs γ >= 1.
    "gamma": 1.0,
}
OPTIONS = {}


class BTMState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[b, b'] = times b beat opponent b' (b's record)
    plays: jax.Array  # [K, K] f32, plays[b, b'] = comparisons of b against opponent b'
    active: jax.Array  # [K] bool, the working set W_ℓ
    t: jax.Array  # [] i32, duels so far
    horizon: jax.Array  # [] f32, T (sets δ = 1/(2TK))
    gamma: jax.Array  # [] f32, relaxed stochastic transitivity γ


def init(key, num_arms: int, *, horizon=HPARAMS["horizon"], gamma=HPARAMS["gamma"]) -> BTMState:
    """Empty records, ``W_1 = all arms``. ``horizon`` (T >= 1) is required; ``gamma > 0``."""
    del key
    if horizon is None:
        raise ValueError("Beat-the-Mean needs the horizon T: init(..., horizon=T) "
                         "(jaxrank.bandits.run_sweep sets it to num_steps unless given).")
    check_number("horizon", horizon, low=1, low_inclusive=True)
    check_number("gamma", gamma, low=0)
    check_int("num_arms", num_arms, minimum=2)
    zeros = jnp.zeros((num_arms, num_arms), jnp.float32)
    return BTMState(
        wins=zeros,
        plays=zeros,
        active=jnp.ones(num_arms, bool),
        t=jnp.zeros((), jnp.int32),
        horizon=jnp.asarray(horizon, jnp.float32),
        gamma=jnp.asarray(gamma, jnp.float32),
    )


def scores(wins: jax.Array, plays: jax.Array, active: jax.Array):
    """``(P̂ [K], n [K])`` against the mean arm of ``W_ℓ``: only opponents in ``active`` count."""
    w = jnp.sum(jnp.where(active[None, :], wins, 0.0), axis=1)
    n = jnp.sum(jnp.where(active[None, :], plays, 0.0), axis=1)
    p_hat = jnp.where(n > 0, w / jnp.where(n > 0, n, 1.0), 0.5)
    return p_hat, n


def confidence_radius(n_star: jax.Array, horizon: jax.Array, gamma: jax.Array, num_arms: int) -> jax.Array:
    """``c_{δ,γ}(n) = 3γ² sqrt(log(1/δ) / n)`` with ``δ = 1/(2TK)``; 1 when ``n = 0`` (line 8)."""
    log_inv_delta = jnp.log(2.0 * horizon * num_arms)
    safe = jnp.where(n_star > 0, n_star, 1.0)
    return jnp.where(n_star > 0, 3.0 * gamma**2 * jnp.sqrt(log_inv_delta / safe), 1.0)


def _remove_worst(p_hat, n, active, horizon, gamma, u):
    """Line 16-19: the working set after the elimination test (one arm at most)."""
    num_arms = active.shape[0]
    n_star = jnp.min(jnp.where(active, n, jnp.inf))
    c = confidence_radius(n_star, horizon, gamma, num_arms)
    lowest = jnp.min(jnp.where(active, p_hat, jnp.inf))
    highest = jnp.max(jnp.where(active, p_hat, -jnp.inf))
    separated = (jnp.sum(active) > 1) & (lowest + c <= highest - c)
    worst = random_argmin(u, p_hat, active)
    return active & ~(separated & (jnp.arange(num_arms) == worst))


def step(key, state: BTMState, env):
    """One step of Beat-the-Mean (Yue & Joachims, ICML 2011, Algorithm 1, online version).

    Lines 11-12: the arm ``b`` of ``W_ℓ`` with the fewest comparisons (ties uniform) duels an
    opponent ``b'`` drawn uniformly from ``W_ℓ`` (``b`` included, our reading). Lines 13-14: only
    ``b``'s record changes. Lines 16-19: if ``min P̂ + c* <= max P̂ - c*``, the arm with the lowest
    ``P̂`` (ties uniform) leaves ``W_ℓ`` and the comparisons against it stop counting; at most one
    arm leaves per step. With one arm left it duels itself and no record changes.

    Args:
      key: this step's PRNG key.
      state: the ``BTMState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = b`` and ``second = b'``,
      all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_arm, u_opponent, u_worst, u_duel = prng.uniform(key_draws, (4,))
    exploring = jnp.sum(state.active) > 1

    # Lines 11-12 (with one arm left, both picks return it: the exploit self-duel).
    _, n = scores(state.wins, state.plays, state.active)
    arm = random_argmin(u_arm, n, state.active)
    opponent = random_choice(u_opponent, state.active)
    first_won = duel(key_env, env, u_duel, arm, opponent)

    # Lines 13-14: only the evaluated arm's record changes.
    plays = state.plays.at[arm, opponent].add(exploring.astype(jnp.float32))
    wins = state.wins.at[arm, opponent].add((exploring & first_won).astype(jnp.float32))
    p_hat, n = scores(wins, plays, state.active)
    active = _remove_worst(p_hat, n, state.active, state.horizon, state.gamma, u_worst)

    new_state = state._replace(wins=wins, plays=plays, active=active, t=state.t + 1)
    return new_state, StepInfo(arm, opponent, first_won)


def best_arm(key, state: BTMState) -> jax.Array:
    """``argmax_{W_ℓ} P̂_b`` (line 23), ties uniform."""
    p_hat, _ = scores(state.wins, state.plays, state.active)
    return random_argmax(prng.uniform(key), p_hat, state.active)


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
