"""Inputs too small for an experiment are one-line errors naming the value and the fix, before any work."""

import pytest

from experiments.common import registry


def test_oltr_single_file_with_fewer_queries_than_folds(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("".join(f"{d % 2} qid:{q} 1:0.{d} 2:0.5\n" for q in (1, 2, 3) for d in range(4)))
    with pytest.raises(registry.ExperimentError, match=r"three.txt holds 3 queries; splitting one file into 5 folds "
                                                       r"needs at least 5"):
        registry.launch("oltr", tmp_path / "runs", [f"dataset={path}", "folds=1", "num_runs=1", "num_impressions=10"])
    assert not any((tmp_path / "runs" / "oltr").iterdir())
