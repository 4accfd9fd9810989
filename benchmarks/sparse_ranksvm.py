"""Sparse RankSVM regularisation paths: jaxrank (one vmapped program) vs skglm (one problem at a time).

The problem set: 17 λ (λ_max·10^{-a}, a = 0..4 step 0.25) × 5 MQ2008 folds ×
{ℓ1, log (ε = 0.01), MCP (γ = 3), ℓ0.5 (ε_p = 1e-3)}, float64, KKT tolerance 1e-6·λ.

* jaxrank: ``solve_paths_in_chunks`` with ``--solver newton`` (the default: proximal Newton on
  every subproblem, lanes one after another, one jitted program per fold) or ``--solver fista``
  (paper Algorithm 1: ``vmap`` over penalties, and over ``--fold-batch`` folds at a time; each
  lane one ``while_loop`` of FISTA steps through its λ path), both with ℓ1 warm starts along λ and
  reweighted-ℓ1 MM at each λ from that λ's ℓ1 solution; the time includes the compiles.
* skglm 0.5: ``AndersonCD`` (working sets + Anderson acceleration) on the explicit pair matrix with
  a squared-hinge datafit written here; per (fold, penalty, λ) a plain ℓ1 solve from 0, then the
  same MM rounds (``WeightedL1`` with weights ``g'(|w|)``, warm-started), the same outer stop rule
  and ``tol = 1e-6·λ`` on the subdifferential distance (the same criterion as jaxrank's KKT residual).

    python benchmarks/sparse_ranksvm.py [--data ../shared/data] [--folds 1,2,3,4,5] [--skglm-folds 1,2,3,4,5] \
        [--solver newton|fista] [--fold-batch 1] [--save paths.npz] [--json figures.json]

Prints the machine, both wall times, their ratio, and the objective gaps between the two (split by
whether jaxrank's solve was KKT-certified within its budget); ``--json`` writes the same figures.
``--file PATH`` replaces the MQ2008 folds by one SVMlight file (e.g. the TD2004-shaped file of
``benchmarks/scale.py``), solved as one fold with pair indices.
"""

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import data
from jaxrank import solvers as S

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/reference holds the skglm datafit shared with the tests
PENALTIES = {"l1": S.l1(), "log": S.log(0.01), "mcp": S.mcp(3.0), "lp": S.lp(0.5, 1e-3)}


def _derivative(name, u, lam):
    """``R_λ'(u)/λ`` (the MM weights), written out again from Laporte et al. 2014 (Table II) for the skglm side."""
    if name == "l1":
        return np.ones_like(u)
    if name == "log":
        return 1.0 / (0.01 + u)
    if name == "mcp":
        return np.maximum(1.0 - u / 3.0, 0.0)
    return 0.5 / np.sqrt(u + 1e-3)


def _penalty_value(name, w, lam):
    u = np.abs(w)
    if name == "l1":
        return lam * u.sum()
    if name == "log":
        return lam * np.sum(np.log1p(u / 0.01))
    if name == "mcp":
        return lam * np.sum(np.where(u <= 3.0, u - u * u / 6.0, 1.5))
    return lam * np.sum(np.sqrt(u + 1e-3) - np.sqrt(1e-3))


