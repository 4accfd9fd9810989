"""Data layer and NDCG@10 timings on MQ2008, against scikit-learn, NumPy and ranx.

    python benchmarks/bench_data_metrics.py [--repeats 5] [--data /path/to/MQ2008] [--json PATH]

1. Parsing ``Fold1/train.txt.gz`` (9,630 docs): ``parse_svmlight`` (no cache), ``load_svmlight``
   cold (parse + write the .npy entry) and warm (read it), against ``sklearn.datasets.load_svmlight_file``.
2. NDCG@10 over all 784 queries (S1..S5) with tie-free random scores: jitted ``jaxrank.metrics.ndcg``
   against a padded NumPy reference and ranx ``ndcg_burges@10`` (exponential gain), plus a vmapped
   batch of 100 score vectors per query.
Prints the median of ``--repeats`` runs per row as a Markdown table; ``--json`` writes the same figures.
"""

import argparse
import contextlib
import os
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxrank
from jaxrank.data import SVMLightData, load_svmlight, pad_queries, parse_svmlight, ragged_queries
from jaxrank.metrics import ndcg

TOPN = 10
BATCH = 100  # score vectors per query in the vmap row


@contextlib.contextmanager
def cache_at(folder):
    """Points JAXRANK_CACHE at ``folder`` for the duration of the block."""
    old = os.environ.get("JAXRANK_CACHE")
    os.environ["JAXRANK_CACHE"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            del os.environ["JAXRANK_CACHE"]
        else:
            os.environ["JAXRANK_CACHE"] = old


def median_ms(fn, repeats, number=1, setup=None):
    """Median over ``repeats`` of the mean time of ``number`` calls of ``fn(setup())``, in ms."""
    times = []
    for _ in range(repeats):
        arg = setup() if setup else None
        start = time.perf_counter()
        for _ in range(number):
            fn(arg)
        times.append((time.perf_counter() - start) / number)
    return 1e3 * statistics.median(times)


def bench_parsing(path, repeats):
    from sklearn.datasets import load_svmlight_file

    n = parse_svmlight(path).features.shape[0]
    rows = [("sklearn `load_svmlight_file(query_id=True)` (sparse CSR)",
             median_ms(lambda _: load_svmlight_file(str(path), query_id=True), repeats)),
            ("jaxrank `parse_svmlight` (no cache, dense)", median_ms(lambda _: parse_svmlight(path), repeats))]

    def cold(folder):
        with cache_at(folder):
            load_svmlight(path)

    with tempfile.TemporaryDirectory() as tmp:
        fresh = iter(range(repeats))  # a new, empty cache folder for every cold run
        rows.append(("jaxrank `load_svmlight`, cold cache (parse + write .npy)",
                     median_ms(cold, repeats, setup=lambda: Path(tmp) / f"cold{next(fresh)}")))
        with cache_at(Path(tmp) / "warm"):
            load_svmlight(path)  # fill the cache
            rows.append(("jaxrank `load_svmlight`, warm cache (stat source + read .npy)",
                         median_ms(lambda _: load_svmlight(path), repeats)))
    table = [(name, ms, ms / rows[0][1]) for name, ms in rows]
    return n, table


def numpy_ndcg(scores, labels, mask, topn):
    """Per-list NDCG@topn ``[..., ]`` of padded ``[..., L]`` arrays: gain 2^l - 1, discount 1/log2(1 + r)."""
    discount = np.where(np.arange(labels.shape[-1]) < topn, 1.0 / np.log2(np.arange(2, labels.shape[-1] + 2)), 0.0)
    gain = np.broadcast_to(np.where(mask, np.exp2(labels) - 1.0, 0.0), scores.shape)
    order = np.argsort(np.where(mask, -scores, np.inf), axis=-1, kind="stable")
    dcg = np.sum(np.take_along_axis(gain, order, axis=-1) * discount, axis=-1)
    idcg = np.sum(-np.sort(-gain, axis=-1) * discount, axis=-1)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


def ranx_inputs(scores, labels, mask):
    """ranx Qrels (every judged doc, grade 0 included) and Run from padded arrays."""
    from ranx import Qrels, Run

    qrels, run = {}, {}
    for q in range(labels.shape[0]):
        docs = np.flatnonzero(mask[q])
        qrels[f"q{q:04d}"] = {f"d{d}": int(labels[q, d]) for d in docs}
        run[f"q{q:04d}"] = {f"d{d}": float(scores[q, d]) for d in docs}
    return Qrels(qrels), Run(run)


def bench_ndcg(partitions, repeats):
    parsed = [parse_svmlight(p) for p in partitions]
    fields = ("features", "labels", "qids")
    batch = pad_queries(ragged_queries(SVMLightData(*(np.concatenate([getattr(d, f) for d in parsed]) for f in fields), None)))
    labels, mask = np.asarray(batch.labels), np.asarray(batch.mask)  # one L: the bucket of the longest query
    num_queries, list_size = labels.shape
    rng = np.random.default_rng(0)
    # Tie-free scores: a random permutation of 0..L-1 per query (exact in float32).
    scores = rng.permuted(np.tile(np.arange(list_size, dtype=np.float32), (num_queries, 1)), axis=1)
    many = rng.random((BATCH, num_queries, list_size), dtype=np.float32)

    one_args = tuple(jnp.asarray(a) for a in (scores, labels, mask))
    many_args = (jnp.asarray(many),) + one_args[1:]

    def compiled(fn, args):
        """``jax.jit(fn)`` traced and compiled ahead of time for ``args``, and the time that took in ms."""
        start = time.perf_counter()
        program = jax.jit(fn).lower(*args).compile()
        return program, 1e3 * (time.perf_counter() - start)

    jit_one, compile_one = compiled(lambda s, l, m: ndcg(s, l, where=m, topn=TOPN, reduce_fn=None), one_args)
    jit_many, compile_many = compiled(jax.vmap(lambda s, l, m: ndcg(s, l, where=m, topn=TOPN),
                                               in_axes=(0, None, None)), many_args)
    per_query = {"jaxrank": np.asarray(jit_one(*one_args)), "numpy": numpy_ndcg(scores, labels, mask, TOPN)}
    means_many = np.asarray(jit_many(*many_args))
    assert np.allclose(means_many, numpy_ndcg(many, labels, mask, TOPN).mean(-1), atol=1e-5)  # no empty query

    one, lots = num_queries, BATCH * num_queries
    rows = [  # (name, ms, lists per call or None for one-off costs)
        ("NumPy reference (padded, vectorised)",
         median_ms(lambda _: numpy_ndcg(scores, labels, mask, TOPN), repeats, number=10), one),
        ("jaxrank `ndcg` jitted", median_ms(lambda _: jit_one(*one_args).block_until_ready(), repeats, number=10), one),
        ("jaxrank `ndcg`: trace + compile (once)", compile_one, None),
        (f"NumPy reference, {BATCH} score vectors per query",
         median_ms(lambda _: numpy_ndcg(many, labels, mask, TOPN), repeats), lots),
        (f"jaxrank `vmap(ndcg)` jitted, {BATCH} score vectors per query",
         median_ms(lambda _: jit_many(*many_args).block_until_ready(), repeats), lots),
        ("jaxrank `vmap(ndcg)`: trace + compile (once)", compile_many, None),
    ]
    try:
        from ranx import evaluate
    except ImportError:
        print("ranx is not installed (pip install ranx): no ranx rows.")
    else:
        metric = f"ndcg_burges@{TOPN}"  # exponential gain; ranx's "ndcg" is the linear-gain one
        start = time.perf_counter()
        qrels, run = ranx_inputs(scores, labels, mask)
        build = 1e3 * (time.perf_counter() - start)
        start = time.perf_counter()
        with warnings.catch_warnings():  # a numba type-safety warning raised while ranx compiles
            warnings.simplefilter("ignore")
            evaluate(qrels, run, metric)  # numba compile (or load from its disk cache); stores per-query scores
        first = 1e3 * (time.perf_counter() - start)
        per_query["ranx"] = np.array(list(run.scores[metric].values()))  # qids q0000.. sort in row order
        rows[1:1] = [
            (f"ranx `evaluate(qrels, run, '{metric}')`",
             median_ms(lambda _: evaluate(qrels, run, metric, save_results_in_run=False), repeats, number=10), one),
            ("ranx: building Qrels + Run from dicts (once)", build, None),
            ("ranx: first `evaluate` call, numba compile or cache load (once)", first, None),
        ]

    max_diff = {k: float(np.max(np.abs(per_query["jaxrank"] - v))) for k, v in per_query.items() if k != "jaxrank"}
    assert max(max_diff.values()) < 1e-5, max_diff
    numpy_ms = {n: ms for name, ms, n in rows if name.startswith("NumPy")}  # the reference per batch size
    table = [(name, ms, f"{n / ms * 1e3:,.0f}", f"{ms / numpy_ms[n]:.2f}") if n else (name, ms, "", "")
             for name, ms, n in rows]
    means = {k: float(v.mean()) for k, v in per_query.items()}
    return num_queries, list_size, means, max_diff, table


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per row; the median is reported")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/MQ2008",
                        help="the MQ2008 folder (Fold1/train.txt.gz and S1..S5.txt.gz)")
    parser.add_argument("--json", help="write the figures to this JSON file")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]

    print(f"Machine: {platform.machine()} {platform.system()}, {os.cpu_count()} cores "
          f"(load average {os.getloadavg()[0]:.2f}), Python {platform.python_version()}, "
          f"jax {jax.__version__} ({jax.default_backend()} backend), jaxrank {jaxrank.__version__}; "
          f"median of {args.repeats} runs.\n")

    num_docs, parse_rows = bench_parsing(args.data / "Fold1" / "train.txt.gz", args.repeats)
    print(f"### Parsing MQ2008 Fold1/train.txt.gz ({num_docs:,} docs)\n")
    print("| loader | ms | ratio vs sklearn |\n|---|---:|---:|")
    for name, ms, ratio in parse_rows:
        print(f"| {name} | {ms:.1f} | {ratio:.2f} |")

    num_queries, list_size, values, max_diff, ndcg_rows = bench_ndcg(
        [args.data / f"S{i}.txt.gz" for i in range(1, 6)], args.repeats)
    print(f"\n### NDCG@{TOPN}, all {num_queries} MQ2008 queries padded to L={list_size}, random tie-free scores\n")
    print("| implementation | ms | lists/s | time vs NumPy |\n|---|---:|---:|---:|")
    for name, ms, rate, ratio in ndcg_rows:
        print(f"| {name} | {ms:.2f} | {rate} | {ratio} |")
    print(f"\nMean NDCG@{TOPN}: " + ", ".join(f"{k} {v:.6f}" for k, v in values.items())
          + "; max per-query |jaxrank - x|: " + ", ".join(f"{k} {v:.1e}" for k, v in max_diff.items()))
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        rows = [{"task": f"parse MQ2008 Fold1/train.txt.gz ({num_docs:,} docs)", "implementation": name, "ms": ms,
                 "time_vs_reference": ratio} for name, ms, ratio in parse_rows]
        rows += [{"task": f"NDCG@{TOPN}, {num_queries} queries padded to L={list_size}", "implementation": name, "ms": ms,
                  "lists_per_s": float(rate.replace(",", "")) if rate else None,
                  "time_vs_reference": float(ratio) if ratio else None} for name, ms, rate, ratio in ndcg_rows]
        numpy_ms = {r["implementation"]: r["ms"] for r in rows}
        reference = [{"what": "parse: scikit-learn load_svmlight_file's time over jaxrank parse_svmlight's",
                      "ratio": parse_rows[0][1] / parse_rows[1][1]},
                     {"what": f"NDCG@{TOPN}: the NumPy reference's time over jaxrank's jitted ndcg",
                      "ratio": numpy_ms["NumPy reference (padded, vectorised)"] / numpy_ms["jaxrank `ndcg` jitted"]}]
        ranx = [r for r in rows if r["implementation"].startswith("ranx `evaluate")]
        if ranx:
            reference.append({"what": f"NDCG@{TOPN}: ranx evaluate's time over jaxrank's jitted ndcg",
                              "ratio": ranx[0]["ms"] / numpy_ms["jaxrank `ndcg` jitted"]})
        write_json(args.json, __file__, rows=rows, reference=reference, load_start=load_start,
                   figures={"repeats": args.repeats, "mean_ndcg": values, "max_abs_diff_per_query": max_diff})


if __name__ == "__main__":
    main()
