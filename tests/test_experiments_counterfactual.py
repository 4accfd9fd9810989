"""``counterfactual_ltr``: a tiny end-to-end run on synthetic data, the verdicts on hand-made summaries,
and the gather of displayed positions' clicks."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from experiments import counterfactual_ltr
from experiments.analysis import counterfactual_ltr as analysis
from experiments.common import registry
from tests.conftest import launch_experiment

VERDICTS = {"holds", "does not hold", "not testable here"}


def test_tiny_run_end_to_end(tmp_path, no_data):
    run_dir, results = launch_experiment(
        tmp_path, "counterfactual_ltr", "etas=1", "num_seeds=2", "click_budgets=40,400", "num_steps=10",
        "propensity_sessions=300", "num_positions=4", "chunk_size=128", "learners=naive,ips,ips_clipped,dr")
    assert results["dataset"] == "synthetic" and results["etas"] == ["1"]
    curves = results["curves"]["1"]
    assert set(curves) == {"naive", "ips", "ips_clipped", "dr"}
    for c in curves.values():
        assert len(c["mean"]) == 2 and all(0.0 <= m <= 1.0 for m in c["mean"])
    assert all(b <= n for b, n in zip((40, 400), results["clicks_logged"]["1"]))
    assert results["propensities"]["1"]["true"] == [1.0, 0.5, 0.333333, 0.25]
    assert np.load(run_dir / "ndcg_eta1.npz")["ndcg"].shape == (2, 2, 4)
    table = (run_dir / "table.md").read_text()
    assert "Propensity SVM-Rank" in table and "Verdicts:" in table
    assert json.loads((run_dir / "timings.json").read_text())["seconds"] > 0


def test_pairs_with_every_candidate(tmp_path, no_data):
    _, results = launch_experiment(
        tmp_path, "counterfactual_ltr", "etas=2", "num_seeds=2", "click_budgets=60", "num_steps=10",
        "propensity_sessions=300", "num_positions=4", "chunk_size=128", "learners=ips,dr", "pairs=all",
        "examination=eye_tracking")
    assert results["settings"]["pairs"] == "all" and set(results["curves"]["2"]) == {"ips", "dr"}
    np.testing.assert_allclose(results["propensities"]["2"]["true"], (np.array([0.68, 0.61, 0.48, 0.34]) / 0.68) ** 2,
                               rtol=1e-5)


def test_bad_learner_is_refused(tmp_path, no_data):
    with pytest.raises(registry.ExperimentError, match="learners must be one of"):
        registry.launch("counterfactual_ltr", tmp_path, ["learners=ips,svm"])


def _summary(ips, naive, dr, clipped, ips_std, clip_std, seeds=4):
    def curve(mean, std=(0.02, 0.02, 0.02)):
        return {"mean": list(mean), "ci95": [0.01] * 3, "std": list(std)}

    return {"etas": ["1"], "click_budgets": [100, 1000, 10000], "num_seeds": seeds, "skyline_ndcg": 0.7,
            "logging_ndcg": 0.5, "settings": {"clip": 0.1}, "propensities": {"1": {"true": [1.0, 0.3, 0.05]}},
            "curves": {"1": {"ips": curve(ips, ips_std), "naive": curve(naive), "dr": curve(dr),
                             "ips_clipped": curve(clipped, clip_std)}}}


def test_verdicts_on_hand_made_summaries():
    good = analysis.verdicts(_summary(ips=(0.50, 0.60, 0.66), naive=(0.50, 0.55, 0.56), dr=(0.55, 0.67, 0.68),
                                      clipped=(0.52, 0.60, 0.63), ips_std=(0.06, 0.04, 0.01),
                                      clip_std=(0.03, 0.02, 0.01)))
    assert [v for _, v, _ in good] == ["holds", "holds", "holds"]
    assert "factor 10 " in good[1][2] and "+0.0400" in good[0][2]
    bad = analysis.verdicts(_summary(ips=(0.50, 0.55, 0.56), naive=(0.50, 0.55, 0.56), dr=(0.50, 0.52, 0.55),
                                     clipped=(0.50, 0.55, 0.57), ips_std=(0.02, 0.02, 0.02),
                                     clip_std=(0.03, 0.03, 0.03)))
    assert [v for _, v, _ in bad] == ["does not hold"] * 3
    assert "DR with 10,000 clicks and by IPS with 1,000: a factor 0.1 " in bad[1][2]
    never = _summary(ips=(0.5, 0.6, 0.7), naive=(0.5, 0.5, 0.5), dr=(0.5, 0.6, 0.6), clipped=(0.5, 0.6, 0.7),
                     ips_std=(0.1, 0.1, 0.1), clip_std=(0.1, 0.1, 0.1))
    (_, verdict, detail) = analysis.verdicts(never)[1]
    assert verdict == "does not hold" and "DR never reaches 0.6900" in detail
    one_seed = _summary(ips=(0.5, 0.6, 0.7), naive=(0.5, 0.5, 0.5), dr=(0.5, 0.6, 0.7), clipped=(0.5, 0.6, 0.7),
                        ips_std=(0, 0, 0), clip_std=(0, 0, 0), seeds=1)
    del one_seed["curves"]["1"]["dr"]
    verdicts = analysis.verdicts(one_seed)
    assert [v for _, v, _ in verdicts] == ["holds", "not testable here", "not testable here"]
    assert {v for _, v, _ in verdicts} <= VERDICTS
    no_clip = _summary(ips=(0.5, 0.6, 0.7), naive=(0.5, 0.5, 0.5), dr=(0.5, 0.6, 0.7), clipped=(0.5, 0.6, 0.7),
                       ips_std=(0.1, 0.1, 0.1), clip_std=(0.1, 0.1, 0.1))
    no_clip["propensities"]["1"]["true"] = [1.0, 0.5, 0.2]
    assert analysis.verdicts(no_clip)[2][1:] == ("not testable here", "η = 1: τ = 0.1 clips no rank (smallest "
                                                                       "propensity 0.200)")
    flat = _summary(ips=(0.55, 0.50, 0.555), naive=(0.5, 0.5, 0.5), dr=(0.5, 0.6, 0.7), clipped=(0.5, 0.6, 0.7),
                    ips_std=(0.1, 0.1, 0.1), clip_std=(0.1, 0.1, 0.1))
    assert analysis.verdicts(flat)[1][1:] == ("not testable here", "η = 1: IPS does not improve with clicks (0.5500 ± "
                                              "0.0100 at 100, 0.5550 ± 0.0100 at 10,000), so there is no level to "
                                              "reach sooner")
    # the full-information learner on the same lists bounds any correction: not above naive, nothing to test
    for full, verdict in (((0.5, 0.55, 0.57), "not testable here"), ((0.5, 0.6, 0.6), "holds")):
        bounded = _summary(ips=(0.50, 0.60, 0.66), naive=(0.50, 0.55, 0.56), dr=(0.55, 0.67, 0.68),
                           clipped=(0.52, 0.60, 0.63), ips_std=(0.06, 0.04, 0.01), clip_std=(0.03, 0.02, 0.01))
        bounded["curves"]["1"]["full_info"] = {"mean": list(full), "ci95": [0.01] * 3, "std": [0.02] * 3}
        (_, got, detail) = analysis.verdicts(bounded)[0]
        assert got == verdict, detail
        assert ("full-information learner on the same lists (0.5700 ± 0.0100) is not above" in detail) == (
            verdict == "not testable here")


def test_shown_clicks_gathers_each_position_at_its_rank():
    rng = np.random.default_rng(0)
    clicks = rng.integers(0, 5, size=(2, 3, 6, 4)).astype(np.float32)  # [C, Q, L, K]
    docs = np.array([[5, 0, 2, 1], [3, 4, 0, 2], [1, 2, 3, 4]])
    ours = np.asarray(counterfactual_ltr._shown_clicks(jnp.asarray(clicks), jnp.asarray(docs)))
    for c in range(2):
        for q in range(3):
            for k in range(4):
                assert ours[c, q, k] == clicks[c, q, docs[q, k], k]
