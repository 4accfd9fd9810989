"""Cumulative regret summed in plain float32 against the lane's compensated sum and the exact value
from play counts, on MSLR-Perfect (K = 136), at 10⁶ and 10⁷ steps.

    python benchmarks/regret_precision.py [--data ../shared/data] [--runs 1] [--rows rcs,...] [--json PATH]

Each run plays the same duels three ways at once: the sweep's lane (``jaxrank.bandits.lane``:
Kahan-compensated float32, reported in float64), a plain float32 running sum (the accumulator before
compensation), and ``[K, K]`` int32 play counts, whose product with the regret table in float64 is
the exact regret. Rows: RCS (α = 0.501) and the MergeDTS authors' tuned MergeRUCB and MergeDTS.
"""

import argparse
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import bandits, envs
from jaxrank.bandits import merge_dts, merge_rucb
from jaxrank.data import load_preference_matrix

ROWS = {
    "rcs": ("rcs", {}, {}),
    "merge_rucb@tuned": ("merge_rucb", {}, merge_rucb.TUNED),
    "merge_dts@tuned": ("merge_dts", merge_dts.TUNED_OPTIONS, merge_dts.TUNED),
}
CHECKPOINTS = (1_000_000, 10_000_000)


def measure(name: str, pref: np.ndarray, num_runs: int) -> dict:
    algo_name, options, hparams = ROWS[name]
    algo = bandits.ALGORITHMS.build(algo_name, **options)
    score = bandits.scoring(pref)
    env = envs.PrefMatrixEnv(jnp.asarray(pref, jnp.float32))
    num_arms = pref.shape[0]

    table32 = score.table

    def init_tracked(key, num_arms, **hp):  # the bandit's state, a plain float32 sum, play counts
        return algo.init(key, num_arms, **hp), jnp.zeros((), jnp.float32), jnp.zeros((num_arms, num_arms), jnp.int32)

    def step_tracked(key, state, env):
        inner, info = algo.step(key, state[0], env)
        cost = table32[info.first, info.second]
        return (inner, state[1] + cost, state[2].at[info.first, info.second].add(1)), info

    tracked = bandits.Bandit(init_tracked, step_tracked, lambda key, state: algo.best_arm(key, state[0]))

    def init(key):
        return bandits.lane.init_lane(key, tracked, num_arms, 1, **hparams)

    def advance(lane, start, stop):
        return bandits.lane.advance_segment(tracked, lane, (start, stop, 0), env, score)

    keys = jax.vmap(lambda r: jax.random.fold_in(jax.random.key(0), r))(jnp.arange(num_runs))
    carry = jax.jit(jax.vmap(init))(keys)
    step = jax.jit(jax.vmap(advance, in_axes=(0, None, None)), static_argnums=(1, 2))
    table = np.asarray(score.table, np.float64)
    out, start, begin = {}, 0, time.perf_counter()
    for stop in CHECKPOINTS:
        carry = step(carry, start, stop)
        lane = jax.device_get(carry)
        _, plain, counts = lane.state
        exact = np.einsum("rij,ij->r", counts.astype(np.int64), table)
        kahan = lane.rec_regret[:, 0].astype(np.float64) + lane.rec_regret_low[:, 0].astype(np.float64)
        out[str(stop)] = {"exact": exact.round(4).tolist(), "float32": plain.astype(np.float64).round(4).tolist(),
                          "kahan": kahan.round(4).tolist(),
                          "float32_rel_error": ((plain - exact) / exact).round(7).tolist(),
                          "kahan_rel_error": ((kahan - exact) / exact).tolist()}
        print(f"{name} T={stop:,}: exact {exact.round(1)}, float32 {plain.round(1)}, "
              f"rel. error float32 {((plain - exact) / exact).round(5)}, compensated {((kahan - exact) / exact)} "
              f"({time.perf_counter() - begin:.0f} s)", flush=True)
        start = stop
    return out


def rows_of(results: dict) -> list[dict]:
    """One flat row per (bandit, horizon, run), as ``report.write_json`` takes them."""
    rows = []
    for name, by_horizon in results.items():
        for horizon, r in by_horizon.items():
            for run, (exact, plain, kahan) in enumerate(zip(r["exact"], r["float32"], r["kahan"])):
                rows.append({"bandit": name, "num_steps": int(horizon), "run": run, "exact": exact,
                             "float32_sum": plain, "float32_rel_error": (plain - exact) / exact,
                             "compensated_sum": kahan, "compensated_rel_error": (kahan - exact) / exact})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    pref, _ = envs.select_rankers(load_preference_matrix(Path(args.data) / "preference_matrices" / "MSLR-Perfect.txt"), 136)
    results = {row: measure(row, pref, args.runs) for row in args.rows.split(",")}
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        write_json(args.json, __file__, rows=rows_of(results), load_start=load_start,
                   figures={"matrix": "MSLR-Perfect", "num_runs": args.runs})


if __name__ == "__main__":
    main()
