"""Click-model fitting throughput: the ten models' EM iteration on one PyClick-format log beside
PyClick's own, and on one generated log of 10⁶ sessions (10 positions): EM iterations of DBN and CCM
against the NumPy reference loop, a whole 50-iteration fit, gradient epochs, and the peak memory of a
chunked fit of 10⁷ sessions.

    python benchmarks/click_models.py [--pyclick DIR] [--sessions 1000000] [--reference-sessions 2000]
                                      [--big-sessions 10000000] [--json PATH]
    python benchmarks/click_models.py --pyclick DIR --queries 40 --train-sessions 400 --test-sessions 400 \
                                      --pyclick-fit DBN,CCM --variants published,both_fixed --json PATH

* The ten models (part ``ten``): a log of ``--train-sessions`` sessions of a DBN user (``DBN_USER``)
  over ``--queries`` queries, written in PyClick's session text, gzip-compressed, with a test log of
  ``--test-sessions`` more (``--logs``); jaxrank's EM iteration of each model (``ten_rows``) and, with
  ``--pyclick`` (or ``PYCLICK_PATH``), PyClick's, timed in the same run (``benchmarks/_pyclick.py``),
  with their ratio. ``--pyclick-fit MODELS`` instead fits PyClick's models on the training log (50
  iterations), scores the test log by its protocol, once per defect variant (``--variants``).

* EM per iteration (DBN, CCM): one jitted ``em_step`` over the log in chunks of ``DEFAULT_CHUNK_SIZE``
  sessions (``fit_em``'s default), with the parameter-free counts summed beforehand (as ``fit_em``
  does once per fit), compile excluded, mean of 3; and once on the whole log at once.
  The reference is ``tests/reference/click_models.py``'s ``em_iteration_by_depth`` (exact posteriors by
  enumerating the examination depth and each click's satisfaction, a Python loop per session),
  timed on the first ``--reference-sessions`` sessions and scaled per session to the whole log.
* Whole fit: ``fit_em`` with 50 iterations (default chunks), compile included (target: under a minute).
* Gradient (PBM, UBM, DBN): sessions per second of one epoch of Adam, full batch and minibatches of
  4096 (CLAX's) and 65536, compile excluded (target: at least 10⁶).
* Memory: in a child process, a ``--big-sessions`` log generated in parts, then ``fit_em(DBN,
  chunk_size=--chunk-size)`` (default ``DEFAULT_CHUNK_SIZE``) for 2 iterations (memory does not
  grow with iterations): the peak resident set during the fit (``VmHWM`` after resetting it,
  Linux) and the process's ``ru_maxrss``, next to the log's own bytes.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jaxrank.click_models import CLICK_MODELS, em_step, fit_em, generate_sessions, gradient_fitter  # noqa: E402
from jaxrank.click_models.base import from_probabilities  # noqa: E402
from jaxrank.click_models.em import DEFAULT_CHUNK_SIZE, counts  # noqa: E402
from jaxrank.clicks import cascade_model  # noqa: E402
from jaxrank.data import read_click_log, synthetic_queries  # noqa: E402
from tests.reference import click_models as ref  # noqa: E402

NUM_QUERIES, LIST_SIZE = 1000, 32  # 32,000 (query, document) pairs


def make_log(num_sessions: int, seed: int = 0, part: int = 1_000_000):
    """``num_sessions`` informational-cascade sessions over synthetic queries, generated in parts."""
    queries = synthetic_queries(jax.random.key(seed), num_queries=NUM_QUERIES, list_size=LIST_SIZE, num_features=4)
    model = cascade_model("informational", 3)
    parts = [generate_sessions(jax.random.fold_in(jax.random.key(seed + 1), i), queries,
                               min(part, num_sessions - start), model, temperature=1.0)
             for i, start in enumerate(range(0, num_sessions, part))]
    if len(parts) == 1:
        return parts[0]
    log = jax.tree.map(lambda *x: jnp.concatenate(x) if x[0].ndim else x[0], *parts)
    del parts
    return log


# The ten models under the names of both packages (jaxrank's registry, PyClick's classes).
TEN = ("gctr", "rctr", "dctr", "pbm", "ubm", "cm", "dcm", "dbn", "sdbn", "ccm")
# The PyClick comparison's simulated user: a DBN with these per-pair attraction / satisfaction logits
# (normal, mean and sd) and continuation, so that a share of the sessions has no click (34% of the
# WSCD sample PyClick's DBN/CCM defects matter on).
DBN_USER = {"attraction": (-1.6, 1.2), "satisfaction": (-0.5, 1.0), "continuation": 0.9}
PYCLICK_LIST_SIZE = 15  # 10 of a query's 15 documents a page, Plackett-Luce order at temperature 1


def dbn_user_log(seed: int, num_queries: int, num_sessions: int):
    """``num_sessions`` sessions of a DBN user (``DBN_USER``) over ``num_queries`` queries of
    ``PYCLICK_LIST_SIZE`` documents, 10 shown a page in a random order."""
    key_q, key_a, key_s, key_g = jax.random.split(jax.random.key(seed), 4)
    queries = synthetic_queries(key_q, num_queries=num_queries, list_size=PYCLICK_LIST_SIZE, num_features=4,
                                min_docs=PYCLICK_LIST_SIZE)
    num_pairs = num_queries * PYCLICK_LIST_SIZE
    user = CLICK_MODELS.build("dbn")
    (am, asd), (sm, ssd) = DBN_USER["attraction"], DBN_USER["satisfaction"]
    params = user.init_params(num_pairs, 10)._replace(
        attraction=am + asd * jax.random.normal(key_a, (num_pairs,)),
        satisfaction=sm + ssd * jax.random.normal(key_s, (num_pairs,)),
        continuation=from_probabilities(jnp.float32(DBN_USER["continuation"])))
    return generate_sessions(key_g, queries, num_sessions, user, params=params, temperature=1.0)


def write_pyclick_log(path: Path, log, sessions: slice) -> Path:
    """Writes ``log``'s ``sessions`` in PyClick's session text (``QUERY<TAB>DOC,...,DOC:CLICKED,...``,
    query tokens ``q<id>``, document tokens ``d<pair id>``), gzip-compressed."""
    import gzip

    query, pair = np.asarray(log.query)[sessions], np.asarray(log.pair)[sessions]
    clicks, mask = np.asarray(log.clicks)[sessions], np.asarray(log.mask)[sessions]
    lines = [f"q{q}\t{','.join(f'd{d}' for d in p[m])}:{','.join(f'd{d}' for d in p[m & c])}\n"
             for q, p, c, m in zip(query, pair, clicks, mask)]
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # one per process: concurrent runs write the same bytes
    tmp.write_bytes(gzip.compress("".join(lines).encode("ascii"), mtime=0))
    tmp.replace(path)
    return path


def pyclick_logs(out: Path, num_queries: int, train: int, test: int, seed: int = 0) -> tuple[Path, Path]:
    """``out/pyclick-train-<train>.txt.gz`` and ``out/pyclick-test-<test>.txt.gz``: the first ``train``
    and the next ``test`` sessions of one ``dbn_user_log``."""
    out.mkdir(parents=True, exist_ok=True)
    log = dbn_user_log(seed, num_queries, train + test)
    return (write_pyclick_log(out / f"pyclick-train-{train}.txt.gz", log, slice(0, train)),
            write_pyclick_log(out / f"pyclick-test-{test}.txt.gz", log, slice(train, train + test)))


def ten_rows(train_path: Path, pyclick_path, pyclick_sessions: int, rounds: int = 9) -> list[dict]:
    """EM per iteration of the ten models on the log at ``train_path`` (read by ``read_click_log``), in
    jaxrank (``em_step`` as ``fit_em`` runs it, counts summed beforehand, compile excluded; ``rounds``
    rounds of one iteration of every model in turn, the median per model, so that a change of load
    hits every model alike) and in PyClick (``model.train`` with one EM iteration, or its one MLE pass,
    on the first ``pyclick_sessions`` sessions, scaled per session to the whole log)."""
    log, _, _ = read_click_log(train_path)
    num = log.pair.shape[0]
    steps = {}
    for name in TEN:
        model = CLICK_MODELS.build(name)
        state = model.init(jax.random.key(0), int(log.num_pairs), log.pair.shape[1])
        fixed = jax.jit(lambda p, lg, model=model: counts(model, p, lg, chunk_size=DEFAULT_CHUNK_SIZE))(
            state.params, log)
        step = jax.jit(lambda s, lg, f, model=model: em_step(model, s, lg, fixed=f)[0])
        jax.block_until_ready(step(state, log, fixed))  # compile
        steps[name] = (model, lambda step=step, state=state, fixed=fixed: step(state, log, fixed))
    seconds = {name: [] for name in TEN}
    for _ in range(rounds):
        for name in TEN:
            start = time.perf_counter()
            jax.block_until_ready(steps[name][1]())
            seconds[name].append(time.perf_counter() - start)
    rows = [{"model": name.upper(), "sessions": num, "fitting": steps[name][0].fitting,
             "jaxrank_iteration_s": float(np.median(seconds[name]))} for name in TEN]
    if pyclick_path:
        import _pyclick as pr

        pc = pr.load(pyclick_path)
        sessions = pr.read_sessions(pc, train_path)
        assert len(sessions) == num, (len(sessions), num)
        timed = sessions[:pyclick_sessions]
        for row in rows:
            elapsed = pr.train_seconds(pc, row["model"], timed, 1)
            row.update(pyclick_sessions_timed=len(timed), pyclick_iteration_s=elapsed * num / len(timed))
            row["pyclick_over_jaxrank"] = row["pyclick_iteration_s"] / row["jaxrank_iteration_s"]
            print(row, flush=True)
    dbn = next(r["jaxrank_iteration_s"] for r in rows if r["model"] == "DBN")
    for row in rows:
        row["over_dbn"] = row["jaxrank_iteration_s"] / dbn
    return rows


def pyclick_fit_rows(pyclick_path, train_path: Path, test_path: Path, models, variants, iterations: int) -> list[dict]:
    """PyClick's ``models`` fitted on ``train_path`` (``iterations`` EM iterations), evaluated on the test
    sessions of training queries (its protocol), once per defect variant (``_pyclick.defects``)."""
    import _pyclick as pr

    pc = pr.load(pyclick_path)
    train = pr.read_sessions(pc, train_path)
    test = pr.filter_to_train_queries(train, pr.read_sessions(pc, test_path))
    rows = []
    for name in models:
        for variant in variants:
            flags = {"published": {}, "last_click_rank_fixed": {"last_click_rank": False},
                     "tail_clicks_fixed": {"tail_clicks": False},
                     "both_fixed": {"last_click_rank": False, "tail_clicks": False}}[variant]
            with pr.defects(pc, **flags):
                model = pr.build(pc, name, iterations)
                start = time.perf_counter()
                model.train(train)
                seconds = time.perf_counter() - start
                row = {"model": name, "variant": variant, "iterations": iterations, "train_sessions": len(train),
                       "test_sessions": len(test), "train_s": round(seconds, 1), **pr.evaluate(pc, model, test)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def _timed(fn, *args, repeats=3):
    jax.block_until_ready(fn(*args))  # compile
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / repeats


def em_rows(log, reference_sessions: int) -> list[dict]:
    rows = []
    num = log.pair.shape[0]
    subset = [(tuple(int(p) for p in log.pair[s, :n]), tuple(int(c) for c in log.clicks[s, :n]))
              for s, n in enumerate(np.asarray(log.mask[:reference_sessions]).sum(1))]
    for name in ("dbn", "ccm"):
        model = CLICK_MODELS.build(name)
        state = model.init(jax.random.key(0), int(log.num_pairs), log.pair.shape[1])
        # An iteration of fit_em: the parameter-free counts are summed once per fit, before the iterations;
        # the info (a log-likelihood pass) is dropped as fit_em drops it.
        fixed = jax.jit(lambda p, lg, model=model: counts(model, p, lg, chunk_size=DEFAULT_CHUNK_SIZE))(
            state.params, log)
        step = jax.jit(lambda s, lg, f, model=model: em_step(model, s, lg, fixed=f)[0])
        per_iteration = _timed(step, state, log, fixed)
        whole = model._replace(chunk_size=None)
        whole_step = jax.jit(lambda s, lg, f, model=whole: em_step(model, s, lg, fixed=f)[0])
        per_iteration_whole = _timed(whole_step, state, log, fixed, repeats=1)
        start = time.perf_counter()
        jax.block_until_ready(fit_em(log, model, num_iterations=50))
        whole = time.perf_counter() - start
        start_params = {}
        for pairs, _ in subset:  # every key the subset touches, at PyClick's start 0.5
            for p in pairs:
                start_params[("attr", p)] = 0.5
                if name == "dbn":
                    start_params[("sat", p)] = 0.5
        start_params.update({("cont",): 0.5} if name == "dbn" else {(t,): 0.5 for t in ("tau1", "tau2", "tau3")})
        start = time.perf_counter()
        ref.em_iteration_by_depth(name, subset, start_params)
        ref_per_session = (time.perf_counter() - start) / len(subset)
        ref_scaled = ref_per_session * num
        rows.append({"model": name.upper(), "sessions": num, "em_iteration_s": round(per_iteration, 3),
                     "sessions_per_s": round(num / per_iteration),
                     "em_iteration_whole_log_s": round(per_iteration_whole, 3), "fit_50_iterations_s": round(whole, 1),
                     "reference_iteration_s_scaled": round(ref_scaled, 1),
                     "reference_sessions_timed": len(subset), "ratio": round(ref_scaled / per_iteration, 1)})
        print(rows[-1], flush=True)
    return rows


def gradient_rows(log) -> list[dict]:
    rows = []
    num = log.pair.shape[0]
    for name in ("pbm", "ubm", "dbn"):
        model = CLICK_MODELS.build(name)
        for batch in (None, 4096, 65536):
            fitter = gradient_fitter(model, num_pairs=int(log.num_pairs), batch_size=batch)
            state = fitter.init(jax.random.key(0), log)
            epoch = jax.jit(lambda s, lg, fitter=fitter: fitter.epoch(s, lg)[0])
            seconds = _timed(epoch, state, log, repeats=2)
            rows.append({"model": name.upper(), "batch": "full" if batch is None else batch,
                         "epoch_s": round(seconds, 3), "sessions_per_s": round(num / seconds)})
            print(rows[-1], flush=True)
    return rows


def _status(field: str) -> int:
    """``/proc/self/status`` ``field`` in bytes (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return -1


def memory_child(num_sessions: int, chunk_size: int) -> dict:
    """Runs in a fresh process: the peak memory of a chunked DBN fit of ``num_sessions`` sessions."""
    start = time.perf_counter()
    log = make_log(num_sessions)
    jax.block_until_ready(log)
    generate_s = time.perf_counter() - start
    log_bytes = sum(np.asarray(x).nbytes for x in jax.tree.leaves(log))
    before = _status("VmRSS")
    try:  # reset the peak resident set size (Linux >= 4.0), so VmHWM is the fit's peak
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    start = time.perf_counter()
    jax.block_until_ready(fit_em(log, CLICK_MODELS.build("dbn"), num_iterations=2, chunk_size=chunk_size))
    return {"sessions": num_sessions, "chunk_size": chunk_size, "iterations": 2,
            "generate_s": round(generate_s, 1), "fit_s": round(time.perf_counter() - start, 1),
            "log_bytes": log_bytes, "rss_before_fit_bytes": before,
            "peak_rss_during_fit_bytes": _status("VmHWM") if reset else None,
            "ru_maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "num_pairs": NUM_QUERIES * LIST_SIZE}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--reference-sessions", type=int, default=2000)
    parser.add_argument("--big-sessions", type=int, default=10_000_000)
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: ten, em, gradient, memory")
    parser.add_argument("--pyclick", default=os.environ.get("PYCLICK_PATH"),
                        help="a PyClick checkout (the folder holding pyclick/): time and fit it beside jaxrank")
    parser.add_argument("--logs", default="/tmp/jaxrank-click-models", help="where the PyClick-format logs are written")
    parser.add_argument("--queries", type=int, default=3000, help="queries of the PyClick-format log")
    parser.add_argument("--train-sessions", type=int, default=35000)
    parser.add_argument("--test-sessions", type=int, default=10000)
    parser.add_argument("--pyclick-sessions", type=int, default=2000,
                        help="sessions PyClick's iteration is timed on (scaled per session to the log)")
    parser.add_argument("--pyclick-fit", default="",
                        help="only fit PyClick's models (comma-separated, e.g. DBN,CCM) on the logs and evaluate")
    parser.add_argument("--variants", default="published",
                        help="PyClick defect variants: published, last_click_rank_fixed, tail_clicks_fixed, both_fixed")
    parser.add_argument("--iterations", type=int, default=50, help="EM iterations of --pyclick-fit")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(args.big_sessions, args.chunk_size)))
        return
    load_start = os.getloadavg()[0]
    skip = set(filter(None, args.skip.split(",")))
    if args.pyclick_fit or "ten" not in skip:
        train_path, test_path = pyclick_logs(Path(args.logs), args.queries, args.train_sessions, args.test_sessions)
    if args.pyclick_fit:
        rows = pyclick_fit_rows(args.pyclick, train_path, test_path, args.pyclick_fit.split(","),
                                args.variants.split(","), args.iterations)
        if args.json:
            from report import write_json

            write_json(args.json, __file__, rows=rows, load_start=load_start,
                       figures={"train_log": train_path.name, "test_log": test_path.name, "queries": args.queries,
                                "dbn_user": DBN_USER})
        return
    ten = ten_rows(train_path, args.pyclick, args.pyclick_sessions) if "ten" not in skip else []
    print(f"{jax.default_backend()} x{jax.device_count()}, {os.cpu_count()} cores, load {load_start:.1f}", flush=True)
    start = time.perf_counter()
    log = make_log(args.sessions)
    jax.block_until_ready(log)
    print(f"generated {args.sessions:,} sessions in {time.perf_counter() - start:.1f}s", flush=True)
    em = em_rows(log, args.reference_sessions) if "em" not in skip else []
    grad = gradient_rows(log) if "gradient" not in skip else []
    del log
    memory = None
    if "memory" not in skip:
        done = subprocess.run([sys.executable, __file__, "--memory-child", f"--big-sessions={args.big_sessions}",
                               f"--chunk-size={args.chunk_size}"], capture_output=True, text=True, cwd=REPO)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        memory = json.loads(done.stdout.strip().splitlines()[-1])
        print(memory, flush=True)
    if ten:
        print(f"\n{train_path.name}: {ten[0]['sessions']:,} sessions")
        print("| model | jaxrank iteration | over DBN's | PyClick iteration | PyClick / jaxrank |")
        print("|---|---:|---:|---:|---:|")
        for r in ten:
            print(f"| {r['model']} | {r['jaxrank_iteration_s'] * 1e3:.2f} ms | {r['over_dbn']:.2f} | "
                  f"{r.get('pyclick_iteration_s', float('nan')):.2f} s | "
                  f"{r.get('pyclick_over_jaxrank', float('nan')):,.0f}x |")
    print("\n| model | EM iteration | sessions/s | 50 iterations | NumPy reference iteration (scaled) | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in em:
        print(f"| {r['model']} | {r['em_iteration_s']:.2f} s | {r['sessions_per_s']:,} | "
              f"{r['fit_50_iterations_s']:.1f} s | {r['reference_iteration_s_scaled']:,.0f} s | {r['ratio']:,.0f}x |")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        rows = ([{"part": "ten", **r} for r in ten] + [{"part": "em", **r} for r in em]
                + [{"part": "gradient", **r} for r in grad])
        write_json(args.json, __file__, rows=rows, load_start=load_start,
                   reference=[{"what": f"{r['model']}: one EM iteration on {r['sessions']:,} sessions, jaxrank over "
                               f"the NumPy reference loop (timed on {r['reference_sessions_timed']:,} sessions, scaled "
                               "per session)", "ratio": r["ratio"]} for r in em],
                   figures={"sessions": args.sessions, "positions": 10, "pairs": NUM_QUERIES * LIST_SIZE,
                            "clicks": "informational cascade, Plackett-Luce temperature 1",
                            "targets": {"fit_50_iterations_s": "< 60", "gradient_sessions_per_s": ">= 1e6"},
                            "memory": memory})


if __name__ == "__main__":
    main()
