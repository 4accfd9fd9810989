"""``paper_report``: runs the chosen experiments and gathers their tables and figures; a failing
experiment is reported and does not stop the others."""

import json
from pathlib import Path

import pytest

from experiments import paper_report
from experiments.common import registry


def test_report_gathers_tables_and_figures(tmp_path, no_data, monkeypatch):
    monkeypatch.setattr(paper_report, "SECTIONS", (
        ("A paper", (paper_report.Part("condorcet_probability", "claim one", ("num_subsets=50",)),
                     paper_report.Part("rcs_regret", "claim two", ("num_runs=2", "num_steps=-5")))),
    ))
    run_dir = registry.launch("paper_report", tmp_path, ["mode=quick"])
    results = json.loads((run_dir / "results.json").read_text())
    report = (run_dir / "report.md").read_text()
    good, bad = results["experiments"]["condorcet_probability"], results["experiments"]["rcs_regret"]
    assert good["status"] == "ok" and bad["status"] == "failed" and "num_steps" in bad["error"]
    child = run_dir / "runs" / "condorcet_probability"
    (stamp,) = list(child.iterdir())
    table, verdicts = (stamp / "table.md").read_text().split("#### Verdicts")
    assert table.strip() in report and "#### Verdicts" not in report
    first = verdicts.strip().splitlines()[2]  # a row: in the report's summary and in the part's list, not a third time
    assert report.count(first) == 2
    figures = sorted(p.name for p in stamp.glob("*.png"))
    assert figures and all(f"runs/condorcet_probability/{stamp.name}/{name}" in report for name in figures)
    assert "claim one" in report and "**Failed**" in report and "failed: rcs_regret" in report


def test_rejects_bad_mode_and_names(tmp_path, no_data):
    with pytest.raises(ValueError, match="mode"):
        registry.launch("paper_report", tmp_path, ["mode=fast"])
    with pytest.raises(ValueError, match="unknown experiments"):
        registry.launch("paper_report", tmp_path, ["only=rcs_regrets"])


def test_every_registered_experiment_is_in_the_report():
    listed = {p.experiment for _, parts in paper_report.SECTIONS for p in parts}
    assert set(registry.names()) - {"paper_report"} <= listed


def test_report_carries_each_parts_verdicts(tmp_path, no_data, monkeypatch):
    """A real run: the embedded 6-ranker matrix cannot test Fig. 1's MSLR claims; a failed part gets
    one line."""
    monkeypatch.setattr(paper_report, "SECTIONS", (
        ("A paper", (paper_report.Part("condorcet_probability", "claim one", ("num_subsets=50",)),
                     paper_report.Part("rcs_regret", "claim two", ("num_runs=2", "num_steps=-5")))),
    ))
    run_dir = registry.launch("paper_report", tmp_path, ["mode=quick"])
    results = json.loads((run_dir / "results.json").read_text())
    good = results["experiments"]["condorcet_probability"]["verdicts"]
    assert [v[1] for v in good] == ["not testable here"] * 3
    assert all("ArXiv_6_rankers" in v[2] for v in good)
    (bad,) = results["experiments"]["rcs_regret"]["verdicts"]
    assert bad[1] == "not testable here" and bad[2].startswith("the run failed") and "num_steps" in bad[2]
    assert results["verdict_counts"] == {"holds": 0, "does not hold": 0, "not testable here": 4}
    report = (run_dir / "report.md").read_text()
    assert report.index("## Verdicts") < report.index("## A paper")
    row = "| `condorcet_probability` | P(Condorcet winner) > 0.91 at every subset size (Fig. 1) | *not testable here* |"
    assert row in report


