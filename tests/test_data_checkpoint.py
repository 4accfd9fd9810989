"""Checkpoint files: round trip, a clear error for anything else, stale temporaries removed."""

import os
import subprocess
import sys

import numpy as np
import pytest

from jaxrank.data import atomic, load_checkpoint, remove_stale_temporaries, save_checkpoint


def test_checkpoint_round_trips_arrays_in_order_and_the_header(tmp_path):
    leaves = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([[1, 2]], np.uint32), np.array(True)]
    leaves += [np.zeros(i) for i in range(11)]  # more than 10 leaves: the order must not be "leaf_10" < "leaf_2"
    path = save_checkpoint(tmp_path / "c.npz", leaves, {"next_call": 3, "inputs": {"a": [1.5]}})
    got, header = load_checkpoint(path)
    assert header == {"next_call": 3, "inputs": {"a": [1.5]}}
    assert len(got) == len(leaves)
    for a, b in zip(got, leaves):
        np.testing.assert_array_equal(a, b, strict=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz"]


def test_a_file_that_is_not_a_checkpoint_is_named_in_the_error(tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="bad.npz is not a readable checkpoint.*delete it"):
        load_checkpoint(tmp_path / "bad.npz")
    np.savez(tmp_path / "plain.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="plain.npz is not a readable checkpoint"):
        load_checkpoint(tmp_path / "plain.npz")


def test_remove_stale_temporaries_only_touches_dead_temporaries(tmp_path):
    """Old untagged temporaries and those of an exited process go; a live writer's and other files stay."""
    dead_pid = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                                  capture_output=True, text=True).stdout)
    dead = f".c.npz.pid{dead_pid}@{atomic.HOST}.x.tmp"
    live = f"{atomic.temporary_prefix('c.npz')}y.tmp"
    for name in (".arrays.npz.abc.tmp", dead, live, "arrays.npz", "notes.tmp"):
        (tmp_path / name).write_text("x")
    os.utime(tmp_path / ".arrays.npz.abc.tmp", (1, 1))
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == sorted([".arrays.npz.abc.tmp", dead])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live, "arrays.npz", "notes.tmp"])
    assert remove_stale_temporaries(tmp_path / "missing") == []
