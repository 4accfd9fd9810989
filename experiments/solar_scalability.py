"""SOLAR's scalability (Wang et al., ACL 2015, Fig. 3): training time against the number of training
queries, SOLAR-I and SOLAR-II (one online pass) vs the primal RankSVM baseline (Newton to
convergence), on growing prefixes of a LETOR dataset's queries. Times exclude compilation (each
prefix is compiled ahead of time) and are the median of ``repeats`` runs.

Two RankSVMs: jaxrank's (``solvers.ranksvm``, jitted) and, with ``paper_baseline``, the paper's own
baseline algorithm (its footnote 3: Chapelle's primal Newton, which forms the active pairs'
difference rows and a dense Hessian at every step), run in NumPy float64
(``experiments.common.primal_ranksvm``) on the same pairs and the same objective."""

import contextlib
import dataclasses
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.common import letor_datasets
from experiments.common.primal_ranksvm import primal_ranksvm
from experiments.analysis import solar_scalability as analysis
from experiments.common.registry import register
from jaxrank import data
from experiments.common.params import settings
from jaxrank.learners import LEARNERS
from jaxrank.learners.online import online_pass, streams
from jaxrank.pairs import pairs_per_query, preference_pairs
from jaxrank.solvers.pairwise import make_pairs
from jaxrank.solvers.ranksvm import ranksvm
from jaxrank.utils.checks import check_number


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder name under JAXRANK_DATA, a path, "synthetic", or auto (MQ2008)
    num_queries: tuple[int, ...] = (50, 100, 200, 400, 784)  # prefixes of the shuffled query list (capped)
    # per-algorithm settings "algo.key=value" of SOLAR-I and SOLAR-II (defaults: SOLAR §5.2, C = 1e-5, γ = 1e4)
    params: tuple[str, ...] = ()
    ranksvm_lambda: float = 1e-4
    paper_baseline: bool = True  # also time the paper's RankSVM algorithm (Chapelle's primal Newton, NumPy)
    repeats: int = 3
    seed: int = 0


def _time(compiled, *args, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


LEARNER_NAMES = ("solar_first_order", "solar_second_order")


def learners(params) -> dict:
    """``{name: (Learner, hparams)}`` of SOLAR-I and SOLAR-II, checked before any work."""
    chosen = settings(params, LEARNERS, LEARNER_NAMES)
    for name, (_, hparams) in chosen.items():
        LEARNERS[name].init(jax.random.key(0), 1, **hparams)  # values out of range before any work
    return {name: (LEARNERS.build(name, **options), hparams) for name, (options, hparams) in chosen.items()}


def _time_host(fn, *args, repeats: int) -> float:
    """Median seconds of ``fn(*args)``, NumPy's BLAS held to one thread when ``threadpoolctl`` is
    installed: on shared cores a spinning second BLAS thread made the same solve vary 0.1–13 s."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        limits = contextlib.nullcontext()
    else:
        limits = threadpool_limits(1)
    seconds = []
    with limits:
        for _ in range(repeats):
            start = time.perf_counter()
            fn(*args)
            seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def training_seconds(key, queries, *, learners: dict, lam: float, repeats: int, paper_baseline: bool = False):
    """Seconds (after compile) to train each of ``learners`` (``{name: (Learner, hparams)}``, one
    pass from its initial state) and RankSVM on all of ``queries``; the pairs are built once
    beforehand for every method (not timed).

    Returns ``(seconds, steps)``: ``{name: seconds}`` (``"ranksvm_paper"`` too with ``paper_baseline``)
    and the Newton steps of each RankSVM (``{"ranksvm": n, "ranksvm_paper": n}``)."""
    out = {}
    docs = streams.documents(queries)
    stream = streams.instance_stream(queries, "pairs")
    for name, (learner, hparams) in learners.items():
        state = learner.init(key, queries.num_features, **hparams)

        def fit(k, state, d, s, learner=learner):
            return online_pass.run_pass(k, learner, state, d, s, snapshots=False).state

        fit = jax.jit(fit)
        out[name] = _time(fit.lower(key, state, docs, stream).compile(), key, state, docs, stream, repeats=repeats)
    pairs = make_pairs(queries)
    solve = jax.jit(lambda p, lam: ranksvm(p, lam)[0])
    lam = jnp.float32(lam)
    out["ranksvm"] = _time(solve.lower(pairs, lam).compile(), pairs, lam, repeats=repeats)
    steps = {"ranksvm": int(jax.jit(ranksvm)(pairs, lam)[1].iterations)}
    if paper_baseline:
        index = preference_pairs(queries)
        features = np.asarray(queries.features, np.float64)
        c = 2.0 / (float(lam) * max(index.num_pairs, 1))  # the same objective: λ = 2 / (C N_p)
        out["ranksvm_paper"] = _time_host(primal_ranksvm, features, index.first, index.second, c, repeats=repeats)
        steps["ranksvm_paper"] = primal_ranksvm(features, index.first, index.second, c)[1].newton_steps
    return out, steps


@register("solar_scalability", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Fig. 3 of the SOLAR paper: training time vs number of queries."""
    if config.repeats < 1 or not config.num_queries or min(config.num_queries) < 1:
        raise ValueError(f"repeats and every num_queries must be >= 1; got {config.repeats}, {config.num_queries}.")
    chosen = learners(config.params)
    check_number("ranksvm_lambda", config.ranksvm_lambda, low=0, fix="it is 1/(C·N_p)")
    ds = letor_datasets.resolve(config.dataset, "solar_scalability")
    queries = letor_datasets.all_queries(ds, config.seed)
    key = jax.random.key(config.seed)
    order = np.asarray(jax.random.permutation(jax.random.fold_in(key, 1), queries.num_queries))
    sizes = sorted({min(n, queries.num_queries) for n in config.num_queries})
    seconds = {"solar_first_order": [], "solar_second_order": [], "ranksvm": []}
    if config.paper_baseline:
        seconds["ranksvm_paper"] = []
    num_pairs, newton_steps = [], {}
    for n in sizes:
        prefix = data.take_queries(queries, order[:n])
        num_pairs.append(int(pairs_per_query(prefix.labels, prefix.offsets).sum()))
        times, steps = training_seconds(key, prefix, learners=chosen, lam=config.ranksvm_lambda,
                                        repeats=config.repeats, paper_baseline=config.paper_baseline)
        for name, s in times.items():
            seconds[name].append(round(s, 5))
        for name, k in steps.items():
            newton_steps.setdefault(name, []).append(k)
        print(f"[solar_scalability] {n} queries ({num_pairs[-1]} pairs): "
              + ", ".join(f"{a} {v[-1]:.4f} s" for a, v in seconds.items()), flush=True)
    return {"dataset": ds.name, "source": ds.source, "num_queries": sizes, "num_pairs": num_pairs,
            "num_features": queries.num_features, "newton_steps": newton_steps,
            "repeats": config.repeats, "timings": {"seconds": seconds}}
