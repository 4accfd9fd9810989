"""Figure, table and verdicts for ``rcs_regret`` (cumulative regret vs steps, linear axes, as Fig. 3)."""

from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import plot_curves, tabulate

PAPER_MATRIX = "MSLR-Perfect"  # the paper's MSLR setting (perfect click model, K = 10)
PAPER_HORIZON = 50_000
# "roughly a third less" (§6.3): a reduction nearer 1/3 than a quarter or a half.
THIRD = (V.between(1 / 4, 1 / 3), V.between(1 / 3, 1 / 2))
# "on the order of 200" (§6.3): nearer 200 than 100 or 500 (the 1-2-5 series).
GAP = (V.between(100, 200), V.between(200, 500))


def _final(m: dict, algo: str) -> tuple[float, float]:
    f = m["algorithms"][algo]["final"]
    return f["regret_mean"], f["regret_ci95"]


def verdicts(results: dict) -> list:
    """Fig. 3 and §6.3: RCS has less regret than RUCB, roughly a third less, a plateau gap ≈ 200."""
    claims = ("RCS has less cumulative regret than RUCB (Fig. 3)",
              "RCS has roughly a third less regret than RUCB on MSLR-Perfect (§6.3)",
              "The regret gap RUCB − RCS at the plateau is on the order of 200 on MSLR-Perfect (§6.3)")
    both = {n: m for n, m in results["matrices"].items() if {"rcs", "rucb"} <= set(m["algorithms"])}
    if not both:
        return [V.Verdict(c, V.UNTESTABLE, "RCS and RUCB were not both run") for c in claims]
    horizon, runs = results["checkpoints"][-1], f"{results['num_runs']} runs"
    checks, details = [], []
    for name, m in both.items():
        (rcs, h_rcs), (rucb, h_rucb) = _final(m, "rcs"), _final(m, "rucb")
        verdict, _ = V.direction(rucb - rcs, V.spread(h_rcs, h_rucb), runs=runs)
        checks.append(verdict)
        details.append(f"{name}: RCS {V.fmt(rcs, h_rcs, 1)} vs RUCB {V.fmt(rucb, h_rucb, 1)} ({verdict})")
    out = [V.Verdict(claims[0], V.worst(checks), f"T = {horizon:,}, {runs}: " + "; ".join(details))]
    m = both.get(PAPER_MATRIX)
    if m is None:
        why = f"{PAPER_MATRIX} was not run (matrices: {', '.join(both)})"
        return out + [V.Verdict(c, V.UNTESTABLE, why) for c in claims[1:]]
    (rcs, h_rcs), (rucb, h_rucb) = _final(m, "rcs"), _final(m, "rucb")
    r, h = V.ratio(rcs, h_rcs, rucb, h_rucb)
    short = "" if horizon >= PAPER_HORIZON else f"; T = {horizon:,} is before the paper's {PAPER_HORIZON:,}"
    out.append(V.Verdict(claims[1], V.meets(1 - r, h, *THIRD),
                         f"reduction 1 − RCS/RUCB = {V.fmt(1 - r, h)} (a third: {THIRD[0]:.2f}..{THIRD[1]:.2f})"
                         + short))
    gap, h_gap = rucb - rcs, V.spread(h_rcs, h_rucb)
    out.append(V.Verdict(claims[2], V.meets(gap, h_gap, *GAP),
                         f"gap {V.fmt(gap, h_gap, 1)} at T = {horizon:,} (≈ 200: {GAP[0]:.0f}..{GAP[1]:.0f}){short}"))
    return out


def table(results: dict) -> str:
    algos = sorted({a for m in results["matrices"].values() for a in m["algorithms"]})
    settings = "; ".join(f"{algo}: " + ", ".join(f"{k} = {v}" for k, v in values.items())
                         for algo, values in results["settings"].items() if values)
    lines = [f"Cumulative regret at T = {results['checkpoints'][-1]:,} (mean ± 95% CI over {results['num_runs']} runs; "
             f"{settings}).", "",
             "| matrix | K | rankers (ids in the source matrix) | Condorcet winner | " + " | ".join(algos)
             + " | RCS / RUCB |", "|---|---|---|---|" + "---|" * (len(algos) + 1)]
    for name, m in results["matrices"].items():
        cells = [f"{m['algorithms'][a]['final']['regret_mean']:.1f} ± {m['algorithms'][a]['final']['regret_ci95']:.1f}"
                 for a in algos]
        rankers = ", ".join(str(r) for r in m["rankers"])
        lines.append(f"| {name} | {len(m['rankers'])} | {rankers} | {m.get('condorcet_winner', '')} | "
                     + " | ".join(cells) + f" | {m.get('rcs_over_rucb', '')} |")
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {f"{name} (K = {len(m['rankers'])})": {a.upper(): v for a, v in m["algorithms"].items()}
              for name, m in results["matrices"].items()}
    plot_curves(run_dir / "rcs_regret.png", results["checkpoints"], panels,
                mean_key="regret_mean", ci_key="regret_ci95", ylabel="cumulative regret")
