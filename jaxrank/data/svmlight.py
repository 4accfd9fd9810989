"""SVMlight / LETOR text files to dense per-document numpy arrays (no jax here).

Two layouts are read:
  * LETOR: ``label qid:Q i:v i:v ... #comment`` (``#docid = X`` comment kept optionally);
  * LightGBM: ``label i:v ...`` without ``qid``, plus a ``<name>.query`` file of group sizes.
``.gz`` files are decompressed transparently. Feature indices are 1-based; absent features are 0.

The fast path converts all ``index:value`` tokens of a file in one numpy call; when that path
sees anything odd, a line-by-line pass finds the first bad line and raises a ``ValueError``
naming the file, the line and the problem.
"""

import gzip
import re
import warnings
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

_DOCID = re.compile(r"docid\s*=\s*(\S+)")
_INTEGER = re.compile(r"[+-]?\d+")


class SVMLightData(NamedTuple):
    """One file's documents in file order; ``N`` documents, ``D`` features."""

    features: np.ndarray  # [N, D] f64, dense
    labels: np.ndarray  # [N] f64 graded relevance
    qids: np.ndarray  # [N] i64, contiguous runs (one run per query)
    docids: Optional[np.ndarray]  # [N] str, the comment's docid (whole comment if none), or None


def _error(path, lineno: int, problem: str) -> ValueError:
    return ValueError(f"{path}, line {lineno}: {problem}")


