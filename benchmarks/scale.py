"""Paper-scale workloads on generated collections with the published shapes: time and peak memory.

    python benchmarks/datasets.py --all                      # once: the seeded files (about 8 GB in /tmp)
    python benchmarks/scale.py --all [--json PATH] [--data /tmp/jaxrank-scale]
    python benchmarks/scale.py --task solar-i-10 [--task ...] # some workloads

Every task runs in a fresh Python process, so its peak resident memory (``ru_maxrss``) is its own,
the interpreter and jax included; a parse against scikit-learn runs both loaders on the same file in
the same invocation, one after the other. The tasks (see ``TASKS``):

* loading: MSLR-WEB30K-shaped whole collection (3.77M documents) cold and from the cache; the
  WEB10K-shaped fold's training split parsed by jaxrank and by ``sklearn.datasets.load_svmlight_file``;
  the Yahoo! Set 1-shaped file (700 sparse feature ids) cold and warm;
* on the WEB10K-shaped fold: NDCG@10 and MAP of the 136 single-feature rankers over every query,
  SOLAR-I and SOLAR-II under the online protocol (1 and 10 permutations), the batch protocol's
  primal RankSVM over a λ grid, SPD 100,000 steps;
* the RCS paper's RQ1 at full scale: the preference matrix of all 136 MSLR single-feature rankers
  (9,180 pairs) by probabilistic interleaving on the WEB30K-shaped collection;
* sparse RankSVM ℓ1 paths on the TD2004-shaped set (1.08M pairs) and the WEB10K-shaped fold;
* on the Yahoo! Set 1-shaped file: single-feature metrics and SOLAR-I online.
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = Path("/tmp/jaxrank-scale")


def _file(name: str) -> Path:
    path = DATA / f"{name}.txt"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `python benchmarks/datasets.py --name {name} --out {DATA}` first.")
    return path


def _cache_to(folder: Path) -> None:
    os.environ["JAXRANK_CACHE"] = str(folder)


def _timed(fn):
    import jax

    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def load_cold(name: str) -> dict:
    """Parse (no cache) then write the cache entry; a later task reads it warm."""
    from jaxrank import data

    queries, seconds = _timed(lambda: data.load_queries(_file(name)))
    return {"seconds": seconds, "documents": queries.num_documents, "queries": queries.num_queries,
            "features": queries.num_features, "longest": queries.list_size}


def load_warm(name: str) -> dict:
    from jaxrank import data

    queries, seconds = _timed(lambda: data.load_queries(_file(name)))
    return {"seconds": seconds, "documents": queries.num_documents}


def load_splits() -> dict:
    """The WEB10K-shaped fold's three splits, parsed (or read from the cache) one after the other."""
    out = {n: load_cold(f"mslr-web10k-fold-{n}") for n in ("train", "vali", "test")}
    return {"seconds": sum(o["seconds"] for o in out.values()), "documents": {n: o["documents"] for n, o in out.items()}}


def parse_jaxrank(name: str) -> dict:
    from jaxrank import data

    parsed, seconds = _timed(lambda: data.parse_svmlight(_file(name)))
    return {"seconds": seconds, "documents": parsed.features.shape[0]}


def parse_sklearn(name: str, query_id: bool = True) -> dict:
    """scikit-learn's loader; with ``query_id=True`` it grows its qid array by ``np.append`` per line
    (quadratic in the lines), so the run without qids is reported too."""
    from sklearn.datasets import load_svmlight_file

    start = time.perf_counter()
    x = load_svmlight_file(str(_file(name)), query_id=query_id)[0]
    return {"seconds": time.perf_counter() - start, "documents": x.shape[0]}


def _web10k(normalize=True):
    from jaxrank import data

    return data.load_queries(_file("mslr-web10k-fold-train"), normalize=normalize)


