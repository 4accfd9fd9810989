"""Double Thompson Sampling (Wu & Liu, NIPS 2016, "Double Thompson Sampling for Dueling Bandits", Algorithm 1).

Each step ``t`` (1-based), with ``B`` the win matrix (``B_ij`` = times i beat j):

* Phase 1, candidate set: RUCB-style bounds ``U = B/N + sqrt(α ln t / N)`` and
  ``L = B/N - sqrt(α ln t / N)``, ``N = B + Bᵀ``, with ``x/0 := 1`` for each fraction (so an
  unexplored pair has ``U = 2``, ``L = 0``) and ``U_ii = L_ii = 1/2``. The upper Copeland score
  ``ζ̂_i = #{j != i : U_ij > 1/2}`` (the paper divides by ``K - 1``, which does not change the
  argmax) gives the candidates ``C = {i : ζ̂_i = max_j ζ̂_j}``.
* Phase 1, first candidate: ``θ⁽¹⁾_ij ~ Beta(B_ij + 1, B_ji + 1)`` for ``i < j``,
  ``θ⁽¹⁾_ji = 1 - θ⁽¹⁾_ij``; ``k⁽¹⁾ = argmax_{i ∈ C} #{j : θ⁽¹⁾_ij > 1/2}``, ties uniform.
* Phase 2, second candidate: fresh ``θ⁽²⁾_{i,k⁽¹⁾} ~ Beta(B_{i,k⁽¹⁾} + 1, B_{k⁽¹⁾,i} + 1)``
  for ``i != k⁽¹⁾`` — the *column* of ``k⁽¹⁾``: the posterior that ``i`` beats ``k⁽¹⁾`` (duelpy
  1.0.0 reads the row, i.e. the probability that ``k⁽¹⁾`` beats ``i``) — and ``θ⁽²⁾_{k⁽¹⁾k⁽¹⁾} =
  1/2``; ``k⁽²⁾ = argmax θ⁽²⁾_{i,k⁽¹⁾}`` over the arms with ``L_{i,k⁽¹⁾} <= 1/2`` (always including
  ``k⁽¹⁾`` itself, so the champion duels itself when no plausible challenger samples above 1/2).
* Then duel ``(k⁽¹⁾, k⁽²⁾)`` and update ``B``.

This is plain D-TS with uniform tie-breaking (not D-TS⁺'s regret-based ties). Report rule: the
arm with the highest Copeland score on the empirical ``p̂ = B/N`` (``#{j : B_ij > B_ji}``; an
unexplored pair is not a win), ties uniform. The paper states its guarantees for ``α > 1/2``.

Phase 1 needs only the events ``θ⁽¹⁾_ij > 1/2``, which are independent Bernoulli draws with
``P(Beta(B_ij + 1, B_ji + 1) > 1/2)`` (kept in the state and refreshed for the duelled pair, as RCS
does): one uniform per pair instead of one Beta. Phase 2's Beta samples come from
``jaxrank.utils.beta.beta_sample`` (exact in law, for shapes ``>= 1``: all ours are counts + 1).
``jax.random.beta`` gives the same law but runs its rejection loop per element; under ``vmap`` it
made a K = 10 step about 10x slower than everything else together (measured on CPU).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import copeland_guess, duel, record_duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import log_prob_beta_at_least_half, prng, random_argmax
from jaxrank.utils.beta import beta_sample, uniforms
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # Confidence-bound exploration of phase 1: the analysis needs α > 1/2 (Wu & Liu, NIPS 2016, Theorem 1),
    # 0.51 sits just above, as in Wu & Liu's simulation code and tests/reference/dts_rmed.py.
    "alpha": 0.51,
}
OPTIONS = {}


class DTSState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = B_ij = times i beat j
    beat_prob: jax.Array  # [K, K] f32, P(Beta(B_ij + 1, B_ji + 1) > 1/2), refreshed for the duelled pair
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, confidence-bound exploration (paper: α > 1/2)


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"]) -> DTSState:
    """Empty scoresheet for ``K = num_arms``. ``alpha > 0`` (the paper's analysis needs > 1/2)."""
    del key
    check_number("alpha", alpha, low=0)
    check_int("num_arms", num_arms, minimum=2)
    return DTSState(
        wins=jnp.zeros((num_arms, num_arms), jnp.float32),
        beat_prob=jnp.full((num_arms, num_arms), 0.5, jnp.float32),
        t=jnp.zeros((), jnp.int32),
        alpha=jnp.asarray(alpha, jnp.float32),
    )


def confidence_bounds(wins: jax.Array, t: jax.Array, alpha: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(U, L)``, both ``[K, K]``: ``B/N ± sqrt(α ln t / N)`` with ``x/0 := 1``, diagonal 1/2.

    Args:
      wins: ``[K, K]`` win matrix ``B``.
      t: the 1-based step number.
      alpha: exploration constant.
    """
    totals = wins + wins.T
    explored = totals > 0
    safe = jnp.where(explored, totals, 1.0)
    mean = jnp.where(explored, wins / safe, 1.0)
    radius = jnp.sqrt(jnp.where(explored, alpha * jnp.log(t.astype(jnp.float32)) / safe, 1.0))
    diagonal = jnp.eye(wins.shape[0], dtype=bool)
    return jnp.where(diagonal, 0.5, mean + radius), jnp.where(diagonal, 0.5, mean - radius)


def candidates(wins: jax.Array, t: jax.Array, alpha: jax.Array) -> jax.Array:
    """``[K]`` bool, the set ``C`` of arms maximising the upper Copeland score ``#{j : U_ij > 1/2}``."""
    upper, _ = confidence_bounds(wins, t, alpha)
    score = jnp.sum(upper > 0.5, axis=1)  # U_ii = 1/2 never counts
    return score == jnp.max(score)


def _sampled_scores(key, beat_prob: jax.Array) -> jax.Array:
    """``[K]`` ``#{j : θ⁽¹⁾_ij > 1/2}`` of one antisymmetric Thompson sample ``θ⁽¹⁾``.

    Only the events ``θ⁽¹⁾_ij > 1/2`` enter phase 1, and for ``i < j`` they are independent
    Bernoulli(``beat_prob[i, j]``) draws (``θ⁽¹⁾_ji > 1/2`` is the complement), so the ``K(K-1)/2``
    Betas are replaced by as many uniforms: the same law, without gamma rejection loops.
    """
    num_arms = beat_prob.shape[0]
    arms = jnp.arange(num_arms)
    above = arms[:, None] < arms[None, :]  # i < j
    wins_pair = prng.uniform(key, (num_arms, num_arms)) < beat_prob  # read above the diagonal only
    beats = (above & wins_pair) | (above.T & ~wins_pair.T)
    return jnp.sum(beats, axis=1).astype(jnp.float32)


def _prob_beats(wins_ij: jax.Array, wins_ji: jax.Array) -> jax.Array:
    """``P(Beta(W_ij + 1, W_ji + 1) > 1/2)``, elementwise."""
    return jnp.exp(log_prob_beta_at_least_half(wins_ij + 1.0, wins_ji + 1.0))


def with_wins(state: DTSState, wins: jax.Array) -> DTSState:
    """``state`` with the scoresheet ``wins [K, K]`` and its ``beat_prob`` recomputed (O(K²))."""
    wins = jnp.asarray(wins, jnp.float32)
    return state._replace(wins=wins, beat_prob=_prob_beats(wins, wins.T))


def step(key, state: DTSState, env):
    """One round of D-TS (Wu & Liu, NIPS 2016, Algorithm 1).

    Phase 1: the upper bounds ``U`` at step ``t`` give the candidates ``C`` (arms of maximal upper
    Copeland score); one Thompson sample ``θ⁽¹⁾_ij ~ Beta(B_ij + 1, B_ji + 1)`` (``i < j``, mirrored) picks
    the first arm ``k⁽¹⁾``, the arm of ``C`` beating the most others under ``θ⁽¹⁾``, ties uniform
    (drawn as the Bernoulli events ``θ⁽¹⁾_ij > 1/2``, which is all the pick reads).
    Phase 2: a fresh sample of column ``k⁽¹⁾``,
    ``θ⁽²⁾_{i,k⁽¹⁾} ~ Beta(B_{i,k⁽¹⁾} + 1, B_{k⁽¹⁾,i} + 1)`` (``θ⁽²⁾_{k⁽¹⁾,k⁽¹⁾} = 1/2``), picks
    ``k⁽²⁾``, its argmax over the arms with ``L_{i,k⁽¹⁾} <= 1/2``, ties uniform. The two duel and ``B_{k⁽¹⁾k⁽²⁾}`` or ``B_{k⁽²⁾k⁽¹⁾}``
    gains one.

    Args:
      key: this step's PRNG key.
      state: the ``DTSState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = k⁽¹⁾`` and ``second = k⁽²⁾``,
      all ``[]`` (i32, i32, bool).
    """
    key_pick, key_theta1, key_theta2, key_redraw, key_env = split_step_key(key, 5)
    u_first, u_second, u_duel = prng.uniform(key_pick, (3,))
    num_arms = state.wins.shape[0]
    t = state.t + 1
    _, lower = confidence_bounds(state.wins, t, state.alpha)

    # Phase 1: the Copeland winner of one Thompson sample, restricted to the optimistic set C.
    sampled_score = _sampled_scores(key_theta1, state.beat_prob)
    first = random_argmax(u_first, sampled_score, candidates(state.wins, t, state.alpha))

    # Phase 2: relative Thompson sample of "i beats first" (column `first` of B), among the arms
    # not yet confidently beaten by `first`; first itself sits at exactly 1/2.
    theta2 = beta_sample(key_redraw, uniforms(key_theta2, 8 * num_arms), state.wins[:, first] + 1.0,
                         state.wins[first, :] + 1.0)
    is_first = jnp.arange(num_arms) == first
    theta2 = jnp.where(is_first, 0.5, theta2)
    second = random_argmax(u_second, theta2, lower[:, first] <= 0.5)

    first_won = duel(key_env, env, u_duel, first, second)
    wins = record_duel(state.wins, first, second, first_won)
    w_fs, w_sf = wins[first, second], wins[second, first]
    beat_prob = state.beat_prob.at[first, second].set(_prob_beats(w_fs, w_sf))
    beat_prob = beat_prob.at[second, first].set(_prob_beats(w_sf, w_fs))  # a self-duel writes the unread diagonal
    return state._replace(wins=wins, beat_prob=beat_prob, t=t), StepInfo(first, second, first_won)


def best_arm(key, state: DTSState) -> jax.Array:
    """Copeland winner of the empirical ``p̂``: ``argmax_i #{j : B_ij > B_ji}``, ties uniform."""
    return copeland_guess(state.wins, prng.uniform(key))


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
