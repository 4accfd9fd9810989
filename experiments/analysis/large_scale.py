"""Tables and figures for ``large_scale``: cumulative regret at the horizon (mean ± 95% CI),
dropped winners, and regret curves on log-log axes (as the MergeDTS paper's large-scale plots)
for the 136-ranker matrices and for the Copeland subsets."""

from pathlib import Path

from experiments.analysis.plotting import figure_grid, save_figure, tabulate

LABELS = {"merge_dts": "MergeDTS", "merge_rucb": "MergeRUCB", "dts": "D-TS", "rcs": "RCS", "rucb": "RUCB",
          "ccb": "CCB", "scb": "SCB"}


def _label(name: str) -> str:
    return LABELS.get(name, name)


def _cell(summary: dict) -> str:
    final = summary["final"]
    return f"{final['regret_mean']:,.1f} ± {final['regret_ci95']:,.1f}"


def table(results: dict) -> str:
    lines = [f"Condorcet regret at each algorithm's horizon (mean ± 95% CI over {results['num_runs']} runs; "
             f"the paper runs {results['paper_horizon']:,} steps). Algorithms run {results['num_steps']:,} steps, "
             f"those in {results['slow']} {results['slow_num_steps']:,}.", "",
             "Accuracy: the report at the horizon is the Condorcet winner. MergeDTS and MergeRUCB drop arms: "
             "'winner dropped' counts the runs whose final state no longer holds the Condorcet winner.", "",
             "| matrix | K | algorithm | steps | regret | accuracy | winner dropped (runs) |",
             "|---|---|---|---|---|---|---|"]
    for name, m in results["matrices"].items():
        for algo, s in m["algorithms"].items():
            dropped = s.get("winner_dropped_runs", "")
            accuracy = "" if s["final"]["accuracy"] is None else f"{s['final']['accuracy']:.2f}"
            lines.append(f"| {name} | {m['num_arms']} | {_label(algo)} | {s['num_steps']:,} | {_cell(s)} | "
                         f"{accuracy} | {dropped} |")
        algos = m["algorithms"]
        pair = [algos.get("merge_dts"), algos.get("merge_rucb")]
        if all(pair) and pair[0]["num_steps"] == pair[1]["num_steps"]:
            ratio = pair[0]["final"]["regret_mean"] / max(pair[1]["final"]["regret_mean"], 1e-9)
            lines.append(f"| {name} | | MergeDTS / MergeRUCB | | {ratio:.3f} | | |")
    if results.get("copeland"):
        lines += ["", "Copeland regret on subsets without a Condorcet winner (mean ± 95% CI; 'late/early' = "
                  "regret per step in the second half of the horizon over that in the first: ~1 linear, "
                  "-> 0 sublinear; accuracy = report is a Copeland winner).", "",
                  "| subset | rankers | Copeland winners | smallest gap | algorithm | steps | regret | late/early "
                  "| accuracy |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for key, c in results["copeland"].items():
            for algo, s in c["algorithms"].items():
                rankers, winners = (", ".join(map(str, c[k])) for k in ("rankers", "copeland_winners"))
                lines.append(f"| {key} ({c['construction']}) | {rankers} | {winners} | {c['smallest_gap']:.4f} | "
                             f"{_label(algo)} | {s['num_steps']:,} | {_cell(s)} | {s['sublinearity']:.3f} | "
                             f"{s['final']['accuracy']:.2f} |")
    return "\n".join(lines) + "\n"


def _loglog(path, panels: dict, ylabel: str) -> None:
    """One log-log panel per entry of ``panels`` ({title: {label: summary with checkpoints}})."""
    fig_axes = figure_grid(len(panels))
    if fig_axes is None:
        return
    fig, axes = fig_axes
    for ax, (title, curves) in zip(axes, panels.items()):
        for label, s in curves.items():
            x, mean, ci = s["checkpoints"], s["regret_mean"], s["regret_ci95"]
            line, = ax.plot(x, [max(v, 1e-3) for v in mean], label=label)
            ax.fill_between(x, [max(m - c, 1e-3) for m, c in zip(mean, ci)], [m + c for m, c in zip(mean, ci)],
                            alpha=0.2, color=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("time steps")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
    save_figure(fig, path)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {f"{name} (K = {m['num_arms']})": {_label(a): s for a, s in m["algorithms"].items()}
              for name, m in results["matrices"].items() if m["algorithms"]}
    if panels:
        _loglog(run_dir / "large_scale.png", panels, "cumulative regret")
    copeland = {key: {_label(a): s for a, s in c["algorithms"].items()}
                for key, c in results.get("copeland", {}).items()}
    if copeland:
        _loglog(run_dir / "large_scale_copeland.png", copeland, "cumulative Copeland regret")
