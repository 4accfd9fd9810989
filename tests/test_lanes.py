"""The lane runner: the sharded, chunked, resumable run equals the pure single-lane program, and
every study gives the same bytes on 1, 2 and 4 devices and on 2 ``jax.distributed`` processes."""

import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import lanes
from tests import lanes_child
from tests.conftest import REPO, child_env, killed_after_checkpoints


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


class _Traces:  # hashed by identity, so a study holding it stays equal as it fills
    def __init__(self):
        self.scales = []


def _scaled_init(static, key, hparams, data, lane_data):
    scale, traces = static
    traces.scales.append(scale)
    return jnp.full(2, scale, jnp.float32)


def _times_chunk(static, carry, chunk, data, lane_data):
    return carry * chunk


def _carry(static, carry, data, lane_data):
    return carry


def test_equal_bound_studies_share_jits_programs_and_static_values_tell_them_apart():
    traces = _Traces()
    keys = jax.random.split(jax.random.key(0), 2)
    run = lambda scale: lanes.run_lanes(lanes.bound_study((scale, traces), _scaled_init, _times_chunk, _carry),  # noqa: E731
                                        keys, chunks=np.full(3, 2, np.float32))
    np.testing.assert_array_equal(run(1.0), [[8, 8], [8, 8]])
    np.testing.assert_array_equal(run(1.0), [[8, 8], [8, 8]])  # a new but equal study: no new trace
    np.testing.assert_array_equal(run(3.0), [[24, 24], [24, 24]])  # another static value: its own program
    assert traces.scales == [1.0, 3.0]
    with pytest.raises(ValueError, match="study must be hashable"):
        lanes.run_lanes(lanes.bound_study((1.0, []), _scaled_init, _times_chunk, _carry), keys, chunks=np.ones(1))
    assert lanes.bind(_carry, (1, "a")) == lanes.bind(_carry, (1, "a")) != lanes.bind(_carry, (2, "a"))


@pytest.mark.parametrize("chunks_per_call", [4, 5, 6, 9])
def test_any_chunk_count_runs_each_chunk_once(chunks_per_call):
    """6 chunks in calls of 4 or 5 (the last call's extra chunks are skipped) or of 6 or more (one
    call): the same bytes as one chunk per call."""
    np.testing.assert_array_equal(lanes_child.toy(chunks_per_call=chunks_per_call), lanes_child.toy(chunks_per_call=1))


def _count_init(static, key, hparams, data, target):
    return jnp.zeros((), jnp.int32)


def _count_to_target(static, carry, chunk, data, target):
    return jnp.where(carry < target, carry + chunk, carry)  # a finished lane stays as it is


def _reached(static, carry, data, target):
    return carry >= target


def test_a_study_stops_once_every_lane_is_finished(capsys):
    """Lanes counting to 3 and 5 in a budget of 100 chunks: the run stops after the call in which the
    last lane finishes, with the same result as the whole budget."""
    keys = jax.random.split(jax.random.key(0), 2)
    target = np.array([3, 5], np.int32)
    kwargs = dict(lane_data=target, chunks=np.ones(100, np.int32), label="count")
    whole = lanes.run_lanes(lanes.bound_study(None, _count_init, _count_to_target, _carry), keys, **kwargs)
    early = lanes.bound_study(None, _count_init, _count_to_target, _carry, _reached)
    capsys.readouterr()
    for per_call in (1, 2):
        np.testing.assert_array_equal(lanes.run_lanes(early, keys, chunks_per_call=per_call, **kwargs), whole)
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == {1: 5, 2: 3}[per_call], lines  # calls until both lanes reach their targets
        assert lines[-1].startswith(f"[count] {5 if per_call == 1 else 6}/100")
        assert lines[-1].endswith("2/2 lanes finished")
    np.testing.assert_array_equal(whole, target)


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
    (dict(chunks_per_call=0), "chunks_per_call must be >= 1; got 0"),
    (dict(progress=np.arange(3)), r"progress must be \[C=6\]"),
])
def test_bad_arguments_name_the_value(bad, match):
    with pytest.raises(ValueError, match=match):
        lanes_child.toy(**bad)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_every_study_gives_the_same_bytes_on_1_2_4_devices_and_2_processes(tmp_path):
    """Five children at once (1, 2 and 4 host devices; two ``jax.distributed`` processes of one
    device each), so compiling them shares both cores; each saves every study's results."""
    port = _free_port()
    commands = {f"{n}": ([str(tmp_path / f"{n}.npz")], child_env(n)) for n in (1, 2, 4)}
    commands.update({f"process{i}": ([str(tmp_path / "processes.npz"), f"localhost:{port}", "2", str(i)], child_env(1))
                     for i in range(2)})
    children = {name: subprocess.Popen([sys.executable, "-m", "tests.lanes_child", *args], cwd=REPO, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for name, (args, env) in commands.items()}
    logs = {name: child.communicate(timeout=900)[0] for name, child in children.items()}
    failed = {name: logs[name][-3000:] for name, child in children.items() if child.returncode != 0}
    assert not failed, failed
    with np.load(tmp_path / "1.npz") as one:
        names = sorted(one.files)
        assert names and set(lanes_child.STUDIES) == {n.split("/")[0] for n in names}
        for other in ("2", "4", "processes"):
            with np.load(tmp_path / f"{other}.npz") as results:
                assert sorted(results.files) == names, other
                for name in names:
                    np.testing.assert_array_equal(results[name], one[name], err_msg=f"{other}: {name}", strict=True)
