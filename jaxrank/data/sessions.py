"""Session logs: the search sessions a click model is fitted to (``jaxrank.click_models``).

A session is one result page of one query: the documents shown at positions ``0 .. n-1``
(``n <= K``) and which of them were clicked. A log of ``S`` sessions is a ``SessionLog`` of flat
``[S]`` / ``[S, K]`` arrays, so its memory grows with the number of sessions (``S·K`` entries of a few
bytes each) and ``K`` is the only padded size. Positions are numbered from 0 in display order; the
shown positions of a session are a prefix (``mask``), padding holds zeros and is never read.

Documents are identified per query: ``pair`` is a dense id in ``[0, num_pairs)`` of the
(query, document) pair, the unit that click models attach attractiveness and satisfaction to, as in
PyClick's ``QueryDocumentParamContainer`` (Chuklin, Markov, de Rijke, *Click Models for Web Search*,
2015, §3). ``query`` is a dense id in ``[0, num_queries)`` and ``doc`` keeps the source's own document
id (a URL id of the Yandex log, a document's index in its query for generated logs).

The plain text format (``write_sessions_tsv`` / ``read_sessions_tsv``), one session a line::

    # jaxrank sessions: num_queries=Q num_pairs=P num_positions=K
    <query>\\t<doc>,<doc>,...\\t<pair>,<pair>,...\\t<clicks>

``<clicks>`` is one character per shown position, ``1`` clicked and ``0`` not (``0100``). The header
line comes first; lines starting with ``#`` after it and blank lines are skipped. The Yandex click log
is read by ``jaxrank.data.yandex``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Optional

import numpy as np

from jaxrank.data.atomic import write_atomic

if TYPE_CHECKING:  # readers of text logs run without JAX
    from jaxrank.types import Array

DEFAULT_POSITIONS = 10  # PyClick's RANK_MAX and CLAX's max_positions: logs are cut at 10 results
_ID_LIMIT = 2**31  # ids are int32


class SessionLog(NamedTuple):
    """``S`` search sessions of up to ``K`` positions (host numpy arrays from the readers, device arrays
    from ``jaxrank.click_models.generate_sessions``); a pytree, so it passes through ``jit`` and
    ``vmap`` (``num_pairs`` and ``num_queries`` are ``[]`` leaves: shapes of fitted parameters take
    them as Python ints, read outside ``jit``)."""

    query: Array  # [S] i32 query id in [0, num_queries)
    pair: Array  # [S, K] i32 (query, document) pair id in [0, num_pairs); 0 on padding
    doc: Array  # [S, K] i32 the source's document id; 0 on padding
    clicks: Array  # [S, K] bool, False on padding
    mask: Array  # [S, K] bool, True on the shown positions (a prefix of every row)
    num_pairs: Array  # [] i32 number of distinct pair ids (the size of a pair parameter table)
    num_queries: Array  # [] i32 number of distinct query ids

    @property
    def num_sessions(self) -> int:
        return self.pair.shape[-2]

    @property
    def num_positions(self) -> int:
        return self.pair.shape[-1]


def session_log(query, pair, doc, clicks, mask, *, num_pairs: Optional[int] = None,
                num_queries: Optional[int] = None) -> SessionLog:
    """A checked ``SessionLog`` of numpy arrays from array-likes; padding is zeroed.

    Args:
      query: ``[S]`` query ids.
      pair, doc, clicks, mask: ``[S, K]``; ``mask`` a prefix of each row with at least one position.
      num_pairs, num_queries: sizes of the id spaces (default: largest id + 1).

    Raises:
      ValueError: for mismatched shapes, a mask that is not a non-empty prefix, an id out of range or a
        click on a padded position, naming the session.
    """
    mask = np.asarray(mask, bool)
    pair, doc, clicks = np.asarray(pair), np.asarray(doc), np.asarray(clicks)
    query = np.asarray(query)
    if mask.ndim != 2 or any(a.shape != mask.shape for a in (pair, doc, clicks)) or query.shape != mask.shape[:1]:
        raise ValueError(f"a session log needs query [S] and pair, doc, clicks, mask [S, K]; got shapes {query.shape}, "
                         f"{pair.shape}, {doc.shape}, {clicks.shape}, {mask.shape}.")
    if mask.shape[1] == 0:
        raise ValueError("a session log needs K >= 1 positions; got K = 0.")
    if clicks.dtype != bool:
        if not np.isin(clicks, (0, 1)).all():
            raise ValueError("clicks must be 0/1 or bool; got other values.")
        clicks = clicks.astype(bool)
    ids = {}
    for name, values, where in (("query", query, None), ("pair", pair, mask), ("doc", doc, mask)):
        if values.size and not np.issubdtype(values.dtype, np.integer):
            raise ValueError(f"{name} ids must be integers; got dtype {values.dtype}.")
        real = values if where is None else values[where]
        if real.size and (real.min() < 0 or real.max() >= _ID_LIMIT):
            bad = real[(real < 0) | (real >= _ID_LIMIT)][0]
            raise ValueError(f"{name} id {int(bad)} is outside [0, 2^31); ids are int32 (renumber them densely).")
        ids[name] = int(real.max()) + 1 if real.size else 0
    num_pairs = ids["pair"] if num_pairs is None else num_pairs
    num_queries = ids["query"] if num_queries is None else num_queries
    for name, size, needed in (("num_pairs", num_pairs, ids["pair"]), ("num_queries", num_queries, ids["query"])):
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < needed:
            raise ValueError(f"{name} must be an int >= the largest id + 1 = {needed}; got {size!r}.")
    log = SessionLog(query.astype(np.int32), np.where(mask, pair, 0).astype(np.int32),
                     np.where(mask, doc, 0).astype(np.int32), clicks & mask, mask,
                     np.asarray(num_pairs, np.int32), np.asarray(num_queries, np.int32))
    check_session_log(log, clicks_outside=clicks & ~mask)
    return log


def check_session_log(log: SessionLog, *, clicks_outside=None) -> None:
    """Raises ``ValueError`` unless every row's mask is a non-empty prefix, clicks lie on shown positions
    and ids are in range. Traced logs (inside ``jit``) pass unchecked."""
    jax = sys.modules.get("jax")  # without JAX imported, nothing is traced
    if jax is not None and any(isinstance(leaf, jax.core.Tracer) for leaf in log):
        return
    mask = np.asarray(log.mask, bool)
    if mask.ndim != 2:
        raise ValueError(f"SessionLog.mask must be [S, K]; got shape {mask.shape}.")
    lengths = mask.sum(-1)
    prefix = mask == (np.arange(mask.shape[1]) < lengths[:, None])
    bad = np.flatnonzero(~prefix.all(-1) | (lengths == 0))
    if bad.size:
        s = int(bad[0])
        raise ValueError(f"session {s}: mask {mask[s].astype(int).tolist()} is not a non-empty prefix; shown positions "
                         "come first (drop empty sessions).")
    outside = np.asarray(log.clicks, bool) & ~mask if clicks_outside is None else np.asarray(clicks_outside)
    if outside.any():
        s = int(np.flatnonzero(outside.any(-1))[0])
        raise ValueError(f"session {s} has a click on a position it does not show.")
    for name, values, size, where in (("pair", log.pair, log.num_pairs, mask), ("query", log.query, log.num_queries,
                                                                               None)):
        values = np.asarray(values)
        real = values if where is None else values[where]
        if real.size and (real.min() < 0 or real.max() >= int(size)):
            bad = real[(real < 0) | (real >= int(size))][0]
            raise ValueError(f"{name} id {int(bad)} is outside [0, num_{name}s = {int(size)}).")


def take_sessions(log: SessionLog, index) -> SessionLog:
    """The sessions ``index`` (an int array or a slice) of ``log``, with the same id spaces."""
    return log._replace(query=log.query[index], pair=log.pair[index], doc=log.doc[index], clicks=log.clicks[index],
                        mask=log.mask[index])


_WRITE_CHUNK = 4096  # sessions formatted at once: their [chunk, K·(2W + 3) + W + 3] bytes stay in cache
_DIGITS = 10  # the digits of an int32
_POWERS = 10 ** np.arange(1, _DIGITS, dtype=np.int64)  # a value has 1 + (the powers <= it) digits


def _int_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(chars, shown)``: the decimal text of int32 ``values [...]`` as ``[..., W]`` uint8 characters, a
    sign column where any value is negative, then the digits right-aligned in as many columns as the
    largest value needs; ``shown`` marks the characters of each text (the rest is dropped when a line is
    put together)."""
    values = np.asarray(values, np.int64)
    magnitude = np.abs(values)
    width = 1 + np.searchsorted(_POWERS, magnitude, side="right")
    columns = int(width.max(initial=1))
    signed = bool((values < 0).any())
    chars = np.empty(values.shape + (signed + columns,), np.uint8)
    shown = np.empty(chars.shape, bool)
    if signed:
        chars[..., 0], shown[..., 0] = ord("-"), values < 0
    rest = magnitude.astype(np.float64)
    for column in range(signed + columns - 1, signed - 1, -1):  # the last digit first
        quotient = np.floor(rest * 0.1)  # rest // 10: exact below 2^31 (0.1 rounds up, by less than a tenth)
        chars[..., column] = rest - 10.0 * quotient + 48.0
        rest = quotient
    shown[..., signed:] = np.arange(columns - 1, -1, -1) < width[..., None]
    return chars, shown


