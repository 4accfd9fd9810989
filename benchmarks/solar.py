"""SOLAR benchmarks on MQ2008 (all 784 queries): the whole Table 2 row (5 algorithms x 10
permutations, online protocol) after compile; SOLAR-I and SOLAR-II under the online protocol
against an independent float64 NumPy loop written from the paper (same permutations, same pairs in
the same order, the same per-query metrics), with the cost of 1 against 10 vmapped permutations;
SOLAR-I against scikit-learn's PA-II (``PassiveAggressiveClassifier(loss="squared_hinge")``, the
same update) driven query by query; SOLAR-I/II against the primal RankSVM baseline; the
permutations sharded over ``--devices`` host CPU devices (one per core; a fresh process with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``) against one lane on one device.

    python benchmarks/solar.py [--data ../shared/data] [--permutations 10] [--devices 2] [--json PATH]

Prints the machine, the timings and Markdown tables; ``--json`` writes the figures (ratios included).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from experiments import solar_online, solar_scalability
from experiments.common import letor_datasets
from jaxrank import lanes as lane_runner
from jaxrank.learners import LEARNERS as REGISTRY
from jaxrank.learners.online import online_pass, streams
from jaxrank.utils.swap_or_not import shuffle_index

REPO = Path(__file__).resolve().parents[1]
LEARNERS = (("solar_i", "solar_first_order", "c", 1e-5), ("solar_ii", "solar_second_order", "gamma", 1e4))  # C or γ


def _program(learner, stream):
    """The online protocol's passes as one jitted program ``(keys [P], docs, stream, hparams) -> Pass``:
    the lane runner's pure whole-lane program (``jaxrank.lanes.lane`` of ``online_pass.pass_study``)
    vmapped over the permutations, so it can be compiled ahead and timed after compile."""
    study = online_pass.pass_study(learner)
    chunks = jnp.arange(online_pass.num_blocks(stream), dtype=jnp.int32)

    def run(keys, docs, stream, hparams):
        one = lambda k: lane_runner.lane(study, k, hparams, (docs, stream), None, chunks)  # noqa: E731
        return jax.vmap(one)(keys)

    return jax.jit(run)


def _learner(registered: str, hparam: str, value: float):
    """The registered learner and its ``{hparam: value}`` as the online program takes it."""
    return REGISTRY.build(registered), {hparam: jnp.float32(value)}


def _timed(fn, *args):
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return out, time.perf_counter() - start


def table2_row(queries, permutations: int, key):
    config = solar_online.Config(num_permutations=permutations)
    keys = online_pass.permutation_keys(key, permutations)
    docs = streams.documents(queries)
    rows, total = [], 0.0
    for name, (learner, hparams) in solar_online.learners(config).items():
        hparams = {k: jnp.float32(v) for k, v in hparams.items()}
        stream = streams.instance_stream(queries, learner.instances)
        program = _program(learner, stream)
        compiled, compile_s = _timed(lambda: program.lower(keys, docs, stream, hparams).compile())
        passes, run_s = _timed(compiled, keys, docs, stream, hparams)
        _, score_s = _timed(lambda: online_pass.score_passes(keys, learner, queries, passes))
        total += run_s + score_s
        rows.append(f"| {name} | {int(stream.first.shape[0])} | {compile_s:.2f} | {run_s:.3f} | {score_s:.3f} |")
    print("\n## Table 2 row (online protocol, all queries)\n")
    print(f"| algorithm | instances per permutation | compile s | passes s ({permutations} permutations) | "
          "scoring s (incl. its compiles) |\n|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nWhole row: {total:.2f} s after the passes' compiles.")


def _replayed_order(stream, key_pass):
    """The instance sequence and flips of one pass, from its documented draws (``online_pass.run_pass``):
    the query order, each query's swap-or-not order under its key, and a flip bit per step."""
    offsets = np.asarray(stream.offsets)
    num_queries, num_steps = offsets.size - 1, int(offsets[-1])
    key_perm, key_order, key_steps = jax.random.split(key_pass, 3)
    order = np.asarray(jax.random.permutation(key_perm, num_queries))
    words = np.asarray(jax.random.bits(key_order, (num_queries,), jnp.uint32))
    counts = np.diff(offsets)[order]
    visit = np.repeat(np.arange(num_queries), counts)  # the visit of each step
    m = np.arange(num_steps) - np.repeat(np.cumsum(counts) - counts, counts)
    shuffled = shuffle_index(jnp.asarray(words[order][visit]), jnp.asarray(m, jnp.uint32),
                             jnp.asarray(counts[visit], jnp.uint32))
    sequence = offsets[order][visit] + np.asarray(shuffled).astype(np.int64)
    blocks = -(-num_steps // online_pass.BLOCK)
    bits = np.concatenate([np.asarray(jax.random.bits(jax.random.fold_in(key_steps, b), (online_pass.BLOCK,), jnp.uint32))
                           for b in range(blocks)])
    flips = np.where(bits[:num_steps] & 1, -1.0, 1.0)
    return order, sequence, flips


def _numpy_query_metrics(scores, labels):
    """NDCG@1/5/10 (gain 2^l − 1, discount 1/log2(1 + r)) and AP (relevant: l > 0) of one query; ties
    keep file order (a stable sort), 0 where the query has no relevant document (SOLAR eq. 1–2)."""
    ranked = labels[np.argsort(-scores, kind="stable")]
    ideal = np.sort(labels)[::-1]
    discount = 1.0 / np.log2(np.arange(2, labels.size + 2))
    out = []
    for k in online_pass.TOPN:
        idcg = ((2.0 ** ideal[:k] - 1) * discount[:k]).sum()
        out.append(((2.0 ** ranked[:k] - 1) * discount[:k]).sum() / idcg if idcg > 0 else 0.0)
    relevant = ranked > 0
    hits = np.cumsum(relevant)
    out.append((hits / np.arange(1, labels.size + 1))[relevant].sum() / relevant.sum() if relevant.any() else 0.0)
    return out


def numpy_online(queries, permutations: int, key, name: str, hparam: float):
    """SOLAR-I (PA-II, eq. 4–6) or SOLAR-II (AROW, eq. 7–9) under the online protocol (Algorithm 1,
    eq. 3) as a float64 NumPy loop, one pair at a time, over the permutations of ``online_pass.online_passes``
    (draws replayed by ``_replayed_order``). Returns the final weights ``[P, D]``, the final cumulative
    metrics ``[P, 4]`` and the seconds spent (the replay of the draws not included)."""
    x, labels, offsets = queries.features.astype(np.float64), queries.labels.astype(np.float64), queries.offsets
    stream = streams.instance_stream(queries, "pairs")
    first, second = np.asarray(stream.first), np.asarray(stream.second)
    weights, finals, seconds = [], [], 0.0
    for p in range(permutations):
        key_pass = online_pass.lane_keys(jax.random.fold_in(key, p))[0]  # as online_pass.pass_study
        order, seq, flip = _replayed_order(stream, key_pass)
        bounds = np.r_[0, np.cumsum(np.diff(np.asarray(stream.offsets))[order])]
        start = time.perf_counter()
        d = x.shape[1]
        w, sigma, total = np.zeros(d), np.eye(d), np.zeros(4)
        for k, q in enumerate(order):
            lo, hi = offsets[q], offsets[q + 1]
            total += _numpy_query_metrics(x[lo:hi] @ w, labels[lo:hi])
            for t in range(bounds[k], bounds[k + 1]):
                y = flip[t]
                z = y * (x[first[seq[t]]] - x[second[seq[t]]])
                loss = max(0.0, 1.0 - y * (w @ z))
                if loss <= 0.0:
                    continue
                if name == "solar_i":
                    w = w + loss / (z @ z + 0.5 / hparam) * y * z
                else:
                    sz = sigma @ z
                    beta = z @ sz + hparam
                    w = w + (loss / beta) * y * sz
                    sigma = sigma - np.outer(sz, sz) / beta
        seconds += time.perf_counter() - start
        weights.append(w)
        finals.append(total / len(order))
    return np.asarray(weights), np.asarray(finals), seconds


def versus_numpy(queries, permutations: int, key, figures: dict):
    """SOLAR-I and SOLAR-II: jaxrank (compile; pass and scoring after compile; 1 vs ``permutations``
    lanes) against ``numpy_online`` on the same permutations."""
    docs = streams.documents(queries)
    stream = streams.instance_stream(queries, "pairs")
    keys = online_pass.permutation_keys(key, permutations)
    print(f"\n## SOLAR online protocol vs a float64 NumPy loop ({permutations} permutations, same pairs and order)\n")
    print("| learner | pass compile s | scoring compile s | 1 lane pass s | pass s | lanes cost | scoring s | jaxrank s | NumPy s | NumPy / jaxrank "
          "| max abs diff w | max abs diff final metrics |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, registered, hparam_name, hparam in LEARNERS:
        learner, hparams = _learner(registered, hparam_name, hparam)
        program = _program(learner, stream)
        start = time.perf_counter()
        compiled = program.lower(keys, docs, stream, hparams).compile()
        compile_s = time.perf_counter() - start
        one = program.lower(keys[:1], docs, stream, hparams).compile()
        passes = compiled(keys, docs, stream, hparams)
        _, first_score_s = _timed(lambda: online_pass.score_passes(keys, learner, queries, passes))  # compiles the scoring
        pass_s, score_s, lane_s = [], [], []
        for _ in range(3):  # 1 lane and all lanes alternate, so both see the same machine
            lane_s.append(_timed(one, keys[:1], docs, stream, hparams)[1])
            passes, s = _timed(compiled, keys, docs, stream, hparams)
            pass_s.append(s)
            per_query, s = _timed(lambda: online_pass.score_passes(keys, learner, queries, passes))
            score_s.append(s)
        jax_s, lane_s = min(pass_s) + min(score_s), min(lane_s)
        score_compile_s = first_score_s - min(score_s)
        final = np.asarray(online_pass.cumulative_mean(per_query)[:, -1])
        w_np, final_np, np_s = numpy_online(queries, permutations, key, name, hparam)
        diff_w = float(np.abs(np.asarray(passes.state.w) - w_np).max())
        diff_m = float(np.abs(final - final_np).max())
        print(f"| {name} | {compile_s:.2f} | {score_compile_s:.2f} | {lane_s:.3f} | {min(pass_s):.3f} | {min(pass_s) / lane_s:.1f}x | "
              f"{min(score_s):.3f} | {jax_s:.3f} | {np_s:.2f} | **{np_s / jax_s:.1f}x** | {diff_w:.1e} | {diff_m:.1e} |")
        figures[name] = dict(compile_seconds=compile_s, scoring_compile_seconds=score_compile_s, one_lane_pass_seconds=lane_s, pass_seconds=min(pass_s),
                             lanes_cost=min(pass_s) / lane_s, scoring_seconds=min(score_s), jaxrank_seconds=jax_s,
                             numpy_seconds=np_s, ratio=np_s / jax_s, max_abs_diff_w=diff_w, max_abs_diff_metrics=diff_m)


def sharded_lanes(queries, permutations: int, key) -> dict:
    """Per learner: the pass of one lane, and of ``permutations`` lanes sharded over every device of
    this process (a 1-D mesh over the permutation axis), best of 5 after compile; the sharded passes
    must equal the unsharded ones bit for bit."""
    docs = streams.documents(queries)
    stream = streams.instance_stream(queries, "pairs")
    keys = online_pass.permutation_keys(key, permutations)
    lanes = jax.device_put(keys, NamedSharding(Mesh(np.array(jax.devices()), ("lanes",)), PartitionSpec("lanes")))
    out = {}
    for name, registered, hparam_name, hparam in LEARNERS:
        learner, hp = _learner(registered, hparam_name, hparam)
        program = _program(learner, stream)
        one, sharded = program.lower(keys[:1], docs, stream, hp).compile(), program.lower(lanes, docs, stream, hp).compile()
        same = all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(jax.device_get(program(keys, docs, stream, hp))),
                                                        jax.tree.leaves(jax.device_get(sharded(lanes, docs, stream, hp)))))
        times = [(_timed(one, keys[:1], docs, stream, hp)[1], _timed(sharded, lanes, docs, stream, hp)[1]) for _ in range(5)]
        lane_s, pass_s = (min(column) for column in zip(*times))
        out[name] = dict(devices=jax.device_count(), one_lane_pass_seconds=lane_s, pass_seconds=pass_s,
                         lanes_cost=pass_s / lane_s, same_as_one_device=same)
    return out


