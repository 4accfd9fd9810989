"""Table, verdicts and curves for ``counterfactual_ltr``: test NDCG@10 against the number of logged clicks
per learner and ``η`` (Joachims, Swaminathan & Schnabel, WSDM 2017, §6's figure layout), with the logging
ranker and the full-information skyline beside them."""

from pathlib import Path

import numpy as np

from experiments.analysis.plotting import figure_grid, save_figure, tabulate

LABELS = {"naive": "Naive SVM-Rank (clicks)", "ips": "Propensity SVM-Rank", "ips_estimated":
          "Propensity SVM-Rank (estimated θ)", "ips_clipped": "Propensity SVM-Rank (clipped)",
          "dr": "Doubly robust", "full_info": "Full information (same lists)"}

CLAIMS = {
    "rise": "Propensity SVM-Rank rises above the naive ranker as clicks grow and approaches the skyline "
            "(Joachims et al., WSDM 2017, §6)",
    "dr": "The doubly robust estimator reaches IPS's NDCG with fewer clicks (Oosterhuis, TOIS 2023)",
    "clip": "Propensity clipping trades bias for variance: less spread over seeds at few clicks, a lower mean at "
            "many (Joachims et al. 2017, §6)",
}


def _curve(summary, eta, learner):
    return summary["curves"][eta].get(learner)


def _rise(summary, eta):
    ips, naive = _curve(summary, eta, "ips"), _curve(summary, eta, "naive")
    if ips is None or naive is None or len(summary["click_budgets"]) < 2:
        return "not testable here", "the run needs the ips and naive learners and two click budgets"
    gap = ips["mean"][-1] - naive["mean"][-1]
    above = gap > ips["ci95"][-1] + naive["ci95"][-1]
    rises = ips["mean"][-1] > ips["mean"][0]
    detail = (f"η = {eta}: at {summary['click_budgets'][-1]:,} clicks IPS {ips['mean'][-1]:.4f} ± "
              f"{ips['ci95'][-1]:.4f} "
              f"vs naive {naive['mean'][-1]:.4f} ± {naive['ci95'][-1]:.4f} (from {ips['mean'][0]:.4f} at "
              f"{summary['click_budgets'][0]:,}); gap to the skyline {summary['skyline_ndcg'] - ips['mean'][-1]:+.4f} "
              f"(skyline {summary['skyline_ndcg']:.4f}, logging ranker {summary['logging_ndcg']:.4f})")
    full = _curve(summary, eta, "full_info")
    if full is not None and full["mean"][-1] - naive["mean"][-1] <= full["ci95"][-1] + naive["ci95"][-1]:
        # the same learner on the same lists with the true click probabilities is the ceiling of any correction
        # of the naive one: when it is not above naive, no debiasing of these clicks can show as a gain
        return "not testable here", (f"{detail}; the full-information learner on the same lists "
                                     f"({full['mean'][-1]:.4f} ± {full['ci95'][-1]:.4f}) is not above the naive one, so "
                                     "no correction of these clicks can show")
    return ("holds" if above and rises else "does not hold"), detail


def _dr(summary, eta):
    ips, dr = _curve(summary, eta, "ips"), _curve(summary, eta, "dr")
    budgets = summary["click_budgets"]
    if ips is None or dr is None or len(budgets) < 2:
        return "not testable here", "the run needs the ips and dr learners and two click budgets"
    if ips["mean"][-1] - ips["ci95"][-1] <= ips["mean"][0] + ips["ci95"][0]:
        return "not testable here", (f"η = {eta}: IPS does not improve with clicks ({ips['mean'][0]:.4f} ± "
                                     f"{ips['ci95'][0]:.4f} at {budgets[0]:,}, {ips['mean'][-1]:.4f} ± "
                                     f"{ips['ci95'][-1]:.4f} at {budgets[-1]:,}), so there is no level to reach sooner")
    # the level IPS ends at, within its 95% CI; each learner's first budget reaching it
    target = ips["mean"][-1] - ips["ci95"][-1]

    def first(curve):
        return next((b for b, m in zip(budgets, curve["mean"]) if m >= target), None)

    n_ips, n_dr = first(ips), first(dr)
    if n_dr is None:
        return "does not hold", (f"η = {eta}: DR never reaches {target:.4f} (IPS's NDCG at {budgets[-1]:,} clicks "
                                 f"less its CI); DR {dr['mean'][-1]:.4f} there")
    factor = n_ips / n_dr
    detail = (f"η = {eta}: NDCG {target:.4f} (IPS's at {budgets[-1]:,} clicks less its CI) is reached by DR with "
              f"{n_dr:,} clicks and by IPS with {n_ips:,}: a factor {factor:g} (on the budget grid)")
    return ("holds" if factor > 1 else "does not hold"), detail