def _id_list(values: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(chars, shown)`` ``[n, K·(W + 1)]``: the first ``lengths`` ids of each row of ``values [n, K]``,
    comma-separated."""
    chars, shown = _int_text(values)
    position = np.arange(values.shape[1])
    comma = np.broadcast_to(np.uint8(ord(",")), values.shape + (1,))
    chars = np.concatenate([chars, comma], -1)
    shown = np.concatenate([shown & (position < lengths[:, None])[..., None],
                            (position < lengths[:, None] - 1)[..., None]], -1)
    return chars.reshape(len(values), -1), shown.reshape(len(values), -1)


def _session_lines(query, pair, doc, clicks, lengths) -> bytes:
    """The text lines of ``n`` sessions (this module's format), built column-wise with no loop over sessions."""
    n = len(query)
    tab, newline = (np.full((n, 1), ord(c), np.uint8) for c in "\t\n")
    every = np.ones((n, 1), bool)
    shown_clicks = np.arange(clicks.shape[1]) < lengths[:, None]
    parts = [_int_text(query), (tab, every), _id_list(doc, lengths), (tab, every), _id_list(pair, lengths),
             (tab, every), ((48 + clicks).astype(np.uint8), shown_clicks), (newline, every)]
    chars = np.concatenate([c for c, _ in parts], 1)
    shown = np.concatenate([m for _, m in parts], 1)
    return chars[shown].tobytes()  # row-major: line by line, in order


def write_sessions_tsv(path, log: SessionLog) -> Path:
    """Writes ``log`` in the text format of this module's docstring, atomically
    (``jaxrank.data.atomic.write_atomic``), ``_WRITE_CHUNK`` sessions at a time formatted by numpy, so
    time is linear in the sessions: 10⁶ sessions of up to 10 positions (ids below 10⁷) take 1.7 s of CPU
    where a loop over sessions takes 5.9 s, and 10⁷ sessions (a 0.94 GB file) 16 s."""
    check_session_log(log)
    query, pair, doc = (np.asarray(a) for a in (log.query, log.pair, log.doc))
    clicks, mask = np.asarray(log.clicks, bool), np.asarray(log.mask, bool)
    lengths = mask.sum(-1)

    def write(f):
        f.write(f"# jaxrank sessions: num_queries={int(log.num_queries)} num_pairs={int(log.num_pairs)} "
                f"num_positions={mask.shape[1]}\n".encode())
        for start in range(0, mask.shape[0], _WRITE_CHUNK):
            rows = slice(start, start + _WRITE_CHUNK)
            f.write(_session_lines(query[rows], pair[rows], doc[rows], clicks[rows], lengths[rows]))

    return write_atomic(path, write, mode="wb")


def read_sessions_tsv(path) -> SessionLog:
    """Reads a log written by ``write_sessions_tsv`` (format in this module's docstring) with the file's
    own ids, in streamed chunks (``jaxrank.data.click_log``; plain or compressed). To map it into another
    log's ids, read it with ``read_click_log(path, vocabulary=...)``.

    Raises:
      ValueError: naming the file and the line, for a missing header, a line without four tab-separated
        fields, an empty session, a non-integer id, unequal numbers of documents, pairs and clicks, more positions than
        the header's ``num_positions``, or an id beyond the header's sizes.
    """
    from jaxrank.data.click_log import read_sessions_tsv_ids  # click_log builds on this module

    return read_sessions_tsv_ids(path)
