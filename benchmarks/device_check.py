"""Times every study of jaxrank at accelerator-sized shapes on the default backend, in one command.

``python benchmarks/device_check.py --json OUT.json [--scale 0.1]``: each study runs through the
lane runner (``jaxrank.lanes.run_lanes``) twice with the same shapes; the first call includes
tracing and compiling, the second is the steady rate. Shapes are chosen so the whole check takes
under 5 minutes on one GPU (``--scale`` shrinks the lane counts and lengths for a CPU dry run):

* bandit sweep: RCS and MergeDTS on a K = 136 Condorcet matrix, many runs as lanes (run-steps/s);
* OLTR grid: PDGD and team-draft MGD on MSLR-shaped synthetic queries, click models x runs as lanes
  (impressions/s);
* online protocol: SOLAR-I and SOLAR-II permutations as lanes on synthetic queries (pair steps/s);
* batch protocol: a SOLAR-I grid of C values x folds as lanes (pair steps/s);
* preference-matrix estimate: single-feature rankers, pairs as lanes (comparisons/s).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import write_json  # noqa: E402  (benchmarks/report.py: the JSON shape BENCHMARKS.md is built from)

from jaxrank import bandits, data, learners, oltr  # noqa: E402
from jaxrank.clicks import cascade_model  # noqa: E402
from jaxrank.envs import condorcet_matrix, single_feature_rankers  # noqa: E402
from jaxrank.envs.estimate import estimate_wins  # noqa: E402
from jaxrank.pairs import pairs_per_query  # noqa: E402
from jaxrank.learners.online import online_protocol  # noqa: E402
from jaxrank.learners.online.batch_protocol import batch_protocol  # noqa: E402


def _twice(fn):
    """``(first_s, second_s, result)``: one call that compiles, one that reuses the program (jit's
    cache for a study equal to the first, the persistent compilation cache otherwise)."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return first, time.perf_counter() - start, out


def _sized(x: float, scale: float, minimum: int = 1) -> int:
    return max(minimum, int(round(x * scale)))


def bandit_rows(scale: float) -> list[dict]:
    pref = np.asarray(condorcet_matrix(jax.random.key(0), 136))
    runs, steps = _sized(1024, scale, 8), _sized(50_000, scale, 1000)
    rows = []
    for name in ("rcs", "merge_dts"):
        first, second, _ = _twice(lambda name=name: bandits.run_sweep(jax.random.key(1), name, pref, num_runs=runs, num_steps=steps).regret)
        rows.append({"study": f"bandit sweep: {name}, K = 136", "lanes": runs, "length": steps,
                     "first_call_s": first, "second_call_s": second, "rate": runs * steps / second,
                     "unit": "run-steps/s"})
    return rows


def _synthetic(scale: float, num_queries: int, list_size: int, num_features: int):
    return data.synthetic_queries(jax.random.key(2), num_queries=_sized(num_queries, scale, 16), list_size=list_size,
                                  num_features=num_features, num_informative=8, num_grades=5)


def oltr_rows(scale: float) -> list[dict]:
    queries = _synthetic(scale, 2000, 128, 136)
    train = test = oltr.stack_queries([oltr.click_queries(queries)])
    models = [cascade_model(m, 5) for m in ("perfect", "navigational", "informational")]
    model_stack = jax.tree.map(lambda *x: jnp.stack(x), *models)
    runs, impressions = _sized(128, scale, 2), _sized(10_000, scale, 200)
    keys = oltr.lane_keys(0, [1], len(models), runs)
    checkpoints = oltr.log_checkpoints(impressions)
    rows = []
    for name in ("pdgd", "mgd"):
        ranker = oltr.RANKERS.build(name)
        first, second, _ = _twice(lambda ranker=ranker: oltr.simulate_grid(
            keys, ranker, train, test, model_stack, checkpoints=checkpoints).offline)
        lanes_ = len(models) * runs
        rows.append({"study": f"OLTR grid: {name}, D = 136", "lanes": lanes_, "length": impressions,
                     "first_call_s": first, "second_call_s": second, "rate": lanes_ * impressions / second,
                     "unit": "impressions/s"})
    return rows


