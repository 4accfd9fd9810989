"""Sparring (``jaxrank.bandits.sparring``) with its three inner bandits: hand-traced steps from
hand-built states, the sampling laws of Thompson sampling and Exp3 against values worked out from
their formulas, argument checks, and (slow) mean regret on MSLR-Perfect K = 10 against the NumPy
reference in ``tests/reference/sparring.py``.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.bandits import ALGORITHMS, run_sweep, sparring
from jaxrank.envs import PrefMatrixEnv
from tests.conftest import assert_same_mean
from tests.reference import sparring as ref

# Deterministic duels: arm 0 beats 1 and 2, arm 1 beats 2 (a self-duel is a fair coin).
ORDERED = np.array([[0.5, 1.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.5]])


def _env(pref):
    return PrefMatrixEnv(jnp.asarray(pref, jnp.float32))


def _state(wins, plays, log_weights=None, **hparams):
    """A hand-built state: ``[2, K]`` rows for the left and right instances; ``t`` = plays per instance."""
    plays = np.asarray(plays, np.float32)
    state = sparring.init(jax.random.key(0), plays.shape[1], **hparams)
    log_weights = np.zeros_like(plays) if log_weights is None else log_weights
    return state._replace(wins=jnp.asarray(wins, jnp.float32), plays=jnp.asarray(plays),
                          log_weights=jnp.asarray(log_weights, jnp.float32), t=jnp.int32(plays[0].sum()))


def _steps(inner, state, pref, num_keys, seed=0):
    """``(states, infos)`` of one step from ``state`` under ``num_keys`` keys (one compile)."""
    algo = sparring.make(inner=inner)
    keys = jax.random.split(jax.random.key(seed), num_keys)
    return jax.jit(jax.vmap(lambda k: algo.step(k, state, _env(pref))))(keys)


# ----------------------------------------------------------------------------------------------
# (a) hand-traced steps
# ----------------------------------------------------------------------------------------------


def test_ucb_index_by_hand():
    # alpha = 0.5, n = 6 plays: index = S/N + sqrt(0.5 ln 6 / N); the unplayed arm is +inf.
    wins, plays = np.array([1.0, 2.0, 0.0, 0.0]), np.array([2.0, 3.0, 1.0, 0.0])
    c = 0.5 * math.log(6)
    expected = [1 / 2 + math.sqrt(c / 2), 2 / 3 + math.sqrt(c / 3), math.sqrt(c), math.inf]
    got = sparring.ucb_index(jnp.asarray(wins), jnp.asarray(plays), jnp.int32(6), jnp.float32(0.5))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_ucb_step_by_hand():
    # Left (6 plays): indices 1.169, 1.213, 0.946 (test above), so x = 1. Right: arm 2 is unplayed,
    # so y = 2. Arm 1 beats arm 2: the left bandit gets reward 1 on arm 1, the right 0 on arm 2.
    state = _state(wins=[[1, 2, 0], [1, 3, 0]], plays=[[2, 3, 1], [2, 4, 0]], alpha=0.5)
    new, info = jax.jit(sparring.make(inner="ucb").step)(jax.random.key(3), state, _env(ORDERED))
    assert (int(info.first), int(info.second), bool(info.first_won)) == (1, 2, True)
    np.testing.assert_array_equal(new.wins, [[1, 3, 0], [1, 3, 0]])
    np.testing.assert_array_equal(new.plays, [[2, 4, 1], [2, 4, 1]])
    np.testing.assert_array_equal(new.log_weights, np.zeros((2, 3)))
    assert int(new.t) == 7


def test_ucb_plays_the_unplayed_arms_first_uniformly():
    # From scratch every arm is unplayed (index +inf): each instance picks uniformly among all 3.
    _, info = _steps("ucb", sparring.init(jax.random.key(0), 3), ORDERED, 3000)
    for arms in (info.first, info.second):
        np.testing.assert_allclose(np.bincount(np.asarray(arms), minlength=3) / 3000, [1 / 3] * 3, atol=0.04)


def test_ts_step_by_hand():
    # Left: Beta(401, 1) for arm 1 against Beta(1, 401) for the others, so x = 1; right likewise
    # y = 2 (the chance of another pick is below 1e-100). Arm 1 beats arm 2: the left bandit gets
    # reward 1 on arm 1, the right a failure on arm 2.
    state = _state(wins=[[0, 400, 0], [0, 0, 400]], plays=[[400] * 3, [400] * 3])
    news, infos = _steps("ts", state, ORDERED, 8)
    np.testing.assert_array_equal(infos.first, [1] * 8)
    np.testing.assert_array_equal(infos.second, [2] * 8)
    np.testing.assert_array_equal(infos.first_won, [True] * 8)
    for i in range(8):
        np.testing.assert_array_equal(news.wins[i], [[0, 401, 0], [0, 0, 400]])
        np.testing.assert_array_equal(news.plays[i], [[400, 401, 400], [400, 400, 401]])
        assert int(news.t[i]) == 1201


def test_ts_pick_law_by_hand():
    # Left: θ_0 ~ Beta(2, 1) (one play, one win), θ_1 ~ Beta(1, 1): P(θ_0 > θ_1) = ∫ 2x · x dx = 2/3.
    # Right: θ_0 ~ Beta(1, 2) (one play, a loss): P(θ_0 > θ_1) = ∫ 2(1 - x) x dx = 1/3.
    n = 4000
    state = _state(wins=[[1, 0], [0, 0]], plays=[[1, 0], [1, 0]])
    _, infos = _steps("ts", state, [[0.5, 0.5], [0.5, 0.5]], n, seed=1)
    tol = 4 * math.sqrt(2 / 9 / n)
    assert abs(np.mean(np.asarray(infos.first) == 0) - 2 / 3) < tol
    assert abs(np.mean(np.asarray(infos.second) == 0) - 1 / 3) < tol


def test_exp3_step_law_and_update_by_hand():
    # γ = 0.3, K = 3. Left w = (1, 2, 5): p = 0.7 w / 8 + 0.1 = (0.1875, 0.275, 0.5375).
    # Right w = (3, 1, 1): p = 0.7 w / 5 + 0.1 = (0.52, 0.24, 0.24). The played arm's log w gains
    # γ r / (p K) (r its reward), every other entry stays.
    gamma, n = 0.3, 4000
    log_w = np.log([[1.0, 2.0, 5.0], [3.0, 1.0, 1.0]])
    p = np.array([[0.1875, 0.275, 0.5375], [0.52, 0.24, 0.24]])
    state = _state(wins=np.zeros((2, 3)), plays=[[2, 2, 2], [2, 2, 2]], log_weights=log_w, gamma=gamma)
    news, infos = _steps("exp3", state, ORDERED, n, seed=2)
    x, y, x_won = np.asarray(infos.first), np.asarray(infos.second), np.asarray(infos.first_won)
    for arms, probs in ((x, p[0]), (y, p[1])):
        np.testing.assert_allclose(np.bincount(arms, minlength=3) / n, probs, atol=4 * math.sqrt(0.25 / n))
    np.testing.assert_array_equal(x_won[x != y], (x < y)[x != y])  # ORDERED: the lower index wins
    for i in range(0, n, 97):
        expected = log_w.copy()
        expected[0, x[i]] += gamma * float(x_won[i]) / (p[0, x[i]] * 3)
        expected[1, y[i]] += gamma * float(not x_won[i]) / (p[1, y[i]] * 3)
        expected -= expected.max(axis=1, keepdims=True)  # log w is kept with each row's maximum at 0
        np.testing.assert_allclose(news.log_weights[i], expected, rtol=1e-5, atol=1e-6)
        wins, plays = np.zeros((2, 3)), np.full((2, 3), 2.0)
        wins[0, x[i]] += x_won[i]
        wins[1, y[i]] += not x_won[i]
        plays[0, x[i]] += 1
        plays[1, y[i]] += 1
        np.testing.assert_array_equal(news.wins[i], wins)
        np.testing.assert_array_equal(news.plays[i], plays)


def test_best_arm_is_the_arm_played_most_ties_uniform():
    state = _state(wins=np.zeros((2, 3)), plays=[[5, 1, 0], [0, 2, 2]])
    assert int(sparring.best_arm(jax.random.key(0), state)) == 0  # totals 5, 3, 2
    tied = _state(wins=np.zeros((2, 3)), plays=[[2, 0, 1], [0, 1, 1]])  # totals 2, 1, 2
    picks = {int(sparring.best_arm(jax.random.key(k), tied)) for k in range(20)}
    assert picks == {0, 2}


# ----------------------------------------------------------------------------------------------
# (b) settings
# ----------------------------------------------------------------------------------------------


def test_default_gamma_is_auer_corollary_tuning_for_the_runs_arms_and_horizon():
    # sqrt(10 ln 10 / ((e - 1) 20000)) = sqrt(23.0259 / 34365.6) = 0.025885; K = 136, T = 10^7: 0.0062357
    assert sparring.HPARAMS["gamma"] == 0.0
    assert float(sparring.init(jax.random.key(0), 10, horizon=20_000).gamma) == pytest.approx(0.025885, abs=1e-6)
    assert float(sparring.init(jax.random.key(0), 136, horizon=1e7).gamma) == pytest.approx(0.0062357, rel=1e-4)
    assert float(sparring.init(jax.random.key(0), 10, gamma=0.51).gamma) == pytest.approx(0.51)
    grid = jax.vmap(lambda g, h: sparring.init(jax.random.key(0), 10, gamma=g, horizon=h).gamma)(
        jnp.array([0.0, 0.3]), jnp.array([20_000.0, 5.0]))
    np.testing.assert_allclose(grid, [0.025885, 0.3], atol=1e-6)


def test_init_rejects_impossible_hyperparameters():
    with pytest.raises(ValueError, match=r"alpha must be > 0; got 0\.0"):
        sparring.init(jax.random.key(0), 4, alpha=0.0)
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]; got -0\.1"):
        sparring.init(jax.random.key(0), 4, gamma=-0.1)
    with pytest.raises(ValueError, match=r"horizon must be >= 1; got 0\.5"):
        sparring.init(jax.random.key(0), 4, horizon=0.5)
    with pytest.raises(ValueError, match=r"gamma must be in \[0, 1\]; got 1\.5"):
        sparring.init(jax.random.key(0), 4, gamma=1.5)
    with pytest.raises(ValueError, match="num_arms must be an int >= 2; got 1"):
        sparring.init(jax.random.key(0), 1)


def test_make_binds_the_inner_bandit():
    assert sparring.make(inner="ts") is sparring.make(inner="ts") is ALGORITHMS.build("sparring", inner="ts")
    assert len({sparring.make(inner=inner) for inner in ("ucb", "ts", "exp3")}) == 3
    with pytest.raises(ValueError, match="inner must be one of 'ucb', 'ts', 'exp3'; got 'bogus'"):
        sparring.make(inner="bogus")
    with pytest.raises(ValueError, match="inner must be one of 'ucb', 'ts', 'exp3'; got 'UCB'"):
        ALGORITHMS.build("sparring", inner="UCB")


# ----------------------------------------------------------------------------------------------
# (c) statistical parity with the NumPy reference (slow)
# ----------------------------------------------------------------------------------------------

NUM_RUNS, HORIZON = 90, 20_000


@pytest.mark.slow
@pytest.mark.parametrize("inner, seed", [("ucb", 2014), ("ts", 2012), ("exp3", 2002)])
def test_sparring_regret_matches_reference(mslr10, inner, seed):
    trace = run_sweep(jax.random.key(seed), "sparring", mslr10, num_runs=NUM_RUNS, num_steps=HORIZON,
                      checkpoints=[HORIZON], options={"inner": inner})
    theirs = ref.simulate_sparring(mslr10, HORIZON, NUM_RUNS, seed=seed, inner=inner,
                                   alpha=sparring.HPARAMS["alpha"],
                                   gamma=float(sparring.exp3_gamma(mslr10.shape[0], HORIZON)))
    assert_same_mean(trace.regret[0, 0, :, -1], theirs, f"sparring-{inner}")
