"""Figures and table for ``rcs_scaling`` (regret and suboptimal-comparison share per K, as Fig. 5)."""

from pathlib import Path

from experiments.analysis.plotting import plot_curves, tabulate


def table(results: dict) -> str:
    lines = [f"Mean over {results['num_runs']} runs at each panel's horizon.", "",
             "| setting | horizon | algorithm | cumulative regret | suboptimal comparisons |", "|---|---|---|---|---|"]
    for key, p in results["panels"].items():
        for algo, v in p["algorithms"].items():
            f = v["final"]
            lines.append(f"| {key} | {p['horizon']:,} | {algo} | {f['regret_mean']:.1f} ± {f['regret_ci95']:.1f} | "
                         f"{100 * f['suboptimal']:.2f}% |")
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    for metric, ylabel, ci in (("regret_mean", "cumulative regret", "regret_ci95"),
                               ("suboptimal", "share of suboptimal comparisons", None)):
        panels = {key: {a.upper(): v for a, v in p["algorithms"].items()} for key, p in results["panels"].items()}
        steps = {key: p["checkpoints"] for key, p in results["panels"].items()}
        plot_curves(run_dir / f"rcs_scaling_{metric.split('_')[0]}.png", steps, panels,
                    mean_key=metric, ci_key=ci, ylabel=ylabel)
