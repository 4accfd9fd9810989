"""Copeland Confidence Bound (Zoghi, Karnin, Whiteson, de Rijke, "Copeland Dueling Bandits", NIPS
2015, Algorithm 1): regret against the Copeland winner, so no Condorcet winner is needed.

Each step ``t`` (1-based), with ``W`` the win matrix (``W_ij`` = times i beat j):

* line 6: ``U = W/N + sqrt(α ln t / N)``, ``L = W/N - sqrt(α ln t / N)``, ``N = W + Wᵀ``,
  ``x/0 := 1`` for each fraction (an unexplored pair has ``U = 2``, ``L = 0``), ``u_ii = l_ii = 1/2``;
* line 7: optimistic and pessimistic Copeland scores ``Cpld(i) = #{k != i : u_ik >= 1/2}`` and
  ``cpld(i) = #{k != i : l_ik >= 1/2}``; line 8: ``C_t = argmax Cpld`` (all maximisers);
* line 9, the hypotheses: ``B_t`` (arms that may be Copeland winners), for each arm ``i`` the set
  ``B_t^i`` of arms believed to beat it, and ``L_C`` (losses of a Copeland winner), updated by
  A. reset ``B_t = all``, ``B_t^k = ∅``, ``L_C = K`` if some ``a_j ∈ B_t^i`` has ``l_ij > 1/2``;
  B. remove every ``i ∈ B_t`` with ``Cpld(i) < cpld(j)`` for some ``j``, and for such an ``i`` with
  ``|B_t^i| != L_C + 1`` set ``B_t^i = {k : u_ik < 1/2}`` (reset if ``B_t`` empties);
  C. every ``i ∈ C_t`` with ``cpld(i) = Cpld(i)`` joins ``B_t`` with ``B_t^i = ∅`` and sets
  ``L_C = K - 1 - Cpld(i)``; every other ``B_t^j`` with fewer than ``L_C + 1`` arms is emptied,
  and one with more keeps ``L_C + 1`` of them drawn uniformly;
* line 10: with probability 1/4, ``(c, d)`` uniform over ``{(i, j) : a_j ∈ B_t^i, l_ij <= 1/2 <= u_ij}``
  if that set is not empty;
* otherwise lines 11-13: ``C_t ← B_t ∩ C_t`` with probability 2/3 when that is not empty; ``c``
  uniform in ``C_t``; with probability 1/2 the opponent set is ``B_t^c``, else all arms, and
  ``d = argmax u_jc`` over its arms with ``l_jc <= 1/2`` (ties uniform, never ``c`` on a tie);
* line 14: ``c`` and ``d`` duel and ``W`` is updated.

Report rule (the paper's "Return"): the arm beating the most others on the scoresheet,
``argmax_i #{j : W_ij > W_ji}``, ties uniform. The analysis needs ``α > 1/2``.

Resolved ambiguities [ours]: when the ``B_t^c`` half of line 13 leaves no arm with ``l_jc <= 1/2``
(``B_t^c`` is set to arms that confidently beat ``c``, so right after it is set none qualifies),
``d`` is taken over all arms, as Wu & Liu's (NIPS 2016) CCB simulation code does (duelpy 1.0.0
returns the lowest index instead); the line-B refresh of ``B_t^i`` applies to removed arms only,
as the pseudo-code nests it (duelpy refreshes every arm of ``B_t``). Several arms added in one step
(line 9C) share ``Cpld`` (they are all in ``C_t``), so adding them one by one or together gives the
same sets. The ``L_C + 1`` arms kept in an over-full ``B_t^j`` are the members with the smallest
of fresh uniforms, drawn only in the (rare) steps that need them.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import copeland_guess, duel, record_duel, split_step_key
from jaxrank.bandits.dts import confidence_bounds
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_choice
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # Confidence-bound exploration: the analysis needs α > 1/2 (Zoghi, Karnin, Whiteson, de Rijke, NIPS
    # 2015, Theorem 1), 0.51 sits just above, as in tests/reference/copeland_bandits.py.
    "alpha": 0.51,
}
OPTIONS = {}


class CCBState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = W_ij = times i beat j
    potential: jax.Array  # [K] bool, B_t: arms that may be Copeland winners
    beaten_by: jax.Array  # [K, K] bool, row i = B_t^i, arms believed to beat arm i
    max_losses: jax.Array  # [] i32, L_C: losses of a Copeland winner (K when unknown)
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, confidence-bound exploration α > 1/2


class Hypotheses(NamedTuple):
    """``(B_t, {B_t^i}, L_C)`` of Algorithm 1, line 9."""

    potential: jax.Array  # [K] bool
    beaten_by: jax.Array  # [K, K] bool
    max_losses: jax.Array  # [] i32


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"]) -> CCBState:
    """Empty scoresheet for ``K = num_arms``, ``B_1`` = all arms, ``B_1^i = ∅``, ``L_C = K``; ``α > 1/2``."""
    del key
    check_number("alpha", alpha, low=0.5, fix="CCB's confidence bounds need alpha > 1/2 (the paper's Theorem 1)")
    check_int("num_arms", num_arms, minimum=2)
    reset = _reset(num_arms)
    return CCBState(jnp.zeros((num_arms, num_arms), jnp.float32), reset.potential, reset.beaten_by,
                    reset.max_losses, jnp.zeros((), jnp.int32), jnp.asarray(alpha, jnp.float32))


def _reset(num_arms: int) -> Hypotheses:
    return Hypotheses(jnp.ones(num_arms, bool), jnp.zeros((num_arms, num_arms), bool), jnp.int32(num_arms))


def _where(flag, new: Hypotheses, old: Hypotheses) -> Hypotheses:
    return Hypotheses(*(jnp.where(flag, a, b) for a, b in zip(new, old)))


def copeland_bounds(upper: jax.Array, lower: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(Cpld, cpld)``, both ``[K]`` i32: ``#{k != i : u_ik >= 1/2}`` and ``#{k != i : l_ik >= 1/2}`` (line 7)."""
    off = ~jnp.eye(upper.shape[0], dtype=bool)
    return (jnp.sum((upper >= 0.5) & off, axis=1).astype(jnp.int32),
            jnp.sum((lower >= 0.5) & off, axis=1).astype(jnp.int32))


