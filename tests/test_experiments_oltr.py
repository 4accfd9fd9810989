"""The ``oltr`` experiment end to end with tiny settings (synthetic data): its numbers are those of
the library's own simulation of the same lane, a killed run resumes with identical results, and bad
configs are refused before any work with the value named."""

import dataclasses

import jax
import numpy as np
import pytest

from experiments import oltr as experiment
from experiments.common import registry
from jaxrank import oltr
from jaxrank.clicks import cascade_model
from tests.conftest import assert_same_run, killed_after_checkpoints, launch_experiment as _launch

TINY = ("folds=1", "num_runs=2", "num_impressions=200", "num_checkpoints=4", "click_models=perfect,informational",
        "learners=dbgd,mgd,pdgd", "params=mgd.num_candidates=4,pdgd.learning_rate=0.2")


def test_oltr_synthetic_matches_the_library_simulation_of_each_lane(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "oltr", *TINY)
    assert "using synthetic data instead" in capsys.readouterr().out
    assert set(results["learners"]) == {"dbgd", "mgd", "pdgd"} and results["dataset"] == "synthetic"
    assert results["settings"]["mgd"]["options"]["num_candidates"] == 4
    assert results["settings"]["pdgd"]["hparams"] == {"learning_rate": 0.2, "learning_rate_decay": 0.9999977}
    arrays = np.load(run_dir / "arrays.npz")
    checkpoints = list(arrays["checkpoints"])
    assert checkpoints[0] == 0 and checkpoints[-1] == 200 and results["checkpoints"] == checkpoints
    # Lane (fold 1, informational, run 1) of PDGD, simulated alone through the public API.
    config = registry.make_config(registry.get("oltr"), list(TINY))
    _, _, folds = experiment.load_folds(config)
    kept = experiment.protocol_folds(config, folds)
    labels, offsets = folds[1][1].labels, folds[1][1].offsets
    relevant = [q for q in range(len(offsets) - 1) if labels[offsets[q]:offsets[q + 1]].max() > 0]
    assert kept[1][1].qid.tolist() == folds[1][1].qid[relevant].tolist() and 0 < len(relevant) < len(offsets) - 1
    assert results["protocol"]["test_queries_kept"] == {"1": [len(relevant), len(offsets) - 1]}
    train, test, _ = oltr.stack_folds(kept, (1,))
    key = oltr.lane_keys(config.seed, (1,), 2, 2)[0, 1, 1]
    alone = jax.jit(lambda k: oltr.simulate(
        k, oltr.RANKERS.build("pdgd"), jax.tree.map(lambda x: x[0], train), jax.tree.map(lambda x: x[0], test),
        cascade_model("informational", results["num_grades"]), checkpoints=checkpoints,
        hparams={"learning_rate": 0.2, "learning_rate_decay": 0.9999977}, stop_rule="every_position"))(key)
    np.testing.assert_allclose(arrays["pdgd__offline"][0, 1, 1], alone.offline, rtol=1e-6)
    np.testing.assert_allclose(arrays["pdgd__online"][0, 1, 1], alone.online, rtol=1e-6)
    for learner, per_model in results["learners"].items():
        offline = arrays[f"{learner}__offline"]
        assert offline.shape == (1, 2, 2, len(checkpoints)) and np.all((offline >= 0) & (offline <= 1))
        assert np.all(np.diff(arrays[f"{learner}__online"], axis=-1) >= 0)  # a discounted sum of NDCGs only grows
    assert set(results["pdgd_best"]) == {"perfect", "informational"}
    assert (run_dir / "table.md").is_file() and (run_dir / "oltr.png").is_file()


def test_a_killed_run_resumes_with_identical_results(tmp_path, no_data, monkeypatch):
    """Killed after the fifth checkpoint (inside PDGD, the second learner), ``resume`` finishes the
    run from its checkpoints: DBGD's finished grid is read back, PDGD continues where it stopped,
    and every array, ``results.json`` and ``table.md`` equal an uninterrupted run's."""
    overrides = ["folds=1", "num_runs=2", "num_impressions=40", "num_checkpoints=3", "click_models=perfect",
                 "learners=dbgd,pdgd"]
    full_dir = registry.launch("oltr", tmp_path / "full", overrides)
    with killed_after_checkpoints(monkeypatch, 5) as written:
        registry.launch("oltr", tmp_path / "killed", overrides)
    (run_dir,) = (tmp_path / "killed" / "oltr").iterdir()
    assert not (run_dir / "results.json").exists()
    assert sorted({name.split("-")[0] for name, _ in written}) == ["dbgd", "pdgd"]
    registry.resume(run_dir)
    assert_same_run(full_dir, run_dir)


