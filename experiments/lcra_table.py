"""LCRA Table 1 (Tsivtsivadze, Hofmann, Heskes 2012): test MAP of LCRA-1-5, LCRA-1-1, SPD and SPD-MV
in the semi-supervised protocol (the paper's §4) on one LETOR folder (MQ2008 by default; any LETOR 3.0
set with ``--set dataset=/path/to/TD2003``), plus a paired t-test over the random splits.

Choices the paper leaves open (ours): sign label for the hinge, the Pegasos schedule ``1/(λt)``
(``params=lcra.schedule=eta0`` + ``eta0s`` for the η0 variant), projection on (sofia-ml's default;
this experiment's default for ``lcra.project_ball``), 20% labels drawn per document, λ ∈ 1e-6..1e-1
tied across views, μ ∈ 1e-4..1, N = 100,000 steps, 10 splits (split ``s`` from ``fold_in(seed, s)``).
Every method is the ``lcra`` learner (``jaxrank.learners.LEARNERS``) with the method's views; its
other options and fixed hyperparameters come from ``params`` (``lcra.loss=squared``, ``lcra.clamp=0``).
The whole data set is the union of ``Fold{fold}``'s train, vali and test files.
"""

import dataclasses
import math
import time
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from experiments.common import letor_datasets
from experiments.analysis import lcra_table as analysis
from experiments.common.params import parse, settings
from experiments.common.registry import register
from jaxrank import data
from jaxrank.learners import LEARNERS
from jaxrank.learners.pairwise import semi_supervised as protocol
from jaxrank.learners.pairwise.pair_sampling import SAMPLERS
from jaxrank.metrics import statistics
from jaxrank.types import QueryBatch

PAPER_TABLE, PAPER_COLUMNS = analysis.PAPER_TABLE, analysis.PAPER_ORDER  # Table 1 of the paper
DEFAULTS = {"lcra": {"project_ball": True}}  # sofia-ml's projection, as the SPD baseline runs it
SEARCHED = {"lam": "lambdas", "mu": "mus", "eta0": "eta0s"}  # lcra hyperparameter: the Config grid it is searched over


def learner_settings(config) -> tuple[dict, dict]:
    """``(options, fixed hparams)`` of ``lcra`` from ``config.params``, checked before any work."""
    (options, hparams), = settings(config.params, LEARNERS, ("lcra",), DEFAULTS).values()
    given = parse(config.params).get("lcra", {})
    for name, grid in SEARCHED.items():
        if name in given:
            raise ValueError(f"lcra.{name} is searched over the grid {grid}; set {grid} instead of params.")
        hparams.pop(name)
    if "num_views" in given:
        raise ValueError("lcra.num_views is set by each method (SPD: 1, the others: 2); choose methods instead.")
    options.pop("num_views")
    LEARNERS["lcra"].init(jax.random.key(0), 2, **hparams)  # values out of range before any work
    return options, hparams


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder (name under JAXRANK_DATA or path), "synthetic", or auto (MQ2008, else synthetic)
    fold: int = 1  # the data set is Fold{fold}/{train,vali,test} together
    methods: tuple[str, ...] = ("spd", "spd_mv", "lcra_1_1", "lcra_1_5")
    num_splits: int = 10
    num_folds: int = 5
    train_fraction: float = 0.7
    label_fraction: float = 0.2
    num_steps: int = 100_000
    cv_steps: Optional[int] = None  # steps of each CV fit; None = num_steps
    lambdas: tuple[float, ...] = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
    mus: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
    eta0s: tuple[float, ...] = (1.0,)  # read only with params=lcra.schedule=eta0
    tie_view_lambdas: bool = True  # False: λ1 × λ2 grid (36 points per μ)
    # settings "lcra.key=value" of the learner besides its searched λ, μ, η0 and the method's views:
    # lcra.loss, lcra.schedule, lcra.project_ball, lcra.graded_label, lcra.clamp (defaults: DEFAULTS)
    params: tuple[str, ...] = ()
    sampler: str = "exact"  # pair sampler of the protocol (pair_sampling.SAMPLERS)
    normalize: bool = True  # per-query min-max to [0, 1] (idempotent on QueryLevelNorm files)
    reference: str = "spd"  # the paired test compares every method with this one
    seed: int = 0
    synthetic_queries: int = 60
    synthetic_features: int = 8


