"""Table, heatmaps and verdicts for ``preference_matrix``: the estimated P next to the reference
matrix (the MSLR-Perfect matrix the RCS and MergeDTS experiments run on)."""

from pathlib import Path

import numpy as np

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import figure_grid, save_figure, tabulate
from jaxrank.metrics.statistics import normal_quantile

# Comparisons per pair assumed behind the reference matrix: the RCS paper's (Zoghi et al. 2014, §6.1);
# the MergeDTS authors, who published MSLR-Perfect.txt, do not say. It only sets the reference's own
# (small) share of the noise.
REFERENCE_COMPARISONS = 80_000

Z95 = normal_quantile(0.975)  # two-sided 95% normal quantile


def verdicts(results: dict) -> list:
    """Our interleaving estimate against the reference matrix: the same Condorcet winner, entries
    within sampling noise, and the same sign on every pair the reference separates clearly."""
    claims = ("The estimate has the reference matrix's Condorcet winner",
              "The entries match the reference matrix within sampling noise",
              "Every pair the reference separates clearly has the same winner in the estimate")
    ref = results.get("reference")
    if not ref or results["source"].startswith("synthetic"):
        why = ("no reference matrix under JAXRANK_DATA" if not ref else
               "synthetic queries: the features are not the reference matrix's rankers")
        return [V.Verdict(c, V.UNTESTABLE, why) for c in claims]
    est, full = np.asarray(results["pref"]), np.asarray(ref["pref"])
    i, j = np.triu_indices(est.shape[0], 1)
    ours, theirs = est[i, j], full[i, j]
    winner, ref_winner = results["condorcet_winner"], ref["condorcet_winner"]
    name = lambda w: "none" if w is None else f"feature {w['feature_id']}"  # noqa: E731
    out = [V.Verdict(claims[0], V.HOLDS if winner == ref_winner and winner is not None else V.FAILS,
                     f"estimate: {name(winner)}; reference: {name(ref_winner)}")]
    # Binomial noise of both estimates (coin-settled ties included: each comparison is one Bernoulli).
    noise = np.sqrt(ours * (1 - ours) / results["num_comparisons"] + theirs * (1 - theirs) / REFERENCE_COMPARISONS)
    diff = np.abs(ours - theirs)
    outside = int((diff > Z95 * noise).sum())
    queries = f"{results['num_queries']} queries of {Path(results['source']).name}"
    # Within noise, about 5% of the pairs fall outside their 95% interval: allow the binomial upper end.
    allowed = 0.05 * diff.size + Z95 * np.sqrt(0.05 * 0.95 * diff.size)
    out.append(V.Verdict(claims[1], V.HOLDS if outside <= allowed else V.FAILS,
                         f"mean |P − P_ref| {diff.mean():.4f} against a 95% sampling half-width of "
                         f"{Z95 * noise.mean():.4f}; {outside} of {diff.size} pairs outside it (chance alone: at "
                         f"most {allowed:.0f}). The estimate "
                         f"reads {queries}, the reference the MergeDTS authors' MSLR queries: the query sample, not "
                         "the number of comparisons, sets the difference"))
    # "Clearly": further from 1/2 than the two matrices differ on average, so the query sample
    # alone cannot flip the pair.
    clear = np.abs(theirs - 0.5) > diff.mean()
    agree = np.sign(ours - 0.5) == np.sign(theirs - 0.5)
    out.append(V.Verdict(claims[2], V.HOLDS if agree[clear].all() else V.FAILS,
                         f"{int(agree[clear].sum())} of {int(clear.sum())} pairs with |P_ref − ½| > {diff.mean():.3f} "
                         f"(the mean |difference|) agree; all pairs: {ref['sign_agreement']:.3f} of {diff.size}"))
    return out


def table(results: dict) -> str:
    ids = results["feature_ids"]
    winner = results["condorcet_winner"]
    lines = [f"Estimated P ({results['method']} interleave, {results['click_model']} clicks, "
             f"{results['num_comparisons']:,} comparisons per pair, {results['num_queries']} queries of {results['source']}). "
             f"Condorcet winner: "
             f"{'none' if winner is None else 'feature ' + str(winner['feature_id'])}. "
             f"Ties (settled by a coin): {results['tie_fraction']:.1%}.", "",
             "| feature | " + " | ".join(map(str, ids)) + " |", "|---|" + "---|" * len(ids)]
    for f, row in zip(ids, results["pref"]):
        lines.append(f"| {f} | " + " | ".join(f"{x:.3f}" for x in row) + " |")
    ref = results.get("reference")
    if ref:
        rw = ref["condorcet_winner"]
        lines += ["", f"Reference {Path(ref['path']).name}: sign agreement {ref['sign_agreement']:.3f} over {ref['num_pairs']} pairs, "
                  f"mean |diff| {ref['mean_abs_diff']:.4f}, max {ref['max_abs_diff']:.4f}; reference Condorcet winner "
                  f"{'none' if rw is None else 'feature ' + str(rw['feature_id'])}."]
    return V.with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    panels = {"estimated P": np.asarray(results["pref"])}
    if results.get("reference"):
        panels[f"reference ({Path(results['reference']['path']).stem})"] = np.asarray(results["reference"]["pref"])
    fig_axes = figure_grid(len(panels), width=5.0, height=4.3)
    if fig_axes is None:
        return
    fig, axes = fig_axes
    ids = results["feature_ids"]
    for ax, (title, p) in zip(axes, panels.items()):
        image = ax.imshow(p, vmin=0.0, vmax=1.0, cmap="RdBu_r")
        ax.set_title(title)
        ax.set_xticks(range(len(ids)), [str(f) for f in ids], rotation=90, fontsize=7)
        ax.set_yticks(range(len(ids)), [str(f) for f in ids], fontsize=7)
        ax.set_xlabel("feature j")
        ax.set_ylabel("feature i (P[i, j] = P(i beats j))")
        fig.colorbar(image, ax=ax, fraction=0.046)
    save_figure(fig, run_dir / "preference_matrix.png")