def _clip(summary, eta):
    ips, clipped = _curve(summary, eta, "ips"), _curve(summary, eta, "ips_clipped")
    if ips is None or clipped is None or summary["num_seeds"] < 2 or len(summary["click_budgets"]) < 2:
        return "not testable here", "the run needs ips, ips_clipped, two seeds and two click budgets"
    tau, smallest = summary["settings"]["clip"], min(summary["propensities"][eta]["true"])
    if smallest >= tau:
        return "not testable here", f"η = {eta}: τ = {tau:g} clips no rank (smallest propensity {smallest:.3f})"
    half = max(1, len(summary["click_budgets"]) // 2)
    spread_ips, spread_clip = float(np.mean(ips["std"][:half])), float(np.mean(clipped["std"][:half]))
    lower_variance = spread_clip < spread_ips
    bias = ips["mean"][-1] - clipped["mean"][-1]
    detail = (f"η = {eta}: std over seeds in the first {half} budgets {spread_clip:.4f} clipped vs {spread_ips:.4f}; "
              f"at {summary['click_budgets'][-1]:,} clicks clipped {clipped['mean'][-1]:.4f} vs {ips['mean'][-1]:.4f} "
              f"(τ = {summary['settings']['clip']:g})")
    return ("holds" if lower_variance and bias > 0 else "does not hold"), detail


def verdicts(summary: dict) -> list[tuple[str, str, str]]:
    """``(claim, verdict, detail)`` per claim and ``η``; verdict: "holds", "does not hold" or "not testable here"."""
    out = []
    for name, check in (("rise", _rise), ("dr", _dr), ("clip", _clip)):
        for eta in summary["etas"]:
            verdict, detail = check(summary, eta)
            out.append((CLAIMS[name], verdict, detail))
    return out


def table(results: dict) -> str:
    budgets = results["click_budgets"]
    lines = [f"Counterfactual LTR on {results['dataset']} fold {results['fold']}: test NDCG@10 (mean ± 95% CI over "
             f"{results['num_seeds']} seeds) against logged clicks; position-based users, {results['examination']} "
             f"examination, top {results['num_positions']} shown by a RankSVM trained on {results['logging_queries']} "
             f"queries. Logging ranker {results['logging_ndcg']:.4f}, skyline (full-information RankSVM) "
             f"{results['skyline_ndcg']:.4f}.", ""]
    for eta in results["etas"]:
        lines += [f"η = {eta} (propensities {', '.join(f'{p:.3f}' for p in results['propensities'][eta]['true'])}; "
                  f"estimated {', '.join(f'{p:.3f}' for p in results['propensities'][eta]['estimated_mean'])})", "",
                  "| learner | " + " | ".join(f"{b:,}" for b in budgets) + " |", "|---|" + "---|" * len(budgets)]
        for learner in results["learners"]:
            c = results["curves"][eta][learner]
            lines.append(f"| {LABELS.get(learner, learner)} | "
                         + " | ".join(f"{m:.4f} ± {h:.4f}" for m, h in zip(c["mean"], c["ci95"])) + " |")
        lines.append("")
    lines += ["Verdicts:", ""] + [f"- **{v}**: {c}. {d}." for c, v, d in verdicts(results)]
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    fig_axes = figure_grid(len(results["etas"]))
    if fig_axes is None:
        return
    fig, axes = fig_axes
    budgets = np.asarray(results["click_budgets"])
    for ax, eta in zip(axes, results["etas"]):
        for learner in results["learners"]:
            c = results["curves"][eta][learner]
            mean, ci = np.asarray(c["mean"]), np.asarray(c["ci95"])
            ax.plot(budgets, mean, marker="o", label=LABELS.get(learner, learner))
            ax.fill_between(budgets, mean - ci, mean + ci, alpha=0.2)
        ax.axhline(results["skyline_ndcg"], color="k", ls="--", lw=1, label="skyline")
        ax.axhline(results["logging_ndcg"], color="gray", ls=":", lw=1, label="logging ranker")
        ax.set_xscale("log")
        ax.set_title(f"{results['dataset']}, η = {eta}")
        ax.set_xlabel("number of training clicks")
        ax.set_ylabel("test NDCG@10")
        ax.legend(fontsize=7)
    save_figure(fig, run_dir / "counterfactual_ltr.png")
