"""The lane runner: the sharded, chunked, resumable run equals the pure single-lane program, and
every study gives the same bytes on 1, 2 and 4 devices and on 2 ``jax.distributed`` processes."""

import os
import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import lanes
from tests import lanes_child
from tests.conftest import REPO, killed_after_checkpoints


def _toy_inputs():
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(7), i))(jnp.arange(lanes_child.TOY_LANES))
    return keys, np.arange(lanes_child.TOY_LANES, dtype=np.float32), np.arange(6, dtype=np.uint32)


def test_run_lanes_equals_the_pure_lane_program_and_a_numpy_walk():
    keys, start, chunks = _toy_inputs()
    got = lanes_child.toy()
    pure = jax.vmap(lambda k, s: lanes.lane(lanes_child.TOY, k, {}, jnp.float32(0.5), s, chunks))(keys, start)
    np.testing.assert_array_equal(got, np.asarray(pure))
    # The walk x <- 0.5 x + u_c written out with the same uniforms, in float32 NumPy.
    for n in range(lanes_child.TOY_LANES):
        x = np.full(3, start[n], np.float32)
        for c in chunks:
            x = x * np.float32(0.5) + np.asarray(jax.random.uniform(jax.random.fold_in(keys[n], c), (3,)))
        np.testing.assert_allclose(got[n], x, rtol=1e-6)


def test_hyperparameters_reach_each_lane_and_compile_once():
    traces = []

    def init(key, hparams, data, lane_data):
        traces.append(1)
        return hparams["scale"] * jnp.ones(2)

    study = lanes.Study(init, lambda c, chunk, d, l: c + chunk, lambda c, d, l: c)
    keys = jax.random.split(jax.random.key(0), 3)
    got = lanes.run_lanes(study, keys, {"scale": [1.0, 2.0, 4.0]}, chunks=np.ones(2, np.float32))
    np.testing.assert_array_equal(got, [[3, 3], [4, 4], [6, 6]])
    assert len(traces) == 1  # three settings, one trace


def test_an_interrupted_run_resumes_bit_identical(tmp_path, monkeypatch):
    full = lanes_child.toy()
    checkpoint = lanes.Checkpoint(tmp_path, "toy", {"study": "toy"})
    with killed_after_checkpoints(monkeypatch, 2) as written:
        lanes_child.toy(checkpoint=checkpoint)
    (path,) = tmp_path.glob("toy-*.npz")
    resumed = lanes_child.toy(checkpoint=checkpoint, label="toy")
    np.testing.assert_array_equal(resumed, full)
    assert [header["next_call"] for _, header in written] == [1, 2]


def test_a_checkpoint_of_other_inputs_is_refused(tmp_path):
    checkpoint = lanes.Checkpoint(tmp_path, "toy", {"study": "toy"})
    lanes_child.toy(checkpoint=checkpoint)
    (path,) = tmp_path.glob("toy-*.npz")
    other = lanes.Checkpoint(tmp_path, "toy", {"study": "other"})
    lanes_child.toy(checkpoint=other)  # other inputs: another file, not this one
    assert len(list(tmp_path.glob("toy-*.npz"))) == 2
    path.rename(tmp_path / "keep.npz")
    (second,) = tmp_path.glob("toy-*.npz")
    (tmp_path / "keep.npz").replace(second)  # the first run's file under the second run's name
    with pytest.raises(ValueError, match="written for a different run"):
        lanes_child.toy(checkpoint=other)


@pytest.mark.parametrize("bad, match", [
    (dict(chunks_per_call=4), "multiple of chunks_per_call=4"),
    (dict(progress=np.arange(3)), r"progress must be \[C=6\]"),
])
def test_bad_arguments_name_the_value(bad, match):
    with pytest.raises(ValueError, match=match):
        lanes_child.toy(**bad)


def _child_env(devices):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_every_study_gives_the_same_bytes_on_1_2_4_devices_and_2_processes(tmp_path):
    single = tmp_path / "single.npz"
    done = subprocess.run([sys.executable, "-m", "tests.lanes_child", str(single)], cwd=REPO, env=_child_env(4),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    port = _free_port()
    multi = tmp_path / "multi.npz"
    children = [subprocess.Popen([sys.executable, "-m", "tests.lanes_child", str(multi), f"localhost:{port}", "2", str(i)],
                                 cwd=REPO, env=_child_env(2), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for i in range(2)]
    logs = [c.communicate(timeout=600)[0] for c in children]
    assert all(c.returncode == 0 for c in children), "\n".join(log[-3000:] for log in logs)
    with np.load(single) as one, np.load(multi) as two:
        names = sorted({k.split("/", 1)[1] for k in one.files})
        assert names and set(lanes_child.STUDIES) == {n.split("/")[0] for n in names}
        for name in names:
            for other in (one[f"2/{name}"], one[f"4/{name}"], two[f"all/{name}"]):
                np.testing.assert_array_equal(other, one[f"1/{name}"], err_msg=name, strict=True)
