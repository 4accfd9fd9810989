"""Tables, verdicts and curves for ``counterfactual_ltr``: test NDCG@10 against the size of the click log
per row, with verdicts from **paired differences** (the same seed and fold give both rows' logs).

* ``joachims2017``: IPS − naive per budget (Joachims, Swaminathan & Schnabel, WSDM 2017, §6: Propensity
  SVM-Rank rises above the naive ranker as clicks grow), and clipping's variance/bias trade.
* ``oosterhuis2023``: DR − IPS per budget, and the factor of sessions DR saves to reach IPS's final
  level (Oosterhuis, TOIS 2023: DR needs far fewer sessions), with the DM-alone and perfect-DM rows
  as diagnostics.
* both: a flag on any row that ends below the logging ranker (paired with the part's logging NDCG).

Each 95% interval is Student's t over the ``folds × seeds`` pairs (``experiments.analysis.verdicts``).
"""

from pathlib import Path

import numpy as np

from experiments.analysis.plotting import figure_grid, save_figure, tabulate
from experiments.analysis.verdicts import mean_half

LABELS = {"naive": "Naive (clicks)", "ips": "IPS", "ips_estimated": "IPS (estimated θ)",
          "ips_clipped": "IPS (clipped)", "dm": "DM alone", "dr": "Doubly robust",
          "dr_perfect_dm": "DR, perfect DM (diagnostic)", "full_info": "Full information (same candidates)"}

CLAIMS = {
    "rise": "Propensity SVM-Rank (IPS) rises above the naive ranker as clicks grow (Joachims et al., WSDM 2017, §6)",
    "clip": "Propensity clipping trades bias for variance: less spread over seeds at few clicks, a lower mean at "
            "many (Joachims et al. 2017, §6)",
    "dr": "The doubly robust estimator needs fewer sessions than IPS to reach the same NDCG (Oosterhuis, TOIS 2023)",
    "floor": "No learner ends below the logging ranker",
}


def _groups(results: dict) -> dict:
    """``{group: [part names]}``: parts pooled for one verdict (joachims2017: per η; else all folds)."""
    groups = {}
    for name, part in results["parts"].items():
        key = f"η = {part['eta']}" if results["protocol"] == "joachims2017" else "all folds"
        groups.setdefault(key, []).append(name)
    return groups


def _values(results: dict, parts, row: str) -> np.ndarray:
    """``[P·S, C]`` per-(part, seed) NDCG of ``row``."""
    m = results["learners"].index(row)
    return np.concatenate([np.asarray(results["parts"][p]["ndcg"])[:, :, m] for p in parts])


def _logging(results: dict, parts) -> np.ndarray:
    """``[P·S]`` each pair's logging-ranker NDCG."""
    s = results["num_seeds"]
    return np.concatenate([np.full(s, results["parts"][p]["logging_ndcg"]) for p in parts])


