"""Scalable Copeland Bandits (Zoghi, Karnin, Whiteson, de Rijke, "Copeland Dueling Bandits", NIPS
2015; algorithm numbers of arXiv:1506.00312, whose appendix holds Algorithm 4): the SCB loop
(Algorithm 3) around the approximate Copeland winner search (Algorithm 2), which runs the KL-based
arm elimination of Algorithm 4 on a "virtual" bandit.

* SCB (Algorithm 3): epochs ``r = r0, r0 + 1, ...`` of ``T_r = 2^(2^r)`` duels (4, 16, 256, 65536,
  then unbounded). Each epoch runs the search with failure probability ``δ = ln(T_r) / T_r`` and
  then duels its answer ``b̂`` with itself until the epoch ends (an epoch that ends first starts
  the next search).
* The search (Algorithm 2): arm ``i``'s reward is one draw of ``1{p_ij > 1/2}`` for ``j`` uniform
  among the other arms, so its mean is the normalised Copeland score ``cpld(i)``. To draw it, the
  pair ``(i, j)`` duels until it is resolved at level ``δ / K²``; the test used here is
  ``n d(p̂_ij, 1/2) > ln(4 n K² / δ) + 2 ln max(ln n, 1)`` (``n`` duels of the pair, ``d`` the
  Bernoulli KL divergence), the anytime KL bound of Algorithm 4 applied to one pair [ours: the
  paper asks for "sufficiently many" duels]. A resolved pair gives its reward without a duel.
* The elimination (Algorithm 4): in rounds ``t = 1, 2, ...`` every arm of the candidate set ``S``
  draws one reward; then ``U_i = max{q >= μ̂_i : t d(μ̂_i, q) <= β_t}`` and
  ``L_i = min{q <= μ̂_i : t d(μ̂_i, q) <= β_t}`` with ``β_t = ln(4 t K / δ) + 2 ln max(ln t, 1)``,
  ``S ← S \\ {i : U_i < max_S L}``, and the search stops when ``1 - max_S L <= (1 + ε)(1 - max_S U)``
  returning ``b̂ = argmax_S L`` (ties uniform).

Resolved ambiguities [ours]: the search also stops when ``|S| = 1`` (as duelpy's
``KLDivergenceBasedPAC`` does; with ``ε = 0`` the ratio test cannot pass for a single arm) and when
every pair of an arm of ``S`` is resolved, returning the arm of ``S`` with the most resolved wins (as
Wu & Liu's NIPS 2016 simulation code does): the rewards are then known exactly, and tied Copeland
winners would otherwise keep the search sampling forever without a duel. ``2 ln ln x`` is read as
0 for ``x < e``. The scoresheet ``W`` is kept across epochs (duelpy keeps it too; Wu & Liu restart
it), so a pair resolved earlier is re-tested at the new, smaller ``δ``. The arms of ``S`` draw
their rewards in index order, each round's opponents drawn when the round starts.

Rewards of resolved pairs cost no duel, so a step first advances the search through them (a
``while_loop``, at most ``16 K²`` draws per step; when that cap binds, the pending pair duels
anyway) and then plays the one duel the search needs: the next unresolved pair, or ``(b̂, b̂)``.
Report rule: ``b̂`` once the search has ended, else the arm of ``S`` beating the most others on the
scoresheet (ties uniform).
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from jaxrank.bandits.base import copeland_guess, duel, record_duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax
from jaxrank.utils.checks import check_int, check_number

_LAST_FINITE_EPOCH = 4  # T_5 = 2^32 duels: longer than any run an int32 step counter can count
_BISECTIONS = 30
_MAX_FIRST_EPOCH = 64  # ln(1/δ) ≈ 2^r ln 2 stays finite in float32 (r < 128); from r = 5 an epoch outlasts any run


HPARAMS = {
    # ε of the search's stopping rule 1 - max L <= (1 + ε)(1 - max U) (Zoghi et al., NIPS 2015, Algorithm 2):
    # 0 asks for the Copeland winner itself.
    "epsilon": 0.0,
    # r0, the first epoch (T_r = 2^(2^r) duels; Algorithm 3 starts at r = 1).
    "first_epoch": 1.0,
}
OPTIONS = {}


class SCBState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = times i beat j (kept across epochs)
    candidates: jax.Array  # [K] bool, S: arms still in the search
    pending: jax.Array  # [K] bool, arms of S yet to draw their reward this round
    opponent: jax.Array  # [K] i32, each arm's opponent this round (uniform over the other arms)
    rewards: jax.Array  # [K] f32, reward sums of this epoch's search
    rounds: jax.Array  # [] i32, t: completed rounds (every arm of S has t rewards)
    exploit: jax.Array  # [] i32, b̂ once this epoch's search has ended, else -1
    epoch: jax.Array  # [] i32, r
    epoch_steps: jax.Array  # [] i32, duels in this epoch
    t: jax.Array  # [] i32, duels so far
    epsilon: jax.Array  # [] f32, ε >= 0 of the search's stopping rule


def init(key, num_arms: int, *, epsilon=HPARAMS["epsilon"], first_epoch=HPARAMS["first_epoch"]) -> SCBState:
    """Empty scoresheet for ``K = num_arms``; epoch ``first_epoch >= 1`` (``T = 2^(2^r)``), ``ε >= 0``."""
    check_number("epsilon", epsilon, low=0, low_inclusive=True)
    check_int("num_arms", num_arms, minimum=2)
    check_number("first_epoch", first_epoch, low=1, high=_MAX_FIRST_EPOCH, low_inclusive=True, high_inclusive=True,
                 fix="epoch r lasts 2^(2^r) duels, from r = 1; from r = 5 on one epoch outlasts any run")
    if not isinstance(first_epoch, jax.core.Tracer) and np.any(np.mod(np.asarray(first_epoch, np.float64), 1.0)):
        raise ValueError(f"first_epoch must be a whole number (the epoch index r); got {first_epoch!r}.")
    return SCBState(
        wins=jnp.zeros((num_arms, num_arms), jnp.float32),
        candidates=jnp.ones(num_arms, bool),
        pending=jnp.ones(num_arms, bool),
        opponent=_opponents(key, num_arms),
        rewards=jnp.zeros(num_arms, jnp.float32),
        rounds=jnp.zeros((), jnp.int32),
        exploit=jnp.int32(-1),
        epoch=jnp.asarray(first_epoch, jnp.int32),
        epoch_steps=jnp.zeros((), jnp.int32),
        t=jnp.zeros((), jnp.int32),
        epsilon=jnp.asarray(epsilon, jnp.float32),
    )


def _opponents(key, num_arms: int) -> jax.Array:
    """``[K]`` i32, for each arm an opponent uniform over the other ``K - 1`` arms."""
    shift = jnp.floor(prng.uniform(key, (num_arms,)) * (num_arms - 1)).astype(jnp.int32)
    return jnp.mod(jnp.arange(num_arms, dtype=jnp.int32) + 1 + jnp.minimum(shift, num_arms - 2), num_arms)


def epoch_length(epoch: jax.Array) -> jax.Array:
    """``T_r = 2^(2^r)`` as i32 for ``r <= 4``; the int32 maximum (never reached) beyond."""
    small = jnp.minimum(epoch, _LAST_FINITE_EPOCH)
    return jnp.where(epoch <= _LAST_FINITE_EPOCH, jnp.left_shift(1, jnp.left_shift(1, small)),
                     jnp.iinfo(jnp.int32).max).astype(jnp.int32)


def log_inverse_delta(epoch: jax.Array) -> jax.Array:
    """``ln(1/δ)`` for ``δ = ln(T_r) / T_r``: ``2^r ln 2 - ln(2^r ln 2)``, finite for every ``r``."""
    log_t = jnp.exp2(epoch.astype(jnp.float32)) * math.log(2.0)
    return log_t - jnp.log(log_t)


def _loglog(x: jax.Array) -> jax.Array:
    """``2 ln max(ln x, 1)``."""
    return 2.0 * jnp.log(jnp.maximum(jnp.log(x), 1.0))


def kl_bernoulli(p: jax.Array, q: jax.Array) -> jax.Array:
    """``d(p, q) = p ln(p/q) + (1 - p) ln((1 - p)/(1 - q))``, ``0 ln 0 = 0``, elementwise.

    ``p`` is clipped to [0, 1]: a ratio such as 3/3 may round above 1 (vectorised division on CPU
    did), and ``(1 - p) ln(1 - p)`` would then be NaN.
    """
    p = jnp.clip(p, 0.0, 1.0)
    return xlogy(p, p) - xlogy(p, q) + xlogy(1.0 - p, 1.0 - p) - xlogy(1.0 - p, 1.0 - q)


def resolved(wins_ij: jax.Array, wins_ji: jax.Array, log_inv_delta: jax.Array, num_arms: int) -> jax.Array:
    """Whether the pair is resolved at level ``δ / K²``: ``n d(p̂, 1/2) > ln(4 n K² / δ) + 2 ln max(ln n, 1)``."""
    n = wins_ij + wins_ji
    safe = jnp.maximum(n, 1.0)
    bar = math.log(4.0 * num_arms**2) + jnp.log(safe) + log_inv_delta + _loglog(safe)
    return (n > 0) & (n * kl_bernoulli(wins_ij / safe, 0.5) > bar)


def kl_bounds(mean: jax.Array, count: jax.Array, bar: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(L, U)``: the extremes of ``{q : count d(mean, q) <= bar}`` (bisection), elementwise."""

    def bisect(_, carry):
        lo_in, lo_out, hi_in, hi_out = carry  # *_in satisfy the bound, *_out do not
        lo_mid, hi_mid = 0.5 * (lo_in + lo_out), 0.5 * (hi_in + hi_out)
        lo_ok = count * kl_bernoulli(mean, lo_mid) <= bar
        hi_ok = count * kl_bernoulli(mean, hi_mid) <= bar
        return (jnp.where(lo_ok, lo_mid, lo_in), jnp.where(lo_ok, lo_out, lo_mid),
                jnp.where(hi_ok, hi_mid, hi_in), jnp.where(hi_ok, hi_out, hi_mid))

    zero, one = jnp.zeros_like(mean), jnp.ones_like(mean)
    lo_in, _, hi_in, _ = jax.lax.fori_loop(0, _BISECTIONS, bisect, (mean, zero, mean, one))
    # The ends themselves: d(mean, 0) and d(mean, 1) are finite only when mean is 0 or 1.
    lower = jnp.where(count * kl_bernoulli(mean, zero) <= bar, 0.0, lo_in)
    upper = jnp.where(count * kl_bernoulli(mean, one) <= bar, 1.0, hi_in)
    return lower, upper