def _read_text(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError, EOFError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot be read as UTF-8 text ({e}).") from None


def _default_query_file(path: Path) -> Path:
    stem = path.with_suffix("") if path.suffix == ".gz" else path
    return stem.with_name(stem.name + ".query")


def _split_tokens(text: str):
    """``(index [M] i64, value [M] f64)`` of all ``index:value`` tokens, or None if any is odd.

    Works on the characters with numpy: a token must be ``digits:value`` with one colon, so the
    integer indices are read straight from their digits and only the values go through
    ``np.fromstring``. Anything else (an empty side of a colon, two colons in a token, a bare
    number, a non-digit index, an unparsable value) returns None for the line-by-line check.
    """
    chars = np.frombuffer(text.encode(), np.uint8)
    space = np.isin(chars, np.frombuffer(b" \t\n\r\v\f", np.uint8))
    colon = np.flatnonzero(chars == ord(":"))
    starts = np.flatnonzero(~space & np.r_[True, space[:-1]])
    if colon.size != starts.size:
        return None
    if colon.size == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    # each token's colon lies inside it and is followed by a value character
    if (np.any(colon <= starts) or np.any(colon[:-1] >= starts[1:]) or colon[-1] == chars.size - 1
            or np.any(space[np.minimum(colon + 1, chars.size - 1)])):
        return None
    span = np.zeros(chars.size + 1, np.int64)
    span[starts] = 1  # starts and colons are distinct positions
    span[colon] = -1
    in_index = np.cumsum(span[:-1]) > 0
    digit = chars[in_index].astype(np.int64) - ord("0")
    if np.any((digit < 0) | (digit > 9)):
        return None
    position = np.flatnonzero(in_index)
    token = np.searchsorted(colon, position)
    power = colon[token] - 1 - position
    if power.max() > 15:
        return None  # more than 16 digits: leave it to the exact Python check
    index = np.bincount(token, weights=digit * 10.0**power, minlength=colon.size).astype(np.int64)
    blanked = np.where(in_index | (chars == ord(":")), ord(" "), chars).astype(np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns (not raises) when text stops parsing early
        try:
            value = np.fromstring(blanked.tobytes().decode(), sep=" ")
        except (DeprecationWarning, ValueError):
            return None
    return (index, value) if value.size == colon.size else None


def _check_features_slowly(path, lineno: int, rest: str, num_features: Optional[int]) -> None:
    """Raises a ValueError describing the first bad ``index:value`` token of one line."""
    seen = set()
    for token in rest.split():
        if token.count(":") != 1:
            raise _error(path, lineno, f"malformed feature token {token!r} (expected index:value)")
        index, value = token.split(":")
        if not _INTEGER.fullmatch(index):
            raise _error(path, lineno, f"feature index {index!r} is not an integer")
        i = int(index)
        if i <= 0:
            raise _error(path, lineno, f"feature index {i} must be >= 1 (indices are 1-based)")
        if num_features is not None and i > num_features:
            raise _error(path, lineno, f"feature index {i} exceeds num_features={num_features}")
        if i in seen:
            raise _error(path, lineno, f"duplicate feature index {i} in one line")
        seen.add(i)
        try:
            v = float(value.replace("_", "x"))  # numpy rejects 1_0, so Python must too
        except ValueError:
            raise _error(path, lineno, f"non-numeric value {value!r} for feature {i}") from None
        if not np.isfinite(v):
            raise _error(path, lineno, f"non-finite value {value!r} for feature {i}")


def _parse_label(path, lineno: int, token: str) -> float:
    try:
        label = float(token)
    except ValueError:
        raise _error(path, lineno, f"bad label {token!r} (expected a number)") from None
    if not np.isfinite(label) or label < 0:
        raise _error(path, lineno, f"bad label {token!r} (expected a finite grade >= 0)")
    return label


def _parse_qid(path, lineno: int, token: str) -> int:
    try:
        return int(token[4:])
    except ValueError:
        raise _error(path, lineno, f"bad qid field {token!r} (expected qid:<integer>)") from None


def _read_query_sizes(query_file: Path, num_docs: int) -> np.ndarray:
    try:
        sizes = np.loadtxt(query_file, dtype=np.int64, ndmin=1)
    except ValueError as e:
        raise ValueError(f"{query_file}: group sizes must be one integer per line ({e}).") from None
    if np.any(sizes <= 0) or sizes.sum() != num_docs:
        raise ValueError(
            f"{query_file}: group sizes must be positive and sum to the {num_docs} documents of the "
            f"features file; they sum to {int(sizes.sum())}."
        )
    return np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)


def _check_contiguous(path, qids: np.ndarray, linenos: np.ndarray) -> None:
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    run_qids = qids[starts]
    _, first = np.unique(run_qids, return_index=True)
    if first.size < run_qids.size:
        repeated = np.setdiff1d(np.arange(run_qids.size), first)[0]
        q = run_qids[repeated]
        first_line = linenos[starts[np.flatnonzero(run_qids == q)[0]]]
        raise _error(
            path,
            int(linenos[starts[repeated]]),
            f"qid {q} appears again after other queries (first seen at line {first_line}); "
            "the documents of a query must be contiguous",
        )


def parse_svmlight(
    path,
    *,
    num_features: Optional[int] = None,
    keep_docids: bool = False,
    query_file=None,
) -> SVMLightData:
    """Parses one SVMlight/LETOR file (optionally ``.gz``) into dense arrays.

    Args:
      path: the text file.
      num_features: ``D``; default the largest feature index in the file.
      keep_docids: keep each line's ``#docid = X`` (or its whole comment) in ``docids``.
      query_file: LightGBM group-size file for files without ``qid``; default
        ``<path without .gz>.query`` when it exists.

    Returns:
      ``SVMLightData`` with ``features [N, D]``, ``labels [N]``, ``qids [N]``.

    Raises:
      ValueError: naming the file, line and problem, for any malformed input.
    """
    path = Path(path)
    text = _read_text(path)
    labels, qids, rests, linenos, comments = [], [], [], [], []
    has_qid = None
    for lineno, line in enumerate(text.split("\n"), start=1):  # not splitlines: \f etc. are not line ends
        body, _, comment = line.partition("#")
        parts = body.split(None, 2)
        if not parts:
            continue  # blank or comment-only line
        labels.append(_parse_label(path, lineno, parts[0]))
        line_has_qid = len(parts) > 1 and parts[1].startswith("qid:")
        if body.count("qid:") > int(line_has_qid):
            problem = "duplicate qid field" if line_has_qid else "qid field must come right after the label"
            raise _error(path, lineno, problem)
        if has_qid is None:
            has_qid = line_has_qid
        elif line_has_qid != has_qid:
            raise _error(path, lineno, "missing qid field" if has_qid else "qid field in a file without qids")
        if line_has_qid:
            qids.append(_parse_qid(path, lineno, parts[1]))
            rests.append(parts[2] if len(parts) > 2 else "")
        else:
            rests.append(body.split(None, 1)[1] if len(parts) > 1 else "")
        linenos.append(lineno)
        if keep_docids:
            match = _DOCID.search(comment)
            comments.append(match.group(1) if match else comment.strip())
    if not labels:
        raise ValueError(f"{path}: file is empty (no data lines).")
    num_docs = len(labels)
    linenos = np.asarray(linenos)

    if has_qid:
        qid_array = np.asarray(qids, dtype=np.int64)
    else:
        query_file = Path(query_file) if query_file is not None else _default_query_file(path)
        if not query_file.exists():
            raise _error(path, int(linenos[0]), f"missing qid field (and no group-size file {query_file.name})")
        qid_array = _read_query_sizes(query_file, num_docs)
    _check_contiguous(path, qid_array, linenos)

    counts = np.fromiter((r.count(":") for r in rests), dtype=np.int64, count=num_docs)
    tokens = _split_tokens(" \n ".join(rests))
    rows = np.repeat(np.arange(num_docs), counts)
    ok = tokens is not None
    if ok:
        index, value = tokens
        ok = bool(np.all(index >= 1) and np.all(np.isfinite(value))
                  and (num_features is None or np.all(index <= num_features)))
    if ok and index.size:
        order = np.lexsort((index, rows))
        ok = not np.any((np.diff(rows[order]) == 0) & (np.diff(index[order]) == 0))
    if not ok:
        for lineno, rest in zip(linenos, rests):
            _check_features_slowly(path, int(lineno), rest, num_features)
        raise ValueError(f"{path}: malformed feature tokens.")  # unreachable unless numpy and Python disagree

    index = index.astype(np.int64)
    dim = num_features if num_features is not None else int(index.max(initial=0))
    features = np.zeros((num_docs, dim), dtype=np.float64)
    features[rows, index - 1] = value
    docids = np.asarray(comments, dtype=str) if keep_docids else None
    return SVMLightData(features, np.asarray(labels, dtype=np.float64), qid_array, docids)
