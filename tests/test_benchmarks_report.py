"""BENCHMARKS.md's generator: portable commands, no load averages, tables at most MAX_COLUMNS wide,
nested figures as nested lists and tables."""

import json
import sys

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import report  # noqa: E402


def _result(rows, figures):
    return {"benchmark": "toy", "command": "python benchmarks/toy.py --data /home/me/shared/data/MQ2008 "
                                           "--json /home/me/figs/run7/toy.json",
            "date": "2026-01-02T03:04:05+00:00",
            "machine": {"cpu": "CPU", "cores": 2, "memory_gib": 8.0, "os": "Linux", "python": "3.11", "jax": "0.10",
                        "backend": "cpu", "devices": 1, "device_kind": "cpu"},
            "load_average": {"start": 7.5, "end": 9.25}, "rows": rows, "reference": [], "figures": figures}


def test_a_section_is_portable_and_narrow(tmp_path):
    wide = [{"name": f"r{i}", **{f"c{j}": float(i * j) for j in range(11)}} for i in range(6)]
    figures = {"settings": {"pdgd": {"learning_rate": 0.1}}, "note": "tuned {'alpha': 0.25, 'slots': 24}",
               "phases": [{"phase": "load", "seconds": 1.5}, {"phase": "fit", "seconds": 2.0}],
               "scratch": "/tmp/toy-data"}
    (tmp_path / "toy.json").write_text(json.dumps(_result(wide, figures)))
    text = report.render(tmp_path)
    assert "--data $JAXRANK_DATA/MQ2008 --json runs/bench/toy.json" in text
    assert "/home" not in text and "load average" not in text and "7.5" not in text
    assert "$TMPDIR/toy-data" in text
    widths = [line.count("|") - 1 for line in text.splitlines() if line.lstrip().startswith("|")]
    assert max(widths) <= report.MAX_COLUMNS
    # the 12 columns are split into parts that each start with the naming column
    assert text.count("| name | c0 |") == 1 and text.count("| name | c7 |") == 1
    assert "- settings:\n  - pdgd:\n    - learning rate: 0.1" in text
    assert "tuned (alpha 0.25, slots 24)" in text
    assert "  | phase | seconds |" in text and "  | fit | 2 |" in text


def test_a_wide_table_of_few_rows_is_turned_on_its_side():
    lines = report.table([{"clicks": 10, **{f"s{j}": j for j in range(10)}}, {"clicks": 20, **{f"s{j}": j for j in range(10)}}])
    assert lines[0] == "| clicks | 10 | 20 |" and lines[2] == "| s0 | 0 | 0 |" and len(lines) == 12
