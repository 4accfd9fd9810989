"""RCS, RUCB and Condorcet SAVAGE: deterministic parts by hand, the exact RCS tournament against
naive Beta sampling, the state contract, determinism and input validation."""

import functools
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
import scipy.stats

from jaxrank import bandits, envs
from jaxrank.bandits import rcs, rucb, savage
from jaxrank.data.preference import EMBEDDED_DEFAULT, load_preference_matrix
from jaxrank.metrics.duel_regret import regret_table
from jaxrank.utils import log_prob_beta_at_least_half, random_argmax, random_choice

ARXIV = load_preference_matrix(EMBEDDED_DEFAULT)  # 6 arms, Condorcet winner 0
ENV = envs.PrefMatrixEnv(jnp.asarray(ARXIV, jnp.float32))
ALGOS = [(rcs, {"alpha": 0.51}), (rucb, {"alpha": 0.51}), (savage, {"horizon": 300.0})]


# --- the Beta tail probability ------------------------------------------------------------------


def test_beta_tail_matches_scipy_float64_small_to_huge_counts():
    rng = np.random.default_rng(0)
    n = np.concatenate([rng.integers(2, 64, 3000), rng.integers(64, 5000, 3000), rng.integers(5000, 3_000_000, 3000)])
    gap = np.round(rng.normal(0, 3 * np.sqrt(n))).clip(-n + 2, n - 2)
    a, b = np.maximum((n + gap) // 2, 1), np.maximum((n - gap) // 2, 1)
    reference = scipy.special.betainc(b, a, 0.5)  # P(Beta(a, b) >= 1/2) = I_{1/2}(b, a)
    ours = np.exp(np.asarray(log_prob_beta_at_least_half(a, b), np.float64))
    np.testing.assert_allclose(ours, reference, atol=5e-5)
    # the case float32 betainc gets wrong (0.528 instead of 0.516)
    np.testing.assert_allclose(np.exp(float(log_prob_beta_at_least_half(30010.0, 30000.0))),
                               scipy.special.betainc(30000, 30010, 0.5), atol=1e-5)
    # symmetric pairs sum to one
    total = np.exp(np.asarray(log_prob_beta_at_least_half(a, b))) + np.exp(np.asarray(log_prob_beta_at_least_half(b, a)))
    np.testing.assert_allclose(total, 1.0, atol=5e-5)


# --- tie-breaking helpers -----------------------------------------------------------------------


def test_random_argmax_is_uniform_over_ties_and_respects_where():
    values = jnp.array([1.0, 3.0, 0.0, 3.0, 3.0])
    picks = jax.vmap(lambda u: random_argmax(u, values))(jnp.linspace(0, 0.999, 300))
    assert set(np.unique(picks)) == {1, 3, 4}
    assert np.all(np.bincount(np.asarray(picks), minlength=5)[[1, 3, 4]] == 100)
    where = jnp.array([True, False, True, False, False])
    assert int(random_argmax(0.7, values, where)) == 0
    assert int(random_choice(0.99, jnp.array([False, True, False]))) == 1


# --- RCS: the O(K) tournament is the paper's tournament -----------------------------------------


def _naive_tournament(wins, rng, num_samples):
    """Paper Algorithm 1 step I by sampling every Θ_ij ~ Beta(W_ij + 1, W_ji + 1)."""
    k = wins.shape[0]
    counts = np.zeros(k + 1)
    iu = np.triu_indices(k, 1)
    for _ in range(num_samples):
        theta = np.full((k, k), 0.5)
        theta[iu] = rng.beta(wins[iu] + 1, wins.T[iu] + 1)
        theta.T[iu] = 1 - theta[iu]
        champions = np.flatnonzero((theta >= 0.5).all(axis=1))
        counts[champions[0] if champions.size else k] += 1
    return counts


@pytest.mark.parametrize("seed", [0, 1])
def test_rcs_champion_distribution_equals_naive_beta_tournament(seed):
    rng = np.random.default_rng(seed)
    wins = rng.integers(0, 12, (5, 5)).astype(np.float32)
    wins[0] += rng.integers(5, 30, 5)  # make one arm a likely champion
    np.fill_diagonal(wins, 0)
    state = rcs.init(None, 5)
    log_q = np.asarray(log_prob_beta_at_least_half(wins + 1, wins.T + 1)) * (1 - np.eye(5))
    state = state._replace(wins=jnp.asarray(wins), log_q=jnp.asarray(log_q, jnp.float32),
                           log_champion=jnp.asarray(log_q.sum(1), jnp.float32))
    p = np.asarray(rcs.champion_probabilities(state), np.float64)
    expected = np.r_[p, 1 - p.sum()]
    observed = _naive_tournament(wins, rng, 20_000)
    keep = expected * observed.sum() > 5
    _, pvalue = scipy.stats.chisquare(observed[keep], expected[keep] / expected[keep].sum() * observed[keep].sum())
    assert pvalue > 1e-3, (observed, expected * observed.sum())


def test_rcs_incremental_state_matches_recomputation_after_many_steps():
    state = rcs.init(None, 6, alpha=0.51)
    run = jax.jit(lambda s, key: jax.lax.scan(lambda s, t: (rcs.step(jax.random.fold_in(key, t), s, ENV)[0], None),
                                              s, jnp.arange(300))[0])
    state = run(state, jax.random.key(3))
    w = np.asarray(state.wins)
    log_q = np.asarray(log_prob_beta_at_least_half(w + 1, w.T + 1)) * (1 - np.eye(6))
    np.testing.assert_allclose(np.asarray(state.log_q), log_q, atol=1e-6)
    np.testing.assert_allclose(np.asarray(state.log_champion), log_q.sum(1), atol=1e-5)
    np.testing.assert_allclose(state.champion_prob, rcs.champion_probabilities(state), rtol=1e-6)
    assert float(np.asarray(state.champion_counts).sum()) == 300  # paper: every champion counts
    assert float(w.sum()) == 300


def test_rcs_opponent_maximises_ucb_relative_to_champion():
    # Arm 0 always wins the tournament (overwhelming wins); U_j0 decides the opponent.
    wins = np.zeros((3, 3), np.float32)
    wins[0, 1], wins[1, 0] = 50, 10
    wins[0, 2], wins[2, 0] = 100, 60
    state = rcs.with_wins(rcs.init(None, 3, alpha=2.0), wins)._replace(t=jnp.int32(99))
    env = envs.PrefMatrixEnv(jnp.full((3, 3), 0.5))
    t = 100
    u1 = 10 / 60 + np.sqrt(2.0 * np.log(t) / 60)
    u2 = 60 / 160 + np.sqrt(2.0 * np.log(t) / 160)
    assert u2 > u1 > 0.5  # so the opponent of champion 0 must be arm 2
    assert float(rcs.champion_probabilities(state)[0]) > 0.99
    firsts, seconds = [], []
    for s in range(20):
        _, info = rcs.step(jax.random.key(s), state, env)
        firsts.append(int(info.first))
        seconds.append(int(info.second))
    assert firsts.count(0) >= 18  # P(champion 0) is about 0.99
    assert all(d == 2 for c, d in zip(firsts, seconds) if c == 0)  # argmax_j U_j0 = arm 2


def test_ucb_applies_x_over_zero_to_each_fraction():
    wins = jnp.array([[0.0, 3.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    upper = np.asarray(rucb.upper_bounds(wins, jnp.int32(10), jnp.float32(0.5)))
    expected = np.array([
        [0.5, 0.75 + np.sqrt(0.5 * np.log(10) / 4), 2.0],
        [0.25 + np.sqrt(0.5 * np.log(10) / 4), 0.5, 2.0],
        [2.0, 2.0, 0.5],
    ])
    np.testing.assert_allclose(upper, expected, rtol=1e-6)


# --- RUCB: candidates, hypothesis B, opponent ----------------------------------------------------


def _rucb_state(wins, hypothesis, t):
    return rucb.init(None, wins.shape[0], alpha=0.51)._replace(
        wins=jnp.asarray(wins, jnp.float32), hypothesis=jnp.int32(hypothesis), t=jnp.int32(t))


def test_rucb_single_candidate_becomes_hypothesis_and_opponent_is_best_challenger():
    # After many duels arm 0 beats everyone and everyone else is confidently beaten by 0.
    wins = np.array([[0, 900, 900], [100, 0, 500], [300, 500, 0]], np.float32)
    state = _rucb_state(wins, -1, 2000)
    env = envs.PrefMatrixEnv(jnp.full((3, 3), 0.5))
    new_state, info = rucb.step(jax.random.key(0), state, env)
    assert int(info.first) == 0 and int(new_state.hypothesis) == 0
    upper = np.asarray(rucb.upper_bounds(jnp.asarray(wins), jnp.int32(2001), jnp.float32(0.51)))
    assert int(info.second) == int(np.argmax(upper[:, 0]))


def test_rucb_hypothesis_is_picked_half_of_the_time_among_several_candidates():
    wins = np.zeros((4, 4), np.float32)  # every pair unexplored: all arms are candidates
    env = envs.PrefMatrixEnv(jnp.full((4, 4), 0.5))
    keys = jax.vmap(jax.random.key)(jnp.arange(400))
    firsts_of = jax.jit(jax.vmap(lambda key, state: rucb.step(key, state, env)[1].first, in_axes=(0, None)))
    firsts = np.asarray(firsts_of(keys, _rucb_state(wins, 2, 5)))
    assert 0.42 < np.mean(firsts == 2) < 0.58
    assert set(np.unique(firsts)) == {0, 1, 2, 3}
    # without B the choice is uniform
    firsts = np.asarray(firsts_of(keys, _rucb_state(wins, -1, 5)))
    assert np.all(np.abs(np.bincount(firsts, minlength=4) / 400 - 0.25) < 0.08)


def test_rucb_drops_hypothesis_that_left_the_candidates_and_never_self_duels_on_ties():
    # Arm 1 is confidently beaten by arm 0, so B = {1} must be emptied.
    wins = np.array([[0, 500, 0], [20, 0, 0], [0, 0, 0]], np.float32)
    env = envs.PrefMatrixEnv(jnp.full((3, 3), 0.5))
    for s in range(30):
        new_state, info = rucb.step(jax.random.key(s), _rucb_state(wins, 1, 1000), env)
        assert int(info.first) != 1
        assert int(info.second) != int(info.first)  # U ties at 2.0 (unexplored) exclude c itself
        assert int(new_state.hypothesis) in (-1, int(info.first))


# --- SAVAGE: pair choice and elimination --------------------------------------------------------


def test_savage_duels_least_compared_active_pair_and_eliminates_beaten_arms():
    state = savage.init(None, 4, horizon=1000.0)
    wins = np.array([[0, 3, 3, 3], [3, 0, 3, 3], [3, 3, 0, 1], [3, 3, 3, 0]], np.float32)
    state = state._replace(wins=jnp.asarray(wins))
    env = envs.PrefMatrixEnv(jnp.full((4, 4), 0.5))
    _, info = savage.step(jax.random.key(0), state, env)
    assert {int(info.first), int(info.second)} == {2, 3}  # the only pair compared 4 times
    # Arm 3 beats arm 1 confidently: 1 must go, no other arm may.
    radius = float(savage.confidence_radius(jnp.float32(400), 4, jnp.float32(1000)))
    wins = np.full((4, 4), 200.0, np.float32)
    np.fill_diagonal(wins, 0)
    wins[1, 3], wins[3, 1] = 200 * (1 - radius) - 40, 200 * (1 + radius) + 40
    state = state._replace(wins=jnp.asarray(wins))
    new_state, _ = savage.step(jax.random.key(1), state, env)
    np.testing.assert_array_equal(np.asarray(new_state.active), [True, False, True, True])


def test_savage_exploits_the_last_arm_and_reports_it():
    state = savage.init(None, 4, horizon=100.0)._replace(active=jnp.array([False, False, True, False]))
    new_state, info = savage.step(jax.random.key(0), state, ENV._replace(pref=jnp.full((4, 4), 0.5)))
    assert int(info.first) == int(info.second) == 2
    assert int(savage.best_arm(jax.random.key(1), new_state)) == 2


# --- the contract shared by every algorithm ----------------------------------------------------


@pytest.mark.parametrize("algo, hparams", ALGOS, ids=lambda x: getattr(x, "__name__", ""))
def test_step_jit_matches_no_jit_and_keeps_the_state(algo, hparams):
    """(The tree, shapes and dtypes are checked for every bandit in test_bandits_contract.)"""
    state = algo.init(jax.random.key(0), 6, **hparams)
    step = jax.jit(algo.step)
    key = jax.random.key(7)
    for _ in range(5):
        key, sub = jax.random.split(key)
        eager = algo.step(sub, state, ENV)
        jitted = step(sub, state, ENV)
        chex.assert_trees_all_close(eager, jitted)
        chex.assert_trees_all_equal_shapes_and_dtypes(state, jitted[0])
        state = eager[0]


def test_sweep_is_deterministic_and_runs_do_not_depend_on_the_run_count():
    run = functools.partial(bandits.run_sweep, jax.random.key(5), "rcs", ARXIV, num_steps=200, checkpoints=[50, 200])
    four, again, two = run(num_runs=4), run(num_runs=4), run(num_runs=2)
    np.testing.assert_array_equal(four.regret, again.regret)
    np.testing.assert_array_equal(four.regret[:, :, :2], two.regret)  # vmap over runs == fewer runs
    other = bandits.run_sweep(jax.random.key(6), "rcs", ARXIV, num_runs=4, num_steps=200, checkpoints=[50, 200])
    assert not np.array_equal(four.regret, other.regret)


def test_sweep_matches_a_python_loop_of_single_steps():
    table, winners = regret_table(ARXIV)
    winner = int(np.flatnonzero(winners)[0])
    trace = bandits.run_sweep(jax.random.key(2), "rucb", ARXIV, num_runs=2, num_steps=120, checkpoints=[7, 120],
                          hparams={"alpha": [0.51]})
    step = jax.jit(rucb.step)
    for r in range(2):
        key_init, key_steps, _ = jax.random.split(jax.random.fold_in(jax.random.key(2), r), 3)
        state, regret, off = rucb.init(key_init, 6, alpha=0.51), 0.0, 0
        for t in range(120):
            state, info = step(jax.random.fold_in(key_steps, t), state, ENV)
            regret += float(table[int(info.first), int(info.second)])
            off += not (int(info.first) == int(info.second) == winner)
            if t + 1 == 7:
                np.testing.assert_allclose(trace.regret[0, 0, r, 0], regret, rtol=1e-5)
        np.testing.assert_allclose(trace.regret[0, 0, r, 1], regret, rtol=1e-5)
        np.testing.assert_allclose(trace.suboptimal[0, 0, r, 1], off / 120, rtol=1e-6)


def test_sweep_vmaps_matrices_and_settings_and_each_lane_equals_its_own_run():
    """Every (matrix, setting) slice of one vmapped sweep equals that matrix and setting
    swept alone (lanes never interact); the setting matters. (One compile for all of them is
    checked for every bandit in test_bandits_contract.)"""
    other = envs.condorcet_matrix(jax.random.key(4), ARXIV.shape[0])
    prefs = np.stack([ARXIV, np.asarray(other)])
    alphas = [0.3, 0.51, 1.0]
    trace = bandits.run_sweep(jax.random.key(0), "rcs", prefs, num_runs=3, num_steps=100,
                          hparams={"alpha": alphas}, checkpoints=[50, 100])
    assert trace.regret.shape == (2, 3, 3, 2)
    for m in range(2):
        for h, alpha in enumerate(alphas):
            alone = bandits.run_sweep(jax.random.key(0), "rcs", prefs[m], num_runs=3, num_steps=100,
                                  hparams={"alpha": [alpha]}, checkpoints=[50, 100])
            np.testing.assert_array_equal(trace.regret[m, h], alone.regret[0, 0])
            np.testing.assert_array_equal(trace.correct[m, h], alone.correct[0, 0])
    assert not np.array_equal(trace.regret[0, 0], trace.regret[0, 2])
    assert np.all(trace.regret >= 0) and np.all((trace.suboptimal >= 0) & (trace.suboptimal <= 1))


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pref, message",
    [
        (np.full((2, 3), 0.5), "P must be a square K x K matrix; got shape (2, 3)."),
        (np.full((1, 1), 0.5), "P needs at least 2 arms; got K = 1."),
        (np.array([[0.5, 0.7], [0.4, 0.5]]), "P[0, 1] = 0.7 breaks P[i, j] + P[j, i] = 1 (tolerance 1e-06)."),
        (np.array([[0.6, 0.7], [0.3, 0.5]]), "P[0, 0] = 0.6 is on the diagonal but not 1/2 (tolerance 1e-06)."),
        (np.array([[0.5, 1.2], [-0.2, 0.5]]), "P[0, 1] = 1.2 is outside [0, 1] (tolerance 1e-06)."),
        (np.array([[0.5, np.nan], [np.nan, 0.5]]), "P[0, 1] = nan is not finite (tolerance 1e-06)."),
    ],
)
def test_invalid_preference_matrices_are_rejected(pref, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        envs.check_preference_matrix(pref)


def test_condorcet_regret_needs_a_condorcet_winner():
    with pytest.raises(ValueError, match="no Condorcet winner"):
        bandits.run_sweep(jax.random.key(0), "rcs", envs.cyclic_matrix(4), num_runs=1, num_steps=10, regret="condorcet")
    with pytest.raises(ValueError, match="regret must be one of"):
        bandits.run_sweep(jax.random.key(0), "rcs", ARXIV, num_runs=1, num_steps=10, regret="borda")


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"hparams": {"alpha": [0.0]}}, "alpha must be > 0"),
        ({"hparams": {"alpha": [-1.0]}}, "alpha must be > 0"),
        ({"num_steps": 0}, "num_steps"),
        ({"num_runs": 0}, "num_runs"),
    ],
)
def test_bad_hyperparameters_fail_before_compiling(kwargs, words):
    args = {"num_runs": 2, "num_steps": 10, **kwargs}
    with pytest.raises(ValueError, match=words):
        bandits.run_sweep(jax.random.key(0), "rcs", ARXIV, **args)


