"""Tests for ``jaxrank.data.atomic``: round trips, and a failing write leaves the target untouched."""

import json
import os
import stat

import numpy as np
import pytest

from jaxrank.data import atomic, write_atomic, write_json, write_npz, write_text


class Boom(Exception):
    pass


def _files(folder):
    return sorted(os.listdir(folder))


def test_write_json_round_trip(tmp_path):
    obj = {"b": [1, 2.5, None], "a": {"z": "text", "y": True}}
    path = write_json(tmp_path / "x.json", obj)
    assert path == tmp_path / "x.json"
    assert json.loads(path.read_text()) == obj
    text = path.read_text()
    assert text.endswith("\n") and text.index('"a"') < text.index('"b"')  # sorted keys
    # equal content -> equal bytes
    write_json(tmp_path / "y.json", {"a": {"y": True, "z": "text"}, "b": [1, 2.5, None]})
    assert (tmp_path / "y.json").read_bytes() == path.read_bytes()
    assert _files(tmp_path) == ["x.json", "y.json"]


def test_write_json_replaces_and_creates_parents(tmp_path):
    path = tmp_path / "deep" / "er" / "x.json"
    write_json(path, [1])
    write_json(path, [2, 3])
    assert json.loads(path.read_text()) == [2, 3]
    assert _files(path.parent) == ["x.json"]


def test_write_npz_round_trip(tmp_path):
    arrays = {
        "features": np.arange(24, dtype=np.float64).reshape(2, 3, 4),
        "labels": np.array([0.0, 2.0, 1.0], np.float32),
        "qids": np.array([5, 5, 9], np.int64),
        "docids": np.array(["GX1", "GX22", ""]),
        "empty": np.zeros(0, str),
    }
    path = write_npz(tmp_path / "a.npz", **arrays)
    with np.load(path, allow_pickle=False) as z:
        assert sorted(z.files) == sorted(arrays)
        for name, value in arrays.items():
            assert z[name].dtype == value.dtype and z[name].shape == value.shape
            np.testing.assert_array_equal(z[name], value)
    assert _files(tmp_path) == ["a.npz"]


def test_write_text_round_trip(tmp_path):
    write_text(tmp_path / "t.txt", "héllo\nworld")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "héllo\nworld"


@pytest.mark.parametrize("mode", ["w", "wb"])
def test_failing_write_fn_keeps_old_content(tmp_path, mode):
    target = tmp_path / "keep.bin"
    target.write_bytes(b"old content")

    def write_fn(f):
        f.write("partial" if mode == "w" else b"partial")
        raise Boom("disk on fire")

    with pytest.raises(Boom, match="disk on fire"):
        write_atomic(target, write_fn, mode=mode)
    assert target.read_bytes() == b"old content"
    assert _files(tmp_path) == ["keep.bin"]


def test_failing_write_fn_creates_nothing(tmp_path):
    target = tmp_path / "sub" / "new.json"

    def write_fn(f):
        raise Boom("no space left")

    with pytest.raises(Boom, match="no space left"):
        write_atomic(target, write_fn, mode="w")
    assert not target.exists()
    assert _files(target.parent) == []


def test_failing_json_and_npz_leave_nothing(tmp_path):
    target = tmp_path / "x.json"
    write_json(target, {"ok": 1})
    with pytest.raises(TypeError, match="not JSON serializable"):
        write_json(target, {"bad": object()})  # not JSON serialisable
    assert json.loads(target.read_text()) == {"ok": 1}
    npz = tmp_path / "y.npz"
    write_npz(npz, a=np.arange(3))
    before = npz.read_bytes()
    with pytest.raises(Boom, match="cannot convert"):
        write_npz(npz, a=np.arange(3), b=_Unsavable())
    assert npz.read_bytes() == before
    assert _files(tmp_path) == ["x.json", "y.npz"]


def test_keyboard_interrupt_also_cleans_up(tmp_path):
    target = tmp_path / "k.txt"

    def write_fn(f):
        f.write("x")
        raise KeyboardInterrupt("stopped by the user")

    with pytest.raises(KeyboardInterrupt, match="stopped by the user"):
        write_atomic(target, write_fn, mode="w")
    assert _files(tmp_path) == []


class _Unsavable:
    """np.savez cannot save this without pickling: np.asanyarray gives an object array."""

    def __array__(self, dtype=None, copy=None):
        raise Boom("cannot convert")


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077])
def test_files_and_folders_get_the_umask_permissions(tmp_path, umask):
    """Not ``tempfile``'s private 0600/0700: a group-shared folder stays readable by the group; a
    setgid folder's bit is kept on the folders made in it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o2777)
    old = os.umask(umask)
    try:
        atomic.write_text(shared / "index.json", "{}")
        folder = atomic.make_shared_temporary_folder(shared, "entry")
    finally:
        os.umask(old)
    assert stat.S_IMODE((shared / "index.json").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(folder.stat().st_mode) == (0o777 & ~umask) | stat.S_ISGID
    assert atomic.current_umask() == old
