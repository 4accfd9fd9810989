"""LETOR folder layout: ``<root>/FoldK/{train,vali,test}.txt[.gz]`` to padded query batches."""

from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data import locations
from jaxrank.data.cache import load_svmlight
from jaxrank.data.padding import bucket_size, group_queries, query_lengths
from jaxrank.types import QueryBatch

SPLITS = ("train", "vali", "test")


def split_file(folder, split: str) -> Path:
    """The file of one split in ``folder``: ``split.txt``, ``split.txt.gz`` or ``split``."""
    folder = Path(folder)
    for name in (f"{split}.txt", f"{split}.txt.gz", split, f"{split}.gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"no {split!r} file in {folder} (looked for {split}.txt and {split}.txt.gz).")


def load_queries(
    path,
    *,
    list_size: Optional[int] = None,
    normalize: bool = False,
    num_features: Optional[int] = None,
    cache: bool = True,
) -> QueryBatch:
    """One SVMlight/LETOR/LightGBM file (a path or a name under ``JAXRANK_DATA``) as a ``QueryBatch``."""
    data = load_svmlight(locations.resolve(path), num_features=num_features, cache=cache)
    return group_queries(data, list_size=list_size, normalize=normalize)


def load_fold(
    root,
    fold: int = 1,
    *,
    list_size: Optional[int] = None,
    normalize: bool = False,
    cache: bool = True,
) -> tuple[QueryBatch, QueryBatch, QueryBatch]:
    """Loads ``(train, vali, test)`` of one LETOR fold.

    Args:
      root: the dataset folder or its name under ``JAXRANK_DATA`` (e.g. ``"MQ2008"``).
      fold: ``K`` in ``FoldK``.
      list_size: ``L`` shared by the three splits; default the bucket of the longest query in
        any of them, so one compiled program serves all three.
      normalize: per-query min-max normalisation (the QueryLevelNorm sets already are).

    Returns:
      Three ``QueryBatch`` with the same ``L`` and ``D``.
    """
    folder = locations.resolve(root) / f"Fold{fold}"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist: expected the LETOR layout <root>/Fold{fold}/train.txt.")
    parsed = [load_svmlight(split_file(folder, s), cache=cache) for s in SPLITS]
    dims = {p.features.shape[1] for p in parsed}
    if len(dims) > 1:  # a trailing all-zero feature can be absent from one split's text
        parsed = [load_svmlight(split_file(folder, s), num_features=max(dims), cache=cache) for s in SPLITS]
    if list_size is None:
        list_size = bucket_size(int(max(np.max(query_lengths(p.qids)) for p in parsed)))
    return tuple(group_queries(p, list_size=list_size, normalize=normalize) for p in parsed)