@pytest.mark.parametrize("overrides, match", [
    (["click_models=clicky"], "clicky"),
    (["params=pdgd.learning_rate=-1"], r"learning_rate must be in \(0, inf\); got -1"),
    (["params=pdgd.learning_rate=inf"], "learning_rate='inf' must be finite"),
    (["params=dbgd.delta=nan"], "delta='nan' must be finite"),
    (["params=mgd.num_candidates=0"], "num_candidates must be an int >= 1; got 0"),
    (["params=dbgd.interleaving=balanced"], "interleaving must be one of .*'balanced'"),
    (["params=pdgd.delta=1"], "ranker 'pdgd' has no setting 'delta'"),
    (["params=pdgd.list_size=5"], "list_size is the protocol's"),
    (["learners=dbgd", "params=pdgd.learning_rate=0.2"], "params set pdgd, which this run does not run"),
    (["pdgd_learning_rate=0.2"], "unknown config key 'pdgd_learning_rate'"),
    (["list_size=0"], "list_size must be an int >= 1; got 0"),
    (["learners=dbgd,sgd"], "unknown row 'sgd'"),
    (["test_queries=some"], "test_queries must be one of 'relevant', 'all'; got 'some'"),
    (["stop_rule=never"], "stop_rule must be one of 'after_click', 'every_position'; got 'never'"),
    (["comparisons=balanced"], "comparisons must be one of 'probabilistic', 'team_draft'; got 'balanced'"),
    (["learning_rate_decay=0"], r"learning_rate_decay must be in \(0, 1\]; got 0"),
    (["outcome_samples=-5"], "outcome_samples must be an int >= 0; got -5"),
    (["folds=0"], r"folds must be a non-empty subset of 1..5; got \(0,\)"),
    (["folds=1,1"], "folds=1,1 names an entry twice"),
    (["learners=pdgd,pdgd"], "learners=pdgd,pdgd names an entry twice"),
    (["num_runs=0"], "num_runs must be an int >= 1; got 0"),
])
def test_oltr_rejects_bad_config_before_any_work(tmp_path, no_data, overrides, match):
    with pytest.raises(ValueError, match=match) as info:
        registry.launch("oltr", tmp_path, overrides)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "oltr").exists() or not any((tmp_path / "oltr").iterdir())  # no run directory left


def test_every_row_is_a_registered_ranker_with_the_protocol_settings():
    """The paper's six rows name real rankers and settings (a typo would only surface when that row
    is selected), and the protocol's options reach every ranker that has them."""
    rows = experiment.ranker_settings(experiment.Config())
    assert list(rows) == ["dbgd", "dbgd_neural", "mgd", "pairwise", "pdgd", "pdgd_neural"]
    for row, (name, options, hparams) in rows.items():
        assert name in oltr.RANKERS and options["list_size"] == 10
        assert hparams["learning_rate_decay"] == 0.9999977, row
    assert rows["dbgd"][1]["interleaving"] == rows["dbgd_neural"][1]["interleaving"] == "probabilistic"
    assert rows["mgd"][1]["multileaving"] == "probabilistic"
    assert rows["dbgd"][1]["outcome_samples"] == rows["mgd"][1]["outcome_samples"] == 10_000
    assert rows["dbgd_neural"][1]["model"] == rows["pdgd_neural"][1]["model"] == "neural"
    ours = experiment.ranker_settings(dataclasses.replace(experiment.Config(), comparisons="team_draft",
                                                          learning_rate_decay=1.0, learners=("dbgd", "mgd")))
    assert ours["dbgd"][1]["interleaving"] == ours["mgd"][1]["multileaving"] == "team_draft"
    assert ours["dbgd"][1]["outcome_samples"] == ours["mgd"][1]["outcome_samples"] == 0
    assert ours["mgd"][2]["learning_rate_decay"] == 1.0
    mixed = experiment.ranker_settings(dataclasses.replace(experiment.Config(), learners=("dbgd", "mgd"),
                                                           params=("mgd.multileaving=team_draft",)))
    assert mixed["dbgd"][1]["outcome_samples"] == 10_000 and mixed["mgd"][1]["outcome_samples"] == 0
    exact = experiment.ranker_settings(dataclasses.replace(experiment.Config(), outcome_samples=0))
    assert exact["dbgd"][1]["outcome_samples"] == exact["mgd"][1]["outcome_samples"] == 0


def test_only_a_run_under_the_papers_protocol_is_graded_against_its_cells():
    from experiments.analysis import oltr as analysis

    paper = {"dataset": "MQ2008", "num_impressions": 10_000, "folds": [1, 2, 3, 4, 5], "params": [],
             "protocol": dict(analysis.PAPER_PROTOCOL, test_queries_kept={})}
    assert analysis.paper_comparable(paper) == ""
    for change, reason in (({"folds": [1, 2]}, "folds [1, 2] (the paper averages all five)"),
                           ({"params": ["mgd.num_candidates=9"]}, "per-row settings mgd.num_candidates=9"),
                           ({"protocol": dict(paper["protocol"], comparisons="team_draft")},
                            "comparisons=team_draft (the paper's protocol: probabilistic)"),
                           ({"protocol": dict(paper["protocol"], outcome_samples=0)}, "outcome_samples=0"),
                           ({"protocol": {k: v for k, v in paper["protocol"].items() if k != "learning_rate_decay"}},
                            "learning_rate_decay=None (the paper's protocol: 0.9999977)")):
        assert reason in analysis.paper_comparable({**paper, **change}), change


def test_the_pdgd_verdict_needs_every_row_and_a_gap_beyond_the_noise():
    from experiments.analysis import oltr as analysis

    def summary(pdgd, other, ci, rows=tuple(analysis.LABELS), models=analysis.PAPER_CLICK_MODELS):
        cell = lambda v: {"final_offline": v, "final_offline_ci95": ci, "final_online": v, "final_online_ci95": ci}  # noqa: E731
        return {"learners": {r: {m: cell(pdgd if r == "pdgd" else other) for m in models} for r in rows},
                "click_models": list(models), "num_impressions": 10_000, "dataset": "MQ2008", "folds": [1],
                "protocol": {}}

    first = lambda s: analysis.verdicts(s)[0][1:]  # noqa: E731  (the offline claim)
    assert first(summary(0.70, 0.68, 0.005))[0] == "holds"
    assert first(summary(0.66, 0.68, 0.005))[0] == "does not hold"
    verdict, detail = first(summary(0.685, 0.68, 0.005))  # ahead by less than the combined CI
    assert verdict == "not testable here" and "within noise" in detail
    verdict, detail = first(summary(0.70, 0.68, 0.005, rows=("pdgd", "dbgd")))
    assert verdict == "not testable here" and "lacks dbgd_neural" in detail
