"""CCB and SCB (``jaxrank.bandits.ccb`` / ``scb``, Zoghi et al., NIPS 2015) against the NumPy
references in ``tests/reference/copeland_bandits.py``: hand-traced first steps and hypothesis
updates, the SCB confidence tests, bad hyperparameters, tied Copeland winners, and (slow) mean
Copeland regret parity at K = 10 and sublinear regret where RUCB's is linear."""

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.bandits import ccb, rucb, run_sweep, scb, scoring
from jaxrank.envs import PrefMatrixEnv
from jaxrank.metrics.duel_regret import copeland_winners
from tests.conftest import assert_same_mean
from tests.reference import copeland_bandits as ref

FIGURES = Path(__file__).resolve().parent / "reference" / "copeland_k10_T20000.json"


def _pref(beats, num_arms, p=0.8):
    """``P`` with ``P_ij = p`` for each ``(i, j)`` in ``beats`` and ``1 - p`` for the mirror."""
    B = np.zeros((num_arms, num_arms), bool)
    for i, j in beats:
        B[i, j] = True
    return np.where(B, p, np.where(B.T, 1.0 - p, 0.5))


# 0 beats 1, 2, 3 but loses to 4: one Copeland winner (arm 0, 3 wins of 4), no Condorcet winner.
CYCLE5 = _pref([(0, 1), (0, 2), (0, 3), (4, 0), (4, 1), (1, 2), (1, 3), (2, 3), (2, 4), (3, 4)], 5)
# Arms 0 and 1 tie with 3 wins each (0 beats 1, 1 beats 2, 3, 4; 3 beats 0).
TIED5 = _pref([(0, 1), (0, 2), (0, 4), (3, 0), (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)], 5)


def _env(pref):
    return PrefMatrixEnv(jnp.asarray(pref, jnp.float32))


_ccb_step = jax.jit(ccb.step)
_scb_step = jax.jit(scb.step)
_update = jax.jit(ccb.update_hypotheses)
_choose = jax.jit(ccb.choose)


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def test_init_rejects_impossible_hyperparameters():
    key = jax.random.key(0)
    for alpha in (0.5, 0.3, float("nan")):
        with pytest.raises(ValueError, match=r"alpha must be > 0\.5; got .*alpha > 1/2"):
            ccb.init(key, 4, alpha=alpha)
    with pytest.raises(ValueError, match=r"epsilon must be >= 0; got -0\.1"):
        scb.init(key, 4, epsilon=-0.1)
    with pytest.raises(ValueError, match=r"first_epoch must be in \[1, 64\]; got 0; epoch r lasts 2\^\(2\^r\) duels"):
        scb.init(key, 4, first_epoch=0)
    with pytest.raises(ValueError, match=r"^first_epoch must be in \[1, 64\]; got 10000000000\.0; "):
        scb.init(key, 4, first_epoch=1e10)  # was an OverflowError converting to int32
    with pytest.raises(ValueError, match=r"first_epoch must be a whole number .*; got 1\.5"):
        scb.init(key, 4, first_epoch=1.5)
    with pytest.raises(ValueError, match=r"first_epoch must be in \[1, 64\]; got 0\.0"):  # every setting, first
        run_sweep(key, "scb", CYCLE5, num_runs=1, num_steps=10, hparams={"first_epoch": [2.0, 0.0]})
    with pytest.raises(ValueError, match=r"first_epoch must be in \[1, 64\]; got 10000000000\.0"):
        run_sweep(key, "scb", CYCLE5, num_runs=1, num_steps=10, hparams={"first_epoch": [1e10]})
    with pytest.raises(ValueError, match="alpha must be > 0.5"):
        run_sweep(key, "ccb", CYCLE5, num_runs=1, num_steps=10, hparams={"alpha": [0.5]})
    for module in (ccb, scb):
        with pytest.raises(ValueError, match="num_arms must be an int >= 2; got 1"):
            module.init(key, 1)


