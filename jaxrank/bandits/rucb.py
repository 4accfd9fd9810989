"""Relative Upper Confidence Bound (Zoghi, Whiteson, Munos, de Rijke, ICML 2014, Algorithm 1).

Each step: ``U = W/(W + W^T) + sqrt(alpha ln t / (W + W^T))`` (``x/0 := 1``, ``U_ii = 1/2``);
candidates ``C = {c : U_cj >= 1/2 for all j}``; the hypothesised best arm ``B`` (at most one arm)
is kept while it stays in ``C`` (``B <- B ∩ C``); ``c`` is the only candidate, which becomes ``B``,
or ``B`` with probability 1/2 and otherwise uniform over ``C \\ B`` (lines 6-10). When ``C`` is
empty (every arm confidently beaten by some arm), ``c`` is drawn uniformly from all arms and
``B`` is left empty, as Algorithm 1 reads (``B ∩ ∅ = ∅``, and neither the ``|C| = 1`` nor the
``|C| > 1`` branch runs) and as duelingbanditlib's ``policy_rucb_icml.hpp`` does; duelpy's
``RelativeUCB`` instead adds the random arm to ``C``, so that it becomes ``B``. The opponent is
``d = argmax_j U_jc`` with uniform ties, never ``c`` itself when tied (line 11). Report rule:
the arm beating the most others on the scoresheet.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import copeland_guess, duel, record_duel, ucb_from_counts, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_choice
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # Exploration of U = W/N + sqrt(α ln t / N): the regret bound needs α > 1/2 (Zoghi, Whiteson, Munos,
    # de Rijke, ICML 2014, Theorem 1), 0.51 sits just above; the RCS paper's experiments use 0.501.
    "alpha": 0.51,
}
OPTIONS = {}


class RUCBState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = times i beat j
    hypothesis: jax.Array  # [] i32, the arm in B, or -1 when B is empty
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"]) -> RUCBState:
    """Empty scoresheet for ``K = num_arms``; ``alpha > 0`` (the paper uses 0.501 with RCS)."""
    del key
    check_number("alpha", alpha, low=0)
    check_int("num_arms", num_arms, minimum=2)
    return RUCBState(jnp.zeros((num_arms, num_arms), jnp.float32), jnp.int32(-1),
                     jnp.zeros((), jnp.int32), jnp.asarray(alpha, jnp.float32))


def upper_bounds(wins, t, alpha):
    """``U [K, K]`` at 1-based step ``t`` (diagonal 1/2)."""
    upper = ucb_from_counts(wins, wins + wins.T, t, alpha)
    return jnp.where(jnp.eye(wins.shape[0], dtype=bool), 0.5, upper)


def step(key, state: RUCBState, env):
    """One round of RUCB (Zoghi, Whiteson, Munos, de Rijke, ICML 2014, Algorithm 1).

    With ``U`` at step ``t`` (``x/0 := 1``, ``U_ii = 1/2``) the candidates are
    ``C = {c : U_cj >= 1/2 ∀j}`` and the hypothesised best arm is kept only if it is still in ``C``
    (``B ← B ∩ C``). A single candidate is ``c`` and becomes ``B``; among several, ``c`` is ``B``
    with probability 1/2 and otherwise uniform over ``C \\ B`` (uniform over ``C`` when ``B`` is
    empty); when ``C`` is empty, ``c`` is uniform over all arms and ``B`` stays empty. The opponent
    is ``d = argmax_j U_jc``, ties uniform and never ``c`` itself on a tie. ``c`` and ``d`` duel and
    ``W_cd`` or ``W_dc`` gains one.

    Args:
      key: this step's PRNG key.
      state: the ``RUCBState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = c`` and ``second = d``,
      all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_empty, u_coin, u_other, u_opponent, u_duel = prng.uniform(key_draws, (5,))
    num_arms = state.wins.shape[0]
    arms = jnp.arange(num_arms)
    t = state.t + 1
    upper = upper_bounds(state.wins, t, state.alpha)

    candidates = jnp.all(upper >= 0.5, axis=1)  # [K]
    # B <- B ∩ C; an empty C empties B, and the uniform fallback arm does not join C or B.
    kept = (state.hypothesis >= 0) & candidates[jnp.maximum(state.hypothesis, 0)]
    hypothesis = jnp.where(kept, state.hypothesis, -1)
    single = jnp.sum(candidates) == 1
    others = candidates & (arms != hypothesis)
    fallback = jnp.floor(u_empty * num_arms).astype(jnp.int32)
    champion = jnp.where(
        ~jnp.any(candidates), fallback,
        jnp.where(single, jnp.argmax(candidates).astype(jnp.int32),
                  jnp.where((hypothesis >= 0) & (u_coin < 0.5), hypothesis, random_choice(u_other, others))))
    hypothesis = jnp.where(single, champion, hypothesis)

    column = upper[:, champion]
    best = column == jnp.max(column)
    best = jnp.where(jnp.sum(best) > 1, best & (arms != champion), best)
    opponent = random_choice(u_opponent, best)

    first_won = duel(key_env, env, u_duel, champion, opponent)
    wins = record_duel(state.wins, champion, opponent, first_won)
    return state._replace(wins=wins, hypothesis=hypothesis, t=t), StepInfo(champion, opponent, first_won)


def best_arm(key, state: RUCBState) -> jax.Array:
    """``argmax_c #{j : W_cj / (W_cj + W_jc) > 1/2}``, ties uniform."""
    return copeland_guess(state.wins, prng.uniform(key))


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