def versus_sharded(data: str, permutations: int, devices: int, figures: dict):
    """``sharded_lanes`` in a fresh process with ``devices`` host CPU devices."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    done = subprocess.run([sys.executable, __file__, f"--data={data}", f"--permutations={permutations}", "--lanes-child"],
                          cwd=REPO, env=env, capture_output=True, text=True, check=True)
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\n## {permutations} permutations sharded over {devices} host CPU devices (one per core) vs 1 lane\n")
    print("| learner | 1 lane pass s | sharded pass s | lanes cost | same passes as one device |\n|---|---:|---:|---:|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['one_lane_pass_seconds']:.3f} | {row['pass_seconds']:.3f} | **{row['lanes_cost']:.2f}x** | "
              f"{'yes' if row['same_as_one_device'] else 'NO'} |")
        figures.setdefault(name, {})["sharded"] = row


def sklearn_online(queries, permutations: int, key, c: float):
    """PA-II from scikit-learn under the same protocol: score each query, then partial_fit its pairs."""
    from sklearn.linear_model import PassiveAggressiveClassifier

    x, offsets = queries.features, queries.offsets
    stream = streams.instance_stream(queries, "pairs")
    first, second = np.asarray(stream.first), np.asarray(stream.second)
    weights, seconds = [], 0.0
    for p in range(permutations):
        key_pass = online_pass.lane_keys(jax.random.fold_in(key, p))[0]  # as online_pass.pass_study
        order, seq, flip = _replayed_order(stream, key_pass)
        z = (flip[:, None] * (x[first[seq]] - x[second[seq]])).astype(np.float32)
        y = flip.astype(int)
        counts = np.diff(np.asarray(stream.offsets))[order]
        bounds = np.r_[0, np.cumsum(counts)]
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PassiveAggressiveClassifier is deprecated from scikit-learn 1.8
            clf = PassiveAggressiveClassifier(C=c, loss="squared_hinge", fit_intercept=False, shuffle=False)
            clf.partial_fit(z[:1] * 0, [1], classes=[-1, 1])  # a zero instance: no update, sets up coef_
            for k, q in enumerate(order):
                clf.decision_function(x[offsets[q]:offsets[q + 1]])  # score before learning, as the protocol does
                lo, hi = bounds[k], bounds[k + 1]
                if hi > lo:
                    clf.partial_fit(z[lo:hi], y[lo:hi])
        seconds += time.perf_counter() - start
        weights.append(clf.coef_[0].copy())
    return np.asarray(weights), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    parser.add_argument("--permutations", type=int, default=10)
    parser.add_argument("--devices", type=int, default=2, help="host CPU devices for the sharded lanes (1: skip)")
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--lanes-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lanes_child:
        ds = letor_datasets.resolve(str(Path(args.data) / "MQ2008"), "bench")
        print(json.dumps(sharded_lanes(letor_datasets.all_queries(ds), args.permutations, jax.random.key(0))))
        return
    figures = dict(machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
                   jax=jax.__version__, backend=jax.default_backend(), permutations=args.permutations)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"jax {jax.__version__} ({jax.default_backend()})")
    ds = letor_datasets.resolve(str(Path(args.data) / "MQ2008"), "bench")
    batch = letor_datasets.all_queries(ds)
    key = jax.random.key(0)
    table2_row(batch, args.permutations, key)
    versus_numpy(batch, args.permutations, key, figures)
    if args.devices > 1:
        versus_sharded(args.data, args.permutations, args.devices, figures)

    c = 1e-5
    learner, hparams = _learner("solar_first_order", "c", c)
    docs = streams.documents(batch)
    stream = streams.instance_stream(batch, "pairs")
    keys = online_pass.permutation_keys(key, args.permutations)
    program = _program(learner, stream)
    compiled = program.lower(keys, docs, stream, hparams).compile()
    passes, pass_s = _timed(compiled, keys, docs, stream, hparams)
    online_pass.score_passes(keys, learner, batch, passes)  # compiles the scoring blocks
    _, score_s = _timed(lambda: online_pass.score_passes(keys, learner, batch, passes))
    jax_s = pass_s + score_s
    w_jax = np.asarray(passes.state.w)
    w_sk, sk_s = sklearn_online(batch, args.permutations, key, c)
    print("\n## SOLAR-I online protocol vs scikit-learn PA-II (same pairs, same order)\n")
    print("| implementation | s (10 permutations, 80,925 pairs each) | pairs/s | max abs diff of final w |\n|---|---|---|---|")
    pairs = args.permutations * int(stream.first.shape[0])
    diff = float(np.abs(w_jax - w_sk).max())
    print(f"| jaxrank (jit, vmap over permutations; includes scoring + metrics) | {jax_s:.3f} | {pairs / jax_s:,.0f} | {diff:.1e} |")
    print(f"| scikit-learn partial_fit per query (+ decision_function) | {sk_s:.3f} | {pairs / sk_s:,.0f} | |")
    print(f"\nRatio: {sk_s / jax_s:.1f}x")
    figures["sklearn_pa2"] = dict(jaxrank_seconds=jax_s, sklearn_seconds=sk_s, ratio=sk_s / jax_s, max_abs_diff_w=diff)

    print("\n## float32 vs float64 (paper hyperparameters: tiny updates)\n")
    print("| learner | max abs diff of final cumulative NDCG@1/5/10, MAP over permutations |\n|---|---|")
    for name, registered, hparams in (("SOLAR-I, C = 1e-5", "solar_first_order", {"c": c}),
                                      ("SOLAR-II, γ = 1e4", "solar_second_order", {"gamma": 1e4})):
        learner = REGISTRY.build(registered)
        f32 = np.asarray(online_pass.online_protocol(key, learner, batch, args.permutations, hparams=hparams).cumulative[:, -1])
        with jax.enable_x64(True):
            f64 = np.asarray(online_pass.online_protocol(key, learner, batch, args.permutations, hparams=hparams,
                                                         dtype=jnp.float64).cumulative[:, -1])
        print(f"| {name} | {np.abs(f32 - f64).max():.1e} |")

    train, _, _ = letor_datasets.fold(ds, 1)
    print("\n## Training time, MQ2008 Fold1 train and all queries (s, median of 5, after compile)\n")
    print("| set | SOLAR-I | SOLAR-II | RankSVM | RankSVM / SOLAR-I |\n|---|---|---|---|---|")
    for label, b in (("Fold1 train (471 queries)", train), ("all 784 queries", batch)):
        s = solar_scalability.training_seconds(key, b, learners=solar_scalability.learners(()), lam=1e-4, repeats=5)
        print(f"| {label} | {s['solar_first_order']:.4f} | {s['solar_second_order']:.4f} | {s['ranksvm']:.4f} | {s['ranksvm'] / s['solar_first_order']:.1f} |")
        figures.setdefault("training_seconds", {})[label] = {k: float(v) for k, v in s.items()}
    if args.json:
        from report import write_json  # benchmarks/report.py: the one JSON shape BENCHMARKS.md is built from

        learners = {name: figures.pop(name) for name, *_ in LEARNERS if name in figures}
        rows = [{"learner": name, **{k: v for k, v in row.items() if k != "sharded"}} for name, row in learners.items()
                if "ratio" in row]
        sharded = [{"learner": name, **row["sharded"]} for name, row in learners.items() if "sharded" in row]
        reference = [{"what": f"{name}, {args.permutations} permutations: a float64 NumPy loop's time over jaxrank's "
                      "(pass, scoring and metrics)", "ratio": row["ratio"]} for name, row in learners.items() if "ratio" in row]
        reference.append({"what": "solar_i: scikit-learn PA-II partial_fit per query, time over jaxrank's",
                          "ratio": figures["sklearn_pa2"]["ratio"]})
        write_json(args.json, __file__, rows=rows, reference=reference,
                   figures={"permutations": args.permutations, "sharded_over_devices": {r["learner"]: r for r in sharded},
                            "sklearn_pa2": figures["sklearn_pa2"], "training_seconds": figures.get("training_seconds", {})})


if __name__ == "__main__":
    main()