# ----------------------------------------------------------------------------------------------
# CCB by hand
# ----------------------------------------------------------------------------------------------


def test_ccb_first_step_by_hand():
    # Nothing explored: U = 2 and L = 0 off the diagonal, so Cpld = K - 1, cpld = 0 for every arm,
    # C_1 = B_1 = all arms, nothing is removed or added, no pair is doubtful; c is uniform and d is
    # uniform among the others (all tie at U = 2, and c itself, at 1/2, loses).
    K = 4
    state = ccb.init(jax.random.key(0), K)
    for seed in range(6):
        key = jax.random.key(seed)
        u = np.asarray(jax.random.uniform(jax.random.split(key, 3)[0], (7,)))
        c = int(np.floor(u[3] * K))
        others = [j for j in range(K) if j != c]
        new, info = _ccb_step(key, state, _env(CYCLE5[:K, :K]))
        assert (int(info.first), int(info.second)) == (c, others[int(np.floor(u[5] * (K - 1)))])
        assert bool(jnp.all(new.potential)) and not bool(jnp.any(new.beaten_by)) and int(new.max_losses) == K
        assert float(jnp.sum(new.wins)) == 1.0 and int(new.t) == 1


# 100 duels per pair at t = 1000 with α = 0.51: 80 wins give U ≈ 0.988, L ≈ 0.612; 20 wins give
# U ≈ 0.388, L ≈ 0.012; 50 wins give U ≈ 0.688, L ≈ 0.312.
# 0 beats 1, 2; 3 beats 0; 1 beats 2; 1 vs 3 undecided; 2 beats 3.
W4 = np.array([[0, 80, 80, 20], [20, 0, 80, 50], [20, 20, 0, 80], [80, 50, 20, 0]], float)


def _bounds(W, t=1000, alpha=0.51):
    U, L = ref.ccb_bounds(W.tolist(), t, alpha)
    return jnp.asarray(U, jnp.float32), jnp.asarray(L, jnp.float32)


def _fresh(K):
    return ccb.Hypotheses(jnp.ones(K, bool), jnp.zeros((K, K), bool), jnp.int32(K))


def test_ccb_hypotheses_by_hand():
    # Cpld = (2, 2, 1, 2), cpld = (2, 1, 1, 1): C = {0, 1, 3}. B: arm 2 (Cpld 1 < 2) leaves B and
    # B^2 = {k : u_2k < 1/2} = {0, 1}. C: arm 0 (cpld = Cpld = 2) stays, L_C = 4 - 1 - 2 = 1, and
    # B^2 already has L_C + 1 = 2 arms, so it is kept.
    U, L = _bounds(W4)
    up, lo = ccb.copeland_bounds(U, L)
    assert up.tolist() == [2, 2, 1, 2] and lo.tolist() == [2, 1, 1, 1]
    expected_b, expected_bi = [True, True, False, True], np.zeros((4, 4), bool)
    expected_bi[2, [0, 1]] = True
    hyp = _update(jax.random.key(0), _fresh(4), U, L)
    assert hyp.potential.tolist() == expected_b and int(hyp.max_losses) == 1
    np.testing.assert_array_equal(hyp.beaten_by, expected_bi)
    alg = ref.CCB(4)
    alg.update(np.random.default_rng(0), *ref.ccb_bounds(W4.tolist(), 1000, 0.51))
    assert alg.B == {0, 1, 3} and alg.LC == 1 and alg.Bi == [set(), set(), {0, 1}, set()]

    # A disproven hypothesis (B^1 = {2} while l_12 > 1/2) resets everything first: same result.
    stale = _fresh(4)._replace(beaten_by=jnp.zeros((4, 4), bool).at[1, 2].set(True), max_losses=jnp.int32(0),
                               potential=jnp.array([False, True, False, False]))
    again = _update(jax.random.key(0), stale, U, L)
    assert again.potential.tolist() == expected_b and int(again.max_losses) == 1
    np.testing.assert_array_equal(again.beaten_by, expected_bi)


