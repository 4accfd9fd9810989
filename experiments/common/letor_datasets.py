"""LETOR datasets for the learning-to-rank experiments: a name under ``JAXRANK_DATA``, a path,
``"synthetic"``, or ``"auto"`` (MQ2008 when present, else synthetic data, saying so)."""

import dataclasses
from pathlib import Path
from typing import Optional

import jax

from jaxrank import data
from jaxrank.types import RaggedQueries

DEFAULT = "MQ2008"


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str  # "MQ2008", the folder's name, or "synthetic"
    source: str  # a path or a description of the synthetic generator
    root: Optional[Path]  # LETOR folder with Fold1..Fold5, None for synthetic


def resolve(dataset: str, tag: str) -> Dataset:
    """Finds ``dataset``; ``tag`` prefixes the message printed on the synthetic fallback."""
    name = DEFAULT if dataset == "auto" else dataset
    if name != "synthetic":
        try:
            root = data.resolve(name)
        except FileNotFoundError as e:
            if dataset != "auto":
                raise
            print(f"[{tag}] {e}\n[{tag}] using synthetic data instead.", flush=True)
        else:
            if not (root / "Fold1").is_dir():
                raise FileNotFoundError(f"{root} has no Fold1/: expected a LETOR folder <root>/Fold1..Fold5.")
            return Dataset(root.name, str(root), root)
    return Dataset("synthetic", "synthetic(queries=120 per fold, L=32, D=16, 3 grades)", None)


def _synthetic(seed: int, part: int) -> RaggedQueries:
    return data.as_ragged(data.synthetic_queries(jax.random.fold_in(jax.random.key(seed), part), num_queries=40,
                                                 list_size=32, num_features=16, num_grades=3))


def fold(ds: Dataset, k: int, seed: int = 0, *, normalize: bool = False) -> tuple[RaggedQueries, RaggedQueries, RaggedQueries]:
    """``(train, vali, test)`` of fold ``k`` (synthetic: five parts of 40 queries, rotated as LETOR does)."""
    if ds.root is not None:
        return data.load_fold(ds.root, k, normalize=normalize)
    parts = [(k - 1 + i) % 5 for i in range(5)]
    train = data.concat_queries([_synthetic(seed, p) for p in parts[:3]])
    return train, _synthetic(seed, parts[3]), _synthetic(seed, parts[4])


def all_queries(ds: Dataset, seed: int = 0, *, normalize: bool = False) -> RaggedQueries:
    """Every query of the dataset once: Fold1's train, vali and test (the five partitions)."""
    return data.concat_queries(fold(ds, 1, seed, normalize=normalize))