def test_savage_horizon_below_one_and_single_arm_are_rejected():
    with pytest.raises(ValueError, match="horizon must be >= 1"):
        bandits.run_sweep(jax.random.key(0), "savage", ARXIV, num_runs=1, num_steps=10, hparams={"horizon": [0.0]})
    with pytest.raises(ValueError, match="num_arms must be an int >= 2"):
        rcs.init(None, 1)


def test_paper_ranker_selection_and_synthetic_matrices():
    pref = np.eye(136) * 0 + 0.5
    _, ids = envs.select_rankers(pref, 10)
    assert ids == [1, 10, 100, 101, 102, 103, 104, 105, 106, 107]
    synthetic = np.asarray(envs.condorcet_matrix(jax.random.key(0), 7))
    envs.check_preference_matrix(synthetic, atol=1e-6)
    assert envs.condorcet_winner(synthetic) == 0
    cyclic = np.asarray(envs.cyclic_matrix(5))
    envs.check_preference_matrix(cyclic)
    assert envs.condorcet_winner(cyclic) is None


@pytest.fixture
def mslr_perfect_10(shared_data):
    """The RCS paper's K = 10 subset of MSLR-Perfect: ``(pref [10, 10], ranker ids)``."""
    return envs.select_rankers(load_preference_matrix(shared_data / "preference_matrices" / "MSLR-Perfect.txt"), 10)


