"""Online learning to rank throughput: the PDGD paper's MQ2008 study (DBGD, MGD, PDGD × 3 cascade
click models × 5 folds × 25 runs × 10,000 impressions), each learner's lanes in one compiled
program, against the NumPy reference loops of ``tests/reference/oltr.py`` per impression.

    python benchmarks/oltr.py [--data ../shared/data] [--impressions 10000] [--runs 25]
                              [--reference-impressions 100] [--json PATH]

Prints the machine, compile and run time per learner, impressions/s, the whole study's wall time
and the ratio against the reference (one lane, same data, per impression), and a Markdown table.
"""

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from experiments.oltr import Config, lane_keys, load_folds, make_ranker, stack_folds, timed_grid  # noqa: E402
from jaxrank import oltr  # noqa: E402
from jaxrank.clicks import cascade_model  # noqa: E402
from tests.reference import oltr as ref  # noqa: E402

MODELS = ("perfect", "navigational", "informational")


def _reference_rate(name, config, queries, num_impressions, seed=0):
    """Impressions/s of the NumPy reference learner on one lane (numpy draws, same laws)."""
    rng = np.random.default_rng(seed)
    model = tuple(np.asarray(v, np.float64) for v in cascade_model("navigational", 3))
    lengths = np.diff(queries.offsets)
    w = np.zeros(queries.num_features)
    start = time.perf_counter()
    for _ in range(num_impressions):
        q = rng.integers(queries.num_queries)
        lo, n = queries.offsets[q], lengths[q]
        x, y = np.asarray(queries.features[lo:lo + n], np.float64), queries.labels[lo:lo + n].tolist()
        draws = dict(u_click=rng.uniform(size=10), u_stop=rng.uniform(size=10))
        if name == "pdgd":
            w, _ = ref.pdgd_impression(w, x, y, {**draws, "gumbel": rng.gumbel(size=n)}, model,
                                       learning_rate=config.pdgd_learning_rate)
        elif name == "dbgd":
            w, _ = ref.dbgd_impression(w, x, y, {**draws, "normal": rng.normal(size=x.shape[1]),
                                                 "order_u": rng.uniform(size=(5, 2))}, model,
                                       learning_rate=config.dbgd_learning_rate, delta=config.dbgd_delta,
                                       interleaving="team_draft")
        else:
            k = config.mgd_candidates + 1
            w, _ = ref.mgd_impression(w, x, y, {**draws, "normal": rng.normal(size=(k - 1, x.shape[1])),
                                                "order_u": rng.uniform(size=(-(-10 // k), k))}, model,
                                      learning_rate=config.mgd_learning_rate, delta=config.mgd_delta)
    return num_impressions / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--impressions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--reference-impressions", type=int, default=100)
    parser.add_argument("--learners", default="dbgd,mgd,pdgd")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, jax {jax.__version__} ({jax.default_backend()})")
    print(machine)
    config = dataclasses.replace(Config(), dataset=str(Path(args.data) / "MQ2008"), num_runs=args.runs,
                                 num_impressions=args.impressions, click_models=MODELS)
    _, _, folds = load_folds(config)  # the study's own folds (train, test), as the experiment loads them
    train, test, _ = stack_folds(folds, config.folds)
    models = jax.tree.map(lambda *x: jnp.stack(x), *[cascade_model(m, 3) for m in MODELS])
    keys = lane_keys(config.seed, config.folds, len(MODELS), args.runs)
    checkpoints = oltr.log_checkpoints(args.impressions, config.num_checkpoints)
    lanes = keys.size
    rows = {}
    for name in args.learners.split(","):
        out, compile_s, run_s = timed_grid(make_ranker(name, config), keys, train, test, models,
                                           checkpoints=checkpoints, discount=config.discount)
        rate = lanes * args.impressions / run_s
        ref_rate = _reference_rate(name, config, folds[1][0], args.reference_impressions)
        rows[name] = {"compile_s": round(compile_s, 2), "run_s": round(run_s, 2), "impressions_per_s": round(rate),
                      "reference_impressions_per_s": round(ref_rate, 1), "ratio": round(rate / ref_rate, 1),
                      "final_offline_mean": round(float(np.asarray(out.offline)[..., -1].mean()), 4)}
        print(f"{name}: {rows[name]}", flush=True)
    total = sum(r["compile_s"] + r["run_s"] for r in rows.values())
    comparison = "team-draft" if config.comparison == "team_draft" else config.comparison
    print(f"\nMQ2008: 5 folds x 3 click models x {args.runs} runs = {lanes} lanes x {args.impressions:,} impressions "
          f"per learner; DBGD/MGD {comparison}, MGD {config.mgd_candidates} candidates.\n")
    print("| learner | compile | run | impressions/s | NumPy reference impressions/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        print(f"| {name.upper()} | {r['compile_s']:.1f} s | {r['run_s']:.1f} s | {r['impressions_per_s']:,} | "
              f"{r['reference_impressions_per_s']:,.1f} | {r['ratio']:,.0f}x |")
    print(f"\nwhole study (compile + run, all learners): {total:.1f} s")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        write_json(args.json, __file__, rows=[{"learner": name.upper(), **r} for name, r in rows.items()],
                   reference=[{"what": f"{name.upper()}: jaxrank ({lanes} lanes) over the NumPy reference loop (one lane), "
                               "impressions/s", "ratio": r["ratio"]} for name, r in rows.items()],
                   figures={"lanes": lanes, "impressions": args.impressions, "comparison": config.comparison,
                            "mgd_candidates": config.mgd_candidates, "whole_study_s": round(total, 1)})


if __name__ == "__main__":
    main()
