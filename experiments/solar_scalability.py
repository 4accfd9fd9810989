"""SOLAR's scalability (Wang et al., ACL 2015, Fig. 3): training time against the number of training
queries, SOLAR-I and SOLAR-II (one online pass) vs the primal RankSVM baseline (Newton to
convergence), on growing prefixes of a LETOR dataset's queries. Times exclude compilation (each
prefix is compiled ahead of time) and are the median of ``repeats`` runs."""

import dataclasses
import statistics
import time

import jax
import jax.numpy as jnp

from experiments import letor_datasets
from experiments.analysis import solar as analysis
from experiments.registry import register
from jaxrank.learners import online
from jaxrank.learners.online import protocol
from jaxrank.solvers.pairwise import make_pairs
from jaxrank.solvers.ranksvm import check_ranksvm_lambda, ranksvm


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder name under JAXRANK_DATA, a path, "synthetic", or auto (MQ2008)
    num_queries: tuple[int, ...] = (50, 100, 200, 400, 784)  # prefixes of the shuffled query list (capped)
    c: float = 1e-5
    gamma: float = 1e4
    ranksvm_lambda: float = 1e-4
    repeats: int = 3
    seed: int = 0


def _time(compiled, *args, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def training_seconds(batch, *, c: float, gamma: float, lam: float, repeats: int, key) -> dict:
    """Seconds (after compile) to train SOLAR-I, SOLAR-II and RankSVM on all queries of ``batch``."""
    out = {}
    for name, learner in (("solar_i", online.solar_first_order(c)), ("solar_ii", online.solar_second_order(gamma))):
        stream = protocol.instance_stream(batch, "pairs")
        fit = jax.jit(lambda b, s, k, learner=learner: protocol.run_pass(learner, b, s, k, snapshots=False).state)
        out[name] = _time(fit.lower(batch, stream, key).compile(), batch, stream, key, repeats=repeats)
    solve = jax.jit(lambda b, lam: ranksvm(make_pairs(b), lam)[0])
    lam = jnp.float32(lam)
    out["ranksvm"] = _time(solve.lower(batch, lam).compile(), batch, lam, repeats=repeats)
    return out


@register("solar_scalability", Config, report=analysis.report_scalability)
def run(config: Config, run_dir) -> dict:
    """Fig. 3 of the SOLAR paper: training time vs number of queries."""
    if config.repeats < 1 or not config.num_queries or min(config.num_queries) < 1:
        raise ValueError(f"repeats and every num_queries must be >= 1; got {config.repeats}, {config.num_queries}.")
    online.solar_first_order(config.c), online.solar_second_order(config.gamma)
    check_ranksvm_lambda(config.ranksvm_lambda)
    ds = letor_datasets.resolve(config.dataset, "solar_scalability")
    batch = letor_datasets.all_queries(ds, config.seed)
    key = jax.random.key(config.seed)
    order = jax.random.permutation(jax.random.fold_in(key, 1), batch.features.shape[0])
    batch = jax.tree.map(lambda a: a[order], batch)
    sizes = sorted({min(n, batch.features.shape[0]) for n in config.num_queries})
    seconds = {"solar_i": [], "solar_ii": [], "ranksvm": []}
    num_pairs = []
    for n in sizes:
        prefix = jax.tree.map(lambda a: a[:n], batch)
        num_pairs.append(int(protocol.instance_stream(prefix, "pairs").query.shape[0]))
        for name, s in training_seconds(prefix, c=config.c, gamma=config.gamma, lam=config.ranksvm_lambda,
                                        repeats=config.repeats, key=key).items():
            seconds[name].append(round(s, 5))
        print(f"[solar_scalability] {n} queries ({num_pairs[-1]} pairs): "
              + ", ".join(f"{a} {v[-1]:.4f} s" for a, v in seconds.items()), flush=True)
    return {"dataset": ds.name, "source": ds.source, "num_queries": sizes, "num_pairs": num_pairs,
            "repeats": config.repeats, "seconds": seconds}