def feature_metrics(name: str) -> dict:
    import jax

    from experiments.feature_rankers import score_features
    from jaxrank import data

    queries = data.load_queries(_file(name))
    values, seconds = _timed(lambda: score_features(queries, jax.random.key(0), topns=(10,), letor_compat=False))
    best = int(values[0].argmax())
    return {"seconds": seconds, "rankers": int(values.shape[-1]), "queries": queries.num_queries,
            "best_feature": best + 1, "best_ndcg10": float(values[0, best]), "best_map": float(values[1].max())}


def online(learner_name: str, permutations: int, name: str = "mslr-web10k-fold-train") -> dict:
    import jax
    import numpy as np

    from jaxrank import data
    from jaxrank.learners import LEARNERS
    from jaxrank.learners.online import online_pass, streams

    queries = data.load_queries(_file(name), normalize=True)
    learner = LEARNERS.build(learner_name)  # SOLAR §5.2's C = 1e-5 / γ = 1e4 by default
    start = time.perf_counter()
    docs = streams.documents(queries)
    stream = streams.instance_stream(queries, learner.instances)
    keys = online_pass.permutation_keys(jax.random.key(0), permutations)
    setup = time.perf_counter() - start
    passes, run = _timed(lambda: online_pass.online_passes(keys, learner, docs, stream))  # the lane runner compiles
    per_query, score = _timed(lambda: online_pass.score_passes(keys, learner, queries, passes))
    final = np.asarray(online_pass.cumulative_mean(per_query))[:, -1].mean(0)
    return {"setup_seconds": setup, "pass_with_compile_seconds": run, "scoring_seconds": score,
            "seconds": setup + run + score, "instances": int(stream.first.shape[0]),
            "instance_steps_per_second": permutations * int(stream.first.shape[0]) / run,
            "ndcg10": float(final[2]), "map": float(final[3])}


def ranksvm_batch() -> dict:
    import jax
    import jax.numpy as jnp

    from jaxrank import data
    from jaxrank.learners import linear
    from jaxrank.learners.online import batch_protocol
    from jaxrank.solvers import make_pairs, ranksvm

    train = _web10k()
    vali = data.load_queries(_file("mslr-web10k-fold-vali"), normalize=True)
    test = data.load_queries(_file("mslr-web10k-fold-test"), normalize=True)
    lams = jnp.asarray([1e-5, 1e-4, 1e-3], jnp.float32)
    pairs, build = _timed(lambda: make_pairs(train))
    solve = jax.jit(lambda p, lam: ranksvm(p, lam))
    start = time.perf_counter()
    ws, iterations = [], []
    for lam in lams:  # one λ at a time: the Hessian's Laplacian scratch is [N, D] per lane
        w, info = jax.block_until_ready(solve(pairs, lam))
        ws.append(w)
        iterations.append(int(info.iterations))
    solve_s = time.perf_counter() - start
    keys = jax.random.key(0)[None]
    result, evaluate = _timed(lambda: batch_protocol.evaluate_folds(keys, linear.score, jnp.stack(ws)[None], [vali],
                                                                    [test]))
    best = int(result.vali[0, :, 3].argmax())
    return {"pairs": int(pairs.valid.sum()), "pair_build_seconds": build, "solve_seconds": solve_s,
            "newton_steps": iterations, "evaluate_seconds": evaluate, "seconds": build + solve_s + evaluate,
            "lambdas": [float(x) for x in lams], "chosen_lambda": float(lams[best]),
            "test_ndcg10": float(result.test[0, best, 2]), "test_map": float(result.test[0, best, 3])}


