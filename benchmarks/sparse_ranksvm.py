"""Sparse RankSVM regularisation paths: jaxrank (one vmapped program) vs skglm (one problem at a time).

The problem set: 17 λ (λ_max·10^{-a}, a = 0..4 step 0.25) × 5 MQ2008 folds ×
{ℓ1, log (ε = 0.01), MCP (γ = 3), ℓ0.5 (ε_p = 1e-3)}, float64, KKT tolerance 1e-6·λ.

* jaxrank: ``solve_paths_in_chunks`` (``vmap`` over penalties, and over ``--fold-batch`` folds at
  a time; each lane one ``while_loop`` through its λ path with ℓ1 warm starts and reweighted-ℓ1
  MM at each λ from that λ's ℓ1 solution), run in jitted chunks with progress output; the time
  includes the compiles.
* skglm 0.5: ``AndersonCD`` (working sets + Anderson acceleration) on the explicit pair matrix with
  a squared-hinge datafit written here; per (fold, penalty, λ) a plain ℓ1 solve from 0, then the
  same MM rounds (``WeightedL1`` with weights ``g'(|w|)``, warm-started), the same outer stop rule
  and ``tol = 1e-6·λ`` on the subdifferential distance (the same criterion as jaxrank's KKT residual).

    python benchmarks/sparse_ranksvm.py [--data ../shared/data] [--folds 1,2,3,4,5] [--skglm-folds 1,2,3,4,5] \
        [--fold-batch 1] [--save paths.npz]

Prints the machine, both wall times, their ratio, and the objective gaps between the two (split by
whether jaxrank's solve was KKT-certified within its budget).
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
    args = parser.parse_args()
    folds = [int(k) for k in args.folds.split(",")]
    sk_folds = [int(k) for k in args.skglm_folds.split(",") if k]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"jax {jax.__version__} ({jax.default_backend()}), load average {os.getloadavg()[0]:.1f}")
    trains = [data.load_fold(Path(args.data) / "MQ2008", k)[0] for k in folds]
    names = list(PENALTIES)
    with jax.enable_x64(True):
        pairs = S.stack_pairs(trains, dtype=jnp.float64)  # difference rows (MQ2008 folds are small)
        lip = jax.vmap(S.lipschitz_constant)(pairs)
        lams = S.lambda_grid(jax.vmap(S.lambda_max)(pairs))
        pens = S.stack_penalties([PENALTIES[n] for n in names], jnp.float64)
        start = time.perf_counter()
        w, _, info = S.solve_paths_in_chunks(pairs, lams, pens, lip, tol=args.tol, max_iter=5000,
                                              fold_batch=args.fold_batch or None)
        jax_s = time.perf_counter() - start
        objective = np.asarray(info.objective)  # [F, H, A]
        certified = np.asarray(info.converged)
        lane_steps = np.asarray(info.l1_iterations).sum(-1) + np.asarray(info.mm_iterations).sum(-1)  # [F, H]
        steps = int(lane_steps.sum())
        lams = np.asarray(lams)
    num_problems = len(folds) * len(names) * lams.shape[1]
    print(f"\njaxrank: {num_problems} problems in {jax_s:.1f} s (compile included), "
          f"{certified.mean():.1%} KKT-certified, {steps:,} FISTA steps over all lanes, "
          f"longest lane {int(lane_steps.max()):,}", flush=True)

    sk_s, sk_objective = 0.0, np.full_like(objective, np.nan)
    for f, k in enumerate(folds):
        if k not in sk_folds:
            continue
        t = trains[f]
        with jax.enable_x64(True):
            diffs = np.asarray(S.make_pairs(t, form="rows", dtype=jnp.float64).diffs)
        start = time.perf_counter()
        objs = _skglm_paths(diffs, lams[f], names, tol=args.tol)
        sk_s += time.perf_counter() - start
        sk_objective[f] = np.stack([objs[n] for n in names])
        gap = (objective[f] - sk_objective[f]) / sk_objective[f]
        print(f"skglm fold {k}: {time.perf_counter() - start:.1f} s; relative objective gap jaxrank - skglm "
              f"in [{gap.min():.1e}, {gap.max():.1e}]", flush=True)
    if args.save:
        np.savez(args.save, folds=folds, penalties=names, lambdas=lams, jaxrank_objective=objective,
                 skglm_objective=sk_objective, certified=certified, l1_iterations=np.asarray(info.l1_iterations),
                 mm_iterations=np.asarray(info.mm_iterations), outer_iterations=np.asarray(info.outer_iterations))
    if sk_folds:
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

if __name__ == "__main__":
    main()
