"""Table, verdicts and figure for ``closed_loop``: PDGD's offline learning curves under a fitted DBN user
next to the true cascade user, and their paired difference with its 95% interval."""

from pathlib import Path

import numpy as np

from experiments.analysis import verdicts as verdict_lib
from experiments.analysis.plotting import save_figure, tabulate
from experiments.analysis.verdicts import with_section

CLAIM = ("PDGD learns the same offline NDCG@10 curve from a DBN fitted to a user's click log as from the user "
         "(paired fitted − true difference: 95% CI contains 0 at the last checkpoint and for the curve's mean)")


def verdicts(results: dict) -> list:
    out = []
    for name, r in results["users"].items():
        p = r["paired"]
        final_in = abs(p["final_diff"]) <= p["final_diff_ci95"]
        area_in = abs(p["area_diff"]) <= p["area_diff_ci95"]
        verdict = verdict_lib.HOLDS if final_in and area_in else verdict_lib.FAILS
        detail = (f"{name} user, {r['fitted']['final_offline']:.4f} vs {r['true']['final_offline']:.4f} at "
                  f"{results['checkpoints'][-1]:,} impressions: difference {verdict_lib.fmt(p['final_diff'], p['final_diff_ci95'], 4)}"
                  f"; curve mean {verdict_lib.fmt(p['area_diff'], p['area_diff_ci95'], 4)}; CI covers 0 at "
                  f"{p['covers_zero']}/{len(p['diff_mean'])} checkpoints ({results['num_runs']} paired runs)")
        out.append((f"{CLAIM}: {name}", verdict, detail))
    return out


def table(results: dict) -> str:
    checkpoints = results["checkpoints"]
    lines = [f"### Closed loop: PDGD from a fitted DBN user vs the true cascade user ({results['dataset']} fold "
             f"{results['fold']})", "",
             f"DBN ({results['parametrization']} α, σ from features; γ a table) fitted by Adam to "
             f"{results['num_sessions']:,} logged sessions of each cascade user; PDGD, {results['num_runs']} paired "
             f"runs × {results['num_impressions']:,} impressions each; offline NDCG@10 on the test queries "
             f"({results['test_queries']}); ± is the 95% Student t half-width over runs.", "",
             "| user | true user | fitted user | paired diff (fitted − true) | diff, curve mean | CI covers 0 | "
             "held-out LL fitted / true |",
             "|---|---|---|---|---|---|---|"]
    for name, r in results["users"].items():
        p, f = r["paired"], r["fit"]
        lines.append(f"| {name} | {r['true']['final_offline']:.4f} ± {r['true']['final_offline_ci95']:.4f} | "
                     f"{r['fitted']['final_offline']:.4f} ± {r['fitted']['final_offline_ci95']:.4f} | "
                     f"{p['final_diff']:+.4f} ± {p['final_diff_ci95']:.4f} | {p['area_diff']:+.4f} ± "
                     f"{p['area_diff_ci95']:.4f} | {p['covers_zero']}/{len(checkpoints)} | "
                     f"{f['held_out_log_likelihood']:.4f} / {f['true_log_likelihood']:.4f} |")
    lines += ["", "Fitted DBN against the true user, mean over the real training documents of each grade "
                  "(α attraction, σ satisfaction; the true γ is 1):", "",
              "| user | grade | documents | α fitted / true | σ fitted / true | γ fitted | logged documents |",
              "|---|---|---|---|---|---|---|"]
    for name, r in results["users"].items():
        f = r["fit"]
        for g, v in f["per_grade"].items():
            lines.append(f"| {name} | {g} | {v['documents']:,} | {v['attraction']:.3f} / {v['true_attraction']:.2f} | "
                         f"{v['satisfaction']:.3f} / {v['true_satisfaction']:.2f} | {f['continuation']:.3f} | "
                         f"{f['documents_logged']:,} of {f['documents']:,} |")
    lines += ["", "Offline NDCG@10 per checkpoint (mean over runs; diff ± 95% CI):", "",
              "| impressions | " + " | ".join(f"{n} true | {n} fitted | {n} diff" for n in results["users"]) + " |",
              "|---|" + "---|---|---|" * len(results["users"])]
    for c, step in enumerate(checkpoints):
        cells = []
        for r in results["users"].values():
            p = r["paired"]
            cells += [f"{r['true']['offline_mean'][c]:.4f}", f"{r['fitted']['offline_mean'][c]:.4f}",
                      f"{p['diff_mean'][c]:+.4f} ± {p['diff_ci95'][c]:.4f}"]
        lines.append(f"| {step:,} | " + " | ".join(cells) + " |")
    return with_section("\n".join(lines) + "\n", verdicts, results)


def report(run_dir) -> None:
    run_dir = Path(run_dir)
    results = tabulate(run_dir, table)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure (pip install 'jaxrank[plots]').")
        return
    users = results["users"]
    fig, axes = plt.subplots(2, len(users), figsize=(4.8 * len(users), 6.4), squeeze=False, sharex=True)
    steps = np.asarray(results["checkpoints"])[1:]  # the log axis leaves out impression 0
    for col, (name, r) in enumerate(users.items()):
        top, bottom = axes[0, col], axes[1, col]
        for kind, label in (("true", "true cascade user"), ("fitted", "fitted DBN user")):
            mean, ci = (np.asarray(r[kind][k])[1:] for k in ("offline_mean", "offline_ci95"))
            top.plot(steps, mean, label=label)
            top.fill_between(steps, mean - ci, mean + ci, alpha=0.25)
        top.set_title(f"{results['dataset']} fold {results['fold']} - {name}")
        top.set_ylabel("offline NDCG@10")
        top.legend(fontsize=8)
        diff, ci = (np.asarray(r["paired"][k])[1:] for k in ("diff_mean", "diff_ci95"))
        bottom.plot(steps, diff, color="C2", label="fitted − true (paired)")
        bottom.fill_between(steps, diff - ci, diff + ci, color="C2", alpha=0.25)
        bottom.axhline(0.0, color="k", lw=0.8)
        bottom.set_xscale("log")
        bottom.set_xlabel("impressions")
        bottom.set_ylabel("NDCG@10 difference")
        bottom.legend(fontsize=8)
    save_figure(fig, run_dir / "closed_loop.png")
