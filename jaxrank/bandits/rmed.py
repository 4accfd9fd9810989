"""RMED1 (Komiyama, Honda, Kashima, Nakagawa, COLT 2015, "Regret Lower Bound and Optimal Algorithm
in Dueling Bandit Problem", Algorithm 1 with the RMED1 subroutine, Algorithm 2).

Notation: ``N_ij`` comparisons of the pair, ``μ̂_ij = W_ij / N_ij`` the empirical probability that i
beats j, ``d(p, q)`` the Bernoulli KL divergence, ``Ô_i = {j != i : μ̂_ij <= 1/2}`` the arms that
empirically beat (or tie) i, and the empirical divergence

    I_i(t) = Σ_{j ∈ Ô_i} N_ij d(μ̂_ij, 1/2),        Î*(t) = min_i I_i(t),

so that ``exp(-I_i)`` is the likelihood that i is the Condorcet winner.

* Initial phase (L = 1): the ``K(K-1)/2`` pairs ``(i, j)``, ``i < j``, are each drawn once
  in lexicographic order.
* Main loop: the arms of the current list ``L_C`` are drawn in a fixed order (here:
  increasing index) as ``l(t)``; ``L_R`` holds the arms of ``L_C`` not yet drawn in this loop. After
  the duel, ``l(t)`` leaves ``L_R`` and every arm ``j ∉ L_R`` with

      I_j(t) - Î*(t) <= log t + f(K),     f(K) = kweight · K^1.01  (paper: kweight = 0.3)   (eq. 4)

  joins the next list ``L_N``. When ``L_R`` is empty, ``L_C, L_R <- L_N`` and ``L_N <- ∅``. The
  arm minimising ``I`` always satisfies (4) and has left ``L_R`` by the loop's last step, so the next
  list is never empty. ``t`` is the 1-based index of the duel just played.
* Algorithm 2 (RMED1's opponent): ``m(t) = argmin_{j ∈ Ô_l} μ̂_{l,j}`` (the arm that beats ``l`` the
  most; ties uniform), and ``m(t) = l(t)`` — a self-duel, which costs nothing when ``l`` is the
  Condorcet winner — when ``Ô_l`` is empty, i.e. when ``l`` is the empirical Condorcet winner. This
  matches the comparison target ``j*(i) = argmin_j μ_ij`` in the paper's RMED1 regret bound.
  ``leader_first=True`` instead follows the authors' C++ library (``duelingbanditlib``,
  ``policy_rmed.hpp``): duel ``î* = argmin_i I_i`` if ``î* ∈ Ô_l``, else the arm above, else ``î*``.

Lists are ``[K]`` bool masks. Report rule: ``î*(t) = argmin_i I_i(t)``, ties uniform (unexplored
pairs are left out of ``I``). duelpy 1.0.0's RMED1 keeps a single index in its opponent set.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import xlogy

from jaxrank.bandits.base import duel, flag_variants, pick_flag, record_duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmin
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # f(K) = kweight · K^1.01 of the next-list rule (eq. 4): kweight = 0.3 (Komiyama et al., COLT 2015, §6).
    "kweight": 0.3,
}
OPTIONS = {
    # True: the opponent rule of the authors' duelingbanditlib (policy_rmed.hpp) instead of Algorithm 2's.
    "leader_first": False,
}


class RMEDState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = times i beat j
    current: jax.Array  # [K] bool, L_C: the arms of the current loop
    remaining: jax.Array  # [K] bool, L_R: arms of L_C not yet drawn in this loop
    upcoming: jax.Array  # [K] bool, L_N: arms for the next loop
    t: jax.Array  # [] i32, duels so far
    kweight: jax.Array  # [] f32, f(K) = kweight * K^1.01
    leader_first: jax.Array  # [] f32, 1: the authors' library opponent rule, 0: the paper's


def init(key, num_arms: int, *, kweight=HPARAMS["kweight"], leader_first=OPTIONS["leader_first"]) -> RMEDState:
    """Empty scoresheet for ``K = num_arms``; ``L_C = L_R = [K]``, ``L_N = ∅`` for the main loop."""
    del key
    check_number("kweight", kweight, low=0, low_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    every = jnp.ones(num_arms, bool)
    return RMEDState(
        wins=jnp.zeros((num_arms, num_arms), jnp.float32),
        current=every,
        remaining=every,
        upcoming=jnp.zeros(num_arms, bool),
        t=jnp.zeros((), jnp.int32),
        kweight=jnp.asarray(kweight, jnp.float32),
        leader_first=jnp.asarray(leader_first, jnp.float32),
    )


def empirical_means(wins: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(μ̂, explored)``, both ``[K, K]``: ``W / (W + Wᵀ)`` (1/2 where unexplored), ``N > 0`` off the diagonal."""
    totals = wins + wins.T
    explored = (totals > 0) & ~jnp.eye(wins.shape[0], dtype=bool)
    return jnp.where(explored, wins / jnp.where(explored, totals, 1.0), 0.5), explored


def divergences(wins: jax.Array) -> jax.Array:
    """``[K]`` empirical divergence ``I_i = Σ_{j ∈ Ô_i} N_ij d(μ̂_ij, 1/2)`` (unexplored pairs skipped)."""
    mean, explored = empirical_means(wins)
    # d(p, 1/2) = p log 2p + (1-p) log 2(1-p); xlogy keeps 0 log 0 = 0 for p in {0, 1}.
    kl = xlogy(mean, 2.0 * mean) + xlogy(1.0 - mean, 2.0 * (1.0 - mean))
    beaten = explored & (mean <= 0.5)
    return jnp.sum(jnp.where(beaten, (wins + wins.T) * kl, 0.0), axis=1)


