"""Tests for ``jaxrank.data.locations``: JAXRANK_DATA / JAXRANK_CACHE and ``resolve``."""

from pathlib import Path

import pytest

from jaxrank.data import cache_dir, data_dir, resolve

TEST_DATA = Path(__file__).resolve().parent / "data"


def test_env_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "d"))
    monkeypatch.setenv("JAXRANK_CACHE", str(tmp_path / "c"))
    assert data_dir() == tmp_path / "d"
    assert cache_dir() == tmp_path / "c"


def test_defaults_under_user_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("JAXRANK_DATA", raising=False)
    monkeypatch.delenv("JAXRANK_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert data_dir() == tmp_path / "jaxrank" / "data"
    assert cache_dir() == tmp_path / "jaxrank" / "parsed"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert data_dir() == tmp_path / "home" / ".cache" / "jaxrank" / "data"


def test_resolve_path_and_name(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXRANK_DATA", str(TEST_DATA))
    assert resolve(TEST_DATA / "MQ2008-mini") == TEST_DATA / "MQ2008-mini"
    assert resolve("MQ2008-mini") == TEST_DATA / "MQ2008-mini"
    assert resolve("MQ2008-mini/Fold1/vali.txt") == TEST_DATA / "MQ2008-mini" / "Fold1" / "vali.txt"


def test_resolve_shared_name(shared_data, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(shared_data))
    assert resolve("MQ2008") == shared_data / "MQ2008"
    assert resolve("preference_matrices/MSLR-Perfect.txt").is_file()


def test_resolve_missing_lists_contents_and_env(monkeypatch, tmp_path):
    (tmp_path / "SetA").mkdir()
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        resolve("SetB")
    message = str(info.value)
    assert "JAXRANK_DATA" in message and "SetB" in message and "SetA" in message
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="JAXRANK_DATA"):
        resolve("SetB")
