"""Sharded dueling-bandit throughput on 1, 2 and 4 host CPU devices, and the cost of checkpoints.

    python benchmarks/sharding.py [--data ../shared/data] [--devices 1,2,4] [--arms 10] [--runs 96] [--steps 50000] [--json PATH]

Each device count runs in a fresh process with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
(the flag is read when jax starts). In it, ``jaxrank.bandits.run_sweep`` runs RCS (K = ``--arms``,
MSLR-Perfect's paper rankers; 136 is the whole matrix; alpha = 0.501) with the runs sharded over
all N devices, twice:
the first call compiles, the second is timed; then once more with a checkpoint written after every
chunk. Forced host devices share the machine's cores, so the speed-up is bounded by the core
count (and by whatever else runs on them). Every device count must give the same regret, bit for bit.
``--json PATH`` writes the rows (and the machine, its load average) to ``PATH``.
"""

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _child(args):
    import jax

    from jaxrank import bandits, envs
    from jaxrank.data import load_preference_matrix

    full = load_preference_matrix(Path(args.data) / "preference_matrices" / "MSLR-Perfect.txt")
    pref, _ = envs.select_rankers(full, args.arms)
    run = lambda **kw: bandits.run_sweep(jax.random.key(0), "rcs", pref, num_runs=args.runs,
                                     num_steps=args.steps, hparams={"alpha": [0.501]}, **kw)
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    start = time.perf_counter()
    trace = run()
    elapsed = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        run(checkpoint_dir=folder)
        with_checkpoints = time.perf_counter() - start
    print(json.dumps({"devices": jax.device_count(), "rate": args.runs * args.steps / elapsed,
                      "compile_s": first - elapsed, "checkpointed_rate": args.runs * args.steps / with_checkpoints,
                      "regret_sha256": hashlib.sha256(trace.regret.tobytes()).hexdigest()}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--devices", default="1,2,4")
    parser.add_argument("--arms", type=int, default=10, help="rankers K (136: the whole matrix)")
    parser.add_argument("--runs", type=int, default=96)
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    machine, load_start = f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}", os.getloadavg()[0]
    print(f"machine: {machine}, load average {load_start:.1f} at start\n")
    rows = []
    for n in (int(d) for d in args.devices.split(",")):
        env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={n}")
        done = subprocess.run([sys.executable, __file__, "--child", f"--data={args.data}", f"--arms={args.arms}",
                               f"--runs={args.runs}", f"--steps={args.steps}"], cwd=REPO, env=env, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    base = rows[0]["rate"]
    print(f"RCS, K={args.arms}, {args.runs} runs x {args.steps:,} steps, runs sharded over N host CPU devices\n")
    print("| devices | run-steps/s | vs 1 device | compile s | run-steps/s with a checkpoint per chunk | same regret |")
    print("|---:|---:|---:|---:|---:|---|")
    for row in rows:
        same = "yes" if row["regret_sha256"] == rows[0]["regret_sha256"] else "NO"
        print(f"| {row['devices']} | {row['rate']:,.0f} | {row['rate'] / base:.2f}x | {row['compile_s']:.1f} | "
              f"{row['checkpointed_rate']:,.0f} | {same} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        for row in rows:
            row["speedup"] = row["rate"] / base
            row["same_regret_as_1_device"] = row["regret_sha256"] == rows[0]["regret_sha256"]
        write_json(args.json, __file__, rows=[{k: v for k, v in r.items() if k != "regret_sha256"} for r in rows],
                   load_start=load_start, figures=dict(algorithm="rcs", arms=args.arms, runs=args.runs, steps=args.steps,
                                                       regret_sha256=rows[0]["regret_sha256"]))


if __name__ == "__main__":
    main()
