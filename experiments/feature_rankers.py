"""Every single feature of a LETOR dataset as a ranker: NDCG@k and MAP per fold.

These single-feature rankers are the arms of the dueling-bandit experiments (Zoghi et al. 2014,
§6). Each fold is scored on its test split (for LETOR the five test splits partition the data).
Ties (frequent for single features) are broken by a seeded random permutation (SPEC §5.1).
"""

import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments import letor_datasets
from experiments.analysis import feature_rankers as analysis
from experiments.registry import register
from jaxrank import data, metrics

@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # name under JAXRANK_DATA, a path, "synthetic", or "auto" (MQ2008, else synthetic)
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    split: str = "test"
    topns: tuple[int, ...] = (1, 5, 10)
    letor_compat: bool = False  # LETOR Eval-Score-4.0.pl conventions (SPEC §5.3)
    seed: int = 0
    synthetic_queries: int = 160  # per fold, when no data is found
    synthetic_features: int = 16


def _synthetic_fold(config: Config, fold: int):
    return data.synthetic_queries(
        jax.random.fold_in(jax.random.key(config.seed), 1000 + fold),
        num_queries=config.synthetic_queries, list_size=32, num_features=config.synthetic_features,
    )


def _resolve(config: Config):
    """Returns (source description, fold -> QueryBatch loader)."""
    ds = letor_datasets.resolve(config.dataset, "feature_rankers")
    if ds.root is not None:
        splits = dict(zip(data.letor.SPLITS, range(3)))
        if config.split not in splits:
            raise ValueError(f"split must be one of {tuple(splits)}; got {config.split!r}.")
        return ds.source, lambda fold: data.load_fold(ds.root, fold)[splits[config.split]]
    source = f"synthetic(queries={config.synthetic_queries}, features={config.synthetic_features}, seed={config.seed})"
    return source, functools.partial(_synthetic_fold, config)


def metric_names(topns) -> list[str]:
    return [f"NDCG@{k}" for k in topns] + ["MAP"]


@functools.partial(jax.jit, static_argnames=("topns", "letor_compat"))
def score_features(batch, key, *, topns, letor_compat):
    """Metrics of every single-feature ranker.

    Args:
      batch: ``QueryBatch`` with ``features [Q, L, D]``.
      key: tie-breaking key (ignored with ``letor_compat``, which keeps file order).

    Returns:
      ``[M, D]``: NDCG at each ``topn`` then MAP, averaged over queries.
    """
    scores = jnp.moveaxis(batch.features, -1, 0)  # [D, Q, L]
    kw = dict(where=batch.mask, key=key, letor_compat=letor_compat)

    def one_feature(s):
        values = [metrics.ndcg(s, batch.labels, topn=k, **kw) for k in topns]
        return jnp.stack(values + [metrics.average_precision(s, batch.labels, **kw)])

    return jnp.moveaxis(jax.vmap(one_feature)(scores), 0, -1)


@register("feature_rankers", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Single-feature rankers scored by NDCG@1/5/10 and MAP per fold."""
    source, load = _resolve(config)
    topns = tuple(config.topns)
    per_fold = []
    for fold in config.folds:
        start = time.perf_counter()
        batch = load(fold)
        key = jax.random.fold_in(jax.random.key(config.seed), fold)
        values = np.asarray(score_features(batch, key, topns=topns, letor_compat=config.letor_compat))
        per_fold.append(values)
        best = int(np.argmax(values[len(topns) - 1]))
        print(f"[feature_rankers] fold {fold}: {batch.num_queries} queries, {batch.num_features} features, "
              f"best NDCG@{topns[-1]} = {values[len(topns) - 1, best]:.4f} (feature {best + 1}), "
              f"{time.perf_counter() - start:.1f}s", flush=True)
    per_fold = np.stack(per_fold)  # [F, M, D]
    data.write_npz(run_dir / "arrays.npz", per_fold=per_fold)
    names = metric_names(topns)
    return {
        "source": source,
        "convention": "letor" if config.letor_compat else "standard",
        "folds": list(config.folds),
        "features": list(range(1, per_fold.shape[-1] + 1)),
        "metrics": names,
        "per_fold": {m: per_fold[:, i].round(6).tolist() for i, m in enumerate(names)},
        "mean": {m: per_fold[:, i].mean(0).round(6).tolist() for i, m in enumerate(names)},
        "std": {m: per_fold[:, i].std(0).round(6).tolist() for i, m in enumerate(names)},
    }