def opponent(wins: jax.Array, arm: jax.Array, u: jax.Array, leader: jax.Array, leader_first: jax.Array) -> jax.Array:
    """RMED1's ``m(t)`` for ``l(t) = arm`` (Algorithm 2), ties broken by the uniform ``u``.

    Args:
      wins: ``[K, K]`` win matrix (every pair explored).
      arm: ``l(t)``.
      u: uniform in [0, 1) for the tie among the arms that beat ``arm`` the most.
      leader: ``î* = argmin_i I_i``, used when ``leader_first`` is 1.
      leader_first: 0 for the paper's rule, 1 for the authors' library rule.
    """
    mean, explored = empirical_means(wins)
    superior = explored[arm] & (mean[arm] <= 0.5)  # Ô_l
    most_beating = random_argmin(u, mean[arm], superior)
    paper = jnp.where(jnp.any(superior), most_beating, arm)
    library = jnp.where(superior[leader], leader, jnp.where(jnp.any(superior), most_beating, leader))
    return jnp.where(leader_first > 0.5, library, paper).astype(jnp.int32)


def _pair(index: jax.Array, num_arms: int) -> tuple[jax.Array, jax.Array]:
    """The ``index``-th pair ``(i, j)``, ``i < j``, in lexicographic order, in O(K) integer arithmetic.

    Row ``i`` starts at ``i (2K - i - 1) / 2``; ``i`` is the number of later rows that start at or
    before ``index``.
    """
    rows = jnp.arange(1, num_arms, dtype=jnp.int32)
    starts = rows * (2 * num_arms - rows - 1) // 2
    first = jnp.sum(starts <= index).astype(jnp.int32)
    second = index - first * (2 * num_arms - first - 1) // 2 + first + 1
    return first, second.astype(jnp.int32)


def step(key, state: RMEDState, env):
    """One step of RMED1 (Komiyama, Honda, Kashima, Nakagawa, COLT 2015, Algorithms 1-2).

    During the initial phase (the first ``K(K-1)/2`` steps) the pairs ``i < j`` duel once each in
    lexicographic order and the lists do not change. Afterwards ``l(t)`` is the lowest-index arm
    of ``L_R`` (the paper only asks for a fixed order) and its opponent ``m(t)`` comes from
    Algorithm 2 (the arm of ``Ô_l`` beating ``l`` the most, ties uniform, or ``l`` itself when
    ``Ô_l`` is empty; ``leader_first`` gives the authors' library rule). After the duel, with
    ``I`` from the updated counts, ``l(t)`` leaves ``L_R``, every arm outside ``L_R`` meeting
    eq. 4 joins ``L_N``, and an empty ``L_R`` starts the next loop (``L_C, L_R ← L_N``,
    ``L_N ← ∅``).

    Args:
      key: this step's PRNG key.
      state: the ``RMEDState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = l(t)`` and ``second = m(t)`` (or the
      initial-phase pair), all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_opponent, u_leader, u_duel = prng.uniform(key_draws, (3,))
    num_arms = state.wins.shape[0]
    arms = jnp.arange(num_arms)
    t = state.t + 1

    # Initial phase: round robin over the pairs i < j, once each.
    num_pairs = num_arms * (num_arms - 1) // 2
    pair_first, pair_second = _pair(jnp.minimum(state.t, num_pairs - 1), num_arms)
    exploring = state.t < num_pairs

    # Main loop: the next arm of the current loop and its RMED1 opponent (Algorithm 2).
    arm = jnp.argmax(state.remaining).astype(jnp.int32)  # lowest index left: the fixed order
    leader = random_argmin(u_leader, divergences(state.wins))
    rival = opponent(state.wins, arm, u_opponent, leader, state.leader_first)
    first = jnp.where(exploring, pair_first, arm)
    second = jnp.where(exploring, pair_second, rival)

    first_won = duel(key_env, env, u_duel, first, second)
    wins = record_duel(state.wins, first, second, first_won)

    # List bookkeeping (main phase only), with I from the updated counts.
    div = divergences(wins)
    threshold = jnp.log(t.astype(jnp.float32)) + state.kweight * float(num_arms) ** 1.01
    remaining = state.remaining & (arms != arm)
    upcoming = state.upcoming | ((div - jnp.min(div) <= threshold) & ~remaining)
    loop_over = ~jnp.any(remaining)
    current = jnp.where(loop_over, upcoming, state.current)
    remaining = jnp.where(loop_over, upcoming, remaining)
    upcoming = upcoming & ~loop_over

    def keep(new, old):
        return jnp.where(exploring, old, new)

    new_state = state._replace(
        wins=wins,
        current=keep(current, state.current),
        remaining=keep(remaining, state.remaining),
        upcoming=keep(upcoming, state.upcoming),
        t=t,
    )
    return new_state, StepInfo(first, second, first_won)


def best_arm(key, state: RMEDState) -> jax.Array:
    """``î* = argmin_i I_i(t)``, the arm most likely to be the Condorcet winner; ties uniform."""
    return random_argmin(prng.uniform(key), divergences(state.wins))


_VARIANTS = flag_variants(init, step, best_arm, "leader_first")


def make(*, leader_first: bool = OPTIONS["leader_first"]) -> Bandit:
    """The algorithm as a ``Bandit`` with ``leader_first`` bound."""
    return pick_flag(_VARIANTS, "leader_first", leader_first)
