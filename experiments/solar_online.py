"""SOLAR's online protocol (Wang et al., ACL 2015, Table 2 and Fig. 2): Prank (pointwise and
pairwise), committee perceptron, SOLAR-I and SOLAR-II over random permutations of every query
of a LETOR dataset; online cumulative NDCG@1/5/10 and MAP, scored before learning each query."""

import dataclasses
import time

import jax
import numpy as np

from experiments.common import letor_datasets
from experiments.analysis import solar, solar_online as analysis
from experiments.common.params import settings
from experiments.common.registry import register
from jaxrank import data
from jaxrank.learners import LEARNERS
from jaxrank.learners.online import online_pass, streams

ALGORITHMS = ("prank_pointwise", "prank_pairwise", "committee_perceptron", "solar_first_order", "solar_second_order")


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder name under JAXRANK_DATA, a path, "synthetic", or auto (MQ2008)
    algorithms: tuple[str, ...] = ALGORITHMS
    num_permutations: int = 10
    # per-algorithm settings "algo.key=value" over each module's HPARAMS / OPTIONS (defaults: SOLAR §5.2,
    # C = 1e-5, γ = 1e4, 20 experts; Prank over 3 grades ranked by w·x), e.g. solar_first_order.c=1e-4
    params: tuple[str, ...] = ()
    normalize: bool = False  # per-query min-max features (LETOR QueryLevelNorm); MQ2008 already is, MSLR is not
    seed: int = 0


def learners(config: Config) -> dict:
    """``{name: (Learner, hparams)}`` of the selected algorithms, every setting checked first (ValueError)."""
    if config.num_permutations < 1:
        raise ValueError(f"num_permutations must be >= 1; got {config.num_permutations}.")
    chosen = settings(config.params, LEARNERS, config.algorithms)
    for name, (_, hparams) in chosen.items():  # values out of range (C <= 0, ...) before any work
        LEARNERS[name].init(jax.random.key(0), 1, **hparams)
    return {name: (LEARNERS.build(name, **options), hparams) for name, (options, hparams) in chosen.items()}


@register("solar_online", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Table 2 row and Fig. 2 curves of the SOLAR paper on one dataset."""
    chosen = learners(config)
    ds = letor_datasets.resolve(config.dataset, "solar_online")
    queries = letor_datasets.all_queries(ds, config.seed, normalize=config.normalize)
    print(f"[solar_online] {ds.name}: {queries.num_queries} queries, {queries.num_documents} documents (longest "
          f"{queries.list_size}), D = {queries.num_features}; {config.num_permutations} permutations", flush=True)
    key = jax.random.key(config.seed)
    docs = streams.documents(queries)
    keys = online_pass.permutation_keys(key, config.num_permutations)
    results, arrays = {}, {}
    for name, (learner, hparams) in chosen.items():
        stream = streams.instance_stream(queries, learner.instances)
        start = time.perf_counter()
        passes = online_pass.online_passes(keys, learner, docs, stream, hparams=hparams, label=f"solar_online {name}")
        passes_s = time.perf_counter() - start
        start = time.perf_counter()
        per_query = online_pass.score_passes(keys, learner, queries, passes)
        score_s = time.perf_counter() - start
        cumulative = np.asarray(online_pass.cumulative_mean(per_query))
        final = cumulative[:, -1]  # [P, 4]
        results[name] = {
            "mean": final.mean(0).round(4).tolist(),
            "std": final.std(0, ddof=1).round(4).tolist() if len(final) > 1 else [0.0] * 4,
            "per_permutation": final.round(4).tolist(),  # [P, 4]: every algorithm sees the same permutations
            "instances": int(stream.first.shape[0]),
            "passes_s": round(passes_s, 3),  # with the compile: the lane runner compiles per call
            "score_s": round(score_s, 3),
        }
        arrays[f"{name}__cumulative_mean"] = cumulative.mean(0)
        arrays[f"{name}__final"] = final
        print(f"[solar_online] {name}: NDCG@1/5/10 MAP = {' '.join(f'{v:.4f}' for v in final.mean(0))} "
              f"(passes {passes_s:.2f} s with compile, scoring {score_s:.2f} s)", flush=True)
    data.write_npz(run_dir / "arrays.npz", **arrays)
    timings = {name: {k: r.pop(k) for k in ("passes_s", "score_s")} for name, r in results.items()}
    return {"dataset": ds.name, "source": ds.source, "num_queries": queries.num_queries,
            "num_permutations": config.num_permutations, "metrics": list(online_pass.METRIC_NAMES),
            "algorithms": results, "order": list(results), "paper": solar.paper_table2(ds.name),
            "timings": {"algorithms": timings, "table_row_seconds": round(sum(t["passes_s"] + t["score_s"] for t in timings.values()), 3)}}
