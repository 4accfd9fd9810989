"""``preference_matrix`` and ``condorcet_probability`` end to end with tiny configs and no data."""

import gzip
import json

import jax
import numpy as np
import pytest

from experiments.common import registry
from jaxrank import data, envs
from jaxrank.clicks import cascade_model
from jaxrank.envs.estimate import estimate_wins
from tests.conftest import SAMPLE_DATA, killed_after_checkpoints, launch_experiment as _launch


def test_preference_matrix_falls_back_to_synthetic_queries_and_saves_a_loadable_matrix(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "preference_matrix", "num_arms=4", "num_comparisons=300",
                               "synthetic_queries=8", "synthetic_features=5", "chunk_size=256")
    out = capsys.readouterr().out
    assert "using synthetic queries instead" in out and "no reference matrix" in out
    assert results["feature_ids"] == [1, 2, 3, 4] and results["total_comparisons"] == 6 * 300
    pref = np.loadtxt(run_dir / "preference_matrix.txt")
    envs.check_preference_matrix(pref)
    np.testing.assert_allclose(pref, results["pref"], atol=1e-6)
    with np.load(run_dir / "arrays.npz") as arrays:
        np.testing.assert_array_equal(arrays["counts"], 300 * (1 - np.eye(4, dtype=int)))
    assert "reference" not in results
    for name in ("table.md", "preference_matrix.png", "config.json"):
        assert (run_dir / name).is_file()


def test_preference_matrix_reads_a_letor_file_in_the_ragged_layout(tmp_path, no_data):
    """A real file (4 MQ2008 queries, 32 documents, grades 0-2): the experiment's counts are the
    estimate on the file's padded layout, with the paper's rankers, 3-grade perfect clicks and its seed."""
    path = SAMPLE_DATA / "MQ2008-mini" / "Fold1" / "train.txt.gz"
    with gzip.open(path, "rt") as f:
        qids = {line.split()[1] for line in f}
    run_dir, results = _launch(tmp_path, "preference_matrix", f"dataset={path}", "num_arms=3", "num_comparisons=200",
                               "chunk_size=256", "seed=4")
    assert results["num_queries"] == len(qids) == 4 and results["num_grades"] == 3
    assert results["feature_ids"] == [1, 10, 11]
    dense = data.load_queries(path, layout="dense")
    expected = estimate_wins(jax.random.key(4), dense, envs.single_feature_rankers([1, 10, 11], 46),
                             cascade_model("perfect", 3), "probabilistic", 200, chunk_size=256, verbose=False)
    with np.load(run_dir / "arrays.npz") as arrays:
        np.testing.assert_array_equal(arrays["wins"], expected.wins)
        np.testing.assert_array_equal(arrays["ties"], expected.ties)


@pytest.mark.slow
def test_a_killed_preference_matrix_run_resumes_with_the_same_counts(tmp_path, no_data, monkeypatch):
    settings = ["num_arms=4", "num_comparisons=120", "synthetic_queries=8", "synthetic_features=5", "chunk_size=60",
                "comparisons_per_call=120"]  # 10 comparisons per pair per chunk, 2 chunks per call: 6 calls
    full_dir, full = _launch(tmp_path / "full", "preference_matrix", *settings)
    with killed_after_checkpoints(monkeypatch, 2) as written:
        registry.launch("preference_matrix", tmp_path / "killed", settings)
    run_dir = registry.latest_run_dir(tmp_path / "killed", "preference_matrix")
    assert [h["next_call"] for _, h in written] == [1, 2] and not (run_dir / "results.json").exists()
    assert registry.resume(run_dir) == run_dir
    resumed = json.loads((run_dir / "results.json").read_text())
    assert resumed["pref"] == full["pref"] and resumed["tie_fraction"] == full["tie_fraction"]
    with np.load(run_dir / "arrays.npz") as got, np.load(full_dir / "arrays.npz") as want:
        np.testing.assert_array_equal(got["wins"], want["wins"])
        np.testing.assert_array_equal(got["ties"], want["ties"])
    assert not any((run_dir / "checkpoints").glob("*.npz"))  # removed once the results are written