def paired(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per budget mean and 95% half-width of ``a − b`` over the pairs (``[P·S, C]`` each)."""
    out = [mean_half(a[:, c] - b[:, c]) for c in range(a.shape[1])]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def budget_to_reach(budgets, means, level: float):
    """The budget at which ``means`` first reaches ``level``, linear in ``log(budget)`` between grid points;
    ``None`` when never."""
    logs = np.log10(np.asarray(budgets, np.float64))
    for c, m in enumerate(means):
        if m >= level:
            if c == 0:
                return float(budgets[0])
            lo, hi = means[c - 1], m
            frac = (level - lo) / (hi - lo) if hi > lo else 1.0
            return float(10 ** (logs[c - 1] + frac * (logs[c] - logs[c - 1])))
    return None


def _diffs(budgets, mean, half) -> str:
    return "; ".join(f"{b:,}: {m:+.4f} ± {h:.4f}" for b, m, h in zip(budgets, mean, half))


def _rise(results, parts, group):
    rows = results["learners"]
    if "ips" not in rows or "naive" not in rows or len(results["budgets"]) < 2:
        return "not testable here", "the run needs the ips and naive rows and two budgets"
    budgets = results["budgets"]
    ips, naive = _values(results, parts, "ips"), _values(results, parts, "naive")
    mean, half = paired(ips, naive)
    rise, rise_half = mean_half(ips[:, -1] - ips[:, 0])
    detail = (f"{group}: IPS − naive (paired, {ips.shape[0]} pairs) per budget {_diffs(budgets, mean, half)}; IPS "
              f"rises by {rise:+.4f} ± {rise_half:.4f} from {budgets[0]:,} to {budgets[-1]:,} clicks")
    if "full_info" in rows:
        full, full_half = paired(_values(results, parts, "full_info"), naive)
        detail += f"; full information − naive at {budgets[-1]:,}: {full[-1]:+.4f} ± {full_half[-1]:.4f}"
        if full[-1] - full_half[-1] <= 0:
            # the same learner with the true click probabilities is the ceiling of any correction of the clicks
            return "not testable here", detail + " (not above naive: no correction of these clicks can show)"
    return ("holds" if mean[-1] - half[-1] > 0 and rise - rise_half > 0 else "does not hold"), detail


def _clip(results, parts, group):
    rows = results["learners"]
    if "ips" not in rows or "ips_clipped" not in rows or results["num_seeds"] < 2 or len(results["budgets"]) < 2:
        return "not testable here", "the run needs ips, ips_clipped, two seeds and two budgets"
    tau = results["settings"]["clip"]
    smallest = min(results["parts"][parts[0]]["propensities"]["true"])
    if smallest >= tau:
        return "not testable here", f"{group}: τ = {tau:g} clips no rank (smallest propensity {smallest:.3f})"
    ips, clipped = _values(results, parts, "ips"), _values(results, parts, "ips_clipped")
    half_c = max(1, ips.shape[1] // 2)
    spread_ips, spread_clip = float(ips[:, :half_c].std(0, ddof=1).mean()), float(
        clipped[:, :half_c].std(0, ddof=1).mean())
    mean, half = paired(ips, clipped)
    detail = (f"{group}: std over pairs in the first {half_c} budgets {spread_clip:.4f} clipped vs {spread_ips:.4f}; "
              f"IPS − clipped at {results['budgets'][-1]:,}: {mean[-1]:+.4f} ± {half[-1]:.4f} (τ = {tau:g})")
    return ("holds" if spread_clip < spread_ips and mean[-1] - half[-1] > 0 else "does not hold"), detail


def _dr(results, parts, group):
    rows = results["learners"]
    if "ips" not in rows or "dr" not in rows or len(results["budgets"]) < 2:
        return "not testable here", "the run needs the ips and dr rows and two budgets"
    budgets = results["budgets"]
    ips, dr = _values(results, parts, "ips"), _values(results, parts, "dr")
    mean, half = paired(dr, ips)
    level = float(ips[:, -1].mean())
    n_ips = budget_to_reach(budgets, ips.mean(0), level)
    n_dr = budget_to_reach(budgets, dr.mean(0), level)
    factor = None if n_dr is None else n_ips / n_dr
    detail = (f"{group}: DR − IPS (paired, {ips.shape[0]} pairs) per budget {_diffs(budgets, mean, half)}; IPS's "
              f"final level {level:.4f} is reached by IPS at {n_ips:,.0f} sessions and by DR at "
              + ("no budget" if n_dr is None else f"{n_dr:,.0f} (factor {factor:.3g}, log-interpolated)"))
    for row, name in (("dm", "DM alone"), ("dr_perfect_dm", "DR with a perfect DM")):
        if row in rows:
            d, h = paired(_values(results, parts, row), ips)
            detail += f"; {name} − IPS {_diffs(budgets, d, h)}"
    above = mean - half > 0
    below = mean + half < 0
    if below.any():
        return "does not hold", detail + f"; DR is below IPS at {', '.join(f'{b:,}' for b in np.array(budgets)[below])}"
    return ("holds" if above.any() and factor is not None and factor > 1 else "does not hold"), detail


def _floor(results, parts, group):
    logging = _logging(results, parts)
    low = []
    for row in results["learners"]:
        values = _values(results, parts, row)[:, -1]
        m, h = mean_half(values - logging)
        if m + h < 0:
            low.append(f"{LABELS.get(row, row)} {m:+.4f} ± {h:.4f}")
    detail = (f"{group}: at {results['budgets'][-1]:,} {results['budget_unit']}, every row against the logging "
              f"ranker ({float(logging.mean()):.4f})")
    if low:
        return "does not hold", detail + ": below it: " + "; ".join(low)
    return "holds", detail + ": none is below it (paired 95% intervals)"


CHECKS = {"joachims2017": (("rise", _rise), ("clip", _clip), ("floor", _floor)),
          "oosterhuis2023": (("dr", _dr), ("floor", _floor))}


def verdicts(results: dict) -> list[tuple[str, str, str]]:
    """``(claim, verdict, detail)`` per claim and group; verdict: "holds", "does not hold" or "not testable here"."""
    out = []
    for name, check in CHECKS[results["protocol"]]:
        for group, parts in _groups(results).items():
            verdict, detail = check(results, parts, group)
            out.append((CLAIMS[name], verdict, detail))
    return out


STEPS = 10  # the iterations the "last ΔJ share" covers (experiments.counterfactual_ltr.STEPS_PER_CHUNK)


def _optimality(results: dict, parts, row: str) -> tuple[float, float]:
    """The largest relative gradient norm and last-iterations share of the decrease of ``row`` (or
    ``"skyline"``) over ``parts`` (nan for results written without them)."""
    if row == "skyline":
        pairs = [(results["parts"][p].get("skyline_relative_grad", np.nan),
                  results["parts"][p].get("skyline_last_decrease", np.nan)) for p in parts]
    else:
        m = results["learners"].index(row)
        pairs = [(results["parts"][p].get("relative_grad_max", [np.nan] * (m + 1))[m],
                  results["parts"][p].get("last_decrease_max", [np.nan] * (m + 1))[m]) for p in parts]
    return float(max(g for g, _ in pairs)), float(max(d for _, d in pairs))


def table(results: dict) -> str:
    budgets = results["budgets"]
    unit = results["budget_unit"]
    lines = [f"Counterfactual LTR ({results['protocol']} protocol) on {results['dataset']}, folds "
             f"{', '.join(map(str, results['folds']))}: test NDCG@10, mean ± 95% CI over {results['num_seeds']} seeds "
             f"per part, against logged {unit}; {results['examination']} users, top {results['num_positions']} shown. "
             "Numbers are not comparable with the papers' Yahoo!/MSLR-WEB30K/Istella figures.", ""]
    for group, parts in _groups(results).items():
        first = results["parts"][parts[0]]
        logging = np.mean([results["parts"][p]["logging_ndcg"] for p in parts])
        skyline = np.mean([results["parts"][p]["skyline_ndcg"] for p in parts])
        sky_grad, sky_last = _optimality(results, parts, "skyline")
        iters = results["settings"].get("lbfgs_iterations", "")
        lines += [f"{group} ({len(parts)} part{'s' * (len(parts) > 1)}): logging ranker {logging:.4f}, skyline "
                  f"{skyline:.4f} (‖∇J‖/‖∇J(0)‖ {sky_grad:.1e}, last-{STEPS} ΔJ share {sky_last:.1e}); every row and "
                  f"the skyline {iters} L-BFGS iterations; the optimality columns are the largest over the part's "
                  f"seeds and budgets; propensities {', '.join(f'{p:.3f}' for p in first['propensities']['true'])}",
                  "", "| row | " + " | ".join(f"{b:,}" for b in budgets)
                  + f" | ‖∇J‖/‖∇J(0)‖ | last-{STEPS} ΔJ share |",
                  "|---|" + "---|" * (len(budgets) + 2)]
        for row in results["learners"]:
            values = _values(results, parts, row)
            cells = [mean_half(values[:, c]) for c in range(values.shape[1])]
            grad, last = _optimality(results, parts, row)
            lines.append(f"| {LABELS.get(row, row)} | " + " | ".join(f"{m:.4f} ± {h:.4f}" for m, h in cells)
                         + f" | {grad:.1e} | {last:.1e} |")
        lines.append("")
    lines += ["Verdicts:", ""] + [f"- **{v}**: {c}. {d}." for c, v, d in verdicts(results)]
    return "\n".join(lines) + "\n"


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    groups = _groups(results)
    fig_axes = figure_grid(len(groups))
    if fig_axes is None:
        return
    fig, axes = fig_axes
    budgets = np.asarray(results["budgets"])
    for ax, (group, parts) in zip(axes, groups.items()):
        for row in results["learners"]:
            values = _values(results, parts, row)
            cells = np.array([mean_half(values[:, c]) for c in range(values.shape[1])])
            ax.plot(budgets, cells[:, 0], marker="o", label=LABELS.get(row, row))
            ax.fill_between(budgets, cells[:, 0] - cells[:, 1], cells[:, 0] + cells[:, 1], alpha=0.2)
        ax.axhline(np.mean([results["parts"][p]["skyline_ndcg"] for p in parts]), color="k", ls="--", lw=1,
                   label="skyline")
        ax.axhline(np.mean([results["parts"][p]["logging_ndcg"] for p in parts]), color="gray", ls=":", lw=1,
                   label="logging ranker")
        ax.set_xscale("log")
        ax.set_title(f"{results['dataset']}, {group}")
        ax.set_xlabel(f"logged {results['budget_unit']}")
        ax.set_ylabel("test NDCG@10")
        ax.legend(fontsize=7)
    save_figure(fig, run_dir / "counterfactual_ltr.png")