def spd_steps() -> dict:
    import jax

    from jaxrank.learners import LEARNERS
    from jaxrank.learners.pairwise import pair_source, train

    queries = _web10k()
    source, build = _timed(lambda: pair_source(queries))
    learner = LEARNERS.build("spd")
    run = jax.jit(lambda s, k: train(k, learner, learner.init(None, queries.num_features, lam=1e-4), s, num_steps=100_000))
    start = time.perf_counter()
    compiled = run.lower(source, jax.random.key(0)).compile()
    compile_s = time.perf_counter() - start
    state, seconds = _timed(lambda: compiled(source, jax.random.key(0)))
    return {"source_seconds": build, "compile_seconds": compile_s, "run_seconds": seconds,
            "steps_per_second": 100_000 / seconds, "seconds": build + compile_s + seconds}


def estimate(comparisons: int = 1000) -> dict:
    import jax

    from jaxrank import clicks, data, envs

    queries = data.load_queries(_file("mslr-web30k"))
    rankers = envs.single_feature_rankers(list(range(1, 137)), queries.num_features)
    start = time.perf_counter()
    est = envs.estimate.estimate_wins(jax.random.key(0), queries, rankers, clicks.cascade_model("perfect", 5),
                                      "probabilistic", comparisons)
    seconds = time.perf_counter() - start
    total = 136 * 135 // 2 * comparisons
    rate = total / est.seconds
    return {"seconds": seconds, "comparison_seconds": est.seconds,
            "comparisons": total, "comparisons_per_second": rate,
            "projected_seconds_80000_per_pair": 136 * 135 // 2 * 80_000 / rate,
            "condorcet_winner": int(envs.condorcet_winner(est.pref)) if envs.condorcet_winner(est.pref) is not None else None}


def sparse_path(name: str, normalize: bool, num_lambdas: int, max_iter: int) -> dict:
    import jax
    import numpy as np

    from jaxrank import data
    from jaxrank import solvers as S

    queries = data.load_queries(_file(name), normalize=normalize)
    pairs, build = _timed(lambda: S.make_pairs(queries, form="index"))
    pairs = jax.tree.map(lambda a: a[None], pairs)
    lip, lip_s = _timed(lambda: jax.vmap(S.lipschitz_constant, in_axes=(None, 0))(jax.random.key(S.POWER_START_SEED), pairs))
    lams = S.lambda_grid(jax.vmap(S.lambda_max)(pairs), num=num_lambdas, decades=2.0)
    pens = S.stack_penalties([S.l1()])
    start = time.perf_counter()
    w, _, info = S.solve_paths_in_chunks(pairs, lams, pens, lip, tol=1e-4, max_iter=max_iter, num_outer=0,
                                         chunk_steps=200)
    seconds = time.perf_counter() - start
    info = jax.tree.map(np.asarray, info)
    return {"pairs": int(pairs.valid.sum()), "pair_build_seconds": build, "lipschitz_seconds": lip_s,
            "path_seconds": seconds, "seconds": build + lip_s + seconds, "lambdas": num_lambdas, "tol": "1e-4 λ",
            "fista_steps": int(info.l1_iterations.sum()), "certified": int(info.converged.sum()),
            "nonzero_weights": np.asarray((np.asarray(w) != 0).sum(-1)).ravel().tolist()}


TASKS = {
    "load-web30k-cold": lambda: load_cold("mslr-web30k"),
    "load-web30k-warm": lambda: load_warm("mslr-web30k"),
    "parse-web10k-jaxrank": lambda: parse_jaxrank("mslr-web10k-fold-train"),
    "parse-web10k-sklearn": lambda: parse_sklearn("mslr-web10k-fold-train"),
    "parse-web10k-sklearn-no-qid": lambda: parse_sklearn("mslr-web10k-fold-train", query_id=False),
    "load-yahoo-cold": lambda: load_cold("yahoo-set1"),
    "load-yahoo-warm": lambda: load_warm("yahoo-set1"),
    "load-web10k-splits": load_splits,
    "metrics-web10k": lambda: feature_metrics("mslr-web10k-fold-train"),
    "metrics-yahoo": lambda: feature_metrics("yahoo-set1"),
    "solar-i-1": lambda: online("solar_first_order", 1),
    "solar-i-10": lambda: online("solar_first_order", 10),
    "solar-ii-1": lambda: online("solar_second_order", 1),
    "solar-ii-10": lambda: online("solar_second_order", 10),
    "solar-i-yahoo": lambda: online("solar_first_order", 1, "yahoo-set1"),
    "ranksvm-batch-web10k": ranksvm_batch,
    "spd-web10k": spd_steps,
    "estimate-web30k": estimate,
    "sparse-td2004": lambda: sparse_path("td2004", False, 9, 2000),
    "sparse-web10k": lambda: sparse_path("mslr-web10k-fold-train", True, 3, 300),
}


