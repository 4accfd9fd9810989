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
* queries and (query, URL) pairs get dense ids in order of first appearance; ``doc`` keeps the URL id;
* anything else (fewer columns than a kind needs, another action letter, a non-integer id) is a
  malformed line: ``ValueError`` naming the file and the line (so is a negative id, ``98435_1``, an id
  of 19 digits or more, a byte-order mark, an empty file or a last line cut short).

``read_yandex`` is ``jaxrank.data.click_log.read_click_log(path, format="wscd")`` (streaming, strict
integer ids, file and line in every error) with the URL ids kept in ``log.doc`` and the dense ids mapped
back in a ``YandexIds``; ids follow first appearance in the file. To map a test log into a training
log's ids, use ``read_click_log`` with ``vocabulary=``.
"""

from typing import NamedTuple, Optional

import numpy as np

from jaxrank.data.click_log import read_click_log
from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog


class YandexIds(NamedTuple):
    """How the dense ids of a log read by ``read_yandex`` map back to the file's ids, and what was
    dropped."""

    query_ids: np.ndarray  # [Q] i64 the QueryID of each dense query id
    pair_query: np.ndarray  # [P] i32 the dense query of each pair
    pair_doc: np.ndarray  # [P] i64 the URLID of each pair
    num_empty: int  # Q lines without a URL (dropped)
    num_truncated: int  # pages longer than num_positions (cut)
    num_ignored_clicks: int  # C lines not matching a URL on the session's current page


def read_yandex(path, *, num_positions: int = DEFAULT_POSITIONS,
                max_sessions: Optional[int] = None) -> tuple[SessionLog, YandexIds]:
    """Reads a WSCD 2012 click log (format and conventions in ``jaxrank.data.click_log``).

    Args:
      path: the log file (plain or compressed).
      num_positions: ``K``, positions kept per page (10, as PyClick and CLAX).
      max_sessions: stop after this many (non-empty) sessions; ``None`` reads the whole file.

    Returns:
      ``(log, ids)``: the ``SessionLog`` with ``doc`` the URL id, and the ``YandexIds`` mapping its dense
      ids back.

    Raises:
      ValueError: for a malformed line (naming the file and the line), or a URL id of 2^31 or more.
    """
    log, vocabulary, info = read_click_log(path, format="wscd", num_positions=num_positions,
                                           max_sessions=max_sessions)
    urls = vocabulary.docs.astype(np.int64)
    if urls.size and urls.max() >= 2**31:
        raise ValueError(f"{path}: URL id {int(urls.max())} does not fit int32; use read_click_log, whose doc is the "
                         "vocabulary's dense document id.")
    doc = np.where(log.mask, urls.astype(np.int32)[log.doc], 0).astype(np.int32)
    ids = YandexIds(vocabulary.queries.astype(np.int64), vocabulary.pair_query, urls[vocabulary.pair_doc],
                    info.num_empty, info.num_truncated, info.num_ignored_clicks)
    return log._replace(doc=doc), ids
