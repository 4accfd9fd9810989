"""Sparse RankSVM with convex and non-convex penalties (Laporte, Flamary, Canu, Déjean, Mothe,
IEEE TNNLS 2014), Tables IV–VI and Figs. 2–3 on one LETOR 4.0 set (default MQ2008), plus a
sensitivity sweep over the log ε and the MCP γ (the paper only says it uses "values commonly used
in the community", §V-C; our defaults are ε = 0.01 and γ = 3).

Protocol (paper §V-C; the λ grid is ours, the paper gives none): per fold, the whole λ path
(λ_max·10^{-a}, a = 0, 0.25, …, 4) for every penalty in one compiled program (``vmap`` over
folds × penalties, ``lax.scan`` over λ with warm starts); λ picked by validation MAP among
KKT-certified solutions (ties: the larger λ); test MAP and NDCG@10 under the standard and the
LETOR-script conventions (``Eval-Score-4.0.pl``); sparsity ratio over the features that are not
constant on the fold's training set; paired one-sided t-tests on per-query test values pooled
over the folds, against the best penalty. Every ℓ1 and weighted-ℓ1 subproblem is solved to the
same KKT tolerance by proximal Newton in float64 (``solver="auto"``) or by FISTA (paper
Algorithm 1; float32, or ``solver=fista``).
"""

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.analysis import sparse_ranksvm as analysis
from experiments.common.registry import register
from jaxrank import data, metrics
from jaxrank import solvers as S

# Laporte et al. 2014, Table IV (sparsity ratio; column order inferred from the text of §VI-A),
# Tables V–VI (best test MAP / NDCG@10), MQ2008 row.
PAPER_MQ2008 = {
    "sparsity_ratio": {"Fenchel": 0.30, "FSM": 0.42, "l1": 0.39, "mcp": 0.27, "log": 0.09, "lp": 0.07},
    "best_map": 0.4804,
    "best_ndcg10": 0.2323,
    "note": "all algorithms statistically equivalent on MQ2008 for MAP and NDCG@10",
}
METRICS = ("map", "map_letor", "ndcg10", "ndcg10_letor")


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "MQ2008"  # a name under JAXRANK_DATA or a path with the LETOR FoldK layout
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    # penalty specs: name[@hyperparameter]; l1, log@eps, mcp@gamma, mcp_inside@gamma, lp@p, scad@a
    penalties: tuple[str, ...] = ("l1", "mcp@3", "log@0.01", "lp@0.5")
    sweep: tuple[str, ...] = ("log@0.001", "log@0.1", "log@1", "mcp@1.5", "mcp@2", "mcp@3.7")
    num_lambdas: int = 17
    decades: float = 4.0
    tol: float = 1e-6  # FISTA stops when the KKT residual is <= tol * lambda (our stop rule)
    max_iter: int = 5000
    num_outer: int = 10
    outer_tol: float = 1e-4
    lp_eps: float = 1e-3
    float64: bool = True
    fold_batch: int = 1  # FISTA: folds solved at once (0: all); 1 keeps a fold's pairs in a CPU's cache, use 0 on a GPU
    # subproblem solver: "fista" (paper Algorithm 1), "newton" (proximal Newton, same objectives in float64,
    # ~40x faster on MQ2008), or "auto": newton in float64, fista in float32 (where Newton's model solve is too coarse)
    solver: str = "auto"
    alpha: float = 0.05  # significance level of the one-sided t-tests


def parse_penalty(spec: str, *, lp_eps: float = 1e-3) -> S.Penalty:
    """``"log@0.01"`` -> ``log(eps=0.01)``; raises ValueError naming the spec and the valid forms."""
    name, _, arg = spec.strip().partition("@")
    forms = "l1, log@EPS, mcp@GAMMA, mcp_inside@GAMMA, lp@P, scad@A"
    try:
        value = float(arg) if arg else None
    except ValueError:
        raise ValueError(f"penalty {spec!r}: {arg!r} is not a number; use one of {forms}.") from None
    defaults = {"log": 0.01, "mcp": 3.0, "mcp_inside": 3.0, "lp": 0.5, "scad": 3.7}
    if name == "l1" and value is None:
        return S.l1()
    if name not in defaults:
        raise ValueError(f"unknown penalty {spec!r}; use one of {forms}.")
    value = defaults[name] if value is None else value
    if name == "log":
        return S.log(value)
    if name == "mcp":
        return S.mcp(value)
    if name == "mcp_inside":
        return S.mcp(value, lambda_inside=True)
    if name == "lp":
        return S.lp(value, lp_eps)
    return S.scad(value)