class _Search(NamedTuple):
    candidates: jax.Array
    pending: jax.Array
    opponent: jax.Array
    rewards: jax.Array
    rounds: jax.Array
    exploit: jax.Array
    draws: jax.Array  # [] i32, loop trips in this step


def _current(search: _Search) -> tuple[jax.Array, jax.Array]:
    arm = jnp.argmax(search.pending).astype(jnp.int32)
    return arm, search.opponent[arm]


def _end_round(key, search: _Search, wins, log_inv_delta, epsilon) -> _Search:
    """Algorithm 4's bounds, elimination and stopping rule after a round; then the next round's opponents."""
    num_arms = wins.shape[0]
    key_pick, key_next = jax.random.split(key)
    rounds = search.rounds + 1
    count = rounds.astype(jnp.float32)
    bar = math.log(4.0 * num_arms) + jnp.log(count) + log_inv_delta + _loglog(count)
    lower, upper = kl_bounds(jnp.clip(search.rewards / count, 0.0, 1.0), count, bar)
    in_s = search.candidates
    best_lower = jnp.max(jnp.where(in_s, lower, -jnp.inf))
    in_s = in_s & ~(upper < best_lower)
    best_upper = jnp.max(jnp.where(in_s, upper, -jnp.inf))

    # Every pair of an arm of S resolved: its reward mean is known exactly.
    settled = resolved(wins, wins.T, log_inv_delta, num_arms) | jnp.eye(num_arms, dtype=bool)
    known = jnp.all(jnp.where(in_s[:, None], settled, True))
    resolved_wins = jnp.sum(settled & (wins > wins.T), axis=1).astype(jnp.float32)

    stop = (jnp.sum(in_s) == 1) | (1.0 - best_lower <= (1.0 + epsilon) * (1.0 - best_upper)) | known
    answer = random_argmax(prng.uniform(key_pick), jnp.where(known, resolved_wins, lower), in_s)
    return search._replace(candidates=in_s, pending=in_s & ~stop, opponent=_opponents(key_next, num_arms),
                           rounds=rounds, exploit=jnp.where(stop, answer, -1).astype(jnp.int32))


