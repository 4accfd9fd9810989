"""SPD (pairwise Pegasos) on MQ2008 Fold1: jaxrank's one-jit grid against sofia-ml run by run.

    python benchmarks/spd.py [--data /path/to/MQ2008] [--steps 100000] [--seeds 10] [--skip-sofia] [--json PATH]

jaxrank trains 6 λ values × 10 seeds × 100,000 steps in one jitted ``vmap(vmap(train))`` with the
sofia-ml sampler (``sampler="sofia_rank"``, projection on, shrink clamp 1e-7); sofia-ml (Sculley's
own SPD through pysofia, built by hand: ``pip install "cython<3" wheel && pip install --no-build-isolation pysofia``) does the same 60 runs
one after another. Both are scored by test MAP on Fold1/test. Prints a Markdown table.
"""

import argparse
import os
import platform
import sys
import tempfile
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data import as_ragged, document_query, load_fold, pad_queries
from jaxrank.learners import LEARNERS as REGISTRY
from jaxrank.learners.pairwise import pair_source, train
from jaxrank.metrics import average_precision

LAMBDAS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


def import_pysofia():
    """pysofia 0.9 with its import shims; None when it is not installed."""
    sys.modules.setdefault("sklearn.cross_validation", types.ModuleType("sklearn.cross_validation"))
    try:
        import joblib
        import sklearn.externals

        sklearn.externals.joblib = joblib
        from pysofia import _sofia_ml, sofia_ml
    except ImportError:
        return None
    return _sofia_ml, sofia_ml


def write_sofia_file(path, queries):
    """SVMlight text that sofia-ml's parser reads safely: fixed-width qids (it copies the qid without
    a terminator) and a trailing `` #`` (its token loop reads past the last feature otherwise).

    ``queries``: ``RaggedQueries`` or ``QueryBatch``; query ``q`` (in order) is written as ``qid:q``.
    """
    queries = as_ragged(queries)
    owner = document_query(queries.offsets)
    lines = []
    for q, y, x in zip(owner, queries.labels, queries.features):
        feats = " ".join(f"{j + 1}:{v:.9g}" for j, v in enumerate(x))
        lines.append(f"{y:g} qid:{q:08d} {feats} #\n")
    Path(path).write_text("".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "MQ2008"))
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--skip-sofia", action="store_true")
    parser.add_argument("--json", help="write the figures (ratio included) to this JSON file")
    args = parser.parse_args()

    train_set, _, test_set = load_fold(args.data, 1)  # RaggedQueries: flat documents
    test_batch = pad_queries(test_set)  # padded [Q, L] for the per-query metric
    num_features = train_set.num_features
    print(f"machine: {platform.machine()} {platform.system()}, {os.cpu_count()} cores (load average "
          f"{os.getloadavg()[0]:.2f}), Python {platform.python_version()}, jax {jax.__version__} "
          f"({jax.default_backend()})")
    print(f"MQ2008 Fold1: {train_set.num_documents} training docs, {num_features} features; "
          f"{len(LAMBDAS)} lambdas x {args.seeds} seeds x {args.steps:,} steps\n")

    source = pair_source(train_set, sampler="sofia_rank")
    lams = jnp.asarray(LAMBDAS, jnp.float32)
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.key(0), s))(jnp.arange(args.seeds))

    learner = REGISTRY.build("spd")  # sofia-ml's defaults: Pegasos schedule, projection on

    def one(key, lam):
        state = learner.init(None, num_features, lam=lam)
        w = train(key, learner, state, source, num_steps=args.steps).w
        return average_precision(test_batch.features @ w, test_batch.labels, where=test_batch.mask)

    grid = jax.jit(jax.vmap(jax.vmap(one, in_axes=(0, None)), in_axes=(None, 0)))
    start = time.perf_counter()
    compiled = grid.lower(keys, lams).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    ours = np.asarray(compiled(keys, lams).block_until_ready())  # [6, S]
    ours_s = time.perf_counter() - start

    rows = [("jaxrank, one jit (vmap over lambdas x seeds)", ours_s, compile_s, ours)]
    sofia = None if args.skip_sofia else import_pysofia()
    if sofia is None and not args.skip_sofia:
        print("pysofia is not installed: sofia-ml rows skipped (pip install 'jaxrank[bench]').")
    if sofia is not None:
        _sofia_ml, sofia_ml = sofia
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "train.svm")
            write_sofia_file(path, train_set)

            def sofia_run(lam, steps):
                return _sofia_ml.train(path.encode(), num_features + 1, lam, steps, False,
                                       sofia_ml.learner_type.pegasos.value, "rank", sofia_ml.eta_type.pegasos_eta.value,
                                       0.5)

            start = time.perf_counter()
            for _ in range(len(LAMBDAS) * args.seeds):
                sofia_run(0.1, 1)
            parse_s = time.perf_counter() - start
            maps = np.zeros((len(LAMBDAS), args.seeds))
            start = time.perf_counter()
            coefs = [[sofia_run(lam, args.steps) for _ in range(args.seeds)] for lam in LAMBDAS]
            sofia_s = time.perf_counter() - start
        for i, row in enumerate(coefs):
            for s, coef in enumerate(row):
                maps[i, s] = float(average_precision(test_batch.features @ jnp.asarray(coef[1:], jnp.float32),
                                                     test_batch.labels, where=test_batch.mask))
        rows.append(("sofia-ml (pysofia), 60 runs one after another", sofia_s, None, maps))
        rows.append(("sofia-ml, same 60 calls with 1 step (file parsing only)", parse_s, None, None))

    print("| run | seconds | compile s | run-steps/s | test MAP by lambda (mean over seeds) |")
    print("|---|---:|---:|---:|---|")
    total_steps = len(LAMBDAS) * args.seeds * args.steps
    for name, seconds, compile_s, maps in rows:
        rate = f"{total_steps / seconds:,.0f}" if maps is not None else ""
        by_lam = ", ".join(f"{lam:g}: {m:.4f}" for lam, m in zip(LAMBDAS, maps.mean(1))) if maps is not None else ""
        print(f"| {name} | {seconds:.2f} | {'' if compile_s is None else f'{compile_s:.1f}'} | {rate} | {by_lam} |")
    if len(rows) > 1:
        print(f"\nsofia-ml time / jaxrank time: {rows[1][1] / rows[0][1]:.2f} "
              f"(training only, parsing subtracted: {(rows[1][1] - rows[2][1]) / rows[0][1]:.2f})")
        print(f"largest |mean MAP difference| over lambdas: {np.max(np.abs(rows[0][3].mean(1) - rows[1][3].mean(1))):.4f}")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        table = [dict(run=name, seconds=seconds, compile_s=compile_s,
                      run_steps_per_s=total_steps / seconds if maps is not None else None,
                      test_map_by_lambda=None if maps is None else dict(zip(map(str, LAMBDAS), maps.mean(1).tolist())))
                 for name, seconds, compile_s, maps in rows]
        reference = []
        if len(rows) > 1:
            reference = [{"what": "SPD, 60 runs: sofia-ml's time over jaxrank's", "ratio": rows[1][1] / rows[0][1]},
                         {"what": "the same, sofia-ml's file parsing subtracted",
                          "ratio": (rows[1][1] - rows[2][1]) / rows[0][1]}]
        write_json(args.json, __file__, rows=table, reference=reference,
                   figures=dict(lambdas=list(LAMBDAS), seeds=args.seeds, runs=len(LAMBDAS) * args.seeds, steps=args.steps))


if __name__ == "__main__":
    main()
