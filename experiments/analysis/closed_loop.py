"""Table, verdicts and figure for ``closed_loop``: PDGD's offline learning curves under a fitted DBN user
next to the true cascade user, and their paired difference with its 95% interval."""

from pathlib import Path

import numpy as np

from experiments.analysis import verdicts as verdict_lib
from experiments.analysis.plotting import save_figure, tabulate
from experiments.analysis.verdicts import with_section

CLAIM = ("PDGD learns the same offline NDCG@10 curve from a DBN fitted to a user's click log as from the user "
         "(paired fitted − true difference: 95% CI contains 0 at the last checkpoint and for the curve's mean)")


LABELS = {"linear": "DBN, α σ linear in features", "mlp": "DBN, α σ MLP of features",
          "tables": "DBN, per-pair tables"}


def verdicts(results: dict) -> list:
    out = []
    for name, r in results["users"].items():
        for kind, p in r["paired"].items():
            final_in = abs(p["final_diff"]) <= p["final_diff_ci95"]
            area_in = abs(p["area_diff"]) <= p["area_diff_ci95"]
            verdict = verdict_lib.HOLDS if final_in and area_in else verdict_lib.FAILS
            detail = (f"{r['fitted'][kind]['final_offline']:.4f} vs {r['true']['final_offline']:.4f} at "
                      f"{results['checkpoints'][-1]:,} impressions: difference "
                      f"{verdict_lib.fmt(p['final_diff'], p['final_diff_ci95'], 4)}; curve mean "
                      f"{verdict_lib.fmt(p['area_diff'], p['area_diff_ci95'], 4)}; CI covers 0 at "
                      f"{p['covers_zero']}/{len(p['diff_mean'])} checkpoints ({results['num_runs']} paired runs)")
            out.append((f"{CLAIM}: {name} user, {LABELS.get(kind, kind)}", verdict, detail))
    return out


def table(results: dict) -> str:
    checkpoints = results["checkpoints"]
    lines = [f"### Closed loop: PDGD from a fitted DBN user vs the true cascade user ({results['dataset']} fold "
             f"{results['fold']})", "",
             f"DBNs fitted by Adam ({results['num_epochs']} epochs) to {results['num_sessions']:,} logged sessions of "
             f"each cascade user; PDGD, {results['num_runs']} paired runs × {results['num_impressions']:,} "
             f"impressions each; offline NDCG@10 on the test queries ({results['test_queries']}); ± is the 95% "
             "Student t half-width over runs; LL is the held-out log-likelihood per session (PyClick's), of the "
             "fitted DBN and of the true user.", "",
             "| user | fitted DBN | true user | fitted user | paired diff (fitted − true) | diff, curve mean | "
             "CI covers 0 | held-out LL fitted / true |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in results["users"].items():
        for kind, p in r["paired"].items():
            f, c = r["fit"][kind], r["fitted"][kind]
            truth = r["true"]
            lines.append(f"| {name} | {kind} | {truth['final_offline']:.4f} ± {truth['final_offline_ci95']:.4f} "
                         f"| {c['final_offline']:.4f} ± {c['final_offline_ci95']:.4f} | "
                         f"{p['final_diff']:+.4f} ± {p['final_diff_ci95']:.4f} | {p['area_diff']:+.4f} ± "
                         f"{p['area_diff_ci95']:.4f} | {p['covers_zero']}/{len(checkpoints)} | "
                         f"{f['held_out_log_likelihood']:.4f} / {f['true_log_likelihood']:.4f} |")
    lines += ["", "Fitted DBNs against the true user, mean over the real training documents of each grade "
                  "(α attraction, σ satisfaction; the true γ is 1):", "",
              "| user | fitted DBN | grade | documents | α fitted / true | σ fitted / true | γ fitted | "
              "documents logged |",
              "|---|---|---|---|---|---|---|---|"]
    for name, r in results["users"].items():
        for kind, f in r["fit"].items():
            for g, v in f["per_grade"].items():
                lines.append(f"| {name} | {kind} | {g} | {v['documents']:,} | {v['attraction']:.3f} / "
                             f"{v['true_attraction']:.2f} | {v['satisfaction']:.3f} / {v['true_satisfaction']:.2f} | "
                             f"{f['continuation']:.3f} | {f['documents_logged']:,} of {f['documents']:,} |")
    columns = [(name, kind) for name, r in results["users"].items() for kind in r["paired"]]
    lines += ["", "Offline NDCG@10 per checkpoint: the true user's mean, and each fitted user's paired difference "
                  "(± 95% CI):", "",
              "| impressions | " + " | ".join(f"{n} true" for n in results["users"]) + " | "
              + " | ".join(f"{n} {k} − true" for n, k in columns) + " |",
              "|---|" + "---|" * (len(results["users"]) + len(columns))]
    for c, step in enumerate(checkpoints):
        cells = [f"{r['true']['offline_mean'][c]:.4f}" for r in results["users"].values()]
        cells += [f"{results['users'][n]['paired'][k]['diff_mean'][c]:+.4f} ± "
                  f"{results['users'][n]['paired'][k]['diff_ci95'][c]:.4f}" for n, k in columns]
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
    fig, axes = plt.subplots(2, len(users), figsize=(5.2 * len(users), 7.0), squeeze=False, sharex=True)
    steps = np.asarray(results["checkpoints"])[1:]  # the log axis leaves out impression 0
    for col, (name, r) in enumerate(users.items()):
        top, bottom = axes[0, col], axes[1, col]
        curves = [("true cascade user", r["true"])] + [(LABELS.get(k, k), v) for k, v in r["fitted"].items()]
        for label, curve in curves:
            mean, ci = (np.asarray(curve[k])[1:] for k in ("offline_mean", "offline_ci95"))
            top.plot(steps, mean, label=label)
            top.fill_between(steps, mean - ci, mean + ci, alpha=0.2)
        top.set_title(f"{results['dataset']} fold {results['fold']} - {name} user")
        top.set_ylabel("offline NDCG@10")
        top.legend(fontsize=8)
        for i, (kind, p) in enumerate(r["paired"].items()):
            diff, ci = (np.asarray(p[k])[1:] for k in ("diff_mean", "diff_ci95"))
            bottom.plot(steps, diff, color=f"C{i + 1}", label=f"{LABELS.get(kind, kind)} − true (paired)")
            bottom.fill_between(steps, diff - ci, diff + ci, color=f"C{i + 1}", alpha=0.2)
        bottom.axhline(0.0, color="k", lw=0.8)
        bottom.set_xscale("log")
        bottom.set_xlabel("impressions")
        bottom.set_ylabel("NDCG@10 difference, 95% CI")
        bottom.legend(fontsize=8)
    save_figure(fig, run_dir / "closed_loop.png")
