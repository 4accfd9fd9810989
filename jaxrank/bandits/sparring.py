"""Sparring (Ailon, Karnin, Joachims, ICML 2014, "Reducing Dueling Bandits to Cardinal Bandits",
the Sparring reduction).

Two independent multi-armed bandits over the same ``K`` arms, left ``L`` and right ``R``. Each
step ``L`` picks ``x``, ``R`` picks ``y`` (independently), the environment duels ``(x, y)``, and
``L`` gets reward ``1{x wins}``, ``R`` gets ``1{y wins}`` (exactly one of the two; a self-duel
``x = y`` is a fair coin, since ``P_xx = 1/2``). The inner bandit is the static option ``inner``:

* ``"ucb"``: UCB with index ``μ̂_i + sqrt(α ln n / n_i)``, ``n`` the instance's plays so far
  (one per duel) and ``n_i`` those of arm ``i``; unplayed arms first; ties uniform. ``α = 2``
  is UCB1 (Auer, Cesa-Bianchi, Fischer, MLJ 2002, Fig. 1). The MergeDTS authors' code
  (``chang-li/MergeDTS``, ``sparring.py``) instead starts every arm at one pseudo-play without a
  win and uses ``ln`` of the 1-based step; here the arms are first played once, as in UCB1.
* ``"ts"``: Thompson sampling, ``θ_i ~ Beta(S_i + 1, F_i + 1)`` per arm and instance (``S`` wins,
  ``F`` losses), play ``argmax θ`` (Agrawal & Goyal, COLT 2012, Algorithm 1), as the MergeDTS
  authors' ``sparring_ts.py`` does (their driver's "Sparring-TS" entry runs the UCB class instead).
* ``"exp3"``: Exp3 (Auer, Cesa-Bianchi, Freund, Schapire, SIAM J. Comput. 2002, Section 3):
  ``p_i = (1 − γ) w_i / Σ_j w_j + γ/K``, play ``i ~ p``, and for the played arm
  ``w_i ← w_i exp(γ r / (p_i K))`` (the importance-weighted reward ``r / p_i``). Kept as
  ``log w`` shifted to a row maximum of 0, so nothing overflows or rounds away. ``γ`` is fixed over the run, as Exp3's
  guarantee (Corollary 3.2) assumes; the MergeDTS authors' code runs ``γ = 0.51``
  (``sparring_exp3.py``), far above that tuning for any long horizon.

State: ``[2, K]`` arrays, row 0 the left instance and row 1 the right. Report rule: the arm the two
instances played most in total, ties uniform — the "most played arm" recommendation (Bubeck,
Munos, Stoltz, ALT 2009), which, unlike the highest empirical mean (the MergeDTS authors' rule), is
not led by an arm that won its only play; as both instances concentrate on the Condorcet winner
(the paper's conjecture), it becomes the arm played most.
"""

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import draw_from, duel, exp3_probabilities
from jaxrank.bandits.dts import beta_samples
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax
from jaxrank.utils.checks import check_choice, check_int, check_number

INNERS = ("ucb", "ts", "exp3")

HPARAMS = {
    # UCB exploration α of the "ucb" inner bandit: 0.51, the value the MergeDTS authors' code runs
    # for Sparring (demo.py, sparring.py); α = 2 is UCB1.
    "alpha": 0.51,
    # Exp3's γ for the "exp3" inner bandit: Auer et al. (2002), Corollary 3.2's tuning
    # γ = min(1, sqrt(K ln K / ((e − 1) g))) with g >= the best arm's total reward, here g = T,
    # for K = 10 arms and T = 20,000 duels (≈ 0.026). Set it for other K and T by the same formula.
    "gamma": min(1.0, math.sqrt(10 * math.log(10) / ((math.e - 1) * 20_000))),
}
OPTIONS = {
    # The inner multi-armed bandit of both instances: "ucb", "ts" or "exp3".
    "inner": "ucb",
}


