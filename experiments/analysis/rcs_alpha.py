"""Figure, table and verdicts for ``rcs_alpha`` (cumulative regret vs steps per alpha, as Fig. 4)."""

from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import plot_curves, tabulate

PAPER_LINEAR = (2, 30)  # Fig. 4 / §6.4: 2 of RUCB's 30 runs at alpha = 0.1 never lock onto the winner
PAPER_HORIZON = 400_000
# "RCS's regret about doubles" (Fig. 4 against Fig. 3): a factor nearer 2 than 1 or 3.
DOUBLES = (V.between(1, 2), V.between(2, 3))


def _curve(m: dict, algo: str, alpha: float):
    for label, v in m["curves"].items():
        name, _, value = label.partition(" alpha=")
        if name.lower() == algo and abs(float(value) - alpha) < 1e-9:
            return v["final"]
    return None


def verdicts(results: dict) -> list:
    """Fig. 4: at alpha = 0.1 some RUCB runs never lock on (linear regret); RCS's regret about doubles
    against alpha = 0.501 but every run flattens."""
    claims = ("At α = 0.1 some RUCB runs never lock onto the winner: linear regret (paper: 2 of 30) (Fig. 4)",
              "At α = 0.1 RCS's regret about doubles against α = 0.501 (Fig. 4)",
              "At α = 0.1 every RCS run flattens: none grows linearly (Fig. 4)")
    runs, horizon = results["num_runs"], results["checkpoints"][-1]
    short = "" if horizon >= PAPER_HORIZON else f"; T = {horizon:,} (the paper's {PAPER_HORIZON:,})"
    lines = [[], [], []]
    details = [[], [], []]
    for name, m in results["matrices"].items():
        rucb, rcs, rcs_base = _curve(m, "rucb", 0.1), _curve(m, "rcs", 0.1), _curve(m, "rcs", 0.501)
        if rucb is None:
            lines[0].append(V.UNTESTABLE)
            details[0].append(f"{name}: RUCB at α = 0.1 not run")
        else:
            k = rucb["linear_runs"]
            # Under the paper's rate, seeing no linear run in R runs has probability (1 - 2/30)^R.
            chance = (1 - PAPER_LINEAR[0] / PAPER_LINEAR[1]) ** runs
            lines[0].append(V.HOLDS if k else (V.FAILS if chance < 0.05 else V.UNTESTABLE))
            mean = V.fmt(rucb["regret_mean"], rucb["regret_ci95"], 1)
            details[0].append(f"{name}: {k} of {runs} RUCB runs linear (mean {mean}, median {rucb['regret_median']:.1f})"
                              + ("" if k else f"; P(none | paper's 2/30) = {chance:.2f}"))
        if rcs is None or rcs_base is None:
            lines[1].append(V.UNTESTABLE)
            lines[2].append(V.UNTESTABLE)
            details[1].append(f"{name}: RCS not run at α = 0.1 and 0.501")
            details[2].append(details[1][-1])
            continue
        r, h = V.ratio(rcs["regret_mean"], rcs["regret_ci95"], rcs_base["regret_mean"], rcs_base["regret_ci95"])
        lines[1].append(V.meets(r, h, *DOUBLES))
        details[1].append(f"{name}: {V.fmt(rcs['regret_mean'], rcs['regret_ci95'], 1)} / "
                          f"{V.fmt(rcs_base['regret_mean'], rcs_base['regret_ci95'], 1)} = {V.fmt(r, h, 2)} "
                          f"(about 2: {DOUBLES[0]:.2f}..{DOUBLES[1]:.2f})")
        lines[2].append(V.FAILS if rcs["linear_runs"] else V.HOLDS)
        details[2].append(f"{name}: {rcs['linear_runs']} of {runs} RCS runs linear")
    return [V.Verdict(c, V.where_testable(v), "; ".join(d) + short) for c, v, d in zip(claims, lines, details)]


def table(results: dict) -> str:
    lines = [f"Cumulative regret at T = {results['checkpoints'][-1]:,} (mean ± 95% CI over {results['num_runs']} runs); "
             "'linear runs' never locked onto the winner: their second half added more than half of their "
             "first half's regret.", "",
             "| matrix | algorithm | mean regret | median | linear runs |", "|---|---|---|---|---|"]
    for name, m in results["matrices"].items():
        for label, v in m["curves"].items():
            f = v["final"]
            lines.append(f"| {name} | {label} | {f['regret_mean']:.1f} ± {f['regret_ci95']:.1f} | "
                         f"{f['regret_median']:.1f} | {f['linear_runs']} / {results['num_runs']} |")
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {f"{name} (K = {len(m['rankers'])})": m["curves"] for name, m in results["matrices"].items()}
    plot_curves(run_dir / "rcs_alpha.png", results["checkpoints"], panels,
                mean_key="regret_mean", ci_key="regret_ci95", ylabel="cumulative regret")