def _keep_random(key, beaten_by: jax.Array, rows: jax.Array, keep: jax.Array) -> jax.Array:
    """Rows ``rows [K]`` of ``beaten_by`` keep ``keep`` of their members, a uniform subset.

    A while loop that runs once when some row needs it and never otherwise: under ``vmap`` the
    ``[K, K]`` uniforms and sorts are paid only in the steps where some lane trims.
    """

    def body(carry):
        sets, todo = carry
        priority = jnp.where(sets, jax.random.uniform(key, sets.shape), 2.0)
        rank = jnp.argsort(jnp.argsort(priority, axis=1), axis=1)
        return jnp.where(todo[:, None], sets & (rank < keep), sets), jnp.zeros_like(todo)

    return jax.lax.while_loop(lambda c: jnp.any(c[1]), body, (beaten_by, rows))[0]


def update_hypotheses(key, hyp: Hypotheses, upper: jax.Array, lower: jax.Array) -> Hypotheses:
    """Algorithm 1, line 9 (A: reset disproven hypotheses, B: remove non-Copeland winners, C: add
    Copeland winners) from the bounds ``upper``, ``lower`` ``[K, K]`` of this step.

    ``key`` draws the uniform subsets of over-full ``B_t^j`` (9C).
    """
    num_arms = upper.shape[0]
    reset = _reset(num_arms)
    up_score, lo_score = copeland_bounds(upper, lower)
    top = up_score == jnp.max(up_score)  # C_t

    # A. some arm believed to beat i is now confidently beaten by i.
    hyp = _where(jnp.any(hyp.beaten_by & (lower > 0.5)), reset, hyp)

    # B. arms whose optimistic score is below someone's pessimistic score leave B_t; their B_t^i
    # becomes the arms that confidently beat them unless it already holds L_C + 1 arms.
    removed = hyp.potential & (up_score < jnp.max(lo_score))
    refresh = removed & (jnp.sum(hyp.beaten_by, axis=1) != hyp.max_losses + 1)
    hyp = hyp._replace(potential=hyp.potential & ~removed,
                       beaten_by=jnp.where(refresh[:, None], upper < 0.5, hyp.beaten_by))
    hyp = _where(~jnp.any(hyp.potential), reset, hyp)

    # C. arms of C_t whose score is known exactly join B_t and fix L_C.
    added = top & (lo_score == up_score)
    any_added = jnp.any(added)
    max_losses = jnp.where(any_added, num_arms - 1 - jnp.max(up_score), hyp.max_losses).astype(jnp.int32)
    beaten_by = hyp.beaten_by & ~added[:, None]
    size = jnp.sum(beaten_by, axis=1)
    beaten_by = jnp.where((any_added & (size < max_losses + 1))[:, None], False, beaten_by)
    beaten_by = _keep_random(key, beaten_by, any_added & (size > max_losses + 1), max_losses + 1)
    return Hypotheses(hyp.potential | added, beaten_by, max_losses)