def _test_values(scores, labels, mask, rows):
    """``[K, B, 4]`` MAP, LETOR-script MAP, NDCG@10, LETOR-script NDCG@10 per query (ties: list order)."""
    del rows
    kw = dict(where=mask, reduce_fn=None)
    return jnp.stack([
        metrics.average_precision(scores, labels, **kw),
        metrics.average_precision(scores, labels, letor_compat=True, **kw),
        metrics.ndcg(scores, labels, topn=10, **kw),
        metrics.ndcg(scores, labels, topn=10, letor_compat=True, **kw),
    ], axis=-1)


def _vali_map(scores, labels, mask, rows):
    del rows
    return metrics.average_precision(scores, labels, where=mask, reduce_fn=None)


def _paired_p(x, best):
    """One-sided paired t-test p-value of ``mean(x) < mean(best)`` (1.0 when identical)."""
    d = np.asarray(x) - np.asarray(best)
    if np.allclose(d, 0):
        return 1.0
    return metrics.paired_t_test(x, best, alternative="less").p_value


def _compare(names, pooled, alpha):
    """Best penalty per metric and each penalty's p-value against it (and against ℓ1)."""
    out = {}
    for m in METRICS:
        means = {n: float(np.mean(pooled[n][m])) for n in names}
        best = max(means, key=means.get)
        rows = {}
        for n in names:
            p_best = _paired_p(pooled[n][m], pooled[best][m]) if n != best else None
            p_l1 = _paired_p(pooled[n][m], pooled["l1"][m]) if "l1" in pooled and n != "l1" else None
            rows[n] = {"mean": round(means[n], 6), "rel_to_best": round(means[n] / means[best] - 1.0, 6),
                       "p_vs_best": p_best, "significant": bool(p_best is not None and p_best < alpha),
                       "p_vs_l1": p_l1}
        out[m] = {"best": best, "penalties": rows}
    return out


