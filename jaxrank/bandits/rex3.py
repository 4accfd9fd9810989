"""REX3 (Gajane, Urvoy, Clérot, ICML 2015, "A Relative Exponential Weighing Algorithm for Adversarial
Utility-based Dueling Bandits", Algorithm 1).

Exponential weights ``w`` over the ``K`` arms (``w_i = 1`` at the start). Each step:

* ``p_i = (1 - γ) w_i / Σ_j w_j + γ / K``;
* draw ``a`` and ``b`` independently from ``p`` (they may coincide) and duel them, observing the
  relative feedback ``ψ = x(a) - x(b) ∈ {-1, 0, +1}``: ``+1`` when ``a`` wins, ``-1`` when ``b`` wins,
  and ``0`` for ``a = b`` (an arm's utility minus itself: a self-duel carries no information);
* ``w_a ← w_a exp((γ/K) ψ / (2 p_a))`` and ``w_b ← w_b exp(-(γ/K) ψ / (2 p_b))``; other weights stay.

The ``1/2`` of the update is the paper's, and the REX3 authors' own code keeps it (its ``b`` line
writes ``2**P[b]`` for ``2 p_b``, a slip: the paper's ``2 p_b`` is used here); the MergeDTS authors'
``rex3.py`` drops it (``convention="mergedts"``: the full step ``(γ_t/K) ψ / p``).

Exploration ``γ = min(1/2, sqrt(K ln K / T))`` for a horizon ``T``: the finite-horizon tuning of the
REX3 authors' code (``optimal_gamma``), of the order the paper's ``O(sqrt(K ln(K) T))`` bound needs.
Hence ``horizon`` is a hyperparameter, set by ``jaxrank.bandits.run_sweep`` to ``num_steps`` unless
given. The MergeDTS code instead uses an anytime ``γ_t = min(1/2, sqrt(K ln K / max(t, 10⁴)))`` of
the 1-based step ``t`` (``convention="mergedts"``, which then ignores ``horizon``).

Weights are kept as log-weights shifted so that their maximum is 0 (``p`` depends only on their
differences), so nothing overflows over long horizons.

Report rule (ours; the paper reports no arm): the arm of largest weight (the mode of ``p``), ties
uniform. The MergeDTS code reports the largest ``w_i / n_i`` (``n_i`` its number of draws).
"""

from typing import NamedTuple

import functools

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import draw_from, duel, exp3_probabilities, split_step_key
from jaxrank.bandits.sparring import anytime_gamma
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax
from jaxrank.utils.checks import check_choice, check_int, check_number


HPARAMS = {
    # T, the number of steps of the run, which sets γ = min(1/2, sqrt(K ln K / T)) (Gajane et al.,
    # ICML 2015; optimal_gamma of the authors' code); the paper has no default: run_sweep sets
    # num_steps unless given, and 10^6 stands in for a direct init(key, K).
    "horizon": 1e6,
}
OPTIONS = {
    # "paper": the half step ψ / (2p) and the horizon-tuned γ (Gajane et al., Algorithm 1; the REX3
    # authors' optimal_gamma); "mergedts": the MergeDTS authors' rex3.py, full step ψ / p and the
    # anytime γ_t = min(1/2, sqrt(K ln K / max(t, 10⁴))).
    "convention": "paper",
}
CONVENTIONS = ("paper", "mergedts")


class Rex3State(NamedTuple):
    log_weights: jax.Array  # [K] f32, log w_i minus their maximum
    t: jax.Array  # [] i32, duels so far
    horizon: jax.Array  # [] f32, T


def init(key, num_arms: int, *, horizon=HPARAMS["horizon"]) -> Rex3State:
    """Equal weights for ``K = num_arms`` arms; ``horizon >= 1`` is the number of steps the run will take."""
    del key
    if horizon is None:
        raise ValueError("REX3 needs the horizon T for its exploration rate: init(..., horizon=T) "
                         "(jaxrank.bandits.run_sweep sets it to num_steps unless given).")
    check_number("horizon", horizon, low=1, low_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    return Rex3State(jnp.zeros(num_arms, jnp.float32), jnp.zeros((), jnp.int32), jnp.asarray(horizon, jnp.float32))


def exploration(num_arms: int, horizon: jax.Array) -> jax.Array:
    """``γ = min(1/2, sqrt(K ln K / T))``."""
    return jnp.minimum(0.5, jnp.sqrt(num_arms * jnp.log(float(num_arms)) / horizon))


def step(key, state: Rex3State, env, *, convention: str = OPTIONS["convention"]):
    """One step of REX3 (Gajane, Urvoy, Clérot, ICML 2015, Algorithm 1).

    ``a`` and ``b`` are drawn independently from ``p`` (``probabilities``), duel, and with
    ``ψ = +1`` (``a`` won), ``-1`` (``b`` won) or ``0`` (``a = b``), ``log w_a`` gains
    ``(γ/K) ψ / (2 p_a)`` and ``log w_b`` loses ``(γ/K) ψ / (2 p_b)``; the log-weights are then
    shifted to a maximum of 0.

    Args:
      key: this step's PRNG key.
      state: the ``Rex3State`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.
      convention: ``"paper"`` or ``"mergedts"`` (static; bound by ``make``).

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = a`` and ``second = b``, all ``[]``
      (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_first, u_second, u_duel = prng.uniform(key_draws, (3,))
    num_arms = state.log_weights.shape[0]
    if convention == "mergedts":
        gamma = anytime_gamma(num_arms, state.t + 1, 0.5)
        half = 1.0
    else:
        gamma = exploration(num_arms, state.horizon)
        half = 2.0
    p = exp3_probabilities(state.log_weights, gamma)
    first = draw_from(u_first, p)
    second = draw_from(u_second, p)

    first_won = duel(key_env, env, u_duel, first, second)
    psi = jnp.where(first == second, 0.0, jnp.where(first_won, 1.0, -1.0))
    rate = gamma / num_arms
    log_weights = state.log_weights.at[first].add(rate * psi / (half * p[first]))
    log_weights = log_weights.at[second].add(-rate * psi / (half * p[second]))
    log_weights = log_weights - jnp.max(log_weights)
    return state._replace(log_weights=log_weights, t=state.t + 1), StepInfo(first, second, first_won)


def best_arm(key, state: Rex3State) -> jax.Array:
    """The arm of largest weight, ties uniform."""
    return random_argmax(prng.uniform(key), state.log_weights)


_BANDITS = {c: Bandit(init, functools.partial(step, convention=c), best_arm) for c in CONVENTIONS}


def make(*, convention: str = OPTIONS["convention"]) -> Bandit:
    """REX3 with ``convention`` (``"paper"`` or ``"mergedts"``) bound; equal options give the same ``Bandit``."""
    check_choice("convention", convention, CONVENTIONS)
    return _BANDITS[convention]
