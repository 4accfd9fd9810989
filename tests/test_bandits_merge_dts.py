"""MergeDTS (``jaxrank.bandits.merge_dts``).

(a) The contract: ``step`` keeps the state's structure, shapes and dtypes, the same key gives the
same run, bad hyperparameters fail before compiling. (b) Parts against independent values: ``ln C``,
the Thompson tournament against its definition, the exact Beta sampler's law, and a hand-traced
run (pruning, self-duel of a lone arm, end of stage merge). (c) Slow: mean cumulative regret at
T = 20,000 over 30 runs on MSLR-Perfect K = 10 lies within the 95% CI of the NumPy reference
(``tests/reference/merge_dts.py``), and the Condorcet winner is never dropped.
"""

import math
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.bandits import merge_dts as mdts
from jaxrank.envs import PrefMatrixEnv
from tests.conftest import ARXIV_ROWS, assert_same_mean
from tests.reference import merge_dts as ref

ARXIV = np.array(ARXIV_ROWS)
_INIT = jax.jit(mdts.init, static_argnums=1)
_STEP_RAW = mdts.step
_STEP = jax.jit(mdts.step)


def _env(pref):
    return PrefMatrixEnv(jnp.asarray(pref, jnp.float32))


def _total_order(num_arms):
    upper = np.triu(np.ones((num_arms, num_arms)), 1)
    return upper + np.tril(1.0 - upper.T, -1) + 0.5 * np.eye(num_arms)


def _run(state, env, key, num_steps):
    infos = []
    for t in range(num_steps):
        state, info = _STEP(jax.random.fold_in(key, t), state, env)
        infos.append((int(info.first), int(info.second)))
    return state, infos


# ----------------------------------------------------------------------------------------------
# (a) contract and bad input
# ----------------------------------------------------------------------------------------------


def test_step_keeps_the_state_and_same_key_same_run():
    env = _env(ARXIV)
    state = _INIT(jax.random.key(0), 6)
    later, infos = _run(state, env, jax.random.key(1), 150)
    for s in (state, later):
        new, info = _STEP(jax.random.key(2), s, env)
        chex.assert_trees_all_equal_shapes_and_dtypes(s, new)
        assert info.first.dtype == jnp.int32 and info.second.dtype == jnp.int32 and info.first_won.dtype == bool
    assert int(later.t) == 150 and all(0 <= i < 6 and 0 <= j < 6 for i, j in infos)
    again, infos_again = _run(state, env, jax.random.key(1), 150)
    chex.assert_trees_all_equal(later, again)
    assert infos == infos_again
    guess = mdts.best_arm(jax.random.key(3), later)
    assert guess.dtype == jnp.int32 and bool(later.active[int(guess)])


