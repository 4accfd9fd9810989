"""Table and heatmaps for ``preference_matrix``: the estimated P next to the reference matrix."""

from pathlib import Path

import numpy as np

from experiments.analysis.plotting import figure_grid, save_figure, tabulate


def table(results: dict) -> str:
    ids = results["feature_ids"]
    winner = results["condorcet_winner"]
    lines = [f"Estimated P ({results['method']} interleave, {results['click_model']} clicks, "
             f"{results['num_comparisons']:,} comparisons per pair, {results['num_queries']} queries of {results['source']}). "
             f"Condorcet winner: "
             f"{'none' if winner is None else 'feature ' + str(winner['feature_id'])}. "
             f"Ties (settled by a coin): {results['tie_fraction']:.1%}.", "",
             "| feature | " + " | ".join(map(str, ids)) + " |", "|---|" + "---|" * len(ids)]
    for f, row in zip(ids, results["pref"]):
        lines.append(f"| {f} | " + " | ".join(f"{x:.3f}" for x in row) + " |")
    ref = results.get("reference")
    if ref:
        rw = ref["condorcet_winner"]
        lines += ["", f"Reference {Path(ref['path']).name}: sign agreement {ref['sign_agreement']:.3f} over {ref['num_pairs']} pairs, "
                  f"mean |diff| {ref['mean_abs_diff']:.4f}, max {ref['max_abs_diff']:.4f}; reference Condorcet winner "
                  f"{'none' if rw is None else 'feature ' + str(rw['feature_id'])}."]
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {"estimated P": np.asarray(results["pref"])}
    if results.get("reference"):
        panels[f"reference ({Path(results['reference']['path']).stem})"] = np.asarray(results["reference"]["pref"])
    fig_axes = figure_grid(len(panels), width=5.0, height=4.3)
    if fig_axes is None:
        return
    fig, axes = fig_axes
    ids = results["feature_ids"]
    for ax, (title, p) in zip(axes, panels.items()):
        image = ax.imshow(p, vmin=0.0, vmax=1.0, cmap="RdBu_r")
        ax.set_title(title)
        ax.set_xticks(range(len(ids)), [str(f) for f in ids], rotation=90, fontsize=7)
        ax.set_yticks(range(len(ids)), [str(f) for f in ids], fontsize=7)
        ax.set_xlabel("feature j")
        ax.set_ylabel("feature i (P[i, j] = P(i beats j))")
        fig.colorbar(image, ax=ax, fraction=0.046)
    save_figure(fig, run_dir / "preference_matrix.png")
