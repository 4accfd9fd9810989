"""Run directories: same seed, same bytes (timings in their own file), and ``--resume=latest``
picks the newest run that can be resumed."""

import dataclasses
import json

import pytest

from experiments.common import registry
from tests.conftest import launch_experiment


@dataclasses.dataclass(frozen=True)
class _Config:
    seed: int = 0


@pytest.fixture
def timed_experiment():
    """A registered experiment whose summary carries a ``timings`` dict."""
    name = "_timed_toy"

    def run(config, run_dir):
        return {"value": config.seed + 1, "timings": {"seconds": 1.25, "per_step": [0.5, 0.75]}}

    registry.register(name, _Config)(run)
    yield name
    del registry._REGISTRY[name]


def test_timings_go_to_their_own_file(tmp_path, timed_experiment):
    run_dir, results = launch_experiment(tmp_path, timed_experiment)
    assert results == {"value": 1}
    assert json.loads((run_dir / "timings.json").read_text()) == {"seconds": 1.25, "per_step": [0.5, 0.75]}


def test_same_seed_gives_byte_identical_results_and_table(tmp_path, no_data):
    """preference_matrix measured its run time and speed into results.json."""
    overrides = ("num_arms=4", "num_comparisons=300", "synthetic_queries=8", "synthetic_features=5", "chunk_size=256")
    first, _ = launch_experiment(tmp_path / "a", "preference_matrix", *overrides)
    second, _ = launch_experiment(tmp_path / "b", "preference_matrix", *overrides)
    for name in ("results.json", "table.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    assert set(json.loads((first / "timings.json").read_text())) == {"seconds", "comparisons_per_second"}


def _run(workdir, name: str, stamp: str, *, checkpoint: bool = False, finished: bool = False):
    run_dir = workdir / name / stamp
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text("{}")
    if checkpoint:
        registry.checkpoint_dir(run_dir).mkdir()
        (registry.checkpoint_dir(run_dir) / "part.npz").write_bytes(b"")
    if finished:
        (run_dir / "results.json").write_text("{}")
    return run_dir


def test_resume_latest_picks_the_newest_resumable_run(tmp_path):
    resumable = _run(tmp_path, "oltr", "20250101-120000-2", checkpoint=True)
    _run(tmp_path, "oltr", "20250101-120000-1", checkpoint=True)
    _run(tmp_path, "oltr", "20250101-130000")  # killed before its first checkpoint
    _run(tmp_path, "oltr", "20250101-140000", checkpoint=True, finished=True)
    assert registry.latest_run_dir(tmp_path, "oltr") == resumable


def test_resume_latest_says_when_no_run_is_resumable(tmp_path):
    _run(tmp_path, "oltr", "20250101-130000")
    _run(tmp_path, "oltr", "20250101-140000", finished=True)
    with pytest.raises(registry.ExperimentError, match=r"no resumable run of oltr under .*: of its 2 runs 1 finished "
                                                       r"and 1 stopped before their first checkpoint"):
        registry.latest_run_dir(tmp_path, "oltr")
