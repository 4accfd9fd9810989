"""SVMlight / LETOR text files to dense per-document float32 numpy arrays (no jax here).

Two layouts are read:
  * LETOR: ``label qid:Q i:v i:v ... #comment`` (``#docid = X`` comment kept optionally);
  * LightGBM: ``label i:v ...`` without ``qid``, plus a ``<name>.query`` file of group sizes.
``.gz`` files are decompressed transparently. Feature indices are 1-based; absent features are 0.

The file is streamed in chunks of whole lines (``CHUNK_BYTES`` of text), and each chunk's rows are
written straight into one growing float32 ``[N, D]`` array, so the peak memory is that array plus
one chunk's scratch (a few hundred MB), whatever the file's size; a sparse file (Yahoo! LTR: ids up
to 700) is densified once, row by row. A chunk goes through a vectorised path (token structure
checked on the character array, every number read by one ``np.fromstring``); when that path sees
anything odd, the chunk is read line by line in Python, which either parses it or raises a
``ValueError`` naming the file, the line and the problem.

Labels are relevance grades, small non-negative integers; a label ``>= 128`` is rejected, naming its
line: its gain ``2^l - 1`` overflows float32 in every metric, and such values are scores to be
rescaled to grades, not grades.

Width ``D``. Without ``num_features``, ``D`` is the largest feature index, within two bounds that
hold whatever the file's size, each a ``ValueError`` naming the file, the line and the
``num_features=`` way out:
  * an index far above all others (more than twice the next one plus 64) that few documents use
    (under 1% of them, or a single one) is taken for a typo: a stray ``1000000000:1`` must not make
    every document (and every split of a fold) a billion features wide;
  * an index whose new columns would add more than ``WIDTH_LIMIT_BYTES`` of zeros to the dense
    layout (one line of 100,000 features in a file of 46-feature documents) is refused.
Indices from ``2^31`` on are refused in any case. Pass ``num_features`` to keep such an index.
"""

import gzip
import os
import re
import warnings
import zlib
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

CHUNK_BYTES = 1 << 24  # text per chunk: bounds the parser's scratch memory
_STRAY_SHARE = 0.01  # an index far above the rest is a typo when fewer documents than this share use it
_LABEL_LIMIT = 128  # labels from here on are rejected: their gain 2^l - 1 is inf in float32
_INDEX_LIMIT = 2**31  # no dense row can be this wide (8 GiB a document)
WIDTH_LIMIT_BYTES = 1 << 28  # zeros one widening may add to the dense layout without num_features

_DOCID = re.compile(r"docid\s*=\s*(\S+)")
_INTEGER = re.compile(r"[+-]?\d+")
_COMMENT = re.compile(rb"#[^\n]*")
_BLANKS = bytes.maketrans(b"\t\r\x0b\x0c", b"    ")  # str.split() whitespace inside a line
_COLONS = bytes.maketrans(b":", b" ")
_BLANK = np.zeros(256, bool)  # after _BLANKS, the characters that separate tokens
_BLANK[[10, 32]] = True
_IN_TOKEN = ~_BLANK  # what may sit right before or after a colon
_IN_TOKEN[[0, 58]] = False
_DIGIT = np.zeros(256, bool)
_DIGIT[48:58] = True


class SVMLightData(NamedTuple):
    """One file's documents in file order; ``N`` documents, ``D`` features."""

    features: np.ndarray  # [N, D] f32, dense
    labels: np.ndarray  # [N] f32 graded relevance
    qids: np.ndarray  # [N] i64, contiguous runs (one run per query); ids >= 2^31 keep their value
    docids: Optional[np.ndarray]  # [N] str, the comment's docid (whole comment if none), or None


def _error(path, lineno: int, problem: str) -> ValueError:
    return ValueError(f"{path}, line {lineno}: {problem}")


def _default_query_file(path: Path) -> Path:
    stem = path.with_suffix("") if path.suffix == ".gz" else path
    return stem.with_name(stem.name + ".query")


