"""The ``oltr`` experiment end to end with tiny settings (synthetic data), and its bad configs."""

import numpy as np
import pytest

from experiments import registry
from tests.conftest import launch_experiment as _launch


def test_oltr_synthetic(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "oltr", "folds=1", "num_runs=2", "num_impressions=200", "num_checkpoints=4",
                               "mgd_candidates=4", "click_models=perfect,informational")
    assert "using synthetic data instead" in capsys.readouterr().out
    assert set(results["learners"]) == {"dbgd", "mgd", "pdgd"} and results["dataset"] == "synthetic"
    arrays = np.load(run_dir / "arrays.npz")
    checkpoints = list(arrays["checkpoints"])
    assert checkpoints[0] == 0 and checkpoints[-1] == 200 and results["checkpoints"] == checkpoints
    for learner, per_model in results["learners"].items():
        offline = arrays[f"{learner}__offline"]
        assert offline.shape == (1, 2, 2, len(checkpoints)) and np.all((offline >= 0) & (offline <= 1))
        online = arrays[f"{learner}__online"]
        assert np.all(np.diff(online, axis=-1) >= 0)  # a discounted sum of NDCGs only grows
        np.testing.assert_allclose(per_model["perfect"]["final_offline"], offline[:, 0, :, -1].mean(), atol=1e-4)
    assert set(results["pdgd_best"]) == {"perfect", "informational"}
    assert (run_dir / "table.md").is_file() and (run_dir / "oltr.png").is_file()


@pytest.mark.parametrize("overrides", [["click_models=clicky"], ["pdgd_learning_rate=-1"], ["list_size=0"],
                                       ["learners=dbgd,sgd"], ["comparison=balanced"], ["folds=0"], ["num_runs=0"]])
def test_oltr_rejects_bad_config(tmp_path, no_data, overrides):
    with pytest.raises(ValueError):
        registry.launch("oltr", tmp_path, overrides)
