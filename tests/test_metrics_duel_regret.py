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
    trace = bandits.run_sweep(_fixed_bandit(first, second, guess), jax.random.key(0), TIED, num_runs=2,
                          num_steps=30, checkpoints=[10, 30])
    np.testing.assert_allclose(trace.regret[0, 0], np.broadcast_to([10 * per_step, 30 * per_step], (2, 2)), rtol=1e-5)
    assert np.all(trace.correct == correct)
    np.testing.assert_array_equal(trace.suboptimal, float(per_step > 0))
