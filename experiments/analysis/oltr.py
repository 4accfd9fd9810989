"""Table, verdicts and learning-curve figures for ``oltr`` (Oosterhuis & de Rijke, CIKM 2018, Tables 3-4
next to the paper's MQ2008 values, and Fig. 2's layout: offline NDCG@10 over impressions per click model)."""

from pathlib import Path

import numpy as np

from experiments.analysis.plotting import figure_grid, save_figure, tabulate
from experiments.analysis.verdicts import with_section

LABELS = {"dbgd": "DBGD (linear)", "dbgd_neural": "DBGD (neural)", "mgd": "MGD (linear)",
          "pairwise": "Pairwise (linear)", "pdgd": "PDGD (linear)", "pdgd_neural": "PDGD (neural)"}

# Oosterhuis & de Rijke, CIKM 2018, MQ2008 columns of Table 3 (offline NDCG@10 after 10,000
# impressions) and Table 4 (online discounted cumulative NDCG@10): row -> click model -> mean (std)
# over 125 runs, as printed.
PAPER_MQ2008 = {
    "offline": {
        "dbgd": {"perfect": (0.683, 0.024), "navigational": (0.670, 0.025), "informational": (0.631, 0.036)},
        "dbgd_neural": {"perfect": (0.670, 0.026), "navigational": (0.646, 0.031), "informational": (0.595, 0.053)},
        "mgd": {"perfect": (0.690, 0.019), "navigational": (0.662, 0.015), "informational": (0.647, 0.036)},
        "pairwise": {"perfect": (0.674, 0.017), "navigational": (0.677, 0.018), "informational": (0.677, 0.018)},
        "pdgd": {"perfect": (0.699, 0.024), "navigational": (0.695, 0.021), "informational": (0.690, 0.022)},
        "pdgd_neural": {"perfect": (0.698, 0.024), "navigational": (0.692, 0.019), "informational": (0.686, 0.022)},
    },
    "online": {
        "dbgd": {"perfect": (843.6, 40.8), "navigational": (816.9, 42.0), "informational": (757.4, 56.9)},
        "dbgd_neural": {"perfect": (776.9, 67.4), "navigational": (740.3, 69.7), "informational": (720.9, 79.0)},
        "mgd": {"perfect": (858.6, 40.6), "navigational": (824.5, 34.0), "informational": (815.1, 44.5)},
        "pairwise": {"perfect": (616.6, 25.8), "navigational": (618.6, 25.2), "informational": (619.6, 25.0)},
        "pdgd": {"perfect": (959.7, 43.4), "navigational": (903.1, 40.7), "informational": (907.9, 42.0)},
        "pdgd_neural": {"perfect": (925.4, 43.3), "navigational": (788.7, 38.5), "informational": (818.3, 39.6)},
    },
}
PAPER_RUNS = 125
# A cell agrees when the paper's mean is inside our 95% CI or within this many combined standard
# errors (ours and the paper's std / sqrt(125)).
AGREE_SE = 3.0

PAPER = {
    "claim": "PDGD (linear) has the highest offline NDCG@10 after 10,000 impressions (Table 3) and the highest online "
             "discounted cumulative NDCG (Table 4) of the six rows under every click model on MQ2008.",
    "numbers": "Tables 3-4 of Oosterhuis & de Rijke, CIKM 2018 (MQ2008 columns), next to each cell.",
}


def _comparison(options: dict, key: str) -> str:
    """``"probabilistic (10,000-sample outcomes)"`` or ``"team-draft"`` from one row's options."""
    samples = options.get("outcome_samples", 0)
    return options[key].replace("_", "-") + (f" ({samples:,}-sample outcomes)" if samples else "")


def _comparisons(results: dict) -> str:
    """``"DBGD probabilistic, MGD team-draft comparisons. "`` from the rows' options."""
    used = [f"{LABELS.get(l, l)} {_comparison(v['options'], key)}" for l, v in results.get("settings", {}).items()
            for key in ("interleaving", "multileaving") if key in v["options"]]
    return f"{', '.join(used)} comparisons. " if used else ""


# The authors' protocol (scripts/CIKM2018.py and their simulator): the settings a comparable run records.
PAPER_PROTOCOL = {"test_queries": "relevant", "stop_rule": "every_position", "comparisons": "probabilistic",
                  "outcome_samples": 10_000, "learning_rate_decay": 0.9999977}


