"""Sparring (Ailon, Karnin, Joachims, ICML 2014, "Reducing Dueling Bandits to Cardinal Bandits",
the Sparring reduction).

Two independent multi-armed bandits over the same ``K`` arms, left ``L`` and right ``R``. Each
step ``L`` picks ``x``, ``R`` picks ``y`` (independently), the environment duels ``(x, y)``, and
``L`` gets reward ``1{x wins}``, ``R`` gets ``1{y wins}`` (exactly one of the two; a self-duel
``x = y`` is a fair coin, since ``P_xx = 1/2``). The inner bandit is the static option ``inner``:

* ``"ucb"``: UCB with index ``μ̂_i + sqrt(α ln n / n_i)``, ``n`` the instance's plays so far
  (one per duel) and ``n_i`` those of arm ``i``; unplayed arms first; ties uniform. ``α = 2``
  is UCB1 (Auer, Cesa-Bianchi, Fischer, MLJ 2002, Fig. 1): the arms are first played once. The
  MergeDTS authors' code (``chang-li/MergeDTS``, ``sparring.py``) instead starts every arm at one
  phantom play without a win and uses ``ln`` of the 1-based step: ``convention="mergedts"``.
* ``"ts"``: Thompson sampling, ``θ_i ~ Beta(S_i + 1, F_i + 1)`` per arm and instance (``S`` wins,
  ``F`` losses), play ``argmax θ`` (Agrawal & Goyal, COLT 2012, Algorithm 1), as the MergeDTS
  authors' ``sparring_ts.py`` does (their driver's "Sparring-TS" entry runs the UCB class instead).
* ``"exp3"``: Exp3 (Auer, Cesa-Bianchi, Freund, Schapire, SIAM J. Comput. 2002, Section 3):
  ``p_i = (1 − γ) w_i / Σ_j w_j + γ/K``, play ``i ~ p``, and for the played arm
  ``w_i ← w_i exp(γ r / (p_i K))`` (the importance-weighted reward ``r / p_i``). Kept as
  ``log w`` shifted to a row maximum of 0, so nothing overflows or rounds away. ``γ`` is fixed over
  the run, as Exp3's guarantee (Corollary 3.2) assumes, and by default tuned as there for the run's
  ``K`` and horizon ``T``: ``γ = min(1, sqrt(K ln K / ((e − 1) T)))`` (``exp3_gamma``, with the
  best arm's total reward bounded by ``g = T``). The MergeDTS authors' ``sparring_exp3.py`` uses an
  anytime ``γ_t = min(1, sqrt(K ln K / max(t, 10⁴)))`` of the 1-based step ``t`` unless given a
  fixed one (their ``demo.py`` passes 0.51): ``convention="mergedts"``.

State: ``[2, K]`` arrays, row 0 the left instance and row 1 the right. Report rule: the arm the two
instances played most in total, ties uniform — the "most played arm" recommendation (Bubeck,
Munos, Stoltz, ALT 2009), which, unlike the highest empirical mean (the MergeDTS authors' rule), is
not led by an arm that won its only play; as both instances concentrate on the Condorcet winner
(the paper's conjecture), it becomes the arm played most.
"""

import functools
import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import draw_from, duel, exp3_probabilities, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax
from jaxrank.utils.beta import beta_sample, uniforms
from jaxrank.utils.checks import check_choice, check_int, check_number

INNERS = ("ucb", "ts", "exp3")
CONVENTIONS = ("paper", "mergedts")

