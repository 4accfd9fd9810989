"""``paper_report``: runs the chosen experiments and gathers their tables and figures; a failing
experiment is reported and does not stop the others."""

import json

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
    assert (stamp / "table.md").read_text().strip() in report
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
