"""Seeded LETOR text files with the published shapes of the collections the papers used.

The full collections are not redistributable, so the scale benchmarks run on generated files with
their shapes: query and document counts, the long-tailed documents-per-query law (one query at the
published maximum), feature counts and sparsity, label mix, and (TD2004) the number of preference
pairs. Files go to ``--out`` (default ``/tmp/jaxrank-scale``), one ``<name>.txt`` per shape with a
``<name>.json`` manifest of what was written; never commit them.

    python benchmarks/datasets.py --name mslr-web10k-fold-train [--out DIR] [--seed 0] [--scale 1.0]
    python benchmarks/datasets.py --all
    python benchmarks/datasets.py --click-log wscd --sessions 1000000   # clicks-wscd-1000000.txt (+ .json)

Shapes (see the papers' tables and the collections' published statistics):

* ``mslr-web30k``: 31,531 queries, 3,771,125 documents, 136 dense features, up to 1,251 per query,
  labels 0-4 (RCS paper, Table 1).
* ``mslr-web10k-fold-{train,vali,test}``: one WEB10K fold's splits, 60/20/20% of its 10,000 queries
  and 1,200,192 documents, the longest query (908 documents) in the training split.
* ``yahoo-set1``: 19,944 queries, 473,134 documents, feature ids up to 700 of which 519 are used,
  sparse values in [0, 1], up to 140 per query (RCS paper, Table 1).
* ``td2004``: 75 queries, 74,146 documents (988.6 per query), 64 features, binary labels with 14.9
  relevant per query and 1,079,810 preference pairs (sparse RankSVM paper, Table III).

Click logs (``--click-log wscd|pyclick|tsv --sessions N``): the same ``N`` seeded result pages in each
format ``jaxrank.data.read_click_log`` reads, shaped as ``CLICK_LOG_SHAPE`` says.

Values: MSLR-like columns mix small integer counts, large counts, real scores with six decimals and
negative language-model scores, each with its own share of zeros; a latent relevance per document
drives the labels and a third of the features, so rankers learn something.
"""

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class Shape:
    queries: int
    documents: int
    features: int  # largest feature id
    max_list: int
    labels: tuple[float, ...]  # share of each grade 0..G-1
    used_features: Optional[int] = None  # sparse: ids used (of 1..features), each line lists only non-zeros
    pairs: Optional[int] = None  # binary labels: target number of preference pairs
    min_list: int = 1


SHAPES = {
    "mslr-web30k": Shape(31_531, 3_771_125, 136, 1_251, (0.52, 0.32, 0.13, 0.02, 0.01)),
    "mslr-web10k-fold-train": Shape(6_000, 720_115, 136, 908, (0.52, 0.32, 0.13, 0.02, 0.01)),
    "mslr-web10k-fold-vali": Shape(2_000, 240_038, 136, 800, (0.52, 0.32, 0.13, 0.02, 0.01)),
    "mslr-web10k-fold-test": Shape(2_000, 240_039, 136, 850, (0.52, 0.32, 0.13, 0.02, 0.01)),
    "yahoo-set1": Shape(19_944, 473_134, 700, 140, (0.26, 0.36, 0.28, 0.08, 0.02), used_features=519),
    "td2004": Shape(75, 74_146, 64, 1_000, (0.985, 0.015), pairs=1_079_810, min_list=700),
}