def online_rows(scale: float) -> list[dict]:
    queries = data.as_ragged(_synthetic(scale, 2000, 32, 136))
    pairs = int(pairs_per_query(queries.labels, queries.offsets).sum())
    permutations = _sized(64, scale, 2)
    rows = []
    for name in ("solar_first_order", "solar_second_order"):
        learner = learners.LEARNERS.build(name)
        first, second, _ = _twice(lambda learner=learner: online_protocol(
            jax.random.key(3), learner, queries, permutations).cumulative)
        rows.append({"study": f"online protocol: {name}, D = 136", "lanes": permutations, "length": pairs,
                     "first_call_s": first, "second_call_s": second,
                     "rate": permutations * pairs / second, "unit": "pair steps/s"})
    return rows


def batch_rows(scale: float) -> list[dict]:
    folds = [data.as_ragged(_synthetic(scale, 500, 32, 136)) for _ in range(3)]
    grid = {"c": np.geomspace(1e-6, 1.0, _sized(16, scale, 2)).astype(np.float32)}
    learner = learners.LEARNERS.build("solar_first_order")
    first, second, _ = _twice(lambda: batch_protocol(jax.random.key(4), learner, grid, folds, folds, folds).test)
    lanes_ = grid["c"].size * len(folds)
    return [{"study": "batch protocol: SOLAR-I C grid x folds, D = 136", "lanes": lanes_, "length": None,
             "first_call_s": first, "second_call_s": second, "rate": lanes_ / second, "unit": "fits/s"}]


def estimate_rows(scale: float) -> list[dict]:
    queries = data.as_ragged(_synthetic(scale, 2000, 128, 136))
    num_rankers, comparisons = _sized(32, scale, 4), _sized(20_000, scale, 500)
    rankers = single_feature_rankers(list(range(1, num_rankers + 1)), 136)
    model = cascade_model("perfect", 5)
    first, second, _ = _twice(lambda: estimate_wins(jax.random.key(5), queries, rankers, model, "team_draft",
                                                    comparisons).wins)
    pairs = num_rankers * (num_rankers - 1) // 2
    return [{"study": f"preference estimate: {num_rankers} rankers, team draft", "lanes": pairs, "length": comparisons,
             "first_call_s": first, "second_call_s": second, "rate": pairs * comparisons / second,
             "unit": "comparisons/s"}]


STUDIES = {"bandits": bandit_rows, "oltr": oltr_rows, "online": online_rows, "batch": batch_rows,
           "estimate": estimate_rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the figures here (benchmarks/report.py's shape)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply lane counts and lengths (CPU dry run: 0.02)")
    parser.add_argument("--studies", default=",".join(STUDIES), help="comma-separated subset of " + ",".join(STUDIES))
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    jax.config.update("jax_compilation_cache_dir", tempfile.mkdtemp(prefix="device-check-xla-"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    rows, failures = [], {}
    print(f"backend {jax.default_backend()}: {jax.devices()}", flush=True)
    for name in args.studies.split(","):
        start = time.perf_counter()
        try:
            got = STUDIES[name](args.scale)
        except Exception as e:  # one study's failure must not lose the others' figures
            failures[name] = f"{type(e).__name__}: {e}"
            print(f"[{name}] FAILED {failures[name]}", flush=True)
            continue
        for row in got:
            print(f"[{name}] {row['study']}: first call {row['first_call_s']:.2f} s, second {row['second_call_s']:.2f} s, "
                  f"{row['rate'] or float('nan'):,.0f} {row['unit']}", flush=True)
        rows += got
        print(f"[{name}] {time.perf_counter() - start:.1f} s", flush=True)
    if args.json:
        write_json(args.json, "device_check", rows=rows, figures={"scale": args.scale, "failures": failures},
                   load_start=load)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
