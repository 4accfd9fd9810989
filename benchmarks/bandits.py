"""Dueling-bandit throughput: jaxrank vs duelpy (run by run) vs NumPy vectorised over runs.

    pip install -e ".[bench]" duelpy
    python benchmarks/bandits.py [--data ../shared/data] [--skip-duelpy] [--skip-experiment] [--json PATH]
    python benchmarks/bandits.py --samplers-only   # the Beta sampler, Self-Sparring and Sparring-TS rows

Measures, on the paper's MSLR-Perfect rankers (feature ids sorted as strings, first K):
  * RCS, K = 10, 90 runs x 50,000 steps after compile (and the compile time);
  * duelpy's ``RelativeConfidenceSampling`` on one run, and an RCS written with NumPy that runs
    all 90 runs in lockstep (naive Beta tournament), both in this same process, with jaxrank's
    speed-up over each;
  * RCS at K = 40, RUCB at K = 10, and every registered bandit on the whole 136-ranker matrix
    (90 runs; fewer steps for the bandits whose step is O(K^2)); peak resident memory;
  * the Beta sampler alone (``jaxrank.utils.beta.beta_sample``: Beta draws per second, 90 lanes of
    2 x 136 draws, as many as a Self-Sparring or Sparring-TS step makes) and its uniforms alone, the
    physical limit of those two bandits: run-steps/s <= Beta draws/s / (2 K);
  * the whole ``rcs_regret`` default config (all real matrices, RCS + RUCB) wall time, with an
    empty persistent compilation cache and again with the cache it filled.

"compile s" is the first call's time minus the second call's (the same program, already compiled).
``--json PATH`` writes every figure, with the machine and its load average, to ``PATH``.
"""

import argparse
import functools
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import bandits, envs
from jaxrank.data import load_preference_matrix

REPO = Path(__file__).resolve().parents[1]


