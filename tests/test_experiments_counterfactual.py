"""``counterfactual_ltr``: tiny end-to-end runs of both protocols, the experiment's IPS targets against
the propensity of each document's rank, the verdicts on hand-made results, bad settings refused before
any work, and a killed run resumed to identical files."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from experiments import counterfactual_ltr
from experiments.analysis import counterfactual_ltr as analysis
from experiments.common import registry
from tests.conftest import killed_after_checkpoints, launch_experiment
from tests.reference import counterfactual as ref

TINY = ("etas=2", "num_seeds=2", "click_budgets=100,2000", "num_steps=10", "propensity_sessions=300",
        "num_positions=4", "chunk_size=128")


def test_joachims_protocol_end_to_end(tmp_path, no_data):
    """IPS differs from naive on every seed and budget and ends above it; the verdicts read the same arrays."""
    run_dir, results = launch_experiment(tmp_path, "counterfactual_ltr", *TINY, "learners=naive,ips,full_info")
    assert results["dataset"] == "synthetic" and results["learners"] == ["naive", "ips", "full_info"]
    part = results["parts"]["fold1-eta2"]
    ndcg = np.asarray(part["ndcg"])  # [S, C, M]
    assert ndcg.shape == (2, 2, 3)
    assert np.all(ndcg[:, :, 1] != ndcg[:, :, 0])  # IPS is trained with propensities: not the naive ranker
    assert ndcg[:, -1, 1].mean() > ndcg[:, -1, 0].mean()
    assert part["propensities"]["true"] == [1.0, 0.25, 0.111111, 0.0625]
    assert all(b <= n for b, n in zip((100, 2000), part["logged_clicks"]))
    assert part["grad_norm_max"] < 1.0
    # each row's optimality: the largest relative gradient norm and last-10-steps share of the decrease
    assert len(part["relative_grad_max"]) == 3 and all(0 < g < 1 for g in part["relative_grad_max"])
    assert all(0 <= d <= 1 for d in part["last_decrease_max"]) and 0 < part["skyline_relative_grad"] < 1
    table = (run_dir / "table.md").read_text()
    ips_row = next(line for line in table.splitlines() if line.startswith("| IPS |"))
    assert ips_row.endswith(f"| {part['relative_grad_max'][1]:.1e} | {part['last_decrease_max'][1]:.1e} |")
    rise = next(d for c, v, d in analysis.verdicts(results) if c == analysis.CLAIMS["rise"])
    diff = ndcg[:, -1, 1] - ndcg[:, -1, 0]
    assert f"2,000: {diff.mean():+.4f}" in rise and "Verdicts:" in table
    assert json.loads((run_dir / "timings.json").read_text())["seconds"] > 0


def test_doubly_robust_protocol_end_to_end(tmp_path, no_data):
    _, results = launch_experiment(tmp_path, "counterfactual_ltr", "protocol=oosterhuis2023", "num_seeds=2",
                                   "session_budgets=200,2000", "num_steps=10", "dm_steps=50", "chunk_size=128",
                                   "learners=ips,dr,dr_perfect_dm")
    part = results["parts"]["fold1"]
    assert results["budget_unit"] == "sessions" and results["num_positions"] == 5
    np.testing.assert_allclose(part["tau"], [min(10 / np.sqrt(200), 1.0), 10 / np.sqrt(2000)], rtol=1e-5)
    assert part["logged_sessions"] == [200.0, 2000.0]
    ndcg = np.asarray(part["ndcg"])
    assert np.all(ndcg[:, :, 1] != ndcg[:, :, 0])  # DR is not IPS: the regression enters
    assert 0 < part["dm_vali_loss"][0] < np.inf


def test_the_experiments_ips_targets_divide_by_each_ranks_propensity():
    """One lane's initial targets: IPS = clicks per session / θ_rank(d) relative to rank 1, for the rank each
    document was shown at by the deterministic logger (no propensity, or reversed ranks, fail)."""
    rng = np.random.default_rng(0)
    q, l, k = 3, 6, 4
    labels = rng.integers(0, 3, size=(q, l)).astype(np.float32)
    mask = np.ones((q, l), bool)
    scores = rng.normal(size=(q, l)).astype(np.float32)
    theta = np.array([0.9, 0.45, 0.3, 0.2], np.float32)
    rel = np.array([0.1, 0.5, 1.0], np.float32)
    feats = np.zeros((q, l, 2), np.float32)
    shared = {"features": feats, "labels": labels, "mask": mask, "where": mask, "scores": scores,
              "relevance": rel[labels.astype(int)], "alpha": theta, "beta": np.zeros(k, np.float32),
              "relevance_table": rel, "blocks": {"queries": [np.arange(q, dtype=np.int32)], "features": (feats,),
                                                 "where": (mask,)}}
    spec = counterfactual_ltr._Spec("joachims2017", ("naive", "ips"), k, (500,), "clicks", 0.0, 64, q, "linear", 25,
                                    10, (l,))
    hp = {"lam": jnp.float32(1e-3), "clip": jnp.float32(0.0), "learning_rate": jnp.float32(0.01)}
    carry = counterfactual_ltr._lane_init(jax.random.key(3), hp, shared, None, spec=spec)
    naive, ips = np.asarray(carry.targets[0][0, 0]), np.asarray(carry.targets[0][0, 1])
    for query in range(q):
        for rank, d in enumerate(ref.shown_list(scores[query], mask[query], k)):
            assert ips[query, d] == pytest.approx(naive[query, d] / (theta[rank] / theta[0]), rel=1e-5)
    assert naive.sum() > 0


def _results(protocol, rows, ndcg, logging=0.4):
    """Hand-made results: ``ndcg [P][S][C][M]``."""
    parts = {f"fold{p + 1}": {"fold": p + 1, "eta": "1", "ndcg": v, "logging_ndcg": logging, "skyline_ndcg": 0.7,
                              "grad_norm_max": 1e-5, "propensities": {"true": [1.0, 0.5, 0.05]}}
             for p, v in enumerate(ndcg)}
    return {"protocol": protocol, "learners": rows, "budgets": [100, 1000, 10000],
            "budget_unit": "sessions" if protocol == "oosterhuis2023" else "clicks", "num_seeds": len(ndcg[0]),
            "parts": parts, "settings": {"clip": 0.1}, "dataset": "x", "folds": [1], "num_positions": 5,
            "examination": "x"}


def test_doubly_robust_verdict_from_paired_differences():
    """DR a constant 0.01 above IPS at every budget on every seed: the paired intervals are tight even though
    seeds spread by 0.1, and the level IPS ends at is reached 10x sooner."""
    seeds = np.array([0.0, 0.1, 0.2, -0.1])
    ips = np.array([0.40, 0.45, 0.50])
    ndcg = [[[[i + s, i + s + 0.05 + 0.001 * j] for j, i in enumerate(ips)] for s in seeds]]
    # rows: ips, dr; DR's curve is IPS's shifted one budget earlier at the last point
    ndcg[0] = [[[0.40 + s, 0.45 + s + 0.001], [0.45 + s, 0.50 + s + 0.002], [0.50 + s, 0.51 + s]] for s in seeds]
    results = _results("oosterhuis2023", ["ips", "dr"], ndcg)
    verdicts = analysis.verdicts(results)
    (claim, verdict, detail), floor = verdicts
    assert verdict == "holds" and "factor 10" in detail and "1,000: +0.0520 ± 0.0000" in detail
    assert floor[1] == "holds"
    below = _results("oosterhuis2023", ["ips", "dr"], ndcg, logging=0.8)
    assert analysis.verdicts(below)[1][1] == "does not hold" and "below it" in analysis.verdicts(below)[1][2]
    worse = [[[[a, b - 0.1] for a, b in budget] for budget in seed] for seed in ndcg]
    assert analysis.verdicts(_results("oosterhuis2023", ["ips", "dr"], worse))[0][1] == "does not hold"


def test_rise_verdict_reads_the_full_information_ceiling():
    seeds = np.array([0.0, 0.02, -0.02])
    rows = ["naive", "ips", "full_info"]
    ndcg = [[[[0.5 + s, 0.5 + s, 0.6 + s], [0.5 + s, 0.55 + s, 0.6 + s], [0.5 + s, 0.6 + s, 0.62 + s]]
             for s in seeds]]
    (claim, verdict, detail) = analysis.verdicts(_results("joachims2017", rows, ndcg))[0]
    assert verdict == "holds" and "10,000: +0.1000 ± 0.0000" in detail
    capped = [[[[a, b, a] for a, b, _ in budget] for budget in seed] for seed in ndcg]
    assert analysis.verdicts(_results("joachims2017", rows, capped))[0][1] == "not testable here"


@pytest.mark.parametrize("overrides, match", [
    (["num_seeds=1000000000"], r"num_seeds=1000000000 needs .* GiB .* the largest that fits is \d+"),
    (["click_budgets=100,100000000000000000000"], r"click_budgets: 100000000000000000000 exceeds .* 2147"),
    (["num_steps=1000000000000"], r"num_steps=1000000000000 exceeds the int32 step counter; the largest is 2147483647"),
    (["propensity_sessions=1000000000000"], r"propensity_sessions=1000000000000 needs .* the largest that fits is"),
    (["learning_rate=nan"], r"learning_rate=nan must be a finite number > 0"),
    (["learning_rate=inf"], r"learning_rate=inf must be a finite number > 0"),
    (["learning_rate=-1"], r"learning_rate=-1.0 must be a finite number > 0"),
    (["lam=nan"], r"lam=nan must be a finite number >= 0"),
    (["lam=-1"], r"lam=-1.0 must be a finite number >= 0"),
    (["eps_minus=0.5", "eps_plus=0.2"], r"eps_minus=0.5 > eps_plus=0.2"),
    (["learners="], "learners is empty"),
    (["learners=ips,ips"], "learners=ips,ips names a row twice"),
    (["learners=ips,svm"], "learners .* must be one of"),
    (["protocol=oosterhuis2023", "learners=ips_clipped"], "must be one of"),
])
def test_bad_settings_are_refused_before_work(tmp_path, no_data, overrides, match):
    with pytest.raises(registry.ExperimentError, match=match):
        registry.launch("counterfactual_ltr", tmp_path, overrides)
    assert not (tmp_path / "counterfactual_ltr").exists() or not any((tmp_path / "counterfactual_ltr").iterdir())


@pytest.mark.slow
def test_a_run_killed_after_its_first_eta_resumes_to_identical_files(tmp_path, no_data, monkeypatch):
    overrides = ["etas=0.5,1", "num_seeds=2", "click_budgets=100,1000", "num_steps=20", "propensity_sessions=300",
                 "num_positions=4", "chunk_size=128", "learners=naive,ips"]
    full_dir = registry.launch("counterfactual_ltr", tmp_path / "full", overrides)
    with killed_after_checkpoints(monkeypatch, 3):  # both chunks of η = 0.5, then the first of η = 1
        registry.launch("counterfactual_ltr", tmp_path / "killed", overrides)
    (run_dir,) = (tmp_path / "killed" / "counterfactual_ltr").iterdir()
    assert not (run_dir / "results.json").exists()
    registry.resume(run_dir)
    for name in ("results.json", "table.md"):
        assert (run_dir / name).read_bytes() == (full_dir / name).read_bytes(), name
