"""Figure (as Fig. 1 of Zoghi et al. 2014), table and verdicts for ``condorcet_probability``."""

from pathlib import Path

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import figure_grid, save_figure, tabulate
from jaxrank.metrics.statistics import normal_quantile, proportion_half

PAPER_MIN_CONDORCET = 0.91  # §6.1: "the probability ... satisfies the Condorcet assumption is always above 0.91"
PAPER_MATRIX_NOTE = ("the matrix here is the MergeDTS authors' MSLR-Perfect estimate (Li et al., TOIS 2020), not the "
                     "RCS paper's own 2014 estimate (80,000 comparisons per pair on MSLR-WEB30K) behind Fig. 1")

Z95 = normal_quantile(0.975)  # two-sided 95% normal quantile


CLAIMS = ("P(Condorcet winner) > 0.91 at every subset size (Fig. 1)",
          "P(Condorcet winner) is lowest at intermediate sizes, higher for small and large subsets (§6.1)",
          "P(total ordering) falls quickly with the subset size: below ½ by K = n/4 and below 1% by K = n/2 (Fig. 1)")


def _halves(results: dict) -> list[float]:
    """Per-K half-widths of the sampled probabilities, family-wise 95% over every sampled K
    (Bonferroni: one K out of ~135 dipping by chance must not decide a claim about every K);
    exact enumerations have none."""
    n, sampled = results["num_subsets"], sum(not e for e in results["exact"])
    z = normal_quantile(1 - 0.025 / max(sampled, 1))
    return [0.0 if e else z / Z95 * proportion_half(p, n) for p, e in zip(results["condorcet"], results["exact"])], z


def _ks(ks) -> str:
    return str(ks[0]) if len(ks) == 1 else f"{ks[0]}..{ks[-1]} ({len(ks)} sizes)"


def verdicts(results: dict) -> list:
    """Fig. 1's claims: P(Condorcet winner) above 0.91 at every K, lowest at intermediate K;
    P(total ordering) falling quickly with K."""
    out = []
    ks, cw, total = results["arm_counts"], results["condorcet"], results["total_order"]
    n = results["num_rankers"]
    if "MSLR" not in Path(results["matrix"]).name or len(ks) < 3:
        why = f"the matrix is {Path(results['matrix']).name} (n = {n}, K = {ks[0]}..{ks[-1]}), not the 136 MSLR rankers"
        return [V.Verdict(claim, V.UNTESTABLE, why) for claim in CLAIMS]
    halves, z = _halves(results)
    low = [k for k, p, h in zip(ks, cw, halves) if p + h < PAPER_MIN_CONDORCET]
    i = min(range(len(ks)), key=cw.__getitem__)
    sampling = f"{results['num_subsets']:,} subsets per K, family-wise 95% half-width (z = {z:.2f})"
    detail = (f"min P = {cw[i]:.3f} ± {halves[i]:.3f} at K = {ks[i]} ({sampling}); "
              + (f"significantly below {PAPER_MIN_CONDORCET} at K = {_ks(low)}; "
                 f"{PAPER_MATRIX_NOTE}" if low else f"no K significantly below {PAPER_MIN_CONDORCET}"))
    out.append(V.Verdict(CLAIMS[0], V.FAILS if low else V.HOLDS, detail))
    ends = [0, len(ks) - 1]
    higher = all(cw[e] - halves[e] > cw[i] + halves[i] for e in ends)
    out.append(V.Verdict(CLAIMS[1], V.HOLDS if 0 < i < len(ks) - 1 and higher else V.FAILS,
                         f"P = {cw[0]:.3f} at K = {ks[0]}, {cw[i]:.3f} at K = {ks[i]}, {cw[-1]:.3f} at K = {ks[-1]}"))
    # "Falls quickly" made concrete: below 1/2 within the first quarter of the sizes and below 1%
    # by half of them (upper ends of the same family-wise intervals).
    th = [z / Z95 * proportion_half(p, results["num_subsets"]) if not e else 0.0
          for p, e in zip(total, results["exact"])]
    half_k = next((k for k, p, h in zip(ks, total, th) if p + h < 0.5), None)
    gone_k = next((k for k, p, h in zip(ks, total, th) if p + h < 0.01), None)
    quick = half_k is not None and gone_k is not None and half_k <= n / 4 and gone_k <= n / 2
    out.append(V.Verdict(CLAIMS[2], V.HOLDS if quick else V.FAILS,
                         f"n = {n}: P(total) < ½ from K = {half_k}, < 1% from K = {gone_k} "
                         f"(n/4 = {n / 4:g}, n/2 = {n / 2:g}); P(Condorcet) there {cw[ks.index(gone_k)]:.3f}"
                         if gone_k is not None else f"n = {n}: P(total) < ½ from K = {half_k}, never below 1%"))
    return out


def table(results: dict) -> str:
    m = results["min_condorcet"]
    lines = [f"{Path(results['matrix']).name} (n = {results['num_rankers']}), {results['num_subsets']:,} subsets per K "
             f"(exact enumeration where C(n, K) is smaller). Minimum P(Condorcet winner) = {m['probability']:.4f} "
             f"at K = {m['num_arms']}.", "", "| K | P(Condorcet winner) | P(total ordering) | exact |", "|---:|---:|---:|---|"]
    for k, c, t, e in zip(results["arm_counts"], results["condorcet"], results["total_order"], results["exact"]):
        lines.append(f"| {k} | {c:.4f} | {t:.4f} | {'yes' if e else ''} |")
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    fig_axes = figure_grid(1, width=6.0, height=4.0)
    if fig_axes is None:
        return
    fig, (ax,) = fig_axes
    ax.plot(results["arm_counts"], results["condorcet"], label="Condorcet winner")
    ax.plot(results["arm_counts"], results["total_order"], label="total ordering")
    ax.set_xlabel("number of rankers K")
    ax.set_ylabel("probability")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(Path(results["matrix"]).stem)
    ax.legend()
    save_figure(fig, run_dir / "condorcet_probability.png")
