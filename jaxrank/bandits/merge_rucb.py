"""MergeRUCB (Zoghi, Whiteson, de Rijke, WSDM 2015, Algorithm 1) for many arms.

The arms are shuffled and cut into ``P = ⌈K/M⌉`` batches of ``M`` arms (the last one smaller;
``M = partition_size``, 4 by default). Comparisons stay *local*: at step ``t`` the next batch
``B`` in round-robin order is visited and

* ``U = W/N + sqrt(α ln(t + C) / N)``, ``N = W + Wᵀ``, ``x/0 := 1`` for each fraction, ``U_ii = 1/2``
  (the RUCB bound with the time shifted by ``C``);
* every arm ``i ∈ B`` with ``U_ij < 1/2`` for some ``j ∈ B`` is dropped for good;
* a champion ``c`` is drawn uniformly from ``B`` and duels ``d = argmax_{j ∈ B, j != c} U_jc``
  (ties uniform).

Stages: stage ``s`` (from 1) ends once at most ``K / 2^s`` arms remain; the batches are then
merged, smallest with largest, a pair only if it keeps at most ``3M/2`` arms (else the larger
one stays alone), and this is done a second time if a batch of at most ``M/2`` arms is left.
A single remaining arm is exploited (duelled with itself).

A step costs O(|B| K), not O(K²): ``U`` is evaluated only on the rows of the visited batch (to
prune) and on the champion's column (to pick the challenger), never as a whole ``[K, K]`` matrix,
and the batch sizes are kept in the state (recounted only when batches merge).

``C = ((4α - 1) K² / ((2α - 1) δ))^{1/(2α - 1)}`` (failure probability ``δ``, 0.01 by default)
is kept as ``ln C`` and ``ln(t + C) = logaddexp(ln t, ln C)``: at ``α = 0.501`` the exponent is
500 and ``C`` itself overflows even float64 (duelpy's constructor fails there), ``ln C`` does not.
``C`` may also be given (``c > 0``, any ``α > 0``), as in the MergeDTS authors' tuned setting
``TUNED`` ("MergeRUCBBEST": ``α = 0.8⁶``, ``C = 4·10⁵``, ``M = 8``).

Resolved ambiguities [ours, following the authors' Lerot ``mergeRUCBSampler`` where the paper is
silent]: batches of a single arm are skipped by the round robin while others remain; if every
batch is a singleton the merge is forced (the stage rule alone could stall there); pruning within
a batch is simultaneous and never empties it (that needs a confident cycle); the UCB uses the
paper's ``x/0 := 1`` rather than Lerot's one-win prior; ``C`` is not reset between stages; the
stage test is ``<= K / 2^s`` (Lerot and the MergeDTS code use ``<= K / 2^s + 1``). Lerot
shuffles the batches before sorting them by size; here equal sizes are ordered by label from a
random starting label (one uniform per merge pass instead of K: drawing K uniforms every step
halved the speed, and a merge happens a handful of times per run). The report is the arm beating
the most others on the scoresheet among the surviving arms.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.bandits.base import copeland_guess, duel, record_duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax, random_choice
from jaxrank.utils.checks import check_int, check_number
from jaxrank.utils.choice import first_passing


HPARAMS = {
    # α > 1/2 of U = W/N + sqrt(α ln(t + C)/N), batch size M and failure probability δ (Zoghi, Whiteson,
    # de Rijke, WSDM 2015, Algorithm 1): 1.01, 4 and 0.01, the values of the MergeDTS authors' code
    # (github.com/chang-li/MergeDTS), which shares this bound and partition; c = 0 derives C from
    # (α, δ, K), c > 0 gives C itself. M is a state leaf, not a shape.
    "alpha": 1.01,
    "delta": 0.01,
    "partition_size": 4.0,
    "c": 0.0,
}
# The MergeDTS authors' tuned setting ("MergeRUCBBEST" in their individual_run.py).
TUNED = {"alpha": 0.8**6, "c": 400_000.0, "partition_size": 8.0}
OPTIONS = {}


class MergeRUCBState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = times i beat j
    batch: jax.Array  # [K] i32, batch label of each arm (labels in [0, K))
    active: jax.Array  # [K] bool, arm not dropped
    sizes: jax.Array  # [K] f32, batch_sizes(batch, active): active arms carrying each label
    cursor: jax.Array  # [] i32, label of the batch visited last (round robin)
    stage: jax.Array  # [] i32, s: merge once at most K / 2^s arms remain
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, UCB exploration α > 1/2
    log_c: jax.Array  # [] f32, ln C(δ)
    partition_size: jax.Array  # [] f32, M


def log_c_constant(alpha, delta, num_arms: int):
    """``ln C = ln((4α - 1) K² / ((2α - 1) δ)) / (2α - 1)``, finite for any ``α > 1/2``."""
    alpha = jnp.asarray(alpha, jnp.float32)
    ratio = jnp.log(4.0 * alpha - 1.0) + 2.0 * jnp.log(jnp.float32(num_arms)) \
        - jnp.log(2.0 * alpha - 1.0) - jnp.log(jnp.asarray(delta, jnp.float32))
    return ratio / (2.0 * alpha - 1.0)


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"], delta=HPARAMS["delta"],
         partition_size=HPARAMS["partition_size"], c=HPARAMS["c"]) -> MergeRUCBState:
    """Random partition into ``⌈K/M⌉`` batches. ``α > 0`` (``> 1/2`` when ``C`` comes from ``δ``),
    ``0 < δ < 1``, ``M >= 2``, ``c >= 0`` (0: ``C`` from ``(α, δ, K)``)."""
    check_number("alpha", alpha, low=0)
    check_number("delta", delta, low=0, high=1)
    check_number("partition_size", partition_size, low=2, low_inclusive=True)
    check_number("c", c, low=0, low_inclusive=True, fix="pass C > 0, or 0 to derive C from alpha and delta")
    check_int("num_arms", num_arms, minimum=2)
    if not isinstance(c, jax.core.Tracer) and np.all(np.asarray(c) == 0.0):
        check_number("alpha", alpha, low=0.5, fix="C = ((4α-1)K²/((2α-1)δ))^(1/(2α-1)) needs α > 1/2; "
                     "or pass c > 0 (e.g. merge_rucb.TUNED)")
    size = jnp.asarray(partition_size, jnp.float32)
    alpha32, c32 = jnp.asarray(alpha, jnp.float32), jnp.asarray(c, jnp.float32)
    order = jax.random.permutation(key, num_arms)  # order[r] = the arm at shuffled position r
    labels = jnp.floor(jnp.arange(num_arms) / size).astype(jnp.int32)
    batch = jnp.zeros(num_arms, jnp.int32).at[order].set(labels)
    return MergeRUCBState(
        wins=jnp.zeros((num_arms, num_arms), jnp.float32),
        batch=batch,
        active=jnp.ones(num_arms, bool),
        sizes=batch_sizes(batch, jnp.ones(num_arms, bool)),
        cursor=jnp.asarray(-1, jnp.int32),
        stage=jnp.ones((), jnp.int32),
        t=jnp.zeros((), jnp.int32),
        alpha=alpha32,
        # ln C from (α, δ, K) is read only when c == 0, where α > 1/2 was checked (a traced α <= 1/2 uses α = 1).
        log_c=jnp.where(c32 > 0, jnp.log(jnp.maximum(c32, 1e-30)),
                        log_c_constant(jnp.where(alpha32 > 0.5, alpha32, 1.0), delta, num_arms)),
        partition_size=size,
    )


def _ucb(wins: jax.Array, losses: jax.Array, log_t_c: jax.Array, alpha: jax.Array) -> jax.Array:
    """Elementwise ``W/N + sqrt(α ln(t + C)/N)``, ``N = W + L``, ``x/0 := 1`` for each fraction."""
    totals = wins + losses
    explored = totals > 0
    safe = jnp.where(explored, totals, 1.0)
    mean = jnp.where(explored, wins / safe, 1.0)
    width = jnp.where(explored, alpha * log_t_c / safe, 1.0)
    return mean + jnp.sqrt(width)


def _log_t_c(t: jax.Array, log_c: jax.Array) -> jax.Array:
    return jnp.logaddexp(jnp.log(t.astype(jnp.float32)), log_c)


def upper_bounds(wins: jax.Array, t: jax.Array, alpha: jax.Array, log_c: jax.Array) -> jax.Array:
    """``[K, K]`` ``U = W/N + sqrt(α ln(t + C)/N)``, ``x/0 := 1``, diagonal 1/2; ``t`` 1-based."""
    upper = _ucb(wins, wins.T, _log_t_c(t, log_c), alpha)
    return jnp.where(jnp.eye(wins.shape[0], dtype=bool), 0.5, upper)


def upper_row(wins: jax.Array, arm: jax.Array, t: jax.Array, alpha: jax.Array, log_c: jax.Array) -> jax.Array:
    """``[K]`` row ``U_{arm, j}`` of ``upper_bounds`` in O(K) (the same values)."""
    upper = _ucb(wins[arm, :], wins[:, arm], _log_t_c(t, log_c), alpha)
    return jnp.where(jnp.arange(wins.shape[0]) == arm, 0.5, upper)


def upper_column(wins: jax.Array, arm: jax.Array, t: jax.Array, alpha: jax.Array, log_c: jax.Array) -> jax.Array:
    """``[K]`` column ``U_{j, arm}`` of ``upper_bounds`` in O(K) (the same values)."""
    upper = _ucb(wins[:, arm], wins[arm, :], _log_t_c(t, log_c), alpha)
    return jnp.where(jnp.arange(wins.shape[0]) == arm, 0.5, upper)


def batch_sizes(batch: jax.Array, active: jax.Array) -> jax.Array:
    """``[K]`` f32 number of active arms carrying each label."""
    return jnp.zeros(batch.shape[0], jnp.float32).at[batch].add(active.astype(jnp.float32))


def _spare_one(in_batch: jax.Array, beaten: jax.Array) -> jax.Array:
    return jnp.where(jnp.sum(beaten) == jnp.sum(in_batch), False, beaten)


def prune(in_batch: jax.Array, upper: jax.Array) -> jax.Array:
    """Arms of the batch with ``U_ij < 1/2`` for some ``j`` in it; none if that would be all."""
    return _spare_one(in_batch, in_batch & jnp.any(in_batch[None, :] & (upper < 0.5), axis=1))


_SLOTS = 8  # batches hold at most 3M/2 arms (6 at the default M = 4): up to 8 take the fast path


def prune_rows(in_batch: jax.Array, wins: jax.Array, t: jax.Array, alpha: jax.Array, log_c: jax.Array) -> jax.Array:
    """``prune(in_batch, upper_bounds(wins, t, alpha, log_c))`` without the ``[K, K]`` bounds.

    A batch of up to 8 arms (``3M/2 <= 8`` for ``M <= 5``) gathers its ``8 x 8`` block of ``W``
    and bounds only that, O(sqrt(K)) to find its arms; a larger batch is visited one row per arm,
    O(|B| K), in a ``while`` loop that takes no trip unless some lane has such a batch.
    """
    count = jnp.sum(in_batch)
    slots = jnp.arange(_SLOTS)
    members = jax.vmap(first_passing, in_axes=(None, 0))(in_batch.astype(jnp.int32), slots)  # [S]
    filled = slots < count
    block = wins[members[:, None], members[None, :]]  # [S, S]
    upper = jnp.where(jnp.eye(_SLOTS, dtype=bool), 0.5, _ucb(block, block.T, _log_t_c(t, log_c), alpha))
    hit = filled & jnp.any(filled[None, :] & (upper < 0.5), axis=1)
    beaten = jnp.zeros_like(in_batch).at[members].max(hit)

    def visit(carry):
        todo, beaten = carry
        arm = jnp.argmax(todo)
        hit = jnp.any(in_batch & (upper_row(wins, arm, t, alpha, log_c) < 0.5))
        return todo.at[arm].set(False), beaten.at[arm].set(hit)

    large = count > _SLOTS
    todo = in_batch & large
    beaten = jax.lax.while_loop(lambda c: jnp.any(c[0]), visit, (todo, jnp.where(large, False, beaten)))[1]
    return _spare_one(in_batch, beaten)


def _pairing_continues(carry):
    i, j = carry[0], carry[1]
    return i <= j


def _pairing_step(carry):
    """One move of the two-pointer pass over the batch sizes sorted ascending."""
    i, j, rep, sorted_sizes, cap = carry
    last = i == j
    pair = ~last & (sorted_sizes[i] + sorted_sizes[j] <= cap)
    rep = rep.at[i].set(jnp.where(pair, j, rep[i]))  # position i joins position j
    i = jnp.where(last | pair, i + 1, i)
    j = jnp.where(last, j, j - 1)
    return i, j, rep, sorted_sizes, cap


def _merge_pass(batch, active, u, partition_size):
    """One merge pass (see ``merge_batches``), always applied."""
    num_arms = batch.shape[0]
    sizes = batch_sizes(batch, active)
    live = sizes > 0
    # Sizes are integers and the tie key is in [0, 1/2), so it only orders batches of equal size.
    start = jnp.floor(u * num_arms).astype(jnp.int32)
    tie = 0.5 * jnp.mod(jnp.arange(num_arms) - start, num_arms) / num_arms
    order = jnp.argsort(jnp.where(live, sizes + tie, jnp.inf)).astype(jnp.int32)
    carry = (jnp.int32(0), (jnp.sum(live) - 1).astype(jnp.int32), jnp.arange(num_arms, dtype=jnp.int32),
             sizes[order], 1.5 * partition_size)
    rep = jax.lax.while_loop(_pairing_continues, _pairing_step, carry)[2]
    relabel = jnp.zeros(num_arms, jnp.int32).at[order].set(order[rep])
    return relabel[batch]


def merge_batches(batch, active, u, partition_size, do_merge):
    """One merge pass: relabels ``batch [K]`` when ``do_merge``, else returns it unchanged.

    Live batches are sorted by size, equal sizes by label counted cyclically from the random
    label ``floor(u K)`` (``u`` in [0, 1)). Then, from both ends: the smallest and the largest
    merge if together they hold at most ``3M/2`` arms, else the largest stays alone; a middle
    batch left over stays alone.
    """
    merged = _merge_pass(batch, active, u, jnp.asarray(partition_size, jnp.float32))
    return jnp.where(do_merge, merged, batch)


def _stage_merge_continues(carry):
    return carry[2] > 0


def _stage_merge_step(carry):
    batch, _, phase, active, u_first, u_second, partition_size = carry
    batch = _merge_pass(batch, active, jnp.where(phase == 1, u_first, u_second), partition_size)
    sizes = batch_sizes(batch, active)
    small = jnp.min(jnp.where(sizes > 0, sizes, jnp.inf)) <= 0.5 * partition_size
    phase = jnp.where((phase == 1) & small, 2, 0).astype(jnp.int32)
    return batch, sizes, phase, active, u_first, u_second, partition_size


def stage_merge(batch, sizes, active, u_first, u_second, partition_size, do_merge):
    """The merge at the end of a stage: one pass, and a second if a batch of <= M/2 arms is left.

    Returns the new ``(batch, sizes)``. A while loop, so that all the sorting runs only on the few
    steps where some lane merges (under vmap a ``cond`` would run it every step). Module-level
    loop functions: eager calls reuse one compiled loop.
    """
    carry = (batch, sizes, jnp.where(do_merge, 1, 0).astype(jnp.int32), active, u_first, u_second, partition_size)
    return jax.lax.while_loop(_stage_merge_continues, _stage_merge_step, carry)[:2]


def next_batch(sizes, cursor) -> jax.Array:
    """``[] i32``: the first label after ``cursor`` (cyclically) whose batch holds two or more arms;
    0 when none does (then ``sizes[0] < 2``)."""
    num_arms = sizes.shape[0]
    distance = jnp.arange(num_arms, dtype=jnp.int32) - cursor - 1  # in [-K, K): cyclic without an integer mod
    distance = jnp.where(distance < 0, distance + num_arms, distance)
    # The nearest distance (a plain min, cheaper than an argmin) names the label: cursor + 1 + distance.
    nearest = jnp.min(jnp.where(sizes >= 2, distance, num_arms))
    label = cursor + 1 + nearest
    return jnp.where(nearest < num_arms, jnp.where(label >= num_arms, label - num_arms, label), 0).astype(jnp.int32)


def visited_batch(sizes, cursor, active, batch) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Round robin over the batches that still hold two or more arms: the next one after ``cursor``.

    Returns ``(current [] i32, in_batch [K] bool, has_batch [] bool)``; with no such batch,
    ``in_batch`` is all False and ``has_batch`` False.
    """
    current = next_batch(sizes, cursor)
    has_batch = sizes[current] >= 2
    return current, active & (batch == current) & has_batch, has_batch


