"""Condorcet and Copeland regret (``jaxrank.metrics.duel_regret``) by hand, and the sweep's
scoring of tied Copeland winners."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import bandits, envs
from jaxrank.data.preference import EMBEDDED_DEFAULT, load_preference_matrix
from jaxrank.metrics import copeland_scores, copeland_winners, regret_table
from jaxrank.types import Bandit, StepInfo

ARXIV = load_preference_matrix(EMBEDDED_DEFAULT)  # 6 arms, Condorcet winner 0

# 0 beats 1, 2; 1 beats 2, 3; 2 beats 3; 3 beats 0: no Condorcet winner, Copeland winners {0, 1}.
TIED = np.array([
    [0.5, 0.6, 0.7, 0.4],
    [0.4, 0.5, 0.6, 0.8],
    [0.3, 0.4, 0.5, 0.55],
    [0.6, 0.2, 0.45, 0.5],
])


def test_copeland_scores_and_tied_winners_by_hand():
    np.testing.assert_allclose(copeland_scores(TIED), [2 / 3, 2 / 3, 1 / 3, 1 / 3])
    np.testing.assert_array_equal(copeland_winners(TIED), [True, True, False, False])
    assert envs.condorcet_winner(TIED) is None


def test_copeland_table_by_hand_and_auto_picks_it_without_a_condorcet_winner():
    table, winners = regret_table(TIED, "copeland")
    scores = np.array([2, 2, 1, 1]) / 3
    for i in range(4):
        for j in range(4):
            assert table[i, j] == pytest.approx(2 / 3 - (scores[i] + scores[j]) / 2, abs=1e-7)
    assert table[0, 1] == table[1, 0] == table[0, 0] == 0.0 and table[2, 3] > 0
    auto_table, auto_winners = regret_table(TIED)
    np.testing.assert_array_equal(auto_table, table)
    np.testing.assert_array_equal(auto_winners, winners)


def test_auto_is_condorcet_regret_when_there_is_a_condorcet_winner():
    table, winners = regret_table(ARXIV)
    gap = ARXIV[0] - 0.5
    np.testing.assert_allclose(table, 0.5 * (gap[:, None] + gap[None, :]), rtol=1e-6)
    np.testing.assert_array_equal(winners, np.arange(6) == 0)
    copeland, copeland_best = regret_table(ARXIV, "copeland")  # the Condorcet winner is the Copeland winner
    np.testing.assert_array_equal(copeland_best, winners)
    assert copeland[0, 0] == 0 and np.all(np.delete(copeland[0], 0) > 0)


def _fixed_bandit(first: int, second: int, guess: int):
    """A stand-in bandit that always duels ``(first, second)`` and reports ``guess``."""

    def init(key, num_arms):
        return jnp.zeros((), jnp.int32)

    def step(key, state, env):
        won = env.duel(key, jnp.int32(first), jnp.int32(second), jax.random.uniform(key))
        return state + 1, StepInfo(jnp.int32(first), jnp.int32(second), won)

    def best_arm(key, state):
        return jnp.int32(guess)

    # An algorithm module as the sweep takes it: make, HPARAMS, OPTIONS.
    return types.SimpleNamespace(__name__=f"fixed_{first}_{second}_{guess}", HPARAMS={}, OPTIONS={},
                                 make=lambda: Bandit(init, step, best_arm))


@pytest.mark.parametrize(
    "first, second, guess, per_step, correct",
    [
        (0, 1, 1, 0.0, True),  # two tied winners: no regret, and either one is a correct guess
        (1, 1, 0, 0.0, True),
        (0, 2, 1, 1 / 6, True),  # 2/3 - (2/3 + 1/3)/2
        (2, 3, 2, 1 / 3, False),
    ],
)
def test_sweep_scores_tied_copeland_winners_as_a_set(first, second, guess, per_step, correct):
    trace = bandits.run_sweep(jax.random.key(0), _fixed_bandit(first, second, guess), TIED, num_runs=2,
                          num_steps=30, checkpoints=[10, 30])
    np.testing.assert_allclose(trace.regret[0, 0], np.broadcast_to([10 * per_step, 30 * per_step], (2, 2)), rtol=1e-5)
    assert np.all(trace.correct == correct)
    np.testing.assert_array_equal(trace.suboptimal, float(per_step > 0))


def _counted(algo: Bandit) -> Bandit:
    """``algo`` whose state also counts every duel ``(first, second)`` in ``[K, K]`` int32: exact play counts."""

    def init(key, num_arms, **hparams):
        return algo.init(key, num_arms, **hparams), jnp.zeros((num_arms, num_arms), jnp.int32)

    def step(key, state, env):
        inner, info = algo.step(key, state[0], env)
        return (inner, state[1].at[info.first, info.second].add(1)), info

    return Bandit(init, step, lambda key, state: algo.best_arm(key, state[0]))


# Arm 0 wins; duels (0, 1) cost 0.0028 and (2, 3) cost 0.4 (Condorcet regret (Δ_0i + Δ_0j) / 2).
SMALL_AND_LARGE = np.array([
    [0.5, 0.5056, 0.9, 0.9],
    [0.4944, 0.5, 0.6, 0.6],
    [0.1, 0.4, 0.5, 0.5],
    [0.1, 0.4, 0.5, 0.5],
])


def _schedule(num_large: int):
    """A stand-in bandit that duels (2, 3) for its first ``num_large`` steps, then (0, 1)."""

    def init(key, num_arms):
        return jnp.zeros((), jnp.int32)

    def step(key, t, env):
        large = t < num_large
        first, second = jnp.where(large, 2, 0), jnp.where(large, 3, 1)
        return t + 1, StepInfo(first, second, env.duel(key, first, second))

    return Bandit(init, step, lambda key, t: jnp.zeros((), jnp.int32))


@pytest.mark.parametrize("algorithm", ["schedule", "rcs"])
def test_lane_regret_is_exact_over_a_million_steps(algorithm):
    """Regret after 10⁶ steps equals Σ_ij n_ij Δ(i, j) in float64 from the exact play counts ``n``
    the lane's own bandit kept, to 1e-6 of it. The stand-in first reaches 24,000 on 0.4-cost duels,
    then adds 940,000 duels of cost 0.0028, each below half a float32 ulp of the running total: a
    plain float32 sum loses a quarter of that part. RCS on the arXiv matrix is a real bandit's mix."""
    steps = 1_000_000
    pref, algo = (SMALL_AND_LARGE, _schedule(60_000)) if algorithm == "schedule" else (ARXIV, bandits.rcs.make())
    score = bandits.scoring(pref)
    env = envs.PrefMatrixEnv(jnp.asarray(pref, jnp.float32))
    counted = _counted(algo)

    @jax.jit
    def run(key):
        lane = bandits.lane.init_lane(key, counted, pref.shape[0], 1)
        return bandits.lane.advance_segment(counted, lane, (0, steps, 0), env, score)

    lane = run(jax.random.key(3))
    counts = np.asarray(lane.state[1], np.int64)
    table = np.asarray(score.table, np.float64)
    exact = float(np.sum(counts * table))
    assert int(counts.sum()) == steps
    assert float(lane.rec_regret[0]) + float(lane.rec_regret_low[0]) == pytest.approx(exact, rel=1e-6)
    if algorithm == "schedule":  # the same costs summed in plain float32, one after the other
        costs = np.r_[np.full(60_000, table[2, 3]), np.full(steps - 60_000, table[0, 1])].astype(np.float32)
        naive = float(np.add.accumulate(costs, dtype=np.float32)[-1])
        assert abs(naive - exact) > 0.25 * (exact - 60_000 * table[2, 3])