@pytest.mark.parametrize("kwargs, match", [
    ({"alpha": 0.0}, "alpha must be > 0"),
    ({"alpha": 0.5}, "needs α > 1/2"),
    ({"alpha": 0.3, "c": 0.0}, "needs α > 1/2"),
    ({"epsilon": 1.0}, "epsilon must be in"),
    ({"epsilon": 0.0}, "epsilon must be in"),
    ({"partition_size": 1}, "partition_size must be in"),
    ({"partition_size": 6}, r"partition_size must be in .* use make\(slots=...\) of at least 3M/2"),
    ({"partition_size": 16, "slots": 23}, "partition_size must be in"),
    ({"c": -1.0}, "c must be >= 0"),
])
def test_bad_hyperparameters_fail_with_a_clear_message(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mdts.init(jax.random.key(0), 6, **kwargs)
    with pytest.raises(ValueError, match="num_arms"):
        mdts.init(jax.random.key(0), 1)
    with pytest.raises(ValueError, match="slots must be an int >= 2"):
        mdts.make(slots=1)
    with pytest.raises(ValueError, match="slots must be <= 256; got 257"):
        mdts.make(slots=257)


def test_log_c_from_epsilon_or_given():
    for alpha, eps, k in ((1.01, 0.01, 10), (0.51, 0.1, 136), (2.0, 0.01, 6)):
        want = math.log((4 * alpha - 1) * k * k / ((2 * alpha - 1) * eps)) / (2 * alpha - 1)
        got = float(mdts.init(jax.random.key(0), k, alpha=alpha, epsilon=eps).log_c)
        assert got == pytest.approx(want, rel=1e-4)
    algo = mdts.make(**mdts.TUNED_OPTIONS)
    assert algo is mdts.make(slots=24) and algo is not mdts.make()
    tuned = algo.init(jax.random.key(0), 136, **mdts.TUNED)  # α = 0.8⁶ < 1/2 is fine with C given
    assert float(tuned.log_c) == pytest.approx(math.log(4e5), rel=1e-6)
    assert float(tuned.alpha) == pytest.approx(0.8**6) and float(tuned.partition_size) == 16
    assert np.bincount(np.asarray(tuned.batch)).tolist() == [16] * 8 + [8]  # ⌈136/16⌉ batches


# ----------------------------------------------------------------------------------------------
# (b) parts
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("slots", [8, 24])
def test_tournament_scores_follow_the_antisymmetric_sample(slots):
    rng = np.random.default_rng(0)
    for _ in range(5):
        beat_prob = rng.random((30, 30)).astype(np.float32)
        members = np.sort(rng.choice(30, slots, replace=False)).astype(np.int32)
        live = rng.random(slots) < 0.8
        u = rng.random(slots * (slots - 1) // 2).astype(np.float32)
        block = np.triu(beat_prob[np.ix_(members, members)], 1)  # the batch's slots, arms ascending
        block = block + block.T  # each pair's probability at [a, b] and [b, a]
        got = np.asarray(mdts.tournament_scores(jnp.asarray(u), jnp.asarray(block), jnp.asarray(live)))
        want = np.zeros(slots)
        pair = 0
        for a in range(slots):
            for b in range(a + 1, slots):  # θ_ab > 1/2 with probability beat_prob[m_a, m_b]
                a_wins = u[pair] < beat_prob[members[a], members[b]]
                want[a] += a_wins and live[b]
                want[b] += (not a_wins) and live[a]
                pair += 1
        np.testing.assert_array_equal(got, want)


def test_hand_traced_run_prunes_self_duels_and_merges():
    """K = 4 in batches {0, 1}, {2, 3}; arm i beats j > i surely; W_01 = W_23 = W_02 = 20 preloaded.

    With α = 1.01, ε = 0.01, ln C = ln(3.04 · 16 / 0.0102) / 1.02 = 8.31, so U_10 = sqrt(α ln(t + C)
    / W_01) drops below 1/2 once W_01 >= 34 (33 -> 0.5045, 34 -> 0.4971). P(Beta(21, 1) > 1/2) =
    1 - 2^-21, so every sample has 0 beat 1 and 2 beat 3: steps alternate (0, 1), (2, 3) and W_01,
    W_23 grow by one per visit. Step 29 (W_01 = 34) drops arm 1 and arm 0 duels itself; step 30
    drops arm 3 and arm 2 duels itself; 2 <= 4/2 arms are left, so {0} and {2} merge (stage 2)
    and from step 31 on 0 duels 2.
    """
    state = _INIT(jax.random.key(0), 4)
    state = mdts.with_partition(state, jnp.asarray([0, 0, 1, 1]), jnp.ones(4, bool))
    wins = np.zeros((4, 4))
    wins[0, 1] = wins[2, 3] = wins[0, 2] = 20
    state = mdts.with_wins(state, wins)
    state, infos = _run(state, _env(_total_order(4)), jax.random.key(5), 33)
    want = [(0, 1), (2, 3)] * 14 + [(0, 0), (2, 2), (0, 2), (0, 2), (0, 2)]
    assert infos == want
    np.testing.assert_array_equal(np.asarray(state.active), [True, False, True, False])
    assert int(state.stage) == 2 and int(state.batch[0]) == int(state.batch[2])
    assert float(state.wins[0, 1]) == 34 and float(state.wins[2, 3]) == 34 and float(state.wins[0, 2]) == 23
    assert int(mdts.best_arm(jax.random.key(0), state)) == 0
    # the reference's pruning agrees: W_01 = 33 keeps arm 1 at t = 27, 34 drops it at t = 29
    lc = ref.log_c(1.01, 0.01, 4)
    assert lc == pytest.approx(8.31, abs=0.01)
    w = [[0, 33, 0, 0], [0] * 4, [0] * 4, [0] * 4]
    assert ref.merge_prune(w, [0, 1], ref.merge_log_t_c(27, lc), 1.01) == [0, 1]
    w[0][1] = 34
    assert ref.merge_prune(w, [0, 1], ref.merge_log_t_c(29, lc), 1.01) == [0]


def test_a_partition_wider_than_the_slots_is_refused():
    state = _INIT(jax.random.key(0), 12)
    with pytest.raises(ValueError, match=r"a batch holds 12 active arms but the state has 6 slots; .*make\(slots=12\)"):
        mdts.with_partition(state, jnp.zeros(12, jnp.int32), jnp.ones(12, bool))
    wide = mdts.make(slots=12).init(jax.random.key(0), 12)
    assert int(mdts.with_partition(wide, jnp.zeros(12, jnp.int32), jnp.ones(12, bool)).members[0].max()) == 11


def test_second_candidate_is_the_arm_the_first_most_plausibly_beats():
    """One batch {0, 1, 2} with W_01 = 20, W_02 = 2, W_12 = 20. The first candidate is 0 unless the
    sample has 2 beat 0 (probability 1/8) and the three-way tie goes elsewhere: 7/8 + 1/24 = 11/12.
    Given c = 0, d = 1 iff Beta(1, 21) < Beta(1, 3): probability 1 - E[(1 - Y)^21] = 1 - 3/24 = 7/8."""
    state = _INIT(jax.random.key(0), 3)
    state = mdts.with_partition(state, jnp.zeros(3, jnp.int32), jnp.ones(3, bool))
    wins = np.zeros((3, 3))
    wins[0, 1], wins[0, 2], wins[1, 2] = 20, 2, 20
    state = mdts.with_wins(state, wins)
    env = _env(ARXIV[:3, :3])
    infos = jax.jit(jax.vmap(lambda k: mdts.step(k, state, env)[1]))(jax.random.split(jax.random.key(1), 4000))
    first, second = np.asarray(infos.first), np.asarray(infos.second)
    assert np.mean(first == 0) == pytest.approx(11 / 12, abs=0.02)
    assert np.mean(second[first == 0] == 1) == pytest.approx(7 / 8, abs=0.025)
    # the reference's rules give the same shares
    rng, w = np.random.default_rng(0), wins.astype(int).tolist()
    firsts = [ref.first_candidate(rng, w, [0, 1, 2]) for _ in range(4000)]
    seconds = [ref.second_candidate(rng, w, [0, 1, 2], 0) for _ in range(4000)]
    assert np.mean(np.asarray(firsts) == 0) == pytest.approx(11 / 12, abs=0.02)
    assert np.mean(np.asarray(seconds) == 1) == pytest.approx(7 / 8, abs=0.025)


def test_slot_cache_matches_the_partition_through_prunes_and_merges():
    """The cached batches (``members``, ``block_wins``, ``block_beat``) and counts equal the ones
    read off ``batch``, ``active`` and ``wins`` directly, at every chunk of a run that prunes and
    merges (K = 10, M = 2): each label's active arms ascend with the slot (a dropped arm's slot
    freed), their blocks hold their wins and ``P(Beta(W_ab + 1, W_ba + 1) > 1/2)`` of slots a < b
    (scipy) at [a, b] and [b, a]."""
    from scipy import stats

    env = _env(_total_order(10))
    chunk = jax.jit(lambda s, k: jax.lax.scan(lambda c, t: (_STEP_RAW(jax.random.fold_in(k, t), c, env)[0], None),
                                              s, jnp.arange(100))[0])
    state = _INIT(jax.random.key(0), 10, partition_size=2.0)
    stages = set()
    for r in range(5):
        state = chunk(state, jax.random.key(r))
        batch, active, wins = np.asarray(state.batch), np.asarray(state.active), np.asarray(state.wins)
        members, block_wins, block_beat = (np.asarray(x) for x in (state.members, state.block_wins, state.block_beat))
        stages.add(int(state.stage))
        sizes = np.bincount(batch[active], minlength=10)
        np.testing.assert_array_equal(np.asarray(state.sizes), sizes)
        assert (float(state.num_active), int(state.num_pairs), int(state.num_live)) == (
            active.sum(), (sizes >= 2).sum(), (sizes > 0).sum())
        for label in range(10):
            arms = [i for i in range(10) if active[i] and batch[i] == label]
            slots = np.flatnonzero(members[label] < 10)
            assert members[label][slots].tolist() == arms
            for a, i in zip(slots, arms):
                for b, j in zip(slots, arms):
                    if a != b:
                        assert block_wins[label, a, b] == wins[i, j]
                    if a < b:
                        want = stats.beta.sf(0.5, wins[i, j] + 1, wins[j, i] + 1)
                        assert block_beat[label, a, b] == block_beat[label, b, a] == pytest.approx(want, abs=1e-4)
    assert stages == {1, 2, 3}  # the run pruned and merged twice between checks


# ----------------------------------------------------------------------------------------------
# (c) statistical parity with the NumPy reference (slow)
# ----------------------------------------------------------------------------------------------

T_PARITY = 20_000
RUNS_PARITY = 30


@pytest.mark.slow
@pytest.mark.parametrize("partition_size, slots", [(4, 6), (16, 24)])
def test_mean_regret_matches_numpy_reference(shared_data, partition_size, slots):
    from jaxrank.bandits import run_sweep
    from jaxrank.types import Bandit
    from jaxrank.data.preference import load_preference_matrix
    from jaxrank.envs import condorcet_winner, select_rankers

    P, _ = select_rankers(load_preference_matrix(shared_data / "preference_matrices" / "MSLR-Perfect.txt"), 10)
    winner = condorcet_winner(P)
    # reports the winner while it survives, so `correct` says whether it was never dropped
    probe = types.SimpleNamespace(__name__="merge_dts_probe", HPARAMS=mdts.HPARAMS, OPTIONS={})
    algo = mdts.make(slots=slots)
    probe.make = lambda: Bandit(algo.init, algo.step, lambda key, state: jnp.where(
        state.active[winner], winner, mdts.best_arm(key, state)))
    trace = run_sweep(jax.random.key(2020), probe, P, num_runs=RUNS_PARITY, num_steps=T_PARITY, checkpoints=[T_PARITY],
                      hparams={"partition_size": [float(partition_size)]})
    ours = trace.regret[0, 0, :, -1].astype(np.float64)
    assert trace.correct[0, 0, :, -1].all()
    theirs, dropped = [], []
    for r in range(RUNS_PARITY):
        algo = ref.MergeDTS(P, np.random.default_rng([2020, r]), partition_size=partition_size)
        theirs.append(ref.cumulative_regret(algo, P, T_PARITY))
        dropped.append(condorcet_winner(P) in algo.dropped)
    assert_same_mean(ours, theirs, f"merge_dts M={partition_size}")
    assert not any(dropped)


def test_idle_steps_duel_the_lone_survivor_or_draw_one():
    """Once pruning leaves one arm, every step duels it with itself; a partition of singletons (no
    batch of two) draws a surviving arm uniformly for its first step, then merges."""
    state = _INIT(jax.random.key(0), 3)
    state = mdts.with_partition(state, jnp.full(3, 2, jnp.int32), jnp.ones(3, bool))  # label 2: not the fallback 0
    wins = np.zeros((3, 3))
    wins[0, 1] = wins[0, 2] = wins[1, 2] = 500  # U_10, U_20 < 1/2: the first step drops arms 1 and 2
    state, infos = _run(mdts.with_wins(state, wins), _env(_total_order(3)), jax.random.key(1), 6)
    assert infos == [(0, 0)] * 6 and np.asarray(state.active).tolist() == [True, False, False]

    singles = mdts.with_partition(_INIT(jax.random.key(0), 3), jnp.arange(3, dtype=jnp.int32), jnp.ones(3, bool))
    env, first = _env(_total_order(3)), []
    for r in range(600):
        after, info = _STEP(jax.random.key(r), singles, env)
        assert int(info.second) == int(info.first) and int(after.stage) == 2 and int(after.num_pairs) >= 1
        first.append(int(info.first))
    assert all(150 <= c <= 250 for c in np.bincount(first, minlength=3))  # 200 ± 50: 4.3 binomial sd
