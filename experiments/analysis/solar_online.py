"""Table, figure (Table 2 and Fig. 2 of Wang et al., ACL 2015) and verdicts for ``solar_online``."""

from pathlib import Path

import numpy as np

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import figure_grid, save_figure, tabulate
from experiments.analysis.solar import LABELS
from jaxrank.metrics.statistics import mean_ci

# Table 2 / Fig. 2: the claimed order, best first; ">=" between SOLAR-II and SOLAR-I, ">" elsewhere.
ORDER = (("solar_second_order", ">="), ("solar_first_order", ">"), ("committee_perceptron", ">"),
         ("prank_pairwise", ">"), ("prank_pointwise", None))
METRICS = {"NDCG@10": 2, "MAP": 3}  # columns of the per-permutation [P, 4] values


def verdicts(results: dict) -> list:
    """Each step of Table 2's order, in online cumulative NDCG@10 and MAP, paired over permutations
    (every algorithm sees the same permutations)."""
    algos, paper = results["algorithms"], results["paper"]
    out = []
    for (upper, relation), (lower, _) in zip(ORDER, ORDER[1:]):
        sign = "≥" if relation == ">=" else ">"
        claim = f"{LABELS[upper]} {sign} {LABELS[lower]} in online cumulative NDCG@10 and MAP (Table 2, Fig. 2)"
        if upper not in algos or lower not in algos or "per_permutation" not in algos[upper]:
            out.append(V.Verdict(claim, V.UNTESTABLE, "not both run (or results without per-permutation values)"))
            continue
        a, b = np.asarray(algos[upper]["per_permutation"]), np.asarray(algos[lower]["per_permutation"])
        checks, details = [], []
        for metric, col in METRICS.items():
            diff, half = mean_ci(a[:, col] - b[:, col])
            if relation == ">=":  # holds unless significantly below
                verdict = V.HOLDS if diff + half >= 0 else V.FAILS
                why = "not significantly below" if verdict == V.HOLDS else "significantly below"
            else:
                known = metric == "NDCG@10" and upper in paper and lower in paper  # Table 2 prints no MAP
                gap = paper[upper][2] - paper[lower][2] if known else None
                verdict, why = V.direction(diff, half, paper_gap=gap, runs=f"{len(a)} permutations")
            checks.append(verdict)
            details.append(f"{metric} {diff:+.4f} ± {half:.4f} ({why})")
        paper_gap = (f"; paper NDCG@10 gap {paper[upper][2] - paper[lower][2]:+.4f}"
                     if upper in paper and lower in paper else "")
        out.append(V.Verdict(claim, V.worst(checks),
                             f"paired over {len(a)} permutations: " + "; ".join(details) + paper_gap))
    return out


def table(results: dict) -> str:
    paper = results["paper"]
    lines = [f"Online cumulative metrics on {results['dataset']} ({results['num_queries']} queries), mean ± sd over "
             f"{results['num_permutations']} permutations; paper = Table 2 of Wang et al. (2015).", "",
             "| algorithm | NDCG@1 | NDCG@5 | NDCG@10 | MAP | paper N@1 / N@5 / N@10 | Δ N@10 |",
             "|---|---|---|---|---|---|---|"]
    for name in results["order"]:
        r = results["algorithms"][name]
        ours = " | ".join(f"{m:.4f} ± {s:.4f}" for m, s in zip(r["mean"], r["std"]))
        p = paper.get(name)
        ref = " / ".join(f"{v:.4f}" for v in p) if p else "–"
        delta = f"{r['mean'][2] - p[2]:+.4f}" if p else "–"
        lines.append(f"| {LABELS.get(name, name)} | {ours} | {ref} | {delta} |")
    order = sorted(results["algorithms"], key=lambda a: -results["algorithms"][a]["mean"][2])
    lines += ["", "Ordering by NDCG@10: " + " > ".join(LABELS.get(a, a) for a in order)]
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    arrays = np.load(run_dir / "arrays.npz")
    fig_axes = figure_grid(2)
    if fig_axes is None:
        return
    fig, (ax_map, ax_ndcg) = fig_axes
    for name in results["order"]:
        curve = arrays[f"{name}__cumulative_mean"]  # [Q, 4]
        x = np.arange(1, len(curve) + 1)
        ax_map.plot(x, curve[:, 3], label=LABELS.get(name, name))
        ax_ndcg.plot(x, curve[:, 2], label=LABELS.get(name, name))
    for ax, what in ((ax_map, "online cumulative MAP"), (ax_ndcg, "online cumulative NDCG@10")):
        ax.set_xlabel("number of queries")
        ax.set_ylabel(what)
        ax.set_title(f"{results['dataset']} ({results['num_permutations']} permutations)")
        ax.legend(fontsize=8)
    save_figure(fig, run_dir / "solar_online.png")
