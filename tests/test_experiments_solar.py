"""SOLAR experiments end to end: tiny configs on synthetic data (always), and the paper's Table 2
MQ2008 row on the real data (slow)."""

import jax
import numpy as np
import pytest

from experiments import registry
from tests.conftest import launch_experiment as _launch


def test_solar_online_synthetic(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "solar_online", "algorithms=solar_first_order,prank_pointwise", "num_permutations=2")
    assert "using synthetic data instead" in capsys.readouterr().out
    assert results["order"] == ["solar_first_order", "prank_pointwise"] and results["paper"] == {}
    for r in results["algorithms"].values():
        assert all(0 <= v <= 1 for v in r["mean"]) and len(r["std"]) == 4
    curves = np.load(run_dir / "arrays.npz")["solar_first_order__cumulative_mean"]
    assert curves.shape == (results["num_queries"], 4)
    np.testing.assert_allclose(curves[-1], results["algorithms"]["solar_first_order"]["mean"], atol=1e-4)
    assert (run_dir / "table.md").is_file() and (run_dir / "solar_online.png").is_file()


def test_solar_batch_synthetic(tmp_path, no_data):
    _, results = _launch(tmp_path, "solar_batch", "folds=1,2", "algorithms=solar_first_order,ranksvm", "c_grid=1e-4,1e-1",
                         "lambda_grid=1e-3,1")
    for name, grid in (("solar_first_order", [1e-4, 1e-1]), ("ranksvm", [1e-3, 1.0])):
        r = results["algorithms"][name]
        assert set(r["chosen"]) <= set(grid) and len(r["chosen"]) == 2
        assert all(0 <= v <= 1 for v in r["test"] + r["test_letor"])
        chosen = [int(np.argmax(v)) for v in r["vali_grid"]]
        assert [grid[k] for k in chosen] == r["chosen"]


def test_solar_scalability_synthetic(tmp_path, no_data):
    """The prefixes are the shuffled queries the experiment says, with the pairs counted by hand,
    and one finite positive time per method and prefix."""
    run_dir, results = _launch(tmp_path, "solar_scalability", "num_queries=10,30", "repeats=1")
    assert results["num_queries"] == [10, 30]
    from experiments import letor_datasets

    queries = letor_datasets.all_queries(letor_datasets.resolve("synthetic", "test"), 0)
    order = np.asarray(jax.random.permutation(jax.random.fold_in(jax.random.key(0), 1), queries.num_queries))
    for n, reported in zip((10, 30), results["num_pairs"]):
        count = 0
        for q in order[:n]:
            lab = queries.labels[queries.offsets[q]:queries.offsets[q + 1]]
            count += sum(int(a > b) for a in lab for b in lab)
        assert reported == count
    assert set(results["seconds"]) == {"solar_first_order", "solar_second_order", "ranksvm"}
    assert all(len(v) == 2 and all(np.isfinite(x) and x > 0 for x in v) for v in results["seconds"].values())
    assert (run_dir / "table.md").is_file()


@pytest.mark.parametrize("overrides", [["c=0"], ["gamma=-1"], ["num_permutations=0"], ["algorithms=solar_iii"],
                                       ["prank_score=votes"]])
def test_solar_online_rejects_bad_config(tmp_path, no_data, overrides):
    with pytest.raises(ValueError):
        registry.launch("solar_online", tmp_path, overrides)


def test_solar_batch_rejects_bad_grid(tmp_path, no_data):
    with pytest.raises(ValueError, match="must be > 0"):
        registry.launch("solar_batch", tmp_path, ["c_grid=1e-4,0"])
    with pytest.raises(ValueError, match="select_by"):
        registry.launch("solar_batch", tmp_path, ["select_by=auc"])


# Wang et al. (2015), Table 2, MQ2008 row: N@1, N@5, N@10.
PAPER_MQ2008 = {"prank_pointwise": (0.2369, 0.3352, 0.4036), "prank_pairwise": (0.2834, 0.3823, 0.4403),
                "committee_perceptron": (0.3378, 0.4415, 0.4885), "solar_first_order": (0.3490, 0.4584, 0.5022),
                "solar_second_order": (0.3594, 0.4680, 0.5107)}


@pytest.mark.slow
def test_table2_mq2008_row(tmp_path, shared_data, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(shared_data))
    _, results = _launch(tmp_path, "solar_online", "dataset=MQ2008")
    ours = {a: r["mean"][:3] for a, r in results["algorithms"].items()}
    for name in ("solar_first_order", "solar_second_order"):
        np.testing.assert_allclose(ours[name], PAPER_MQ2008[name], atol=0.03)
    n10 = {a: v[2] for a, v in ours.items()}
    assert n10["solar_second_order"] >= n10["solar_first_order"] > n10["committee_perceptron"] > n10["prank_pairwise"] > n10["prank_pointwise"]
