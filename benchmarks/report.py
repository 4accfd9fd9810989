"""BENCHMARKS.md from the benchmarks' ``--json`` files, and the one JSON shape they write.

    python benchmarks/bandits.py --json runs/bench/bandits.json      # ... one file per benchmark
    python benchmarks/report.py runs/bench [--out BENCHMARKS.md]

Every benchmark script writes its figures with ``write_json`` (below), so every file has the same
top level:

    {"benchmark": "bandits",                      # the script's name
     "command": "python benchmarks/bandits.py --json ...",
     "date": "2026-01-01T12:00:00+00:00",
     "machine": {"cpu": ..., "cores": ..., "memory_gib": ..., "os": ..., "python": ..., "jax": ...,
                 "backend": ..., "devices": ..., "device_kind": ...},
     "load_average": {"start": ..., "end": ...},  # 1-minute load: other jobs on the same cores
     "rows": [{...}, ...],                        # the benchmark's table, one flat dict a row
     "reference": [{"what": ..., "ratio": ...}],  # speed against the reference implementation(s)
     "figures": {...}}                            # everything else, in the script's own terms

and the report renders each file the same way: the command, the machine, the table (at most
``MAX_COLUMNS`` columns: a wider one is split, or turned on its side when it has few rows), the
reference ratios, the other figures (nested ones as nested lists and tables), then the
benchmark's explanation from ``benchmarks/notes.md`` (the section headed with the script's name).
Paths are written portably (``$JAXRANK_DATA/...``, ``runs/bench/NAME.json``), and the load
average is kept in the JSON only. A benchmark without a file in the folder is listed as not run.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import platform
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NOTES = HERE / "notes.md"
# Scripts in benchmarks/ that are not benchmarks.
NOT_BENCHMARKS = {"report", "datasets"}


# ---------------------------------------------------------------------------------------------
# Writing (called by the benchmark scripts)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine() -> dict:
    """The machine a benchmark ran on: CPU model and cores, memory, Python, jax, backend and devices."""
    import jax

    devices = jax.devices()
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "jax": jax.__version__, "backend": jax.default_backend(), "devices": len(devices),
            "device_kind": devices[0].device_kind}


def write_json(path, script: str, *, rows=(), reference=(), figures=None, load_start=None) -> dict:
    """Writes a benchmark's figures in the shape ``report.py`` reads (see the module docstring).

    ``script``: the benchmark's ``__file__``; ``rows``: its table (flat dicts); ``reference``:
    ``[{"what": ..., "ratio": ...}]``, jaxrank's speed over a reference implementation's (> 1:
    jaxrank faster); ``figures``: any other JSON-able figures; ``load_start``: the 1-minute load
    average when the benchmark started (the end is read now)."""
    out = {"benchmark": Path(script).stem,
           "command": " ".join(["python", os.path.relpath(os.path.abspath(sys.argv[0]), REPO), *sys.argv[1:]]),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": machine(),
           "load_average": {"start": load_start, "end": os.getloadavg()[0]},
           "rows": [dict(r) for r in rows],
           "reference": [dict(r) for r in reference],
           "figures": dict(figures or {})}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=1, default=_plain) + "\n")
    return out


def _plain(value):
    """NumPy scalars and arrays, tuples and paths as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# ---------------------------------------------------------------------------------------------
# Reading and rendering


def benchmark_scripts() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if p.stem not in NOT_BENCHMARKS and not p.stem.startswith("_"))


def notes() -> dict[str, str]:
    """``benchmarks/notes.md`` split at its ``## name`` headings: name -> Markdown text."""
    out, name, lines = {}, None, []
    for line in (NOTES.read_text().splitlines() if NOTES.exists() else []):
        heading = re.match(r"^## (\S+)\s*$", line)
        if heading:
            if name:
                out[name] = "\n".join(lines).strip()
            name, lines = heading.group(1), []
        elif name:
            lines.append(line)
    if name:
        out[name] = "\n".join(lines).strip()
    return out


