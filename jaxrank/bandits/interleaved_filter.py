"""Interleaved Filter (Yue, Broder, Kleinberg, Joachims, COLT 2009 / JCSS 2012, Algorithms 1-2).

Explore-then-exploit with a known horizon ``T`` and ``δ = 1/(T K²)`` (Algorithm 1/2, line 2).
A candidate ``b̂`` (uniform at random, line 3) is compared round-robin with every arm of the
working set ``W = B \\ {b̂}`` (lines 7-11: one *pass* is one duel of ``b̂`` with each arm of
``W``, in index order here). After each pass, with ``P̂_b̂b`` the fraction of the ``n`` duels
of the current round that ``b̂`` won and the radius ``c_n = sqrt(log(1/δ) / n)`` (eq. 7-8):

* lines 12-14: every ``b`` with ``P̂_b̂b > 1/2`` and ``1/2 ∉ (P̂ - c, P̂ + c)`` leaves ``W``;
* lines 15-21: if some ``b'`` has ``P̂_b̂b' < 1/2`` and ``1/2 ∉ Ĉ``, it becomes the new
  candidate (``W ← W \\ {b'}``; the old ``b̂`` is discarded) and all estimates restart from zero.
  IF2 (Algorithm 2, the default) first also drops every ``b`` with ``P̂_b̂b > 1/2``
  ("pruning"); IF1 keeps them.

When ``W`` is empty the candidate is exploited (duelled with itself) until ``T``; ``best_arm``
is always the current candidate, which is what IF returns at the horizon.

Resolved ambiguities [ours]: several arms may beat ``b̂`` confidently in the same pass; the one
with the lowest ``P̂_b̂b'`` (the clearest winner) is taken, ties uniform. The pass visits ``W``
in index order (the paper leaves the order of ``for b ∈ W`` open). The checks run only at the
end of a pass, exactly as in the pseudo-code, so all arms of ``W`` have the same count ``n``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import duel, flag_variants, pick_flag, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmin, random_choice
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # T, the number of steps of the run (δ = 1/(T K²); Yue et al., JCSS 2012, Algorithms 1-2, line 2); the paper has no default:
    # run_sweep sets num_steps unless given, and 10^6 stands in for a direct init(key, K).
    "horizon": 1e6,
}
OPTIONS = {
    # True: IF2 (Algorithm 2, prunes on a candidate switch); False: IF1 (Algorithm 1).
    "if2": True,
}


class IFState(NamedTuple):
    candidate: jax.Array  # [] i32, b̂
    remaining: jax.Array  # [K] bool, W (never contains b̂); empty = exploit
    pending: jax.Array  # [K] bool, arms of W not yet duelled in the current pass
    round_wins: jax.Array  # [K] f32, wins of b̂ over b since b̂ became the candidate
    round_counts: jax.Array  # [K] f32, duels of b̂ with b since b̂ became the candidate
    t: jax.Array  # [] i32, duels so far
    horizon: jax.Array  # [] f32, T (sets δ = 1/(T K²))
    if2: jax.Array  # [] f32, 1: IF2 pruning on a candidate switch, 0: IF1


def init(key, num_arms: int, *, horizon=HPARAMS["horizon"], if2=OPTIONS["if2"]) -> IFState:
    """Random candidate and ``W = all other arms``. ``horizon`` (T >= 1) is required."""
    if horizon is None:
        raise ValueError("Interleaved Filter needs the horizon T: init(..., horizon=T) "
                         "(jaxrank.bandits.run_sweep sets it to num_steps unless given).")
    check_number("horizon", horizon, low=1, low_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    arms = jnp.arange(num_arms)
    candidate = random_choice(prng.uniform(key), jnp.ones(num_arms, bool))
    remaining = arms != candidate
    zeros = jnp.zeros(num_arms, jnp.float32)
    return IFState(
        candidate=candidate,
        remaining=remaining,
        pending=remaining,
        round_wins=zeros,
        round_counts=zeros,
        t=jnp.zeros((), jnp.int32),
        horizon=jnp.asarray(horizon, jnp.float32),
        if2=jnp.asarray(if2, jnp.float32),
    )


def confidence_radius(counts: jax.Array, log_inv_delta: jax.Array) -> jax.Array:
    """``c_n = sqrt(log(1/δ) / n)`` (eq. 8), elementwise; ``+inf`` where ``n = 0``."""
    safe = jnp.where(counts > 0, counts, 1.0)
    return jnp.where(counts > 0, jnp.sqrt(log_inv_delta / safe), jnp.inf)


def _log_inv_delta(state: IFState) -> jax.Array:
    num_arms = state.remaining.shape[0]
    return jnp.log(state.horizon) + 2.0 * jnp.log(jnp.float32(num_arms))


def _end_of_pass(candidate, remaining, round_wins, round_counts, log_inv_delta, if2, u):
    """Lines 12-21 after a completed pass: prune, maybe switch candidate (and reset)."""
    counts = jnp.where(remaining, round_counts, 0.0)
    p_hat = jnp.where(counts > 0, round_wins / jnp.where(counts > 0, counts, 1.0), 0.5)
    c = confidence_radius(counts, log_inv_delta)
    # Lines 12-14: arms that b̂ beats with 1/2 outside the confidence interval.
    beaten = remaining & (p_hat > 0.5) & (p_hat - c > 0.5)
    remaining = remaining & ~beaten
    # Line 15: arms that beat b̂ confidently; take the clearest one (ties uniform).
    winners = remaining & (p_hat < 0.5) & (p_hat + c < 0.5)
    switch = jnp.any(winners)
    challenger = random_argmin(u, p_hat, winners)
    # IF2 lines 16-18: on a switch, also drop every arm that lost to the old b̂ on average.
    pruned = remaining & (p_hat > 0.5) & (if2 > 0.5)
    arms = jnp.arange(remaining.shape[0])
    switched = remaining & ~pruned & (arms != challenger)  # line 19: W ← W \ {b'}
    remaining = jnp.where(switch, switched, remaining)
    candidate = jnp.where(switch, challenger, candidate)
    # Line 20: a new round restarts every estimate against the new b̂.
    round_wins = jnp.where(switch, 0.0, round_wins)
    round_counts = jnp.where(switch, 0.0, round_counts)
    return candidate, remaining, round_wins, round_counts


def step(key, state: IFState, env):
    """One duel of Interleaved Filter (Yue, Broder, Kleinberg, Joachims, JCSS 2012, Algorithms 1-2).

    The candidate ``b̂`` duels the next arm of the current pass over ``W`` (index order, our
    choice; the paper's ``for b ∈ W``, lines 7-11), and ``b̂``'s wins and count against that arm
    grow. When the pass is complete, lines 12-21 run: arms that ``b̂`` beats confidently leave
    ``W``; if some arm beats ``b̂`` confidently, the clearest one (lowest ``P̂_b̂b'``, ties uniform:
    our choice when there are several) becomes the candidate, IF2 also drops the arms with
    ``P̂_b̂b > 1/2``, and all estimates restart. With ``W`` empty, ``b̂`` duels itself.

    Args:
      key: this step's PRNG key.
      state: the ``IFState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = b̂`` (before any switch) and ``second``
      its opponent, all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_switch, u_duel = prng.uniform(key_draws, (2,))
    arms = jnp.arange(state.remaining.shape[0])
    exploring = jnp.any(state.remaining)

    # Next arm of the pass (index order); once W is empty, exploit b̂ by a self-duel.
    opponent = jnp.where(exploring, jnp.argmax(state.pending).astype(jnp.int32), state.candidate)
    first_won = duel(key_env, env, u_duel, state.candidate, opponent)

    hit = (arms == opponent) & exploring
    round_wins = state.round_wins + jnp.where(hit & first_won, 1.0, 0.0)
    round_counts = state.round_counts + hit.astype(jnp.float32)
    pending = state.pending & ~hit
    pass_done = exploring & ~jnp.any(pending)

    after = _end_of_pass(state.candidate, state.remaining, round_wins, round_counts,
                         _log_inv_delta(state), state.if2, u_switch)
    candidate, remaining, round_wins, round_counts = jax.tree.map(
        lambda new, old: jnp.where(pass_done, new, old), after,
        (state.candidate, state.remaining, round_wins, round_counts))
    pending = jnp.where(pass_done, remaining, pending)  # the next pass visits all of W

    new_state = state._replace(candidate=candidate, remaining=remaining, pending=pending,
                               round_wins=round_wins, round_counts=round_counts, t=state.t + 1)
    return new_state, StepInfo(state.candidate, opponent, first_won)


def best_arm(key, state: IFState) -> jax.Array:
    """The current candidate ``b̂`` (what IF returns when stopped)."""
    del key
    return state.candidate


_VARIANTS = flag_variants(init, step, best_arm, "if2")


def make(*, if2: bool = OPTIONS["if2"]) -> Bandit:
    """The algorithm as a ``Bandit`` with ``if2`` bound."""
    return pick_flag(_VARIANTS, "if2", if2)
