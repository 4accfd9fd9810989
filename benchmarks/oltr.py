"""Online learning to rank throughput: the PDGD paper's MQ2008 study (DBGD, MGD, PDGD × 3 cascade
click models × 5 folds × 25 runs × 10,000 impressions), each learner's lanes in one compiled
program, against the NumPy reference loops of ``tests/reference/oltr.py`` per impression.

    python benchmarks/oltr.py [--data ../shared/data] [--impressions 10000] [--runs 25]
                              [--learners dbgd,mgd,pdgd,pdgd:neural] [--reference-impressions 100] [--json PATH]

A learner ``name:model`` runs ``name`` with the scoring model ``model`` (``jaxrank.oltr.scorers``:
``neural`` is the paper's 64 sigmoid units; no NumPy reference rate for it).

Prints the machine, compile and run time per learner, impressions/s, the whole study's wall time
and the ratio against the reference (one lane, same data, per impression), and a Markdown table.
"""

import argparse
import functools
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

from experiments.oltr import Config, ranker_settings  # noqa: E402  (the study's settings of each row)
from jaxrank import data, lanes, oltr  # noqa: E402
from jaxrank.clicks import cascade_model  # noqa: E402
from tests.reference import oltr as ref  # noqa: E402

MODELS = ("perfect", "navigational", "informational")
NUM_CHECKPOINTS = 16


def timed_grid(ranker, hparams, keys, train, test, models, *, checkpoints):
    """The grid's lanes as one ``jit(vmap(lanes.lane))`` program, compiled then run:
    ``(output, compile seconds, run seconds)``."""
    chunks = jax.tree.map(jnp.asarray, oltr.stretches(checkpoints))
    study = oltr.study(ranker, num_checkpoints=len(checkpoints))
    flat_keys, lane_data = oltr.grid_lanes(keys, models)
    hp = {k: jnp.float32(v) for k, v in hparams.items()}
    program = jax.jit(jax.vmap(functools.partial(lanes.lane, study), in_axes=(0, None, None, 0, None)))
    start = time.perf_counter()
    compiled = program.lower(flat_keys, hp, (train, test), lane_data, chunks).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(flat_keys, hp, (train, test), lane_data, chunks))
    return out, compile_s, time.perf_counter() - start


def _reference_rate(name, options, hparams, queries, num_impressions, seed=0):
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
                                       learning_rate=hparams["learning_rate"])
        elif name == "dbgd":
            w, _ = ref.dbgd_impression(w, x, y, {**draws, "normal": rng.normal(size=x.shape[1]),
                                                 "order_u": rng.uniform(size=(5, 2))}, model,
                                       learning_rate=hparams["learning_rate"], delta=hparams["delta"],
                                       interleaving=options["interleaving"])
        else:
            k = options["num_candidates"] + 1
            w, _ = ref.mgd_impression(w, x, y, {**draws, "normal": rng.normal(size=(k - 1, x.shape[1])),
                                                "order_u": rng.uniform(size=(-(-10 // k), k))}, model,
                                      learning_rate=hparams["learning_rate"], delta=hparams["delta"],
                                      multileaving=options["multileaving"])
    return num_impressions / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--impressions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--reference-impressions", type=int, default=100)
    parser.add_argument("--learners", default="dbgd,mgd,pdgd",
                        help="rows of the oltr experiment, comma-separated (e.g. pdgd,pdgd_neural,pairwise)")
    parser.add_argument("--comparisons", default="team_draft", choices=("team_draft", "probabilistic"),
                        help="DBGD / MGD comparisons (the oltr experiment's option of the same name)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, jax {jax.__version__} ({jax.default_backend()})")
    print(machine)
    folds = {k: data.load_fold(Path(args.data) / "MQ2008", k)[::2] for k in range(1, 6)}  # (train, test)
    train, test, _ = oltr.stack_folds(folds, range(1, 6))
    models = jax.tree.map(lambda *x: jnp.stack(x), *[cascade_model(m, 3) for m in MODELS])
    keys = oltr.lane_keys(0, range(1, 6), len(MODELS), args.runs)
    checkpoints = oltr.log_checkpoints(args.impressions, NUM_CHECKPOINTS)
    num_lanes = keys.size
    rows, settings = {}, {}
    study = ranker_settings(Config(learners=tuple(args.learners.split(",")), comparisons=args.comparisons))
    for name, (ranker_name, options, hparams) in study.items():
        settings[name] = options, hparams
        out, compile_s, run_s = timed_grid(oltr.RANKERS.build(ranker_name, **options), hparams, keys, train, test,
                                           models, checkpoints=checkpoints)
        rate = num_lanes * args.impressions / run_s
        ref_rate = (_reference_rate(ranker_name, options, hparams, folds[1][0], args.reference_impressions)
                    if options.get("model", "linear") == "linear" else None)
        rows[name] = {"compile_s": round(compile_s, 2), "run_s": round(run_s, 2), "impressions_per_s": round(rate),
                      "reference_impressions_per_s": round(ref_rate, 1) if ref_rate else None,
                      "ratio": round(rate / ref_rate, 1) if ref_rate else None,
                      "final_offline_mean": round(float(np.asarray(out.offline)[..., -1].mean()), 4)}
        print(f"{name}: {rows[name]}", flush=True)
    total = sum(r["compile_s"] + r["run_s"] for r in rows.values())
    options = {name: o for name, (o, _) in settings.items()}
    print(f"\nMQ2008: 5 folds x 3 click models x {args.runs} runs = {num_lanes} lanes x {args.impressions:,} "
          f"impressions per learner; options {options}.\n")
    print("| learner | compile | run | impressions/s | NumPy reference impressions/s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        ref = (f"{r['reference_impressions_per_s']:,.1f} | {r['ratio']:,.0f}x" if r["ratio"] is not None
               else "n/a | n/a")
        print(f"| {name.upper()} | {r['compile_s']:.1f} s | {r['run_s']:.1f} s | {r['impressions_per_s']:,} | {ref} |")
    print(f"\nwhole study (compile + run, all learners): {total:.1f} s")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        write_json(args.json, __file__, rows=[{"learner": name.upper(), **r} for name, r in rows.items()],
                   reference=[{"what": f"{name.upper()}: jaxrank ({num_lanes} lanes) over the NumPy reference loop "
                               "(one lane), "
                               "impressions/s", "ratio": r["ratio"]} for name, r in rows.items()
                              if r["ratio"] is not None],
                   figures={"lanes": num_lanes, "impressions": args.impressions,
                            "settings": {n: {"options": o, "hparams": h} for n, (o, h) in settings.items()},
                            "whole_study_s": round(total, 1)})


if __name__ == "__main__":
    main()
