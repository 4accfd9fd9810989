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

    def fake_launch(name, workdir, overrides, seed=None):
        launched.append((name, list(overrides)))
        if name == "rcs_regret":
            raise RuntimeError("boom")
        child = Path(workdir) / name / "stamp"
        child.mkdir(parents=True)
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
