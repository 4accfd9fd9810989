"""The Yandex Relevance Prediction Challenge click log (WSCD 2012) as a ``jaxrank.data.sessions.SessionLog``.

The log is tab-separated text with two kinds of lines (the challenge's description, as read by
PyClick's ``YandexRelPredChallengeParser`` and CLAX's ``YandexDataset``)::

    SessionID  TimePassed  Q  QueryID  RegionID  URLID  URLID ...     (a query and its result page)
    SessionID  TimePassed  C  URLID                                  (a click)

Every ``Q`` line starts one search session in the click-model sense (a Yandex session with several
queries gives several); its URLs are the shown documents in display order. A URL token may carry a
domain after a comma (``URLID,DomainID``, as in Yandex's later personalised-search log); the domain is
ignored. A ``C`` line clicks the URL in the most recent ``Q`` line of the same ``SessionID``; a click
on a URL that page does not show (or shows beyond ``num_positions``), or with no such page, is
ignored and counted, as in PyClick. Repeated clicks on one URL count once.

Conventions (documented choices):

* a page with more than ``num_positions`` URLs is truncated to its first ``num_positions`` (counted);
* a ``Q`` line with no URL is an empty session: dropped and counted;
* queries get dense ids in increasing ``QueryID`` order, (query, URL) pairs dense ids in increasing
  (query, URL) order; ``doc`` keeps the URL id;
* anything else (fewer columns than a kind needs, another action letter, a non-integer id) is a
  malformed line: ``ValueError`` naming the file and the line.

Lines are read in Python into compact ``array`` buffers and the ids are renumbered with one
``np.unique`` each, so memory is a few bytes per shown position (no per-pair Python dictionary).
"""

from array import array
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog, session_log


class YandexIds(NamedTuple):
    """How the dense ids of a log read by ``read_yandex`` map back to the file's ids, and what was
    dropped."""

    query_ids: np.ndarray  # [Q] i64 the QueryID of each dense query id
    pair_query: np.ndarray  # [P] i32 the dense query of each pair
    pair_doc: np.ndarray  # [P] i64 the URLID of each pair
    num_empty: int  # Q lines without a URL (dropped)
    num_truncated: int  # pages longer than num_positions (cut)
    num_ignored_clicks: int  # C lines not matching a URL on the session's current page


def _int(path, lineno: int, token: str, what: str) -> int:
    try:
        return int(token)
    except ValueError:
        raise ValueError(f"{path}:{lineno}: {what} must be an integer; got {token!r}.") from None


def read_yandex(path, *, num_positions: int = DEFAULT_POSITIONS,
                max_sessions: Optional[int] = None) -> tuple[SessionLog, YandexIds]:
    """Reads a WSCD 2012 click log (format and conventions in this module's docstring).

    Args:
      path: the log file.
      num_positions: ``K``, positions kept per page (10, as PyClick and CLAX).
      max_sessions: stop after this many (non-empty) sessions; ``None`` reads the whole file.

    Returns:
      ``(log, ids)``: the ``SessionLog`` and the ``YandexIds`` mapping its dense ids back.

    Raises:
      ValueError: for a malformed line (naming the file and the line), or a URL id of 2^31 or more.
    """
    path = Path(path)
    if isinstance(num_positions, bool) or not isinstance(num_positions, int) or num_positions < 1:
        raise ValueError(f"num_positions must be a positive int; got {num_positions!r}.")
    if max_sessions is not None and (isinstance(max_sessions, bool) or not isinstance(max_sessions, int)
                                     or max_sessions < 0):
        raise ValueError(f"max_sessions must be a non-negative int or None; got {max_sessions!r}.")
    k = num_positions
    queries, urls, clicks = array("q"), array("q"), bytearray()
    num_empty = num_truncated = num_ignored = 0
    session_id, position = None, {}  # the current page: its SessionID and URL -> position
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) < 4:
                if not line.strip():
                    continue
                raise ValueError(f"{path}:{lineno}: expected 'SessionID TimePassed Q|C ...' with at least 4 "
                                 f"tab-separated fields; got {len(fields)}.")
            action = fields[2]
            if action == "Q":
                if max_sessions is not None and len(queries) >= max_sessions:
                    break
                if len(fields) < 5:
                    raise ValueError(f"{path}:{lineno}: a Q line needs SessionID TimePassed Q QueryID RegionID "
                                     f"URLID...; got {len(fields)} fields.")
                query = _int(path, lineno, fields[3], "QueryID")
                _int(path, lineno, fields[4], "RegionID")
                page = [_int(path, lineno, token.split(",", 1)[0], "URLID") for token in fields[5:]]
                session_id = fields[0]
                if not page:
                    num_empty += 1
                    position = {}
                    continue
                if len(page) > k:
                    num_truncated += 1
                    page = page[:k]
                position = {}
                for r, url in enumerate(page):
                    position.setdefault(url, r)  # a repeated URL: its first position takes the clicks
                queries.append(query)
                urls.extend(page + [-1] * (k - len(page)))
                clicks.extend(bytes(k))
            elif action == "C":
                if len(fields) != 4:
                    raise ValueError(f"{path}:{lineno}: a C line is 'SessionID TimePassed C URLID'; got {len(fields)} "
                                     "fields.")
                url = _int(path, lineno, fields[3], "URLID")
                r = position.get(url) if fields[0] == session_id else None
                if r is None:
                    num_ignored += 1
                else:
                    clicks[(len(queries) - 1) * k + r] = 1
            else:
                raise ValueError(f"{path}:{lineno}: unknown action {action!r}; the log has Q (query) and C (click) "
                                 "lines.")
    num = len(queries)
    query_raw = np.frombuffer(queries, np.int64) if num else np.zeros(0, np.int64)
    url = (np.frombuffer(urls, np.int64) if num else np.zeros(0, np.int64)).reshape(num, k)
    clicked = (np.frombuffer(bytes(clicks), np.uint8) if num else np.zeros(0, np.uint8)).reshape(num, k).astype(bool)
    mask = url >= 0
    if mask.any() and url[mask].max() >= 2**31:
        raise ValueError(f"{path}: URL id {int(url[mask].max())} does not fit int32; renumber the URLs first.")
    query_ids, query = np.unique(query_raw, return_inverse=True)
    # One int64 key per shown (query, URL): dense query id times the URL range plus the URL.
    width = int(url[mask].max()) + 1 if mask.any() else 1
    keys = np.broadcast_to(query[:, None].astype(np.int64), url.shape)[mask] * width + url[mask]
    pair_keys, pair_flat = np.unique(keys, return_inverse=True)
    pair = np.zeros(url.shape, np.int64)
    pair[mask] = pair_flat
    log = session_log(query, pair, np.where(mask, url, 0), clicked, mask, num_pairs=len(pair_keys),
                      num_queries=len(query_ids))
    ids = YandexIds(query_ids.astype(np.int64), (pair_keys // width).astype(np.int32), pair_keys % width, num_empty,
                    num_truncated, num_ignored)
    return log, ids