def fmt(value) -> str:
    """A figure as table text: thousands separators, 3 significant digits for small floats."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if value == 0 or abs(value) >= 0.01:
            return f"{value:.3g}" if abs(value) < 100 else f"{value:.1f}"
        return f"{value:.2e}"
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k} {fmt(v)}" for k, v in value.items())
    return _DICT_REPR.sub(_dict_text, str(value)).replace("|", "\\|").replace("\n", " ")


_DICT_REPR = re.compile(r"\{[^{}]*\}")


def _dict_text(match) -> str:
    """A dict written by ``str()`` inside a text figure, as ``key value, key value``."""
    try:
        value = ast.literal_eval(match.group(0))
    except (ValueError, SyntaxError):
        return match.group(0)
    if not isinstance(value, dict):
        return match.group(0)
    return "(" + ", ".join(f"{_label(str(k))} {fmt(v)}" for k, v in value.items()) + ")"


def _label(key: str) -> str:
    return key.replace("_", " ")


def _numeric(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


MAX_COLUMNS = 8  # the widest table the report prints


def _markdown_table(columns: list[str], rows: list[list[str]], numeric: list[bool]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def text_table(columns: list[str], rows: list[list[str]], numeric: list[bool]) -> list[str]:
    """A table of formatted cells, at most ``MAX_COLUMNS`` wide: a wider one with at most four rows
    is turned on its side (one row per column), a longer one is split into tables that each repeat
    the first (naming) column."""
    if len(columns) <= MAX_COLUMNS:
        return _markdown_table(columns, rows, numeric)
    if len(rows) <= 4:
        names = [row[0] or f"row {i + 1}" for i, row in enumerate(rows)]
        side = [[columns[c]] + [row[c] for row in rows] for c in range(1, len(columns))]
        return _markdown_table([columns[0]] + names, side, [False] + [all(numeric[1:])] * len(rows))
    # The naming columns (the leading text ones, at most two) start every part.
    keys = next((k for k in range(min(2, len(columns) - 1)) if numeric[k]), min(2, len(columns) - 1))
    out, width = [], MAX_COLUMNS - keys
    for start in range(keys, len(columns), width):
        part = list(range(keys)) + list(range(start, min(start + width, len(columns))))
        out += _markdown_table([columns[c] for c in part], [[row[c] for c in part] for row in rows],
                               [numeric[c] for c in part]) + [""]
    return out[:-1]


def table(rows: list[dict]) -> list[str]:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    numeric = [all(_numeric(r.get(c)) or r.get(c) is None for r in rows) and any(r.get(c) is not None for r in rows)
               for c in columns]
    return text_table([_label(c) for c in columns], [[fmt(row.get(c)) for c in columns] for row in rows], numeric)


def figure_lines(name: str, value, indent: str = "") -> list[str]:
    """One figure as a bullet: a dict as nested bullets, a list of dicts as a table under it."""
    if isinstance(value, dict) and value:
        lines = [f"{indent}- {_label(name)}:"]
        for key, item in value.items():
            lines += figure_lines(str(key), item, indent + "  ")
        return lines
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, dict) for v in value):
        return [f"{indent}- {_label(name)}:", ""] + [indent + "  " + line for line in table(list(value))] + [""]
    return [f"{indent}- {_label(name)}: {fmt(value)}"]


_DATA_PATH = re.compile(r"(?<![\w$])/(?:[^\s/`]+/)*data(?=/|\b)")
_ABSOLUTE = re.compile(r"(?<![\w$./])/(?:[\w.+-]+/)+([\w.+-]+)")


def portable(text: str) -> str:
    """``text`` without the machine's absolute paths: a data folder as ``$JAXRANK_DATA``, a ``--json``
    file as ``runs/bench/NAME.json``, a scratch folder under ``/tmp`` as ``$TMPDIR/NAME``, any
    other absolute path by its last part."""
    text = _DATA_PATH.sub("$JAXRANK_DATA", text)
    text = re.sub(r"--json \S+?([\w.-]+\.json)", r"--json runs/bench/\1", text)
    text = re.sub(r"(?<![\w$./])/tmp/([\w.+-]+)", r"$TMPDIR/\1", text)
    return _ABSOLUTE.sub(r"\1", text)


def machine_line(m: dict) -> str:
    memory = f", {m['memory_gib']:g} GiB" if m.get("memory_gib") else ""
    return (f"{m.get('cpu')}, {m.get('cores')} cores{memory}, {m.get('os')}, Python {m.get('python')}, "
            f"jax {m.get('jax')}, backend {m.get('backend')} ({m.get('devices')} × {m.get('device_kind')})")


def section(result: dict, text: str | None) -> list[str]:
    name = result["benchmark"]
    lines = [f"## `{name}`", "",
             "| command | machine | date |", "|---|---|---|",
             f"| `{portable(result['command'])}` | {machine_line(result['machine'])} | {result['date'][:10]} |", ""]
    if result.get("rows"):
        lines += table(result["rows"]) + [""]
    if result.get("reference"):
        lines += ["Against the reference implementations (jaxrank's speed over theirs; > 1: jaxrank is faster):", ""]
        lines += [f"- {r['what']}: **{fmt(r['ratio'])}×**" for r in result["reference"]] + [""]
    figures = result.get("figures") or {}
    if figures:
        lines += ["Other figures:", ""]
        for key, value in figures.items():
            lines += figure_lines(key, value)
        lines += [""]
    if text:
        lines += [text, ""]
    return [portable(line) for line in lines]


def render(folder: Path) -> str:
    results = {}
    for path in sorted(Path(folder).glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "benchmark" in data and "machine" in data:
            results[data["benchmark"]] = data
    explained = notes()
    machines = {machine_line(r["machine"]) for r in results.values()}
    lines = ["# Benchmarks", "",
             "<!-- Generated by `python benchmarks/report.py FOLDER` from the benchmarks' --json files; "
             "edit benchmarks/notes.md or the scripts, not this file. -->", "",
             "Every figure below comes from one run of each benchmark, its `--json` file read by "
             "`benchmarks/report.py`, on "
             + ("this machine: " + next(iter(machines)) if len(machines) == 1 else
                "the machine given in each section") + ". "
             "Times are wall-clock seconds after compile unless a column says otherwise. Run a benchmark and "
             "regenerate this file:", "",
             "```bash",
             'pip install -e ".[bench]"                      # the reference packages (scikit-learn, ranx, duelpy, skglm)',
             "python benchmarks/bandits.py --json runs/bench/bandits.json   # ... each script takes --json PATH",
             "python benchmarks/report.py runs/bench           # writes BENCHMARKS.md",
             "```", ""]
    if explained.get("intro"):
        lines += [explained["intro"], ""]
    missing = [n for n in benchmark_scripts() if n not in results]
    for name in [n for n in benchmark_scripts() if n in results] + sorted(set(results) - set(benchmark_scripts())):
        lines += section(results[name], explained.get(name))
    if missing:
        lines += ["## Not in this report", "",
                  "No `--json` file was read for these benchmarks, so they have no figures here:", ""]
        lines += [f"- `benchmarks/{n}.py`" + (f": {_first_sentence(explained[n])}" if n in explained else "")
                  for n in missing]
        lines += [""]
    return "\n".join(lines).rstrip() + "\n"


def _first_sentence(text: str) -> str:
    first = text.split("\n\n", 1)[0].replace("\n", " ")
    return first.split(". ", 1)[0].rstrip(".") + "."


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the folder of the benchmarks' --json files")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args(argv)
    text = render(args.folder)
    args.out.write_text(text)
    read = sorted(p.name for p in args.folder.glob("*.json"))
    print(f"wrote {args.out} from the run in {args.folder} ({', '.join(read) or 'no JSON files'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