def run_task(name: str) -> dict:
    start = time.perf_counter()
    out = TASKS[name]()
    out["wall_seconds"] = time.perf_counter() - start
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def _drop_cache_entries(cache: Path, name: str) -> None:
    """A cold load: no cache entry of ``name`` may be found."""
    for entry in cache.glob(f"{name}.txt.*"):
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def _write_json(path: Path, results: dict, load_start: float) -> None:
    """The tasks' figures in the shape ``benchmarks/report.py`` reads: a row per task (seconds, peak
    memory, the task's other figures), the parse against scikit-learn as the reference ratio."""
    from report import write_json

    rows = [{"task": name, "seconds": r.get("seconds"), "peak_rss_gib": r.get("peak_rss_gib"),
             "details": {k: v for k, v in r.items() if k not in ("seconds", "peak_rss_gib")}}
            for name, r in results.items() if isinstance(r, dict)]
    reference = []
    if "parse_ratio_sklearn_over_jaxrank" in results:
        reference.append({"what": "WEB10K-shaped train parse: scikit-learn load_svmlight_file(query_id=True) time "
                          "over jaxrank's", "ratio": results["parse_ratio_sklearn_over_jaxrank"]})
    write_json(path, __file__, rows=rows, reference=reference, load_start=load_start, figures={"data": str(DATA)})


def main() -> None:
    global DATA
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=sorted(TASKS), action="append", help="a task to run (repeatable)")
    parser.add_argument("--all", action="store_true", help="every task")
    parser.add_argument("--inline", action="store_true", help="run the tasks in this process (default: one each)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/jaxrank-scale/cache"))
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    DATA = args.data
    _cache_to(args.cache)
    names = list(TASKS) if args.all else [n for n in TASKS if n in (args.task or [])]
    if not names:
        parser.error("give --task NAME or --all")
    if args.inline:
        for name in names:
            print(json.dumps({name: run_task(name)}), flush=True)
        return
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    load_start = os.getloadavg()[0]
    results = {}
    for name in names:
        if name.startswith("load-") and name.endswith("-cold"):
            _drop_cache_entries(args.cache, {"web30k": "mslr-web30k", "yahoo": "yahoo-set1"}[name.split("-")[1]])
        cmd = [sys.executable, __file__, "--inline", "--task", name, "--data", str(args.data), "--cache", str(args.cache)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            results[name] = {"error": (proc.stderr or proc.stdout)[-2000:]}
        else:
            results[name] = json.loads(lines[-1])[name]
        print(json.dumps({name: results[name]}), flush=True)
        if args.json:
            _write_json(args.json, results, load_start)
    sk, ours = results.get("parse-web10k-sklearn", {}), results.get("parse-web10k-jaxrank", {})
    if "seconds" in sk and "seconds" in ours:
        results["parse_ratio_sklearn_over_jaxrank"] = sk["seconds"] / ours["seconds"]
    if args.json:
        _write_json(args.json, results, load_start)
    print("\n| task | seconds | peak RSS GiB |\n|---|---:|---:|")
    for name, r in results.items():
        if isinstance(r, dict):
            print(f"| {name} | {r.get('seconds', float('nan')):.1f} | {r.get('peak_rss_gib', float('nan')):.2f} |")


if __name__ == "__main__":
    main()
