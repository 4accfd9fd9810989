"""``convention="mergedts"`` of REX3 and Sparring (UCB, Exp3): the MergeDTS authors' baselines, step
rules by hand and regret parity with NumPy references written from their code's logic
(``tests/reference/mergedts_baselines.py``)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.bandits import ALGORITHMS, rex3, run_sweep, sparring
from jaxrank.envs import PrefMatrixEnv
from tests.conftest import assert_same_mean
from tests.reference import mergedts_baselines as ref


def test_anytime_gamma_by_hand():
    # K = 10: K ln K = 23.0259; t <= 10^4 gives sqrt(23.0259 / 10^4) = 0.047985; t = 10^6: 0.0047985.
    assert float(sparring.anytime_gamma(10, jnp.int32(1), 1.0)) == pytest.approx(0.047985, rel=1e-5)
    assert float(sparring.anytime_gamma(10, jnp.int32(10**6), 1.0)) == pytest.approx(0.0047985, rel=1e-5)
    assert float(sparring.anytime_gamma(3, jnp.int32(1), 0.5)) == pytest.approx(min(0.5, math.sqrt(3 * math.log(3) / 1e4)))
    assert float(sparring.anytime_gamma(1000, jnp.int32(1), 0.5)) == 0.5


def test_rex3_mergedts_takes_the_full_step():
    """After one duel of distinct arms, the winner's log-weight rises by γ_1 / (K p) and the loser's
    falls by as much (p = 1/K at the start): twice the paper's half step."""
    env = PrefMatrixEnv(jnp.asarray([[0.5, 1.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.5]]))
    gamma = min(0.5, math.sqrt(3 * math.log(3) / 1e4))
    for convention, scale in (("mergedts", 1.0), ("paper", 0.5)):
        algo = rex3.make(convention=convention)
        state = algo.init(jax.random.key(0), 3, horizon=1e4)
        for seed in range(40):
            new, info = algo.step(jax.random.key(seed), state, env)
            if int(info.first) != int(info.second):
                break
        w, loser = int(min(info.first, info.second)), int(max(info.first, info.second))  # lower index wins here
        delta = np.asarray(new.log_weights) - np.max(np.asarray(new.log_weights))
        assert delta[w] - delta[loser] == pytest.approx(2 * scale * gamma, rel=1e-4)


def test_sparring_ucb_mergedts_plays_with_one_phantom_play():
    """Phantom play: at the first step every index is 0 + sqrt(α ln 1 / 1) = 0, so all arms tie; after
    arm 0 wins once on the left its index is 1/2 + sqrt(α ln 2 / 2) and it leads."""
    algo = sparring.make(inner="ucb", convention="mergedts")
    state = algo.init(jax.random.key(0), 4)
    picks = {int(algo.step(jax.random.key(s), state, PrefMatrixEnv(jnp.full((4, 4), 0.5)))[1].first) for s in range(40)}
    assert picks == {0, 1, 2, 3}
    won = state._replace(wins=state.wins.at[0, 0].set(1.0), plays=state.plays.at[0, 0].set(1.0), t=jnp.int32(1))
    for s in range(10):
        assert int(algo.step(jax.random.key(s), won, PrefMatrixEnv(jnp.full((4, 4), 0.5)))[1].first) == 0
    # UCB1's start-up instead plays every unplayed arm before arm 0 again.
    paper = sparring.make(inner="ucb")
    assert all(int(paper.step(jax.random.key(s), won, PrefMatrixEnv(jnp.full((4, 4), 0.5)))[1].first) != 0
               for s in range(10))


def test_conventions_are_options():
    assert rex3.make(convention="mergedts") is ALGORITHMS.build("rex3", convention="mergedts")
    assert sparring.make(inner="exp3", convention="mergedts") is not sparring.make(inner="exp3")
    with pytest.raises(ValueError, match="convention must be one of 'paper', 'mergedts'; got 'authors'"):
        rex3.make(convention="authors")
    assert ALGORITHMS.options("rex3") == {"convention": "paper"}
    assert ALGORITHMS.options("sparring") == {"inner": "ucb", "convention": "paper"}


NUM_RUNS, HORIZON = 60, 20_000


@pytest.mark.slow
@pytest.mark.parametrize("name, options, reference, seed", [
    ("rex3", {"convention": "mergedts"}, "rex3", 2015),
    ("sparring", {"inner": "ucb", "convention": "mergedts"}, "sparring_ucb", 2014),
    ("sparring", {"inner": "exp3", "convention": "mergedts"}, "sparring_exp3", 2002),
])
def test_mergedts_convention_regret_matches_reference(mslr10, name, options, reference, seed):
    trace = run_sweep(jax.random.key(seed), name, mslr10, num_runs=NUM_RUNS, num_steps=HORIZON,
                      checkpoints=[HORIZON], options=options, relabel=True)
    theirs = ref.simulate(mslr10, HORIZON, NUM_RUNS, seed=seed, algorithm=reference)
    assert_same_mean(trace.regret[0, 0, :, -1], theirs, reference)
