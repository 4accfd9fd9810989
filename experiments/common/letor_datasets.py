"""LETOR datasets for the learning-to-rank experiments: a name under ``JAXRANK_DATA``, a path,
``"synthetic"``, or ``"auto"`` (MQ2008 when present, else synthetic data, saying so).

A LETOR folder holds ``Fold1..Fold5``. Where an experiment allows it (``resolve(..., single_file=True)``),
the dataset may also be one SVMlight file, or a folder holding just one (the MSLR-WEB subset): its
queries, normalised per query (as LETOR's ``QueryLevelNorm`` files are), are shuffled with the seed
into five parts, rotated as LETOR folds (fold ``k``: parts ``k..k+2`` train, ``k+3`` vali, ``k+4`` test).
"""

import dataclasses
from pathlib import Path
from typing import Optional

import jax
import numpy as np

from jaxrank import data
from jaxrank.types import RaggedQueries

DEFAULT = "MQ2008"


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str  # "MQ2008", the folder's name, or "synthetic"
    source: str  # a path or a description of the synthetic generator
    root: Optional[Path]  # LETOR folder with Fold1..Fold5, None for synthetic or a single file
    file: Optional[Path] = None  # the one SVMlight file split into five parts (module docstring)


def _single_file(path: Path) -> Optional[Path]:
    """``path`` itself, or the one SVMlight file of the folder ``path``; None otherwise."""
    if path.is_file():
        return path
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".txt", ".gz"))
    return files[0] if len(files) == 1 else None


def resolve(dataset: str, tag: str, *, single_file: bool = False) -> Dataset:
    """Finds ``dataset``; ``tag`` prefixes the message printed on the synthetic fallback; ``single_file``
    also accepts one SVMlight file (module docstring)."""
    name = DEFAULT if dataset == "auto" else dataset
    if name != "synthetic":
        try:
            root = data.resolve(name)
        except FileNotFoundError as e:
            if dataset != "auto":
                raise
            print(f"[{tag}] {e}\n[{tag}] using synthetic data instead.", flush=True)
        else:
            if root.is_dir() and (root / "Fold1").is_dir():
                return Dataset(root.name, str(root), root)
            file = _single_file(root) if single_file else None
            if file is None:
                one = " or one SVMlight file" if single_file else ""
                raise FileNotFoundError(f"{root} has no Fold1/: expected a LETOR folder <root>/Fold1..Fold5{one}.")
            return Dataset(root.name, str(file), None, file)
    return Dataset("synthetic", "synthetic(queries=120 per fold, L=32, D=16, 3 grades)", None)


def _synthetic(seed: int, part: int) -> RaggedQueries:
    return data.as_ragged(data.synthetic_queries(jax.random.fold_in(jax.random.key(seed), part), num_queries=40,
                                                 list_size=32, num_features=16, num_grades=3))


def _file_parts(file: Path, seed: int) -> list[RaggedQueries]:
    queries = data.load_queries(file, normalize=True)
    if queries.num_queries < 5:  # each of the five parts is one fold's test queries
        raise ValueError(f"{file} holds {queries.num_queries} queries; splitting one file into 5 folds needs at least 5: "
                         "pass a larger file, or a LETOR folder with Fold1..Fold5.")
    order = np.asarray(jax.random.permutation(jax.random.key(seed), queries.num_queries))
    return [data.take_queries(queries, np.sort(p)) for p in np.array_split(order, 5)]


def fold(ds: Dataset, k: int, seed: int = 0, *, normalize: bool = False) -> tuple[RaggedQueries, RaggedQueries, RaggedQueries]:
    """``(train, vali, test)`` of fold ``k`` (synthetic: five parts of 40 queries, rotated as LETOR does;
    a single file: its five parts, module docstring)."""
    if ds.root is not None:
        return data.load_fold(ds.root, k, normalize=normalize)
    order = [(k - 1 + i) % 5 for i in range(5)]
    parts = _file_parts(ds.file, seed) if ds.file is not None else [_synthetic(seed, p) for p in range(5)]
    return data.concat_queries([parts[p] for p in order[:3]]), parts[order[3]], parts[order[4]]


def all_queries(ds: Dataset, seed: int = 0, *, normalize: bool = False) -> RaggedQueries:
    """Every query of the dataset once: Fold1's train, vali and test (the five partitions)."""
    return data.concat_queries(fold(ds, 1, seed, normalize=normalize))
