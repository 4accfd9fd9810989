"""A run stopped by ``budget.NonFiniteError`` keeps no checkpoint: ``--resume=latest`` cannot repeat it."""

import dataclasses

import numpy as np
import pytest

from experiments.common import budget, registry

NAME = "toy_nonfinite"
_INTERRUPT = {"after_first": False}  # stops a run (as a kill would) after its first checkpoint


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    learning_rate: float = 0.1
    seed: int = 0


def _toy_run(config: ToyConfig, run_dir):
    """Two stretches, ``w <- w * (1 + learning_rate)^10`` then ``^100``, in f32, each checkpointed;
    ``learning_rate=10`` overflows ``w`` to inf in the second stretch only."""
    folder = registry.checkpoint_dir(run_dir)
    saved = folder / "w-0.npz"
    start = 1 if saved.exists() else 0
    w = np.load(saved)["w"] if start else np.ones(3, np.float32)
    for stretch in range(start, 2):
        w = (w * np.float32(1 + config.learning_rate) ** (10, 100)[stretch]).astype(np.float32)
        budget.check_finite_result("learning_rate", config.learning_rate, "the weights", w)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / f"w-{stretch}.npz", w=w)
        if _INTERRUPT["after_first"]:
            raise KeyboardInterrupt("killed after the first checkpoint")
    return {"w": w.tolist()}


@pytest.fixture
def toy():
    registry.register(NAME, ToyConfig)(_toy_run)
    yield NAME
    registry._REGISTRY.pop(NAME)


def test_resumed_run_that_turns_non_finite_keeps_no_checkpoint(tmp_path, toy, monkeypatch):
    monkeypatch.setitem(_INTERRUPT, "after_first", True)
    with np.errstate(over="ignore"), pytest.raises(KeyboardInterrupt, match="killed after the first checkpoint"):
        registry.launch(toy, tmp_path, ["learning_rate=10"])
    monkeypatch.setitem(_INTERRUPT, "after_first", False)
    run_dir = registry.latest_run_dir(tmp_path, toy)  # resumable: it holds the first stretch's checkpoint
    with np.errstate(over="ignore"), pytest.raises(
            registry.ExperimentError, match=r"^`learning_rate=10\.0`: the weights became non-finite \(3 of 3 "
                                            r"values\); lower learning_rate \(no checkpoint of this run is kept\)\.$"):
        registry.resume(run_dir)
    assert not registry.checkpoint_dir(run_dir).exists()
    with pytest.raises(registry.ExperimentError, match=r"no resumable run of toy_nonfinite .* 1 stopped before"):
        registry.latest_run_dir(tmp_path, toy)


def test_fresh_run_that_turns_non_finite_leaves_no_run_directory(tmp_path, toy):
    with np.errstate(over="ignore"), pytest.raises(registry.ExperimentError, match=r"^`learning_rate=10\.0`: "):
        registry.launch(toy, tmp_path, ["learning_rate=10"])
    assert not any((tmp_path / toy).iterdir())


def test_finite_run_finishes(tmp_path, toy):
    run_dir = registry.launch(toy, tmp_path, ["learning_rate=0.001"])
    assert (run_dir / "results.json").is_file() and not registry.checkpoint_dir(run_dir).exists()