def _advance(key, search: _Search, wins, log_inv_delta, epsilon, max_draws) -> _Search:
    """Draws the rewards that need no duel (resolved pairs) and ends rounds, until a duel is needed."""
    num_arms = wins.shape[0]

    def free(s: _Search):
        arm, opp = _current(s)
        ready = ~jnp.any(s.pending) | resolved(wins[arm, opp], wins[opp, arm], log_inv_delta, num_arms)
        return (s.exploit < 0) & ready & (s.draws < max_draws)

    def draw(s: _Search):
        arm, opp = _current(s)
        credited = s._replace(rewards=s.rewards.at[arm].add((wins[arm, opp] > wins[opp, arm]).astype(jnp.float32)),
                              pending=s.pending.at[arm].set(False))
        ended = _end_round(prng.fold_in(key, s.draws), s, wins, log_inv_delta, epsilon)
        s = jax.tree.map(lambda a, b: jnp.where(jnp.any(s.pending), a, b), credited, ended)
        return s._replace(draws=s.draws + 1)

    return jax.lax.while_loop(free, draw, search)


def step(key, state: SCBState, env):
    """One duel of SCB (Zoghi, Karnin, Whiteson, de Rijke, NIPS 2015, Algorithms 2-4).

    A finished epoch (``T_r`` duels) starts the next with a fresh search. The search then draws every
    reward that needs no duel; the duel played is the next pair the search must resolve, or
    ``(b̂, b̂)`` once it has ended.

    Args:
      key: this step's PRNG key.
      state: the ``SCBState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)``, all ``[]`` (i32, i32, bool).
    """
    num_arms = state.wins.shape[0]
    key_draws, key_epoch, key_search, key_env = split_step_key(key, 4)
    u_duel = prng.uniform(key_draws)

    # Algorithm 3: a new epoch restarts the search (the scoresheet stays).
    new_epoch = state.epoch_steps >= epoch_length(state.epoch)
    everyone = jnp.ones(num_arms, bool)
    search = _Search(
        candidates=jnp.where(new_epoch, everyone, state.candidates),
        pending=jnp.where(new_epoch, everyone, state.pending),
        opponent=jnp.where(new_epoch, _opponents(key_epoch, num_arms), state.opponent),
        rewards=jnp.where(new_epoch, 0.0, state.rewards),
        rounds=jnp.where(new_epoch, 0, state.rounds),
        exploit=jnp.where(new_epoch, -1, state.exploit),
        draws=jnp.zeros((), jnp.int32),
    )
    epoch = state.epoch + new_epoch.astype(jnp.int32)
    epoch_steps = jnp.where(new_epoch, 0, state.epoch_steps)

    search = _advance(key_search, search, state.wins, log_inverse_delta(epoch), state.epsilon, 16 * num_arms**2)
    arm, opp = _current(search)
    exploiting = search.exploit >= 0
    first = jnp.where(exploiting, search.exploit, arm)
    second = jnp.where(exploiting, search.exploit, opp)
    first_won = duel(key_env, env, u_duel, first, second)
    wins = record_duel(state.wins, first, second, first_won)
    new_state = SCBState(wins, search.candidates, search.pending, search.opponent, search.rewards, search.rounds,
                         search.exploit, epoch, epoch_steps + 1, state.t + 1, state.epsilon)
    return new_state, StepInfo(first, second, first_won)


def best_arm(key, state: SCBState) -> jax.Array:
    """``b̂`` once the search has ended; else ``argmax_{i ∈ S} #{j : W_ij > W_ji}``, ties uniform."""
    guess = copeland_guess(state.wins, prng.uniform(key), state.candidates)
    return jnp.where(state.exploit >= 0, state.exploit, guess).astype(jnp.int32)


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
