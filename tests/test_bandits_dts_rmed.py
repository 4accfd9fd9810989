"""Double Thompson Sampling and RMED1 (``jaxrank.bandits.dts`` / ``rmed``) against the NumPy
references in ``tests/reference/dts_rmed.py``: the bandit contract, hand-built states, the D-TS
sampling law on fixed scoresheets, and (slow) mean regret on MSLR-Perfect K = 10.
"""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxrank.bandits import dts, rmed
from jaxrank.bandits import run_sweep
from jaxrank.data.preference import EMBEDDED_DEFAULT, load_preference_matrix
from jaxrank.envs import PrefMatrixEnv
from tests.conftest import assert_same_mean
from tests.reference import dts_rmed as ref

ARXIV = load_preference_matrix(EMBEDDED_DEFAULT)  # 6 arms, arm 0 is the Condorcet winner
ALGOS = [pytest.param(dts, id="dts"), pytest.param(rmed, id="rmed")]


def _env(pref):
    return PrefMatrixEnv(jnp.asarray(pref, jnp.float32))


_jit_step = jax.jit(lambda algo, state, key, env: algo.step(key, state, env), static_argnums=0)
_jit_best_arm = jax.jit(lambda algo, state, key: algo.best_arm(key, state), static_argnums=0)


def _state_after(algo, num_steps, seed=0):
    """The state after ``num_steps`` duels on ArXiv (the jitted step in a loop: one compile per algorithm)."""
    state = algo.init(jax.random.key(seed), ARXIV.shape[0])
    for t in range(num_steps):
        state, _ = _jit_step(algo, state, jax.random.fold_in(jax.random.key(seed + 1), t), _env(ARXIV))
    return state


# ----------------------------------------------------------------------------------------------
# (a) the bandit contract
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("num_steps", [0, 14, 80])  # 14: RMED1's last round-robin duel for K = 6
def test_step_keeps_structure_and_is_deterministic(algo, num_steps):
    state = _state_after(algo, num_steps)
    key = jax.random.key(7)
    new_state, info = _jit_step(algo, state, key, _env(ARXIV))
    chex.assert_trees_all_equal_shapes_and_dtypes(state, new_state)
    assert info.first.dtype == jnp.int32 and info.second.dtype == jnp.int32
    assert info.first.shape == info.second.shape == info.first_won.shape == ()
    assert info.first_won.dtype == jnp.bool_
    assert int(new_state.t) == num_steps + 1
    assert float(jnp.sum(new_state.wins)) == num_steps + 1
    chex.assert_trees_all_equal((new_state, info), _jit_step(algo, state, key, _env(ARXIV)))
    arm = _jit_best_arm(algo, new_state, key)
    assert arm.dtype == jnp.int32 and 0 <= int(arm) < ARXIV.shape[0]
    assert int(arm) == int(_jit_best_arm(algo, new_state, key))


@pytest.mark.parametrize("algo, num_steps", [
    pytest.param(dts, 80, id="dts-80"), pytest.param(rmed, 14, id="rmed-14"), pytest.param(rmed, 80, id="rmed-80")])
def test_jit_matches_no_jit(algo, num_steps):
    state = _state_after(algo, num_steps)
    key = jax.random.key(11)
    chex.assert_trees_all_equal(algo.step(key, state, _env(ARXIV)), _jit_step(algo, state, key, _env(ARXIV)))
    assert int(algo.best_arm(key, state)) == int(_jit_best_arm(algo, state, key))


def test_rmed_leader_first_is_an_option_of_make():
    # D-TS runs through the sweep in the slow tests; its compile is too costly to repeat here.
    paper, library = (run_sweep(jax.random.key(0), "rmed", ARXIV, num_runs=3, num_steps=300, checkpoints=[15, 300],
                            options={"leader_first": flag}) for flag in (False, True))
    np.testing.assert_array_equal(paper.regret[..., 0], library.regret[..., 0])  # same round robin
    assert not np.array_equal(paper.regret, library.regret)
    for trace in (paper, library):
        assert np.all(np.isfinite(trace.regret)) and np.all(trace.regret[..., 1] >= trace.regret[..., 0])
    with pytest.raises(ValueError, match="'leader_first' is a static option, not a hyperparameter"):
        run_sweep(jax.random.key(0), "rmed", ARXIV, num_runs=1, num_steps=10, hparams={"leader_first": [1.0]})


