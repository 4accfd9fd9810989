"""Tables, figure (Fig. 3 of Wang et al., ACL 2015) and verdicts for ``solar_scalability``.

``table.md`` holds what the seed determines (prefixes, pairs, Newton steps); the times, the ratios
and the verdicts, which read them, go to ``timings.md``.
"""

import math
from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import figure_grid, load_summary, save_figure, tabulate
from experiments.analysis.solar import LABELS
from jaxrank.data import write_text

PAPER_RATIO = 100.0  # §5.4: "SOLAR is much faster (e.g., 100+ times faster on this dataset)"
# "significantly more scalable": on Fig. 3's log axes the RankSVM curve rises faster, by at least half a
# power of the training-set size (time ∝ n^a against SOLAR-I's n^b with a − b ≥ 1/2).
STEEPER = 0.5
PAPER_LABEL = "RankSVM (paper's algorithm: Chapelle's primal Newton, NumPy)"


def _ratio(seconds: dict, name: str, k: int) -> float:
    return seconds[name][k] / seconds["solar_first_order"][k]


def _work_ratio(results: dict, name: str) -> float:
    """Arithmetic of the baseline over a SOLAR-I pass at the largest prefix, every pair active: a
    Newton step forms ``P·D²`` Hessian products, a SOLAR-I pass ``P·4D`` (a margin and an update)."""
    return results["newton_steps"][name][-1] * results["num_features"] / 4.0


def verdicts(results: dict) -> list:
    """Fig. 3: SOLAR-I trains more than 100× faster than RankSVM, and the gap widens with the data;
    judged against jaxrank's RankSVM and, where timed, the paper's own baseline algorithm."""
    claims = ("SOLAR-I trains > 100× faster than the primal RankSVM baseline: jaxrank's RankSVM (Fig. 3)",
              "SOLAR-I trains > 100× faster than the primal RankSVM baseline: the paper's algorithm, "
              "Chapelle's primal Newton (Fig. 3)",
              f"SOLAR is more scalable: RankSVM's time grows with a power of the training-set size ≥ {STEEPER} above "
              "SOLAR-I's (Fig. 3)")
    seconds = (results.get("timings") or {}).get("seconds")
    if not seconds:
        return [V.Verdict(c, V.UNTESTABLE, "no timings.json: the times are not in the summary") for c in claims]
    sizes, last = results["num_queries"], len(results["num_queries"]) - 1
    out = []
    for claim, name in zip(claims[:2], ("ranksvm", "ranksvm_paper")):
        if name not in seconds:
            out.append(V.Verdict(claim, V.UNTESTABLE, "not timed (paper_baseline=false)"))
            continue
        r = _ratio(seconds, name, last)
        steps = results.get("newton_steps", {}).get(name)
        work = (f"; its arithmetic is ≈ {_work_ratio(results, name):.0f}× a SOLAR-I pass ({steps[-1]} Newton steps "
                f"× D = {results['num_features']} / 4)") if steps else ""
        out.append(V.Verdict(claim, V.at_least(r, 0.0, PAPER_RATIO),
                             f"{sizes[last]} queries ({results['num_pairs'][last]:,} pairs): "
                             f"{seconds[name][last]:.4f} s vs "
                             f"SOLAR-I {seconds['solar_first_order'][last]:.4f} s = {r:.1f}× (median of "
                             f"{results['repeats']}){work}"))
    name = "ranksvm_paper" if "ranksvm_paper" in seconds else "ranksvm"
    if len(sizes) < 2:
        out.append(V.Verdict(claims[2], V.UNTESTABLE, f"one training-set size ({sizes[0]} queries)"))
    else:
        first, final = _ratio(seconds, name, 0), _ratio(seconds, name, last)
        exps = {a: math.log(seconds[a][last] / seconds[a][0]) / math.log(sizes[last] / sizes[0])
                for a in (name, "solar_first_order")}
        steeper = exps[name] - exps["solar_first_order"]
        out.append(V.Verdict(claims[2], V.HOLDS if steeper >= STEEPER else V.FAILS,
                             f"{LABELS.get(name, PAPER_LABEL) if name == 'ranksvm' else PAPER_LABEL}: ratio "
                             f"{first:.1f}× at {sizes[0]} queries, {final:.1f}× at {sizes[last]}; time ∝ "
                             f"queries^{exps[name]:.3f} vs SOLAR-I's ^{exps['solar_first_order']:.3f} "
                             f"(difference {steeper:+.3f}; times of single runs on shared cores decide the third "
                             "decimal)"))
    return out


