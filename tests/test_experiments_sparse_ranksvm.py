"""The sparse_ranksvm experiment end to end on the MQ2008 sample (one fold, a short λ grid)."""

import json

import numpy as np
import pytest

from experiments.common import registry
from experiments.sparse_ranksvm import parse_penalty
from tests.conftest import SAMPLE_DATA


def test_sparse_ranksvm_runs_on_the_sample_and_writes_tables_and_figures(tmp_path):
    run_dir = registry.launch("sparse_ranksvm", tmp_path, [
        f"dataset={SAMPLE_DATA / 'MQ2008-mini'}", "folds=1", "num_lambdas=4", "decades=1.5", "sweep=log@0.1",
        "tol=1e-5", "max_iter=2000", "num_outer=3",
    ])
    results = json.loads((run_dir / "results.json").read_text())
    assert results["penalties"] == ["l1", "mcp@3", "log@0.01", "lp@0.5"] and results["sweep"] == ["log@0.1"]
    from jaxrank.data import load_fold
    docs = load_fold(SAMPLE_DATA / "MQ2008-mini", 1)[0].features
    assert results["informative_features_folds"] == [int(np.sum(np.ptp(docs, axis=0) > 0))]
    for spec, lane in results["lanes"].items():
        assert 0.0 <= lane["sparsity_ratio"] <= 1.0, spec
        assert set(lane["test"]) == {"map", "map_letor", "ndcg10", "ndcg10_letor"}
        assert lane["uncertified_solutions"] == 0
    comp = results["comparison"]["map"]
    assert comp["penalties"][comp["best"]]["p_vs_best"] is None
    with np.load(run_dir / "arrays.npz") as arrays:
        assert arrays["w"].shape == (1, 5, 4, 46)
        assert np.all(arrays["w"][..., ~arrays["informative"][0]] == 0)  # constant features never get weight
    assert "ℓ0.5" in (run_dir / "table.md").read_text()
    assert (run_dir / "sparse_ranksvm_map_vs_sparsity.png").is_file()


@pytest.mark.parametrize("spec, message", [
    ("lp@1.5", "p must be in \\(0, 1\\); got 1.5"),
    ("mcp@1", "gamma must be > 1; got 1.0"),
    ("log@0", "eps must be > 0; got 0.0"),
    ("log@-1", "eps must be > 0; got -1.0"),
    ("lasso", "unknown penalty 'lasso'"),
    ("log@x", "'x' is not a number"),
])
def test_bad_penalty_specs_are_rejected_with_the_value(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_penalty(spec)


def test_bad_penalty_in_config_fails_before_loading_data(tmp_path):
    with pytest.raises(ValueError, match="gamma must be > 1"):
        registry.launch("sparse_ranksvm", tmp_path, ["dataset=/nonexistent", "penalties=l1,mcp@0.5"])


def test_unknown_solver_fails_before_loading_data(tmp_path):
    with pytest.raises(ValueError, match="solver must be 'auto', 'fista' or 'newton'; got 'cd'"):
        registry.launch("sparse_ranksvm", tmp_path, ["dataset=/nonexistent", "solver=cd"])
