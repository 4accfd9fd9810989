"""Counterfactual LTR at scale: 10⁷ logged clicks train Propensity SVM-Rank on an MSLR-WEB30K-shaped set
(31,531 queries, 3,771,125 documents, 136 features, up to 1,251 per query), phase by phase, with the
peak memory of each phase; the same at 10⁶ clicks; and the objective's speed against a NumPy loop.

    python benchmarks/counterfactual.py [--clicks 1000000 10000000] [--steps 100] [--json PATH]
                                        [--data /tmp/jaxrank-scale] [--reference-queries 40]

The set is ``benchmarks/datasets.py``'s ``mslr-web30k.txt``, read through the library's cache (warm: a
stat and ``.npy`` reads). Each click count runs in a fresh process, the semi-synthetic protocol of
Joachims, Swaminathan & Schnabel (WSDM 2017, §6) end to end:

* ``load``: ``data.load_queries`` (ragged: flat ``[N, D]`` documents and query offsets);
* ``scale``: every feature divided by its largest magnitude over the collection (the raw MSLR-like
  values span six orders of magnitude; per-query normalisation of 3.8M documents would cost more than
  the training), in place;
* ``device``: the features and labels as device arrays (the cache reads them into 64-byte aligned
  buffers, which jax's CPU client wraps without a copy);
* ``layout``: every query's documents in power-of-two blocks (``propensity_svm.ragged_layout``, host);
* ``logging``: the production ranker, jaxrank's primal RankSVM on 1% of the queries
  (``train_logging_ranker``, λ = 1e-3);
* ``lists``: its scores and every query's top 10 (``blocked_shown_documents``, ``lax.top_k`` per block);
* ``simulate``: position-based users (examination ``1/k``, η = 1; click on an examined document of
  grade ``g`` with ``0.1 + 0.9 (2^g − 1)/15``) on sessions of uniformly drawn queries, aggregated in
  chunks (``simulate_click_counts`` on the shown lists, ``chunk_size`` sessions a step) until the clicks
  reach the budget;
* ``train``: Propensity SVM-Rank (``propensity_svm.ragged_train``): each click ranks its document above
  every other document of its query (the paper's constraints), slacks weighted by ``1/ρ_k`` with the true
  ``ρ_k = 1/k``, λ = 1e-3, ``--steps`` full-batch Adam steps (step size 0.05, cosine-decayed); compile
  time apart. "pairs" counts the (click, other candidate) pairs of distinct clicked (query, rank)
  cells, each evaluated once a step;
* ``evaluate``: NDCG@10 of the logging ranker and of the trained one over every query (true labels).

Peak memory is measured as ``benchmarks/click_models.py`` does: the resident set's high-water mark
(``VmHWM``, Linux) after resetting it at the start of each phase, and the process's ``ru_maxrss``.

The reference: ``tests/reference/counterfactual.py``'s ``propensity_svm`` (a Python loop over every
pair of every query, float64) gives the objective and gradient on the first ``--reference-queries``
queries with the 10⁷-click counts; its time per clicked pair, scaled to the whole set's pairs, is
compared with one of jaxrank's training steps (objective, gradient and Adam update) on the whole set,
and jaxrank's objective and gradient on the same queries must agree with it to 10⁻⁶ (relative; the
benchmark stops otherwise).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = Path("/tmp/jaxrank-scale")
NAME = "mslr-web30k"
NUM_POSITIONS, ETA, LAM, FRACTION = 10, 1.0, 1e-3, 0.01


def _status(field: str) -> int:
    """``/proc/self/status`` ``field`` in bytes (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return -1


def _reset_peak() -> bool:
    """Resets the peak resident set (Linux >= 4.0), so ``VmHWM`` is the next phase's peak."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Phases:
    """Wall time and peak resident memory of consecutive phases."""

    def __init__(self):
        self.rows = []

    def run(self, name, fn):
        import jax

        reset = _reset_peak()
        start = time.perf_counter()
        out = jax.block_until_ready(fn())
        seconds = time.perf_counter() - start
        self.rows.append({"phase": name, "seconds": round(seconds, 2),
                          "peak_rss_gib": round(_status("VmHWM") / 2**30, 2) if reset else None})
        print(json.dumps(self.rows[-1]), flush=True)
        return out


def _scale_in_place(features):
    """Divides each column by its largest magnitude (1 where all zero), in place: the cache's arrays are
    writable and 64-byte aligned, so jax's CPU client then uses them without a copy."""
    import numpy as np

    big = np.maximum(np.abs(features.max(axis=0)), np.abs(features.min(axis=0)))
    features *= (1.0 / np.where(big > 0, big, 1.0)).astype(np.float32)
    return features


def _ndcg10(features, labels, layout, weights):
    """``[M]`` mean NDCG@10 over every query of the rankers ``weights [M, D]`` (ties by the lower row)."""
    import jax
    import jax.numpy as jnp

    from jaxrank.counterfactual import logging_policy
    from jaxrank.metrics.ranking import ranked_dcg

    def dcg_at_10(scores):
        rows, shown = logging_policy.blocked_shown_documents(scores, layout, 10)
        return ranked_dcg(labels[rows], where=shown)

    ideal = dcg_at_10(labels)
    ndcg = jax.vmap(lambda w: jnp.where(ideal > 0, dcg_at_10(features @ w) / jnp.where(ideal > 0, ideal, 1.0), 0.0))
    return ndcg(jnp.asarray(weights)).mean(-1)


def _reference(queries, rows, shown, clicks, propensities, w, num_queries: int) -> dict:
    """The NumPy loop's objective and gradient on the first ``num_queries`` queries, against jaxrank's."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxrank.counterfactual import propensity_svm
    from jaxrank.data import pad_queries, take_queries
    from tests.reference import counterfactual as ref

    sub = take_queries(queries, np.arange(num_queries))
    batch = pad_queries(sub)
    rows, shown = np.asarray(rows[:num_queries]), np.asarray(shown[:num_queries])
    clicks, propensities = np.asarray(clicks[:num_queries], np.float64), np.asarray(propensities[:num_queries])
    local = rows - queries.offsets[:num_queries, None]  # each shown document's index in its query
    per_doc_clicks = np.zeros(batch.mask.shape)
    per_doc_props = np.ones(batch.mask.shape)
    q_index = np.repeat(np.arange(num_queries), NUM_POSITIONS).reshape(num_queries, NUM_POSITIONS)
    per_doc_clicks[q_index[shown], local[shown]] = clicks[shown]
    per_doc_props[q_index[shown], local[shown]] = propensities[shown]
    features, mask = np.asarray(batch.features, np.float64), np.asarray(batch.mask)
    w = np.asarray(w, np.float64)
    start = time.perf_counter()
    want, want_grad = ref.propensity_svm(w, features, per_doc_clicks, per_doc_props, mask, LAM)
    seconds = time.perf_counter() - start
    lengths = np.diff(sub.offsets)
    pairs = int(((per_doc_clicks > 0).sum(1) * (lengths - 1)).sum())
    sub_rows = jnp.asarray(rows, jnp.int32)  # the first queries' rows: the subset's own (offsets[0] = 0)
    with jax.enable_x64(True):
        ours, ours_grad = jax.value_and_grad(propensity_svm.ragged_objective)(
            jnp.asarray(w), jnp.asarray(sub.features, jnp.float64), propensity_svm.ragged_layout(sub.offsets),
            sub_rows, jnp.asarray(np.where(shown, clicks, 0.0)), jnp.asarray(propensities, jnp.float64), lam=LAM)
    objective_diff = float(abs(ours - want) / abs(want))
    gradient_diff = float(np.max(np.abs(np.asarray(ours_grad) - want_grad)) / np.max(np.abs(want_grad)))
    if max(objective_diff, gradient_diff) > 1e-6:  # float64 on both sides: a timing of a wrong objective is void
        raise SystemExit(f"jaxrank's objective disagrees with the NumPy reference on {num_queries} queries: "
                         f"relative differences {objective_diff:.2e} (objective), {gradient_diff:.2e} (gradient).")
    return {"queries": num_queries, "pairs": pairs, "seconds": round(seconds, 3),
            "seconds_per_pair": seconds / max(pairs, 1), "objective_rel_diff": objective_diff,
            "gradient_max_rel_diff": gradient_diff}


def child(num_clicks: int, num_steps: int, chunk_size: int, reference_queries: int, data_dir: Path) -> dict:
    """One click budget end to end in this (fresh) process."""
    os.environ.setdefault("JAXRANK_CACHE", str(data_dir / "cache"))
    import jax
    import jax.numpy as jnp

    from jaxrank import data
    from jaxrank.counterfactual import logging_policy, propensity_svm, simulation, user_models

    phases = Phases()
    queries = phases.run("load", lambda: data.load_queries(data_dir / f"{NAME}.txt"))
    phases.run("scale", lambda: _scale_in_place(queries.features))
    features, labels = phases.run("device", lambda: (jax.device_put(queries.features), jnp.asarray(queries.labels)))
    layout = phases.run("layout", lambda: propensity_svm.ragged_layout(queries.offsets))
    key = jax.random.key(0)
    w0 = phases.run("logging", lambda: logging_policy.train_logging_ranker(
        jax.random.fold_in(key, 0), queries, fraction=FRACTION, lam=LAM)[0])
    rows, shown = phases.run("lists", lambda: jax.jit(logging_policy.blocked_shown_documents, static_argnums=2)(
        features @ w0, layout, NUM_POSITIONS))
    theta = user_models.inverse_rank(NUM_POSITIONS, ETA)
    user = user_models.position_based(theta, user_models.graded_click_probability(4, 0.1, 1.0))
    lists = simulation.shown_lists(labels, rows, shown)
    counts = phases.run("simulate", lambda: simulation.simulate_click_counts(
        jax.random.fold_in(key, 1), lists, user, (num_clicks,), num_positions=NUM_POSITIONS, chunk_size=chunk_size))
    clicks = simulation.position_clicks(counts)[0]  # [Q, K]
    propensities = jnp.broadcast_to(jnp.asarray(theta / theta[0], jnp.float32), clicks.shape)

    def train(features, layout, rows, clicks, propensities):
        return propensity_svm.ragged_train(features, layout, rows, clicks, propensities, lam=jnp.float32(LAM),
                                           num_steps=num_steps)

    args = (features, layout, rows, jnp.where(shown, clicks, 0.0), propensities)
    compiled = phases.run("compile", lambda: jax.jit(train).lower(*args).compile())
    w, info = phases.run("train", lambda: compiled(*args))
    pairs = int(propensity_svm.ragged_pairs(layout, rows, args[3], queries.num_documents))
    ndcg = phases.run("evaluate", lambda: jax.jit(_ndcg10)(features, labels, layout, jnp.stack([w0, w])))
    train_s = next(r["seconds"] for r in phases.rows if r["phase"] == "train")
    out = {"clicks_asked": num_clicks, "clicks_logged": int(counts.num_clicks[0]),
           "sessions": int(counts.sessions[0].sum()), "queries": queries.num_queries,
           "documents": queries.num_documents, "features": queries.num_features, "steps": num_steps,
           "chunk_size": chunk_size, "pairs": pairs, "pairs_per_s": pairs * num_steps / train_s,
           "step_s": train_s / num_steps,
           "objective_start": float(info.losses[0]), "objective_end": float(info.final),
           "ndcg10_logging": float(ndcg[0]), "ndcg10_trained": float(ndcg[1]),
           "phases": phases.rows,
           "seconds_total": round(sum(r["seconds"] for r in phases.rows), 1),
           "seconds_to_trained": round(sum(r["seconds"] for r in phases.rows if r["phase"] != "evaluate"), 1),
           "ru_maxrss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}
    if reference_queries:
        out["reference"] = _reference(queries, rows, shown, clicks, propensities, w, reference_queries)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--chunk-size", type=int, default=1 << 16)
    parser.add_argument("--reference-queries", type=int, default=40)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.steps, args.chunk_size, args.reference_queries, args.data)))
        return
    if not (args.data / f"{NAME}.txt").exists():
        raise SystemExit(f"{args.data / NAME}.txt is missing: run `python benchmarks/datasets.py --name {NAME}` first.")
    load_start = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load {load_start:.1f}", flush=True)
    runs = []
    for n in args.clicks:  # the reference runs once, with the largest budget
        reference = args.reference_queries if n == max(args.clicks) else 0
        done = subprocess.run([sys.executable, __file__, f"--child={n}", f"--steps={args.steps}",
                               f"--chunk-size={args.chunk_size}", f"--reference-queries={reference}",
                               f"--data={args.data}"], capture_output=True, text=True, cwd=REPO)
        if done.returncode != 0:
            raise SystemExit(done.stdout[-2000:] + done.stderr[-3000:])
        print(done.stdout, end="", flush=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("\n| clicks | sessions | " + " | ".join(r["phase"] for r in runs[0]["phases"])
          + " | to trained | peak RSS | pairs/s | NDCG@10 logging → trained |")
    print("|---:|---:|" + "---:|" * (len(runs[0]["phases"]) + 4))
    for r in runs:
        peak = max(p["peak_rss_gib"] or 0 for p in r["phases"])
        print(f"| {r['clicks_logged']:,} | {r['sessions']:,} | " + " | ".join(f"{p['seconds']:.1f} s" for p in r["phases"])
              + f" | {r['seconds_to_trained']:.0f} s | {peak:.1f} GiB | {r['pairs_per_s']:.3g} | "
              f"{r['ndcg10_logging']:.4f} → {r['ndcg10_trained']:.4f} |")
    reference = [r["reference"] | {"clicks": r["clicks_logged"], "step_s": r["step_s"], "pairs_full": r["pairs"]}
                 for r in runs if "reference" in r]
    for ref in reference:
        ref["ratio"] = ref["seconds_per_pair"] * ref["pairs_full"] / ref["step_s"]
        print(f"reference: {ref['seconds']:.2f} s for {ref['pairs']:,} pairs on {ref['queries']} queries; scaled to "
              f"{ref['pairs_full']:,} pairs {ref['seconds_per_pair'] * ref['pairs_full']:,.0f} s vs one jaxrank step "
              f"{ref['step_s']:.3f} s: {ref['ratio']:,.0f}x; objective rel. diff {ref['objective_rel_diff']:.1e}")
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        rows = [{"clicks": r["clicks_logged"], "sessions": r["sessions"],
                 **{f"{p['phase']}_s": p["seconds"] for p in r["phases"]},
                 "to_trained_s": r["seconds_to_trained"],
                 "peak_rss_gib": max(p["peak_rss_gib"] or 0 for p in r["phases"]),
                 "pairs": r["pairs"], "pairs_per_s": round(r["pairs_per_s"]), "step_s": round(r["step_s"], 3),
                 "ndcg10_logging": round(r["ndcg10_logging"], 4), "ndcg10_trained": round(r["ndcg10_trained"], 4)}
                for r in runs]
        write_json(args.json, __file__, rows=rows, load_start=load_start,
                   reference=[{"what": f"Propensity SVM-Rank objective and gradient with {ref['clicks']:,} clicks: "
                               f"the NumPy loop (timed on {ref['queries']} queries, {ref['pairs']:,} pairs, scaled "
                               f"per pair to {ref['pairs_full']:,}) over one jaxrank Adam step on the whole set",
                               "ratio": round(ref["ratio"])} for ref in reference],
                   figures={"data": f"{NAME} (generated, benchmarks/datasets.py)", "steps": args.steps,
                            "chunk_size": args.chunk_size, "target": "10^7 clicks trained in <= 300 s",
                            "runs": runs})


if __name__ == "__main__":
    main()