def finding(results: dict) -> str:
    """Why the ratio is not the paper's, from the run's own figures."""
    seconds, last = results["timings"]["seconds"], len(results["num_queries"]) - 1
    name = "ranksvm_paper" if "ranksvm_paper" in seconds else "ranksvm"
    steps = results.get("newton_steps", {}).get(name)
    work = (f"at most ≈ {_work_ratio(results, name):.0f}× the arithmetic of a SOLAR-I pass" if steps
            else "more arithmetic")
    return (
        "Why the ratio is not the paper's > 100×: the paper's baseline (its footnote 3, Chapelle's primal Newton) "
        "forms "
        f"the active pairs' difference rows and a dense D × D Hessian at every Newton step: here {work} "
        f"({steps[-1] if steps else '?'} Newton steps × D = {results['num_features']} / 4, every pair active). Both "
        "methods are linear in the number of pairs, and on this CPU the Hessian products run at matrix-multiply speed "
        "while a SOLAR-I pass is a chain of dependent D-vector steps, so the measured time ratio is "
        f"{_ratio(seconds, name, last):.1f}×. The paper timed Matlab code against its own SOLAR implementation, a "
        "pairing we cannot reproduce; we keep our RankSVM and report the ratio as measured: our result differs from "
        "the paper's.")


def table(results: dict) -> str:
    lines = [f"Training prefixes of {results['dataset']} (times, ratios and verdicts in timings.md).", "",
             "| queries | pairs | Newton steps (jaxrank RankSVM) | Newton steps (paper's algorithm) |",
             "|---|---|---|---|"]
    steps = results.get("newton_steps", {})
    for k, (n, p) in enumerate(zip(results["num_queries"], results["num_pairs"])):
        ours = steps.get("ranksvm", [""] * (k + 1))[k]
        paper = steps.get("ranksvm_paper", ["–"] * (k + 1))[k]
        lines.append(f"| {n} | {p} | {ours} | {paper} |")
    return "\n".join(lines) + "\n"


def timings_table(results: dict) -> str:
    """The training times (``seconds``, from ``timings.json``), the ratios and the verdicts."""
    seconds = results["timings"]["seconds"]
    algos = [a for a in ("solar_first_order", "solar_second_order", "ranksvm", "ranksvm_paper") if a in seconds]
    names = {**LABELS, "ranksvm_paper": PAPER_LABEL}
    lines = [f"Training time (s, median of {results['repeats']}, after compile) vs number of training queries on "
             f"{results['dataset']}.", "",
             "| queries | pairs | " + " | ".join(names.get(a, a) for a in algos)
             + " | RankSVM / SOLAR-I | paper's / SOLAR-I |",
             "|---|---|" + "---|" * (len(algos) + 2)]
    for k, n in enumerate(results["num_queries"]):
        cells = " | ".join(f"{seconds[a][k]:.4f}" for a in algos)
        ours = _ratio(seconds, "ranksvm", k)
        paper = f"{_ratio(seconds, 'ranksvm_paper', k):.1f}" if "ranksvm_paper" in seconds else "–"
        lines.append(f"| {n} | {results['num_pairs'][k]} | {cells} | {ours:.1f} | {paper} |")
    lines += ["", finding(results)]
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    tabulate(run_dir, table)
    results = load_summary(run_dir)
    text = timings_table(results)
    write_text(run_dir / "timings.md", text)
    print(text)
    fig_axes = figure_grid(1)
    if fig_axes is None:
        return
    fig, (ax,) = fig_axes
    seconds = results["timings"]["seconds"]
    for name in ("solar_first_order", "solar_second_order", "ranksvm", "ranksvm_paper"):
        if name in seconds:
            label = PAPER_LABEL if name == "ranksvm_paper" else LABELS[name]
            ax.plot(results["num_queries"], seconds[name], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of training queries")
    ax.set_ylabel("training time (s)")
    ax.set_title(f"{results['dataset']}: training time")
    ax.legend(fontsize=8)
    save_figure(fig, run_dir / "solar_scalability.png")
