"""Table and verdicts for ``solar_batch`` (Table 3 of Wang et al., ACL 2015)."""

from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import tabulate
from experiments.analysis.solar import LABELS, T3, cells
from jaxrank.metrics.statistics import mean_ci

LETOR_FOLDS = 5  # Table 3 averages the five LETOR folds
# "On par" as the paper uses it: the widest |SOLAR − RankSVM| NDCG@10 gap among the Table 3 rows it
# calls competitive (every data set but MQ2008, whose RankSVM @10 follows the LETOR script).
ON_PAR = max(abs(float(row[s].split()[2]) - float(row["ranksvm"].split()[2]))
             for name, row in T3.items() if name != "MQ2008" for s in ("solar_first_order", "solar_second_order"))
NDCG10 = 2  # column of NDCG@10 in the metric lists (NDCG@1, NDCG@5, NDCG@10, MAP)


# Measured once on this code (MQ2008, seed 0, 2026-11-26): where the distance to Table 3 comes from.
FINDING_MQ2008 = (
    "Why our MQ2008 row differs from Table 3 (measured): with the same grids, folds 1–3 alone give SOLAR-I / "
    "SOLAR-II / RankSVM test NDCG@10 0.466 / 0.469 / 0.470 and all five folds 0.498 / 0.502 / 0.501: folds 1–3 are "
    "MQ2008's hardest (their best single feature scores 0.46, over all five 0.50), which was the whole of the "
    "0.04 gap of a 3-fold run. Over the five folds our RankSVM under the LETOR script gives 0.3652 / 0.4700 / "
    "0.2295 against the LETOR website's 0.3626 / 0.4695 / 0.2279, so data, folds and metrics agree with LETOR's. "
    "SOLAR-I and SOLAR-II stay 0.009–0.015 below Table 3's NDCG@10 (0.5086 / 0.5171), inside the spread over "
    "folds; a C grid reaching 1e-2 (SOLAR-I 0.500) or choosing by validation NDCG@10 instead of MAP (0.496 / "
    "0.503) does not close it. The paper gives neither its number of passes nor its validation metric: we keep "
    "one pass and MAP, and our SOLAR rows differ from Table 3's by that much.")


def _fold_values(r: dict, col: int) -> list[float]:
    return [fold[col] for fold in r["test_per_fold"]]


def _paper_row_note(results: dict) -> str:
    folds = results["folds"]
    return "" if len(folds) == LETOR_FOLDS else f" (this run: folds {folds})"


def verdicts(results: dict) -> list:
    """Table 3: SOLAR-I and SOLAR-II on par with RankSVM (paired over folds, one convention), and
    our numbers against the paper's MQ2008 row (SOLAR rows: standard formula; RankSVM row: the LETOR
    website's, LETOR script)."""
    algos, paper = results["algorithms"], results["paper"]
    folds = results["folds"]
    out = []
    for name in ("solar_first_order", "solar_second_order"):
        claim = f"{LABELS[name]} is on par with RankSVM (test NDCG@10, same folds and convention; Table 3)"
        if name not in algos or "ranksvm" not in algos:
            out.append(V.Verdict(claim, V.UNTESTABLE, "not both run"))
            continue
        if len(folds) < 2:
            out.append(V.Verdict(claim, V.UNTESTABLE, "one fold: no spread to judge a difference"))
            continue
        ours, theirs = _fold_values(algos[name], NDCG10), _fold_values(algos["ranksvm"], NDCG10)
        d, h = mean_ci([a - b for a, b in zip(ours, theirs)])
        verdict = V.HOLDS if abs(d) + h <= ON_PAR else (V.FAILS if abs(d) - h > ON_PAR else V.UNTESTABLE)
        out.append(V.Verdict(claim, verdict, f"{LABELS[name]} − RankSVM {V.fmt(d, h, 4)} paired over folds {folds}; "
                             f"on par: within ±{ON_PAR:.3f} (Table 3's widest SOLAR − RankSVM NDCG@10 gap)"))
    rows = [(name, "test", f"{LABELS[name]} reproduces Table 3's MQ2008 row (NDCG@1/5/10, standard formula)")
            for name in ("solar_first_order", "solar_second_order")]
    rows.append(("ranksvm", "test_letor", "RankSVM under the LETOR script reproduces the LETOR website's MQ2008 row "
                 "(Table 3's RankSVM)"))
    for name, key, claim in rows:
        if name not in algos or name not in paper:
            out.append(V.Verdict(claim, V.UNTESTABLE, "not run, or no paper row for this data set"))
            continue
        if len(folds) != LETOR_FOLDS:
            out.append(V.Verdict(claim, V.UNTESTABLE, f"Table 3 averages the {LETOR_FOLDS} LETOR folds; this run has "
                                 f"folds {folds}, and MQ2008's fold means differ by several points"))
            continue
        checks, details = [], []
        for col, label in enumerate(("NDCG@1", "NDCG@5", "NDCG@10")):
            ours = algos[name][key][col]
            # The paper prints no spread: allow our own spread over the folds (per-fold values are
            # kept for the standard convention; the LETOR-script row borrows their spread).
            half = mean_ci([f[col] for f in algos[name]["test_per_fold"]])[1]
            checks.append(V.matches(ours, half, paper[name][col]))
            gap = ours - paper[name][col]
            details.append(f"{label} {ours:.4f} vs {paper[name][col]:.4f} ({gap:+.4f} ± {half:.4f})")
        out.append(V.Verdict(claim, V.worst(checks), "; ".join(details)))
    return out


def table(results: dict) -> str:
    paper = results["paper"]
    lines = [f"Batch protocol on {results['dataset']}: test metrics averaged over folds {results['folds']}, "
             f"hyperparameter chosen per fold by validation {results['select_by']}.", "",
             "| algorithm | convention | NDCG@1 | NDCG@5 | NDCG@10 | MAP | paper N@1 / N@5 / N@10 | chosen per fold |",
             "|---|---|---|---|---|---|---|---|"]
    for name in results["order"]:
        r = results["algorithms"][name]
        p = paper.get(name)
        ref = " / ".join(f"{v:.4f}" for v in p) if p else "–"
        chosen = ", ".join(f"{v:.3g}" for v in r["chosen"])
        standard, letor = (ref, "–") if name != "ranksvm" else ("–", ref)
        lines.append(f"| {LABELS.get(name, name)} | standard | {cells(r['test'])} | {standard} | {chosen} |")
        lines.append(f"| | LETOR script | {cells(r['test_letor'])} | {letor} | |")
    lines += ["", "The paper's RankSVM row is the LETOR website's (LETOR script conventions: NDCG@k of a query with "
              "fewer than k documents counts 0, hence ≈ 0.23 at @10 on MQ2008); its SOLAR rows use the standard "
              "formula (SOLAR eq. 1)." + _paper_row_note(results)]
    if results["dataset"].upper() == "MQ2008":
        lines += ["", FINDING_MQ2008]
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    tabulate(Path(run_dir), table)
