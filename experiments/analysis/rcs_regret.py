"""Figure and table for ``rcs_regret`` (cumulative regret vs steps, linear axes, as Fig. 3)."""

from pathlib import Path

from experiments.analysis.plotting import plot_curves, tabulate


def table(results: dict) -> str:
    algos = sorted({a for m in results["matrices"].values() for a in m["algorithms"]})
    settings = "; ".join(f"{algo}: " + ", ".join(f"{k} = {v}" for k, v in values.items())
                         for algo, values in results["settings"].items() if values)
    lines = [f"Cumulative regret at T = {results['checkpoints'][-1]:,} (mean ± 95% CI over {results['num_runs']} runs; "
             f"{settings}).", "",
             "| matrix | K | rankers (ids in the source matrix) | Condorcet winner | " + " | ".join(algos)
             + " | RCS / RUCB |", "|---|---|---|---|" + "---|" * (len(algos) + 1)]
    for name, m in results["matrices"].items():
        cells = [f"{m['algorithms'][a]['final']['regret_mean']:.1f} ± {m['algorithms'][a]['final']['regret_ci95']:.1f}"
                 for a in algos]
        rankers = ", ".join(str(r) for r in m["rankers"])
        lines.append(f"| {name} | {len(m['rankers'])} | {rankers} | {m.get('condorcet_winner', '')} | "
                     + " | ".join(cells) + f" | {m.get('rcs_over_rucb', '')} |")
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {f"{name} (K = {len(m['rankers'])})": {a.upper(): v for a, v in m["algorithms"].items()}
              for name, m in results["matrices"].items()}
    plot_curves(run_dir / "rcs_regret.png", results["checkpoints"], panels,
                mean_key="regret_mean", ci_key="regret_ci95", ylabel="cumulative regret")
