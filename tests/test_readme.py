"""The README's examples run as written, and its two set-up lines stay exactly as they are.

Every ```python block of README.md runs in a fresh interpreter from the repository root. Data: the
shared real data when it is there (``$JAXRANK_TEST_DATA`` or ``../shared/data``), else a folder whose
``MQ2008`` is the 44 KB sample in ``tests/data/MQ2008-mini`` (so the examples run on a fresh clone).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# The two set-up lines: install and run the flagship experiment; install and run the tests.
SETUP_LINES = (
    'python3 -m venv .venv && . .venv/bin/activate && pip install -q -e ".[plots]" && python launch.py --experiment=rcs_regret',
    'python3 -m venv .venv && . .venv/bin/activate && pip install -q -e ".[test]" && python -m pytest -q -n auto --dist loadfile',
)
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def blocks(language: str) -> list[tuple[str, str]]:
    """``(name, code)`` of every fenced block in ``language``; the name says where it is: its number,
    the README section it is in and its first line."""
    text = README.read_text()
    out = []
    for match in _BLOCK.finditer(text):
        if match.group(1) != language:
            continue
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
        first = next((line for line in match.group(2).splitlines() if line.strip()), "")
        out.append((f"README {language} block {len(out) + 1} (section '{headings[-1] if headings else ''}', "
                    f"starting `{first.strip()[:60]}`)", match.group(2)))
    return out


def _data_dir(tmp_path_factory) -> Path:
    shared = Path(os.environ.get("JAXRANK_TEST_DATA") or REPO.parent / "shared" / "data")
    if (shared / "MQ2008" / "Fold1").is_dir():
        return shared
    tiny = tmp_path_factory.mktemp("readme-data")
    (tiny / "MQ2008").symlink_to(REPO / "tests" / "data" / "MQ2008-mini", target_is_directory=True)
    return tiny


def test_readme_has_exactly_the_two_setup_lines():
    setup = [code for _, code in blocks("bash") if code.lstrip().startswith("python3 -m venv")]
    assert setup == [line + "\n" for line in SETUP_LINES], (
        "README.md must hold the two set-up lines, each alone in a ```bash block, byte for byte:\n"
        + "\n".join(SETUP_LINES))


def test_readme_has_python_examples():
    assert len(blocks("python")) >= 4


@pytest.mark.parametrize("name, code", blocks("python"), ids=[f"python-{i + 1}" for i in range(len(blocks("python")))])
def test_readme_example_runs(name, code, tmp_path_factory, tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAXRANK_DATA=str(_data_dir(tmp_path_factory)),
               JAXRANK_CACHE=str(tmp_path / "cache"), JAXRANK_COMPILATION_CACHE="",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (f"{name} fails as written (exit status {done.returncode}):\n{code}\n"
                                  f"--- stderr (end) ---\n{done.stderr[-3000:]}")