HPARAMS = {
    # UCB exploration α of the "ucb" inner bandit: 0.51, the value the MergeDTS authors' code runs
    # for Sparring (demo.py, sparring.py); α = 2 is UCB1.
    "alpha": 0.51,
    # Exp3's fixed γ for the "exp3" inner bandit; 0 (default): Auer et al. (2002), Corollary 3.2's
    # tuning γ = min(1, sqrt(K ln K / ((e − 1) g))) with g >= the best arm's total reward, here
    # g = T (exp3_gamma), for the run's K and horizon T.
    "gamma": 0.0,
    # T, the number of steps of the run, for the default γ; run_sweep sets num_steps unless given,
    # and 10^6 stands in for a direct init(key, K).
    "horizon": 1e6,
}
OPTIONS = {
    # The inner multi-armed bandit of both instances: "ucb", "ts" or "exp3".
    "inner": "ucb",
    # "paper": UCB1's start-up and Exp3's fixed γ (the papers above); "mergedts": as the MergeDTS
    # authors' sparring.py / sparring_exp3.py, a phantom play per arm with ln of the 1-based step
    # (UCB) and the anytime γ_t = min(1, sqrt(K ln K / max(t, 10⁴))) (Exp3); Thompson sampling is
    # the same under both.
    "convention": "paper",
}


class SparringState(NamedTuple):
    wins: jax.Array  # [2, K] f32, rewards of each arm per instance (row 0 left, row 1 right)
    plays: jax.Array  # [2, K] f32, plays of each arm per instance
    log_weights: jax.Array  # [2, K] f32, Exp3's log w (stays 0 for the other inner bandits)
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, UCB exploration
    gamma: jax.Array  # [] f32, Exp3 exploration, in (0, 1]


def exp3_gamma(num_arms: int, horizon):
    """Exp3's ``γ = min(1, sqrt(K ln K / ((e − 1) T)))`` (Auer et al. 2002, Corollary 3.2, with ``g = T``)."""
    return jnp.minimum(1.0, jnp.sqrt(num_arms * math.log(num_arms) / ((math.e - 1) * jnp.asarray(horizon, jnp.float32))))


