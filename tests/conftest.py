"""Test setup: CPU only, the ``slow`` marker, and where the shared real data lives."""

import os
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DATA = Path(__file__).resolve().parent / "data"


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


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Parsed-file caches go to a per-session temporary folder, never the user's cache."""
    monkeypatch.setenv("JAXRANK_CACHE", str(tmp_path_factory.getbasetemp() / "jaxrank-cache"))
