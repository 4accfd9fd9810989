"""MergeDTS (Li, Markov, de Rijke, Zoghi, "MergeDTS: A Method for Effective Large-Scale Online
Ranker Evaluation", ACM TOIS 38(4), 2020, Algorithm 1) for many arms.

MergeRUCB's divide and conquer (``jaxrank.bandits.merge_rucb``: ``P = ⌈K/M⌉`` random batches of
``M`` arms, comparisons only inside the visited batch, stage merges) with the two arms of a duel
chosen by double Thompson sampling inside the batch. At step ``t`` the next batch ``B`` in
round-robin order is visited and

* (prune) every arm ``i ∈ B`` with ``U_ij < 1/2`` for some ``j ∈ B`` is dropped for good, with
  ``U = W/N + sqrt(α ln(t + C) / N)``, ``N = W + Wᵀ``, ``x/0 := 1``, ``U_ii = 1/2``;
* (first candidate) ``θ_ij ~ Beta(W_ij + 1, W_ji + 1)`` for ``i < j`` in ``B``, ``θ_ji = 1 - θ_ij``;
  ``c = argmax_{i ∈ B} #{j ∈ B : θ_ij > 1/2}``, ties uniform;
* (second candidate) fresh ``θ⁽²⁾_jc ~ Beta(W_jc + 1, W_cj + 1)`` for ``j ∈ B \\ {c}``;
  ``d = argmin_j θ⁽²⁾_jc``: the arm that ``c`` most plausibly beats (authors' ``relative_sample``,
  which sets ``θ⁽²⁾_cc = 1`` and takes the argmin), so that losers are compared, and dropped, early;
* ``c`` duels ``d``; at most ``K / 2^s`` arms left ends stage ``s`` with a merge, as in MergeRUCB.

Hyperparameters (``init``): ``α`` (default 1.01), the batch size ``M = partition_size`` (4) and the
failure probability ``ε`` (0.01), the defaults of the authors' code (github.com/chang-li/MergeDTS,
``dueling_bandits/merge_dts.py``), which give ``C = ((4α - 1) K² / ((2α - 1) ε))^{1/(2α - 1)}``
(needs ``α > 1/2``); or ``C`` itself (``c > 0``), as in the authors' tuned setting ``TUNED``
(``α = 0.8⁶``, ``C = 4·10⁵``, ``M = 16``, "MergeDTSBest" of their ``individual_run.py``). The static
option ``slots`` (default 6) is how many arms a step gathers its batch into; merged batches hold up
to ``3M/2`` arms, so ``M <= 2·slots/3``: ``M <= 4`` with the default, ``make(slots=8)`` for
``M = 5``, ``make(slots=24)`` for the authors' ``M = 16`` (``TUNED_OPTIONS``). The horizon ``T``
only bounds the paper's loop; no choice depends on it.

Cost: the first candidate needs only the events ``θ_ij > 1/2``, Bernoulli with
``P(Beta(W_ij + 1, W_ji + 1) > 1/2)`` (as in ``jaxrank.bandits.dts``), one uniform per pair of the
batch, and one per slot to break the tie of its count; the second needs ``2|B|`` gammas (integer
shapes up to 4 as sums of exponentials, larger ones by two Marsaglia-Tsang proposals, all from the
step's uniforms; the redraw loop runs only for the rivals' entries whose proposals were both
rejected). The batches (at most ``3M/2 <= S`` arms) are cached in ``S = slots`` slots per label
(``members``, and the ``S x S`` blocks of ``W`` and of those probabilities), rebuilt only when
batches merge and otherwise updated in place (the duel's entries, the dropped arms' slots freed),
so a step finds its batch by one O(K) min over the labels (round robin, as MergeRUCB) and works
O(S²) on its rows: pruning bounds only its block. Counts of surviving arms and of batches are
kept, not recounted. The rare parts (merge and rebuild, the idle lane's draw, gamma redraws) sit
in ``while`` loops that take no trip unless some lane needs them (a ``cond`` under ``vmap`` would
run them every step). All of a step's other uniforms come from one unrolled Threefry pass
(``jaxrank.utils.prng``). A step is then about 80 small kernels over ``[lanes, S, S]`` rows and
``[lanes, K]`` vectors (``benchmarks/notes.md``, section ``bandits``).

Resolved ambiguities [ours unless marked]: batches, merges, pruning, stage test, ``ln(t + C)``
(with ``t`` never reset) and the report rule are MergeRUCB's (see its docstring); the authors' code
instead merges a singleton batch with the next one, drops one beaten arm at a time, resets ``t`` to
``C + 1`` after each merge, starts its scoresheet at one win per pair and samples ``θ_ij`` and
``θ_ji`` independently (its commented-out loop, and D-TS, sample the antisymmetric ``θ`` used here).
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.bandits import merge_rucb as _merge
from jaxrank.bandits.base import copeland_guess, duel, record_duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import log_prob_beta_at_least_half, prng, random_choice
from jaxrank.utils.beta import beta_sample, uniforms
from jaxrank.utils.checks import check_int, check_number

# The authors' tuned setting for the large-scale runs ("MergeDTSBest" in their individual_run.py):
# α = 0.8⁶, C = 4·10⁵, M = 16, whose merged batches of up to 24 arms need 24 slots.
TUNED = {"alpha": 0.8**6, "c": 400_000.0, "partition_size": 16.0}
TUNED_OPTIONS = {"slots": 24}


HPARAMS = {
    # α, failure probability ε and batch size M: 1.01, 0.01 and 4, the defaults of the authors' code
    # (github.com/chang-li/MergeDTS, dueling_bandits/merge_dts.py); c = 0 derives C from (α, ε, K) as
    # Algorithm 1 does, c > 0 gives C itself (the authors' tuned C = 4·10⁵, TUNED). M is a state leaf,
    # not a shape, up to 2·slots/3.
    "alpha": 1.01,
    "epsilon": 0.01,
    "partition_size": 4.0,
    "c": 0.0,
}
OPTIONS = {
    # Arms a step gathers its batch into (a shape): merged batches hold up to 3M/2 arms, so M <= 2·slots/3.
    # 6 fits the default M = 4; 8 fits M = 5, 24 the authors' tuned M = 16.
    "slots": 6,
}


class MergeDTSState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = W_ij = times i beat j
    batch: jax.Array  # [K] i32, batch label of each arm (labels in [0, K))
    active: jax.Array  # [K] bool, arm not dropped
    sizes: jax.Array  # [K] f32, active arms carrying each label
    cursor: jax.Array  # [] i32, label of the batch visited last (round robin)
    stage: jax.Array  # [] i32, s: merge once at most K / 2^s arms remain
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, UCB exploration α
    log_c: jax.Array  # [] f32, ln C
    partition_size: jax.Array  # [] f32, M
    # Counts kept in step with `active` and `sizes` (a step changes them by its drops, merges rebuild them):
    num_active: jax.Array  # [] f32, surviving arms
    num_pairs: jax.Array  # [] i32, labels carrying two or more active arms
    num_live: jax.Array  # [] i32, labels carrying an active arm
    # The batches gathered into slots, rebuilt only when batches merge (and by with_partition, with_wins):
    members: jax.Array  # [K, S] i32, each label's active arms, ascending with the slot; K for a free slot
    block_wins: jax.Array  # [K, S, S] f32, W among a label's members in slot order (diagonal, free slots unread)
    block_beat: jax.Array  # [K, S, S] f32, P(θ_ab > 1/2) of slots a < b at [a, b] and [b, a]; free slots unread


def init(key, num_arms: int, *, alpha=HPARAMS["alpha"], epsilon=HPARAMS["epsilon"],
         partition_size=HPARAMS["partition_size"], c=HPARAMS["c"], slots=OPTIONS["slots"]) -> MergeDTSState:
    """Random partition into ``⌈K/M⌉`` batches of ``M = partition_size`` arms.

    Args:
      key: draws the partition.
      num_arms: ``K >= 2``.
      alpha: ``α > 0``; ``> 1/2`` when ``C`` comes from ``epsilon``.
      epsilon: failure probability ``ε`` in (0, 1), used when ``c == 0``.
      partition_size: ``M`` in [2, 2·slots/3] (merged batches, at most ``3M/2`` arms, fit the slots).
      c: ``C > 0`` given directly (e.g. ``TUNED``), or 0: ``C`` from ``(α, ε, K)``.
      slots: the static option of ``make`` this ``init`` belongs to.
    """
    check_number("alpha", alpha, low=0)
    check_number("epsilon", epsilon, low=0, high=1)
    check_number("partition_size", partition_size, low=2, high=2 * slots / 3, low_inclusive=True,
                 high_inclusive=True, fix=f"batches are merged up to 3M/2 arms and a step gathers {slots} slots; "
                 f"use make(slots=...) of at least 3M/2")
    check_number("c", c, low=0, low_inclusive=True, fix="pass C > 0, or 0 to derive C from alpha and epsilon")
    check_int("num_arms", num_arms, minimum=2)
    if not isinstance(c, jax.core.Tracer) and np.all(np.asarray(c) == 0.0):
        check_number("alpha", alpha, low=0.5, fix="C = ((4α-1)K²/((2α-1)ε))^(1/(2α-1)) needs α > 1/2; "
                     "or pass c > 0 (e.g. merge_dts.TUNED)")
    state = _merge.init(key, num_arms, alpha=1.0, delta=0.5, partition_size=partition_size)
    alpha32, c32 = jnp.asarray(alpha, jnp.float32), jnp.asarray(c, jnp.float32)
    # ln C from (α, ε, K); read only when c == 0, where α > 1/2 was checked (a traced α <= 1/2 uses α = 1).
    derived = _merge.log_c_constant(jnp.where(alpha32 > 0.5, alpha32, 1.0), epsilon, num_arms)
    zero = jnp.zeros((), jnp.int32)
    return _rebuild(MergeDTSState(
        wins=state.wins, batch=state.batch, active=state.active, sizes=state.sizes, cursor=state.cursor,
        stage=state.stage, t=state.t, alpha=alpha32,
        log_c=jnp.where(c32 > 0, jnp.log(jnp.maximum(c32, 1e-30)), derived), partition_size=state.partition_size,
        num_active=jnp.zeros((), jnp.float32), num_pairs=zero, num_live=zero,
        members=jnp.zeros((num_arms, slots), jnp.int32), block_wins=jnp.zeros((num_arms, slots, slots), jnp.float32),
        block_beat=jnp.zeros((num_arms, slots, slots), jnp.float32)))


def _slot_cache(batch, active, wins, slots: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(members [K, S], block_wins [K, S, S], block_beat [K, S, S])`` of the partition (O(K²))."""
    num_arms = batch.shape[0]
    arm = jnp.arange(num_arms, dtype=jnp.int32)
    same = active[None, :] & (batch[None, :] == batch[:, None]) & (arm[None, :] < arm[:, None])
    rank = jnp.sum(same, axis=1)  # place of each arm among the active arms of its label
    row = jnp.where(active, batch, num_arms)  # dropped arms: out of range, not written
    members = jnp.full((num_arms, slots), num_arms, jnp.int32).at[row, rank].set(arm, mode="drop")
    block = wins.at[members[:, :, None], members[:, None, :]].get(mode="fill", fill_value=0.0)
    beat = _prob_beats(block, jnp.swapaxes(block, 1, 2))
    above = np.triu(np.ones((slots, slots), bool), 1)
    return members, block, jnp.where(above, beat, jnp.swapaxes(beat, 1, 2))