def step(key, state: MergeRUCBState, env):
    """One step of MergeRUCB (Zoghi, Whiteson, de Rijke, WSDM 2015, Algorithm 1).

    The next batch ``B`` with two or more arms, in round-robin order, is visited: with the bound
    ``U`` at ``ln(t + C)`` (``x/0 := 1``), the arms of ``B`` that some arm of ``B`` beats
    confidently (``U_ij < 1/2``) are dropped for good (never all of them), a champion ``c`` is
    drawn uniformly from ``B`` and duels ``d = argmax_{j ∈ B, j != c} U_jc`` (ties uniform), and
    ``W_cd`` or ``W_dc`` gains one. When at most ``K / 2^s`` arms remain (or only singleton
    batches), stage ``s`` ends and the batches merge (once, or twice if a batch of at most ``M/2``
    arms is left). Without a batch of two or more arms, a uniformly drawn active arm duels itself
    (the last arm, once it is alone).

    Args:
      key: this step's PRNG key.
      state: the ``MergeRUCBState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)`` with ``first = c`` and ``second = d``,
      all ``[]`` (i32, i32, bool).
    """
    key_draws, key_env = split_step_key(key, 2)
    u_champion, u_challenger, u_merge, u_remerge, u_duel = prng.uniform(key_draws, (5,))
    num_arms = state.batch.shape[0]
    labels = jnp.arange(num_arms, dtype=jnp.int32)
    t = state.t + 1

    current, in_batch, has_batch = visited_batch(state.sizes, state.cursor, state.active, state.batch)

    # Drop the arms of B that some arm of B beats confidently (U over B's rows only).
    dropped = prune_rows(in_batch, state.wins, t, state.alpha, state.log_c)
    active = state.active & ~dropped
    in_batch = in_batch & ~dropped

    # Champion uniform in B; challenger: highest U_jc in B, j != c. No batch: exploit.
    champion = random_choice(u_champion, jnp.where(has_batch, in_batch, active))
    rivals = in_batch & (labels != champion)
    upper = upper_column(state.wins, champion, t, state.alpha, state.log_c)
    challenger = jnp.where(jnp.any(rivals), random_argmax(u_challenger, upper, rivals), champion)
    first_won = duel(key_env, env, u_duel, champion, challenger)
    wins = record_duel(state.wins, champion, challenger, first_won)

    # End of stage s: at most K / 2^s arms left (or only singletons): merge, maybe twice.
    sizes = state.sizes.at[current].add(-jnp.sum(dropped).astype(jnp.float32))  # all drops are in B
    live = sizes > 0
    few = jnp.sum(active) <= num_arms * jnp.exp2(-state.stage.astype(jnp.float32))
    do_merge = (few | ~jnp.any(sizes >= 2)) & (jnp.sum(live) > 1)
    batch, sizes = stage_merge(state.batch, sizes, active, u_merge, u_remerge, state.partition_size, do_merge)

    new_state = state._replace(
        wins=wins, batch=batch, active=active, sizes=sizes, t=t,
        cursor=jnp.where(has_batch, current, state.cursor),
        stage=state.stage + do_merge.astype(jnp.int32))
    return new_state, StepInfo(champion, challenger, first_won)


def with_partition(state: MergeRUCBState, batch: jax.Array, active: jax.Array) -> MergeRUCBState:
    """``state`` with the batch labels ``batch [K]`` and surviving arms ``active [K]`` (sizes recomputed)."""
    batch, active = jnp.asarray(batch, jnp.int32), jnp.asarray(active, bool)
    return state._replace(batch=batch, active=active, sizes=batch_sizes(batch, active))


def best_arm(key, state: MergeRUCBState) -> jax.Array:
    """Among surviving arms, ``argmax_i #{j : W_ij > W_ji}`` (the last arm once it is alone)."""
    return copeland_guess(state.wins, prng.uniform(key), state.active)


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
