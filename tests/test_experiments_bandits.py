"""Every dueling-bandit experiment end to end on the embedded matrix with a tiny config."""

import re

import jax
import numpy as np
import pytest

from experiments.common import registry
from jaxrank import bandits
from jaxrank.data.preference import EMBEDDED_DEFAULT, load_preference_matrix
from tests.conftest import launch_experiment as _launch


def test_rcs_regret_on_the_embedded_matrix_is_deterministic(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "rcs_regret", "num_runs=3", "num_steps=400")
    assert "embedded arXiv 6-ranker matrix" in capsys.readouterr().out
    again, _ = _launch(tmp_path, "rcs_regret", "num_runs=3", "num_steps=400")
    assert (run_dir / "results.json").read_bytes() == (again / "results.json").read_bytes()
    m = results["matrices"]["ArXiv_6_rankers"]
    assert set(m["algorithms"]) == {"rcs", "rucb"}
    assert results["checkpoints"][-1] == 400
    regret = np.asarray(m["algorithms"]["rcs"]["regret_mean"])
    assert np.all(np.diff(regret) >= 0) and regret[-1] > 0
    for name in ("table.md", "rcs_regret.png", "arrays.npz", "config.json"):
        assert (run_dir / name).is_file()


def test_rcs_accuracy_reruns_savage_per_horizon(tmp_path, no_data):
    run_dir, results = _launch(tmp_path, "rcs_accuracy", "num_runs=3", "min_horizon=20", "max_horizon=300",
                               "num_horizons=3")
    assert results["horizons"] == [20, 77, 300]
    m = results["matrices"]["ArXiv_6_rankers"]
    assert len(m["rcs"]["accuracy"]) == len(m["savage"]["accuracy"]) == 3
    assert (run_dir / "rcs_accuracy_accuracy.png").is_file() and (run_dir / "rcs_accuracy_regret.png").is_file()


@pytest.mark.slow
def test_rcs_alpha_runs_both_alphas_in_one_program(tmp_path, no_data):
    """Both alphas come out of one sweep per algorithm, each equal to that alpha run alone."""
    _, results = _launch(tmp_path, "rcs_alpha", "num_runs=2", "num_steps=300")
    curves = results["matrices"]["ArXiv_6_rankers"]["curves"]
    assert set(curves) == {"RCS alpha=0.1", "RCS alpha=0.501", "RUCB alpha=0.1", "RUCB alpha=0.501"}
    from experiments.common.matrices import load_matrices

    (matrix,) = load_matrices(("paper",), 6)
    for name in ("RCS", "RUCB"):
        for alpha in (0.1, 0.501):
            alone = bandits.run_sweep(jax.random.key(0), name.lower(), matrix.pref, num_runs=2, num_steps=300,
                                  hparams={"alpha": [alpha]}, checkpoints=results["checkpoints"])
            np.testing.assert_allclose(curves[f"{name} alpha={alpha}"]["regret_mean"], alone.regret[0, 0].mean(0),
                                       rtol=1e-4, atol=1e-4)
    assert curves["RUCB alpha=0.1"]["regret_mean"] != curves["RUCB alpha=0.501"]["regret_mean"]


@pytest.mark.slow
def test_rcs_scaling_says_when_it_is_shorter_than_the_paper(tmp_path, no_data, capsys):
    _, results = _launch(tmp_path, "rcs_scaling", "num_runs=2", "num_steps=300", "arm_counts=4,5")
    assert "the paper uses" in capsys.readouterr().out
    assert set(results["panels"]) == {"ArXiv_6_rankers K=4", "ArXiv_6_rankers K=5"}
    for panel in results["panels"].values():  # the local shares the verdicts read: one per checkpoint, in [0, 1]
        for algo in panel["algorithms"].values():
            assert len(algo["window_suboptimal"]) == len(panel["checkpoints"]) == len(algo["window_suboptimal_ci95"])
            assert all(-1e-6 <= s <= 1 + 1e-6 for s in algo["window_suboptimal"])


