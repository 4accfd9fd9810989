"""SOLAR's online protocol (Wang et al., ACL 2015, Table 2 and Fig. 2): Prank (pointwise and
pairwise), committee perceptron, SOLAR-I and SOLAR-II over random permutations of every query
of a LETOR dataset; online cumulative NDCG@1/5/10 and MAP, scored before learning each query."""

import dataclasses
import time

import jax
import numpy as np

from experiments import letor_datasets
from experiments.analysis import solar as analysis
from experiments.registry import register
from jaxrank import data
from jaxrank import learners
from jaxrank.learners.online import protocol

ALGORITHMS = ("prank_pointwise", "prank_pairwise", "committee_perceptron", "solar_first_order", "solar_second_order")


def make_learner(name: str, config):
    """The registered learner ``name`` (``jaxrank.learners.LEARNERS``) with the config's
    hyperparameters: SOLAR-I's C and SOLAR-II's γ and guard (paper §5.2), the committee size and
    Prank's grades and scoring."""
    hparams = {
        "prank_pointwise": dict(num_grades=config.num_grades, score_by=config.prank_score),
        "prank_pairwise": {},
        "committee_perceptron": dict(num_members=config.committee_size),
        "solar_first_order": dict(c=config.c),
        "solar_second_order": dict(gamma=config.gamma, guard=config.guard),
    }
    if name not in hparams:
        raise ValueError(f"unknown algorithm {name!r}; choose from {', '.join(hparams)}.")
    return learners.learner(name, **hparams[name])


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder name under JAXRANK_DATA, a path, "synthetic", or auto (MQ2008)
    algorithms: tuple[str, ...] = ALGORITHMS
    num_permutations: int = 10
    c: float = 1e-5  # SOLAR-I, paper §5.2
    gamma: float = 1e4  # SOLAR-II, paper §5.2
    guard: bool = True  # SOLAR-II updates only on a margin violation (AROW, LIBOL)
    committee_size: int = 20
    prank_score: str = "raw"  # pointwise Prank ranks by w·x ("raw") or by its predicted grade ("rank")
    num_grades: int = 3
    normalize: bool = False  # per-query min-max features (LETOR QueryLevelNorm); MQ2008 already is, MSLR is not
    seed: int = 0


def _check(config: Config) -> None:
    if config.num_permutations < 1:
        raise ValueError(f"num_permutations must be >= 1; got {config.num_permutations}.")
    for name in config.algorithms:
        make_learner(name, config)  # rejects bad names and hyperparameters before any work


@register("solar_online", Config, report=analysis.report_online)
def run(config: Config, run_dir) -> dict:
    """Table 2 row and Fig. 2 curves of the SOLAR paper on one dataset."""
    _check(config)
    ds = letor_datasets.resolve(config.dataset, "solar_online")
    queries = letor_datasets.all_queries(ds, config.seed, normalize=config.normalize)
    print(f"[solar_online] {ds.name}: {queries.num_queries} queries, {queries.num_documents} documents (longest "
          f"{queries.list_size}), D = {queries.num_features}; {config.num_permutations} permutations", flush=True)
    key = jax.random.key(config.seed)
    docs = protocol.documents(queries)
    results, arrays = {}, {}
    for name in config.algorithms:
        learner = make_learner(name, config)
        stream = protocol.instance_stream(queries, learner.instances)
        keys = protocol.permutation_keys(key, config.num_permutations)
        program = protocol.online_program(learner)
        start = time.perf_counter()
        compiled = program.lower(docs, stream, keys).compile()
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        passes = jax.block_until_ready(compiled(docs, stream, keys))
        run_s = time.perf_counter() - start
        start = time.perf_counter()
        per_query = protocol.score_passes(learner, queries, passes, keys)
        score_s = time.perf_counter() - start
        cumulative = np.asarray(protocol.cumulative_mean(per_query))
        final = cumulative[:, -1]  # [P, 4]
        results[name] = {
            "mean": final.mean(0).round(4).tolist(),
            "std": final.std(0, ddof=1).round(4).tolist() if len(final) > 1 else [0.0] * 4,
            "instances": int(stream.first.shape[0]),
            "compile_s": round(compile_s, 2),
            "run_s": round(run_s, 3),
            "score_s": round(score_s, 3),
        }
        arrays[f"{name}__cumulative_mean"] = cumulative.mean(0)
        arrays[f"{name}__final"] = final
        print(f"[solar_online] {name}: NDCG@1/5/10 MAP = {' '.join(f'{v:.4f}' for v in final.mean(0))} "
              f"({run_s:.2f} s after a {compile_s:.1f} s compile, scoring {score_s:.2f} s)", flush=True)
    data.write_npz(run_dir / "arrays.npz", **arrays)
    timings = {name: {k: r.pop(k) for k in ("compile_s", "run_s", "score_s")} for name, r in results.items()}
    return {"dataset": ds.name, "source": ds.source, "num_queries": queries.num_queries,
            "num_permutations": config.num_permutations, "metrics": list(protocol.METRIC_NAMES),
            "algorithms": results, "order": list(results), "paper": analysis.paper_table2(ds.name),
            "timings": {"algorithms": timings, "table_row_seconds": round(sum(t["run_s"] for t in timings.values()), 3)}}
