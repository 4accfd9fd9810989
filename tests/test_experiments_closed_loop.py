"""The ``closed_loop`` experiment end to end on a tiny synthetic config: a true user's lane and a fitted
user's lane equal ``oltr.simulate`` run alone with that user and the same key (the runs are paired),
the paired intervals are those of the saved curves, and the table, verdicts and figure are written."""

import jax
import numpy as np
import pytest

from experiments import closed_loop as experiment
from experiments.common import letor_datasets, registry
from jaxrank import oltr
from jaxrank.clicks import cascade_model
from jaxrank.metrics import statistics
from tests.conftest import assert_same_run, killed_after_checkpoints, launch_experiment as _launch

TINY = ("num_sessions=500", "num_epochs=2", "num_runs=2", "num_impressions=60", "num_checkpoints=3",
        "click_models=navigational,informational", "parametrizations=linear,tables")


def test_closed_loop_runs_paired_lanes_of_the_library_simulation(tmp_path, no_data):
    run_dir, results = _launch(tmp_path, "closed_loop", *TINY)
    assert results["dataset"] == "synthetic" and results["parametrizations"] == ["linear", "tables"]
    arrays = np.load(run_dir / "arrays.npz")
    checkpoints = list(arrays["checkpoints"])
    assert arrays["true__offline"].shape == (2, 2, len(checkpoints))
    assert arrays["fitted__offline"].shape == (4, 2, len(checkpoints))  # (user, parametrization) x run

    config = registry.make_config(registry.get("closed_loop"), list(TINY))
    ds = letor_datasets.resolve(config.dataset, "test", single_file=True)
    train, _, test = letor_datasets.fold(ds, config.fold, config.seed)
    train, test, _ = oltr.stack_folds({1: (train, experiment.relevant_queries(test))}, [1])
    one_train, one_test = (jax.tree.map(lambda x: x[0], q) for q in (train, test))
    m, run = 1, 1  # informational, run 1
    key_user = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), 1), m)
    logs = experiment._logs(config, key_user, one_train, "informational")
    user, _, _ = experiment._fit_user(config, jax.random.fold_in(key_user, 1), one_train, "informational", logs,
                                      "tables")
    key = oltr.lane_keys(config.seed, [1], 2, 2)[0, m, run]
    alone = lambda u: oltr.simulate(key, oltr.RANKERS.build("pdgd"), one_train, one_test, u,  # noqa: E731
                                    checkpoints=checkpoints, hparams={"learning_rate": 0.1})
    np.testing.assert_allclose(arrays["true__offline"][m, run], alone(cascade_model("informational", 3)).offline,
                               rtol=1e-6)
    np.testing.assert_allclose(arrays["fitted__offline"][m * 2 + 1, run], alone(user).offline, rtol=1e-6)

    paired = results["users"]["informational"]["paired"]["tables"]
    diff = arrays["fitted__offline"][3] - arrays["true__offline"][1]
    mean, half = statistics.mean_ci(diff, 0)
    np.testing.assert_allclose(paired["diff_mean"], mean, atol=1e-5)
    np.testing.assert_allclose(paired["diff_ci95"], half, atol=1e-5)
    fit = results["users"]["navigational"]["fit"]["linear"]
    assert fit["true_log_likelihood"] < 0 and fit["held_out_log_likelihood"] < 0
    table = (run_dir / "table.md").read_text()
    assert table.count("| PDGD learns the same offline NDCG@10 curve") == 4
    assert (run_dir / "closed_loop.png").is_file()


@pytest.mark.slow
def test_a_killed_run_resumes_with_identical_results(tmp_path, no_data, monkeypatch):
    """Killed inside the fitted users' grid (the logs and fits are recomputed from the seed), ``resume``
    finishes from the checkpoints with the arrays, ``results.json`` and ``table.md`` of an uninterrupted run."""
    overrides = ["num_sessions=300", "num_epochs=1", "num_runs=2", "num_impressions=30", "num_checkpoints=3",
                 "click_models=informational", "parametrizations=tables"]
    full_dir = registry.launch("closed_loop", tmp_path / "full", overrides)
    with killed_after_checkpoints(monkeypatch, 5) as written:
        registry.launch("closed_loop", tmp_path / "killed", overrides)
    (run_dir,) = (tmp_path / "killed" / "closed_loop").iterdir()
    assert not (run_dir / "results.json").exists()
    assert sorted({name.split("-")[0] for name, _ in written}) == ["fitted", "true"]
    registry.resume(run_dir)
    assert_same_run(full_dir, run_dir)


def test_bad_settings_are_refused_before_any_work(tmp_path):
    with pytest.raises(registry.ExperimentError, match="parametrizations"):
        registry.launch("closed_loop", tmp_path, ["parametrizations=linear,cubic"])
    with pytest.raises(ValueError, match="num_runs"):
        registry.launch("closed_loop", tmp_path, ["num_runs=1"])


@pytest.mark.parametrize("override, match", [
    ("click_models=informational,informational",
     r"click_models must name each of its values once; got \('informational', 'informational'\)"),
    ("parametrizations=", r"parametrizations must name each of its values once; got \(\)"),
])
def test_repeated_or_empty_lists_are_refused(tmp_path, override, match):
    with pytest.raises(registry.ExperimentError, match=match):
        registry.launch("closed_loop", tmp_path, [override])
