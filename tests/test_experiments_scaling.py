"""Scaling out and resuming: sharded lanes give the single-device numbers, and a run killed with
SIGKILL and resumed gives the numbers of an uninterrupted run, bit for bit.

Both compare against one in-process ``rcs_regret`` run on one CPU device (the same config), and
run the other side as ``python launch.py`` subprocesses: ``XLA_FLAGS`` must be set before jax
starts, and SIGKILL needs a process of its own.
"""

import contextlib
import io
import json
import re
import signal
import subprocess
import sys

import jax
import numpy as np
import pytest

from experiments.common import registry
from jaxrank import bandits, lanes
from jaxrank.data import atomic, load_checkpoint
from tests.conftest import REPO, child_env, killed_after_checkpoints
from tests.test_bandits_core import ARXIV

# Long enough that RCS runs for about a second after its first checkpoint on a quiet 2-core
# machine, so the kill lands inside a simulation; 5 runs (lanes) on 4 devices need padding.
OVERRIDES = ["num_runs=5", "num_steps=100000", "chunk_size=2048"]


def _env(tmp_path, devices=None):
    return child_env(devices, JAXRANK_DATA=str(tmp_path / "no-data"))


def _launch_args(workdir):
    return [sys.executable, "launch.py", "--experiment=rcs_regret", f"--workdir={workdir}",
            *(f"--set={o}" for o in OVERRIDES)]


def _only_run_dir(workdir):
    (run_dir,) = (workdir / "rcs_regret").iterdir()
    return run_dir


def _assert_same_results(run_dir, reference):
    with np.load(run_dir / "arrays.npz") as got, np.load(reference / "arrays.npz") as want:
        assert sorted(got.files) == sorted(want.files)
        for name in want.files:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name, strict=True)
    assert (run_dir / "results.json").read_bytes() == (reference / "results.json").read_bytes()