def test_collects_verdicts_from_mock_parts(tmp_path, monkeypatch):
    """Mock parts: a verdict function reads the summary with its timings; a module without one, a
    verdict function that raises and a run that fails each get one line; full mode uses the parts'
    full settings; the parts' own Verdicts sections are not repeated."""
    launched = []

    def fake_launch(name, workdir, overrides, seed=None, on_start=None):
        launched.append((name, list(overrides)))
        if name == "rcs_regret":
            raise RuntimeError("boom")
        child = Path(workdir) / name / "stamp"
        child.mkdir(parents=True)
        on_start(child)
        (child / "results.json").write_text(json.dumps({"value": 0.25}))
        (child / "timings.json").write_text(json.dumps({"seconds": 2.0}))
        (child / "table.md").write_text(f"| table of {name} |\n\n#### Verdicts\n\n| stale row |\n")
        return child

    def claims(summary):
        return [("claim A", "holds", f"value {summary['value']}, {summary['timings']['seconds']} s"),
                ("claim B", "does not hold", "gap 0.1")]

    def broken(summary):
        raise KeyError("missing")

    functions = {"feature_rankers": claims, "condorcet_probability": None, "preference_matrix": broken}
    monkeypatch.setattr(paper_report, "verdict_function", functions.get)
    monkeypatch.setattr(paper_report.registry, "launch", fake_launch)
    parts = tuple(paper_report.Part(name, f"claim of {name}", ("quick=1",), ("full=1",)) for name in
                  ("feature_rankers", "condorcet_probability", "preference_matrix", "rcs_regret"))
    monkeypatch.setattr(paper_report, "SECTIONS", (("A paper", parts),))
    out = paper_report.run(paper_report.Config(mode="full"), tmp_path)
    assert launched == [(p.experiment, ["full=1"]) for p in parts]
    verdicts = {name: o["verdicts"] for name, o in out["experiments"].items()}
    assert verdicts["feature_rankers"] == [["claim A", "holds", "value 0.25, 2.0 s"],
                                           ["claim B", "does not hold", "gap 0.1"]]
    assert verdicts["condorcet_probability"] == [["every claim of this part", "not testable here",
                                                  "no verdict function"]]
    assert verdicts["preference_matrix"][0][1:] == ["not testable here",
                                                    "the verdict function failed: KeyError: 'missing'"]
    assert verdicts["rcs_regret"][0][1:] == ["not testable here", "the run failed: RuntimeError: boom"]
    assert out["verdict_counts"] == {"holds": 1, "does not hold": 1, "not testable here": 3}
    report = (tmp_path / "report.md").read_text()
    top = report[: report.index("## A paper")]
    assert "1 holds, 1 does not hold, 3 not testable here." in top
    assert "| `feature_rankers` | claim B | **does not hold** | gap 0.1 |" in top
    assert "| `condorcet_probability` | every claim of this part | *not testable here* | no verdict function |" in top
    assert "| table of feature_rankers |" in report and "stale row" not in report
    assert report.count("**Verdicts**") == 4


def test_verdict_function_lookup():
    from experiments.analysis import rcs_regret

    assert paper_report.verdict_function("rcs_regret") is rcs_regret.verdicts
    assert paper_report.verdict_function("no_such_experiment") is None
    listed = {p.experiment for _, parts in paper_report.SECTIONS for p in parts}
    missing = {name for name in listed - {"oltr", "large_scale"} if paper_report.verdict_function(name) is None}
    assert not missing  # every part but the two whose verdicts come separately has its own


def test_a_killed_report_resumes_keeping_its_finished_parts(tmp_path, no_data, monkeypatch):
    """Killed in its second part, the report resumes: the finished part is kept (same run, same
    seconds), the part killed before any checkpoint runs again, and the report's total adds both."""
    monkeypatch.setattr(paper_report, "SECTIONS", (
        ("A paper", (paper_report.Part("condorcet_probability", "claim one", ("num_subsets=50",)),
                     paper_report.Part("rcs_regret", "claim two", ("num_runs=2", "num_steps=300")))),
    ))
    launch = registry.launch

    def killed(name, *args, on_start=None, **kwargs):
        if name == "rcs_regret":
            on_start(Path(args[0]) / "rcs_regret" / "never-checkpointed")
            raise KeyboardInterrupt("killed in rcs_regret")
        return launch(name, *args, on_start=on_start, **kwargs)

    monkeypatch.setattr(registry, "launch", killed)
    with pytest.raises(KeyboardInterrupt, match="killed in rcs_regret"):
        launch("paper_report", tmp_path, ["mode=quick"])
    (report_dir,) = (tmp_path / "paper_report").iterdir()
    before = paper_report._load_progress(report_dir)
    assert before["condorcet_probability"]["done"] and not before["rcs_regret"]["done"]
    monkeypatch.setattr(registry, "launch", launch)
    assert registry.latest_run_dir(tmp_path, "paper_report") == report_dir
    registry.resume(report_dir)
    results = json.loads((report_dir / "results.json").read_text())
    timings = json.loads((report_dir / "timings.json").read_text())
    assert results["experiments"]["condorcet_probability"]["run_dir"] == before["condorcet_probability"]["run_dir"]
    assert timings["experiments"]["condorcet_probability"] == round(before["condorcet_probability"]["seconds"], 1)
    assert results["experiments"]["rcs_regret"]["status"] == "ok"
    assert "never-checkpointed" not in results["experiments"]["rcs_regret"]["run_dir"]
    assert timings["total_s"] >= sum(timings["experiments"].values()) - 0.1
    assert not registry.checkpoint_dir(report_dir).exists()  # a finished report keeps no checkpoint


