"""Interleaved Filter, Beat-the-Mean and MergeRUCB (``jaxrank.bandits``).

(a) The bandit contract: ``step`` keeps the state's structure, shapes and dtypes (the scan carry),
the same key gives the same run, jit equals no-jit, and a second hyperparameter value does not
retrace. (b) Hand-built deterministic parts: confidence radii, IF's end-of-pass pruning/switch
rule, BTM's scores and elimination test, MergeRUCB's partition, UCB, pruning, merge and stage
logic, each against hand values and the NumPy reference (``tests/reference/if_btm_merge.py``).
(c) Slow: mean cumulative regret at T = 20,000 over 90 runs on MSLR-Perfect K = 10 lies within
the 95% CI of the NumPy reference's 90-run mean.
"""

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized

from jaxrank.bandits import beat_the_mean as btm
from jaxrank.bandits import interleaved_filter as ifilter
from jaxrank.bandits import merge_rucb as mrucb
from jaxrank.envs import PrefMatrixEnv
from tests.conftest import ARXIV_ROWS, assert_same_mean
from tests.reference import if_btm_merge as ref

ARXIV = np.array(ARXIV_ROWS)
K = 6
MODULES = {"interleaved_filter": ifilter, "beat_the_mean": btm, "merge_rucb": mrucb}
HPARAMS = {"interleaved_filter": {"horizon": 300.0}, "beat_the_mean": {"horizon": 300.0},
           "merge_rucb": {"alpha": 1.01}}
# A second value of one hyperparameter (retracing check); 0.501 checks MergeRUCB's stable ln C.
OTHER_HPARAMS = {"interleaved_filter": {"horizon": 5000.0}, "beat_the_mean": {"horizon": 5000.0},
                 "merge_rucb": {"alpha": 0.501}}
NAMES = tuple(MODULES)


def _env(pref=ARXIV):
    return PrefMatrixEnv(jnp.asarray(pref, jnp.float32))


def _f32(hparams):
    return {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}


_INIT = {name: jax.jit(mod.init, static_argnums=1) for name, mod in MODULES.items()}
_STEP = {name: jax.jit(mod.step) for name, mod in MODULES.items()}
_MERGE = jax.jit(mrucb.merge_batches)


def _run(name, key, env, hparams, *, num_steps):
    """``num_steps`` jitted steps from ``init``: (final state, StepInfo of ``[T]`` arrays).

    A Python loop over one jitted ``step`` (compiled once per module and K) keeps the fast tests
    cheap to compile; the scan driver itself is exercised by the slow parity tests.
    """
    step = _STEP[name]
    key_init, key_steps = jax.random.split(key)
    state = _INIT[name](key_init, env.pref.shape[0], **hparams)
    infos = []
    for t in range(num_steps):
        state, info = step(jax.random.fold_in(key_steps, t), state, env)
        infos.append(info)
    return state, jax.tree.map(lambda *x: np.stack(x), *infos)


def _total_order(num_arms):
    """A deterministic total order: arm i beats arm j (i < j) with probability 1."""
    upper = np.triu(np.ones((num_arms, num_arms)), 1)
    return upper + np.tril(1.0 - upper.T, -1) + 0.5 * np.eye(num_arms)


# ----------------------------------------------------------------------------------------------
# (a) the contract
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_step_keeps_structure_shapes_and_dtypes(name):
    mod, env = MODULES[name], _env()
    key = jax.random.key(0)
    fresh = mod.init(key, K, **_f32(HPARAMS[name]))
    later, infos = _run(name, key, env, _f32(HPARAMS[name]), num_steps=200)
    for state in (fresh, later):
        new_state, info = _STEP[name](jax.random.key(1), state, env)
        chex.assert_trees_all_equal_shapes_and_dtypes(state, new_state)
        chex.assert_shape([info.first, info.second, info.first_won], ())
        assert info.first.dtype == jnp.int32 and info.second.dtype == jnp.int32
        assert info.first_won.dtype == jnp.bool_
    assert int(later.t) == 200
    assert np.all((np.asarray(infos.first) >= 0) & (np.asarray(infos.first) < K))
    assert np.all((np.asarray(infos.second) >= 0) & (np.asarray(infos.second) < K))
    guess = mod.best_arm(jax.random.key(2), later)
    assert guess.dtype == jnp.int32 and 0 <= int(guess) < K


