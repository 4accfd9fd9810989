"""Figure and table for ``rcs_alpha`` (cumulative regret vs steps per alpha, as Fig. 4)."""

from pathlib import Path

from experiments.analysis.plotting import plot_curves, tabulate


def table(results: dict) -> str:
    lines = [f"Cumulative regret at T = {results['checkpoints'][-1]:,} (mean ± 95% CI over {results['num_runs']} runs); "
             "'linear runs' never locked onto the winner: their second half added more than half of their "
             "first half's regret.", "",
             "| matrix | algorithm | mean regret | median | linear runs |", "|---|---|---|---|---|"]
    for name, m in results["matrices"].items():
        for label, v in m["curves"].items():
            f = v["final"]
            lines.append(f"| {name} | {label} | {f['regret_mean']:.1f} ± {f['regret_ci95']:.1f} | "
                         f"{f['regret_median']:.1f} | {f['linear_runs']} / {results['num_runs']} |")
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {f"{name} (K = {len(m['rankers'])})": m["curves"] for name, m in results["matrices"].items()}
    plot_curves(run_dir / "rcs_alpha.png", results["checkpoints"], panels,
                mean_key="regret_mean", ci_key="regret_ci95", ylabel="cumulative regret")