@pytest.mark.parametrize("first, second", [(0, 0), (1, 3), (3, 1)])
def test_ccb_choice_by_hand(first, second):
    # With the hypotheses above no pair is doubtful (line 10 never fires) and C = B ∩ C = {0, 1, 3}.
    # c = 0: arm 3 confidently beats it (l_30 > 1/2) and u_10 = u_20 < 1/2 = u_00, so it duels
    # itself. c = 1: u_31 ≈ 0.688 is the largest plausible. c = 3: u_13 ≈ 0.688.
    U, L = _bounds(W4)
    hyp = _update(jax.random.key(0), _fresh(4), U, L)
    for coins in ((0.1, 0.1, 0.1), (0.9, 0.9, 0.9)):  # line 10, 11 and 13 coins on either side
        u_first = [0.0, 0.4, 0.8][[0, 1, 3].index(first)]  # the rank of c in C = {0, 1, 3}
        u = jnp.array([coins[0], 0.5, coins[1], u_first, coins[2], 0.3], jnp.float32)
        c, d = _choose(hyp, U, L, u)
        assert (int(c), int(d)) == (first, second)


def test_ccb_line_10_and_trimming():
    # B^2 = {0, 1} believed, but u_20 has reopened past 1/2 (pair (2, 0) is doubtful): with the 1/4
    # coin below 1/4 the duel is (2, 0), the only doubtful pair.
    U, L = _bounds(W4)
    hyp = _update(jax.random.key(0), _fresh(4), U, L)
    U2 = U.at[2, 0].set(0.6)
    c, d = _choose(hyp, U2, L, jnp.array([0.1, 0.7, 0.5, 0.5, 0.5, 0.5], jnp.float32))
    assert (int(c), int(d)) == (2, 0)
    c, d = _choose(hyp, U2, L, jnp.array([0.3, 0.7, 0.5, 0.5, 0.5, 0.5], jnp.float32))
    assert (int(c), int(d)) != (2, 0)

    # Line 9C: an over-full B^j keeps L_C + 1 = 2 of its arms, a uniform subset; a short one empties.
    full = _fresh(4)._replace(beaten_by=jnp.zeros((4, 4), bool).at[1, jnp.array([0, 2, 3])].set(True)
                              .at[3, 2].set(True))
    L_open = L.at[1, 2].set(0.4)  # keep B^1 = {0, 2, 3} from being disproven (l_12 > 1/2)
    kept = set()
    for seed in range(30):
        hyp = _update(jax.random.key(seed), full, U, L_open)
        row = tuple(np.flatnonzero(np.asarray(hyp.beaten_by[1])))
        assert len(row) == 2 and set(row) <= {0, 2, 3}
        assert not bool(jnp.any(hyp.beaten_by[3])) and not bool(jnp.any(hyp.beaten_by[0]))
        kept.add(row)
    assert kept == {(0, 2), (0, 3), (2, 3)}


# ----------------------------------------------------------------------------------------------
# SCB by hand
# ----------------------------------------------------------------------------------------------