def test_preference_matrix_compares_with_a_reference(tmp_path, no_data):
    ref = np.full((5, 5), 0.5)
    ref[0, 1:], ref[1:, 0] = 0.7, 0.3  # feature 1 beats all
    path = tmp_path / "ref.txt"
    np.savetxt(path, ref)
    run_dir, results = _launch(tmp_path, "preference_matrix", "num_arms=4", "num_comparisons=300",
                               "synthetic_queries=8", "synthetic_features=5", "chunk_size=256", f"reference={path}")
    r = results["reference"]
    # the paper's rankers for 5 features: ids 1, 2, 3, 4 (sorted as strings): rows 0..3 of the reference
    assert results["feature_ids"] == [1, 2, 3, 4] and r["num_pairs"] == 6
    with np.load(run_dir / "arrays.npz") as arrays:
        est, ref_used = arrays["pref"], arrays["reference"]
    np.testing.assert_array_equal(ref_used, ref[:4, :4])
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]  # the comparison, recomputed pair by pair
    agree = [np.sign(est[i, j] - 0.5) == np.sign(ref[i, j] - 0.5) for i, j in pairs]
    diffs = [abs(est[i, j] - ref[i, j]) for i, j in pairs]
    assert r["sign_agreement"] == pytest.approx(np.mean(agree))
    assert r["mean_abs_diff"] == pytest.approx(np.mean(diffs)) and r["max_abs_diff"] == pytest.approx(max(diffs))
    assert r["disagreeing_pairs"] == [[i, j] for (i, j), a in zip(pairs, agree) if not a]
    assert r["condorcet_winner"] == {"arm": 0, "feature_id": 1}
    # the estimate itself: counts and wins as the P it reports
    with np.load(run_dir / "arrays.npz") as arrays:
        counts, wins = arrays["counts"], arrays["wins"]
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_array_equal(counts[off], 300)
    np.testing.assert_allclose(est[off], wins[off] / 300)


def test_condorcet_probability_on_the_embedded_matrix_is_exact(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "condorcet_probability", "num_subsets=50")
    assert "embedded arXiv 6-ranker matrix" in capsys.readouterr().out
    assert results["arm_counts"] == [2, 3, 4, 5, 6] and all(results["exact"])
    assert all(0.0 <= t <= c <= 1.0 for c, t in zip(results["condorcet"], results["total_order"]))
    assert results["condorcet"][0] == pytest.approx(14 / 15)  # 15 pairs; one pair of the arXiv matrix ties at exactly 1/2
    assert (run_dir / "condorcet_probability.png").is_file() and (run_dir / "table.md").is_file()


def test_condorcet_probability_counts_cycles_and_orders(tmp_path, no_data):
    """A 3-cycle plus a dominated arm: every count can be checked by hand."""
    p = np.full((4, 4), 0.5)
    for i, j in [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]:
        p[i, j], p[j, i] = 0.7, 0.3
    path = tmp_path / "cycle.txt"
    np.savetxt(path, p)
    _, results = _launch(tmp_path, "condorcet_probability", f"matrix={path}", "num_subsets=10")
    # K=3: {0,1,2} is a cycle, the 3 others are orders with a winner; K=4: no winner, no order.
    assert results["condorcet"] == [1.0, 0.75, 0.0] and results["total_order"] == [1.0, 0.75, 0.0]
    assert results["min_condorcet"] == {"probability": 0.0, "num_arms": 4}


def test_condorcet_probability_samples_when_enumeration_is_too_big(tmp_path, no_data):
    p = np.asarray(envs.cyclic_matrix(12, gap=0.1))
    path = tmp_path / "cyclic12.txt"
    np.savetxt(path, p)
    _, results = _launch(tmp_path, "condorcet_probability", f"matrix={path}", "num_subsets=200", "min_arms=5",
                         "max_arms=7")
    assert results["exact"] == [False, False, False]  # C(12, 5) = 792 > 200
    again = registry.launch("condorcet_probability", tmp_path, [f"matrix={path}", "num_subsets=200", "min_arms=5",
                                                                "max_arms=7"])
    assert json.loads((again / "results.json").read_text())["condorcet"] == results["condorcet"]
