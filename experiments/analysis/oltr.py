"""Table and learning-curve figures for ``oltr`` (Oosterhuis & de Rijke, CIKM 2018, Tables 2-3 and
Fig. 2 layout: offline NDCG@10 over impressions per click model, final offline and online NDCG)."""

from pathlib import Path

import numpy as np

from experiments.analysis.plotting import figure_grid, save_figure, tabulate

LABELS = {"dbgd": "DBGD", "mgd": "MGD", "pdgd": "PDGD"}

# What the paper reports for these learners (§7, Tables 2-3, Fig. 2), as text: the claim checked here.
PAPER = {
    "claim": "PDGD has higher offline NDCG@10 after 10,000 impressions and higher online (discounted cumulative) "
             "NDCG than DBGD and MGD under every click model, on every dataset including MQ2008 (Tables 2-3).",
    "numbers": "not stored here: the paper's table values were not available offline; compare with Tables 2-3 of "
               "Oosterhuis & de Rijke, CIKM 2018.",
}


def _comparisons(results: dict) -> str:
    """``"DBGD team-draft, MGD team-draft comparisons. "`` from the learners' options."""
    used = [f"{LABELS.get(l, l)} {v['options'][key].replace('_', '-')}" for l, v in results.get("settings", {}).items()
            for key in ("interleaving", "multileaving") if key in v["options"]]
    return f"{', '.join(used)} comparisons. " if used else ""


def table(results: dict) -> str:
    models = results["click_models"]
    learners = list(results["learners"])
    head = (f"{results['dataset']}: {len(results['folds'])} folds x {results['num_runs']} runs, "
            f"{results['num_impressions']:,} impressions, {results['num_grades']}-grade cascade users, "
            f"{_comparisons(results)}Mean ± 95% CI over runs x folds.")
    lines = [head, "", "| learner | " + " | ".join(f"offline {m}" for m in models) + " | "
             + " | ".join(f"online {m}" for m in models) + " |", "|---|" + "---|" * (2 * len(models))]
    for learner in learners:
        r = results["learners"][learner]
        off = [f"{r[m]['final_offline']:.4f} ± {r[m]['final_offline_ci95']:.4f}" for m in models]
        on = [f"{r[m]['final_online']:.1f} ± {r[m]['final_online_ci95']:.1f}" for m in models]
        lines.append(f"| {LABELS.get(learner, learner)} | " + " | ".join(off + on) + " |")
    if results.get("pdgd_best"):
        lines += ["", "PDGD above every other learner: " + ", ".join(
            f"{m}: offline {'yes' if v['offline'] else 'NO'}, online {'yes' if v['online'] else 'NO'}"
            for m, v in results["pdgd_best"].items())]
    lines += ["", f"Paper: {results['paper']['claim']} ({results['paper']['numbers']})"]
    return "\n".join(lines) + "\n"


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
