"""LETOR folder layout: ``<root>/FoldK/{train,vali,test}.txt[.gz]`` to query collections."""

from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data import locations, svmlight
from jaxrank.data.cache import load_svmlight
from jaxrank.data.ragged import bucket_size, pad_queries, query_lengths, ragged_queries
from jaxrank.data.svmlight import SVMLightData
from jaxrank.types import QueryBatch, RaggedQueries

SPLITS = ("train", "vali", "test")
LAYOUTS = ("ragged", "dense")


def split_file(folder, split: str) -> Path:
    """The file of one split in ``folder``: ``split.txt``, ``split.txt.gz`` or ``split``."""
    folder = Path(folder)
    for name in (f"{split}.txt", f"{split}.txt.gz", split, f"{split}.gz"):
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"no {split!r} file in {folder} (looked for {split}.txt and {split}.txt.gz).")


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be 'ragged' (flat documents, any size) or 'dense' (padded QueryBatch, "
                         f"small data); got {layout!r}.")


def _widen(data: SVMLightData, width: int) -> SVMLightData:
    """Zero columns up to ``width`` (a trailing all-zero feature may be absent from one split's text)."""
    if data.features.shape[1] == width:
        return data
    features = np.zeros((data.features.shape[0], width), np.float32)
    features[:, : data.features.shape[1]] = data.features
    return data._replace(features=features)


def _check_fold_width(files: list[Path], parsed: list[SVMLightData]) -> None:
    """Raises when widening every split to the widest one adds more than ``svmlight.WIDTH_LIMIT_BYTES``
    of zeros (a stray index in a small split must not widen the others), naming the wide file's line."""
    widths = [p.features.shape[1] for p in parsed]
    wide = int(np.argmax(widths))
    zeros = 4 * sum(p.features.shape[0] * (widths[wide] - w) for p, w in zip(parsed, widths))
    if zeros <= svmlight.WIDTH_LIMIT_BYTES:
        return
    rest = max(w for i, w in enumerate(widths) if i != wide)
    document = int(np.flatnonzero(parsed[wide].features[:, rest:].any(axis=1))[0])
    raise ValueError(
        f"{files[wide]}, line {svmlight.document_line(files[wide], document)}: feature index {widths[wide]} is above "
        f"every index of the fold's other splits (largest {rest}); widening them adds {zeros / 2**20:,.0f} MiB of zeros "
        f"(more than jaxrank.data.svmlight.WIDTH_LIMIT_BYTES = {svmlight.WIDTH_LIMIT_BYTES / 2**20:,.0f} MiB). Fix the "
        f"line, or pass num_features={widths[wide]} if the index is real."
    )


def load_queries(
    path,
    *,
    layout: str = "ragged",
    normalize: bool = False,
    num_features: Optional[int] = None,
    list_size: Optional[int] = None,
    cache: bool = True,
):
    """One SVMlight/LETOR/LightGBM file (a path or a name under ``JAXRANK_DATA``).

    Args:
      path: the file, or its path under ``JAXRANK_DATA``.
      layout: ``"ragged"`` (``RaggedQueries``: flat documents, memory proportional to the data) or
        ``"dense"`` (``QueryBatch`` padded to ``list_size``; small data only).
      normalize: per-query min-max normalisation of every feature (LETOR's QueryLevelNorm). Raw
        MSLR and Yahoo features span many orders of magnitude; the linear learners need it.
      num_features: ``D`` (default the largest feature index).
      list_size: ``L`` of the dense layout (default the power of two above the longest query).
    """
    _check_layout(layout)
    queries = ragged_queries(load_svmlight(locations.resolve(path), num_features=num_features, cache=cache),
                             normalize=normalize, in_place=True)
    return queries if layout == "ragged" else pad_queries(queries, list_size)


def load_fold(
    root,
    fold: int = 1,
    *,
    layout: str = "ragged",
    normalize: bool = False,
    list_size: Optional[int] = None,
    num_features: Optional[int] = None,
    cache: bool = True,
) -> tuple[RaggedQueries, RaggedQueries, RaggedQueries] | tuple[QueryBatch, QueryBatch, QueryBatch]:
    """Loads ``(train, vali, test)`` of one LETOR fold with one feature count ``D``.

    Args:
      root: the dataset folder or its name under ``JAXRANK_DATA`` (e.g. ``"MQ2008"``).
      fold: ``K`` in ``FoldK``.
      layout: ``"ragged"`` or ``"dense"`` (see ``load_queries``).
      normalize: per-query min-max normalisation (the QueryLevelNorm sets already are).
      list_size: ``L`` of the dense layout, shared by the three splits; default the bucket of the
        longest query in any of them, so one compiled program serves all three.
      num_features: ``D`` of every split (default the largest feature index of the three; an index
        that would widen the others by more than ``svmlight.WIDTH_LIMIT_BYTES`` of zeros is refused).

    Returns:
      ``(train, vali, test)``: ``RaggedQueries`` (features ``[N, D]``) or ``QueryBatch`` (``[Q, L, D]``).
    """
    _check_layout(layout)
    folder = locations.resolve(root) / f"Fold{fold}"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist: expected the LETOR layout <root>/Fold{fold}/train.txt.")
    files = [split_file(folder, s) for s in SPLITS]
    parsed = [load_svmlight(f, num_features=num_features, cache=cache) for f in files]
    if num_features is None:
        _check_fold_width(files, parsed)
    width = max(p.features.shape[1] for p in parsed)
    splits = [ragged_queries(_widen(p, width), normalize=normalize, in_place=True) for p in parsed]
    if layout == "ragged":
        return tuple(splits)
    if list_size is None:
        list_size = bucket_size(int(max(np.max(query_lengths(p.qids)) for p in parsed)))
    return tuple(pad_queries(s, list_size) for s in splits)