def _load(config: Config) -> tuple[str, QueryBatch]:
    ds = letor_datasets.resolve(config.dataset, "lcra_table")
    if ds.root is not None:
        # the protocol pads the union of the fold's three files (small LETOR 3.0/4.0 sets) to the
        # power of two above its longest query, as the per-split dense loads did
        parts = data.load_fold(ds.root, config.fold, normalize=config.normalize)
        return ds.source, data.pad_queries(data.concat_queries(parts))
    batch = data.synthetic_queries(jax.random.fold_in(jax.random.key(config.seed), 999),
                                   num_queries=config.synthetic_queries, list_size=16,
                                   num_features=config.synthetic_features, num_grades=3)
    return f"synthetic(queries={config.synthetic_queries}, features={config.synthetic_features})", batch


def paired_t_test(a, b) -> dict:
    """Two-sided paired t-test of ``mean(a − b) = 0`` (``jaxrank.metrics.statistics``) as a JSON dict;
    ``t`` and ``p_value`` are None when the differences have no spread."""
    test = statistics.paired_t_test(a, b)
    defined = not math.isnan(test.t)
    return {"mean_diff": test.mean_diff, "t": test.t if defined else None, "df": test.df,
            "p_value": test.p_value if defined else None, "wins": test.wins, "losses": test.losses}


def _paper_row(source: str):
    for name, row in PAPER_TABLE.items():
        if name.lower() in source.lower():
            return name, dict(zip(PAPER_COLUMNS, row))
    return None, None


@register("lcra_table", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """LCRA vs SPD / SPD-MV test MAP, semi-supervised, 10 splits (LCRA paper Table 1)."""
    unknown = [m for m in config.methods if m not in protocol.METHODS]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r}; available: {', '.join(protocol.METHODS)}.")
    if config.reference not in config.methods:
        raise ValueError(f"reference {config.reference!r} must be one of methods {config.methods}.")
    options, fixed = learner_settings(config)
    if config.sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}; got {config.sampler!r}.")
    source, batch = _load(config)
    protocol.check_batch(batch)
    cv_steps = config.cv_steps or config.num_steps
    keys = protocol.split_keys(jax.random.key(config.seed), config.num_splits)
    common = dict(sampler=config.sampler, num_folds=config.num_folds, train_fraction=config.train_fraction,
                  label_fraction=config.label_fraction)
    results, arrays = {}, {}
    for name in config.methods:
        method = protocol.METHODS[name]
        learner = protocol.method_learner(method, **options)
        grid = protocol.make_grid(method, config.lambdas, config.mus,
                                  config.eta0s if options["schedule"] == "eta0" else (1.0,),
                                  tie_view_lambdas=config.tie_view_lambdas, fixed=fixed)
        start = time.time()
        val_map = np.asarray(protocol.cross_validate(keys, learner, method, batch, grid, num_steps=cv_steps,
                                                     label=f"lcra_table {method.name} cv", **common))
        best, chosen = protocol.select(jnp.asarray(val_map), grid)
        test_map = np.asarray(protocol.fit_and_test(keys, learner, method, batch, chosen, num_steps=config.num_steps,
                                                    label=f"lcra_table {method.name} test", **common))
        seconds = time.time() - start
        results[method.name] = {
            "test_map": test_map.tolist(),
            "mean": float(test_map.mean()),
            "sd": float(test_map.std(ddof=1)) if test_map.size > 1 else 0.0,
            "val_map_best": val_map.mean(1).max(-1).tolist(),
            "chosen": {name: np.asarray(v).tolist() for name, v in chosen.items() if name in SEARCHED},
            "grid_size": int(grid["mu"].shape[0]),
            "seconds": round(seconds, 1),
        }
        arrays[f"{name}__val_map"] = val_map
        arrays[f"{name}__test_map"] = test_map
        print(f"[lcra_table] {method.name}: test MAP {test_map.mean():.4f} ± {results[method.name]['sd']:.4f} "
              f"(grid {grid['mu'].shape[0]}, {seconds:.0f} s)", flush=True)
    timings = {"seconds": {name: r.pop("seconds") for name, r in results.items()}}
    ref = protocol.METHODS[config.reference].name
    tests = {m: paired_t_test(r["test_map"], results[ref]["test_map"]) for m, r in results.items() if m != ref}
    paper_name, paper = _paper_row(source)
    data.write_npz(run_dir / "arrays.npz", **arrays)
    return {
        "dataset": source,
        "num_queries": int(batch.mask.any(-1).sum()),
        "num_docs": int(batch.mask.sum()),
        "num_splits": config.num_splits,
        "label_fraction": config.label_fraction,
        "num_steps": config.num_steps,
        "cv_steps": cv_steps,
        "reference": ref,
        "methods": results,
        "paired_t_test": tests,
        "paper": {"dataset": paper_name, "map": paper} if paper else None,
        "timings": timings,
    }
