"""Helpers shared by the analysis modules: saved results to tables and figures.

Matplotlib is an optional extra; without it tables are still written.
"""

import json
import math
from pathlib import Path

from jaxrank.data import write_atomic, write_text


def tabulate(run_dir, table_fn) -> dict:
    """Reads ``results.json``, writes ``table.md`` from ``table_fn(results)``, prints it, returns results."""
    run_dir = Path(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    text = table_fn(results)
    write_text(run_dir / "table.md", text)
    print(text)
    return results


def load_summary(run_dir) -> dict:
    """An experiment's summary as its ``run`` returned it: ``results.json`` with ``timings.json``
    (which the registry writes apart) under ``"timings"``: what ``verdicts`` functions read."""
    run_dir = Path(run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    timings = run_dir / "timings.json"
    if timings.is_file():
        results["timings"] = json.loads(timings.read_text())
    return results


def figure_grid(num_panels: int, *, width: float = 4.5, height: float = 3.5):
    """``(fig, flat list of axes)`` for ``num_panels`` panels, or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure (pip install 'jaxrank[plots]').")
        return None
    cols = min(num_panels, 3)
    rows = math.ceil(num_panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = list(axes.reshape(-1))
    for ax in flat[num_panels:]:
        ax.set_visible(False)
    return fig, flat[:num_panels]


def save_figure(fig, path) -> None:
    """Writes a PNG atomically and closes the figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    write_atomic(path, lambda f: fig.savefig(f, format="png", dpi=120))
    plt.close(fig)


def plot_curves(path, steps, panels: dict, *, mean_key: str, ci_key=None, ylabel: str, xlog: bool = False) -> None:
    """One panel per entry of ``panels`` ({title: {label: summary}}), one line (with a 95% band
    when ``ci_key``) per label, drawn against ``steps`` (a list, or {title: list} per panel)."""
    fig_axes = figure_grid(len(panels))
    if fig_axes is None:
        return
    fig, axes = fig_axes
    for ax, (title, curves) in zip(axes, panels.items()):
        x = steps[title] if isinstance(steps, dict) else steps
        for label, summary in curves.items():
            mean = summary[mean_key]
            ax.plot(x[: len(mean)], mean, label=label)
            if ci_key is not None:
                lo = [m - c for m, c in zip(mean, summary[ci_key])]
                hi = [m + c for m, c in zip(mean, summary[ci_key])]
                ax.fill_between(x[: len(mean)], lo, hi, alpha=0.25)
        ax.set_title(title)
        ax.set_xlabel("time steps")
        ax.set_ylabel(ylabel)
        if xlog:
            ax.set_xscale("log")
        ax.legend(fontsize=8)
    save_figure(fig, path)