def anytime_gamma(num_arms: int, step: jax.Array, cap: float) -> jax.Array:
    """The MergeDTS authors' anytime ``γ_t = min(cap, sqrt(K ln K / max(t, 10⁴)))`` of the 1-based step
    ``t`` (``sparring_exp3.py`` with ``cap = 1``, ``rex3.py`` with ``cap = 1/2``)."""
    t = jnp.maximum(step.astype(jnp.float32), 1e4)
    return jnp.minimum(cap, jnp.sqrt(num_arms * math.log(num_arms) / t))


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"], gamma=HPARAMS["gamma"],
         horizon=HPARAMS["horizon"]) -> SparringState:
    """Both instances fresh for ``K = num_arms``: no plays, Exp3 weights 1. ``alpha > 0``, ``gamma`` in
    [0, 1] (0: ``exp3_gamma(K, horizon)``), ``horizon >= 1``."""
    del key
    check_number("alpha", alpha, low=0)
    check_number("gamma", gamma, low=0, high=1, low_inclusive=True, high_inclusive=True)
    check_number("horizon", horizon, low=1, low_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    gamma = jnp.asarray(gamma, jnp.float32)
    zeros = jnp.zeros((2, num_arms), jnp.float32)
    return SparringState(
        wins=zeros,
        plays=zeros,
        log_weights=zeros,
        t=jnp.zeros((), jnp.int32),
        alpha=jnp.asarray(alpha, jnp.float32),
        gamma=jnp.where(gamma > 0, gamma, exp3_gamma(num_arms, horizon)),
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


def _gamma(state: SparringState, convention: str) -> jax.Array:
    """Exp3's ``γ`` this step: the state's fixed one, or the authors' anytime ``γ_t``."""
    if convention == "mergedts":
        return anytime_gamma(state.wins.shape[1], state.t + 1, 1.0)
    return state.gamma


def _pick(key_redraw, state: SparringState, u: jax.Array, inner: str, convention: str) -> jax.Array:
    """``[2]`` i32, the arms the left and right instances play (``u``: 2 uniforms, then 16 K for "ts")."""
    if inner == "ucb":
        if convention == "mergedts":  # one phantom play per arm, ln of the 1-based step
            index = ucb_index(state.wins, state.plays + 1.0, state.t + 1, state.alpha)
        else:
            index = ucb_index(state.wins, state.plays, state.t, state.alpha)
        return jnp.stack([random_argmax(u[0], index[0]), random_argmax(u[1], index[1])])
    if inner == "ts":
        failures = state.plays - state.wins
        theta = beta_sample(key_redraw, u[2:], state.wins.ravel() + 1.0, failures.ravel() + 1.0).reshape(state.wins.shape)
        return jnp.stack([random_argmax(u[0], theta[0]), random_argmax(u[1], theta[1])])
    p = exp3_probabilities(state.log_weights, _gamma(state, convention))
    return jnp.stack([draw_from(u[0], p[0]), draw_from(u[1], p[1])])


def step(key, state: SparringState, env, *, inner: str = OPTIONS["inner"], convention: str = OPTIONS["convention"]):
    """One round of Sparring: ``x`` from the left bandit, ``y`` from the right, duel, reward each.

    The left instance gains reward ``1{x beats y}`` on arm ``x``, the right ``1 − 1{x beats y}`` on
    arm ``y``; both count one play. With ``inner="exp3"`` the played arm's ``log w`` also gains
    ``γ r / (p K)``, ``p`` the probability it was drawn with (then each row of ``log w`` is shifted
    so that its maximum is 0, which leaves ``p`` unchanged).

    Args:
      key: this step's PRNG key.
      state: the ``SparringState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.
      inner, convention: the inner bandit and the convention (static; bound by ``make``).

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first=x, second=y, first_won)``, all ``[]`` (i32, i32, bool).
    """
    key_draws, key_redraw, key_env = split_step_key(key, 3)
    num_arms = state.wins.shape[1]
    u = uniforms(key_draws, 3 + 16 * num_arms * (inner == "ts"))  # the duel's, two tie-breaks, 8 per Beta draw
    arms = _pick(key_redraw, state, u[1:], inner, convention)
    first, second = arms[0], arms[1]
    first_won = duel(key_env, env, u[0], first, second)

    rows = jnp.arange(2)
    rewards = jnp.stack([first_won, ~first_won]).astype(jnp.float32)  # [2]: left, right
    wins = state.wins.at[rows, arms].add(rewards)
    plays = state.plays.at[rows, arms].add(1.0)
    log_weights = state.log_weights
    if inner == "exp3":
        gamma = _gamma(state, convention)
        p = exp3_probabilities(state.log_weights, gamma)[rows, arms]
        log_weights = log_weights.at[rows, arms].add(gamma * rewards / (p * num_arms))
        # p depends only on differences of log w: keep each row's maximum at 0, so that over long runs
        # the increments (at most 1) are not lost to float32 rounding of a growing log w.
        log_weights = log_weights - jnp.max(log_weights, axis=1, keepdims=True)
    new_state = state._replace(wins=wins, plays=plays, log_weights=log_weights, t=state.t + 1)
    return new_state, StepInfo(first, second, first_won)


def best_arm(key, state: SparringState) -> jax.Array:
    """The arm played most by the two instances together (``argmax_i n_L,i + n_R,i``), ties uniform."""
    return random_argmax(prng.uniform(key), jnp.sum(state.plays, axis=0))


_BANDITS = {(inner, convention): Bandit(init, functools.partial(step, inner=inner, convention=convention), best_arm)
            for inner, convention in itertools.product(INNERS, CONVENTIONS)}


def make(*, inner: str = OPTIONS["inner"], convention: str = OPTIONS["convention"]) -> Bandit:
    """Sparring with the inner bandit ``inner`` (``"ucb"``, ``"ts"`` or ``"exp3"``) and ``convention``
    (``"paper"`` or ``"mergedts"``) bound; equal options give the same ``Bandit`` (``jit`` caches by it)."""
    check_choice("inner", inner, INNERS)
    check_choice("convention", convention, CONVENTIONS)
    return _BANDITS[inner, convention]
