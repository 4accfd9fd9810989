"""Relative Confidence Sampling (Zoghi, Whiteson, de Rijke, Munos, WSDM 2014, Algorithm 1).

Each step: (I) a simulated round-robin tournament with ``Θ_ij ~ Beta(W_ij + 1, W_ji + 1)``
picks a champion ``c`` (the arm with ``Θ_cj >= 1/2`` for all j), or the least-often champion
if there is none; (II) the opponent is ``d = argmax_j U_jc`` of the RUCB upper bounds; (III)
``c`` and ``d`` duel. Report rule (explore-then-exploit): the arm beating the most others on
the scoresheet.

Exact O(K) tournament: the events "i beats every other arm" are disjoint almost surely and
the pairs are independent, so the champion is one categorical draw with
``P(c = i) = prod_{j != i} q_ij``, ``q_ij = P(Beta(W_ij + 1, W_ji + 1) >= 1/2)``, and "no
champion" with the remaining mass. A duel changes one pair, so the state keeps ``log q`` and
its row sums (and their exponentials) and refreshes two entries and two rows per step instead of
drawing K(K-1)/2 Betas; the categorical draw searches the running sums in ``sqrt(K)`` blocks.

``lerot=True`` follows Lerot's ``RelativeConfidenceSampler``: wins start at 1 (a Beta(2, 2)
prior that also enters U) and the champion counter only counts fallback picks.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import copeland_guess, duel, flag_variants, pick_flag, record_duel, ucb_from_counts, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import log_prob_beta_at_least_half, prng, random_argmax, random_argmin
from jaxrank.utils.checks import check_int, check_number
from jaxrank.utils.choice import first_passing

HPARAMS = {
    # UCB exploration of step II: RUCB's regret bound needs α > 1/2 (Zoghi et al., ICML 2014, Theorem 1),
    # 0.51 sits just above; the RCS paper's experiments use 0.501 (WSDM 2014, §5), which rcs_regret sets.
    "alpha": 0.51,
}
OPTIONS = {
    # True: Lerot's RelativeConfidenceSampler (one-win prior on every pair; N counts fallback picks only).
    "lerot": False,
}


class RCSState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = times i beat j
    champion_counts: jax.Array  # [K] f32, N_i
    log_q: jax.Array  # [K, K] f32, log P(Θ_ij >= 1/2); 0 on the diagonal
    log_champion: jax.Array  # [K] f32, log P(i beats all) = sum_j log_q[i, j]
    champion_prob: jax.Array  # [K] f32, exp(log_champion), refreshed with it
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, UCB exploration
    prior: jax.Array  # [] f32, pseudo-wins added to every count (0 paper, 1 Lerot)
    count_all: jax.Array  # [] f32, 1: N counts every champion (paper), 0: only fallbacks (Lerot)


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"], lerot: bool = OPTIONS["lerot"]) -> RCSState:
    """Empty scoresheet for ``K = num_arms``. ``alpha > 0`` (the paper uses 0.501); ``lerot`` is the
    static option that ``make`` binds."""
    del key
    check_number("alpha", alpha, low=0)
    check_int("num_arms", num_arms, minimum=2)
    prior = 1.0 if lerot else 0.0
    off_diagonal = 1.0 - jnp.eye(num_arms)
    log_q = off_diagonal * log_prob_beta_at_least_half(prior + 1.0, prior + 1.0)
    return RCSState(
        wins=jnp.zeros((num_arms, num_arms), jnp.float32),
        champion_counts=jnp.zeros(num_arms, jnp.float32),
        log_q=log_q,
        log_champion=jnp.sum(log_q, axis=1),
        champion_prob=jnp.exp(jnp.sum(log_q, axis=1)),
        t=jnp.zeros((), jnp.int32),
        alpha=jnp.asarray(alpha, jnp.float32),
        prior=jnp.asarray(prior, jnp.float32),
        count_all=jnp.asarray(0.0 if lerot else 1.0, jnp.float32),
    )


def with_wins(state: RCSState, wins: jax.Array) -> RCSState:
    """``state`` with the scoresheet ``wins [K, K]`` and its tournament probabilities recomputed (O(K²))."""
    wins = jnp.asarray(wins, jnp.float32)
    a = wins + state.prior + 1.0
    log_q = (1.0 - jnp.eye(wins.shape[0])) * log_prob_beta_at_least_half(a, a.T)
    log_champion = jnp.sum(log_q, axis=1)
    return state._replace(wins=wins, log_q=log_q, log_champion=log_champion, champion_prob=jnp.exp(log_champion))


def champion_probabilities(state: RCSState) -> jax.Array:
    """``[K]`` probability that each arm wins the simulated tournament (the rest: no champion)."""
    return jnp.exp(state.log_champion)


def _least_chosen(counts: jax.Array, u: jax.Array, needed: jax.Array) -> jax.Array:
    """``argmin counts`` (ties uniform by ``u``) when ``needed``, else 0. A ``while`` loop of at most
    one trip: under ``vmap`` it runs only on the steps where some lane has no champion."""

    def pick(carry):
        # Masked by the loop's own flag, so XLA cannot hoist the search out of the loop.
        return random_argmin(u, counts, jnp.broadcast_to(carry[1], counts.shape)), jnp.zeros((), bool)

    return jax.lax.while_loop(lambda carry: carry[1], pick, (jnp.zeros((), jnp.int32), needed))[0]


def step(key, state: RCSState, env):
    """One round of RCS (Zoghi, Whiteson, de Rijke, Munos, WSDM 2014, Algorithm 1).

    I (lines 4-10): the simulated round-robin tournament, ``Θ_ij ~ Beta(W_ij + 1, W_ji + 1)``, is
    drawn exactly as one categorical over "arm ``i`` beats every other arm" (probability
    ``prod_j P(Θ_ij >= 1/2)``) and "no champion"; without a champion, ``c`` is the arm chosen
    champion least often (ties uniform). ``N_c`` then grows by one (with ``lerot=True`` only after
    such a fallback pick). II (lines 12-14): ``d = argmax_j U_jc`` of the RUCB bound at step ``t``
    (``x/0 := 1``, ``U_cc = 1/2``), ties uniform (the paper does not say how ties break; ``d = c``
    is possible). III (line 16): ``c`` and ``d`` duel, ``W_cd`` or ``W_dc`` gains one, and the
    tournament probabilities of the two arms are refreshed.

    Args:
      key: this step's PRNG key.
      state: the ``RCSState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = c`` (champion) and ``second = d``,
      all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_champion, u_fallback, u_opponent, u_duel = prng.uniform(key_draws, (4,))
    num_arms = state.wins.shape[0]
    t = state.t + 1

    # I. Tournament: one categorical draw over {arm 0 .. arm K-1, no champion} (inverse CDF).
    probs = state.champion_prob  # = champion_probabilities(state), kept up to date
    has_champion = u_champion < jnp.sum(probs)
    champion = jnp.where(
        has_champion,
        first_passing(probs, u_champion),
        _least_chosen(state.champion_counts, u_fallback, ~has_champion),
    )
    counted = jnp.where(has_champion, state.count_all, 1.0)
    champion_counts = state.champion_counts.at[champion].add(counted)

    # II. Opponent: the arm with the highest upper bound relative to the champion.
    wins_vs = state.wins[:, champion] + state.prior  # [K] W_jc
    losses_vs = state.wins[champion, :] + state.prior  # [K] W_cj
    upper = ucb_from_counts(wins_vs, wins_vs + losses_vs, t, state.alpha)
    upper = jnp.where(jnp.arange(num_arms) == champion, 0.5, upper)
    opponent = random_argmax(u_opponent, upper)

    # III. Duel and refresh the one pair whose counts changed.
    first_won = duel(key_env, env, u_duel, champion, opponent)
    wins = record_duel(state.wins, champion, opponent, first_won)
    a = wins[champion, opponent] + state.prior + 1.0
    b = wins[opponent, champion] + state.prior + 1.0
    distinct = champion != opponent  # a self-duel leaves the tournament unchanged
    log_q = state.log_q.at[champion, opponent].set(
        jnp.where(distinct, log_prob_beta_at_least_half(a, b), 0.0))
    log_q = log_q.at[opponent, champion].set(
        jnp.where(distinct, log_prob_beta_at_least_half(b, a), 0.0))
    row_champion, row_opponent = jnp.sum(log_q[champion]), jnp.sum(log_q[opponent])
    log_champion = state.log_champion.at[champion].set(row_champion).at[opponent].set(row_opponent)
    champion_prob = state.champion_prob.at[champion].set(jnp.exp(row_champion)).at[opponent].set(jnp.exp(row_opponent))

    new_state = state._replace(wins=wins, champion_counts=champion_counts, log_q=log_q, log_champion=log_champion,
                               champion_prob=champion_prob, t=t)
    return new_state, StepInfo(champion, opponent, first_won)


def best_arm(key, state: RCSState) -> jax.Array:
    """Explore-then-exploit report: ``argmax_i #{j : W_ij > W_ji}``, ties uniform."""
    return copeland_guess(state.wins, prng.uniform(key))


_VARIANTS = flag_variants(init, step, best_arm, "lerot")


def make(*, lerot: bool = OPTIONS["lerot"]) -> Bandit:
    """RCS as a ``Bandit``: the paper's (``lerot=False``) or Lerot's variant."""
    return pick_flag(_VARIANTS, "lerot", lerot)
