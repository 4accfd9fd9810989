"""Table, bar plot and verdicts for ``feature_rankers`` results (reads ``results.json`` only)."""

import statistics
from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import tabulate
from jaxrank.data import write_atomic
from jaxrank.metrics.statistics import mean_ci


def verdicts(results: dict) -> list:
    """The RCS paper's arms are single-feature rankers of unequal quality (Zoghi et al. 2014, §5):
    the best feature's NDCG beats the median feature's, paired over the same folds. The claim fails
    when the whole interval of that gap lies below the noise of one feature's own fold mean (the
    arms would be indistinguishable)."""
    claim = "The single-feature rankers (the arms) differ in quality: the best beats the median feature in NDCG"
    metric = [m for m in results["metrics"] if m.startswith("NDCG")][-1]
    folds = results["per_fold"][metric]  # [F][D]
    if len(folds) < 2:
        return [V.Verdict(claim, V.UNTESTABLE, f"{len(folds)} fold: no spread over folds to judge a difference")]
    means = results["mean"][metric]
    order = sorted(range(len(means)), key=lambda d: -means[d])
    best, median = order[0], order[len(order) // 2]
    diff, half = mean_ci([f[best] - f[median] for f in folds])
    noise = statistics.fmean(mean_ci([f[d] for f in folds])[1] for d in range(len(means)))
    verdict, why = V.direction(diff, half, runs=f"{len(folds)} folds")
    if verdict == V.UNTESTABLE and diff + half < noise:
        verdict, why = V.FAILS, f"the whole interval is below one feature's own noise ({noise:.3f})"
    return [V.Verdict(claim, verdict,
                      f"{metric} of feature {results['features'][best]} {means[best]:.3f} vs median feature "
                      f"{results['features'][median]} {means[median]:.3f}: paired difference over {len(folds)} folds "
                      f"{V.fmt(diff, half)} ({why}); the {len(means)} features' means span "
                      f"{min(means):.3f}..{max(means):.3f}")]


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
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


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
