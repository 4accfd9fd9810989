"""Figure (as Fig. 1 of Zoghi et al. 2014) and table for ``condorcet_probability``."""

from pathlib import Path

from experiments.analysis.plotting import figure_grid, save_figure, tabulate


def table(results: dict) -> str:
    m = results["min_condorcet"]
    lines = [f"{Path(results['matrix']).name} (n = {results['num_rankers']}), {results['num_subsets']:,} subsets per K "
             f"(exact enumeration where C(n, K) is smaller). Minimum P(Condorcet winner) = {m['probability']:.4f} "
             f"at K = {m['num_arms']}.", "", "| K | P(Condorcet winner) | P(total ordering) | exact |", "|---:|---:|---:|---|"]
    for k, c, t, e in zip(results["arm_counts"], results["condorcet"], results["total_order"], results["exact"]):
        lines.append(f"| {k} | {c:.4f} | {t:.4f} | {'yes' if e else ''} |")
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    fig_axes = figure_grid(1, width=6.0, height=4.0)
    if fig_axes is None:
        return
    fig, (ax,) = fig_axes
    ax.plot(results["arm_counts"], results["condorcet"], label="Condorcet winner")
    ax.plot(results["arm_counts"], results["total_order"], label="total ordering")
    ax.set_xlabel("number of rankers K")
    ax.set_ylabel("probability")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(Path(results["matrix"]).stem)
    ax.legend()
    save_figure(fig, run_dir / "condorcet_probability.png")
