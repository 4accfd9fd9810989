"""Table and verdicts for ``lcra_table``: test MAP mean ± sd over splits, the paired t-test against
the reference (SPD by default), the paper's Table 1 row when the data set is one of its LETOR 3.0
sets, and the decomposition of LCRA's difference from SPD into its two ingredients."""

from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import tabulate
from jaxrank.metrics.statistics import mean_ci

PAPER_ORDER = ("LCRA-1-5", "LCRA-1-1", "SPD", "SPD-MV")  # Table 1's column order
PAPER_TABLE = {  # Table 1 of the paper (test MAP, 20% labels), in PAPER_ORDER
    "TD2003": (0.15, 0.11, 0.10, 0.11),
    "TD2004": (0.14, 0.12, 0.10, 0.10),
    "NP2003": (0.54, 0.54, 0.47, 0.49),
    "NP2004": (0.51, 0.48, 0.44, 0.45),
    "HP2003": (0.60, 0.57, 0.50, 0.52),
    "HP2004": (0.52, 0.50, 0.45, 0.45),
    "OHSUMED": (0.33, 0.31, 0.29, 0.30),
}
# Table 1's claimed order, best first: ">=" or ">" between neighbours; and LCRA over the supervised SPD
# ("in all experiments the proposed LCRA algorithm outperforms supervised learning methods", §4).
RELATIONS = (("LCRA-1-5", ">=", "LCRA-1-1"), ("LCRA-1-1", ">", "SPD-MV"), ("SPD-MV", ">=", "SPD"),
             ("LCRA-1-5", ">", "SPD"))


def smallest_gap(upper: str, lower: str) -> float:
    """The smallest ``upper − lower`` MAP gap of Table 1 over its seven sets: on a set it does not
    cover, a gap at least that large is what the paper's claim leads one to expect."""
    i, j = PAPER_ORDER.index(upper), PAPER_ORDER.index(lower)
    return min(row[i] - row[j] for row in PAPER_TABLE.values())


# Measured once on this code (MQ2008, 5 splits, seed 0, 2026-11-26; the quick report's setting).
FINDING_MQ2008 = (
    "Why LCRA does not beat SPD on MQ2008 (measured): neither ingredient helps there. Two random feature views "
    "alone (SPD-MV − SPD) change test MAP by −0.001 ± 0.006; LCRA-1-1 with the co-regularisation all but off "
    "(μ = 1e-4, same splits and λ grid) scores 0.4583 against SPD-MV's 0.4590, so the learner reduces to SPD-MV "
    "as it should; with μ chosen by cross-validation (0.01–1) co-regularisation moves MAP by −0.003 ± 0.006 "
    "(LCRA-1-1) and −0.001 ± 0.006 (LCRA-1-5). Table 1's smallest LCRA-1-5 − SPD gain on its LETOR 3.0 sets, "
    "0.04, lies above our interval. MQ2008 is not one of the paper's sets; a likely reason, not measured here: "
    "its 46 features are a few retrieval scores (TF, IDF, BM25, language models) over a few document fields, so "
    "two random halves carry nearly the same ranking and leave the views little disagreement to regularise. We "
    "keep the result: on MQ2008 our LCRA is on par with SPD, not above it.")


def _fmt(x, digits=4):
    return "" if x is None else f"{x:.{digits}f}"


def _name(results: dict) -> str:
    return Path(results["dataset"]).name or results["dataset"]


def _paired(results: dict, a: str, b: str) -> tuple[float, float]:
    """Mean and 95% half-width of ``a − b`` test MAP, paired over the splits (both see the same split)."""
    return mean_ci([x - y for x, y in zip(results["methods"][a]["test_map"], results["methods"][b]["test_map"])])


def verdicts(results: dict) -> list:
    """Table 1's order, paired over the random splits, on the run's data set; the paper's MAP values
    where the data set is one of its LETOR 3.0 sets (otherwise that claim is not testable here)."""
    methods, paper = results["methods"], (results.get("paper") or {}).get("map")
    data_set, splits = _name(results), results["num_splits"]
    out = []
    if paper:
        checks, details = [], []
        for name in PAPER_ORDER:
            if name in methods:
                mean, half = mean_ci(methods[name]["test_map"])
                checks.append(V.matches(mean, half, paper[name]))
                details.append(f"{name} {V.fmt(mean, half, 4)} vs {paper[name]:.2f}")
        out.append(V.Verdict(f"Test MAP matches Table 1's {results['paper']['dataset']} row", V.worst(checks),
                             "; ".join(details) + " (the paper prints two decimals and no spread)"))
    else:
        out.append(V.Verdict("LCRA-1-5 ≥ LCRA-1-1 > SPD-MV ≥ SPD in test MAP on every LETOR 3.0 set (Table 1)",
                             V.UNTESTABLE, f"this run is on {data_set}, not one of Table 1's LETOR 3.0 sets (none is "
                             "under JAXRANK_DATA); the same order is checked on it below"))
    for upper, relation, lower in RELATIONS:
        sign = "≥" if relation == ">=" else ">"
        claim = f"{upper} {sign} {lower} in test MAP on {data_set} (Table 1's order, 20% labels)"
        if upper not in methods or lower not in methods:
            out.append(V.Verdict(claim, V.UNTESTABLE, "not both run"))
            continue
        if splits < 2:
            out.append(V.Verdict(claim, V.UNTESTABLE, "one split: no spread to judge a difference"))
            continue
        d, h = _paired(results, upper, lower)
        if relation == ">=":
            verdict, why = (V.HOLDS, "not significantly below") if d + h >= 0 else (V.FAILS, "significantly below")
        else:  # the paper's own gap on its set, or its smallest over the seven sets elsewhere
            gap = paper[upper] - paper[lower] if paper else smallest_gap(upper, lower)
            verdict, why = V.direction(d, h, paper_gap=gap if gap > 0 else None, runs=f"{splits} splits")
        expected = ("" if relation == ">=" else
                    f"; Table 1's {'gap' if paper else 'smallest gap over its sets'} "
                    f"{(paper[upper] - paper[lower]) if paper else smallest_gap(upper, lower):.2f}")
        out.append(V.Verdict(claim, verdict,
                             f"{upper} − {lower} {V.fmt(d, h, 4)} paired over {splits} splits ({why}){expected}"))
    return out


def decomposition(results: dict) -> list[str]:
    """LCRA − SPD split into its two ingredients, each paired over the splits: the two feature views
    (SPD-MV − SPD) and the co-regularisation on unlabeled pairs (LCRA − SPD-MV)."""
    methods = results["methods"]
    if not {"SPD", "SPD-MV"} <= set(methods) or results["num_splits"] < 2:
        return []
    lines = ["Where LCRA's difference from SPD comes from (test MAP, paired over the splits, 95% intervals): "
             f"two random feature views alone (SPD-MV − SPD) {V.fmt(*_paired(results, 'SPD-MV', 'SPD'), 4)}"]
    for name in ("LCRA-1-1", "LCRA-1-5"):
        if name in methods:
            lines.append(f"co-regularisation ({name} − SPD-MV) {V.fmt(*_paired(results, name, 'SPD-MV'), 4)}, "
                         f"in all {name} − SPD {V.fmt(*_paired(results, name, 'SPD'), 4)}")
    return ["; ".join(lines) + "."]


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
    lines += [""] + decomposition(results)
    if "MQ2008" in results["dataset"]:
        lines += ["", FINDING_MQ2008]
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    tabulate(Path(run_dir), table)
