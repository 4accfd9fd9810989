"""Table for ``lcra_table``: test MAP mean ± sd over splits, the paired t-test against the reference
(SPD by default) and the paper's Table 1 row when the data set is one of its LETOR 3.0 sets."""

from pathlib import Path

from experiments.analysis.plotting import tabulate

PAPER_ORDER = ("LCRA-1-5", "LCRA-1-1", "SPD", "SPD-MV")  # Table 1's column order


def _fmt(x, digits=4):
    return "" if x is None else f"{x:.{digits}f}"


def table(results: dict) -> str:
    ref = results["reference"]
    paper = (results.get("paper") or {}).get("map") or {}
    steps = f"N = {results['num_steps']:,} steps (CV fits {results['cv_steps']:,})"
    lines = [f"Test MAP on {results['dataset']} ({results['num_queries']} queries, {results['num_docs']} docs), "
             f"mean ± sd over {results['num_splits']} random splits, {100 * results.get('label_fraction', 0.2):g}% labels, "
             f"{steps}. "
             f"p: two-sided paired t-test against {ref} over the splits.", "",
             "| method | test MAP | vs " + ref + ": mean diff | wins/losses | p | grid | paper |",
             "|---|---|---|---|---|---|---|"]
    order = [m for m in PAPER_ORDER if m in results["methods"]] + [m for m in results["methods"] if m not in PAPER_ORDER]
    for name in order:
        r = results["methods"][name]
        t = results["paired_t_test"].get(name)
        diff = f"{t['mean_diff']:+.4f}" if t else ""
        wl = f"{t['wins']}/{t['losses']}" if t else ""
        p = _fmt(t["p_value"]) if t else ""
        lines.append(f"| {name} | {r['mean']:.4f} ± {r['sd']:.4f} | {diff} | {wl} | {p} | {r['grid_size']} | "
                     f"{paper.get(name, '')} |")
    if not paper:
        lines += ["", "The paper's Table 1 covers the LETOR 3.0 sets only (TD/NP/HP 2003-2004, OHSUMED); "
                  "it has no row for this data set."]
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    tabulate(Path(run_dir), table)