class SparringState(NamedTuple):
    wins: jax.Array  # [2, K] f32, rewards of each arm per instance (row 0 left, row 1 right)
    plays: jax.Array  # [2, K] f32, plays of each arm per instance
    log_weights: jax.Array  # [2, K] f32, Exp3's log w (stays 0 for the other inner bandits)
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, UCB exploration
    gamma: jax.Array  # [] f32, Exp3 exploration, in (0, 1]


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"], gamma=HPARAMS["gamma"]) -> SparringState:
    """Both instances fresh for ``K = num_arms``: no plays, Exp3 weights 1. ``alpha > 0``, ``gamma`` in (0, 1]."""
    del key
    check_number("alpha", alpha, low=0)
    check_number("gamma", gamma, low=0, high=1, high_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    zeros = jnp.zeros((2, num_arms), jnp.float32)
    return SparringState(
        wins=zeros,
        plays=zeros,
        log_weights=zeros,
        t=jnp.zeros((), jnp.int32),
        alpha=jnp.asarray(alpha, jnp.float32),
        gamma=jnp.asarray(gamma, jnp.float32),
    )


def ucb_index(wins: jax.Array, plays: jax.Array, t: jax.Array, alpha: jax.Array) -> jax.Array:
    """``[..., K]`` UCB index ``wins/plays + sqrt(α ln t / plays)``, ``+inf`` for an unplayed arm.

    Args:
      wins, plays: ``[..., K]`` rewards and plays per arm.
      t: plays of the instance so far (``>= 1`` once every arm has been played).
      alpha: exploration constant.
    """
    played = plays > 0
    safe = jnp.where(played, plays, 1.0)
    log_t = jnp.log(jnp.maximum(t, 1).astype(jnp.float32))
    return jnp.where(played, wins / safe + jnp.sqrt(alpha * log_t / safe), jnp.inf)


def _pick(key, state: SparringState, u: jax.Array, inner: str) -> jax.Array:
    """``[2]`` i32, the arms the left and right instances play (``u [2]`` uniforms, one each)."""
    if inner == "ucb":
        index = ucb_index(state.wins, state.plays, state.t, state.alpha)
        return jnp.stack([random_argmax(u[0], index[0]), random_argmax(u[1], index[1])])
    if inner == "ts":
        # D-TS's exact Marsaglia-Tsang sampler: jax.random.beta loops per element under vmap.
        failures = state.plays - state.wins
        theta = beta_samples(key, state.wins.ravel() + 1.0, failures.ravel() + 1.0).reshape(state.wins.shape)
        return jnp.stack([random_argmax(u[0], theta[0]), random_argmax(u[1], theta[1])])
    p = exp3_probabilities(state.log_weights, state.gamma)
    return jnp.stack([draw_from(u[0], p[0]), draw_from(u[1], p[1])])


def step(key, state: SparringState, env, *, inner: str = OPTIONS["inner"]):
    """One round of Sparring: ``x`` from the left bandit, ``y`` from the right, duel, reward each.

    The left instance gains reward ``1{x beats y}`` on arm ``x``, the right ``1 − 1{x beats y}`` on
    arm ``y``; both count one play. With ``inner="exp3"`` the played arm's ``log w`` also gains
    ``γ r / (p K)``, ``p`` the probability it was drawn with (then each row of ``log w`` is shifted
    so that its maximum is 0, which leaves ``p`` unchanged).

    Args:
      key: this step's PRNG key.
      state: the ``SparringState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.
      inner: the inner bandit (static; bound by ``make``).

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first=x, second=y, first_won)``, all ``[]`` (i32, i32, bool).
    """
    key_pick, key_theta = jax.random.split(key)
    u = prng.uniform(key_pick, (3,))
    arms = _pick(key_theta, state, u[:2], inner)
    first, second = arms[0], arms[1]
    first_won = duel(key_pick, env, u[2], first, second)

    rows = jnp.arange(2)
    rewards = jnp.stack([first_won, ~first_won]).astype(jnp.float32)  # [2]: left, right
    wins = state.wins.at[rows, arms].add(rewards)
    plays = state.plays.at[rows, arms].add(1.0)
    log_weights = state.log_weights
    if inner == "exp3":
        p = exp3_probabilities(state.log_weights, state.gamma)[rows, arms]
        log_weights = log_weights.at[rows, arms].add(state.gamma * rewards / (p * state.wins.shape[1]))
        # p depends only on differences of log w: keep each row's maximum at 0, so that over long runs
        # the increments (at most 1) are not lost to float32 rounding of a growing log w.
        log_weights = log_weights - jnp.max(log_weights, axis=1, keepdims=True)
    new_state = state._replace(wins=wins, plays=plays, log_weights=log_weights, t=state.t + 1)
    return new_state, StepInfo(first, second, first_won)


def best_arm(key, state: SparringState) -> jax.Array:
    """The arm played most by the two instances together (``argmax_i n_L,i + n_R,i``), ties uniform."""
    return random_argmax(prng.uniform(key), jnp.sum(state.plays, axis=0))


_BANDITS = {inner: Bandit(init, functools.partial(step, inner=inner), best_arm) for inner in INNERS}


def make(*, inner: str = OPTIONS["inner"]) -> Bandit:
    """Sparring with the inner bandit ``inner`` (``"ucb"``, ``"ts"`` or ``"exp3"``) bound; equal
    options give the same ``Bandit`` (``jit`` caches by it)."""
    check_choice("inner", inner, INNERS)
    return _BANDITS[inner]