PAPER_CLICK_MODELS = ("perfect", "navigational", "informational")


def paper_comparable(results: dict) -> str:
    """``""`` when the run follows the paper's MQ2008 protocol, else why its cells are not the paper's."""
    why = []
    if results["dataset"] != "MQ2008":
        why.append(f"dataset {results['dataset']} (the paper's numbers here are MQ2008's)")
    if results["num_impressions"] != 10_000:
        why.append(f"{results['num_impressions']:,} impressions (the paper: 10,000)")
    if sorted(results.get("folds", [])) != [1, 2, 3, 4, 5]:
        why.append(f"folds {results.get('folds')} (the paper averages all five)")
    protocol = results.get("protocol", {})
    for key, paper in PAPER_PROTOCOL.items():
        if protocol.get(key) != paper:  # a run that does not record a setting is not the paper's either
            why.append(f"{key}={protocol.get(key)} (the paper's protocol: {paper})")
    if results.get("params"):
        why.append(f"per-row settings {', '.join(results['params'])} (the paper's rows run their defaults)")
    return "; ".join(why)


def cell_agreement(ours_mean: float, ours_ci: float, ours_std: float, n: int, paper: tuple) -> tuple[bool, float]:
    """``(agrees, gap in combined standard errors)`` of one cell against the paper's ``(mean, std)``."""
    paper_mean, paper_std = paper
    se = np.sqrt((ours_std ** 2) / max(n, 1) + paper_std ** 2 / PAPER_RUNS)
    gap = abs(ours_mean - paper_mean) / se if se > 0 else float("inf")
    return bool(abs(ours_mean - paper_mean) <= ours_ci or gap <= AGREE_SE), float(gap)


def cells(results: dict) -> list[dict]:
    """Every (row, click model, measure) cell that has a paper value: ours next to the paper's."""
    out = []
    for measure, digits in (("offline", 4), ("online", 1)):
        for row, per_model in results["learners"].items():
            for model, r in per_model.items():
                paper = PAPER_MQ2008[measure].get(row, {}).get(model)
                if paper is None:
                    continue
                mean, ci = r[f"final_{measure}"], r[f"final_{measure}_ci95"]
                agrees, gap = cell_agreement(mean, ci, r.get(f"final_{measure}_std", 0.0), r.get("num_runs", 1), paper)
                out.append({"row": row, "click_model": model, "measure": measure, "mean": mean, "ci95": ci,
                            "paper": paper, "agrees": agrees, "gap_se": round(gap, 2), "digits": digits})
    return out


def verdicts(summary: dict) -> list[tuple[str, str, str]]:
    """``(claim, verdict, detail)`` for the paper's claims, measured on this run's numbers."""
    out = []
    rows = summary["learners"]
    for measure, table_name in (("offline", "Table 3"), ("online", "Table 4")):
        claim = (f"PDGD (linear) has the highest {measure} NDCG@10 of the rows under every click model "
                 f"({table_name}, MQ2008)")
        missing = sorted(set(LABELS) - set(rows)) + sorted(set(PAPER_CLICK_MODELS) - set(summary["click_models"]))
        if missing:
            out.append((claim, "not testable here", f"the claim is over the paper's six rows and three click models; "
                                                    f"this run lacks {', '.join(missing)}"))
            continue
        misses, close, details = [], [], []
        for model in summary["click_models"]:
            value = lambda row: rows[row][model][f"final_{measure}"]  # noqa: E731
            best_other = max((r for r in rows if r != "pdgd"), key=value)
            ours, other = rows["pdgd"][model], rows[best_other][model]
            details.append(f"{model}: PDGD {ours[f'final_{measure}']} ± {ours[f'final_{measure}_ci95']} vs "
                           f"{LABELS.get(best_other, best_other)} {other[f'final_{measure}']} ± "
                           f"{other[f'final_{measure}_ci95']}")
            gap = value("pdgd") - value(best_other)
            if gap <= 0:
                misses.append(model)
            elif gap <= np.hypot(ours[f"final_{measure}_ci95"], other[f"final_{measure}_ci95"]):
                close.append(model)  # ahead, but within the two 95% intervals' combined width
        verdict = "does not hold" if misses else "not testable here" if close else "holds"
        gap = f" (not under {', '.join(misses)})" if misses else ""
        if close and not misses:
            gap = f" (ahead within noise under {', '.join(close)}: more runs needed)"
        if summary["num_impressions"] != 10_000:
            gap += f"; measured after {summary['num_impressions']:,} impressions, the paper after 10,000"
        out.append((claim, verdict, "; ".join(details) + gap))
    claim = (f"Every cell of Tables 3-4 (MQ2008) is reproduced: the paper's mean inside our 95% CI or within "
             f"{AGREE_SE:g} combined standard errors")
    why = paper_comparable(summary)
    table = cells(summary)
    if why or not table:
        out.append((claim, "not testable here", why or "no row of the paper's tables was run"))
    else:
        missed = [c for c in table if not c["agrees"]]
        detail = f"{len(table) - len(missed)} of {len(table)} cells agree"
        if missed:
            detail += "; off: " + ", ".join(f"{LABELS.get(c['row'], c['row'])} {c['click_model']} {c['measure']} "
                                            f"{c['mean']:.{c['digits']}f} vs {c['paper'][0]} ({c['gap_se']} SE)"
                                            for c in missed)
        out.append((claim, "holds" if not missed else "does not hold", detail))
    return out