def test_condorcet_winner_of_shared_mslr_perfect_subset(mslr_perfect_10):
    sub, ids = mslr_perfect_10
    assert ids[envs.condorcet_winner(sub)] == 106
    assert 0.5475 <= sub[envs.condorcet_winner(sub)][np.arange(10) != envs.condorcet_winner(sub)].min() < 0.5485


# --- parity with the independent NumPy references (tests/reference/dueling_bandits.py) ---------


@pytest.mark.slow
@pytest.mark.parametrize("name, hparams", [("rcs", {"alpha": [0.501]}), ("rucb", {"alpha": [0.501]}),
                                           ("savage", {"horizon": [20000.0]})])
def test_mean_regret_at_20k_matches_numpy_reference(mslr_perfect_10, name, hparams):
    import json
    from pathlib import Path

    stored = json.loads((Path(__file__).parent / "reference" / "mslr_perfect_k10_T20000.json").read_text())
    reference = np.asarray(stored["algorithms"][name]["final_regret"])
    pref, _ = mslr_perfect_10
    trace = bandits.run_sweep(jax.random.key(11), name, pref, num_runs=90, num_steps=20000, hparams=hparams,
                          checkpoints=[20000])
    ours = trace.regret[0, 0, :, -1]
    se = np.sqrt(ours.var(ddof=1) / ours.size + reference.var(ddof=1) / reference.size)
    assert abs(ours.mean() - reference.mean()) <= 1.96 * se, (ours.mean(), reference.mean(), se)
    assert trace.correct[0, 0, :, -1].mean() == stored["algorithms"][name]["accuracy"][-1] == 1.0


def test_matrix_files_with_and_without_a_size_header(shared_data, tmp_path):
    five = load_preference_matrix(shared_data / "preference_matrices" / "MSLR_Informational_5_Condorcet.txt")
    assert five.shape == (5, 5) and envs.condorcet_winner(envs.check_preference_matrix(five)) == 0
    assert load_preference_matrix(shared_data / "preference_matrices" / "MSLR-Perfect.txt").shape == (136, 136)
    bad = tmp_path / "bad.txt"
    bad.write_text("3\n0.5 0.5\n0.5 0.5\n")
    with pytest.raises(ValueError, match="size header '3' does not match the 2 matrix rows"):
        load_preference_matrix(bad)
    bad.write_text("0.5 0.6\n0.4\n")
    with pytest.raises(ValueError, match="rows have different lengths"):
        load_preference_matrix(bad)
