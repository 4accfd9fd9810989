"""Text logs read as byte chunks and tokenised with NumPy: no Python object per line or token.

A file (plain, gzip, bzip2 or xz, recognised by its first bytes) is read in chunks of complete
records; each chunk is a ``uint8`` array split at separator bytes into tokens (``starts``/``ends``
arrays), and integers are parsed column by column over all tokens at once. Memory per chunk is a few
bytes per byte of text, whatever the file size.
"""

import bz2
import gzip
import lzma
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

BOM = b"\xef\xbb\xbf"
MAX_DIGITS = 18  # every integer of up to 18 digits fits int64 (< 2^63 ~ 9.2e18)
_OPENERS = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


def open_text(path):
    """A binary file object for ``path``, decompressing gzip, bzip2 and xz transparently."""
    with open(path, "rb") as f:
        head = f.read(6)
    for magic, opener in _OPENERS:
        if head.startswith(magic):
            return opener(path, "rb")
    return open(path, "rb")


def plain_size(path) -> Optional[int]:
    """The size in bytes of ``path`` when it is not compressed (its text's size), else ``None``."""
    with open(path, "rb") as f:
        head = f.read(6)
    return None if any(head.startswith(magic) for magic, _ in _OPENERS) else Path(path).stat().st_size


def read_head(path, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of ``path`` (decompressed), for telling its format."""
    try:
        with open_text(path) as f:
            return f.read(size)
    except (EOFError, OSError, lzma.LZMAError) as e:
        raise ValueError(f"{path}: cannot read the compressed file ({e}); it is corrupt or cut short: fetch it "
                         "again.") from None


def read_chunks(path, *, chunk_bytes: int, ends: bytes = b"\n") -> Iterator[tuple[bytes, int]]:
    """Yields ``(chunk, first_line)``: the file's bytes cut after the last record end (a byte of
    ``ends``) of each read, and the 1-based line number its first byte is on.

    Raises:
      ValueError: naming the file, for an empty file, a UTF-8 byte-order mark, a last record without
        its end (a file cut mid-line) or a corrupt or truncated compressed file.
    """
    path = Path(path)
    line, rest, first, seen = 1, b"", True, False
    pattern = bytes(ends)
    try:
        with open_text(path) as f:
            while True:
                block = f.read(chunk_bytes)
                if first:
                    if block.startswith(BOM):
                        raise ValueError(f"{path}:1: the file starts with a UTF-8 byte-order mark; the log is plain "
                                         "ASCII text: remove the first 3 bytes (sed -i '1s/^\\xEF\\xBB\\xBF//').")
                    first = False
                if not block:
                    break
                block = rest + block
                cut = max(block.rfind(bytes([e])) for e in pattern)
                if cut < 0:
                    rest = block
                    continue
                chunk, rest = block[:cut + 1], block[cut + 1:]
                if b"\r" in chunk:
                    chunk = chunk.replace(b"\r\n", b"\n")
                seen = seen or bool(chunk.strip())
                yield chunk, line
                line += chunk.count(b"\n")
    except (EOFError, OSError, lzma.LZMAError) as e:
        raise ValueError(f"{path}: cannot read the compressed file ({e}); it is corrupt or cut short: fetch it "
                         "again.") from None
    if rest.strip():
        raise ValueError(f"{path}:{line}: the last line ends without a record end ({'/'.join(map(repr, map(chr, ends)))}); "
                         "the file is cut mid-line: complete or delete that line.")
    if not seen:
        raise ValueError(f"{path}: the file is empty (no sessions).")


def split(b: np.ndarray, separators: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of the tokens of ``b`` (``[N] u8`` ending with a separator) between bytes of
    ``separators``; ``b[ends]`` is each token's terminating separator."""
    table = np.zeros(256, bool)
    table[list(separators)] = True
    ends = np.flatnonzero(table[b])
    starts = np.empty_like(ends)
    if ends.size:
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    return starts, ends


def parse_uints(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values [T] i64, bad [T] bool)``: each token as a non-negative decimal integer; ``bad`` where
    it is empty, holds a byte other than ``0-9`` (``-``, ``_``, ``+``, a space) or has more than
    ``MAX_DIGITS`` digits. Tokens are parsed in groups of one length, one ``[n, length]`` digit
    matrix each, so the work is about one operation per byte."""
    lens = ends - starts
    values = np.zeros(lens.shape, np.int64)
    bad = (lens == 0) | (lens > MAX_DIGITS)
    counts = np.bincount(np.minimum(lens, MAX_DIGITS + 1), minlength=MAX_DIGITS + 2)
    for width in np.flatnonzero(counts[1:MAX_DIGITS + 1]) + 1:
        group = np.flatnonzero(lens == width)
        # rows of a sliding window are the tokens' bytes: no [n, width] index matrix (a token and its
        # separator lie inside b, so every start is a valid window)
        digits = np.lib.stride_tricks.sliding_window_view(b, width)[starts[group]] - np.uint8(48)  # wraps: > 9
        bad[group] = (digits > 9).any(1)
        value = digits[:, 0].astype(np.int32 if width <= 9 else np.int64)  # Horner: 10^9 - 1 fits int32
        for column in range(1, width):
            value *= 10
            value += digits[:, column]
        values[group] = value
    return values, bad


def strings(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The tokens as a ``[T]`` fixed-width bytes array (``S<longest>``)."""
    lens = ends - starts
    width = max(int(lens.max(initial=0)), 1)
    cols = np.arange(width)
    matrix = np.where(cols < lens[:, None], b[np.minimum(starts[:, None] + cols, b.size - 1)], 0).astype(np.uint8)
    return np.ascontiguousarray(matrix).view(f"S{width}").reshape(-1)


def token_keys(b: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Keys that are equal exactly when the tokens are: ``int64`` when every token is a canonical
    decimal (digits, no leading zero, at most ``MAX_DIGITS``), else the tokens as bytes."""
    values, bad = parse_uints(b, starts, ends)
    canonical = ~bad & ((ends - starts == 1) | (b[np.minimum(starts, b.size - 1)] != 48))
    return values if canonical.all() else strings(b, starts, ends)


def text(b: np.ndarray, start: int, end: int, limit: int = 40) -> str:
    """A token's text for an error message."""
    return bytes(b[start:min(end, start + limit)]).decode("utf-8", "replace")
