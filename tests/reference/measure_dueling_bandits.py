"""Measure the NumPy dueling-bandit references on MSLR-Perfect (K=10): regret, accuracy, speed.

    python -m tests.reference.measure_dueling_bandits [--runs 90] [--T 20000] [--workers 2] [--out f.npz]

Run r of algorithm a uses ``np.random.default_rng([seed, a, r])``. Prints, per algorithm, the mean
and 95% CI (mean ± 1.96·sd/√n) of cumulative regret at T, the accuracy and the fraction of non-(w, w)
comparisons at each checkpoint, and the steps per second of one sequential run.
"""

import argparse
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from tests.reference.dueling_bandits import RCS, RUCB, SAVAGE, condorcet_winner, select_rankers, simulate

ALGS = ("RCS", "RUCB", "SAVAGE")
DEFAULT_P = Path(__file__).resolve().parents[2].parent / "shared/data/preference_matrices/MSLR-Perfect.txt"


def _make(name, K, T, alpha):
    if name == "RCS":
        return RCS(K, alpha=alpha)
    if name == "RUCB":
        return RUCB(K, alpha=alpha)
    return SAVAGE(K, T)


def _one(args):
    name, a, r, P, T, alpha, checkpoints, seed = args
    rng = np.random.default_rng([seed, a, r])
    t0 = time.perf_counter()
    out = simulate(_make(name, P.shape[0], T, alpha), P, T, rng, checkpoints)
    dt = time.perf_counter() - t0
    return name, r, out["cum_regret"][-1], out["correct"], out["suboptimal_fraction"], T / dt


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default=str(DEFAULT_P))
    ap.add_argument("--K", type=int, default=10)
    ap.add_argument("--T", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=90)
    ap.add_argument("--alpha", type=float, default=0.501)
    ap.add_argument("--seed", type=int, default=2014)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--algs", default=",".join(ALGS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)

    P, ids = select_rankers(np.loadtxt(a.matrix), a.K)
    w = condorcet_winner(P)
    print(f"K={a.K} ids={ids} Condorcet winner = feature {ids[w]} (arm {w}); T={a.T} runs={a.runs}")
    checkpoints = sorted({c for c in (100, 1000, 2000, 5000, 10000, a.T) if c <= a.T})
    algs = a.algs.split(",")
    jobs = [(n, ALGS.index(n), r, P, a.T, a.alpha, checkpoints, a.seed) for n in algs for r in range(a.runs)]
    res = {n: [] for n in algs}
    with ProcessPoolExecutor(a.workers) as ex:
        for item in ex.map(_one, jobs):
            res[item[0]].append(item[1:])
    save = {}
    for n in algs:
        rows = sorted(res[n])
        reg = np.array([x[1] for x in rows])
        acc = np.array([x[2] for x in rows]).mean(axis=0)
        sub = np.array([x[3] for x in rows]).mean(axis=0)
        sps = np.array([x[4] for x in rows])
        half = 1.96 * reg.std(ddof=1) / math.sqrt(len(reg)) if len(reg) > 1 else float("nan")
        print(f"{n:7s} regret@T = {reg.mean():.1f} ± {half:.1f} (95% CI; sd {reg.std(ddof=1):.1f}, "
              f"median {np.median(reg):.1f}, min {reg.min():.1f}, max {reg.max():.1f}); "
              f"{np.median(sps):.0f} steps/s per run")
        for c, ac, s in zip(checkpoints, acc, sub):
            print(f"          t={c:6d} accuracy {ac:.3f}  non-(w,w) fraction {s:.3f}")
        save[f"{n}_regret"] = reg
        save[f"{n}_accuracy"] = acc
        save[f"{n}_suboptimal"] = sub
    if a.out:
        np.savez(a.out, checkpoints=np.array(checkpoints), **save)


if __name__ == "__main__":
    main()
