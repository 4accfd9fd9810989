"""Reading click logs: time and peak memory of ``jaxrank.data.read_click_log`` against the log's size.

    python benchmarks/click_logs.py [--sessions 1000000 10000000] [--formats wscd pyclick tsv]
                                    [--out /tmp/jaxrank-logs] [--keep] [--json PATH [--append]]
                                    [--no-id-reference]

Each (format, size) is a seeded log of ``benchmarks/datasets.py``'s ``CLICK_LOG_SHAPE`` (the same
pages in every format), written under ``--out`` (never commit it) and read in a fresh process, so the
peak resident memory (``VmHWM`` of ``/proc/self/status``, which, unlike ``ru_maxrss``, does not
carry the spawning process's memory across ``exec``) is the reader's alone. The table gives the file
size, the read's wall and CPU seconds (and CPU seconds per MB: linear time keeps it flat across sizes,
and in the second half of the file as in the whole), the result's bytes (the ``SessionLog`` plus the
``Vocabulary``), the peak and its ratio to the result, and the vocabulary's sizes; "start" is the
process's resident memory before the read (Python and NumPy: the reader imports no JAX), so
``(peak - start) / result`` is what the read itself holds at its peak; the CPU seconds are also split
into user and system (the kernel's: page faults). The JSON keeps each read's trace (``traces``: MB
read and CPU seconds at each twentieth of the file). The reference: after each WSCD read of up to
``ID_REFERENCE_MAX`` pages, the id assignment alone is timed on the read's own key streams, the
vocabulary's ``IdTable`` against pandas' C hash table (``Int64Factorizer``, the bench extra), which
must give the same ids. A file is deleted after its read unless ``--keep``; ``--append`` adds the
rows to those already in ``--json``, so large logs can be run one at a time.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import datasets  # noqa: E402  (benchmarks/datasets.py)

_CHILD = r"""
import json, os, resource, sys, time
from jaxrank.data import click_log, read_click_log
path, fmt = sys.argv[1], sys.argv[2]
size, trace, chunks = os.path.getsize(path), [], click_log._chunks

def traced(*args):  # (bytes read, CPU seconds) at every twentieth of the file: the marginal rate
    done, mark = 0, size / 20
    for chunk, nbytes in chunks(*args):
        yield chunk, nbytes
        done += nbytes
        if done >= mark or done == size:
            trace.append((done, time.process_time() - cpu))
            mark += size / 20

click_log._chunks = traced

def id_tables(log, vocab, num_chunks):
    # The read's id assignment alone, on its key streams (each position's document token and its
    # (query id, document id) pair key, in file order, cut into the read's number of chunks): CPU ns
    # a key of a fresh IdTable (each chunk's distinct keys staged, settled in batches as the reader
    # does) and of pandas' C hash table (Int64Factorizer: the same first-appearance ids, checked equal).
    import numpy as np
    from pandas._libs.hashtable import Int64Factorizer
    from jaxrank.data.vocabulary import IdTable, unique_first_inverse
    streams = {"documents": vocab.docs.astype(np.int64)[log.doc[log.mask]],
               "pairs": ((log.query.astype(np.int64)[:, None] << 32) | log.doc)[log.mask]}
    out = {}
    for name, keys in streams.items():
        cuts = np.linspace(0, keys.size, num_chunks + 1).astype(np.int64)
        table, got = IdTable(np.zeros(0, np.int64)), np.empty(keys.size, np.int64)
        start, settled = time.process_time(), 0
        for a, b in zip(cuts, cuts[1:]):
            unique, first, inverse = unique_first_inverse(keys[a:b])
            got[a:b] = table.stage(unique, first + a)[inverse]
            if table.settle_due or b == keys.size:
                got[settled:b] = table.settle()[got[settled:b]]
                settled = b
        ours = time.process_time() - start
        factorizer, want = Int64Factorizer(1024), np.empty(keys.size, np.int64)
        start = time.process_time()
        for a, b in zip(cuts, cuts[1:]):
            want[a:b] = factorizer.factorize(keys[a:b])
        theirs = time.process_time() - start
        assert np.array_equal(got, want), name
        out[name] = {"keys": int(keys.size), "distinct": len(table), "ns per key": ours / keys.size * 1e9,
                     "pandas ns per key": theirs / keys.size * 1e9}
    return out

def peak_rss():
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

