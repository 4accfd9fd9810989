"""SOLAR's batch protocol (Wang et al., ACL 2015, Table 3): per LETOR fold, SOLAR-I over its C grid,
SOLAR-II over its γ grid (one random online pass over the training set each) and a primal RankSVM
over its λ grid, all in one compiled program per algorithm (``vmap`` over folds × grid); the value
is chosen per fold on validation, test metrics are averaged over folds under both the standard and
the LETOR-script conventions (Wang et al. 2015, §5.3.1; LETOR ``Eval-Score-4.0.pl``)."""

import dataclasses
import time

import jax
import numpy as np

from experiments.common import letor_datasets
from experiments.analysis import solar, solar_batch as analysis
from experiments.common.params import parse, settings
from experiments.common.registry import register
from jaxrank.learners import LEARNERS, linear
from jaxrank.learners.online import batch_protocol, online_pass
from jaxrank.solvers.pairwise import stack_pairs
from jaxrank.solvers.ranksvm import check_converged, ranksvm_grid
from jaxrank.utils.checks import check_number

# algorithm: (hyperparameter searched, its Config grid, its name in results and messages)
GRIDS = {"solar_first_order": ("c", "c_grid", "C"), "solar_second_order": ("gamma", "gamma_grid", "gamma"),
         "ranksvm": ("lambda", "lambda_grid", "lambda")}

def half_decades(high: float, low: float) -> tuple[float, ...]:
    """``10^high, 10^(high − ½), …, 10^low`` (the paper's ranges, §5.3.1; the half-decade step is ours)."""
    return tuple(float(10.0 ** e) for e in np.arange(high, low - 0.25, -0.5))


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder name under JAXRANK_DATA, a path, "synthetic", or auto (MQ2008)
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    algorithms: tuple[str, ...] = ("solar_first_order", "solar_second_order", "ranksvm")
    c_grid: tuple[float, ...] = half_decades(-3.5, -6.5)  # SOLAR-I C, paper §5.3
    gamma_grid: tuple[float, ...] = half_decades(6.0, 3.0)  # SOLAR-II γ, paper §5.3
    lambda_grid: tuple[float, ...] = tuple(float(10.0 ** e) for e in range(-7, 1))  # RankSVM λ = 1/(C N_p)
    # per-algorithm settings "algo.key=value" of the learners besides the searched one (e.g.
    # solar_second_order.guard=false); defaults: each module's HPARAMS / OPTIONS
    params: tuple[str, ...] = ()
    select_by: str = "map"  # validation criterion: map or ndcg@10
    seed: int = 0


def _grid(name: str, config: Config):
    if name not in GRIDS:
        raise ValueError(f"unknown algorithm {name!r}; choose from {', '.join(GRIDS)}.")
    _, field, label = GRIDS[name]
    values = getattr(config, field)
    if not values or not all(v > 0 for v in values):
        raise ValueError(f"{name}: every {label} must be > 0; got {values}.")
    return label, values


def _learners(config: Config) -> dict:
    """``{name: (Learner, fixed hparams)}`` of the selected learners, checked before any work; the
    searched hyperparameter comes from its grid, not from ``params``."""
    names = [n for n in config.algorithms if n != "ranksvm"]
    if "ranksvm" in parse(config.params):
        raise ValueError("params cannot set ranksvm (a solver, not a registered learner); its λ is searched over "
                         "lambda_grid.")
    chosen = settings(config.params, LEARNERS, names)
    out = {}
    for name, (options, hparams) in chosen.items():
        searched = GRIDS[name][0]
        if searched in parse(config.params).get(name, {}):
            raise ValueError(f"{name}.{searched} is searched over {GRIDS[name][1]}; set the grid instead of params.")
        hparams.pop(searched)
        out[name] = (LEARNERS.build(name, **options), hparams)
    return out


def _ranksvm(train, vali, test, lams, key, folds):
    """The primal RankSVM over folds × λ in one program (pair rows or indices per fold), then each
    fold's validation and test metrics with the same tie-breaking as the online learners. Warns for
    every (fold, λ) whose Newton solve did not converge."""
    check_number("RankSVM λ", lams, low=0, fix="it is 1/(C·N_p)")
    pairs = stack_pairs(train)  # leaves [F, ...]
    w, info = ranksvm_grid(pairs, lams)  # w [F, H, D], info leaves [F, H]: the folds are lanes
    check_converged(info, pairs.features.dtype, lanes=[f"fold {f}, λ={lam:g}" for f in folds for lam in lams])
    keys = batch_protocol.fold_keys(key, len(train))[1]
    return batch_protocol.evaluate_folds(keys, linear.score, w, vali, test)


@register("solar_batch", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Table 3 row of the SOLAR paper on one dataset."""
    if config.select_by not in online_pass.METRIC_NAMES:
        raise ValueError(f"select_by must be one of {online_pass.METRIC_NAMES}; got {config.select_by!r}.")
    grids = {name: _grid(name, config) for name in config.algorithms}
    learners = _learners(config)
    ds = letor_datasets.resolve(config.dataset, "solar_batch")
    splits = [letor_datasets.fold(ds, k, config.seed) for k in config.folds]
    train, vali, test = ([s[i] for s in splits] for i in range(3))
    column = online_pass.METRIC_NAMES.index(config.select_by)
    key = jax.random.key(config.seed)
    results = {}
    for name, (label, values) in grids.items():
        start = time.perf_counter()
        if name == "ranksvm":
            out = _ranksvm(train, vali, test, values, key, config.folds)
        else:
            learner, fixed = learners[name]
            grid = {GRIDS[name][0]: values, **{k: [v] * len(values) for k, v in fixed.items()}}
            out = batch_protocol.batch_protocol(key, learner, grid, train, vali, test)
        out = jax.tree.map(np.asarray, jax.block_until_ready(out))
        seconds = time.perf_counter() - start
        best = out.vali[:, :, column].argmax(1)  # [F] first best value on ties
        folds = np.arange(len(config.folds))
        results[name] = {
            "grid": {label: list(values)},
            "chosen": [values[b] for b in best],
            "test": out.test[folds, best].mean(0).round(4).tolist(),
            "test_letor": out.test_letor[folds, best].mean(0).round(4).tolist(),
            "test_per_fold": out.test[folds, best].round(4).tolist(),
            "vali_grid": out.vali[:, :, column].round(4).tolist(),
            "seconds_with_compile": round(seconds, 2),
        }
        fmt = lambda values: " ".join(f"{v:.4f}" for v in values)  # noqa: E731
        print(f"[solar_batch] {name}: test NDCG@1/5/10 MAP = {fmt(results[name]['test'])} (LETOR script "
              f"{fmt(results[name]['test_letor'])}), {label} per fold {[f'{v:.3g}' for v in results[name]['chosen']]}, "
              f"{seconds:.1f} s with compile", flush=True)
    timings = {"seconds_with_compile": {name: r.pop("seconds_with_compile") for name, r in results.items()}}
    return {"dataset": ds.name, "source": ds.source, "folds": list(config.folds), "select_by": config.select_by, "timings": timings,
            "metrics": list(online_pass.METRIC_NAMES), "algorithms": results, "order": list(results),
            "paper": solar.paper_table3(ds.name)}