@pytest.mark.parametrize("name", NAMES)
def test_same_key_same_run_and_other_key_other_run(name):
    run, env, hp = functools.partial(_run, name, num_steps=100), _env(), _f32(HPARAMS[name])
    state_a, infos_a = run(jax.random.key(7), env, hp)
    state_b, infos_b = run(jax.random.key(7), env, hp)
    chex.assert_trees_all_equal((state_a, infos_a), (state_b, infos_b))
    _, infos_c = run(jax.random.key(8), env, hp)
    assert not (np.array_equal(infos_a.first, infos_c.first) and np.array_equal(infos_a.second, infos_c.second)
                and np.array_equal(infos_a.first_won, infos_c.first_won))


@pytest.mark.parametrize("name", NAMES)
def test_second_hyperparameter_value_does_not_retrace(name):
    """Hyperparameters are f32 leaves: a new value neither retraces ``init`` nor changes the carry."""
    mod = MODULES[name]
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def init(key, hparams):
        return mod.init(key, K, **hparams)

    states = [init(jax.random.key(0), _f32(hp)) for hp in (HPARAMS[name], OTHER_HPARAMS[name])]
    chex.assert_trees_all_equal_shapes_and_dtypes(*states)
    assert [x.weak_type for x in jax.tree.leaves(states[0])] == [x.weak_type for x in jax.tree.leaves(states[1])]
    for state in states:
        new_state, _ = _STEP[name](jax.random.key(1), state, _env())
        chex.assert_trees_all_equal_shapes_and_dtypes(state, new_state)
        assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(new_state) if x.dtype == jnp.float32)


class JitParityTest(chex.TestCase):
    """``init``/``step``/``best_arm`` with and without jit give the same states and duels."""

    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*[(n, n) for n in NAMES])
    def test_matches_jit(self, name):
        mod, env, hp = MODULES[name], _env(), _f32(HPARAMS[name])
        init = self.variant(functools.partial(mod.init, num_arms=K))
        chex.assert_trees_all_equal(init(jax.random.key(3), **hp), jax.jit(functools.partial(mod.init, num_arms=K))(jax.random.key(3), **hp))
        # Start from a state with history so that the interesting branches are live.
        state, _ = _run(name, jax.random.key(3), env, hp, num_steps=200)
        step, step_jit = self.variant(mod.step), jax.jit(mod.step)
        ours, theirs = state, state
        for t in range(6):
            key = jax.random.fold_in(jax.random.key(4), t)
            ours, info = step(key, ours, env)
            theirs, info_jit = step_jit(key, theirs, env)
            chex.assert_trees_all_equal(info, info_jit)
        chex.assert_trees_all_close(ours, theirs, rtol=1e-6, atol=0)
        best = self.variant(mod.best_arm)
        assert int(best(jax.random.key(5), ours)) == int(jax.jit(mod.best_arm)(jax.random.key(5), theirs))


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_total_order_ends_self_duelling_the_best_arm(name):
    # Loose confidence settings (small T, γ, 1/δ) so that a few hundred duels settle everything.
    hparams = {"interleaved_filter": {"horizon": 2.0}, "beat_the_mean": {"horizon": 20.0, "gamma": 0.5},
               "merge_rucb": {"delta": 0.5}}[name]
    state, infos = _run(name, jax.random.key(11), _env(_total_order(K)), _f32(hparams), num_steps=1000)
    assert np.all(infos.first[-50:] == 0) and np.all(infos.second[-50:] == 0)
    assert int(MODULES[name].best_arm(jax.random.key(0), state)) == 0
    # the NumPy reference settles on arm 0 too
    make = {"interleaved_filter": ref.InterleavedFilter, "beat_the_mean": ref.BeatTheMean,
            "merge_rucb": ref.MergeRUCB}[name]
    algo = make(_total_order(K), np.random.default_rng(0), **hparams)
    ref.cumulative_regret(algo, _total_order(K), 1000)
    assert algo.exploit_arm == 0