def _assert_clean(run_dir):
    """Only finished files where results are read: no temporaries, no checkpoints left over."""
    names = sorted(p.name for p in run_dir.iterdir())
    assert not [n for n in names if n.startswith(".") or n.endswith(".tmp")], names
    assert registry.CHECKPOINTS not in names, names
    for name in ("config.json", "results.json", "arrays.npz", "table.md"):
        assert name in names, names


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted single-device run (in this process) and its printed output."""
    workdir = tmp_path_factory.mktemp("reference")
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("JAXRANK_DATA", str(workdir / "no-data"))
        run_dir = registry.launch("rcs_regret", workdir, OVERRIDES)
    return run_dir, out.getvalue()


def test_four_cpu_devices_give_the_single_device_results(tmp_path, reference):
    reference_dir, reference_out = reference
    assert jax.device_count() == 1 and "on 1 cpu device" in reference_out
    done = subprocess.run(_launch_args(tmp_path), cwd=REPO, env=_env(tmp_path, devices=4), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 4 cpu devices" in done.stdout  # 5 runs -> 5 lanes per simulation, padded to 8
    run_dir = _only_run_dir(tmp_path)
    _assert_same_results(run_dir, reference_dir)
    _assert_clean(run_dir)


@pytest.mark.slow
def test_a_run_killed_mid_way_resumes_bit_identical(tmp_path, reference):
    reference_dir, _ = reference
    child = subprocess.Popen(_launch_args(tmp_path), cwd=REPO, env=_env(tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    try:
        # A progress line is printed after the checkpoint of its chunk has been written.
        for line in child.stdout:
            if re.match(r"\[rcs K=6 x1\] [\d,]+/100,000 ", line):
                break
        else:
            pytest.fail(f"the run ended (rc={child.wait()}) before printing progress")
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        child.kill()
        child.stdout.close()
    run_dir = _only_run_dir(tmp_path)
    assert not (run_dir / "results.json").exists() and not (run_dir / "arrays.npz").exists()
    saved = sorted(registry.checkpoint_dir(run_dir).glob("rcs-*.npz"))
    assert len(saved) == 1
    header = load_checkpoint(saved[0])[1]
    assert 0 < header["done"] < 100_000 and header["next_call"] < header["num_calls"], header
    # As if the kill had also hit a write of the results: resuming must drop the dead writer's temporary.
    (run_dir / f".arrays.npz.pid{child.pid}@{atomic.HOST}.x1y2z3.tmp").write_bytes(b"partial")

    done = subprocess.run([sys.executable, "launch.py", f"--resume={run_dir}"], cwd=REPO, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"[rcs K=6 x1] resuming at {header['done']:,}/100,000" in done.stdout
    _assert_same_results(run_dir, reference_dir)
    _assert_clean(run_dir)


def test_sweep_continues_from_the_last_chunk_after_a_crash(tmp_path, monkeypatch):
    run = lambda **kw: bandits.run_sweep(jax.random.key(4), "rucb", ARXIV, num_runs=3, num_steps=300,  # noqa: E731
                                     chunk_size=8, hparams={"alpha": [0.51]}, **kw)
    want = run()
    with killed_after_checkpoints(monkeypatch, 2):
        run(checkpoint_dir=tmp_path)
    (path,) = tmp_path.iterdir()
    assert load_checkpoint(path)[1]["next_call"] == 2 < load_checkpoint(path)[1]["num_calls"]
    got = run(checkpoint_dir=tmp_path)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b, strict=True)
    assert load_checkpoint(path)[1]["next_call"] == load_checkpoint(path)[1]["num_calls"]
    # A finished checkpoint is read back without running anything; a damaged one is named.
    monkeypatch.setattr(lanes, "save_checkpoint", lambda *a: pytest.fail("ran again"))  # every chunk saves
    np.testing.assert_array_equal(run(checkpoint_dir=tmp_path).regret, want.regret, strict=True)
    path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=f"{path.name} is not a readable checkpoint"):
        run(checkpoint_dir=tmp_path)


def _interrupted_run(tmp_path, *overrides, checkpoint=True):
    """A run directory as a killed launch leaves it: config.json and maybe a checkpoint."""
    experiment = registry.get("rcs_regret")
    config = registry.make_config(experiment, [*OVERRIDES, *overrides])
    run_dir = tmp_path / "rcs_regret" / "20260101-000000"
    registry.checkpoint_dir(run_dir).mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(dict(vars(config))))
    if checkpoint:
        (registry.checkpoint_dir(run_dir) / "rcs-K6-0123456789abcdef.npz").write_bytes(b"")
    return run_dir


def test_resume_refuses_a_changed_config(tmp_path):
    run_dir = _interrupted_run(tmp_path)
    with pytest.raises(registry.ExperimentError, match=r"differs from the requested num_steps=200 \(saved: 100000\).*"
                                                       r"drop those --set/--seed flags"):
        registry.resume(run_dir, ["num_steps=200"])
    with pytest.raises(registry.ExperimentError, match="seed=3 \\(saved: 0\\)"):
        registry.resume(run_dir, seed=3)
    with pytest.raises(registry.ExperimentError, match="is a run of 'rcs_regret', not 'rcs_alpha'"):
        registry.resume(run_dir, name="rcs_alpha")


def test_resume_refuses_a_run_without_checkpoint_or_already_finished(tmp_path):
    with pytest.raises(registry.ExperimentError, match="no config.json there"):
        registry.resume(tmp_path)
    run_dir = _interrupted_run(tmp_path, checkpoint=False)
    with pytest.raises(registry.ExperimentError, match="no checkpoint in .*start it again with --experiment=rcs_"):
        registry.resume(run_dir)
    (run_dir / "results.json").write_text("{}")
    with pytest.raises(registry.ExperimentError, match="has finished"):
        registry.resume(run_dir)


def test_latest_run_dir_orders_same_second_runs_numerically(tmp_path):
    for name in ("20260101-000000", "20260101-000000-9", "20260101-000000-10", "20251231-235959-99"):
        (tmp_path / "rcs_regret" / name).mkdir(parents=True)
        (tmp_path / "rcs_regret" / name / "config.json").write_text("{}")
        (registry.checkpoint_dir(tmp_path / "rcs_regret" / name)).mkdir()
        (registry.checkpoint_dir(tmp_path / "rcs_regret" / name) / "rcs-0.npz").write_bytes(b"")
    assert registry.latest_run_dir(tmp_path, "rcs_regret").name == "20260101-000000-10"
    with pytest.raises(registry.ExperimentError, match="no run of rcs_alpha under"):
        registry.latest_run_dir(tmp_path, "rcs_alpha")


@pytest.mark.slow
def test_two_processes_with_jax_distributed_give_the_single_process_results(tmp_path, monkeypatch):
    """``launch.py --distributed``: 2 processes x 2 CPU devices share one run directory and mesh."""
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    overrides = ["--set=num_runs=3", "--set=num_steps=300"]
    children = [subprocess.Popen(
        [sys.executable, "launch.py", "--experiment=rcs_regret", f"--workdir={tmp_path / 'multi'}", *overrides,
         "--distributed", f"--coordinator_address=localhost:{port}", "--num_processes=2", f"--process_id={i}"],
        cwd=REPO, env=_env(tmp_path, devices=2), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)]
    outputs = [child.communicate(timeout=300)[0] for child in children]
    for child, out in zip(children, outputs):
        assert child.returncode == 0, out[-3000:]
        assert "on 4 cpu devices" in out
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "no-data"))
    single = registry.launch("rcs_regret", tmp_path / "one", ["num_runs=3", "num_steps=300"])
    (run_dir,) = (tmp_path / "multi" / "rcs_regret").iterdir()
    _assert_same_results(run_dir, single)
    _assert_clean(run_dir)
