"""Builds jaxrank's API reference from its docstrings with pdoc, and fails on a broken reference.

    python docs/build_api.py                 # HTML in docs/api/ (git-ignored); open docs/api/index.html
    python docs/build_api.py --out DIR       # elsewhere
    python docs/build_api.py --check         # only the checks, no HTML

Every public module of ``jaxrank`` gets a page (a module is public when no part of its dotted name
starts with ``_``; pdoc alone would follow each package's ``__all__`` and leave out the algorithm
modules). The build fails (exit status 1, one line per problem) when

* a public module does not import;
* a docstring names a jaxrank API path in backticks (```jaxrank.bandits.rcs.step``` or
  ````jaxrank.bandits.rcs.step````, with or without call parentheses) that does not resolve to a
  module or an attribute;
* pdoc reports a name in an ``__all__`` that does not resolve, or a module it cannot load.

``tests/test_api_docs.py`` runs the same checks and the HTML build in CI.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import traceback
import warnings
from pathlib import Path
from typing import Iterator, NamedTuple

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "jaxrank"
# A backtick span (one or more backticks, as in Markdown and reStructuredText) and, inside it, a
# dotted name rooted at the package.
_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_PATH = re.compile(rf"(?<![\w./]){PACKAGE}(?:\.[A-Za-z_]\w*)+")
# pdoc's warnings that mean a broken reference or a module that cannot be documented.
_PDOC_PROBLEMS = ("does not resolve", "Couldn't import", "Error importing", "Error loading", "Cannot find spec")


class Problem(NamedTuple):
    where: str  # the module or object whose docstring (or import) is broken
    what: str  # the unresolved name, or the error

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def public_modules() -> tuple[list[str], list[Problem]]:
    """Every public module of the package, imported; and the modules that failed to import."""
    names, problems = [PACKAGE], []
    root = _loaded(importlib.import_module(PACKAGE))
    for info in pkgutil.walk_packages(root.__path__, f"{PACKAGE}.", onerror=lambda name: None):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        try:
            _loaded(importlib.import_module(info.name))
        except Exception as e:  # noqa: BLE001 - any import error is a broken module
            problems.append(Problem(info.name, f"does not import: {type(e).__name__}: {e}"))
            continue
        names.append(info.name)
    return names, problems


def _loaded(module):
    """``module`` with every name of its ``__all__`` loaded: a package that loads names on first use
    (``jaxrank.data``) holds them only once asked, and pdoc reads the module's namespace."""
    for name in getattr(module, "__all__", ()):
        getattr(module, name)
    return module


def resolves(path: str) -> bool:
    """Whether ``a.b.c`` is a module, or an attribute chain of the longest importable module prefix."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        except Exception:  # noqa: BLE001 - a broken module: reported by public_modules
            return False
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def references(text: str) -> Iterator[str]:
    """The package paths named in backticks in ``text``."""
    for span in _SPAN.finditer(text or ""):
        yield from _PATH.findall(span.group(2))


def _docstrings(modules: list[str]) -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of every public module, class, function and variable pdoc documents,
    each once (an inherited member is read where it is defined; objects from other packages are skipped)."""
    import pdoc.doc

    seen = set()

    def walk(doc):
        key = doc.taken_from if hasattr(doc, "taken_from") else (doc.modulename, doc.qualname)
        if key in seen or not str(key[0]).startswith(PACKAGE):
            return
        seen.add(key)
        yield f"{key[0]}.{key[1]}".rstrip("."), doc.docstring
        for member in getattr(doc, "own_members", ()):
            if isinstance(member, pdoc.doc.Module) or (member.name.startswith("_") and member.name != "__init__"):
                continue
            yield from walk(member)

    for name in modules:
        yield from walk(pdoc.doc.Module.from_name(name))


def check(modules: list[str] | None = None) -> list[Problem]:
    """Import errors of public modules and unresolved backticked package paths in their docstrings."""
    problems = []
    if modules is None:
        modules, problems = public_modules()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for where, text in _docstrings(modules):
            for path in dict.fromkeys(references(text)):
                if not resolves(path):
                    problems.append(Problem(where, f"`{path}` does not resolve"))
    problems += pdoc_problems(caught)
    return problems


def pdoc_problems(caught) -> list[Problem]:
    return [Problem("pdoc", str(w.message).splitlines()[0]) for w in caught
            if any(p in str(w.message) for p in _PDOC_PROBLEMS)]


def build(out: Path, modules: list[str], *, search: bool = True) -> list[Problem]:
    """The HTML reference of ``modules`` in ``out`` (``search``: with pdoc's search index and source
    views); pdoc's warnings about unresolved names or modules."""
    import pdoc
    import pdoc.render

    pdoc.render.configure(docformat="restructuredtext", search=search, show_source=search)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules, output_directory=Path(out))
    return pdoc_problems(caught)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "api", help="output folder (default docs/api)")
    parser.add_argument("--check", action="store_true", help="only check the docstrings; write no HTML")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))  # the checkout's jaxrank, also when it is not installed
    try:
        modules, problems = public_modules()
    except Exception:  # noqa: BLE001 - the package itself does not import
        print(traceback.format_exc(), file=sys.stderr)
        return 1
    problems += check(modules)
    if not args.check:
        problems += build(args.out, modules)
    for problem in dict.fromkeys(problems):
        print(f"broken reference: {problem}", file=sys.stderr)
    if problems:
        return 1
    if not args.check:
        print(f"API reference of {len(modules)} modules in {args.out}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
