"""RUCB's hypothesised best arm B when no arm is a candidate (Zoghi, Whiteson, Munos, de Rijke,
ICML 2014, Algorithm 1): ``c`` is drawn uniformly from all arms, ``B ← B ∩ ∅ = ∅``, and neither the
``|C| = 1`` nor the ``|C| > 1`` branch runs, so B stays empty (duelingbanditlib's
``policy_rucb_icml.hpp`` does the same; duelpy's ``RelativeUCB`` makes the random arm B)."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import envs
from jaxrank.bandits import rucb
from tests.reference import dueling_bandits as ref

ALPHA = 0.51
T = 2000  # duels so far; the step uses t = T + 1
# A confident 3-cycle: 0 beats 1, 1 beats 2 and 2 beats 0, 900 to 100 each.
CYCLE = np.array([[0, 900, 100], [100, 0, 900], [900, 100, 0]], np.float32)


def _hand_upper_bounds():
    """``U_ij = W_ij / N_ij + sqrt(α ln t / N_ij)`` with every ``N_ij = 1000``, ``U_ii = 1/2``."""
    radius = math.sqrt(ALPHA * math.log(T + 1) / 1000.0)  # about 0.062
    upper = CYCLE / 1000.0 + radius
    np.fill_diagonal(upper, 0.5)
    return upper


def _state(hypothesis):
    return rucb.init(None, 3, alpha=ALPHA)._replace(
        wins=jnp.asarray(CYCLE), hypothesis=jnp.int32(hypothesis), t=jnp.int32(T))


def test_hand_built_cycle_has_no_candidate():
    upper = _hand_upper_bounds()
    # each arm's worst upper bound, 0.1 + 0.062, is below 1/2: C is empty
    assert np.all(upper.min(axis=1) < 0.5)
    np.testing.assert_allclose(np.asarray(rucb.upper_bounds(jnp.asarray(CYCLE), jnp.int32(T + 1), jnp.float32(ALPHA))),
                               upper, rtol=1e-6)


def test_empty_candidate_set_leaves_b_empty_and_duels_a_uniform_arm_against_its_beater():
    upper = _hand_upper_bounds()
    # by hand: the strongest opponent of c is the arm that beats it in the cycle (U = 0.962)
    beater = {0: 2, 1: 0, 2: 1}
    env = envs.PrefMatrixEnv(jnp.full((3, 3), 0.5))
    step = jax.jit(rucb.step)
    firsts = []
    for hypothesis in (1, -1):  # B = {1} before the step (1 is no candidate), and B = ∅
        for s in range(150):
            new_state, info = step(jax.random.key(s), _state(hypothesis), env)
            c, d = int(info.first), int(info.second)
            assert int(new_state.hypothesis) == -1, (hypothesis, s, c)  # B ← B ∩ ∅, and c does not join B
            assert d == beater[c] == int(np.argmax(upper[:, c]))
            assert int(new_state.t) == T + 1
            won = bool(info.first_won)
            delta = np.asarray(new_state.wins) - CYCLE
            expected = np.zeros((3, 3), np.float32)
            expected[(c, d) if won else (d, c)] = 1.0
            np.testing.assert_array_equal(delta, expected)
            firsts.append(c)
    # c is uniform over all three arms, whatever B was (300 draws: each share within 0.25 and 0.42)
    shares = np.bincount(firsts, minlength=3) / len(firsts)
    assert np.all((shares > 0.25) & (shares < 0.42)), shares


def test_next_step_after_an_empty_candidate_set_is_not_biased_towards_the_fallback_arm():
    """After the fallback, every pair unexplored again would make all arms candidates: with B = ∅ the
    champion is uniform; had the fallback arm become B it would be picked half of the time."""
    env = envs.PrefMatrixEnv(jnp.full((3, 3), 0.5))
    step = jax.jit(rucb.step)
    after, _ = step(jax.random.key(0), _state(-1), env)
    assert int(after.hypothesis) == -1
    reset = after._replace(wins=jnp.zeros((3, 3), jnp.float32))  # U = 2 off the diagonal: C = all arms
    firsts = np.array([int(step(jax.random.key(100 + s), reset, env)[1].first) for s in range(300)])
    assert np.all(np.abs(np.bincount(firsts, minlength=3) / 300 - 1 / 3) < 0.09)


def test_numpy_reference_with_the_papers_rule_agrees_on_the_hand_built_state():
    rng = np.random.default_rng(0)
    for _ in range(20):
        alg = ref.RUCB(3, alpha=ALPHA, empty_c_sets_b=False)
        alg.W, alg.B, alg.t = CYCLE.astype(np.float64), {1}, T
        c, d = alg.step(rng, np.full((3, 3), 0.5))
        assert alg.B == set()
        assert d == {0: 2, 1: 0, 2: 1}[c]
