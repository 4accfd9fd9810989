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
option ``slots`` (default 8) is how many arms a step gathers its batch into; merged batches hold up
to ``3M/2`` arms, so ``M <= 2·slots/3``: ``M <= 5`` with the default, ``make(slots=24)`` for the
authors' ``M = 16`` (``TUNED_OPTIONS``). The horizon ``T`` only bounds the paper's loop; no choice
depends on it.

Cost: the first candidate needs only the events ``θ_ij > 1/2``, Bernoulli with
``beat_prob_ij = P(Beta(W_ij + 1, W_ji + 1) > 1/2)`` (kept for all pairs, refreshed for the
duelled pair, as in ``jaxrank.bandits.dts``), one uniform per pair of the batch; the second needs
``2|B|`` gammas (Marsaglia-Tsang, two proposals each from the step's uniforms, exact; the redraw
loop runs only for the rivals' entries). The batches (at most ``3M/2 <= S`` arms) are cached in
``S = slots`` slots per label (``members``, and the ``S x S`` blocks of ``W`` and ``beat_prob``),
rebuilt only when batches merge and otherwise updated in place (the duel's two entries, the
dropped arms squeezed out), so a step finds its batch by one O(K) min over the labels (round
robin, as MergeRUCB) and works O(S²) on its rows: pruning bounds only its block. The rare parts
(merge and rebuild, the idle lane's draw, gamma redraws) sit in ``while`` loops that take no trip
unless some lane needs them (a ``cond`` under ``vmap`` would run them every step). All of a
step's other uniforms come from one unrolled Threefry pass (``jaxrank.utils.prng``). A step is
then about 100 small kernels over ``[lanes, S, S]`` rows and ``[lanes, K]`` vectors
(``benchmarks/notes.md``, section ``bandits``).

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
from jaxrank.bandits.base import copeland_guess, duel, record_duel
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import log_prob_beta_at_least_half, prng, random_argmax, random_argmin, random_choice
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
    # 8 fits the default M = 4 (and M <= 5); 24 fits the authors' tuned M = 16.
    "slots": 8,
}


class MergeDTSState(NamedTuple):
    wins: jax.Array  # [K, K] f32, wins[i, j] = W_ij = times i beat j
    beat_prob: jax.Array  # [K, K] f32, P(Beta(W_ij + 1, W_ji + 1) > 1/2); i < j read, refreshed for the duelled pair
    batch: jax.Array  # [K] i32, batch label of each arm (labels in [0, K))
    active: jax.Array  # [K] bool, arm not dropped
    sizes: jax.Array  # [K] f32, active arms carrying each label
    cursor: jax.Array  # [] i32, label of the batch visited last (round robin)
    stage: jax.Array  # [] i32, s: merge once at most K / 2^s arms remain
    t: jax.Array  # [] i32, duels so far
    alpha: jax.Array  # [] f32, UCB exploration α
    log_c: jax.Array  # [] f32, ln C
    partition_size: jax.Array  # [] f32, M
    # The batches gathered into slots, rebuilt only when they change (merges, with_partition, with_wins):
    members: jax.Array  # [K, S] i32, active arms of each label at the last rebuild, ascending; K pads
    block_wins: jax.Array  # [K, S, S] f32, W among a label's members in slot order (diagonal unread)
    block_beat: jax.Array  # [K, S, S] f32, beat_prob among them (a < b read)


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
    members = jnp.zeros((num_arms, slots), jnp.int32)
    return _rebuild(MergeDTSState(
        wins=state.wins, beat_prob=jnp.full((num_arms, num_arms), 0.5, jnp.float32), batch=state.batch,
        active=state.active, sizes=state.sizes, cursor=state.cursor, stage=state.stage, t=state.t,
        alpha=alpha32, log_c=jnp.where(c32 > 0, jnp.log(jnp.maximum(c32, 1e-30)), derived),
        partition_size=state.partition_size, members=members,
        block_wins=jnp.zeros((num_arms, slots, slots), jnp.float32),
        block_beat=jnp.zeros((num_arms, slots, slots), jnp.float32)))


def _slot_cache(batch, active, wins, beat_prob, slots: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(members [K, S], block_wins [K, S, S], block_beat [K, S, S])`` of the partition (O(K²))."""
    num_arms = batch.shape[0]
    arm = jnp.arange(num_arms, dtype=jnp.int32)
    same = active[None, :] & (batch[None, :] == batch[:, None]) & (arm[None, :] < arm[:, None])
    rank = jnp.sum(same, axis=1)  # place of each arm among the active arms of its label
    row = jnp.where(active, batch, num_arms)  # dropped arms: out of range, not written
    members = jnp.full((num_arms, slots), num_arms, jnp.int32).at[row, rank].set(arm, mode="drop")
    lo, hi = members[:, :, None], members[:, None, :]
    return (members, wins.at[lo, hi].get(mode="fill", fill_value=0.0),
            beat_prob.at[lo, hi].get(mode="fill", fill_value=0.5))


def _rebuild(state: MergeDTSState) -> MergeDTSState:
    """``state`` with its slot cache recomputed from ``batch``, ``active``, ``wins`` and ``beat_prob``."""
    cache = _slot_cache(state.batch, state.active, state.wins, state.beat_prob, state.members.shape[1])
    return state._replace(members=cache[0], block_wins=cache[1], block_beat=cache[2])


def _merge_and_rebuild(state: MergeDTSState, do_merge: jax.Array, u_first, u_second) -> MergeDTSState:
    """MergeRUCB's end-of-stage merge (``merge_rucb.stage_merge``: one pass, a second if a batch of
    at most M/2 arms is left) with the slot cache rebuilt after each pass, in one loop that takes no
    trip unless some lane merges."""

    def body(carry):
        merged = _merge._stage_merge_step(carry[0])
        return merged, _slot_cache(merged[0], state.active, state.wins, state.beat_prob, state.members.shape[1])

    merge = (state.batch, state.sizes, jnp.where(do_merge, 1, 0).astype(jnp.int32), state.active, u_first, u_second,
             state.partition_size)
    init = (merge, (state.members, state.block_wins, state.block_beat))
    merge, cache = jax.lax.while_loop(lambda carry: _merge._stage_merge_continues(carry[0]), body, init)
    return state._replace(batch=merge[0], sizes=merge[1], members=cache[0], block_wins=cache[1], block_beat=cache[2])


def _prob_beats(wins_ij: jax.Array, wins_ji: jax.Array) -> jax.Array:
    """``P(Beta(W_ij + 1, W_ji + 1) > 1/2)``, elementwise."""
    return jnp.exp(log_prob_beta_at_least_half(wins_ij + 1.0, wins_ji + 1.0))


def with_wins(state: MergeDTSState, wins: jax.Array) -> MergeDTSState:
    """``state`` with the scoresheet ``wins [K, K]`` and its ``beat_prob`` recomputed (O(K²))."""
    wins = jnp.asarray(wins, jnp.float32)
    return _rebuild(state._replace(wins=wins, beat_prob=_prob_beats(wins, wins.T)))


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


def _is_threefry(key) -> bool:
    return (str(jax.random.key_impl(key)) == "threefry2x32" and jax.config.jax_threefry_partitionable
            and key.shape == ())


def uniforms(key, num: int) -> jax.Array:
    """``[num]`` independent uniforms in [0, 1): both 32-bit words of each Threefry-2x32 block (one
    hash per two numbers), top 23 bits as in ``jax.random.uniform``; ``jax.random.uniform`` for
    other key implementations."""
    if not _is_threefry(key):
        return jax.random.uniform(key, (num,))
    k = jax.random.key_data(key)
    half = -(-num // 2)
    b1, b2 = prng.threefry2x32(k[0], k[1], jnp.zeros(half, jnp.uint32), jnp.arange(half, dtype=jnp.uint32))
    mantissa = (jnp.concatenate([b1, b2])[:num] >> np.uint32(9)) | np.uint32(0x3F800000)
    return jnp.maximum(np.float32(0.0), jax.lax.bitcast_convert_type(mantissa, jnp.float32) - np.float32(1.0))


def pair_index(slots: int) -> np.ndarray:
    """``[S, S]``: slot pair (a, b) -> index of its uniform among the ``S(S-1)/2`` pairs a < b
    (mirrored; 0 on the diagonal)."""
    pairs = np.triu_indices(slots, 1)
    index = np.zeros((slots, slots), np.int32)
    index[pairs] = np.arange(pairs[0].size)
    return index + index.T


def tournament_scores(u_pairs: jax.Array, block_beat: jax.Array, live: jax.Array) -> jax.Array:
    """``[S]`` ``#{b live : θ_ab > 1/2}`` for the slots of a batch whose arms ascend with the slot.

    ``θ`` is one antisymmetric Thompson sample: for slots ``a < b`` the event ``θ_ab > 1/2`` is
    ``u_pairs[pair(a, b)] < block_beat[a, b]`` (``P(Beta(W_ab + 1, W_ba + 1) > 1/2)`` of the slots'
    arms) and ``θ_ba > 1/2`` is its complement; ``θ_aa`` never counts; ``block_beat`` is ``[S, S]``,
    read above the diagonal.
    """
    slots = jnp.arange(live.shape[0])
    above = slots[:, None] < slots[None, :]
    below = u_pairs[pair_index(live.shape[0])] < jnp.where(above, block_beat, block_beat.T)
    beats = jnp.where(above, below, ~below) & (slots[:, None] != slots[None, :]) & live[None, :]
    return jnp.sum(beats, axis=1).astype(jnp.float32)


def _gamma_proposals(u: jax.Array, shape: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two Marsaglia & Tsang (2000) proposals per entry of ``shape [n] >= 1`` from ``u [4n]``
    (Box-Muller normals): ``(value of the first accepted, whether one was)``, both ``[n]``.

    With ``d = a - 1/3``, ``y = x / sqrt(9d)``, ``d (1 + y)³`` is accepted when ``y > -1`` and
    ``log u < x²/2 + d (3 log1p(y) - y (3 + y (3 + y)))`` (``= x²/2 + d (1 - v + log v)``).
    """
    n = shape.shape[0]
    u_radius, u_angle, u_accept = u[:n], u[n:2 * n], u[2 * n:4 * n].reshape(2, n)
    radius = jnp.sqrt(-2.0 * jnp.log1p(-u_radius))
    x = jnp.stack([radius * jnp.cos(2.0 * np.pi * u_angle), radius * jnp.sin(2.0 * np.pi * u_angle)])  # [2, n]
    d = shape - 1.0 / 3.0
    y = jax.lax.rsqrt(9.0 * d) * x
    valid = y > -1.0
    log_v_terms = 3.0 * jnp.log1p(jnp.where(valid, y, 0.0)) - y * (3.0 + y * (3.0 + y))
    accept = valid & (jnp.log(u_accept) < 0.5 * x * x + d * log_v_terms)
    value = d * (1.0 + y) ** 3
    return jnp.where(accept[0], value[0], value[1]), accept[0] | accept[1]


def _gamma_redraw(key, shape: jax.Array, sample: jax.Array, missing: jax.Array) -> jax.Array:
    """``sample [n]`` with its ``missing`` entries drawn from ``Gamma(shape)``, in rounds of two
    proposals (uniforms from ``fold_in(key, round)``). One flat loop: no trip unless some entry (of
    any vmapped lane) is missing."""
    n = shape.shape[0]

    def round_(carry):
        r, missing, sample = carry
        value, ok = _gamma_proposals(uniforms(prng.fold_in(key, r), 4 * n), shape)
        return r + 1, missing & ~ok, jnp.where(missing & ok, value, sample)

    init = (jnp.zeros((), jnp.int32), missing, sample)
    return jax.lax.while_loop(lambda c: jnp.any(c[1]), round_, init)[2]


def beta_sample(key, u: jax.Array, a: jax.Array, b: jax.Array, where=None) -> jax.Array:
    """``Beta(a, b)``, ``a, b >= 1`` (``[n]`` each), as ``X / (X + Y)`` of two gammas, from ``u [8n]``
    (and ``key`` for the rare entries whose two proposals are both rejected). Exact in law, on the
    entries of ``where [n]`` (default all; the others may keep a rejected proposal, so that the redraw
    loop runs only for entries that are read)."""
    shape = jnp.concatenate([a, b])
    value, ok = _gamma_proposals(u, shape)
    needed = jnp.ones(shape.shape, bool) if where is None else jnp.concatenate([where, where])
    g = _gamma_redraw(key, shape, value, ~ok & needed)
    return g[: a.shape[0]] / (g[: a.shape[0]] + g[a.shape[0]:])


def _exploit_if(idle: jax.Array, first: jax.Array, u: jax.Array, active: jax.Array) -> jax.Array:
    """``first``, or when ``idle`` (no batch of two arms) a uniformly drawn active arm; the O(K) draw
    in a loop of at most one trip (under ``vmap``: only on steps where some lane is idle), its input
    masked by the loop's flag so that XLA does not hoist it out."""

    def body(carry):
        return random_choice(u, active & carry[1]), jnp.zeros((), bool)

    return jax.lax.while_loop(lambda carry: carry[1], body, (first, idle))[0]


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
    # One Threefry pass for the step's uniforms: 5 scalars, one per slot pair (first candidate),
    # 8 per slot (second candidate: 2 gammas per slot, two proposals each, 2 uniforms per proposal).
    slots = state.members.shape[1]  # S, the static option of make that built the state
    num_pairs = slots * (slots - 1) // 2
    u = uniforms(key, 5 + num_pairs + 8 * slots)
    u_first, u_second, u_merge, u_remerge, u_duel = u[0], u[1], u[2], u[3], u[4]
    u_pairs, u_gamma = u[5:5 + num_pairs], u[5 + num_pairs:]
    num_arms = state.batch.shape[0]
    t = state.t + 1

    # The next batch in round-robin order (as MergeRUCB); its arms and blocks from the slot cache.
    current = _merge.next_batch(state.sizes, state.cursor)
    has_batch = state.sizes[current] >= 2
    slot = jnp.arange(slots)
    members = state.members[current]  # [S] ascending, K pads
    block = state.block_wins[current]  # [S, S] W_ab of the slots' arms
    cached = state.active.at[members].get(mode="fill", fill_value=False)  # pads and dropped arms: False
    filled = cached & has_batch

    # Drop the arms of B that some arm of B beats confidently (U on B's S x S block only).
    dropped = _merge.prune(filled, _merge.upper_bounds(block, t, state.alpha, state.log_c))  # [S]
    live = filled & ~dropped
    active = state.active.at[members].set(cached & ~dropped, mode="drop")

    # First candidate: the Copeland winner of B under one Thompson sample. Second: the arm of B the
    # first most plausibly beats (lowest sampled θ⁽²⁾_jc). Without a batch, a surviving arm duels itself.
    block_beat = state.block_beat[current]  # [S, S] beat_prob of the slots' arms (a < b read)
    scores = tournament_scores(u_pairs, block_beat, live)
    first_slot = random_argmax(u_first, scores, live)
    first = _exploit_if(~has_batch, members[first_slot], u_first, active)
    rivals = live & (slot != first_slot)
    theta = beta_sample(prng.fold_in(key, 2), u_gamma, block[:, first_slot] + 1.0, block[first_slot, :] + 1.0, rivals)
    second_slot = random_argmin(u_second, theta, rivals)
    paired = has_batch & jnp.any(rivals)
    second = jnp.where(paired, members[second_slot], first)
    first_won = duel(key, env, u_duel, first, second)
    wins = record_duel(state.wins, first, second, first_won)
    lo, hi = jnp.minimum(first, second), jnp.maximum(first, second)
    prob = _prob_beats(wins[lo, hi], wins[hi, lo])
    beat_prob = state.beat_prob.at[lo, hi].set(prob)  # only i < j is read

    # B's rows of the slot cache: the duel's two entries (slots ascend with the arms, so lo has the
    # lower slot), then the dropped arms squeezed out, the survivors keeping their order.
    win_slot, lose_slot = jnp.where(first_won, first_slot, second_slot), jnp.where(first_won, second_slot, first_slot)
    block = block.at[win_slot, lose_slot].add(paired.astype(jnp.float32))
    low_slot, high_slot = jnp.minimum(first_slot, second_slot), jnp.maximum(first_slot, second_slot)
    block_beat = block_beat.at[low_slot, high_slot].set(jnp.where(paired, prob, block_beat[low_slot, high_slot]))
    kept = cached & ~dropped
    place = jnp.cumsum(kept) - 1  # new slot of each kept slot
    source = jnp.argmax(kept[None, :] & (place[None, :] == slot[:, None]), axis=1)  # [S] old slot of each new one
    full = slot < jnp.sum(kept)
    both = full[:, None] & full[None, :]
    members = jnp.where(full, members[source], num_arms)
    block = jnp.where(both, block[source[:, None], source[None, :]], 0.0)
    block_beat = jnp.where(both, block_beat[source[:, None], source[None, :]], 0.5)

    # End of stage s: at most K / 2^s arms left (or only singletons): merge, maybe twice.
    sizes = state.sizes.at[current].add(-jnp.sum(dropped).astype(jnp.float32))
    live_batches = sizes > 0
    few = jnp.sum(active) <= num_arms * jnp.exp2(-state.stage.astype(jnp.float32))
    do_merge = (few | ~jnp.any(sizes >= 2)) & (jnp.sum(live_batches) > 1)
    new_state = state._replace(
        wins=wins, beat_prob=beat_prob, active=active, sizes=sizes, t=t,
        cursor=jnp.where(has_batch, current, state.cursor), stage=state.stage + do_merge.astype(jnp.int32),
        members=state.members.at[current].set(members), block_wins=state.block_wins.at[current].set(block),
        block_beat=state.block_beat.at[current].set(block_beat))
    return _merge_and_rebuild(new_state, do_merge, u_merge, u_remerge), StepInfo(first, second, first_won)


def best_arm(key, state: MergeDTSState) -> jax.Array:
    """Among surviving arms, ``argmax_i #{j : W_ij > W_ji}``, ties uniform (the last arm once it is alone)."""
    return copeland_guess(state.wins, prng.uniform(key), state.active)


_BANDITS: dict[int, Bandit] = {}  # one Bandit per slot count, so equal options give the same (hashable) object


def make(*, slots: int = OPTIONS["slots"]) -> Bandit:
    """The algorithm as a ``Bandit`` whose steps gather a batch into ``slots >= 2`` slots (``M <= 2·slots/3``)."""
    check_int("slots", slots, minimum=2)
    if slots not in _BANDITS:
        _BANDITS[slots] = Bandit(functools.partial(init, slots=slots), step, best_arm)
    return _BANDITS[slots]