def test_an_interrupted_part_continues_from_its_checkpoints(tmp_path, monkeypatch):
    """A part with a checkpoint is resumed in its own run directory; its seconds add the earlier
    process's time up to that checkpoint."""
    child = tmp_path / "runs" / "rcs_regret" / "stamp"
    registry.checkpoint_dir(child).mkdir(parents=True)
    (registry.checkpoint_dir(child) / "sweep.npz").write_bytes(b"")
    started = (registry.checkpoint_dir(child) / "sweep.npz").stat().st_mtime - 40.0
    progress = {"rcs_regret": {"run_dir": str(child), "seconds": 5.0, "started": started, "done": False}}
    resumed = []
    monkeypatch.setattr(registry, "resume", lambda run_dir: resumed.append(run_dir) or Path(run_dir))
    run_dir, seconds = paper_report._run_part("rcs_regret", tmp_path, [], None, progress)
    assert resumed == [str(child)] and run_dir == str(child)
    assert 45.0 <= seconds < 50.0 and progress["rcs_regret"]["done"]
    assert paper_report._load_progress(tmp_path) == progress


def test_an_experiment_run_twice_is_two_parts_each_claim_under_its_protocol(tmp_path, monkeypatch):
    """The counterfactual claims run under the protocol of the paper that makes them, as two parts of
    one experiment, each with its own run, progress entry and verdicts."""
    cf = [p for _, parts in paper_report.SECTIONS for p in parts if p.experiment == "counterfactual_ltr"]
    assert len({p.key for p in cf}) == 2
    by_paper = {("Oosterhuis" if p.key.endswith("oosterhuis2023") else "Joachims"): p for p in cf}
    for mode in ("quick", "full"):
        assert "protocol=oosterhuis2023" in getattr(by_paper["Oosterhuis"], mode)
        assert not any(o.startswith("protocol=") for o in getattr(by_paper["Joachims"], mode))
    launched = []

    def fake_launch(name, workdir, overrides, seed=None, on_start=None):
        child = Path(workdir) / name / f"run{len(launched)}"
        launched.append((name, list(overrides)))
        child.mkdir(parents=True)
        on_start(child)
        (child / "results.json").write_text(json.dumps({"value": len(launched)}))
        (child / "timings.json").write_text(json.dumps({"seconds": 1.0}))
        return child

    monkeypatch.setattr(paper_report, "verdict_function",
                        lambda name: lambda summary: [("claim", "holds", f"run {summary['value']}")])
    monkeypatch.setattr(paper_report.registry, "launch", fake_launch)
    parts = (paper_report.Part("feature_rankers", "first", ("a=1",), name="first"),
             paper_report.Part("feature_rankers", "second", ("a=2",), name="second"))
    monkeypatch.setattr(paper_report, "SECTIONS", (("A paper", parts),))
    out = paper_report.run(paper_report.Config(mode="quick", only=("second",)), tmp_path)
    assert launched == [("feature_rankers", ["a=2"])] and list(out["experiments"]) == ["second"]
    out = paper_report.run(paper_report.Config(mode="quick"), tmp_path / "both")
    assert [o["verdicts"] for o in out["experiments"].values()] == [[["claim", "holds", "run 2"]],
                                                                     [["claim", "holds", "run 3"]]]
    assert "### `first`" in (tmp_path / "both" / "report.md").read_text()
