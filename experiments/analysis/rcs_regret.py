"""Figure and table for ``rcs_regret`` (cumulative regret vs steps, linear axes, as Fig. 3)."""

import json
from pathlib import Path

from experiments.analysis.plotting import figure_grid, save_figure
from jaxrank.data import write_text


def table(results: dict) -> str:
    algos = sorted({a for m in results["matrices"].values() for a in m["algorithms"]})
    lines = [f"Cumulative regret at T = {results['checkpoints'][-1]:,} (mean ± 95% CI over {results['num_runs']} runs, "
             f"alpha = {results['alpha']}).", "",
             "| matrix | K | " + " | ".join(algos) + " | RCS / RUCB |", "|---|---|" + "---|" * (len(algos) + 1)]
    for name, m in results["matrices"].items():
        cells = [f"{m['algorithms'][a]['final']['regret_mean']:.1f} ± {m['algorithms'][a]['final']['regret_ci95']:.1f}"
                 for a in algos]
        lines.append(f"| {name} | {len(m['rankers'])} | " + " | ".join(cells) + f" | {m.get('rcs_over_rucb', '')} |")
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    write_text(run_dir / "table.md", table(results))
    print(table(results))
    fig_axes = figure_grid(len(results["matrices"]))
    if fig_axes is None:
        return
    fig, axes = fig_axes
    steps = results["checkpoints"]
    for ax, (name, m) in zip(axes, results["matrices"].items()):
        for algo, v in m["algorithms"].items():
            lo = [a - b for a, b in zip(v["regret_mean"], v["regret_ci95"])]
            hi = [a + b for a, b in zip(v["regret_mean"], v["regret_ci95"])]
            ax.plot(steps, v["regret_mean"], label=algo.upper())
            ax.fill_between(steps, lo, hi, alpha=0.25)
        ax.set_title(f"{name} (K = {len(m['rankers'])})")
        ax.set_xlabel("time steps")
        ax.set_ylabel("cumulative regret")
        ax.legend()
    save_figure(fig, run_dir / "rcs_regret.png")
