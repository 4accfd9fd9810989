"""Table and bar plot for ``feature_rankers`` results (reads ``results.json`` only)."""

from pathlib import Path

from experiments.analysis.plotting import tabulate
from jaxrank.data import write_atomic


def table(results: dict, *, top: int = 0) -> str:
    """Markdown table: one row per feature, sorted by the last NDCG column, mean ± std over folds."""
    names = results["metrics"]
    order_by = [m for m in names if m.startswith("NDCG")][-1]
    rows = sorted(range(len(results["features"])), key=lambda d: -results["mean"][order_by][d])
    if top:
        rows = rows[:top]
    lines = [
        f"Single-feature rankers on {results['source']} ({results['convention']} metrics, "
        f"folds {results['folds']}, mean ± std over folds), sorted by {order_by}.",
        "",
        "| feature | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for d in rows:
        cells = [f"{results['mean'][m][d]:.4f} ± {results['std'][m][d]:.4f}" for m in names]
        lines.append(f"| {results['features'][d]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = results["metrics"]
    features = results["features"]
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(max(8, 0.22 * len(features) * len(names) / 2), 4))
    for i, m in enumerate(names):
        x = [f + (i - (len(names) - 1) / 2) * width for f in features]
        ax.bar(x, results["mean"][m], width, yerr=results["std"][m], label=m, error_kw={"lw": 0.5})
    ax.set_xlabel("feature (ranker)")
    ax.set_ylabel("mean over folds")
    ax.set_xlim(features[0] - 1, features[-1] + 1)
    ax.set_title(f"Single-feature rankers: {Path(results['source']).name} ({results['convention']} metrics)")
    ax.legend(ncol=len(names), fontsize=8)
    fig.tight_layout()
    write_atomic(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)


def report(run_dir) -> None:
    """Writes ``table.md`` and ``feature_rankers.png`` (when matplotlib is installed)."""
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    try:
        plot(results, run_dir / "feature_rankers.png")
    except ImportError:
        print("[feature_rankers] matplotlib not installed: no figure (pip install 'jaxrank[plots]').")