def _jaxrank_rate(algo, pref, num_runs, num_steps, hparams, options=None):
    """Run-steps/s after compile (the median of three timed calls when one takes under 10 s: two
    XLA:CPU threads make short runs vary), and the compile time (first call minus a timed one)."""
    run = lambda: bandits.run_sweep(jax.random.key(0), algo, pref, num_runs=num_runs, num_steps=num_steps,
                                    hparams=hparams, options=options, checkpoints=[num_steps // 2, num_steps])
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    times = []
    while len(times) < (3 if not times or times[0] < 10.0 else 1):
        start = time.perf_counter()
        trace = run()
        times.append(time.perf_counter() - start)
    elapsed = float(np.median(times))
    return num_runs * num_steps / elapsed, first - elapsed, float(trace.regret[0, 0, :, -1].mean())


def _duelpy_rate(pref, num_steps):
    np.float, np.infty = float, np.inf  # duelpy 1.0 still uses the removed aliases
    from duelpy.algorithms import RelativeConfidenceSampling
    from duelpy.feedback import MatrixFeedback

    rs = np.random.RandomState(0)
    algo = RelativeConfidenceSampling(MatrixFeedback(pref, random_state=rs), num_steps, random_state=rs,
                                      exploratory_constant=0.501)
    start = time.perf_counter()
    algo.run()
    return num_steps / (time.perf_counter() - start)


def _numpy_rcs_rate(pref, num_runs, num_steps, alpha=0.501, seed=0):
    """RCS (paper Algorithm 1) with NumPy, all runs advanced together each step."""
    rng = np.random.default_rng(seed)
    k = pref.shape[0]
    runs = np.arange(num_runs)
    iu = np.triu_indices(k, 1)
    wins = np.zeros((num_runs, k, k))
    counts = np.zeros((num_runs, k))
    start = time.perf_counter()
    for t in range(1, num_steps + 1):
        theta = np.full((num_runs, k, k), 0.5)
        upper = rng.beta(wins[:, iu[0], iu[1]] + 1, wins[:, iu[1], iu[0]] + 1)
        theta[:, iu[0], iu[1]] = upper
        theta[:, iu[1], iu[0]] = 1 - upper
        beats_all = (theta >= 0.5).all(axis=2)
        fallback = np.argmin(counts + 0.5 * rng.random((num_runs, k)), axis=1)
        champion = np.where(beats_all.any(1), beats_all.argmax(1), fallback)
        counts[runs, champion] += 1
        w_jc = wins[runs, :, champion]
        n = w_jc + wins[runs, champion, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.where(n > 0, w_jc / n, 1.0) + np.sqrt(np.where(n > 0, alpha * np.log(t) / n, 1.0))
        u[runs, champion] = 0.5
        opponent = np.argmax(u + 1e-9 * rng.random((num_runs, k)), axis=1)
        won = rng.random(num_runs) < pref[champion, opponent]
        wins[runs, np.where(won, champion, opponent), np.where(won, opponent, champion)] += 1
    return num_runs * num_steps / (time.perf_counter() - start)


# Steps per run at K = 136 (90 runs): the O(K) steps run the paper's 20k; the O(K^2) ones fewer.
STEPS_136 = {"rcs": 20_000, "merge_rucb": 20_000, "interleaved_filter": 20_000, "rucb": 2_000, "savage": 2_000,
             "dts": 1_000, "rmed": 2_000, "beat_the_mean": 2_000, "ccb": 2_000, "scb": 2_000, "merge_dts": 20_000,
             "sparring": 20_000, "self_sparring": 20_000, "rex3": 20_000, "sparring@ts": 20_000}
HORIZON_HPARAMS = ("savage", "interleaved_filter", "beat_the_mean", "rex3")
# The MergeDTS authors' tuned settings (their individual_run.py): MergeDTS M = 16 needs 24 slots.
TUNED_136 = {"merge_dts": (bandits.merge_dts.TUNED, bandits.merge_dts.TUNED_OPTIONS),
             "merge_rucb": (bandits.merge_rucb.TUNED, {})}


BETA_SHAPES = {
    # integer shapes <= 4 only: sums of exponentials, never rejected, so the redraw loop takes no trip
    "counts <= 3": (1, 5, 1, 5),
    # a in 1..20, b in 1..200: mostly Marsaglia-Tsang, with a redraw trip on most steps of 90 lanes
    "counts to 200": (1, 21, 1, 201),
}


def _beta_rates(num_lanes: int, num_draws: int, num_steps: int) -> dict:
    """Draws/s of the Beta sampler for each of ``BETA_SHAPES``, and of its uniforms alone: ``num_lanes``
    lanes each drawing ``num_draws`` Betas a step (8 uniforms each) for ``num_steps`` steps, after
    compile (median of three), the shapes integer and fixed per entry as a bandit's win and loss
    counts + 1. The sampler evaluates both the exponential-sum and the Marsaglia-Tsang path for
    every entry, so only the redraw loop's trips depend on the shapes."""
    from jaxrank.utils.beta import beta_sample, uniforms

    keys = jax.vmap(lambda r: jax.random.fold_in(jax.random.key(0), r))(jnp.arange(num_lanes))

    def lane(key, a, b, sample):
        def body(t, acc):
            key_t = jax.random.fold_in(key, t)
            u = uniforms(key_t, 8 * num_draws)
            if not sample:
                return acc + jnp.max(u)
            return acc + jnp.max(beta_sample(jax.random.fold_in(key_t, 1), u, a, b))

        return jax.lax.fori_loop(0, num_steps, body, jnp.zeros(()))

    rng = np.random.default_rng(0)
    rates = {}
    for name, (a_low, a_high, b_low, b_high) in [*BETA_SHAPES.items(), ("uniforms alone", (1, 2, 1, 2))]:
        a = jnp.asarray(rng.integers(a_low, a_high, (num_lanes, num_draws)), jnp.float32)
        b = jnp.asarray(rng.integers(b_low, b_high, (num_lanes, num_draws)), jnp.float32)
        run = jax.jit(jax.vmap(functools.partial(lane, sample=name != "uniforms alone")))
        run(keys, a, b).block_until_ready()
        times = []
        for _ in range(3):
            start = time.perf_counter()
            run(keys, a, b).block_until_ready()
            times.append(time.perf_counter() - start)
        rates[name] = num_lanes * num_draws * num_steps / float(np.median(times))
    return rates


def _samplers(full, add) -> None:
    """The Beta sampler's rows and the two bandits it bounds at K = 136."""
    k = full.shape[0]
    rates = _beta_rates(90, 2 * k, 2_000)
    for name, rate in rates.items():
        what = "its uniforms alone (8 a draw)" if name == "uniforms alone" else f"Beta sampler alone, {name}"
        add(f"{what}, 90 lanes x {2 * k} draws a step", "beta_sample", k, 90, 2_000, rate / (2 * k), None,
            f"{rate:,.0f} draws/s; run-steps/s of {2 * k} draws a step", None)
    beta = rates["counts <= 3"]  # the sampler's fastest: no redraw trip
    for name, options in (("self_sparring", None), ("sparring", {"inner": "ts"})):
        steps = 20_000
        rate, compile_s, regret = _jaxrank_rate(name, full, 90, steps, None, options)
        label = "sparring@ts" if options else name
        add(f"jaxrank {label}, K={k}, 90 runs x {steps / 1000:g}k", label, k, 90, steps, rate, compile_s,
            f"regret {regret:.1f}; {rate * 2 * k / beta:.0%} of the Beta sampler's limit", regret)


def _hparams(name: str, num_steps: int):
    if name in ("rcs", "rucb", "dts"):
        return {"alpha": [0.501]}
    if name in HORIZON_HPARAMS:
        return {"horizon": [float(num_steps)]}
    return None


def _flagship(data: str, cache: str) -> float:
    """Wall seconds of ``launch.py --experiment=rcs_regret`` (defaults) with compilation cache ``cache``."""
    env = dict(os.environ, JAXRANK_DATA=data)
    start = time.perf_counter()
    subprocess.run([sys.executable, "launch.py", "--experiment=rcs_regret", "--workdir=/tmp/jaxrank-bench",
                    f"--compilation_cache={cache}"], cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--skip-duelpy", action="store_true")
    parser.add_argument("--skip-experiment", action="store_true")
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    parser.add_argument("--samplers-only", action="store_true", help="only the Beta sampler and the two "
                        "bandits it bounds (Self-Sparring, Sparring-TS) at K = 136")
    args = parser.parse_args()
    full = load_preference_matrix(Path(args.data) / "preference_matrices" / "MSLR-Perfect.txt")
    machine = (f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
               f"jax {jax.__version__} ({jax.default_backend()})")
    load_before = os.getloadavg()
    print(f"machine: {machine}; load average {load_before[0]:.2f}\n")
    rows = []

    def add(name, algorithm, k, runs, steps, rate, compile_s, note, regret=None):
        rows.append({"run": name, "algorithm": algorithm, "num_arms": k, "num_runs": runs, "num_steps": steps,
                     "run_steps_per_s": rate, "compile_s": compile_s, "regret": regret, "note": note})
        print(f"| {name} | {rate:,.0f} | {'' if compile_s is None else f'{compile_s:.1f}'} | {note} |", flush=True)

    print("| run | run-steps/s | compile s | note |\n|---|---:|---:|---|")
    if args.samplers_only:
        _samplers(full, add)
        if args.json:
            from report import write_json

            write_json(args.json, __file__, rows=rows, load_start=load_before[0])
        return
    alpha = {"alpha": [0.501]}
    p10, _ = envs.select_rankers(full, 10)
    rate, compile_s, regret = _jaxrank_rate("rcs", p10, 90, 50_000, alpha)
    add("jaxrank RCS, K=10, 90 runs x 50k", "rcs", 10, 90, 50_000, rate, compile_s, f"regret {regret:.1f}", regret)
    rcs_rate = rate
    ratios = {}
    if not args.skip_duelpy:
        rate = _duelpy_rate(p10, 20_000)
        ratios["jaxrank_over_duelpy"] = rcs_rate / rate
        add("duelpy RCS, K=10, one run x 20k", "rcs", 10, 1, 20_000, rate, None, f"jaxrank is {rcs_rate / rate:,.0f}x")
    rate = _numpy_rcs_rate(p10, 90, 2_000)
    ratios["jaxrank_over_numpy"] = rcs_rate / rate
    add("NumPy RCS vectorised over 90 runs, K=10, 2k steps", "rcs", 10, 90, 2_000, rate, None,
        f"jaxrank is {rcs_rate / rate:,.1f}x")
    rate, compile_s, regret = _jaxrank_rate("rucb", p10, 90, 50_000, alpha)
    add("jaxrank RUCB, K=10, 90 runs x 50k", "rucb", 10, 90, 50_000, rate, compile_s, f"regret {regret:.1f}", regret)
    p40, _ = envs.select_rankers(full, 40)
    rate, compile_s, regret = _jaxrank_rate("rcs", p40, 90, 50_000, alpha)
    add("jaxrank RCS, K=40, 90 runs x 50k", "rcs", 40, 90, 50_000, rate, compile_s, f"regret {regret:.1f}", regret)
    for name in bandits.ALGORITHMS:
        if name == "self_sparring":
            continue  # with the sampler's rows below
        steps = STEPS_136[name]
        rate, compile_s, regret = _jaxrank_rate(name, full, 90, steps, _hparams(name, steps))
        add(f"jaxrank {name}, K=136, 90 runs x {steps / 1000:g}k", name, 136, 90, steps, rate, compile_s,
            f"regret {regret:.1f}", regret)
    _samplers(full, add)
    for name, (tuned, options) in TUNED_136.items():
        steps = STEPS_136[name]
        rate, compile_s, regret = _jaxrank_rate(name, full, 90, steps, {k: [v] for k, v in tuned.items()}, options)
        m = int(tuned["partition_size"])
        add(f"jaxrank {name} tuned (M = {m}), K=136, 90 runs x {steps / 1000:g}k", name, 136, 90, steps, rate,
            compile_s, f"regret {regret:.1f}; {tuned} {options or ''}", regret)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak resident memory of this process: {peak_mb:,.0f} MB")

    flagship = None
    if not args.skip_experiment:
        with tempfile.TemporaryDirectory() as cache:
            cold, warm = _flagship(args.data, cache), _flagship(args.data, cache)
        flagship = {"cold_cache_s": cold, "warm_cache_s": warm}
        print(f"rcs_regret default config (all real matrices, RCS + RUCB, 90 x 50k), compile included: "
              f"{cold:.1f} s wall with an empty compilation cache, {warm:.1f} s with the cache it filled")
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        what = {"jaxrank_over_duelpy": "RCS, K=10: jaxrank (90 runs) over duelpy (one run), run-steps/s",
                "jaxrank_over_numpy": "RCS, K=10: jaxrank over NumPy vectorised over the 90 runs, run-steps/s"}
        write_json(args.json, __file__, rows=rows, load_start=load_before[0],
                   reference=[{"what": what[k], "ratio": v} for k, v in ratios.items()],
                   figures={"peak_rss_mb": peak_mb, "rcs_regret_wall_s": flagship})


if __name__ == "__main__":
    main()
