"""Library pieces the large-scale study uses: per-run arm relabelling (``jaxrank.bandits.relabel``,
``run_sweep(..., relabel=True)``), the survival probe of the eliminating bandits
(``jaxrank.bandits.survival_probe``) and the Copeland subset searches (``jaxrank.envs.matrix``)."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import bandits, envs
from jaxrank.bandits import relabel
from jaxrank.envs import matrix


def test_relabelled_bandit_plays_the_permuted_matrix():
    """The wrapped bandit on P makes the duels the bandit makes on P[order][:, order], in P's labels,
    step for step, and reports the same arm (mapped back)."""
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 6))
    algo = bandits.merge_dts.make()
    wrapped = relabel.wrap(algo)
    key, key_steps = jax.random.key(3), jax.random.key(4)
    outer = wrapped.init(key, 6)
    order = np.asarray(outer.order)
    assert sorted(order) == list(range(6)) and not np.array_equal(order, np.arange(6))
    inner = algo.init(jax.random.split(key)[1], 6)
    env, env_permuted = envs.PrefMatrixEnv(jnp.asarray(pref, jnp.float32)), envs.PrefMatrixEnv(
        jnp.asarray(relabel.permuted_matrix(pref, order), jnp.float32))

    def body(carry, t):
        a, b = carry
        k = jax.random.fold_in(key_steps, t)
        a, info_a = wrapped.step(k, a, env)
        b, info_b = algo.step(k, b, env_permuted)
        return (a, b), (info_a, info_b)

    (outer, inner), (info_a, info_b) = jax.jit(lambda c: jax.lax.scan(body, c, jnp.arange(200)))((outer, inner))
    np.testing.assert_array_equal(info_a.first, order[info_b.first])
    np.testing.assert_array_equal(info_a.second, order[info_b.second])
    np.testing.assert_array_equal(info_a.first_won, info_b.first_won)
    chex.assert_trees_all_equal(outer.inner, inner)
    assert int(wrapped.best_arm(key, outer)) == order[int(algo.best_arm(key, inner))]


def test_run_orders_are_the_sweeps_and_change_with_the_run_index():
    key = jax.random.key(7)
    orders = relabel.run_orders(key, 5, 6)
    wrapped = relabel.wrap(bandits.rcs.make())
    for r in range(5):  # the order init draws in run r's lane (jaxrank.bandits.lane.init_lane)
        lane = bandits.lane.init_lane(jax.random.fold_in(key, r), wrapped, 6, 1)
        np.testing.assert_array_equal(lane.state.order, orders[r])
    assert len({tuple(o) for o in orders}) == 5 and all(sorted(o) == list(range(6)) for o in orders)
    np.testing.assert_array_equal(relabel.run_orders(key, 3, 6), orders[:3])  # run r does not depend on R
    assert not np.array_equal(relabel.run_orders(jax.random.key(8), 5, 6), orders)


def test_relabelled_sweep_same_seed_same_bytes(tmp_path):
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 6))
    traces = [bandits.run_sweep(jax.random.key(seed), "rcs", pref, num_runs=3, num_steps=60, checkpoints=[20, 60],
                                relabel=relabel_on) for seed, relabel_on in ((0, True), (0, True), (1, True), (0, False))]
    assert traces[0].regret.tobytes() == traces[1].regret.tobytes()
    assert traces[0].correct.tobytes() == traces[1].correct.tobytes()
    assert traces[0].regret.tobytes() != traces[2].regret.tobytes()
    assert traces[0].regret.tobytes() != traces[3].regret.tobytes()  # the relabelling is applied
    with pytest.raises(ValueError, match="already plays under a relabelling"):
        bandits.run_sweep(jax.random.key(0), bandits.survival_probe("merge_dts", 0, relabelled=True), pref,
                          num_runs=1, num_steps=10, relabel=True)


def test_permuted_winner_maps_back_and_the_probe_follows_it():
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 6))
    winner = int(envs.condorcet_winner(pref))
    for order in relabel.run_orders(jax.random.key(1), 4, 6):
        permuted = relabel.permuted_matrix(pref, order)
        own = int(envs.condorcet_winner(permuted))
        assert order[own] == winner  # the bandit's winner is the environment's winner
        state = relabel.Relabelled(None, jnp.asarray(order))
        assert int(relabel.own_label(state, winner)) == own
    probe = bandits.survival_probe("merge_dts", winner, relabelled=True).make()
    state = probe.init(jax.random.key(2), 6)
    assert int(probe.best_arm(jax.random.key(1), state)) == winner
    own = int(relabel.own_label(state, winner))
    dropped = state._replace(inner=state.inner._replace(active=state.inner.active.at[own].set(False)))
    for seed in range(5):
        assert int(probe.best_arm(jax.random.key(seed), dropped)) != winner
    # Dropping another arm leaves the winner reported.
    other = state._replace(inner=state.inner._replace(active=state.inner.active.at[(own + 1) % 6].set(False)))
    assert int(probe.best_arm(jax.random.key(1), other)) == winner


def test_copeland_subsets_have_no_condorcet_winner_and_are_seeded():
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 12))  # arm 0 wins; cycles among the others
    subsets = matrix.copeland_subsets(pref, 5, 3, seed=1)
    assert len({tuple(s) for s in subsets}) == 3
    for s in subsets:
        assert 0 not in s and envs.condorcet_winner(pref[np.ix_(s, s)]) is None
    assert subsets == matrix.copeland_subsets(pref, 5, 3, seed=1)
    with pytest.raises(ValueError, match="without a Condorcet winner"):
        matrix.copeland_subsets(pref, 12, 1, seed=0, max_tries=50)


def _two_cycles() -> np.ndarray:
    """9 arms: cycle 0 > 1 > 2 > 0 (margins .1, .05, .08) beating arms 3..8 by .1 (arm 8 by .01 only);
    a narrower cycle 3 > 4 > 5 > 3 (.02); other pairs i < j: i wins by .04, but 6 vs 7 is .505."""
    d = np.zeros((9, 9))
    d[0, 1], d[1, 2], d[2, 0] = 0.1, 0.05, 0.08
    d[3, 4] = d[4, 5] = d[5, 3] = 0.02
    for i in range(3, 9):
        for j in range(i + 1, 9):
            if (i, j) not in ((3, 4), (4, 5), (3, 5)):
                d[i, j] = 0.04
    d[6, 7] = 0.005
    d[:3, 3:] = 0.1
    d[0, 8] = 0.01
    d = d - d.T
    return 0.5 + d


def test_widest_cycle_and_cycle_subsets_follow_their_definition():
    pref = _two_cycles()
    cycle, margin = matrix.widest_cycle(pref)
    assert sorted(cycle) == [0, 1, 2] and margin == pytest.approx(0.05)
    assert pref[cycle[0], cycle[1]] > 0.5 and pref[cycle[1], cycle[2]] > 0.5 and pref[cycle[2], cycle[0]] > 0.5
    subsets = matrix.cycle_subsets(pref, 6, 4, seed=3, filler_margin=0.03, pair_gap=0.015)
    assert len({tuple(s) for s in subsets}) == 4
    for s in subsets:
        assert s == sorted(s) and {0, 1, 2} <= set(s) and 8 not in s and not {6, 7} <= set(s)
        sub = pref[np.ix_(s, s)]
        wins = (sub > 0.5).sum(axis=1)
        assert envs.condorcet_winner(sub) is None
        assert set(np.flatnonzero(wins == wins.max())) == {s.index(0), s.index(1), s.index(2)}
    assert subsets == matrix.cycle_subsets(pref, 6, 4, seed=3, filler_margin=0.03, pair_gap=0.015)
    # 7 subsets exist (3 of {3..7}, not both 6 and 7); asking for 8 fails with a fix.
    with pytest.raises(ValueError, match="lower copeland_num_arms"):
        matrix.cycle_subsets(pref, 6, 8, seed=0, filler_margin=0.03, pair_gap=0.015, max_tries=300)
    assert matrix.cycle_subsets(pref, 3, 1, seed=0, filler_margin=0.03, pair_gap=0.015) == [[0, 1, 2]]
    with pytest.raises(ValueError, match="copeland_subsets=uniform"):
        matrix.cycle_subsets(np.full((4, 4), 0.5), 3, 1, seed=0, filler_margin=0.03, pair_gap=0.0)


def test_survival_probe_reports_the_winner_only_while_it_survives():
    state = bandits.merge_dts.init(jax.random.key(0), 6)
    probe = bandits.survival_probe("merge_dts", 2).make()
    assert int(probe.best_arm(jax.random.key(1), state)) == 2
    dropped = state._replace(active=state.active.at[2].set(False))
    for seed in range(5):
        assert int(probe.best_arm(jax.random.key(seed), dropped)) != 2
    assert probe.step is bandits.merge_dts.make().step and jnp.int32 == probe.best_arm(jax.random.key(1), state).dtype


@pytest.mark.slow
def test_survival_probes_of_two_algorithms_keep_separate_checkpoints(tmp_path):
    """MergeDTS's and MergeRUCB's probes of one winner on one matrix: one checkpoint each (they used to
    share one name and inputs, and the second resumed from the first's carry)."""
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 6))
    for name in ("merge_dts", "merge_rucb"):
        trace = bandits.run_sweep(jax.random.key(0), bandits.survival_probe(name, 0), pref, num_runs=2,
                                  num_steps=40, checkpoints=[40], checkpoint_dir=tmp_path)
        assert trace.regret.shape == (1, 1, 2, 1)
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*.npz")) == ["merge_dts_survival_0",
                                                                           "merge_rucb_survival_0"]