def choose(hyp: Hypotheses, upper: jax.Array, lower: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Lines 10-13: the duel ``(c, d)`` from the updated hypotheses, both ``[]`` i32.

    ``u [6]`` uniforms in [0, 1), in this order: line 10's 1/4 coin, its pair, line 11's 2/3 coin,
    ``c``, line 13's 1/2 coin (``< 1/2``: ``B_t^c``), ``d``'s tie-break.
    """
    u_explore, u_pair, u_narrow, u_first, u_set, u_second = u[0], u[1], u[2], u[3], u[4], u[5]
    num_arms = upper.shape[0]
    arms = jnp.arange(num_arms)
    up_score, _ = copeland_bounds(upper, lower)
    top = up_score == jnp.max(up_score)

    # Line 10: re-check a hypothesised loss that is no longer confident.
    doubtful = hyp.beaten_by & (lower <= 0.5) & (upper >= 0.5)  # [K, K] pairs (i, j)
    pair = random_choice(u_pair, doubtful.reshape(-1))
    use_pair = jnp.any(doubtful) & (u_explore < 0.25)

    # Lines 11-12.
    both = hyp.potential & top
    first = random_choice(u_first, jnp.where(jnp.any(both) & (u_narrow < 2.0 / 3.0), both, top))

    # Line 13: the most optimistic challenger that c has not confidently beaten.
    plausible = lower[:, first] <= 0.5  # includes c itself (l_cc = 1/2)
    listed = plausible & hyp.beaten_by[first]
    allowed = jnp.where((u_set < 0.5) & jnp.any(listed), listed, plausible)
    column = upper[:, first]
    best = allowed & (column == jnp.max(jnp.where(allowed, column, -jnp.inf)))
    best = jnp.where(jnp.sum(best) > 1, best & (arms != first), best)
    second = random_choice(u_second, best)

    return (jnp.where(use_pair, pair // num_arms, first).astype(jnp.int32),
            jnp.where(use_pair, pair % num_arms, second).astype(jnp.int32))


def step(key, state: CCBState, env):
    """One round of CCB (Zoghi, Karnin, Whiteson, de Rijke, NIPS 2015, Algorithm 1, lines 6-14).

    The bounds ``U``, ``L`` at step ``t`` update the hypotheses ``B_t``, ``B_t^i``, ``L_C``
    (``update_hypotheses``), which pick the duel ``(c, d)`` (``choose``, with the uniforms
    ``prng.uniform(key, (7,))[:6]``; the seventh plays the duel).

    Args:
      key: this step's PRNG key.
      state: the ``CCBState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first=c, second=d, first_won)``, all ``[]`` (i32, i32, bool).
    """
    key_draws, key_hypotheses, key_env = split_step_key(key, 3)
    u = prng.uniform(key_draws, (7,))
    t = state.t + 1
    upper, lower = confidence_bounds(state.wins, t, state.alpha)
    hyp = update_hypotheses(key_hypotheses, Hypotheses(state.potential, state.beaten_by, state.max_losses),
                            upper, lower)
    first, second = choose(hyp, upper, lower, u[:6])
    first_won = duel(key_env, env, u[6], first, second)
    wins = record_duel(state.wins, first, second, first_won)
    return state._replace(wins=wins, potential=hyp.potential, beaten_by=hyp.beaten_by,
                          max_losses=hyp.max_losses, t=t), StepInfo(first, second, first_won)


def best_arm(key, state: CCBState) -> jax.Array:
    """``argmax_i #{j : W_ij > W_ji}``, ties uniform (Algorithm 1, "Return")."""
    return copeland_guess(state.wins, prng.uniform(key))


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
