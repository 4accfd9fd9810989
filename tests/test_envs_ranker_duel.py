"""Interleaved ranker duels: env contract, a better ranker wins, determinism, validation, bandit steps."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import bandits, data, envs
from jaxrank.bandits import rcs
from jaxrank.envs import estimate_preference_matrix
from jaxrank.clicks import cascade_model
from jaxrank.envs.ranker_duel import (
    ProbabilisticDuelEnv,
    TeamDraftDuelEnv,
    paper_feature_ids,
    ranker_duel_env,
    single_feature_rankers,
)

NUM_FEATURES = 5


@pytest.fixture(scope="module")
def queries():
    # Labels depend on features 1 and 2 only; 3..5 are noise.
    return data.synthetic_queries(jax.random.key(0), num_queries=8, list_size=8, num_features=NUM_FEATURES,
                                  num_informative=2, num_grades=5, noise=0.1)


def _env(queries, method="probabilistic", ids=(1, 2, 3, 4, 5), **kw):
    return ranker_duel_env(queries, single_feature_rankers(ids, NUM_FEATURES), cascade_model("perfect", 5),
                           method=method, **kw)


@jax.jit
def _duels(env, key, firsts, seconds):
    """``[A, 1000]`` duel results for each pair ``(firsts[a], seconds[a])``; one compile per env type."""
    keys = jax.random.split(key, 1000)
    return jax.vmap(lambda i, j: jax.vmap(lambda k: env.duel(k, i, j))(keys))(firsts, seconds)


# (informative feature 1, noise feature 5), the mirror, and a self-duel
FIRSTS, SECONDS = jnp.array([0, 4, 2]), jnp.array([4, 0, 2])


def test_single_feature_rankers_are_one_hot_and_paper_ids_sort_as_strings():
    w = np.asarray(single_feature_rankers([3, 1], 4))
    np.testing.assert_array_equal(w, [[0, 0, 1, 0], [1, 0, 0, 0]])
    assert w.dtype == np.float32
    assert paper_feature_ids(136, 10) == [1, 10, 100, 101, 102, 103, 104, 105, 106, 107]


@pytest.mark.parametrize("method, env_type", [("probabilistic", ProbabilisticDuelEnv),
                                              pytest.param("team_draft", TeamDraftDuelEnv, marks=pytest.mark.slow)])
def test_env_contract(queries, method, env_type):
    env = _env(queries, method)
    assert type(env) is env_type and env.method == method
    assert env.num_arms == 5 and env.list_size == 10
    won = _duels(env, jax.random.key(3), FIRSTS, SECONDS)
    assert won.shape == (3, 1000) and won.dtype == jnp.bool_
    rebuilt = jax.tree.unflatten(jax.tree.structure(env), jax.tree.leaves(env))
    assert type(rebuilt) is env_type


@pytest.mark.parametrize("method", ["probabilistic", pytest.param("team_draft", marks=pytest.mark.slow)])
def test_a_strictly_better_ranker_wins_most_duels_and_duels_are_deterministic(queries, method):
    env = _env(queries, method)
    won = np.asarray(_duels(env, jax.random.key(1), FIRSTS, SECONDS))
    rates = won.mean(axis=1)
    assert rates[0] > 0.55 and rates[1] < 0.45  # feature 1 (informative) vs feature 5 (noise): > 3 s.e. from 1/2
    assert abs(rates[2] - 0.5) < 0.06  # a self-duel always ties: a fair coin
    np.testing.assert_array_equal(won, np.asarray(_duels(env, jax.random.key(1), FIRSTS, SECONDS)))
    assert not np.array_equal(won, np.asarray(_duels(env, jax.random.key(2), FIRSTS, SECONDS)))


def test_validation_names_the_bad_value(queries):
    with pytest.raises(ValueError, match="feature id 6 is outside \\[1, 5\\]"):
        single_feature_rankers([1, 6], NUM_FEATURES)
    with pytest.raises(ValueError, match="feature id 0 is outside"):
        single_feature_rankers([0], NUM_FEATURES)
    with pytest.raises(ValueError, match="list_size must be an int >= 1; got 0"):
        _env(queries, list_size=0)
    with pytest.raises(ValueError, match="unknown interleaving method 'balanced'"):
        _env(queries, "balanced")
    with pytest.raises(ValueError, match="D = 5"):
        ranker_duel_env(queries, np.ones((2, 4)), cascade_model("perfect", 5))
    with pytest.raises(ValueError, match="only 2 grades"):
        ranker_duel_env(queries, single_feature_rankers([1, 2], 5), cascade_model("perfect", 2))
    with pytest.raises(ValueError, match="tau must be a positive"):
        _env(queries, tau=0.0)


def test_rcs_duels_on_the_interleaving_env_win_at_the_estimated_rates(queries):
    """A bandit's own duels against the interleaving env win at the rates the estimator measures for
    the same env (RCS's scoresheet after 3,000 steps vs ``estimate_preference_matrix``)."""
    env = _env(queries, ids=(1, 5))  # an informative feature against a noise feature
    state = rcs.init(jax.random.key(0), env.num_arms, alpha=0.51)
    run = jax.jit(lambda s, k: jax.lax.scan(lambda c, t: rcs.step(jax.random.fold_in(k, t), c, env), s,
                                            jnp.arange(3000)))
    final, info = run(state, jax.random.key(2))
    chex.assert_trees_all_equal_shapes_and_dtypes(state, final)
    wins = np.asarray(final.wins)
    played = wins[0, 1] + wins[1, 0]
    assert played > 300  # the champion duels the other arm often enough to measure
    pref, _ = estimate_preference_matrix(jax.random.key(9), queries, env.rankers, cascade_model("perfect", 5),
                                         "probabilistic", 20_000, verbose=False)
    rate = wins[0, 1] / played
    assert abs(rate - pref[0, 1]) < 4 * np.sqrt(pref[0, 1] * (1 - pref[0, 1]) / played) + 0.01, (rate, pref[0, 1])
    assert pref[0, 1] > 0.55  # the informative feature does win: the comparison is not vacuous


@pytest.mark.slow
def test_the_sweep_runs_a_bandit_on_the_interleaving_env(queries):
    """``run_sweep(..., env=...)`` over a shared DuelEnv equals the pure ``run_lane`` of each lane."""
    env = _env(queries, ids=(1, 2, 5))
    pref, _ = estimate_preference_matrix(jax.random.key(3), queries, env.rankers, cascade_model("perfect", 5),
                                         "probabilistic", 4000, verbose=False)
    if envs.condorcet_winner(pref) is None:
        pytest.skip("the estimated matrix has no Condorcet winner")
    trace = bandits.run_sweep(jax.random.key(1), "rcs", pref, env=env, num_runs=3, num_steps=120, checkpoints=[40, 120])
    assert trace.regret.shape == (1, 1, 3, 2)
    score = bandits.scoring(pref)
    for r in range(3):
        record = jax.jit(lambda k: bandits.run_lane(k, rcs.make(), env, score, num_steps=120,
                                                    checkpoints=np.array([40, 120])))(
            jax.random.fold_in(jax.random.key(1), r))
        np.testing.assert_allclose(trace.regret[0, 0, r], record.regret, rtol=1e-6)
        np.testing.assert_array_equal(trace.correct[0, 0, r], record.correct)
    assert np.all(np.diff(trace.regret[0, 0], axis=-1) >= 0)