@register("sparse_ranksvm", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Sparse RankSVM: l1 / MCP / log / lp paths, Tables IV-VI and Figs. 2-3 (Laporte et al. 2014)."""
    specs = list(dict.fromkeys(config.penalties + config.sweep))  # main penalties first, no duplicates
    penalties = [parse_penalty(s, lp_eps=config.lp_eps) for s in specs]
    if config.num_lambdas < 1 or config.max_iter < 1 or config.num_outer < 0:
        raise ValueError(f"num_lambdas={config.num_lambdas}, max_iter={config.max_iter} and num_outer="
                         f"{config.num_outer} must be >= 1, >= 1 and >= 0.")
    if config.fold_batch < 0:
        raise ValueError(f"fold_batch must be >= 0 (0: all folds at once); got {config.fold_batch}.")
    if not 0 < config.tol < 1:
        raise ValueError(f"tol must be in (0, 1); got {config.tol}.")
    if config.solver not in ("auto",) + S.SOLVERS:
        raise ValueError(f"solver must be 'auto', 'fista' or 'newton'; got {config.solver!r}.")
    solver = ("newton" if config.float64 else "fista") if config.solver == "auto" else config.solver
    splits = [data.load_fold(config.dataset, k) for k in config.folds]
    trains, valis, tests = ([s[i] for s in splits] for i in range(3))
    with jax.enable_x64(config.float64):
        dtype = jnp.float64 if config.float64 else jnp.float32
        pairs = S.stack_pairs(trains, dtype=dtype)  # leaves [F, ...]: difference rows, or pair indices
        # FISTA's step size; reported in arrays.npz either way
        lip = jax.vmap(S.lipschitz_constant, in_axes=(None, 0))(jax.random.key(S.POWER_START_SEED), pairs)
        lam_max = jax.vmap(S.lambda_max)(pairs)
        lams = S.lambda_grid(lam_max, num=config.num_lambdas, decades=config.decades)  # [F, A]
        pens = S.stack_penalties(penalties, dtype)
        start = time.perf_counter()
        w, w_l1, info = S.solve_paths_in_chunks(  # [F, H, A, D], progress printed between chunks
            pairs, lams, pens, lip, tol=config.tol, max_iter=config.max_iter, num_outer=config.num_outer,
            outer_tol=config.outer_tol, fold_batch=config.fold_batch or None, solver=solver)
        solve_seconds = time.perf_counter() - start
        print(f"[sparse_ranksvm] {len(config.folds)} folds x {len(specs)} penalties x {config.num_lambdas} lambdas "
              f"solved by {solver} in {solve_seconds:.1f} s (incl. compile)", flush=True)
        w = np.asarray(w, np.float64)
        info = jax.tree.map(np.asarray, info)
        lams = np.asarray(lams)
        lip, lam_max = np.asarray(lip), np.asarray(lam_max)

    num_folds, num_pens, num_lams = w.shape[:3]
    vali_map = np.stack([data.linear_query_values(_vali_map, v, jnp.asarray(w[f], jnp.float32)).mean(-1)
                         for f, v in enumerate(valis)])  # [F, H, A]
    certified = info.converged
    choice = np.argmax(np.where(certified, vali_map, -np.inf), axis=-1)  # first max: the larger λ
    none_certified = ~certified.any(-1)
    choice = np.where(none_certified, np.argmax(vali_map, -1), choice)
    w_sel = np.take_along_axis(w, choice[..., None, None], axis=2)[:, :, 0]  # [F, H, D]
    informative = np.stack([S.informative_features(b) for b in trains])  # [F, D]
    sr_path = np.asarray(S.sparsity_ratio(w, informative[:, None, None, :]))  # [F, H, A]
    sr = np.asarray(S.sparsity_ratio(w_sel, informative[:, None, :]))  # [F, H]

    per_fold = [data.linear_query_values(_test_values, t, jnp.asarray(w_sel[f], jnp.float32))
                for f, t in enumerate(tests)]  # [H, Q_f, 4] each
    pooled = {s: {m: np.concatenate([v[h, :, i] for v in per_fold]) for i, m in enumerate(METRICS)}
              for h, s in enumerate(specs)}
    fold_means = {m: np.stack([v[:, :, i].mean(-1) for v in per_fold]) for i, m in enumerate(METRICS)}  # [F, H]
    def lane(h, s):
        return {
            "spec": s,
            "sparsity_ratio": float(sr[:, h].mean()),
            "sparsity_ratio_folds": sr[:, h].round(6).tolist(),
            "num_features_folds": (w_sel[:, h] != 0).sum(-1).tolist(),
            "test": {m: float(pooled[s][m].mean()) for m in METRICS},
            "test_folds": {m: fold_means[m][:, h].round(6).tolist() for m in METRICS},
            "vali_map_folds": np.take_along_axis(vali_map[:, h], choice[:, h, None], -1)[:, 0].round(6).tolist(),
            "lambda_index_folds": choice[:, h].tolist(),
            "lambda_over_lambda_max_folds": (lams[np.arange(len(config.folds)), choice[:, h]] / lam_max).tolist(),
            "uncertified_solutions": int((~certified[:, h]).sum()),
            "mm_at_round_limit": int((~info.mm_converged[:, h]).sum()),
            "max_kkt_over_lambda": float((info.kkt[:, h] / lams).max()),
        }

    lanes = {s: lane(h, s) for h, s in enumerate(specs)}
    main = list(dict.fromkeys(config.penalties))
    comparison = _compare(main, {s: pooled[s] for s in main}, config.alpha)
    claim = {}
    if "l1" in lanes:
        for s in main:
            if s != "l1":
                claim[s] = {"sr_over_l1": round(lanes[s]["sparsity_ratio"] / max(lanes["l1"]["sparsity_ratio"], 1e-12), 4),
                            "p_map_vs_best": comparison["map"]["penalties"][s]["p_vs_best"],
                            "p_map_vs_l1": comparison["map"]["penalties"][s]["p_vs_l1"]}
    data.write_npz(
        run_dir / "arrays.npz", w=w, w_l1=np.asarray(w_l1, np.float64), lambdas=lams, lambda_max=lam_max,
        lipschitz=lip, vali_map=vali_map, sparsity_ratio_path=sr_path, choice=choice, informative=informative,
        objective=info.objective, kkt=info.kkt, converged=info.converged, l1_iterations=info.l1_iterations,
        mm_iterations=info.mm_iterations, outer_iterations=info.outer_iterations, mm_converged=info.mm_converged,
        **{f"test_{m}_fold{f + 1}": v[:, :, i] for i, m in enumerate(METRICS) for f, v in enumerate(per_fold)},
    )
    return {
        "dataset": str(config.dataset),
        "folds": list(config.folds),
        "penalties": main,
        "sweep": [s for s in specs if s not in main],
        "lanes": lanes,
        "comparison": comparison,
        "claim": claim,
        "paper_mq2008": PAPER_MQ2008,
        "timings": {"solve_seconds": round(solve_seconds, 2)},
        "solver": solver,
        "total_iterations": int(info.l1_iterations.sum() + info.mm_iterations.sum()),  # steps of `solver`
        "num_lambdas": config.num_lambdas,
        "dtype": "float64" if config.float64 else "float32",
        "informative_features_folds": informative.sum(-1).tolist(),
        "num_features": int(w.shape[-1]),
    }
