"""Figure and table for ``rcs_accuracy`` (accuracy and regret vs horizon, log x, as Fig. 2)."""

from pathlib import Path

from experiments.analysis.plotting import plot_curves, tabulate


def table(results: dict) -> str:
    lines = [f"Best-arm accuracy (share of {results['num_runs']} runs) and mean cumulative regret per horizon.", ""]
    for name, m in results["matrices"].items():
        lines += [f"**{name}** (K = {len(m['rankers'])})", "",
                  "| horizon | RCS accuracy | SAVAGE accuracy | RCS regret | SAVAGE regret |", "|---|---|---|---|---|"]
        for i, h in enumerate(results["horizons"]):
            lines.append(f"| {h:,} | {m['rcs']['accuracy'][i]:.3f} | {m['savage']['accuracy'][i]:.3f} | "
                         f"{m['rcs']['regret_mean'][i]:.1f} | {m['savage']['regret_mean'][i]:.1f} |")
        lines.append("")
    return "\n".join(lines)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    for metric, ylabel, ci in (("accuracy", "accuracy", None), ("regret_mean", "cumulative regret", "regret_ci95")):
        panels = {f"{name} (K = {len(m['rankers'])})": {"RCS": m["rcs"], "Condorcet SAVAGE": m["savage"]}
                  for name, m in results["matrices"].items()}
        plot_curves(run_dir / f"rcs_accuracy_{metric.split('_')[0]}.png", results["horizons"], panels,
                    mean_key=metric, ci_key=ci, ylabel=ylabel, xlog=True)
