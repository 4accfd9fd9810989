"""``large_scale`` end to end on the real MSLR matrices with tiny settings (K = 8, a few hundred
steps), its Copeland-subset search, and the survival probe of the eliminating algorithms."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import large_scale
from jaxrank import bandits, envs
from tests.conftest import launch_experiment


@pytest.fixture
def real_data(shared_data, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(shared_data))
    return shared_data


def test_large_scale_tiny_run(tmp_path, real_data):
    run_dir, results = launch_experiment(
        tmp_path, "large_scale", "num_arms=8", "num_runs=2", "num_steps=300", "slow_num_steps=100",
        "algorithms=merge_dts,merge_rucb,dts", "copeland_algorithms=merge_dts,rucb", "copeland_num_arms=6",
        "copeland_num_subsets=1", "copeland_num_runs=2", "copeland_num_steps=200")
    assert "MSLR-Perfect" in results["matrices"]  # the other is skipped if its first 8 rankers lack a winner
    perfect = results["matrices"]["MSLR-Perfect"]["algorithms"]
    assert set(perfect) == {"merge_dts", "merge_rucb", "dts"}
    assert perfect["dts"]["num_steps"] == 100 and perfect["merge_dts"]["checkpoints"][-1] == 300
    assert perfect["merge_dts"]["winner_dropped_runs"] in (0, 1, 2)
    assert perfect["merge_dts"]["final"]["accuracy"] is None  # the probe's curve is survival
    regret = np.asarray(perfect["merge_dts"]["regret_mean"])
    assert np.all(np.diff(regret) >= 0) and regret[-1] > 0
    (key,) = [k for k in results["copeland"] if k.startswith("MSLR-Perfect")]
    sub = results["copeland"][key]
    assert len(sub["rankers"]) == 6 and set(sub["algorithms"]) == {"merge_dts", "rucb"}
    assert sub["construction"] == "cycle" and len(sub["copeland_winners"]) == 3 and sub["smallest_gap"] > 0
    assert all(0 <= s["sublinearity"] < 5 for s in sub["algorithms"].values())
    for name in ("table.md", "large_scale.png", "large_scale_copeland.png", "arrays.npz"):
        assert (run_dir / name).is_file()
    assert "MergeDTS / MergeRUCB" in (run_dir / "table.md").read_text()


def test_copeland_subsets_have_no_condorcet_winner_and_are_seeded():
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 12))  # arm 0 wins; cycles among the others
    subsets = large_scale.copeland_subsets(pref, 5, 3, seed=1)
    assert len({tuple(s) for s in subsets}) == 3
    for s in subsets:
        assert 0 not in s and envs.condorcet_winner(pref[np.ix_(s, s)]) is None
    assert subsets == large_scale.copeland_subsets(pref, 5, 3, seed=1)
    with pytest.raises(ValueError, match="without a Condorcet winner"):
        large_scale.copeland_subsets(pref, 12, 1, seed=0, max_tries=50)


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
    cycle, margin = large_scale.widest_cycle(pref)
    assert sorted(cycle) == [0, 1, 2] and margin == pytest.approx(0.05)
    assert pref[cycle[0], cycle[1]] > 0.5 and pref[cycle[1], cycle[2]] > 0.5 and pref[cycle[2], cycle[0]] > 0.5
    subsets = large_scale.cycle_subsets(pref, 6, 4, seed=3, filler_margin=0.03, pair_gap=0.015)
    assert len({tuple(s) for s in subsets}) == 4
    for s in subsets:
        assert s == sorted(s) and {0, 1, 2} <= set(s) and 8 not in s and not {6, 7} <= set(s)
        sub = pref[np.ix_(s, s)]
        wins = (sub > 0.5).sum(axis=1)
        assert envs.condorcet_winner(sub) is None
        assert set(np.flatnonzero(wins == wins.max())) == {s.index(0), s.index(1), s.index(2)}
    assert subsets == large_scale.cycle_subsets(pref, 6, 4, seed=3, filler_margin=0.03, pair_gap=0.015)
    # 7 subsets exist (3 of {3..7}, not both 6 and 7); asking for 8 fails with a fix.
    with pytest.raises(ValueError, match="lower copeland_num_arms"):
        large_scale.cycle_subsets(pref, 6, 8, seed=0, filler_margin=0.03, pair_gap=0.015, max_tries=300)
    assert large_scale.cycle_subsets(pref, 3, 1, seed=0, filler_margin=0.03, pair_gap=0.015) == [[0, 1, 2]]
    with pytest.raises(ValueError, match="copeland_subsets=uniform"):
        large_scale.cycle_subsets(np.full((4, 4), 0.5), 3, 1, seed=0, filler_margin=0.03, pair_gap=0.0)


def test_survival_probe_reports_the_winner_only_while_it_survives():
    state = bandits.merge_dts.init(jax.random.key(0), 6)
    probe = large_scale.survival_probe("merge_dts", 2).make()
    assert int(probe.best_arm(jax.random.key(1), state)) == 2
    dropped = state._replace(active=state.active.at[2].set(False))
    for seed in range(5):
        assert int(probe.best_arm(jax.random.key(seed), dropped)) != 2
    assert probe.step is bandits.merge_dts.make().step and jnp.int32 == probe.best_arm(jax.random.key(1), state).dtype


def test_unknown_algorithm_fails_before_running(tmp_path, real_data):
    from experiments.common import registry

    with pytest.raises(ValueError, match="unknown bandit"):
        registry.launch("large_scale", tmp_path, ["copeland_algorithms=nope"])


@pytest.mark.parametrize("overrides, message", [
    # the Copeland stage used to fail after the Condorcet stage had run (and again on --resume)
    (["copeland_num_arms=200"], "copeland_num_arms = 200 exceeds the 136 rankers of MSLR-Perfect; pick at most 136."),
    (["params=scb.delta=0.5"], "bandit 'scb' has no setting 'delta'; hyperparameters: epsilon, first_epoch; options: none."),
    (["params=scb.first_epoch=1e10"], "first_epoch must be in [1, 64]; got 10000000000.0"),
])
def test_bad_settings_fail_before_any_work(tmp_path, real_data, monkeypatch, overrides, message):
    from experiments.common import registry

    monkeypatch.setattr(bandits, "run_sweep", lambda *a, **k: pytest.fail("a sweep ran before the settings were checked"))
    args = ["num_arms=8", "num_runs=2", "num_steps=100", "algorithms=rcs", "copeland_algorithms=scb,rucb",
            "copeland_num_runs=2", "copeland_num_steps=100", *overrides]
    with pytest.raises(registry.ExperimentError, match=re.escape(message)):
        registry.launch("large_scale", tmp_path, args)
    assert not list((tmp_path / "large_scale").iterdir())  # no run directory left to --resume


def test_survival_probes_of_two_algorithms_keep_separate_checkpoints(tmp_path):
    """MergeDTS's and MergeRUCB's probes of one winner on one matrix: one checkpoint each (they used to
    share one name and inputs, and the second resumed from the first's carry)."""
    pref = np.asarray(envs.condorcet_matrix(jax.random.key(0), 6))
    for name in ("merge_dts", "merge_rucb"):
        trace = bandits.run_sweep(large_scale.survival_probe(name, 0), jax.random.key(0), pref, num_runs=2,
                                  num_steps=40, checkpoints=[40], checkpoint_dir=tmp_path)
        assert trace.regret.shape == (1, 1, 2, 1)
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*.npz")) == ["merge_dts_survival_0",
                                                                           "merge_rucb_survival_0"]