def list_lengths(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Documents per query ``[Q]``: lognormal around the mean, clipped to [min, max], one query at
    the maximum, adjusted to sum to the document count exactly."""
    mean = shape.documents / shape.queries
    if shape.pairs is not None:  # LETOR 3.0 Gov: about 1,000 documents per query, a few shorter lists
        lengths = np.full(shape.queries, shape.max_list)
        short = rng.choice(shape.queries, size=max(1, shape.queries // 8), replace=False)
        lengths[short] = rng.integers(shape.min_list, shape.max_list, short.size)
    else:
        lengths = np.exp(rng.normal(np.log(mean) - 0.18, 0.6, shape.queries))
    lengths = np.clip(np.round(lengths * shape.documents / lengths.sum()), shape.min_list, shape.max_list).astype(np.int64)
    lengths[int(np.argmax(lengths))] = shape.max_list
    while (gap := shape.documents - int(lengths.sum())) != 0:  # fix the total one document at a time
        room = (lengths < shape.max_list) if gap > 0 else (lengths > shape.min_list)
        room[int(np.argmax(lengths))] = False
        pick = rng.choice(np.flatnonzero(room), size=min(abs(gap), int(room.sum())), replace=False)
        lengths[pick] += np.sign(gap)
    return lengths


def binary_relevant_counts(rng: np.random.Generator, lengths: np.ndarray, pairs: int, mean_share: float) -> np.ndarray:
    """Relevant documents per query ``[Q]`` whose pair count ``Σ r (n − r)`` is as close to ``pairs`` as
    single-document moves get it (moving ``r`` by one changes a query's pairs by about ``n``)."""
    rel = np.maximum(1, rng.poisson(mean_share * lengths)).astype(np.int64)
    for _ in range(200_000):
        gap = pairs - int(np.sum(rel * (lengths - rel)))
        q = int(rng.integers(len(lengths)))
        up, down = lengths[q] - 2 * rel[q] - 1, -(lengths[q] - 2 * rel[q] + 1)
        if gap > 0 and abs(gap - up) < abs(gap) and 2 * (rel[q] + 1) <= lengths[q]:
            rel[q] += 1
        elif gap < 0 and abs(gap - down) < abs(gap) and rel[q] > 1:
            rel[q] -= 1
    return rel


@dataclasses.dataclass(frozen=True)
class Columns:
    kind: np.ndarray  # [D] 0 small count, 1 large count, 2 real >= 0, 3 negative real, 4 real in [0, 1]
    zero: np.ndarray  # [D] share of zeros
    scale: np.ndarray  # [D]
    weight: np.ndarray  # [D] dependence on the latent relevance (0: noise)
    present: np.ndarray  # [D] bool, the id is used


def columns(rng: np.random.Generator, shape: Shape) -> Columns:
    d = shape.features
    if shape.used_features is not None:
        kind = np.full(d, 4)
        present = np.zeros(d, bool)
        present[rng.choice(d, shape.used_features, replace=False)] = True
        zero = rng.uniform(0.1, 0.95, d)
    else:
        kind = rng.choice(5, d, p=[0.2, 0.15, 0.35, 0.15, 0.15])
        present = np.ones(d, bool)
        zero = rng.choice([0.0, 0.05, 0.1, 0.3, 0.6, 0.9], d)
    scale = np.where(kind == 0, rng.integers(2, 20, d), np.where(kind == 1, 10 ** rng.uniform(2, 5, d),
                     np.where(kind == 2, 10 ** rng.uniform(0, 3, d), np.where(kind == 3, 10 ** rng.uniform(1, 3, d), 1.0))))
    weight = np.where(rng.random(d) < 1 / 3, rng.uniform(0.3, 1.0, d), 0.0)
    return Columns(kind, zero, scale.astype(np.float64), weight, present)


def _values(rng, cols: Columns, latent: np.ndarray) -> np.ndarray:
    """``[B, D]`` float64 feature values of documents with latent relevance ``[B]`` (in about [-2, 2])."""
    b, d = latent.shape[0], cols.kind.shape[0]
    u = rng.random((b, d))
    signal = 1.0 / (1.0 + np.exp(-(latent[:, None] * cols.weight * 2.0 + rng.normal(0.0, 1.0, (b, d)))))
    base = np.where(cols.weight > 0, signal, u)  # in (0, 1)
    x = base * cols.scale
    x = np.where(cols.kind <= 1, np.floor(x), np.where(cols.kind == 3, -x, np.round(x, 6)))
    x = np.where(cols.kind == 4, np.round(base, 6), x)
    x[rng.random((b, d)) < cols.zero] = 0.0
    x[:, ~cols.present] = 0.0
    return x


def _dense_format(cols: Columns) -> str:
    return " ".join(f"{j + 1}:%{'d' if cols.kind[j] <= 1 else '.8g'}" for j in range(cols.kind.shape[0]))


def write(name: str, out: Path, *, seed: int = 0, scale: float = 1.0, log=print) -> Path:
    """Writes ``out/<name>.txt`` (and its manifest) unless an identical one exists; returns the path."""
    shape = SHAPES[name]
    if scale != 1.0:
        shape = dataclasses.replace(shape, queries=max(2, round(shape.queries * scale)),
                                    documents=max(2, round(shape.documents * scale)),
                                    pairs=None if shape.pairs is None else round(shape.pairs * scale))
    out.mkdir(parents=True, exist_ok=True)
    stem = name if scale == 1.0 else f"{name}-x{scale:g}"
    path, manifest_path = out / f"{stem}.txt", out / f"{stem}.json"
    settings = {"name": name, "seed": seed, "scale": scale, "shape": dataclasses.asdict(shape), "version": 2}
    if path.exists() and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("settings") == settings and manifest.get("bytes") == path.stat().st_size:
            return path
    rng = np.random.default_rng([seed, sorted(SHAPES).index(name)])
    lengths = list_lengths(rng, shape)
    cols = columns(rng, shape)
    num_grades = len(shape.labels)
    if shape.pairs is not None:
        relevant = binary_relevant_counts(rng, lengths, shape.pairs, 14.9 / 988.6)
    thresholds = np.quantile(rng.normal(0, 1.2, 200_000), np.cumsum(shape.labels)[:-1])
    dense_fmt = None if shape.used_features is not None else _dense_format(cols)
    start = time.perf_counter()
    label_counts = np.zeros(num_grades, np.int64)
    num_pairs = 0
    tmp = path.with_suffix(".txt.tmp")
    qid0 = int(rng.integers(1, 1000)) * 1000 + 1  # MSLR-style sparse, increasing ids
    with open(tmp, "w") as f:
        block_queries = max(1, 20_000 // max(1, int(lengths.mean())))
        for q0 in range(0, len(lengths), block_queries):
            qs = np.arange(q0, min(q0 + block_queries, len(lengths)))
            n = lengths[qs]
            qid = np.repeat(qid0 + 3 * qs, n)
            offset = np.repeat(rng.normal(0, 0.6, len(qs)), n)
            latent = offset + rng.normal(0, 1.0, n.sum())
            if shape.pairs is not None:  # exactly r_q relevant documents: the top r_q latents of each query
                labels = np.zeros(n.sum(), np.int64)
                starts = np.r_[0, np.cumsum(n)[:-1]]
                for s, m, r in zip(starts, n, relevant[qs]):
                    labels[s + np.argsort(-latent[s:s + m])[:r]] = 1
                num_pairs += int(np.sum(relevant[qs] * (n - relevant[qs])))
            else:
                labels = np.searchsorted(thresholds, latent)
            label_counts += np.bincount(labels, minlength=num_grades)
            x = _values(rng, cols, latent)
            lines = []
            if dense_fmt is not None:
                for lab, q, row in zip(labels.tolist(), qid.tolist(), x.tolist()):
                    lines.append(f"{lab} qid:{q} " + dense_fmt % tuple(row))
            else:
                for lab, q, row in zip(labels.tolist(), qid.tolist(), x):
                    nz = np.flatnonzero(row)
                    lines.append(f"{lab} qid:{q} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in zip(nz.tolist(), row[nz].tolist())))
            f.write("\n".join(lines) + "\n")
            if log is not None and (q0 // block_queries) % 50 == 0:
                log(f"[datasets] {stem}: {q0 + len(qs):,}/{len(lengths):,} queries, {time.perf_counter() - start:.0f} s")
    tmp.replace(path)
    manifest = {
        "settings": settings, "bytes": path.stat().st_size, "queries": int(len(lengths)),
        "documents": int(lengths.sum()), "max_list": int(lengths.max()), "mean_list": float(lengths.mean()),
        "label_counts": label_counts.tolist(), "preference_pairs_binary": num_pairs or None,
        "seconds": round(time.perf_counter() - start, 1),
    }
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    if log is not None:
        log(f"[datasets] wrote {path} ({manifest['bytes'] / 2**20:,.0f} MiB) in {manifest['seconds']} s")
    return path


# ---------------------------------------------------------------------------------------------
# Click logs


CLICK_LOG_FORMATS = ("wscd", "pyclick", "tsv")
# The WSCD 2012 relevance-prediction log: 146,278,823 result pages (CLAX's Yandex config) showing
# 30,717,251 distinct queries and 117,093,258 distinct URLs, 10 URLs a page. Queries are drawn from a
# fixed universe with a Zipf-like popularity (query ``floor(U * u**a)``, density ~ x^(1/a - 1)), so
# the distinct queries grow sublinearly with the pages (Heaps' law, about N^0.8 here); the universe
# and exponent are this generator's choices, set to show about 30.7M distinct queries in 146M pages.
# A query's 15 candidate URLs are hashed into the 117,093,258 URLs (so URLs are shared between
# queries), 10 of them shown per page; about 1.3 clicks a page decaying with the rank.
CLICK_LOG_SHAPE = {"positions": 10, "pool": 15, "query_universe": 70_000_000, "popularity_exponent": 10.0,
                   "url_universe": 117_093_258, "pages_per_session_id": 3.3, "click_rate": 0.37,
                   "click_decay": 0.8}
_URL_MIX = 2_654_435_761  # multiplier of the query-candidate -> URL hash (coprime to the URL universe)
_BLOCK = 100_000


def _digits(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[n]`` non-negative ints as a ``[n, w]`` byte matrix of decimal digits and the mask of the
    digits written (no leading zeros)."""
    x = np.asarray(x, np.int64)
    width = len(str(int(x.max()))) if x.size else 1
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((x[:, None] // powers) % 10 + 48).astype(np.uint8), (x[:, None] >= powers) | (powers == 1)


def _literal(n: int, text: bytes, where=None) -> tuple[np.ndarray, np.ndarray]:
    mat = np.broadcast_to(np.frombuffer(text, np.uint8), (n, len(text)))
    keep = np.ones((n, len(text)), bool) if where is None else np.repeat(np.asarray(where)[:, None], len(text), 1)
    return mat, keep


def _rows(*parts) -> tuple[np.ndarray, np.ndarray]:
    return np.hstack([p[0] for p in parts]), np.hstack([p[1] for p in parts])


def _only(part, where) -> tuple[np.ndarray, np.ndarray]:
    return part[0], part[1] & np.asarray(where)[:, None]


def click_sessions(rng: np.random.Generator, first: int, count: int) -> dict:
    """Pages ``first .. first + count - 1`` of a log of ``CLICK_LOG_SHAPE``."""
    shape = CLICK_LOG_SHAPE
    k, pool = shape["positions"], shape["pool"]
    universe = shape["query_universe"]
    query = np.minimum((universe * rng.random(count) ** shape["popularity_exponent"]).astype(np.int64), universe - 1)
    rank = np.argsort(rng.random((count, pool)), axis=1)[:, :k]  # 10 of the query's 15 URLs
    clicks = rng.random((count, k)) < shape["click_rate"] / (np.arange(k) + 1.0) ** shape["click_decay"]
    index = np.arange(first, first + count)
    candidate = query[:, None] * pool + rank
    return {"query": query, "rank": rank, "pair": candidate, "url": candidate * _URL_MIX % shape["url_universe"],
            "clicks": clicks, "session_id": (index / shape["pages_per_session_id"]).astype(np.int64),
            "time": rng.integers(0, 2000, count), "region": rng.integers(0, 256, count)}


def _wscd_block(s: dict) -> bytes:
    n, k = s["query"].shape[0], s["url"].shape[1]
    head = [_digits(s["session_id"]), _literal(n, b"\t"), _digits(s["time"]), _literal(n, b"\tQ\t"),
            _digits(s["query"]), _literal(n, b"\t"), _digits(s["region"])]
    urls = []
    for r in range(k):
        urls += [_literal(n, b"\t"), _digits(s["url"][:, r])]
    q_mat, q_keep = _rows(*head, *urls, _literal(n, b"\n"))
    row, col = np.nonzero(s["clicks"])
    c_mat, c_keep = _rows(_digits(s["session_id"][row]), _literal(row.size, b"\t"), _digits(s["time"][row] + 1 + col),
                          _literal(row.size, b"\tC\t"), _digits(s["url"][row, col]), _literal(row.size, b"\n"))
    width = max(q_mat.shape[1], c_mat.shape[1])
    mat = np.zeros((n + row.size, width), np.uint8)
    keep = np.zeros((n + row.size, width), bool)
    mat[:n, :q_mat.shape[1]], keep[:n, :q_mat.shape[1]] = q_mat, q_keep
    mat[n:, :c_mat.shape[1]], keep[n:, :c_mat.shape[1]] = c_mat, c_keep
    order = np.argsort(np.concatenate([np.arange(n) * (k + 1), row * (k + 1) + 1 + col]), kind="stable")
    return mat[order][keep[order]].tobytes()


def _pyclick_block(s: dict) -> bytes:
    n, k = s["query"].shape[0], s["url"].shape[1]
    clicks = s["clicks"]
    first_click = np.where(clicks.any(1), clicks.argmax(1), k)
    parts = [_digits(s["query"]), _literal(n, b"_"), _digits(s["region"] % 3), _literal(n, b"\t")]
    for r in range(k):
        parts += [_digits(s["url"][:, r]), _literal(n, b"," if r < k - 1 else b" : ")]
    for r in range(k):
        parts += [_literal(n, b" , ", clicks[:, r] & (r > first_click)), _only(_digits(s["url"][:, r]), clicks[:, r])]
    mat, keep = _rows(*parts, _literal(n, b"\n"))
    return mat[keep].tobytes()


def _tsv_block(s: dict) -> bytes:
    n, k = s["query"].shape[0], s["url"].shape[1]
    pair = s["pair"]
    parts = [_digits(s["query"]), _literal(n, b"\t")]
    for r in range(k):
        parts += [_digits(s["url"][:, r]), _literal(n, b"," if r < k - 1 else b"\t")]
    for r in range(k):
        parts += [_digits(pair[:, r]), _literal(n, b"," if r < k - 1 else b"\t")]
    flags = (s["clicks"].astype(np.uint8) + 48, np.ones((n, k), bool))
    mat, keep = _rows(*parts, flags, _literal(n, b"\n"))
    return mat[keep].tobytes()


def write_click_log(fmt: str, num_sessions: int, out: Path, *, seed: int = 0, log=print) -> Path:
    """Writes ``out/clicks-<fmt>-<num_sessions>.txt``: ``num_sessions`` seeded pages of
    ``CLICK_LOG_SHAPE`` in a ``jaxrank.data.read_click_log`` format (the same pages for every format),
    unless an identical one exists."""
    if fmt not in CLICK_LOG_FORMATS:
        raise ValueError(f"fmt must be one of {CLICK_LOG_FORMATS}; got {fmt!r}.")
    out.mkdir(parents=True, exist_ok=True)
    path, manifest_path = out / f"clicks-{fmt}-{num_sessions}.txt", out / f"clicks-{fmt}-{num_sessions}.json"
    settings = {"format": fmt, "sessions": num_sessions, "seed": seed, "shape": CLICK_LOG_SHAPE, "version": 2}
    if path.exists() and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("settings") == settings and manifest.get("bytes") == path.stat().st_size:
            return path
    start = time.perf_counter()
    render = {"wscd": _wscd_block, "pyclick": _pyclick_block, "tsv": _tsv_block}[fmt]
    tmp = path.with_suffix(".txt.tmp")
    num_queries = CLICK_LOG_SHAPE["query_universe"]
    with open(tmp, "wb") as f:
        if fmt == "tsv":
            f.write(f"# jaxrank sessions: num_queries={num_queries} num_pairs={num_queries * CLICK_LOG_SHAPE['pool']} "
                    f"num_positions={CLICK_LOG_SHAPE['positions']}\n".encode())
        for b, first in enumerate(range(0, num_sessions, _BLOCK)):
            rng = np.random.default_rng([seed, b])
            f.write(render(click_sessions(rng, first, min(_BLOCK, num_sessions - first))))
            if log is not None and b % 100 == 99:
                log(f"[datasets] {path.name}: {first + _BLOCK:,}/{num_sessions:,} pages, "
                    f"{time.perf_counter() - start:.0f} s")
    tmp.replace(path)
    manifest = {"settings": settings, "bytes": path.stat().st_size, "seconds": round(time.perf_counter() - start, 1)}
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    if log is not None:
        log(f"[datasets] wrote {path} ({manifest['bytes'] / 2**20:,.0f} MiB) in {manifest['seconds']} s")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", choices=sorted(SHAPES), action="append", help="shape(s) to write")
    parser.add_argument("--all", action="store_true", help="write every shape")
    parser.add_argument("--out", type=Path, default=Path("/tmp/jaxrank-scale"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply queries and documents (quick runs)")
    parser.add_argument("--click-log", choices=CLICK_LOG_FORMATS, action="append", help="click-log format(s) to write")
    parser.add_argument("--sessions", type=int, default=1_000_000, help="pages of each --click-log")
    args = parser.parse_args()
    for fmt in args.click_log or []:
        write_click_log(fmt, args.sessions, args.out, seed=args.seed)
    names = sorted(SHAPES) if args.all else (args.name or [])
    if not names and not args.click_log:
        parser.error("give --name NAME (repeatable), --all or --click-log FORMAT")
    for name in names:
        write(name, args.out, seed=args.seed, scale=args.scale)


if __name__ == "__main__":
    main()