def test_rcs_scaling_window_shares_from_cumulative_ones():
    """Cumulative shares 1/2, 1/2, 1/4 at steps 10, 20, 40 are 5, 10, 10 suboptimal duels: 5 of the
    first 10 steps, 5 of the next 10, none of the last 20."""
    from experiments.rcs_scaling import window_shares

    np.testing.assert_allclose(window_shares([10, 20, 40], [[0.5, 0.5, 0.25], [1.0, 1.0, 1.0]]),
                               [[0.5, 0.5, 0.0], [1.0, 1.0, 1.0]])


def test_unknown_algorithm_is_rejected_before_running(tmp_path, no_data):
    with pytest.raises(ValueError, match="unknown bandit .ucb.; registered: rcs, rucb, savage, dts"):
        registry.launch("rcs_regret", tmp_path, ["algorithms=rcs,ucb"])


def _no_sweep(monkeypatch):
    """Any sweep fails the test: a bad setting must be found before the first one."""
    monkeypatch.setattr(bandits, "run_sweep", lambda *a, **k: pytest.fail("a sweep ran before the settings were checked"))


def test_per_algorithm_settings_reach_any_bandit(tmp_path, no_data):
    """Each algorithm gets its own settings (``params``): RMED runs beside RCS (it used to fail with
    "rmed has no hyperparameter 'alpha'" after RCS had run), and an override reaches the one named."""
    _, results = _launch(tmp_path, "rcs_regret", "num_runs=2", "num_steps=200", "algorithms=rcs,rmed",
                         "params=rmed.kweight=0.5")
    assert results["settings"] == {"rcs": {"lerot": False, "alpha": 0.501},
                                   "rmed": {"leader_first": False, "kweight": 0.5}}
    assert set(results["matrices"]["ArXiv_6_rankers"]["algorithms"]) == {"rcs", "rmed"}
    matrix = np.stack([load_preference_matrix(EMBEDDED_DEFAULT)])
    alone = bandits.run_sweep(jax.random.key(0), "rmed", matrix, num_runs=2, num_steps=200, hparams={"kweight": [0.5]},
                          checkpoints=results["checkpoints"])
    np.testing.assert_allclose(results["matrices"]["ArXiv_6_rankers"]["algorithms"]["rmed"]["regret_mean"],
                               alone.regret[0, 0].mean(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("experiment, overrides, message", [
    ("rcs_regret", ["algorithms=rcs,rmed", "params=rmed.alpha=0.5"],
     "bandit 'rmed' has no setting 'alpha'; hyperparameters: kweight; options: leader_first."),
    ("rcs_regret", ["params=rcs.alpha=nan"], "bandit 'rcs': hyperparameter alpha='nan' must be finite."),
    ("rcs_regret", ["params=dts.alpha=0.6"], "params set dts, which this run does not run; algorithms: rcs, rucb."),
    ("rcs_regret", ["params=rcs.lerot=maybe"], "lerot is an on/off option of make(); got 'maybe'; pass True or False."),
    ("rcs_alpha", ["algorithms=rcs,rmed"], "rcs_alpha runs algorithms with an exploration constant alpha; rmed has "
                                           "none (hyperparameters: kweight)."),
    ("rcs_alpha", ["params=rcs.alpha=0.3"], "rcs_alpha sweeps alpha over the alphas field"),
    ("rcs_accuracy", ["params=savage.horizon=50"], "rcs_accuracy runs SAVAGE with its horizon set to each run's length"),
    ("rcs_scaling", ["params=rucb.alhpa=0.3"], "bandit 'rucb' has no setting 'alhpa'; hyperparameters: alpha"),
])
def test_bad_settings_fail_before_any_work(tmp_path, no_data, monkeypatch, experiment, overrides, message):
    _no_sweep(monkeypatch)
    with pytest.raises(registry.ExperimentError, match=re.escape(message)):
        registry.launch(experiment, tmp_path, ["num_runs=2", *overrides])
    assert not list((tmp_path / experiment).iterdir())  # no run directory left to --resume