def _counts(active, sizes) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(num_active, num_pairs, num_live)`` of ``active [K]`` and ``sizes [K]`` (see ``MergeDTSState``)."""
    return (jnp.sum(active).astype(jnp.float32), jnp.sum(sizes >= 2).astype(jnp.int32),
            jnp.sum(sizes > 0).astype(jnp.int32))


def _rebuild(state: MergeDTSState) -> MergeDTSState:
    """``state`` with its slot cache and counts recomputed from ``batch``, ``active``, ``sizes`` and ``wins``."""
    members, block_wins, block_beat = _slot_cache(state.batch, state.active, state.wins, state.members.shape[1])
    num_active, num_pairs, num_live = _counts(state.active, state.sizes)
    return state._replace(members=members, block_wins=block_wins, block_beat=block_beat, num_active=num_active,
                          num_pairs=num_pairs, num_live=num_live)


def _merge_and_rebuild(state: MergeDTSState, do_merge: jax.Array, u_first, u_second) -> MergeDTSState:
    """MergeRUCB's end-of-stage merge (``merge_rucb.stage_merge``: one pass, a second if a batch of
    at most M/2 arms is left) with the slot cache and counts rebuilt after each pass, in one loop
    that takes no trip unless some lane merges."""
    slots = state.members.shape[1]

    def body(carry):
        merged = _merge._stage_merge_step(carry[0])
        return merged, _slot_cache(merged[0], state.active, state.wins, slots), _counts(state.active, merged[1])[1:]

    merge = (state.batch, state.sizes, jnp.where(do_merge, 1, 0).astype(jnp.int32), state.active, u_first, u_second,
             state.partition_size)
    init = (merge, (state.members, state.block_wins, state.block_beat), (state.num_pairs, state.num_live))
    merge, cache, counts = jax.lax.while_loop(lambda carry: _merge._stage_merge_continues(carry[0]), body, init)
    return state._replace(batch=merge[0], sizes=merge[1], members=cache[0], block_wins=cache[1], block_beat=cache[2],
                          num_pairs=counts[0], num_live=counts[1])


def _prob_beats(wins_ij: jax.Array, wins_ji: jax.Array) -> jax.Array:
    """``P(Beta(W_ij + 1, W_ji + 1) > 1/2)``, elementwise."""
    return jnp.exp(log_prob_beta_at_least_half(wins_ij + 1.0, wins_ji + 1.0))


def with_wins(state: MergeDTSState, wins: jax.Array) -> MergeDTSState:
    """``state`` with the scoresheet ``wins [K, K]`` (slot cache rebuilt, O(K²))."""
    return _rebuild(state._replace(wins=jnp.asarray(wins, jnp.float32)))


def with_partition(state: MergeDTSState, batch: jax.Array, active: jax.Array) -> MergeDTSState:
    """``state`` with the batch labels ``batch [K]`` and surviving arms ``active [K]`` (sizes recomputed).

    Raises:
      ValueError: (concrete inputs) when a batch has more active arms than the state's slots, whose
        cache would leave the extra arms out.
    """
    batch, active = jnp.asarray(batch, jnp.int32), jnp.asarray(active, bool)
    sizes = _merge.batch_sizes(batch, active)
    slots = state.members.shape[1]
    if not isinstance(sizes, jax.core.Tracer) and float(jnp.max(sizes)) > slots:
        raise ValueError(f"a batch holds {int(jnp.max(sizes))} active arms but the state has {slots} slots; "
                         f"build the bandit with make(slots={int(jnp.max(sizes))}) or more.")
    return _rebuild(state._replace(batch=batch, active=active, sizes=sizes))


def pair_matrix(u_pairs: jax.Array, slots: int) -> jax.Array:
    """``[S, S]`` symmetric: ``u_pairs [S(S-1)/2]`` placed at each slot pair (a, b) and (b, a), in
    the row-major order of the pairs a < b (``np.triu_indices``); 0 on the diagonal. Built from
    static slices, which XLA fuses as index arithmetic (a gather of the pairs would not vectorise)."""
    rows, start = [], 0
    for a in range(slots):
        rows.append(jnp.pad(u_pairs[start:start + slots - 1 - a], (a + 1, 0)))
        start += slots - 1 - a
    upper = jnp.stack(rows)
    return upper + upper.T


def tournament_scores(u_pairs: jax.Array, block_beat: jax.Array, live: jax.Array) -> jax.Array:
    """``[S]`` ``#{b live : θ_ab > 1/2}`` for the slots of a batch whose arms ascend with the slot.

    ``θ`` is one antisymmetric Thompson sample: for slots ``a < b`` the event ``θ_ab > 1/2`` is
    ``pair_matrix(u_pairs)[a, b] < block_beat[a, b]`` (``P(Beta(W_ab + 1, W_ba + 1) > 1/2)`` of the slots'
    arms) and ``θ_ba > 1/2`` is its complement; ``θ_aa`` never counts. ``block_beat [S, S]`` is
    symmetric (the pair's probability at ``[a, b]`` and ``[b, a]``), so neither it nor the pairs'
    uniforms need a transpose.
    """
    slots = jnp.arange(live.shape[0])
    above = slots[:, None] < slots[None, :]
    below = pair_matrix(u_pairs, live.shape[0]) < block_beat
    beats = jnp.where(above, below, ~below) & (slots[:, None] != slots[None, :]) & live[None, :]
    return jnp.sum(beats, axis=1).astype(jnp.float32)


def _draw_if(draw: jax.Array, first: jax.Array, u: jax.Array, active: jax.Array) -> jax.Array:
    """``first``, or when ``draw`` a uniformly drawn active arm: the O(K) draw in a loop of at most
    one trip (under ``vmap``: only on steps where some lane draws). ``active`` enters as a carry the
    trip overwrites, so that XLA cannot hoist work on it out of the loop into every step."""

    def body(carry):
        return random_choice(u, carry[2]), jnp.zeros((), bool), jnp.zeros_like(carry[2])

    return jax.lax.while_loop(lambda carry: carry[1], body, (first, draw, active))[0]


def step(key, state: MergeDTSState, env):
    """One step of MergeDTS (Li et al., TOIS 2020, Algorithm 1).

    The next batch ``B`` with two or more arms, in round-robin order, is visited: its arms that
    some arm of ``B`` beats confidently (``U_ij < 1/2`` at ``ln(t + C)``) are dropped (never all);
    the first candidate ``c`` is the arm of ``B`` beating the most others of ``B`` under one
    antisymmetric sample ``θ_ij ~ Beta(W_ij + 1, W_ji + 1)``, ties uniform; the second ``d`` is the
    arm of ``B \\ {c}`` with the lowest fresh ``θ⁽²⁾_dc ~ Beta(W_dc + 1, W_cd + 1)``; they duel.
    When at most ``K / 2^s`` arms remain (or only single-arm batches) stage ``s`` ends and the
    batches merge as in MergeRUCB. With no batch of two or more arms, a uniformly drawn surviving
    arm duels itself (the last arm, once it is alone).

    Args:
      key: this step's PRNG key.
      state: the ``MergeDTSState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo(first=c, second=d, first_won))``, all ``[]`` (i32, i32, bool).
    """
    # One Threefry pass for the step's uniforms: 4 scalars; for the first candidate one per slot
    # (tie-breaks) and one per slot pair (the sample); for the second 8 per slot (2 gammas per slot,
    # two proposals each, 2 uniforms per proposal).
    slots = state.members.shape[1]  # S, the static option of make that built the state
    num_pairs = slots * (slots - 1) // 2
    key_draws, key_redraw, key_env = split_step_key(key, 3)
    u = uniforms(key_draws, 4 + slots + num_pairs + 8 * slots)
    u_idle, u_merge, u_remerge, u_duel = u[0], u[1], u[2], u[3]
    u_ties, u_pairs, u_gamma = u[4:4 + slots], u[4 + slots:4 + slots + num_pairs], u[4 + slots + num_pairs:]
    num_arms = state.batch.shape[0]
    t = state.t + 1

    # The next batch in round-robin order (as MergeRUCB); its arms and blocks from the slot cache.
    # Without one (an idle step), the batch visited last, which holds the lone survivor once one is left.
    current = _merge.next_batch(state.sizes, state.cursor)
    size = state.sizes[current]
    has_batch = size >= 2
    row = jnp.where(has_batch, current, jnp.maximum(state.cursor, 0))
    slot = jnp.arange(slots)
    members = state.members[row]  # [S] active arms ascending with the slot, K in free slots
    block = state.block_wins[row]  # [S, S] W_ab of the slots' arms
    cached = members < num_arms
    filled = cached & has_batch

    # Drop the arms of B that some arm of B beats confidently (U on B's S x S block only); their
    # slots are freed, the others keep theirs.
    dropped = _merge.prune(filled, _merge.upper_bounds(block, t, state.alpha, state.log_c))  # [S]
    live = filled & ~dropped
    active = state.active.at[jnp.where(dropped, members, num_arms)].set(False, mode="drop")

    # First candidate: the Copeland winner of B under one Thompson sample. Second: the arm of B the
    # first most plausibly beats (lowest sampled θ⁽²⁾_jc). Without a batch, a surviving arm duels itself.
    # Scores are counts: ranked first by the count, then by a 23-bit uniform per slot, ties break
    # uniformly (in integers, so that no bit of the uniform is rounded away). θ⁽²⁾ is continuous: its
    # ties (2⁻²⁴ in float32) go to the lower slot, as the authors' np.argmin. An idle step takes the
    # row's arm when it is the only survivor, and otherwise draws one.
    scores = tournament_scores(u_pairs, state.block_beat[row], live)
    rank = scores.astype(jnp.int32) * (1 << 23) + (u_ties * (1 << 23)).astype(jnp.int32)  # scores < S <= 256
    first_slot = jnp.argmax(jnp.where(live, rank, jnp.where(cached, -1, -2))).astype(jnp.int32)
    first = members[first_slot]
    first = _draw_if(~has_batch & ((state.num_active > 1) | (first == num_arms)), first, u_idle, active)
    rivals = live & (slot != first_slot)
    theta = beta_sample(key_redraw, u_gamma, block[:, first_slot] + 1.0, block[first_slot, :] + 1.0, rivals)
    second_slot = jnp.argmin(jnp.where(rivals, theta, jnp.inf)).astype(jnp.int32)
    paired = has_batch & jnp.any(rivals)
    second = jnp.where(paired, members[second_slot], first)
    first_won = duel(key_env, env, u_duel, first, second)
    wins = record_duel(state.wins, first, second, first_won)

    # The duel's entries of B's blocks (slots ascend with the arms: the lower slot holds the lower arm).
    low_slot, high_slot = jnp.minimum(first_slot, second_slot), jnp.maximum(first_slot, second_slot)
    low_won = first_won == (first_slot == low_slot)
    w_low = block[low_slot, high_slot] + low_won.astype(jnp.float32)
    w_high = block[high_slot, low_slot] + (~low_won).astype(jnp.float32)
    target = jnp.where(paired, row, num_arms)  # a lone arm's self-duel writes nothing
    block_wins = state.block_wins.at[target, jnp.where(low_won, low_slot, high_slot),
                                     jnp.where(low_won, high_slot, low_slot)].add(1.0, mode="drop")
    block_beat = state.block_beat.at[target, jnp.stack([low_slot, high_slot]), jnp.stack([high_slot, low_slot])].set(
        _prob_beats(w_low, w_high), mode="drop")
    members = state.members.at[row].set(jnp.where(dropped, num_arms, members))

    # End of stage s: at most K / 2^s arms left (or only singletons): merge, maybe twice. Pruning
    # never empties a batch, so only merges change the count of labels in use.
    num_dropped = jnp.sum(dropped).astype(jnp.float32)
    num_active = state.num_active - num_dropped
    num_pairs = state.num_pairs - (has_batch & (size - num_dropped < 2)).astype(jnp.int32)
    few = num_active <= num_arms * jnp.exp2(-state.stage.astype(jnp.float32))
    do_merge = (few | (num_pairs == 0)) & (state.num_live > 1)
    new_state = state._replace(
        wins=wins, active=active, sizes=state.sizes.at[current].add(-num_dropped), t=t,
        cursor=jnp.where(has_batch, current, state.cursor), stage=state.stage + do_merge.astype(jnp.int32),
        num_active=num_active, num_pairs=num_pairs, members=members, block_wins=block_wins, block_beat=block_beat)
    return _merge_and_rebuild(new_state, do_merge, u_merge, u_remerge), StepInfo(first, second, first_won)


def best_arm(key, state: MergeDTSState) -> jax.Array:
    """Among surviving arms, ``argmax_i #{j : W_ij > W_ji}``, ties uniform (the last arm once it is alone)."""
    return copeland_guess(state.wins, prng.uniform(key), state.active)


_BANDITS: dict[int, Bandit] = {}  # one Bandit per slot count, so equal options give the same (hashable) object


def make(*, slots: int = OPTIONS["slots"]) -> Bandit:
    """The algorithm as a ``Bandit`` whose steps gather a batch into ``slots >= 2`` slots (``M <= 2·slots/3``)."""
    check_int("slots", slots, minimum=2)
    if slots > 256:  # a step ranks the tournament's counts (< slots) above 23-bit uniforms in an int32
        raise ValueError(f"slots must be <= 256; got {slots} (batches of up to {2 * slots // 3} arms).")
    if slots not in _BANDITS:
        _BANDITS[slots] = Bandit(functools.partial(init, slots=slots), step, best_arm)
    return _BANDITS[slots]