def test_scb_schedule_and_confidence_by_hand():
    r = jnp.arange(1, 7, dtype=jnp.int32)
    assert scb.epoch_length(r).tolist() == [4, 16, 256, 65536, 2**31 - 1, 2**31 - 1]
    # δ = ln(T) / T with T = 2^(2^r): ln(1/δ) = ln T - ln ln T.
    expected = [2**k * math.log(2) - math.log(2**k * math.log(2)) for k in range(1, 7)]
    np.testing.assert_allclose(scb.log_inverse_delta(r), expected, rtol=1e-6)
    # Pair test at K = 3, δ = ln 16 / 16 (r = 2): n d(p̂, 1/2) > ln(36 n / δ) + 2 ln max(ln n, 1).
    lid = expected[1]
    for wins_ij, wins_ji in [(16, 0), (14, 0), (40, 10), (30, 20), (0, 17), (0, 0)]:
        n = wins_ij + wins_ji
        want = n > 0 and n * ref.kl(wins_ij / n, 0.5) > math.log(36 * n) + lid + 2 * math.log(max(math.log(n), 1))
        got = scb.resolved(jnp.float32(wins_ij), jnp.float32(wins_ji), jnp.float32(lid), 3)
        assert bool(got) == want, (wins_ij, wins_ji)
    # 15 straight wins: 15 ln 2 ≈ 10.40 > ln 540 + ln(1/δ) + 2 ln ln 15 ≈ 10.04; 14: 9.70 < 9.92.
    assert bool(scb.resolved(jnp.float32(15), jnp.float32(0), jnp.float32(lid), 3))
    assert not bool(scb.resolved(jnp.float32(14), jnp.float32(0), jnp.float32(lid), 3))
    # KL interval of Algorithm 4 against the float64 reference.
    mean = jnp.array([0.0, 0.25, 0.5, 2 / 3, 1.0], jnp.float32)
    lower, upper = scb.kl_bounds(mean, jnp.float32(6.0), jnp.float32(4.0))
    want = np.array([ref.kl_interval(float(m), 6.0, 4.0) for m in np.asarray(mean, float)])
    np.testing.assert_allclose(lower, want[:, 0], atol=2e-6)
    np.testing.assert_allclose(upper, want[:, 1], atol=2e-6)


def test_scb_first_steps_by_hand():
    # K = 3, arm i always beats i + 1 (mod 3). Epoch 1 (T = 4, δ = ln 4 / 4) cannot resolve a pair in
    # 4 duels (4 ln 2 < ln(144 / δ)), so arm 0 duels its opponent 4 times; step 5 opens epoch 2
    # (T = 16) with a fresh search whose first arm is again 0, and the scoresheet is kept.
    pref = np.array([[0.5, 1.0, 0.0], [0.0, 0.5, 1.0], [1.0, 0.0, 0.5]])
    key = jax.random.key(3)
    state = scb.init(key, 3)
    u = np.asarray(jax.random.uniform(key, (3,)))
    first_opponent = [1, 2][int(np.floor(u[0] * 2))]  # uniform over arms 1, 2
    pairs = []
    for t in range(5):
        state, info = _scb_step(jax.random.key(100 + t), state, _env(pref))
        pairs.append((int(info.first), int(info.second)))
    assert pairs[:4] == [(0, first_opponent)] * 4
    assert pairs[4][0] == 0 and int(state.epoch) == 2 and int(state.epoch_steps) == 1
    assert float(jnp.sum(state.wins)) == 5.0 and int(state.exploit) == -1


def test_scb_search_ends_on_a_tie_and_exploits_a_winner():
    # Deterministic duels resolve every pair fast; the two tied Copeland winners of TIED5 keep
    # Algorithm 4's intervals together, so the search ends because every pair is resolved, and
    # b̂ is one of the winners (most resolved wins), duelled with itself from then on.
    pref = np.where(TIED5 > 0.5, 1.0, np.where(TIED5 < 0.5, 0.0, 0.5))
    state = scb.init(jax.random.key(0), 5, first_epoch=4)
    run = jax.jit(lambda s, keys: jax.lax.scan(lambda c, k: scb.step(k, c, _env(pref)), s, keys))
    state, info = run(state, jax.random.split(jax.random.key(1), 600))
    assert int(state.exploit) in (0, 1)
    assert int(info.first[-1]) == int(info.second[-1]) == int(state.exploit)
    assert int(scb.best_arm(jax.random.key(2), state)) == int(state.exploit)


# ----------------------------------------------------------------------------------------------
# Tied Copeland winners: regret against the set, any of them is a correct guess
# ----------------------------------------------------------------------------------------------


