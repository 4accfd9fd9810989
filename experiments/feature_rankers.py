"""Every single feature of a LETOR dataset as a ranker: NDCG@k and MAP per fold.

These single-feature rankers are the arms of the dueling-bandit experiments (Zoghi et al. 2014,
§5). Each fold is scored on its test split (for LETOR the five test splits partition the data).
Ties (frequent for single features) are broken by seeded noise (our choice), one key per query
(``fold_in(key, q)``), so a query's value does not depend on how the queries are blocked.

The folds load in the ragged layout (``RaggedQueries``) and are scored in buckets of queries of
similar length (``jaxrank.data.map_queries``), a few features at a time inside a bucket, so memory
is bounded by the bucket, not by ``Q x L_max x D`` (MSLR-WEB30K: 1,251 documents in its longest query).
"""

import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from experiments.common import letor_datasets
from experiments.analysis import feature_rankers as analysis
from experiments.common.registry import register
from jaxrank import data, metrics
from jaxrank.learners.online.online_pass import query_keys

SORT_CELLS = 1 << 22  # features x B x L scored together: each sort temporary is ~16 MB
MIN_LIST = 32  # the smallest bucket list size: shorter queries share one compiled shape (LETOR means are ~20-120)


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # name under JAXRANK_DATA, a path, "synthetic", or "auto" (MQ2008, else synthetic)
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    split: str = "test"
    topns: tuple[int, ...] = (1, 5, 10)
    letor_compat: bool = False  # LETOR Eval-Score-4.0.pl conventions
    seed: int = 0
    synthetic_queries: int = 160  # per fold, when no data is found
    synthetic_features: int = 16


def _synthetic_fold(config: Config, fold: int):
    return data.as_ragged(data.synthetic_queries(
        jax.random.fold_in(jax.random.key(config.seed), 1000 + fold),
        num_queries=config.synthetic_queries, list_size=32, num_features=config.synthetic_features,
    ))


def _resolve(config: Config):
    """Returns (source description, fold -> queries loader)."""
    ds = letor_datasets.resolve(config.dataset, "feature_rankers")
    if ds.root is not None:
        splits = dict(zip(data.letor.SPLITS, range(3)))
        if config.split not in splits:
            raise ValueError(f"split must be one of {tuple(splits)}; got {config.split!r}.")
        return ds.source, lambda fold: data.load_fold(ds.root, fold, layout="ragged")[splits[config.split]]
    source = f"synthetic(queries={config.synthetic_queries}, features={config.synthetic_features}, seed={config.seed})"
    return source, functools.partial(_synthetic_fold, config)


def metric_names(topns) -> list[str]:
    return [f"NDCG@{k}" for k in topns] + ["MAP"]


@functools.partial(jax.jit, static_argnames=("topns", "letor_compat", "features_per_pass"))
def _bucket_metrics(batch, key, queries, *, topns, letor_compat, features_per_pass):
    """``[M, D, B]`` metrics of every single-feature ranker on each query of one bucket.

    Features are scored ``features_per_pass`` at a time (``lax.map`` in batches), so the sorts
    never hold more than ``features_per_pass x B x L`` cells.
    """
    keys = query_keys(key, queries)  # [B]: query q breaks ties with fold_in(key, q)
    kw = dict(where=batch.mask, key=keys, letor_compat=letor_compat, reduce_fn=None)

    def one_feature(d):
        s = batch.features[..., d]  # [B, L]
        values = [metrics.ndcg(s, batch.labels, topn=k, **kw) for k in topns]
        return jnp.stack(values + [metrics.average_precision(s, batch.labels, **kw)])  # [M, B]

    per_feature = jax.lax.map(one_feature, jnp.arange(batch.features.shape[-1]), batch_size=features_per_pass)
    return jnp.moveaxis(per_feature, 0, 1)


def score_features(queries, key, *, topns, letor_compat) -> np.ndarray:
    """Metrics of every single-feature ranker, averaged over every query.

    Args:
      queries: ``RaggedQueries`` (or a ``QueryBatch``), ``D`` features.
      key: tie-breaking key; query ``q`` uses ``fold_in(key, q)`` (ignored with ``letor_compat``,
        which keeps file order).
      topns: the NDCG cutoffs.
      letor_compat: LETOR ``Eval-Score-4.0.pl`` conventions.

    Returns:
      numpy ``[M, D]``: NDCG at each ``topn`` then MAP (``M = len(topns) + 1``), each the mean over
      the ``Q`` queries of the feature's per-query value.
    """
    queries = data.as_ragged(queries)
    num_features = max(queries.num_features, 1)

    def bucket(b):
        per_pass = max(1, min(num_features, SORT_CELLS // b.docs.size))
        return _bucket_metrics(b.batch, key, jnp.asarray(b.queries, jnp.int32), topns=tuple(topns),
                               letor_compat=letor_compat, features_per_pass=per_pass)

    per_query = data.map_queries(bucket, queries, axis=-1, minimum=MIN_LIST)  # [M, D, Q]
    return per_query.mean(axis=-1, dtype=np.float64).astype(np.float32)


@register("feature_rankers", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Single-feature rankers scored by NDCG@1/5/10 and MAP per fold."""
    source, load = _resolve(config)
    topns = tuple(config.topns)
    per_fold = []
    for fold in config.folds:
        start = time.perf_counter()
        queries = load(fold)
        key = jax.random.fold_in(jax.random.key(config.seed), fold)
        values = score_features(queries, key, topns=topns, letor_compat=config.letor_compat)
        per_fold.append(values)
        best = int(np.argmax(values[len(topns) - 1]))
        print(f"[feature_rankers] fold {fold}: {queries.num_queries} queries, {queries.num_features} features, "
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