def test_init_rejects_impossible_hyperparameters():
    with pytest.raises(ValueError, match="alpha"):
        dts.init(jax.random.key(0), 4, alpha=0.0)
    with pytest.raises(ValueError, match="kweight"):
        rmed.init(jax.random.key(0), 4, kweight=-1.0)
    with pytest.raises(ValueError, match="num_arms"):
        rmed.init(jax.random.key(0), 1)


# ----------------------------------------------------------------------------------------------
# (b) D-TS on hand-built scoresheets
# ----------------------------------------------------------------------------------------------


def test_dts_bounds_by_hand():
    W = np.array([[0.0, 3.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    t, alpha = 4, 0.5
    rad = math.sqrt(alpha * math.log(t) / 4.0)
    expected_u = np.array([[0.5, 0.75 + rad, 2.0], [0.25 + rad, 0.5, 2.0], [2.0, 2.0, 0.5]])
    expected_l = np.array([[0.5, 0.75 - rad, 0.0], [0.25 - rad, 0.5, 0.0], [0.0, 0.0, 0.5]])
    upper, lower = dts.confidence_bounds(jnp.asarray(W, jnp.float32), jnp.int32(t), jnp.float32(alpha))
    np.testing.assert_allclose(upper, expected_u, rtol=1e-6)
    np.testing.assert_allclose(lower, expected_l, rtol=1e-6, atol=1e-7)
    ref_u, ref_l = ref.dts_bounds_loop(W, t, alpha)
    np.testing.assert_allclose(ref_u, expected_u, rtol=1e-12)
    np.testing.assert_allclose(ref_l, expected_l, rtol=1e-12, atol=1e-12)


def test_dts_candidates_by_hand():
    # U_10 = 1/16 + sqrt(0.51 ln 33 / 32) ~ 0.30 < 1/2, so arm 1 scores 1; arms 0 and 2 score 2.
    W = np.array([[0.0, 30.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    got = dts.candidates(jnp.asarray(W, jnp.float32), jnp.int32(33), jnp.float32(0.51))
    assert set(np.flatnonzero(np.asarray(got))) == {0, 2} == ref.dts_candidates_loop(W, 33, 0.51)


def _pair_frequencies(first, second, num_arms):
    table = np.zeros((num_arms, num_arms))
    np.add.at(table, (np.asarray(first), np.asarray(second)), 1.0)
    return table / table.sum()


# Many keys from one state; lax.map compiles in about half the time of vmap here.
_dts_steps = jax.jit(lambda state, keys, env: jax.lax.map(lambda k: dts.step(k, state, env), keys))


def _dts_pairs(W, t, num_samples=10_000, seed=0):
    """(first, second) frequencies ``[K, K]`` of D-TS's step t on a fixed scoresheet: (JAX, NumPy)."""
    K = W.shape[0]
    state = dts.with_wins(dts.init(jax.random.key(0), K), W)._replace(t=jnp.int32(t - 1))
    keys = jax.random.split(jax.random.key(seed), num_samples)
    _, info = _dts_steps(state, keys, _env(np.full((K, K), 0.5)))
    runs = ref.DTSRuns(num_samples, K)
    runs.W[:] = W
    runs.t = t - 1
    ref_first, ref_second = runs.select(np.random.default_rng(seed))
    return _pair_frequencies(info.first, info.second, K), _pair_frequencies(ref_first, ref_second, K)


def _with_weak_arms(top, num_arms=6):
    """A ``[6, 6]`` scoresheet: ``top`` for the first arms, each of which confidently beats the rest
    (40 wins to 5); the extra arms have not met each other. One K for both tests: one compile."""
    top = np.asarray(top, dtype=float)
    n = top.shape[0]
    W = np.zeros((num_arms, num_arms))
    W[:n, :n] = top
    W[:n, n:], W[n:, :n] = 40.0, 5.0
    return W


def test_dts_second_candidate_uses_the_column_of_the_first():
    # Arm 0 confidently beats 2..5 and leads 1 (W_01 = 25, W_10 = 20), so C = {0} (upper Copeland
    # scores 5, 4, 4, 2, 2, 2 at t = 100). Correct (column) sample: θ_10 ~ Beta(21, 26) beats
    # θ_00 = 1/2 w.p. 0.23; θ_i0 ~ Beta(6, 41) for i >= 2 almost never. The duelpy bug (row:
    # Beta(W_0i + 1, W_i0 + 1)) would pick arm 2 most of the time.
    W = _with_weak_arms([[0, 25, 40], [20, 0, 5], [5, 40, 0]])
    n = 10_000
    jax_freq, ref_freq = _dts_pairs(W, 100, n)
    assert jax_freq[0].sum() == 1.0 and ref_freq[0].sum() == 1.0  # first is always arm 0
    p = stats.beta(21, 26).sf(0.5)
    tol = 4.0 * math.sqrt(p * (1 - p) / n)
    assert abs(jax_freq[0, 1] - p) < tol and abs(ref_freq[0, 1] - p) < tol
    assert jax_freq[0, 2:].sum() < 1e-3 and ref_freq[0, 2:].sum() < 1e-3


def test_dts_pair_law_matches_reference_on_a_cycle():
    # 0 > 1 > 3 > 0 confidently, 0 > 2, 1 > 2 > 3, and all of them > 4, 5. At t = 100 the upper
    # Copeland scores are (4, 4, 3, 3, 1, 1), so C = {0, 1}; arm 3 confidently beats 0 (L_30 > 1/2)
    # and 0 confidently beats 1, so neither may be the second candidate of those.
    hi, lo = 40, 5
    W = _with_weak_arms([[0, hi, hi, lo], [lo, 0, hi, hi], [lo, lo, 0, hi], [hi, lo, lo, 0]])
    n = 10_000
    jax_freq, ref_freq = _dts_pairs(W, 100, n, seed=3)
    for freq in (jax_freq, ref_freq):
        assert freq[2:].sum() == 0.0  # first ∈ C
        assert freq[0, 3] == 0.0 and freq[1, 0] == 0.0  # l_{second, first} <= 1/2
    tol = 4.0 * np.sqrt(np.maximum(ref_freq * (1 - ref_freq), 1e-4) * 2.0 / n)
    np.testing.assert_array_less(np.abs(jax_freq - ref_freq), tol)


# ----------------------------------------------------------------------------------------------
# (b) RMED1 on hand-built scoresheets
# ----------------------------------------------------------------------------------------------

W3 = np.array([[0.0, 3.0, 1.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])  # μ̂_01 = 3/4, μ̂_02 = 1/4, μ̂_12 = 1/2


def test_rmed_divergence_by_hand():
    d_quarter = 0.25 * math.log(0.5) + 0.75 * math.log(1.5)  # d(1/4, 1/2)
    expected = [4 * d_quarter, 4 * d_quarter + 0.0, 0.0]  # arm 1: N_10 d(1/4) + N_12 d(1/2) = 4 d(1/4)
    np.testing.assert_allclose(rmed.divergences(jnp.asarray(W3, jnp.float32)), expected, rtol=1e-6)
    np.testing.assert_allclose([ref.rmed_divergence_loop(W3.tolist(), i) for i in range(3)], expected, rtol=1e-12)
    # An unexplored pair is left out; d(0, 1/2) = log 2.
    W = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    np.testing.assert_allclose(rmed.divergences(jnp.asarray(W, jnp.float32)), [2 * math.log(2), 0, 0], rtol=1e-6)


@pytest.mark.parametrize("leader_first, expected", [(False, [2, 0, 1]), (True, [2, 2, 1])])
def test_rmed_opponent_by_hand(leader_first, expected):
    # Ô_0 = {2}; Ô_1 = {0 (μ̂ 1/4), 2 (μ̂ 1/2)}; Ô_2 = {1 (μ̂ 1/2)}; the leader argmin I is arm 2.
    W = jnp.asarray(W3, jnp.float32)
    for arm, want in enumerate(expected):
        got = rmed.opponent(W, jnp.int32(arm), jnp.float32(0.5), jnp.int32(2), jnp.float32(leader_first))
        assert int(got) == want
        alg = ref.RMED1(3, leader_first=leader_first)
        alg.W = W3.tolist()
        alg.I = [ref.rmed_divergence_loop(alg.W, i) for i in range(3)]
        assert alg.opponent(np.random.default_rng(0), arm) == want


def test_rmed_opponent_ties_and_self_duel():
    # Arm 3 beats everyone (Ô_3 = ∅: self-duel); arm 0 is beaten equally by 2 and 3 (μ̂ = 1/4 each).
    W = np.zeros((4, 4))
    W[:3, :3] = W3
    W[3, :3], W[:3, 3] = 3.0, 1.0
    state_w = jnp.asarray(W, jnp.float32)
    leader = jnp.int32(3)
    picks = {int(rmed.opponent(state_w, jnp.int32(0), jnp.float32(u), leader, jnp.float32(0.0)))
             for u in np.linspace(0, 0.999, 20)}
    assert picks == {2, 3}
    for lf in (0.0, 1.0):
        assert int(rmed.opponent(state_w, jnp.int32(3), jnp.float32(0.3), leader, jnp.float32(lf))) == 3


def test_rmed_round_robin_then_fixed_lists():
    K = ARXIV.shape[0]
    state = rmed.init(jax.random.key(0), K)
    pairs = []
    for t in range(K * (K - 1) // 2):
        state, info = rmed.step(jax.random.key(t), state, _env(ARXIV))
        pairs.append((int(info.first), int(info.second)))
    assert pairs == [(i, j) for i in range(K) for j in range(i + 1, K)]
    assert bool(jnp.all(state.current)) and bool(jnp.all(state.remaining)) and not bool(jnp.any(state.upcoming))
    np.testing.assert_array_equal(state.wins + state.wins.T, 1.0 - np.eye(K))
    _, info = rmed.step(jax.random.key(99), state, _env(ARXIV))
    assert int(info.first) == 0  # the main loop starts with the lowest index of L_C


def test_rmed_list_updates_by_hand():
    # Deterministic duels: arm 2 beats everyone, 0 beats 1. With kweight = 0 the bar is log t.
    pref = np.array([[0.5, 1.0, 0.0], [0.0, 0.5, 0.0], [1.0, 1.0, 0.5]])
    W = 10.0 * W3
    state = rmed.init(jax.random.key(0), 3, kweight=0.0)._replace(wins=jnp.asarray(W, jnp.float32), t=jnp.int32(49))
    alg = ref.RMED1(3, kweight=0.0)
    alg.W, alg.t = W.tolist(), 49
    alg.I = [ref.rmed_divergence_loop(alg.W, i) for i in range(3)]
    alg.LC, alg.pos, alg.LR, alg.LN = [0, 1, 2], 0, {0, 1, 2}, set()
    rng = np.random.default_rng(0)
    # t=50: (0, 2), 2 wins, I_0 = 41 d(10/41) ~ 5.6 > log 50, so L_N stays empty.
    # t=51: (1, 0) (μ̂_10 = 1/4 < μ̂_12 = 1/2), 0 wins. t=52: (2, 1), 2 wins; the loop ends and only
    # arm 2 (I = 0) enters the next one. t=53: L_C = {2} and Ô_2 = ∅, so arm 2 duels itself.
    expected = [
        ((0, 2), [1, 1, 1], [0, 1, 1], [0, 0, 0]),
        ((1, 0), [1, 1, 1], [0, 0, 1], [0, 0, 0]),
        ((2, 1), [0, 0, 1], [0, 0, 1], [0, 0, 0]),
        ((2, 2), [0, 0, 1], [0, 0, 1], [0, 0, 0]),
    ]
    for t, (pair, current, remaining, upcoming) in enumerate(expected):
        state, info = rmed.step(jax.random.key(t), state, _env(pref))
        assert (int(info.first), int(info.second)) == pair
        np.testing.assert_array_equal(state.current, np.asarray(current, bool))
        np.testing.assert_array_equal(state.remaining, np.asarray(remaining, bool))
        np.testing.assert_array_equal(state.upcoming, np.asarray(upcoming, bool))
        assert alg.step(rng, pref) == pair
        assert set(alg.LC) == set(np.flatnonzero(current)) and alg.LR == set(np.flatnonzero(remaining))


# ----------------------------------------------------------------------------------------------
# (c) statistical parity with the NumPy references (slow)
# ----------------------------------------------------------------------------------------------

NUM_RUNS, HORIZON = 90, 20_000


@pytest.mark.slow
def test_dts_regret_matches_reference(mslr10):
    trace = run_sweep(jax.random.key(2016), "dts", mslr10, num_runs=NUM_RUNS, num_steps=HORIZON, checkpoints=[HORIZON])
    assert_same_mean(trace.regret[0, 0, :, -1], ref.simulate_dts(mslr10, HORIZON, NUM_RUNS, seed=2016), "dts")


@pytest.mark.slow
def test_rmed1_regret_matches_reference(mslr10):
    trace = run_sweep(jax.random.key(2015), "rmed", mslr10, num_runs=NUM_RUNS, num_steps=HORIZON, checkpoints=[HORIZON])
    assert_same_mean(trace.regret[0, 0, :, -1], ref.simulate_rmed1(mslr10, HORIZON, NUM_RUNS, seed=2015), "rmed1")