def test_tied_copeland_winners_rule():
    assert np.flatnonzero(copeland_winners(TIED5)).tolist() == [0, 1]
    score = scoring(TIED5)  # no Condorcet winner: Copeland regret, both winners are best
    assert np.asarray(score.winners).tolist() == [True, True, False, False, False]
    assert float(score.table[0, 1]) == 0.0 and float(score.table[1, 1]) == 0.0 and float(score.table[0, 0]) == 0.0
    assert float(score.table[0, 2]) == pytest.approx(0.125)  # 3/4 - (3/4 + 2/4) / 2
    # A pure 3-cycle: every arm is a Copeland winner, so no duel has regret and every guess is right.
    cycle3 = _pref([(0, 1), (1, 2), (2, 0)], 3)
    trace = run_sweep(jax.random.key(0), "ccb", cycle3, num_runs=2, num_steps=200, checkpoints=[50, 200])
    assert np.all(trace.regret == 0.0) and np.all(trace.correct)


# ----------------------------------------------------------------------------------------------
# Statistical checks (slow)
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def figures():
    return json.loads(FIGURES.read_text())


@pytest.fixture(scope="module")
def mslr_subset(shared_data, figures):
    P = np.loadtxt(shared_data / "preference_matrices" / "MSLR-Perfect.txt")
    sub, ids = ref.random_subset(P, 10, ref.MSLR_SUBSET_SEED)
    assert [int(i) + 1 for i in ids] == figures["mslr_feature_ids"]
    return sub


@pytest.mark.slow
def test_ccb_regret_matches_reference_on_mslr_subset(mslr_subset, figures):
    # (SCB's figure on this subset is in the file too; its spread, ± 1400 of 5800, makes it a weak
    # check, and the cyclic matrix below covers SCB.)
    T, runs = figures["T"], figures["num_runs"]
    trace = run_sweep(jax.random.key(figures["seeds"]["ccb"]), "ccb", mslr_subset, num_runs=runs, num_steps=T,
                     checkpoints=[T], regret="copeland")
    assert_same_mean(trace.regret[0, 0, :, -1],
                      np.asarray(figures["results"]["mslr_perfect_subset"]["ccb"]["final_regret"]), "ccb MSLR subset")


@pytest.mark.slow
@pytest.mark.parametrize("module", [ccb, scb], ids=["ccb", "scb"])
def test_regret_matches_reference_on_cyclic_matrix(module, figures):
    name = module.__name__.rsplit(".", 1)[-1]
    T, runs = figures["T"], figures["num_runs"]
    trace = run_sweep(jax.random.key(figures["seeds"][name]), module, ref.cyclic_matrix(10), num_runs=runs,
                  num_steps=T, checkpoints=[T])
    assert_same_mean(trace.regret[0, 0, :, -1], np.asarray(figures["results"]["cyclic"][name]["final_regret"]),
                      f"{name} cyclic")


@pytest.mark.slow
def test_copeland_regret_is_sublinear_where_rucb_is_linear():
    # CYCLE5 has no Condorcet winner: RUCB keeps cycling through arms that are each beaten by some
    # other arm (regret ~ linear: x4 time gives ~x4 regret); CCB's and SCB's flatten.
    T = 8_000
    cps = [T // 4, T]
    ratios = {}
    for module in (ccb, scb, rucb):
        trace = run_sweep(jax.random.key(7), module, CYCLE5, num_runs=6, num_steps=T, checkpoints=cps)
        mean = trace.regret[0, 0].mean(axis=0)
        ratios[module.__name__.rsplit(".", 1)[-1]] = mean[1] / mean[0]
        if module is not rucb:
            assert trace.correct[0, 0, :, -1].mean() >= 0.75
    print(ratios)
    assert ratios["ccb"] < 1.6 and ratios["scb"] < 1.6 and ratios["rucb"] > 3.5
