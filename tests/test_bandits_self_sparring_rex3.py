"""Independent Self-Sparring and REX3 (``jaxrank.bandits.self_sparring`` / ``rex3``): hand-built
states checked against the papers' formulas (computed here), the laws of the chosen arms, the report
rules, impossible hyperparameters, and (slow) mean regret on MSLR-Perfect K = 10 against the NumPy
references in ``tests/reference/self_sparring_rex3.py``.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jaxrank.bandits import rex3, run_sweep, self_sparring
from jaxrank.bandits.base import exp3_probabilities
from jaxrank.envs import PrefMatrixEnv
from tests.conftest import assert_same_mean
from tests.reference import self_sparring_rex3 as ref

# A total order 0 > 1 > 2 with certain outcomes: the winner of every duel between distinct arms is known.
ORDER3 = np.array([[0.5, 1.0, 1.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.5]])


def _env(pref):
    return PrefMatrixEnv(jnp.asarray(pref, jnp.float32))


# Many keys from one state (one compile per algorithm): every step's state and duel.
_many_steps = jax.jit(lambda algo, state, keys, env: jax.lax.map(lambda k: algo.step(k, state, env), keys),
                      static_argnums=0)


def _steps(algo, state, num_keys, seed=0, pref=ORDER3):
    keys = jax.random.split(jax.random.key(seed), num_keys)
    new, info = _many_steps(algo, state, keys, _env(pref))
    return jax.tree.map(np.asarray, new), jax.tree.map(np.asarray, info)


def _assert_law(samples, law, num):
    """Frequencies of ``samples`` within 4 standard errors of ``law [K]``."""
    freq = np.bincount(samples, minlength=law.size) / num
    tol = 4.0 * np.sqrt(np.maximum(law * (1 - law), 1e-4) / num)
    np.testing.assert_array_less(np.abs(freq - law), tol)


# ----------------------------------------------------------------------------------------------
# Independent Self-Sparring (Sui et al., UAI 2017, Algorithm 1, m = 2)
# ----------------------------------------------------------------------------------------------


def _ss_state(S, F, eta=1.0):
    state = self_sparring.init(jax.random.key(0), len(S), eta=eta)
    return state._replace(successes=jnp.asarray(S, jnp.float32), failures=jnp.asarray(F, jnp.float32))


def _thompson_argmax_law(S, F):
    """P(argmax_i θ_i = i) for independent θ_i ~ Beta(S_i + 1, F_i + 1): ∫ f_i Π_{j≠i} F_j."""
    dists = [stats.beta(s + 1.0, f + 1.0) for s, f in zip(S, F)]
    law = []
    for i, d in enumerate(dists):
        others = [e for j, e in enumerate(dists) if j != i]
        law.append(integrate.quad(lambda x: d.pdf(x) * np.prod([e.cdf(x) for e in others]), 0.0, 1.0)[0])
    return np.asarray(law)


def test_self_sparring_draws_two_independent_thompson_arms():
    S, F = [3.0, 1.0, 0.0], [1.0, 2.0, 0.0]
    law = _thompson_argmax_law(S, F)
    assert abs(law.sum() - 1.0) < 1e-6
    n = 10_000
    _, info = _steps(self_sparring, _ss_state(S, F), n)
    _assert_law(info.first, law, n)
    _assert_law(info.second, law, n)
    # Independent draws: P(first = second) = Σ q_i².
    same, p_same = np.mean(info.first == info.second), float(np.sum(law**2))
    assert abs(same - p_same) < 4.0 * math.sqrt(p_same * (1 - p_same) / n)


def test_self_sparring_posterior_update_by_hand():
    S, F, eta = np.array([2.0, 0.0, 1.0]), np.array([1.0, 3.0, 0.0]), 0.5
    new, info = _steps(self_sparring, _ss_state(S, F, eta), 200, seed=1)
    distinct = info.first != info.second
    assert distinct.any() and (~distinct).any()
    for r in range(200):
        a, b = int(info.first[r]), int(info.second[r])
        S_hand, F_hand = S.copy(), F.copy()
        if a != b:  # ORDER3: the lower index wins; r_ab = 1 for the winner, r_ba = 0 for the loser
            winner, loser = min(a, b), max(a, b)
            S_hand[winner] += eta
            F_hand[loser] += eta
            assert bool(info.first_won[r]) == (a < b)
        else:  # r_12 + r_21 = 1 on the same arm: S_a and F_a both gain η, whatever the coin said
            S_hand[a] += eta
            F_hand[a] += eta
        np.testing.assert_array_equal(new.successes[r], S_hand)
        np.testing.assert_array_equal(new.failures[r], F_hand)
        assert int(new.t[r]) == 1
        # The NumPy reference applies the same rule.
        runs = ref.SelfSparringRuns(1, 3, eta)
        runs.S[0], runs.F[0] = S, F
        runs.update(np.array([a]), np.array([b]), np.array([bool(info.first_won[r])]))
        np.testing.assert_array_equal(runs.S[0], S_hand)
        np.testing.assert_array_equal(runs.F[0], F_hand)


def test_self_sparring_reports_the_highest_posterior_mean():
    # Posterior means (S + 1) / (S + F + 2): 4/7, 2/3, 1/2, 2/3: arms 1 and 3 tie.
    state = _ss_state([3.0, 1.0, 0.0, 5.0], [2.0, 0.0, 0.0, 2.0])
    picks = {int(self_sparring.best_arm(jax.random.key(k), state)) for k in range(30)}
    assert picks == {1, 3}


# ----------------------------------------------------------------------------------------------
# REX3 (Gajane, Urvoy, Clérot, ICML 2015, Algorithm 1)
# ----------------------------------------------------------------------------------------------

W3 = np.array([0.5, 0.3, 0.2])  # weights of a hand-built state
T3 = 100.0  # horizon: γ = sqrt(3 ln 3 / 100) ~ 0.1815 < 1/2


def _rex3_state(w, horizon):
    state = rex3.init(jax.random.key(0), len(w), horizon=horizon)
    return state._replace(log_weights=jnp.asarray(np.log(w / np.max(w)), jnp.float32))


def _rex3_hand_p(w, horizon):
    K = len(w)
    gamma = min(0.5, math.sqrt(K * math.log(K) / horizon))
    return gamma, (1 - gamma) * w / w.sum() + gamma / K


def test_rex3_probabilities_by_hand():
    gamma, p = _rex3_hand_p(W3, T3)
    assert abs(gamma - 0.181544) < 1e-6
    np.testing.assert_allclose(p, [0.469743, 0.306051, 0.224206], atol=1e-6)
    np.testing.assert_allclose(rex3.exploration(3, jnp.float32(T3)), gamma, rtol=1e-6)
    np.testing.assert_allclose(exp3_probabilities(_rex3_state(W3, T3).log_weights, jnp.float32(gamma)), p, rtol=1e-5)
    # A short horizon caps γ at 1/2.
    assert float(rex3.exploration(3, jnp.float32(2.0))) == 0.5


def test_rex3_draws_two_independent_arms_from_p():
    _, p = _rex3_hand_p(W3, T3)
    n = 10_000
    _, info = _steps(rex3, _rex3_state(W3, T3), n, seed=2)
    _assert_law(info.first, p, n)
    _assert_law(info.second, p, n)
    same, p_same = np.mean(info.first == info.second), float(np.sum(p**2))
    assert abs(same - p_same) < 4.0 * math.sqrt(p_same * (1 - p_same) / n)


def test_rex3_weight_update_by_hand():
    gamma, p = _rex3_hand_p(W3, T3)
    K = 3
    new, info = _steps(rex3, _rex3_state(W3, T3), 200, seed=3)
    assert (info.first != info.second).any() and (info.first == info.second).any()
    for r in range(200):
        a, b = int(info.first[r]), int(info.second[r])
        psi = 0.0 if a == b else (1.0 if a < b else -1.0)  # ORDER3: the lower index wins
        w = W3.copy()
        w[a] *= math.exp(gamma / K * psi / (2 * p[a]))
        w[b] *= math.exp(-gamma / K * psi / (2 * p[b]))
        np.testing.assert_allclose(np.exp(new.log_weights[r]), w / w.max(), rtol=1e-5)
        assert float(np.max(new.log_weights[r])) == 0.0 and int(new.t[r]) == 1
        # The NumPy reference applies the same rule (its weights sum to 1).
        runs = ref.Rex3Runs(1, K, gamma)
        runs.w[0] = W3
        runs.update(p[None], np.array([a]), np.array([b]), np.array([a < b]))
        np.testing.assert_allclose(runs.w[0], w / w.sum(), rtol=1e-12)


def test_rex3_reports_the_largest_weight():
    state = _rex3_state(np.array([0.2, 0.4, 0.1, 0.4]), T3)
    picks = {int(rex3.best_arm(jax.random.key(k), state)) for k in range(30)}
    assert picks == {1, 3}


# ----------------------------------------------------------------------------------------------
# Hyperparameters
# ----------------------------------------------------------------------------------------------


def test_init_rejects_impossible_hyperparameters():
    with pytest.raises(ValueError, match=r"eta must be > 0; got 0\.0"):
        self_sparring.init(jax.random.key(0), 4, eta=0.0)
    with pytest.raises(ValueError, match=r"eta must be > 0; got -1\.0"):
        self_sparring.init(jax.random.key(0), 4, eta=-1.0)
    with pytest.raises(ValueError, match=r"num_arms must be an int >= 2; got 1"):
        self_sparring.init(jax.random.key(0), 1)
    with pytest.raises(ValueError, match=r"horizon must be >= 1; got 0\.5"):
        rex3.init(jax.random.key(0), 4, horizon=0.5)
    with pytest.raises(ValueError, match=r"REX3 needs the horizon T"):
        rex3.init(jax.random.key(0), 4, horizon=None)
    with pytest.raises(ValueError, match=r"num_arms must be an int >= 2; got 1"):
        rex3.init(jax.random.key(0), 1)


# ----------------------------------------------------------------------------------------------
# Statistical parity with the NumPy references (slow)
# ----------------------------------------------------------------------------------------------

NUM_RUNS, HORIZON = 90, 20_000


@pytest.mark.slow
def test_self_sparring_regret_matches_reference(mslr10):
    trace = run_sweep(jax.random.key(2017), "self_sparring", mslr10, num_runs=NUM_RUNS, num_steps=HORIZON,
                      checkpoints=[HORIZON])
    assert_same_mean(trace.regret[0, 0, :, -1], ref.simulate_self_sparring(mslr10, HORIZON, NUM_RUNS, seed=2017),
                     "self_sparring")


@pytest.mark.slow
def test_rex3_regret_matches_reference(mslr10):
    trace = run_sweep(jax.random.key(2015), "rex3", mslr10, num_runs=NUM_RUNS, num_steps=HORIZON, checkpoints=[HORIZON])
    assert_same_mean(trace.regret[0, 0, :, -1], ref.simulate_rex3(mslr10, HORIZON, NUM_RUNS, seed=2015), "rex3")
