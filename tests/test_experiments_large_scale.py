"""``large_scale`` end to end on the real MSLR matrices with tiny settings (K = 8, a few hundred
steps), its Copeland-subset search, and the survival probe of the eliminating algorithms."""

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


def test_survival_probe_reports_the_winner_only_while_it_survives():
    state = bandits.merge_dts.init(jax.random.key(0), 6)
    probe = large_scale.survival_probe(bandits.merge_dts, 2)
    assert int(probe.best_arm(state, jax.random.key(1))) == 2
    dropped = state._replace(active=state.active.at[2].set(False))
    for seed in range(5):
        assert int(probe.best_arm(dropped, jax.random.key(seed))) != 2
    assert probe.step is bandits.merge_dts.step and jnp.int32 == probe.best_arm(state, jax.random.key(1)).dtype


def test_unknown_algorithm_fails_before_running(tmp_path, real_data):
    from experiments import registry

    with pytest.raises(ValueError, match="unknown bandit"):
        registry.launch("large_scale", tmp_path, ["copeland_algorithms=nope"])
