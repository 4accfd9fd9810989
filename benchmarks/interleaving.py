"""Interleaving throughput: the RCS paper's P estimate (80,000 probabilistic-interleave comparisons
per pair, K = 10 single-feature rankers, 5-grade perfect cascade clicks) on the MSLR subset.

    python benchmarks/interleaving.py [--data ../shared/data] [--comparisons 80000] [--method probabilistic]
                                       [--json PATH]

Prints the machine, wall time and comparisons/s (compile included; the run prints its rate after
compile as it goes), and a Markdown table; ``--json`` writes the same figures.
"""

import argparse
import os
import platform
import time
from pathlib import Path

import jax

from jaxrank import data, envs
from jaxrank.clicks import cascade_model
from jaxrank.envs.estimate import estimate_wins
from jaxrank.envs.ranker_duel import paper_feature_ids, single_feature_rankers

REPO = Path(__file__).resolve().parents[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--comparisons", type=int, default=80_000)
    parser.add_argument("--num-arms", type=int, default=10)
    parser.add_argument("--method", default="probabilistic", choices=("probabilistic", "team_draft"))
    parser.add_argument("--chunk-size", type=int, default=1 << 16)
    parser.add_argument("--json", help="write the figures to this JSON file")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"jax {jax.__version__} ({jax.default_backend()})")
    start = time.perf_counter()
    queries = data.load_queries(Path(args.data) / "MSLR-WEB_Fold1_subset" / "msn1.fold1.train.5k.txt.gz",
                                layout="ragged")
    load_seconds = time.perf_counter() - start
    ids = paper_feature_ids(queries.num_features, args.num_arms)
    start = time.perf_counter()
    est = estimate_wins(jax.random.key(0), queries, single_feature_rankers(ids, queries.num_features),
                        cascade_model("perfect", 5), args.method, args.comparisons, chunk_size=args.chunk_size)
    wall = time.perf_counter() - start
    total = int(est.counts.sum() // 2)
    winner = envs.condorcet_winner(est.pref)
    print(f"\nMSLR subset: {queries.num_queries} queries, {queries.num_documents} documents "
          f"(longest {queries.list_size}), features {ids}; Condorcet winner: {'none' if winner is None else 'feature ' + str(ids[winner])}\n")
    print("| step | value |\n|---|---:|")
    print(f"| load the MSLR subset (cached parse) | {load_seconds:.2f} s |")
    print(f"| comparisons ({args.num_arms * (args.num_arms - 1) // 2} pairs x {args.comparisons:,}) | {total:,} |")
    print(f"| comparisons (compile included, rankings excluded) | {est.seconds:.2f} s |")
    print(f"| comparisons/s (compile included) | {total / est.seconds:,.0f} |")
    print(f"| total wall time (rankings, compile, run) | {wall:.2f} s |")
    print(f"| tie fraction (coin flips) | {est.ties.sum() / est.counts.sum():.3f} |")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        write_json(args.json, __file__, load_start=load_start, rows=[{
            "method": args.method, "rankers": args.num_arms, "comparisons": total, "load_s": load_seconds,
            "comparisons_s": float(est.seconds), "comparisons_per_s": total / float(est.seconds), "wall_s": wall}],
            figures={"queries": queries.num_queries, "documents": queries.num_documents,
                     "longest_list": queries.list_size, "feature_ids": [int(i) for i in ids],
                     "condorcet_winner_feature": None if winner is None else int(ids[winner]),
                     "tie_fraction": float(est.ties.sum() / est.counts.sum())})


if __name__ == "__main__":
    main()