class _Rows(NamedTuple):
    """One chunk's documents: ``n`` rows, ``nnz`` feature tokens."""

    labels: np.ndarray  # [n] f64
    qids: Optional[np.ndarray]  # [n] i64, None for files without qid
    linenos: np.ndarray  # [n] i64, 1-based line of each document
    rows: np.ndarray  # [nnz] i64, document of each token (0..n-1)
    index: np.ndarray  # [nnz] i64, 1-based feature index
    value: np.ndarray  # [nnz] f64
    docids: Optional[list]


def _chunks(path: Path):
    """``(first line number, bytes, share of the source read)`` of consecutive whole-line chunks."""
    size = max(path.stat().st_size, 1)
    try:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as f:
            source = f.fileobj if path.suffix == ".gz" else f  # compressed position of a .gz
            tail, line = b"", 1
            while True:
                block = f.read(CHUNK_BYTES)
                if not block:
                    break
                block = tail + block
                cut = block.rfind(b"\n") + 1
                if cut == 0:
                    tail = block
                    continue
                chunk, tail = block[:cut], block[cut:]
                yield line, chunk, min(source.tell() / size, 1.0)
                line += chunk.count(b"\n")
            if tail:
                yield line, tail, 1.0
    except (OSError, EOFError, zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot be read ({e}).") from None


def _fast_rows(chunk: bytes, line0: int, has_qid: bool, keep_docids: bool) -> Optional[_Rows]:
    """The vectorised reading of one chunk, or None when anything is not plainly well formed."""
    body = _COMMENT.sub(b"", chunk) if b"#" in chunk else chunk
    if not body.isascii():
        return None
    body = body.translate(_BLANKS)
    if not body.endswith(b"\n"):
        body += b"\n"
    size = len(body)
    c = np.frombuffer(body + b"\0" * 20, np.uint8)  # NULs: out-of-line sentinels for look-ahead
    blank = _BLANK[c]
    start = ~blank
    start[1:] &= blank[:-1]
    start[size:] = False
    starts = np.flatnonzero(start)  # first character of each token
    line_of = (c[:size] == 10).astype(np.int32)
    line_of = np.cumsum(line_of, out=line_of)  # 0-based line of each character (a newline ends its line)
    num_lines = int(line_of[-1])
    per_line = np.bincount(line_of[starts], minlength=num_lines)
    data_lines = np.flatnonzero(per_line)
    if data_lines.size == 0:
        return _empty_rows(has_qid, keep_docids)
    colons = np.flatnonzero(c[:size] == 58)
    if colons.size and (colons[0] == 0 or not _IN_TOKEN[c[colons - 1]].all() or not _IN_TOKEN[c[colons + 1]].all()):
        return None  # a colon needs a token character on both sides
    colon_line = line_of[colons]
    colons_per_line = np.bincount(colon_line, minlength=num_lines)
    if np.any(colons_per_line[data_lines] != per_line[data_lines] - 1):
        return None  # every token but the label holds one colon ...
    first_token = np.concatenate([[0], np.cumsum(per_line)[:-1]])  # of each line
    first_colon = np.concatenate([[0], np.cumsum(colons_per_line)[:-1]])
    token = first_token[colon_line] + 1 + np.arange(colons.size) - first_colon[colon_line]
    bounds = np.append(starts, size)
    if np.any(bounds[token] >= colons) or np.any(bounds[token + 1] <= colons):
        return None  # ... the j-th colon of a line inside its (j+1)-th token
    ntok = per_line[data_lines]
    first = first_token[data_lines]  # token number of each line's label
    is_feature = np.ones(colons.size, bool)
    if has_qid:
        if np.any(ntok < 2):
            return None
        s = starts[first + 1]
        if not (np.all(c[s] == 113) & np.all(c[s + 1] == 105) & np.all(c[s + 2] == 100) & np.all(c[s + 3] == 58)):
            return None
        is_feature[first_colon[data_lines]] = False
        if not _digit_run_ends_token(c, s + 4, 15):
            return None  # qid:<at most 15 digits> (exact as a float64)
    feature_starts = starts[token[is_feature]]
    length = colons[is_feature] - feature_starts
    if length.size and (length.max() > 15 or not all(_DIGIT[c[feature_starts[length > k] + k]].all()
                                                      for k in range(int(length.max())))):
        return None  # an index that is not plain digits (or too long to read exactly)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns (not raises) when text stops parsing early
        try:
            numbers = np.fromstring(body.replace(b"qid:", b"    ").translate(_COLONS), sep=" ")
        except (DeprecationWarning, ValueError):
            return None
    nfeat = ntok - 1 - int(has_qid)
    width = 1 + int(has_qid) + 2 * nfeat
    if numbers.size != width.sum():
        return None
    head = np.concatenate([[0], np.cumsum(width)[:-1]])
    labels = numbers[head]
    keep = np.ones(numbers.size, bool)
    keep[head] = False
    qids = None
    if has_qid:
        keep[head + 1] = False
        qids = numbers[head + 1].astype(np.int64)
    pairs = numbers[keep].reshape(-1, 2)
    index, value = pairs[:, 0].astype(np.int64), pairs[:, 1]
    rows = np.repeat(np.arange(data_lines.size), nfeat)
    if not (np.all(np.isfinite(labels)) and np.all(labels >= 0) and np.all(np.isfinite(value)) and np.all(index >= 1)
            and np.all(index < _INDEX_LIMIT)):
        return None
    same_row = rows[1:] == rows[:-1]
    if np.any(same_row & (index[1:] <= index[:-1])):  # out of order: check for duplicates
        order = np.lexsort((index, rows))
        if np.any((np.diff(rows[order]) == 0) & (np.diff(index[order]) == 0)):
            return None
    docids = None
    if keep_docids:
        lines = chunk.decode().split("\n")
        docids = [_docid(lines[i].partition("#")[2]) for i in data_lines]
    return _Rows(labels, qids, line0 + data_lines, rows, index, value, docids)


def _digit_run_ends_token(c: np.ndarray, at: np.ndarray, most: int) -> bool:
    """Whether 1 to ``most`` digits start at each of ``at`` and are followed by a blank."""
    alive = np.ones(at.size, bool)
    length = np.zeros(at.size, np.int64)
    for k in range(most + 1):
        alive &= _DIGIT[c[at + k]]
        length += alive
        if not alive.any():
            break
    return bool(np.all(length >= 1) & np.all(length <= most) & np.all(_BLANK[c[at + length]]))


def _empty_rows(has_qid: bool, keep_docids: bool) -> _Rows:
    empty = np.zeros(0, np.int64)
    return _Rows(np.zeros(0), empty if has_qid else None, empty, empty, empty, np.zeros(0), [] if keep_docids else None)


def _docid(comment: str) -> str:
    match = _DOCID.search(comment)
    return match.group(1) if match else comment.strip()


def _check_features_slowly(path, lineno: int, rest: str, num_features: Optional[int]):
    """``(index, value)`` lists of one line's ``index:value`` tokens; raises on the first bad one."""
    seen, indices, values = set(), [], []
    for token in rest.split():
        if token.count(":") != 1:
            raise _error(path, lineno, f"malformed feature token {token!r} (expected index:value)")
        index, value = token.split(":")
        if not _INTEGER.fullmatch(index):
            raise _error(path, lineno, f"feature index {index!r} is not an integer")
        i = int(index)
        if i <= 0:
            raise _error(path, lineno, f"feature index {i} must be >= 1 (indices are 1-based)")
        if i >= _INDEX_LIMIT:
            raise _error(path, lineno, f"feature index {i} is too large for a dense row of features (the limit is "
                                       f"{_INDEX_LIMIT - 1}); fix the line, or map the indices to 1..D")
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
        indices.append(i)
        values.append(v)
    return indices, values


def _label_too_large(path, lineno: int, label: float) -> ValueError:
    return _error(
        path, lineno,
        f"label {label:g} is too large for a relevance grade (grades are small integers: 0-4 for MSLR-WEB "
        f"and Yahoo! LTR, 0-2 for LETOR 4.0); labels >= {_LABEL_LIMIT} look like scores rather than grades, "
        f"and their gain 2^l - 1 overflows float32 to inf (NaN metrics). Rescale them to small integer grades",
    )


def _check_label_range(path, labels: np.ndarray, linenos: np.ndarray) -> None:
    """Raises on the first label ``>= _LABEL_LIMIT`` of a chunk (``labels, linenos [n]``), naming its line."""
    too_large = np.flatnonzero(labels >= _LABEL_LIMIT)
    if too_large.size:
        raise _label_too_large(path, int(linenos[too_large[0]]), float(labels[too_large[0]]))


def _parse_label(path, lineno: int, token: str) -> float:
    try:
        label = float(token)
    except ValueError:
        raise _error(path, lineno, f"bad label {token!r} (expected a number)") from None
    if not np.isfinite(label) or label < 0:
        raise _error(path, lineno, f"bad label {token!r} (expected a finite grade >= 0)")
    if label >= _LABEL_LIMIT:
        raise _label_too_large(path, lineno, label)
    return label


def _parse_qid(path, lineno: int, token: str) -> int:
    try:
        qid = int(token[4:])
    except ValueError:
        raise _error(path, lineno, f"bad qid field {token!r} (expected qid:<integer>)") from None
    if not -(2**63) <= qid < 2**63:
        raise _error(path, lineno, f"qid {qid} does not fit in 64 bits")
    return qid


def _slow_rows(path, chunk: bytes, line0: int, has_qid: Optional[bool], keep_docids: bool,
               num_features: Optional[int]) -> tuple[_Rows, Optional[bool]]:
    """Line-by-line reading of one chunk: its rows and the file's qid mode, or the first error."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: cannot be read as UTF-8 text ({e}).") from None
    labels, qids, linenos, rows, index, value, docids = [], [], [], [], [], [], []
    for lineno, line in enumerate(text.split("\n"), start=line0):  # not splitlines: \f etc. are not line ends
        body, _, comment = line.partition("#")
        parts = body.split(None, 2)
        if not parts:
            continue  # blank or comment-only line
        label = _parse_label(path, lineno, parts[0])
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
            rest = parts[2] if len(parts) > 2 else ""
        else:
            rest = body.split(None, 1)[1] if len(parts) > 1 else ""
        i, v = _check_features_slowly(path, lineno, rest, num_features)
        rows.extend([len(labels)] * len(i))
        index.extend(i)
        value.extend(v)
        labels.append(label)
        linenos.append(lineno)
        if keep_docids:
            docids.append(_docid(comment))
    out = _Rows(np.asarray(labels, np.float64), np.asarray(qids, np.int64) if has_qid else None,
                np.asarray(linenos, np.int64), np.asarray(rows, np.int64), np.asarray(index, np.int64),
                np.asarray(value, np.float64), docids if keep_docids else None)
    return out, has_qid


def _first_line_has_qid(chunk: bytes) -> Optional[bool]:
    """Whether the first data line of ``chunk`` has a qid field (None: no data line in it)."""
    for line in chunk.split(b"\n"):
        parts = line.partition(b"#")[0].split(None, 2)
        if parts:
            return len(parts) > 1 and parts[1].startswith(b"qid:")
    return None


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


class _DenseBuffer:
    """A ``[capacity, width]`` float32 array filled block of rows by block of rows, widened on demand.

    ``np.zeros`` maps its pages lazily, so an over-estimated capacity costs address space, not memory.
    """

    def __init__(self, path, num_features: Optional[int]):
        self.path = path
        self.rows = 0
        self.array = np.zeros((0, 0 if num_features is None else int(num_features)), np.float32)

    @property
    def width(self) -> int:
        return self.array.shape[1]

    def reserve(self, rows: int, width: int, capacity_hint: int) -> None:
        """Room for ``rows`` more rows of ``width`` columns (reallocating, at most once per growth)."""
        need_rows = self.rows + rows
        if width <= self.width and need_rows <= self.array.shape[0]:
            return
        width = max(width, self.width)
        memory = _memory_bytes()
        if need_rows * width * 4 > 0.9 * memory:
            raise ValueError(
                f"{self.path}: a dense [{need_rows}, {width}] float32 feature array needs "
                f"{need_rows * width * 4 / 2**30:.1f} GiB, more than this machine's memory; check the largest "
                f"feature index, or pass a smaller num_features."
            )
        capacity = need_rows if need_rows > self.array.shape[0] else self.array.shape[0]
        capacity = max(capacity, min(capacity_hint, int(0.9 * memory) // (4 * width)))
        grown = np.zeros((capacity, width), np.float32)
        grown[: self.rows, : self.array.shape[1]] = self.array[: self.rows]
        self.array = grown

    def fill(self, first_row: int, rows: np.ndarray, index: np.ndarray, value: np.ndarray) -> None:
        self.array[first_row + rows, index - 1] = value


def _distinct(index: np.ndarray) -> np.ndarray:
    """Sorted distinct values of positive ``index`` (a count table when they are small, else a sort)."""
    small = index <= 1 << 20
    found = np.flatnonzero(np.bincount(index[small]))
    return np.concatenate([found, np.unique(index[~small])])


def _reachable_width(width: int, new_indices: np.ndarray) -> int:
    """The largest of ``new_indices`` reachable from ``width`` by steps to at most ``2x + 64``."""
    for i in _distinct(new_indices):
        if i > 2 * width + 64:
            break
        width = int(i)
    return width


def parse_svmlight(
    path,
    *,
    num_features: Optional[int] = None,
    keep_docids: bool = False,
    query_file=None,
) -> SVMLightData:
    """Parses one SVMlight/LETOR file (optionally ``.gz``) into dense float32 arrays, streaming.

    Args:
      path: the text file.
      num_features: ``D``; default the largest feature index in the file (a stray index far above
        the others is rejected, naming its line; see the module docstring).
      keep_docids: keep each line's ``#docid = X`` (or its whole comment) in ``docids``.
      query_file: LightGBM group-size file for files without ``qid``; default
        ``<path without .gz>.query`` when it exists.

    Returns:
      ``SVMLightData`` with ``features [N, D]`` f32, ``labels [N]`` f32, ``qids [N]`` i64.

    Raises:
      ValueError: naming the file, line and problem, for any malformed input, and for a label
        ``>= 128``: labels are relevance grades (small integers), and ``2^l - 1`` overflows float32
        from ``l = 128`` on, so such labels are taken for scores to be rescaled.
    """
    path = Path(path)
    if num_features is not None and (isinstance(num_features, bool) or not isinstance(num_features, (int, np.integer))
                                     or num_features < 1):
        raise ValueError(f"num_features must be a positive int or None; got {num_features!r}.")
    buffer = _DenseBuffer(path, num_features)
    labels, qids, linenos, docids, far = [], [], [], [], []
    has_qid = None
    for line0, chunk, share in _chunks(path):
        if not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}: cannot be read as UTF-8 text ({e}).") from None
        if has_qid is None:
            has_qid = _first_line_has_qid(chunk)
        rows = _fast_rows(chunk, line0, has_qid, keep_docids) if has_qid is not None else None
        if rows is None or (num_features is not None and rows.index.size and rows.index.max() > num_features):
            rows, has_qid = _slow_rows(path, chunk, line0, has_qid, keep_docids, num_features)
        else:  # the slow path checks each label as it reads it (_parse_label)
            _check_label_range(path, rows.labels, rows.linenos)
        width = buffer.width
        count = rows.labels.size
        if num_features is None and rows.index.size and rows.index.max() > width:
            width = _reachable_width(width, rows.index[rows.index > width])
            beyond = rows.index > width
            if beyond.any():  # set aside: a typo, or (when many documents use it) a real, higher feature
                far.append((buffer.rows + rows.rows[beyond], rows.index[beyond], rows.value[beyond],
                            rows.linenos[rows.rows[beyond]]))
                rows = rows._replace(rows=rows.rows[~beyond], index=rows.index[~beyond], value=rows.value[~beyond])
            if width > buffer.width:
                new = rows.index > buffer.width
                widest = int(np.argmax(rows.index))
                _check_widening(path, int(rows.linenos[rows.rows[widest]]), buffer.width, width,
                                buffer.rows + count, int(new.sum()))
        buffer.reserve(count, width, int(1.1 * (buffer.rows + count) / max(share, 1e-6)) + 1)
        buffer.fill(buffer.rows, rows.rows, rows.index, rows.value)
        buffer.rows += count
        labels.append(rows.labels)
        linenos.append(rows.linenos)
        if has_qid:
            qids.append(rows.qids)
        if keep_docids:
            docids.extend(rows.docids)
    num_docs = buffer.rows
    if num_docs == 0:
        raise ValueError(f"{path}: file is empty (no data lines).")
    linenos = np.concatenate(linenos)
    if far:
        _place_far_indices(path, buffer, far)
    if has_qid:
        qid_array = np.concatenate(qids)
    else:
        query_file = Path(query_file) if query_file is not None else _default_query_file(path)
        if not query_file.exists():
            raise _error(path, int(linenos[0]), f"missing qid field (and no group-size file {query_file.name})")
        qid_array = _read_query_sizes(query_file, num_docs)
    _check_contiguous(path, qid_array, linenos)
    return SVMLightData(
        features=buffer.array[:num_docs],
        labels=np.concatenate(labels).astype(np.float32),
        qids=qid_array,
        docids=np.asarray(docids, dtype=str) if keep_docids else None,
    )


def _check_widening(path, lineno: int, old: int, new: int, num_docs: int, nonzeros: int) -> None:
    """Raises when widening the layout of ``num_docs`` documents from ``old`` to ``new`` columns adds
    more than ``WIDTH_LIMIT_BYTES`` of zeros (``nonzeros``: the values read in the new columns)."""
    zeros = 4 * (num_docs * (new - old) - nonzeros)
    if zeros > WIDTH_LIMIT_BYTES:
        raise _error(
            path, lineno,
            f"feature index {new} would make every document {new} features wide, adding "
            f"{zeros / 2**20:,.0f} MiB of zeros to the dense layout (more than jaxrank.data.svmlight."
            f"WIDTH_LIMIT_BYTES = {WIDTH_LIMIT_BYTES / 2**20:,.0f} MiB); fix the line, or pass "
            f"num_features={new} if the index is real")


def document_line(path, document: int) -> int:
    """The 1-based line of the ``document``-th data line (0-based) of ``path``, for error messages."""
    seen = 0
    for line0, chunk, _ in _chunks(Path(path)):
        for offset, line in enumerate(chunk.split(b"\n")):
            if line.partition(b"#")[0].strip():
                if seen == document:
                    return line0 + offset
                seen += 1
    raise ValueError(f"{path} has {seen} documents; no document {document}.")


def _place_far_indices(path, buffer: _DenseBuffer, far) -> None:
    """Keeps the set-aside high indices when at least 1% of documents, and more than one, use them
    and the columns they add stay within ``WIDTH_LIMIT_BYTES`` of zeros; else names a line."""
    rows, index, value, lines = (np.concatenate(parts) for parts in zip(*far))
    users = np.unique(rows).size
    worst = int(np.argmax(index))
    if users >= _STRAY_SHARE * buffer.rows and (users > 1 or buffer.rows == 1):
        _check_widening(path, int(lines[worst]), buffer.width, int(index.max()), buffer.rows, index.size)
        buffer.reserve(0, int(index.max()), buffer.array.shape[0])
        buffer.fill(0, rows, index, value)
        return
    raise _error(
        path, int(lines[worst]),
        f"feature index {int(index[worst])} is far above the file's other feature indices (largest "
        f"{buffer.width}), and only {users} of {buffer.rows} documents use such indices: it would make every "
        f"document {int(index.max())} features wide. Fix the line, or pass num_features={int(index.max())} "
        "if the index is real",
    )


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
