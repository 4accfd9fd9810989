"""Test setup: CPU only, the ``slow`` marker, and where the shared real data lives."""

import contextlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The tests' shapes are tiny, so compiling dominates their time: XLA:CPU's older per-op emitters
# compile about twice as fast as its fusion emitters, and LLVM's backend optimisation level 0 cuts
# the rest by a third. Results of one program stay bit-identical run to run; comparisons between
# differently compiled programs (chunked vs whole, vmapped vs single) already allow float rounding.
TEST_XLA_FLAGS = "--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0"
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TEST_XLA_FLAGS}".strip()

import pytest  # noqa: E402
import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DATA = Path(__file__).resolve().parent / "data"
# ArXiv_6_rankers.txt (the 6-ranker arXiv matrix; arm 0 is the Condorcet winner), inlined so the
# fast tests run without the shared data folder.
ARXIV_ROWS = (
    (0.50, 0.55, 0.55, 0.54, 0.61, 0.61),
    (0.45, 0.50, 0.55, 0.55, 0.58, 0.60),
    (0.45, 0.45, 0.50, 0.54, 0.51, 0.56),
    (0.46, 0.45, 0.46, 0.50, 0.54, 0.50),
    (0.39, 0.42, 0.49, 0.46, 0.50, 0.51),
    (0.39, 0.40, 0.44, 0.50, 0.49, 0.50),
)


def assert_same_mean(ours, theirs, label: str = "") -> None:
    """The two samples' means agree within the 95% CI of their difference (regret parity)."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    se = math.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
    gap = abs(ours.mean() - theirs.mean())
    print(f"{label}: ours {ours.mean():.1f}, reference {theirs.mean():.1f}, |gap| {gap:.1f} <= {1.96 * se:.1f}")
    assert gap <= 1.96 * se, (label, ours.mean(), theirs.mean(), se)


def pytest_configure(config):
    """Compiled programs go to a persistent cache for the session: the lane runner keeps only its
    last few programs, jitted closures die with their test, and child processes start cold, so
    tests that compile the same program again load it from disk instead."""
    import jax

    config._jaxrank_xla_cache = tempfile.mkdtemp(prefix="jaxrank-test-xla-")
    jax.config.update("jax_compilation_cache_dir", config._jaxrank_xla_cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def child_env(devices=None, **extra) -> dict:
    """The environment of a test's child process: CPU, the tests' XLA flags, ``devices`` forced host
    devices (default: the platform's own count) and the session's compilation cache, plus ``extra``."""
    import jax

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    flags = TEST_XLA_FLAGS if devices is None else f"{TEST_XLA_FLAGS} --xla_force_host_platform_device_count={devices}"
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=flags)
    if jax.config.jax_compilation_cache_dir:
        env.update(JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir,
                   JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    env.update(extra)
    return env


def pytest_unconfigure(config):
    folder = getattr(config, "_jaxrank_xla_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _shared_data_dir() -> Path:
    env = os.environ.get("JAXRANK_TEST_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real LETOR/MSLR data folder (``$JAXRANK_TEST_DATA`` or ``<repo>/../shared/data``)."""
    path = _shared_data_dir()
    if not (path / "MQ2008").is_dir():
        pytest.skip(f"real data not found at {path} (set JAXRANK_TEST_DATA to the shared data folder)")
    return path


@pytest.fixture(scope="session")
def mslr10(shared_data):
    """The RCS paper's K = 10 subset of MSLR-Perfect (feature ids sorted as strings, first 10): ``pref [10, 10]``."""
    from jaxrank.data.preference import load_preference_matrix
    from jaxrank.envs import select_rankers

    pref, _ = select_rankers(load_preference_matrix(shared_data / "preference_matrices" / "MSLR-Perfect.txt"), 10)
    return pref


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    """``JAXRANK_DATA`` points at an empty folder, so experiments use their embedded/synthetic data."""
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "no-data"))


def launch_experiment(workdir, name, *overrides):
    """Runs a registered experiment; returns ``(run_dir, results.json as a dict)``."""
    from experiments.common import registry

    run_dir = registry.launch(name, workdir, list(overrides))
    return run_dir, json.loads((run_dir / "results.json").read_text())


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Parsed-file caches go to a per-session temporary folder, never the user's cache."""
    monkeypatch.setenv("JAXRANK_CACHE", str(tmp_path_factory.getbasetemp() / "jaxrank-cache"))
    monkeypatch.setenv("JAXRANK_COMPILATION_CACHE", str(tmp_path_factory.getbasetemp() / "jaxrank-xla"))


@contextlib.contextmanager
def killed_after_checkpoints(monkeypatch, count: int):
    """The block runs as a run killed right after ``jaxrank.lanes`` wrote its ``count``-th checkpoint
    (the block must end in that interruption); yields the ``(file name, header)`` of each write."""
    from jaxrank import lanes

    real_save, written = lanes.save_checkpoint, []

    def save_then_die(path, leaves, header):
        real_save(path, leaves, header)
        written.append((Path(path).name, header))
        if len(written) == count:
            raise KeyboardInterrupt(f"killed after checkpoint {count}")

    monkeypatch.setattr(lanes, "save_checkpoint", save_then_die)
    try:
        with pytest.raises(KeyboardInterrupt, match=f"killed after checkpoint {count}"):
            yield written
    finally:
        monkeypatch.setattr(lanes, "save_checkpoint", real_save)


def assert_same_run(full_dir, run_dir) -> None:
    """``run_dir`` (killed and resumed) holds the arrays, ``results.json`` and ``table.md`` of the
    uninterrupted ``full_dir``, byte for byte."""
    with np.load(Path(full_dir) / "arrays.npz") as full, np.load(Path(run_dir) / "arrays.npz") as resumed:
        assert full.files == resumed.files
        for name in full.files:
            np.testing.assert_array_equal(resumed[name], full[name], err_msg=name, strict=True)
    for name in ("results.json", "table.md"):
        assert (Path(run_dir) / name).read_bytes() == (Path(full_dir) / name).read_bytes(), name
