"""The API reference builds from the docstrings (``python docs/build_api.py``) with no broken reference:
every public module imports, and every backticked ``jaxrank.…`` path in a docstring resolves."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytest.importorskip("pdoc", reason="pdoc builds the API reference: pip install -e '.[test]'")


def _builder():
    spec = importlib.util.spec_from_file_location("build_api", REPO / "docs" / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_api = _builder()


def test_reference_finds_broken_paths():
    assert list(build_api.references("see ``jaxrank.bandits.rcs.step(key, state, env)`` and `jaxrank.types`, "
                                     "not jaxrank.lanes or ``x.jaxrank.y`` or ``jaxrank/types.py``")) == [
        "jaxrank.bandits.rcs.step", "jaxrank.types"]
    assert build_api.resolves("jaxrank.types.RaggedQueries")
    assert build_api.resolves("jaxrank.metrics")
    assert not build_api.resolves("jaxrank.metrics.no_such_metric")
    assert not build_api.resolves("jaxrank.no_such_module.thing")


def test_api_reference_builds_without_broken_references(tmp_path):
    modules, problems = build_api.public_modules()
    problems += build_api.check(modules)
    problems += build_api.build(tmp_path, modules, search=False)  # the search index only adds time
    assert not problems, "broken references in the API reference (python docs/build_api.py):\n" + "\n".join(
        map(str, dict.fromkeys(problems)))
    for name in modules:
        assert (tmp_path / f"{name.replace('.', '/')}.html").is_file(), name
    assert (tmp_path / "index.html").is_file()