def _skglm_paths(X, lams, names, num_outer=10, outer_tol=1e-4, tol=1e-6):
    from tests.reference.skglm_datafit import SquaredHingePairs
    from skglm.penalties import WeightedL1
    from skglm.solvers import AndersonCD
    from skglm.utils.jit_compilation import compiled_clone

    # compiled once here rather than per call (skglm 0.5 warns that this will change in 0.6)
    warnings.filterwarnings("ignore", message="Passing in a compiled", category=UserWarning)
    keep = np.any(X != 0, axis=0)
    Xk = np.asfortranarray(X[:, keep])
    y = np.ones(X.shape[0])
    datafit = compiled_clone(SquaredHingePairs())
    out = {}
    for name in names:
        objs = []
        for lam in lams:
            solver = AndersonCD(fit_intercept=False, tol=tol * lam, max_iter=1000, max_epochs=100_000)
            pen = compiled_clone(WeightedL1(lam, np.ones(Xk.shape[1])))
            w = solver.solve(Xk, y, datafit, pen)[0]
            for _ in range(num_outer if name != "l1" else 0):
                pen = compiled_clone(WeightedL1(lam, _derivative(name, np.abs(w), lam)))
                w_new = solver.solve(Xk, y, datafit, pen, w_init=w.copy(), Xw_init=Xk @ w)[0]
                moved = np.max(np.abs(w_new - w))
                w = w_new
                if moved < outer_tol:
                    break
            r = np.maximum(1.0 - Xk @ w, 0.0)
            objs.append(r @ r / len(y) + _penalty_value(name, w, lam))
        out[name] = np.array(objs)
        print(f"  skglm {name}: {len(lams)} λ done", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--skglm-folds", default="1,2,3,4,5", help="folds skglm solves (subset to save time)")
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--fold-batch", type=int, default=1, help="folds jaxrank solves at once (0: all)")
    parser.add_argument("--save", default="", help="write per-problem objectives and iterations to this .npz")
    parser.add_argument("--solver", default="newton", choices=S.SOLVERS, help="jaxrank's subproblem solver")
    parser.add_argument("--max-iter", type=int, default=0,
                        help="steps per subproblem (default 5000 FISTA steps or 100 Newton steps)")
    parser.add_argument("--penalties", default=",".join(PENALTIES), help="subset of " + ",".join(PENALTIES))
    parser.add_argument("--file", default="", help="one SVMlight file instead of the MQ2008 folds")
    parser.add_argument("--num-lambdas", type=int, default=17)
    parser.add_argument("--decades", type=float, default=4.0)
    parser.add_argument("--json", default="", help="write the figures to this JSON file")
    args = parser.parse_args()
    folds = [1] if args.file else [int(k) for k in args.folds.split(",")]
    sk_folds = [int(k) for k in args.skglm_folds.split(",") if k]
    names = [n for n in args.penalties.split(",") if n]
    if not set(names) <= set(PENALTIES):
        raise ValueError(f"--penalties must be a subset of {list(PENALTIES)}; got {names}.")
    max_iter = args.max_iter or (5000 if args.solver == "fista" else 100)
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, jax {jax.__version__} ({jax.default_backend()})")
    load_before = os.getloadavg()
    print(f"{machine}, load average {load_before[0]:.1f}")
    if args.file:
        trains = [data.load_queries(args.file)]
    else:
        trains = [data.load_fold(Path(args.data) / "MQ2008", k)[0] for k in folds]
    fold_seconds = []
    start = time.perf_counter()

    def log(line):
        print(line, flush=True)
        if args.solver == "newton":
            fold_seconds.append(time.perf_counter() - start - sum(fold_seconds))

    with jax.enable_x64(True):
        pairs = S.stack_pairs(trains, dtype=jnp.float64)  # difference rows (MQ2008 folds are small)
        lip = jax.vmap(S.lipschitz_constant, in_axes=(None, 0))(jax.random.key(S.POWER_START_SEED), pairs) if args.solver == "fista" else None
        lams = S.lambda_grid(jax.vmap(S.lambda_max)(pairs), num=args.num_lambdas, decades=args.decades)
        pens = S.stack_penalties([PENALTIES[n] for n in names], jnp.float64)
        start = time.perf_counter()
        w, w_l1, info = S.solve_paths_in_chunks(pairs, lams, pens, lip, tol=args.tol, max_iter=max_iter,
                                              fold_batch=args.fold_batch or None, solver=args.solver, log=log)
        jax_s = time.perf_counter() - start
        objective = np.asarray(info.objective)  # [F, H, A]
        certified = np.asarray(info.converged)
        kkt_over_lam = np.asarray(info.kkt) / np.asarray(lams)[:, None, :]
        lane_steps = np.asarray(info.l1_iterations).sum(-1) + np.asarray(info.mm_iterations).sum(-1)  # [F, H]
        steps = int(lane_steps.sum())
        lams = np.asarray(lams)
        # the ℓ1 solutions' KKT residuals again, from fresh margins in NumPy (the MM rounds' weights are not kept)
        l1_kkt = []
        for f in range(len(folds)):
            one = jax.tree.map(lambda x: x[f], pairs)
            for h in range(len(names)):
                for a in range(lams.shape[1]):
                    w_a = np.asarray(w_l1[f, h, a])
                    g = np.asarray(S.squared_hinge_grad(jnp.asarray(w_a), one))
                    lam = lams[f, a]
                    r = np.where(w_a == 0, np.maximum(np.abs(g) - lam, 0), np.abs(g + lam * np.sign(w_a)))
                    l1_kkt.append(r.max() / lam)
        l1_kkt = float(np.max(l1_kkt))
    num_problems = len(folds) * len(names) * lams.shape[1]
    print(f"\njaxrank ({args.solver}): {num_problems} problems in {jax_s:.1f} s (compile included), "
          f"{int(certified.sum())}/{certified.size} KKT-certified (max KKT/λ {kkt_over_lam.max():.1e}), "
          f"{steps:,} {args.solver} steps over all lanes, longest lane {int(lane_steps.max()):,}", flush=True)
    figures = {
        "machine": machine, "load_average_before": load_before[0], "solver": args.solver,
        "problem_set": args.file or f"MQ2008 folds {folds}", "penalties": names, "num_lambdas": int(lams.shape[1]),
        "tol_times_lambda": args.tol, "max_iter": max_iter, "problems": num_problems,
        "jaxrank_seconds": round(jax_s, 2), "jaxrank_fold_seconds": [round(x, 2) for x in fold_seconds],
        "certified": int(certified.sum()), "max_kkt_over_lambda": float(kkt_over_lam.max()),
        "steps": steps, "longest_lane_steps": int(lane_steps.max()), "l1_kkt_over_lambda_rechecked": l1_kkt,
    }
    print(f"ℓ1 solutions rechecked from fresh margins: max KKT/λ {l1_kkt:.1e}")

    sk_s, sk_objective = 0.0, np.full_like(objective, np.nan)
    sk_fold_seconds = {}
    for f, k in enumerate(folds):
        if k not in sk_folds or args.file:
            continue
        t = trains[f]
        with jax.enable_x64(True):
            diffs = np.asarray(S.make_pairs(t, form="rows", dtype=jnp.float64).diffs)
        start = time.perf_counter()
        objs = _skglm_paths(diffs, lams[f], names, tol=args.tol)
        sk_s += time.perf_counter() - start
        sk_fold_seconds[k] = round(time.perf_counter() - start, 2)
        sk_objective[f] = np.stack([objs[n] for n in names])
        gap = (objective[f] - sk_objective[f]) / sk_objective[f]
        print(f"skglm fold {k}: {time.perf_counter() - start:.1f} s; relative objective gap jaxrank - skglm "
              f"in [{gap.min():.1e}, {gap.max():.1e}]", flush=True)
    if args.save:
        np.savez(args.save, folds=folds, penalties=names, lambdas=lams, jaxrank_objective=objective,
                 skglm_objective=sk_objective, certified=certified, l1_iterations=np.asarray(info.l1_iterations),
                 mm_iterations=np.asarray(info.mm_iterations), outer_iterations=np.asarray(info.outer_iterations))
    if sk_fold_seconds:
        share = len([k for k in folds if k in sk_folds]) / len(folds)
        print("\n| solver | problems | wall time | per problem |\n|---|---:|---:|---:|")
        print(f"| jaxrank `solve_paths_in_chunks` (compile included) | {num_problems} | {jax_s:.1f} s | "
              f"{jax_s / num_problems:.3f} s |")
        n_sk = int(round(num_problems * share))
        print(f"| skglm AndersonCD one by one | {n_sk} | {sk_s:.1f} s | {sk_s / n_sk:.3f} s |")
        gap = (objective - sk_objective) / sk_objective
        solved = ~np.isnan(gap)
        print(f"\nratio skglm / jaxrank per problem: {(sk_s / n_sk) / (jax_s / num_problems):.2f}; relative "
              f"objective gap jaxrank - skglm: max |gap| {np.abs(gap[solved]).max():.2e} over all problems, "
              f"{np.abs(gap[solved & certified]).max():.2e} over jaxrank's KKT-certified ones; "
              f"jaxrank lower on {int((gap[solved] < 0).sum())} of {int(solved.sum())}")
        same = [f for f, k in enumerate(folds) if k in sk_fold_seconds]
        figures.update(
            skglm_folds=sorted(sk_fold_seconds), skglm_seconds=round(sk_s, 2), skglm_fold_seconds=sk_fold_seconds,
            skglm_problems=n_sk, ratio_per_problem=round((sk_s / n_sk) / (jax_s / num_problems), 2),
            max_abs_relative_gap=float(np.abs(gap[solved]).max()), min_relative_gap=float(gap[solved].min()),
            max_relative_gap=float(gap[solved].max()), jaxrank_lower=int((gap[solved] < 0).sum()),
            compared=int(solved.sum()), certified_on_skglm_folds=int(certified[same].sum()),
        )
        if len(fold_seconds) == len(folds):
            jax_same = sum(fold_seconds[f] for f in same)
            figures.update(jaxrank_seconds_on_skglm_folds=round(jax_same, 2),
                           ratio_same_folds=round(sk_s / jax_same, 2))
            print(f"same folds {figures['skglm_folds']}: skglm {sk_s:.1f} s, jaxrank {jax_same:.1f} s "
                  f"(first fold includes the compile): {sk_s / jax_same:.1f}x")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        figures.pop("machine")
        load_start = figures.pop("load_average_before")
        reference = []
        if "ratio_per_problem" in figures:
            reference.append({"what": "skglm AndersonCD one problem at a time, time per problem over jaxrank's",
                              "ratio": figures["ratio_per_problem"]})
        if "ratio_same_folds" in figures:
            reference.append({"what": f"the same on skglm's folds {figures['skglm_folds']} only", "ratio": figures["ratio_same_folds"]})
        write_json(args.json, __file__, load_start=load_start, reference=reference, figures=figures)

if __name__ == "__main__":
    main()