def test_horizon_must_be_given_and_at_least_one():
    for mod in (ifilter, btm):
        with pytest.raises(ValueError, match="needs the horizon T: init"):
            mod.init(jax.random.key(0), K, horizon=None)
        with pytest.raises(ValueError, match=r"horizon must be >= 1; got 0\.5"):
            mod.init(jax.random.key(0), K, horizon=0.5)
    with pytest.raises(ValueError, match=r"alpha must be > 0\.5; got 0\.5"):
        mrucb.init(jax.random.key(0), K, alpha=0.5)


# ----------------------------------------------------------------------------------------------
# (b) Interleaved Filter: radius, end-of-pass rule, pass structure
# ----------------------------------------------------------------------------------------------


def test_if_confidence_radius():
    log_inv_delta = math.log(300 * K * K)
    got = np.asarray(ifilter.confidence_radius(jnp.array([0.0, 1.0, 4.0, 400.0]), jnp.float32(log_inv_delta)))
    want = [math.inf] + [ref.if_radius(n, 300, K) for n in (1, 4, 400)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


# After 400 duels of b̂ = 0 with each arm, T = 1000 and K = 6: c = sqrt(log(36000)/400) = 0.162.
# Arm 1 (P̂ = .75) is confidently beaten; arm 2 (.55) is not; arms 3 (.25) and 4 (.30) both beat b̂
# confidently and 3 is the clearer; arm 5 (.475) is undecided.
_IF_WINS = np.array([0.0, 300.0, 220.0, 100.0, 120.0, 190.0])


@pytest.mark.parametrize("if2, want_remaining", [(1.0, {4, 5}), (0.0, {2, 4, 5})])
def test_if_end_of_pass_prunes_and_switches(if2, want_remaining):
    remaining = np.arange(K) != 0
    counts = np.where(remaining, 400.0, 0.0)
    candidate, new_remaining, wins, counts_after = ifilter._end_of_pass(
        jnp.int32(0), jnp.asarray(remaining), jnp.asarray(_IF_WINS, jnp.float32), jnp.asarray(counts, jnp.float32),
        jnp.float32(math.log(1000 * K * K)), jnp.float32(if2), jnp.float32(0.3))
    assert int(candidate) == 3
    assert set(np.flatnonzero(np.asarray(new_remaining))) == want_remaining
    assert not np.any(np.asarray(wins)) and not np.any(np.asarray(counts_after))  # a new round
    # the reference's reading of lines 12-21 agrees
    b_hat, W, switched = ref.if_pass_decision(
        np.random.default_rng(0), 0, [1, 2, 3, 4, 5], dict(enumerate(_IF_WINS)), {b: 400 for b in range(K)},
        1000, K, variant=2 if if2 else 1)
    assert switched and b_hat == 3 and set(W) == want_remaining


def test_if_end_of_pass_without_switch_only_prunes_and_keeps_counts():
    wins = np.where(_IF_WINS < 0.5 * 400, 200.0, _IF_WINS)  # nobody beats b̂ any more
    remaining = np.arange(K) != 0
    counts = np.where(remaining, 400.0, 0.0)
    candidate, new_remaining, wins_after, counts_after = ifilter._end_of_pass(
        jnp.int32(0), jnp.asarray(remaining), jnp.asarray(wins, jnp.float32), jnp.asarray(counts, jnp.float32),
        jnp.float32(math.log(1000 * K * K)), jnp.float32(1.0), jnp.float32(0.3))
    assert int(candidate) == 0
    assert set(np.flatnonzero(np.asarray(new_remaining))) == {2, 3, 4, 5}
    np.testing.assert_array_equal(np.asarray(wins_after), wins)
    np.testing.assert_array_equal(np.asarray(counts_after), counts)


def test_if_passes_visit_w_in_index_order_then_refill():
    state = ifilter.init(jax.random.key(5), K, horizon=300)
    others = [b for b in range(K) if b != int(state.candidate)]
    step = _STEP["interleaved_filter"]
    for t, expect in enumerate(others * 2):
        state, info = step(jax.random.fold_in(jax.random.key(6), t), state, _env())
        assert int(info.second) == expect
        if t == len(others) - 1:  # end of the first pass: one duel with each, all pending again
            np.testing.assert_array_equal(np.asarray(state.round_counts), np.asarray(state.remaining, np.float32))
            np.testing.assert_array_equal(np.asarray(state.pending), np.asarray(state.remaining))


# ----------------------------------------------------------------------------------------------
# (b) Beat-the-Mean: radius, scores with deleted comparisons, elimination, arm choice
# ----------------------------------------------------------------------------------------------


def test_btm_confidence_radius():
    got = np.asarray(btm.confidence_radius(jnp.array([0.0, 1.0, 100.0]), jnp.float32(1000.0), jnp.float32(1.5), K))
    want = [1.0] + [ref.btm_radius(n, 1000, K, gamma=1.5) for n in (1, 100)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert want[2] == pytest.approx(3 * 1.5**2 * math.sqrt(math.log(2 * 1000 * K) / 100))


def test_btm_scores_ignore_comparisons_with_removed_arms():
    plays = np.zeros((K, K))
    wins = np.zeros((K, K))
    plays[0, [0, 1, 2]] = [2, 3, 5]
    wins[0, [0, 1, 2]] = [1, 3, 0]
    plays[1, 2] = 4
    wins[1, 2] = 4
    active = np.array([True, True, False, True, True, True])  # arm 2 removed
    p_hat, n = btm.scores(jnp.asarray(wins, jnp.float32), jnp.asarray(plays, jnp.float32), jnp.asarray(active))
    np.testing.assert_allclose(np.asarray(n), [5, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(np.asarray(p_hat), [4 / 5, 0.5, 0.5, 0.5, 0.5, 0.5], rtol=1e-6)


@pytest.mark.parametrize("n_each, removed", [(100.0, False), (4000.0, True)])
def test_btm_elimination_needs_separated_bounds(n_each, removed):
    # P̂ = (.8, .6, .5, .4, .3, .2); T = 20, so log(1/δ) = log(240) and c* = 3 sqrt(5.48/n*).
    p_hat = jnp.array([0.8, 0.6, 0.5, 0.4, 0.3, 0.2])
    n = jnp.full(K, n_each)
    active = btm._remove_worst(p_hat, n, jnp.ones(K, bool), jnp.float32(20.0), jnp.float32(1.0), jnp.float32(0.5))
    c = ref.btm_radius(n_each, 20, K)
    assert (0.2 + c <= 0.8 - c) == removed
    np.testing.assert_array_equal(np.asarray(active), [True] * 5 + [not removed])


def test_btm_duels_the_least_compared_arm_against_the_working_set():
    state = btm.init(jax.random.key(0), K, horizon=1000)
    plays = np.full((K, K), 3.0)
    plays[4] = 1.0  # arm 4 has the fewest comparisons
    state = state._replace(plays=jnp.asarray(plays, jnp.float32),
                           active=jnp.array([True, True, True, False, True, True]))
    step = _STEP["beat_the_mean"]
    seen = set()
    for t in range(40):
        new_state, info = step(jax.random.key(t), state, _env())
        assert int(info.first) == 4
        seen.add(int(info.second))
        assert float(new_state.plays[4, int(info.second)]) == plays[4, int(info.second)] + 1
        assert float(new_state.plays.sum()) == plays.sum() + 1  # only arm 4's record changes
    assert seen == {0, 1, 2, 4, 5}  # uniform over W, arm 4 itself included, removed arm 3 never


# ----------------------------------------------------------------------------------------------
# (b) MergeRUCB: partition, ln C, UCB, pruning, merging, stages
# ----------------------------------------------------------------------------------------------


def _sizes(batch):
    counts = np.bincount(np.asarray(batch))
    return sorted(counts[counts > 0].tolist())


def _partition(batch, active):
    batch, active = np.asarray(batch), np.asarray(active)
    return sorted(sorted(np.flatnonzero(active & (batch == b)).tolist()) for b in set(batch[active].tolist()))


@pytest.mark.parametrize("num_arms, sizes", [(10, [2, 4, 4]), (6, [2, 4]), (8, [4, 4])])
def test_mr_initial_partition(num_arms, sizes):
    state = _INIT["merge_rucb"](jax.random.key(1), num_arms)
    assert _sizes(state.batch) == sizes
    assert set(np.asarray(state.batch).tolist()) == set(range(len(sizes)))
    assert int(state.stage) == 1 and np.all(np.asarray(state.active))
    other = _INIT["merge_rucb"](jax.random.key(2), num_arms)
    assert _partition(state.batch, state.active) != _partition(other.batch, other.active)


def test_mr_log_c_is_finite_at_alpha_0_501():
    for alpha in (0.501, 0.51, 1.01, 2.0):
        got = float(mrucb.log_c_constant(alpha, 0.01, 10))
        assert math.isfinite(got)
        # rel 1e-4: α = 0.501 is not exact in float32, and 2α - 1 = 0.002 keeps its relative error
        assert got == pytest.approx(ref.merge_log_c(alpha, 0.01, 10), rel=1e-4)
    # where C itself is representable the log agrees with the paper's formula
    C = ((4 * 1.01 - 1) * 10**2 / ((2 * 1.01 - 1) * 0.01)) ** (1 / (2 * 1.01 - 1))
    assert float(mrucb.log_c_constant(1.01, 0.01, 10)) == pytest.approx(math.log(C), rel=1e-5)
    state = mrucb.init(jax.random.key(0), 10, alpha=0.501)
    upper = mrucb.upper_bounds(jnp.ones((10, 10)), jnp.int32(5), state.alpha, state.log_c)
    assert np.all(np.isfinite(np.asarray(upper)))


def test_mr_c_given_directly_as_in_the_authors_tuned_setting():
    tuned = mrucb.init(jax.random.key(0), 136, **mrucb.TUNED)  # α = 0.8⁶ < 1/2 is fine with C given
    assert float(tuned.log_c) == pytest.approx(math.log(4e5), rel=1e-6)
    assert float(tuned.alpha) == pytest.approx(0.8**6)
    assert np.bincount(np.asarray(tuned.batch)).tolist() == [8] * 17  # ⌈136/8⌉ batches of M = 8
    with pytest.raises(ValueError, match=r"alpha must be > 0\.5; got 0\.3; .*or pass c > 0"):
        mrucb.init(jax.random.key(0), 10, alpha=0.3)
    with pytest.raises(ValueError, match=r"c must be >= 0; got -1\.0"):
        mrucb.init(jax.random.key(0), 10, c=-1.0)


@pytest.mark.parametrize("alpha, t", [(1.01, 1), (1.01, 5000), (0.501, 77)])
def test_mr_upper_bounds_match_reference(alpha, t):
    rng = np.random.default_rng(0)
    W = rng.integers(0, 30, size=(K, K)).astype(float)
    W[1, 2] = W[2, 1] = 0.0  # an unexplored pair: U = 2
    np.fill_diagonal(W, 0.0)
    log_c = ref.merge_log_c(alpha, 0.01, K)
    got = np.asarray(mrucb.upper_bounds(jnp.asarray(W, jnp.float32), jnp.int32(t), jnp.float32(alpha),
                                        jnp.float32(log_c)))
    want = [[ref.merge_ucb(W.tolist(), i, j, ref.merge_log_t_c(t, log_c), alpha) for j in range(K)] for i in range(K)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert got[1, 2] == 2.0 and got[3, 3] == 0.5


def test_mr_prune_drops_confidently_beaten_arms_but_never_a_whole_batch():
    log_c = ref.merge_log_c(1.01, 0.01, K)
    W = np.zeros((K, K))
    W[0, 1] = 300.0  # 0 beats 1 300-0: U_10 = sqrt(1.01 ln(t + C) / 300) < 1/2
    W[2, 0], W[0, 2] = 60.0, 40.0  # undecided
    in_batch = np.array([True, True, True, False, False, False])
    upper = mrucb.upper_bounds(jnp.asarray(W, jnp.float32), jnp.int32(100), jnp.float32(1.01), jnp.float32(log_c))
    dropped = np.asarray(mrucb.prune(jnp.asarray(in_batch), upper))
    np.testing.assert_array_equal(dropped, [False, True, False, False, False, False])
    assert ref.merge_prune(W.tolist(), [0, 1, 2], ref.merge_log_t_c(100, log_c), 1.01) == [0, 2]
    # a confident 3-cycle would drop every arm of the batch: nothing is dropped
    cycle = np.zeros((K, K))
    cycle[0, 1] = cycle[1, 2] = cycle[2, 0] = 300.0
    upper = mrucb.upper_bounds(jnp.asarray(cycle, jnp.float32), jnp.int32(100), jnp.float32(1.01), jnp.float32(log_c))
    assert not np.any(np.asarray(mrucb.prune(jnp.asarray(in_batch), upper)))
    assert ref.merge_prune(cycle.tolist(), [0, 1, 2], ref.merge_log_t_c(100, log_c), 1.01) == [0, 1, 2]


# (labels of 12 arms, active mask, expected partition after one merge pass with M = 4)
_MERGES = [
    # sizes 1, 2, 4, 3 -> {1 + 4}, {2 + 3}
    ([0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4], [1] * 10 + [0, 0],
     [[0, 3, 4, 5, 6], [1, 2, 7, 8, 9]]),
    # sizes 3, 4, 5 -> every pair would exceed 3M/2 = 6: unchanged
    ([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2], [1] * 12,
     [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9, 10, 11]]),
    # inactive arms do not count: sizes 2 (2 of the 4 arms labelled 0), 5, 1 -> {1 + 5}, {2}
    ([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2], [1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0],
     [[0, 1], [4, 5, 6, 7, 8, 10]]),
]


@pytest.mark.parametrize("labels, active, want", _MERGES)
def test_mr_merge_batches_pairs_smallest_with_largest(labels, active, want):
    labels, active = jnp.asarray(labels, jnp.int32), jnp.asarray(active, bool)
    merged = _MERGE(labels, active, jnp.float32(0.7), jnp.float32(4.0), jnp.bool_(True))
    assert _partition(merged, active) == want
    batches = _partition(labels, active)
    assert sorted(sorted(b) for b in ref.merge_batches(np.random.default_rng(0), batches, 4)) == want
    unchanged = _MERGE(labels, active, jnp.float32(0.7), jnp.float32(4.0), jnp.bool_(False))
    np.testing.assert_array_equal(np.asarray(unchanged), np.asarray(labels))


def test_mr_merge_ties_are_broken_at_random():
    labels = jnp.asarray([0, 0, 0, 0, 1, 1, 1, 1, 2, 3, 3, 3], jnp.int32)  # sizes 4, 4, 1: the 1 joins a 4
    active = jnp.asarray([1] * 9 + [0] * 3, bool)
    joined = set()
    for u in np.linspace(0.0, 0.99, 9):
        merged = _MERGE(labels, active, jnp.float32(u), jnp.float32(4.0), jnp.bool_(True))
        parts = _partition(merged, active)
        assert sorted(len(p) for p in parts) == [4, 5]
        joined.add(next(p[0] for p in parts if 8 in p))
    assert joined == {0, 4}


# arm i beats arm j > i with probability 0.6: a Condorcet winner, nothing is pruned in a few duels
_MILD_ORDER_8 = 0.5 - 0.1 * np.sign(np.subtract.outer(np.arange(8), np.arange(8)))


def _mr_state(num_arms, batch, active, stage, seed=0):
    state = _INIT["merge_rucb"](jax.random.key(seed), num_arms)
    return mrucb.with_partition(state, batch, active)._replace(stage=jnp.asarray(stage, jnp.int32))


def test_mr_stage_ends_when_half_the_arms_are_gone():
    env = _env(_MILD_ORDER_8)
    state = _mr_state(8, [0, 0, 0, 0, 1, 1, 1, 1], [1, 1, 0, 0, 1, 1, 0, 0], stage=1)  # 4 <= 8 / 2
    new_state, info = _STEP["merge_rucb"](jax.random.key(1), state, env)
    assert int(np.asarray(state.batch)[int(info.first)]) == int(np.asarray(state.batch)[int(info.second)])
    assert int(info.first) != int(info.second)
    assert _partition(new_state.batch, new_state.active) == [[0, 1, 4, 5]]
    assert int(new_state.stage) == 2
    # with 5 arms left the stage goes on
    state = _mr_state(8, [0, 0, 0, 0, 1, 1, 1, 1], [1, 1, 1, 0, 1, 1, 0, 0], stage=1)
    new_state, _ = _STEP["merge_rucb"](jax.random.key(1), state, env)
    assert _partition(new_state.batch, new_state.active) == [[0, 1, 2], [4, 5]] and int(new_state.stage) == 1


def test_mr_round_robin_skips_single_arm_batches():
    env = _env(_MILD_ORDER_8)
    state = _mr_state(8, [0, 0, 0, 0, 1, 1, 1, 2], [1, 0, 0, 0, 1, 1, 1, 1], stage=1)
    step = _STEP["merge_rucb"]
    for t in range(6):
        state, info = step(jax.random.key(t), state, env)
        assert {int(info.first), int(info.second)} <= {4, 5, 6}
        assert int(state.cursor) == 1


def test_mr_all_singletons_are_merged():
    env = _env(_MILD_ORDER_8)
    # stage 3: the K / 2^s = 1 threshold is not met by 3 arms, but no batch has two arms
    state = _mr_state(8, [0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 1, 0, 1, 0, 0, 0], stage=3)
    new_state, info = _STEP["merge_rucb"](jax.random.key(1), state, env)
    assert int(info.first) == int(info.second)  # nothing to compare this step
    assert _partition(new_state.batch, new_state.active) == [[0, 2, 4]] and int(new_state.stage) == 4


# ----------------------------------------------------------------------------------------------
# (c) statistical parity with the NumPy references (slow)
# ----------------------------------------------------------------------------------------------

T_PARITY = 20_000
RUNS_PARITY = 90
PARITY = {  # name: (bandit, its hyperparameters, the reference run)
    "interleaved_filter": (ifilter, {"horizon": [T_PARITY]}, lambda P, rng: ref.InterleavedFilter(P, rng, T_PARITY)),
    "beat_the_mean": (btm, {"horizon": [T_PARITY]}, lambda P, rng: ref.BeatTheMean(P, rng, T_PARITY)),
    "merge_rucb": (mrucb, {"alpha": [1.01]}, lambda P, rng: ref.MergeRUCB(P, rng, alpha=1.01)),
    # the authors' tuned α = 0.8⁶, C = 4·10⁵, M = 8: merged batches of up to 12 arms take the row-by-row path
    "merge_rucb_tuned": (mrucb, {k: [v] for k, v in mrucb.TUNED.items()},
                         lambda P, rng: ref.MergeRUCB(P, rng, alpha=0.8**6, partition_size=8, log_c=math.log(4e5))),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PARITY))
def test_mean_regret_matches_numpy_reference(shared_data, name):
    from jaxrank.bandits import run_sweep
    from jaxrank.data.preference import load_preference_matrix
    from jaxrank.envs import select_rankers

    P, _ = select_rankers(load_preference_matrix(shared_data / "preference_matrices" / "MSLR-Perfect.txt"), 10)
    module, hparams, make = PARITY[name]
    trace = run_sweep(jax.random.key(2015), module, P, num_runs=RUNS_PARITY, num_steps=T_PARITY,
                      hparams=hparams, checkpoints=[T_PARITY])
    ours = trace.regret[0, 0, :, -1].astype(np.float64)
    theirs = np.array([ref.cumulative_regret(make(P, np.random.default_rng([2015, r])), P, T_PARITY)
                       for r in range(RUNS_PARITY)])
    assert_same_mean(ours, theirs, name)


def test_mr_row_by_row_bounds_and_pruning_equal_the_whole_matrix():
    rng = np.random.default_rng(0)
    for trial in range(20):
        W = rng.integers(0, 40, (K, K)).astype(np.float32)
        np.fill_diagonal(W, 0.0)
        if trial % 2:
            W[0, 1:], W[1:, 0] = 300.0, 0.0  # arm 0 confidently beats everyone
        in_batch = jnp.asarray(rng.random(K) < 0.6)
        wide = jnp.asarray(rng.random(12) < 0.9)  # more arms than the 8-arm fast path
        W12 = rng.integers(0, 40, (12, 12)).astype(np.float32)
        W12[3, :], W12[:, 3] = 200.0, 0.0
        args12 = (jnp.int32(100), jnp.float32(1.01), mrucb.log_c_constant(1.01, 0.01, 12))
        np.testing.assert_array_equal(mrucb.prune_rows(wide, jnp.asarray(W12), *args12),
                                      mrucb.prune(wide, mrucb.upper_bounds(jnp.asarray(W12), *args12)))
        t, alpha = jnp.int32(rng.integers(1, 5000)), jnp.float32(1.01)
        log_c = mrucb.log_c_constant(1.01, 0.01, K)
        upper = mrucb.upper_bounds(jnp.asarray(W), t, alpha, log_c)
        np.testing.assert_array_equal(mrucb.prune_rows(in_batch, jnp.asarray(W), t, alpha, log_c),
                                      mrucb.prune(in_batch, upper))
        for arm in range(K):
            np.testing.assert_array_equal(mrucb.upper_column(jnp.asarray(W), arm, t, alpha, log_c), upper[:, arm])
            np.testing.assert_array_equal(mrucb.upper_row(jnp.asarray(W), arm, t, alpha, log_c), upper[arm])


def test_mr_kept_batch_sizes_match_a_recount_after_merges():
    env = _env(_MILD_ORDER_8 + 0.3 * np.sign(np.subtract.outer(np.arange(8), np.arange(8))) * -1)
    state = _INIT["merge_rucb"](jax.random.key(3), 8)
    run = jax.jit(lambda s, key: jax.lax.scan(lambda s, t: (mrucb.step(jax.random.fold_in(key, t), s, env)[0], s.stage),
                                              s, jnp.arange(3000)))
    state, stages = run(state, jax.random.key(4))
    assert int(stages[-1]) > 1  # some merges happened
    np.testing.assert_array_equal(state.sizes, mrucb.batch_sizes(state.batch, state.active))