def table(results: dict) -> str:
    models = results["click_models"]
    learners = list(results["learners"])
    protocol = results.get("protocol", {})
    proto = ", ".join(f"{k}={v}" for k, v in protocol.items() if k != "test_queries_kept")
    head = (f"{results['dataset']}: {len(results['folds'])} folds x {results['num_runs']} runs, "
            f"{results['num_impressions']:,} impressions, {results['num_grades']}-grade cascade users, "
            f"{_comparisons(results)}{proto}. Mean ± 95% CI over runs x folds; in brackets the paper's "
            f"mean (std) over {PAPER_RUNS} runs (Tables 3-4, MQ2008); ✗ marks a cell whose paper mean is outside "
            f"our CI and more than {AGREE_SE:g} combined standard errors away.")
    comparable = not paper_comparable(results)
    learners = [l for l in LABELS if l in learners] + [l for l in learners if l not in LABELS]  # the paper's order
    lines = [head, "", "| row | " + " | ".join(f"offline {m}" for m in models) + " | "
             + " | ".join(f"online {m}" for m in models) + " |", "|---|" + "---|" * (2 * len(models))]
    for learner in learners:
        r = results["learners"][learner]
        row = []
        for measure, digits in (("offline", 4), ("online", 1)):
            for m in models:
                cell = f"{r[m][f'final_{measure}']:.{digits}f} ± {r[m][f'final_{measure}_ci95']:.{digits}f}"
                paper = PAPER_MQ2008[measure].get(learner, {}).get(m)
                if paper is not None:
                    agrees, _ = cell_agreement(r[m][f"final_{measure}"], r[m][f"final_{measure}_ci95"],
                                               r[m].get(f"final_{measure}_std", 0.0), r[m].get("num_runs", 1), paper)
                    mark = "" if agrees or not comparable else " ✗"
                    cell += f" ({paper[0]} ({paper[1]})){mark}"
                row.append(cell)
        lines.append(f"| {LABELS.get(learner, learner)} | " + " | ".join(row) + " |")
    if not comparable:
        lines += ["", f"Not the paper's protocol ({paper_comparable(results)}): the bracketed values are for reading "
                      "only."]
    lines += ["", f"Paper: {results['paper']['claim']} ({results['paper']['numbers']})"]
    return with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    fig_axes = figure_grid(len(results["click_models"]))
    if fig_axes is None:
        return
    fig, axes = fig_axes
    steps = np.asarray(results["checkpoints"])[1:]  # the log axis leaves out impression 0
    for ax, model in zip(axes, results["click_models"]):
        for learner, r in results["learners"].items():
            mean, ci = np.asarray(r[model]["offline_mean"])[1:], np.asarray(r[model]["offline_ci95"])[1:]
            ax.plot(steps, mean, label=LABELS.get(learner, learner))
            ax.fill_between(steps, mean - ci, mean + ci, alpha=0.25)
        ax.set_xscale("log")
        ax.set_title(f"{results['dataset']} - {model}")
        ax.set_xlabel("impressions")
        ax.set_ylabel("offline NDCG@10")
        ax.legend(fontsize=8)
    save_figure(fig, run_dir / "oltr.png")