base = peak_rss()
wall, cpu, usage = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
log, vocab, info = read_click_log(path, format=fmt)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
after = resource.getrusage(resource.RUSAGE_SELF)
peak = peak_rss()
half = next((t for t in trace if size / 2 <= t[0] < size), (0, 0.0))  # a one-chunk file: the whole read
log_bytes = sum(getattr(log, f).nbytes for f in ("query", "pair", "doc", "clicks", "mask"))
ids = id_tables(log, vocab, -(-size // click_log.CHUNK_BYTES)) if sys.argv[3] == "1" else None
print(json.dumps({"seconds": wall, "cpu_seconds": cpu, "user_seconds": after.ru_utime - usage.ru_utime,
                  "system_seconds": after.ru_stime - usage.ru_stime, "peak_rss": peak, "id_tables": ids,
                  "rss_before": base, "log_bytes": log_bytes, "vocab_bytes": vocab.nbytes, "sessions": info.num_sessions,
                  "queries": vocab.num_queries, "docs": vocab.num_docs, "pairs": vocab.num_pairs,
                  "second_half_cpu_per_mb": (trace[-1][1] - half[1]) / ((trace[-1][0] - half[0]) / 1e6), "trace": trace}))
"""


# The id tables are timed against pandas' on the WSCD log (every format holds the same pages) of up to
# ID_REFERENCE_MAX pages: at 10^8 the key streams alone would take 8 GB each.
ID_REFERENCE_MAX = 10_000_000


def measure(fmt: str, sessions: int, out: Path, keep: bool, id_reference: bool) -> tuple[dict, list, dict]:
    """The row of one read, its trace (``[MB read, CPU seconds]`` at each twentieth of the file) and
    its id tables' cost against pandas' (``{}`` when not measured)."""
    path = datasets.write_click_log(fmt, sessions, out, log=None)
    size = path.stat().st_size
    env = dict(os.environ, PYTHONPATH=str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ids = int(id_reference and fmt == "wscd" and sessions <= ID_REFERENCE_MAX)
    result = subprocess.run([sys.executable, "-c", _CHILD, str(path), fmt, str(ids)], capture_output=True, text=True,
                            env=env, cwd=HERE.parent)
    if result.returncode:
        raise RuntimeError(f"reading {path} failed: {result.stderr.strip().splitlines()[-1]}")
    got = json.loads(result.stdout.strip().splitlines()[-1])
    if not keep:
        path.unlink()
        path.with_suffix(".json").unlink()
    assert got["sessions"] == sessions, (got["sessions"], sessions)
    entries = got["queries"] + got["docs"] + got["pairs"]
    result = got["log_bytes"] + got["vocab_bytes"]
    return {"format": fmt, "sessions": sessions, "file MB": size / 1e6, "read s": got["seconds"],
            "read cpu s": got["cpu_seconds"], "user cpu s": got["user_seconds"], "system cpu s": got["system_seconds"],
            "cpu s per MB": got["cpu_seconds"] / (size / 1e6),
            "second half cpu s per MB": got["second_half_cpu_per_mb"],
            "log MB": got["log_bytes"] / 1e6, "vocabulary MB": got["vocab_bytes"] / 1e6,
            "vocabulary bytes per entry": got["vocab_bytes"] / entries, "result MB": result / 1e6,
            "peak RSS MB": got["peak_rss"] / 1e6, "start RSS MB": got["rss_before"] / 1e6,
            "peak / result": got["peak_rss"] / result,
            "(peak - start) / result": (got["peak_rss"] - got["rss_before"]) / result,
            "queries": got["queries"], "docs": got["docs"], "pairs": got["pairs"]}, [
                [round(b / 1e6, 1), round(c, 2)] for b, c in got["trace"]], got["id_tables"] or {}


def fifths(trace: list) -> list[float]:
    """CPU seconds per MB over each fifth of a read, from its ``[MB read, CPU s]`` trace (flat:
    linear time within the file)."""
    points = [[0.0, 0.0]] + trace
    cut = [points[round(i * (len(points) - 1) / 5)] for i in range(6)]
    return [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(cut, cut[1:]) if b[0] > a[0]]


def id_reference(id_tables: dict) -> tuple[list[dict], list[dict], dict]:
    """The id tables against pandas': a row per (log, stream), the speed ratios (pandas' CPU over
    ours) and, per stream and format, each size's CPU per key over the size before, ours and pandas'."""
    rows, reference, growth = [], [], {}
    for name, streams in sorted(id_tables.items(), key=lambda kv: (int(kv[0].split()[1]), kv[0])):
        fmt, sessions = name.split()
        for stream, got in streams.items():
            rows.append({"format": fmt, "sessions": int(sessions), "keys": stream, "positions": got["keys"],
                         "distinct": got["distinct"], "jaxrank ns per key": got["ns per key"],
                         "pandas ns per key": got["pandas ns per key"]})
            reference.append({"what": f"id assignment, {stream} of {int(sessions):.0e} {fmt} pages, against pandas' "
                                      "Int64Factorizer (C hash table)",
                              "ratio": got["pandas ns per key"] / got["ns per key"]})
    for small in rows:
        for large in rows:
            if (large["format"], large["keys"]) == (small["format"], small["keys"]) and large["sessions"] == 10 * small[
                    "sessions"]:
                growth[f"{small['format']} {small['keys']}, {large['sessions']:.0e} / {small['sessions']:.0e} pages"] = {
                    "jaxrank": large["jaxrank ns per key"] / small["jaxrank ns per key"],
                    "pandas": large["pandas ns per key"] / small["pandas ns per key"]}
    return rows, reference, growth


def summary(rows: list[dict], traces: dict) -> dict:
    """Per format: CPU seconds per MB of each size over the size before (1: linear), the largest
    peak over the result, and the CPU seconds per MB over each fifth of the largest log."""
    figures = {}
    for fmt in datasets.CLICK_LOG_FORMATS:
        mine = sorted((r for r in rows if r["format"] == fmt), key=lambda r: r["sessions"])
        for small, large in zip(mine, mine[1:]):
            figures[f"{fmt} CPU s per MB, {large['sessions']:.0e} / {small['sessions']:.0e} sessions"] = (
                large["cpu s per MB"] / small["cpu s per MB"])
        if mine:
            figures[f"{fmt} largest peak / result"] = max(r["peak / result"] for r in mine)
            figures[f"{fmt} largest (peak - start) / result"] = max(r["(peak - start) / result"] for r in mine)
            largest = mine[-1]["sessions"]
            if len(traces.get(f"{fmt} {largest}", [])) >= 5:
                figures[f"{fmt} CPU s per MB in each fifth of the {largest:.0e}-session log"] = [
                    round(r, 4) for r in fifths(traces[f"{fmt} {largest}"])]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--formats", nargs="+", default=list(datasets.CLICK_LOG_FORMATS),
                        choices=datasets.CLICK_LOG_FORMATS)
    parser.add_argument("--out", type=Path, default=Path("/tmp/jaxrank-logs"))
    parser.add_argument("--keep", action="store_true", help="keep the generated logs")
    parser.add_argument("--json", help="write the figures to this JSON file (benchmarks/report.py)")
    parser.add_argument("--append", action="store_true",
                        help="keep the rows already in --json (other sizes and formats, run one at a time)")
    parser.add_argument("--no-id-reference", dest="id_reference", action="store_false",
                        help="skip timing the id tables against pandas' hash table (logs up to "
                             f"{ID_REFERENCE_MAX:.0e} pages; needs pandas, in the bench extra)")
    args = parser.parse_args()
    if args.id_reference:
        try:
            import pandas  # noqa: F401
        except ImportError:
            print("[click_logs] pandas is not installed (pip install -e '.[bench]'): no id-table reference")
            args.id_reference = False
    load_start = os.getloadavg()[0]
    rows, traces, id_tables, earlier = [], {}, {}, None
    if args.append and args.json and Path(args.json).exists():
        earlier = json.loads(Path(args.json).read_text())
        done = set((f, n) for f in args.formats for n in args.sessions)
        rows = [r for r in earlier["rows"] if (r["format"], r["sessions"]) not in done]
        traces, id_tables = ({k: v for k, v in earlier.get(field, {}).items() if tuple(k.split(" ")) not in
                              {(f, str(n)) for f, n in done}} for field in ("traces", "id_tables"))
    for sessions in args.sessions:
        for fmt in args.formats:
            row, traces[f"{fmt} {sessions}"], ids = measure(fmt, sessions, args.out, args.keep, args.id_reference)
            rows.append(row)
            if ids:
                id_tables[f"{fmt} {sessions}"] = ids
            print(" | ".join(f"{k} {v:,.3g}" if isinstance(v, float) else f"{k} {v:,}" if isinstance(v, int) else
                             f"{k} {v}" for k, v in row.items()), flush=True)
    figures = summary(rows, traces)
    id_rows, reference, growth = id_reference(id_tables)
    if id_rows:
        figures["id assignment alone, CPU ns a key: jaxrank's IdTable and pandas' hash table"] = id_rows
        figures["id assignment CPU per key, each size over the one before"] = growth
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        rows.sort(key=lambda r: (r["sessions"], datasets.CLICK_LOG_FORMATS.index(r["format"])))
        out = write_json(args.json, __file__, rows=rows, reference=reference, figures=figures, load_start=load_start)
        if earlier is not None:  # one file for the runs: their commands and the first run's start load
            out["command"] = f"{earlier['command']}; {out['command']}"
            out["load_average"]["start"] = earlier["load_average"]["start"]
        out["traces"] = traces  # per read: [MB read, CPU seconds] at each twentieth of the file
        out["id_tables"] = id_tables  # per read of up to ID_REFERENCE_MAX pages: its id tables and pandas' ones
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
