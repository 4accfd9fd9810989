"""Click logs as people have them, read into a ``SessionLog`` through one ``Vocabulary``.

``read_click_log(path)`` reads three text formats, plain or compressed (gzip, bzip2, xz; recognised by
their first bytes), in chunks of a few MiB tokenised with NumPy (``jaxrank.data.text_chunks``), with
the chunks' ids settled in batches of an eighth of the vocabulary (``jaxrank.data.vocabulary.IdTable``):
the work per byte does not grow with the file, and memory is the result (the parsed log, allocated
once from the file's size, and the vocabulary's sorted id tables) plus one batch's staged keys and
one chunk's work (no Python object per session, position or click). Every format is ASCII text
whose lines end in ``\\n`` (``\\r\\n`` accepted).

``wscd`` -- the Yandex Relevance Prediction Challenge log (WSCD 2012), as published and as read by
PyClick's ``YandexRelPredChallengeParser``; tab-separated lines of two kinds::

    SessionID  TimePassed  Q  QueryID  RegionID  URLID  URLID ...   (a query and its result page)
    SessionID  TimePassed  C  URLID                                 (a click)

Every ``Q`` line starts one search session (a Yandex session with several queries gives several); a
``C`` line clicks the URL on the most recent ``Q`` line, when that line has the same SessionID. A URL
token may carry a domain after a comma (``URLID,DomainID``, Yandex's later log); the domain is
ignored. Every id is an integer written in digits (``98435_1``, ``-1``, ``+5`` or an id of 19 digits
or more is an error); the QueryID and URLID become query and document tokens of the vocabulary.

``pyclick`` -- PyClick's session text (the format of its example logs ``oneQueryTrain`` and
``trainSample``): sessions separated by ``;`` or line ends, each::

    QUERY<TAB>DOC,DOC,...,DOC : CLICKED , CLICKED , ...

``QUERY`` and the documents are string tokens (``98435_1`` is a query id); spaces around the
separators are ignored (tokens hold no spaces); the clicked list names documents of the page (it may
be empty). The vocabulary maps the strings to ids.

``tsv`` -- jaxrank's session text, ``jaxrank.data.sessions.write_sessions_tsv``: a header line
``# jaxrank sessions: num_queries=Q num_pairs=P num_positions=K`` and one session a line,
``<query>\\t<doc>,<doc>,...\\t<pair>,<pair>,...\\t<clicks>``. Here the query and document columns are
tokens like any format's (the file's pair ids are checked against the header, then renumbered by the
vocabulary); ``read_sessions_tsv`` keeps the file's own ids.

Conventions shared by the formats (counted in ``ClickLogInfo``):

* a page of more than ``num_positions`` documents is cut to its first ``num_positions``;
* a page without documents (a ``Q`` line with no URL) is dropped;
* a click on a document the page does not show (or shows beyond ``num_positions``) is ignored; repeated
  clicks on one document count once; a document shown twice takes its clicks at its first position;
* ids are dense and follow first appearance: queries, documents and (query, document) pairs are
  numbered in the order the file first shows them, after the ids of ``vocabulary`` (module
  ``jaxrank.data.vocabulary``). ``log.doc`` is the vocabulary's document id (``vocabulary.docs[doc]``
  is the token).

Any other content is an error before the log is returned: ``ValueError`` with the file and line and
what was found (a malformed line, an unknown action, a non-integer or negative or too long integer id,
a UTF-8 byte-order mark, an empty file, a last line without its end, a corrupt compressed file).
"""

import re
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from jaxrank.data import text_chunks as tc
from jaxrank.data.sessions import DEFAULT_POSITIONS, SessionLog
from jaxrank.data.vocabulary import Vocabulary, pair_keys, unique_first_inverse

FORMATS = ("wscd", "pyclick", "tsv")
CHUNK_BYTES = 4 << 20
_ID_LIMIT = 2**31  # SessionLog ids are int32
_TSV_HEADER = re.compile(rb"#\s*jaxrank sessions:\s*num_queries=(\d+)\s+num_pairs=(\d+)\s+num_positions=(\d+)\s*$")
_Q, _C, _TAB, _NL, _COMMA, _COLON, _SEMI = (ord(c) for c in "QC\t\n,:;")


class ClickLogInfo(NamedTuple):
    """What ``read_click_log`` read, dropped, and found new against the vocabulary it was given.

    Ids at or above ``known_queries`` / ``known_pairs`` are the queries and pairs the given vocabulary
    did not hold (all of them when none was given)."""

    path: str
    format: str
    num_sessions: int  # sessions in the log
    num_empty: int  # pages without documents (dropped)
    num_truncated: int  # pages longer than num_positions (cut)
    num_ignored_clicks: int  # clicks on no document of their page
    known_queries: int  # the given vocabulary's sizes before the read
    known_docs: int
    known_pairs: int
    new_queries: int  # ids appended by this read
    new_docs: int
    new_pairs: int
    sessions_new_query: int  # sessions whose query id >= known_queries
    positions_new_pair: int  # shown positions whose pair id >= known_pairs


class _Chunk(NamedTuple):
    query: np.ndarray  # [s] query keys (int64 or bytes)
    docs: np.ndarray  # [n] document keys of the shown positions, row-major
    rows: np.ndarray  # [n] session (in the chunk) of each shown position
    cols: np.ndarray  # [n] its position
    click_rows: np.ndarray  # [c]
    click_cols: np.ndarray  # [c]
    pairs: Optional[np.ndarray] = None  # [n] the file's pair ids (tsv)


class _State:
    """Counts and carried context of a read."""

    def __init__(self, path, k, max_sessions):
        self.path, self.k, self.max_sessions = path, k, max_sessions
        self.num = self.empty = self.truncated = self.ignored = 0
        self.stop = False
        self.carry_page = np.full(k, -1, np.int64)  # wscd: the last Q line's page, SessionID and session
        self.carry_sid, self.carry_session = -1, -1
        self.carry_clicks = np.zeros(0, np.int64)  # positions clicked in the previous chunk's last session

    def remaining(self) -> int:
        return np.iinfo(np.int64).max if self.max_sessions is None else self.max_sessions - self.num


class _Errors:
    """The first (lowest-line) problem of a chunk."""

    def __init__(self, path, line0):
        self.path, self.line0, self.best = path, line0, None

    def check(self, bad_lines: np.ndarray, message):
        if bad_lines.size:
            line = int(bad_lines.min())
            if self.best is None or line < self.best[0]:
                self.best = (line, message(line))

    def raise_first(self):
        if self.best is not None:
            raise ValueError(f"{self.path}:{self.line0 + self.best[0]}: {self.best[1]}")


def _fields(b, separators):
    """Tokens of ``b`` with the line and the tab-separated field each belongs to; a token after a
    comma is a sub-token of its field (``is_field`` False)."""
    starts, ends = tc.split(b, separators)
    term = b[ends]
    prev = np.empty_like(term)
    prev[:1], prev[1:] = _NL, term[:-1]
    is_field = prev != _COMMA
    is_nl = term == _NL
    line = np.cumsum(is_nl) - is_nl
    line_first = np.flatnonzero(prev == _NL)
    index = np.cumsum(is_field) - 1
    field = index - index[line_first][line]
    num_fields = np.bincount(line[is_field], minlength=line_first.size)
    field_tokens = np.flatnonzero(is_field)
    first_field = index[line_first]
    return starts, ends, term, is_field, line, field, num_fields, field_tokens, first_field


def _wscd_chunk(b: np.ndarray, errors: _Errors, state: _State) -> _Chunk:
    k = state.k
    starts, ends, term, is_field, line, field, nfields, field_tokens, first_field = _fields(b, b"\t\n,")
    lens = ends - starts
    num_lines = nfields.size
    line_first = field_tokens[first_field]
    blank = (nfields == 1) & (lens[line_first] == 0) & (term[line_first] == _NL)
    action = np.zeros(num_lines, np.int64)
    at = np.flatnonzero(is_field & (field == 2))
    action[line[at]] = np.where(lens[at] == 1, b[starts[at]], -1)
    is_q, is_c = (action == _Q) & (nfields >= 5), (action == _C) & (nfields == 4)
    q_lines = np.flatnonzero(is_q)
    nurls = np.clip(nfields[q_lines] - 5, 0, k)
    live = num_lines
    cum = np.cumsum(nurls > 0)
    if cum.size and cum[-1] > state.remaining():
        live = int(q_lines[np.searchsorted(cum, state.remaining(), side="right")])
        state.stop = True
    in_live = np.arange(num_lines) < live

    values, bad = tc.parse_uints(b, starts, ends)
    bad &= ~(is_field & (field == 2))

    def show(t):
        return repr(tc.text(b, int(starts[t]), int(ends[t])))

    errors.check(np.flatnonzero(in_live & ~blank & (nfields < 4)), lambda l: (
        f"expected 'SessionID TimePassed Q|C ...' with at least 4 tab-separated fields; got {nfields[l]}."))
    odd = np.flatnonzero(in_live & (nfields >= 4) & (action != _Q) & (action != _C))
    errors.check(odd, lambda l: f"unknown action {show(field_tokens[first_field[l] + 2])}; the log has Q (query) and "
                                "C (click) lines.")
    errors.check(np.flatnonzero(in_live & (action == _Q) & (nfields == 4)), lambda l: (
        f"a Q line needs SessionID TimePassed Q QueryID RegionID URLID...; got {nfields[l]} fields."))
    errors.check(np.flatnonzero(in_live & (action == _C) & (nfields > 4)), lambda l: (
        f"a C line is 'SessionID TimePassed C URLID'; got {nfields[l]} fields."))
    q_url = is_q[line] & (field >= 5)
    sub = np.flatnonzero(~is_field & ~q_url & in_live[line])
    errors.check(line[sub], lambda l: "only the URLs of a Q line may carry ',DomainID'; got "
                                      f"{show(sub[line[sub] == l][0] - 1)} followed by a comma.")
    names = {0: "SessionID", 1: "TimePassed", 3: "QueryID", 4: "RegionID"}
    wrong = np.flatnonzero(bad & in_live[line] & ((nfields >= 4)[line]))

    def name(t):
        f = int(field[t])
        if not is_field[t]:
            return "DomainID"
        return "URLID" if f >= 5 or (f == 3 and action[line[t]] == _C) else names[f]

    errors.check(line[wrong], lambda l: (
        f"{name(wrong[line[wrong] == l][0])} must be an integer in [0, 10^18) written in digits; got "
        f"{show(wrong[line[wrong] == l][0])}."))
    errors.raise_first()

    q_lines = q_lines[q_lines < live]
    nurls = nurls[:q_lines.size]
    state.empty += int((nurls == 0).sum())
    state.truncated += int((nfields[q_lines] > 5 + k).sum())
    nq = q_lines.size
    q_sid = values[field_tokens[first_field[q_lines]]]
    q_query = values[field_tokens[first_field[q_lines] + 3]]
    q_row = np.full(num_lines, -1, np.int64)
    q_row[q_lines] = np.arange(nq)
    url = np.flatnonzero(q_url & is_field & (field < 5 + k) & (q_row[line] >= 0))
    pages = np.full((nq, k), -1, np.int64)
    pages[q_row[line[url]], field[url] - 5] = values[url]
    shown = nurls > 0
    row_of_q = np.cumsum(shown) - 1
    session = np.where(shown, state.num + row_of_q, -1)

    c_lines = np.flatnonzero(is_c & in_live)
    c_sid = values[field_tokens[first_field[c_lines]]]
    c_url = values[field_tokens[first_field[c_lines] + 3]]
    page_of = np.searchsorted(q_lines, c_lines)  # index into [carry, q rows...]
    ext_pages = np.concatenate([state.carry_page[None], pages])
    ext_sid = np.concatenate([[state.carry_sid], q_sid])
    ext_session = np.concatenate([[state.carry_session], session])
    match = ext_pages[page_of] == c_url[:, None]
    hit = match.any(1) & (ext_sid[page_of] == c_sid) & (ext_session[page_of] >= 0)
    state.ignored += int((~hit).sum())
    click_session, click_col = ext_session[page_of][hit] - state.num, match.argmax(1)[hit]
    earlier = click_session < 0
    state.carry_clicks = click_col[earlier]
    if nq:
        state.carry_page, state.carry_sid, state.carry_session = pages[-1], int(q_sid[-1]), int(session[-1])
    kept = pages[shown]
    rows, cols = np.nonzero(kept >= 0)
    return _Chunk(q_query[shown], kept[rows, cols], rows, cols, click_session[~earlier], click_col[~earlier])


def _pyclick_chunk(b: np.ndarray, errors: _Errors, state: _State) -> _Chunk:
    k = state.k
    if (b == 32).any():  # spaces carry nothing (tokens hold none), and removing them keeps the lines
        b = b[b != 32]
    starts, ends = tc.split(b, b"\t,:;\n")
    term = b[ends]
    lens = ends - starts
    is_end = (term == _SEMI) | (term == _NL)
    prev_end = np.empty_like(is_end)
    prev_end[:1], prev_end[1:] = True, is_end[:-1]
    first = np.flatnonzero(prev_end)
    rec = np.cumsum(is_end) - is_end
    num = first.size
    ntok = np.bincount(rec, minlength=num)
    ntab = np.bincount(rec[term == _TAB], minlength=num)
    ncolon = np.bincount(rec[term == _COLON], minlength=num)
    blank = (ntok == 1) & (lens[first] == 0)
    sep = (term == _TAB) | (term == _COLON)
    seen = np.cumsum(sep) - sep
    seg = seen - seen[first][rec]
    rec_line = np.searchsorted(np.flatnonzero(b == _NL), starts[first])  # lines before the record's first byte
    live = num
    records = np.flatnonzero(~blank)
    if records.size > state.remaining():
        live = int(records[state.remaining()])
        state.stop = True
    ok = ~blank & (np.arange(num) < live)

    def show(r):
        last = first[r] + ntok[r] - 1
        return repr(tc.text(b, int(starts[first[r]]), int(ends[last]), 60))

    def at_line(records_bad):
        return rec_line[records_bad]

    malformed = np.flatnonzero(ok & ((term[first] != _TAB) | (ntab != 1) | (ncolon != 1)))
    errors.check(at_line(malformed), lambda l: (
        f"a PyClick session is 'QUERY<TAB>DOC,DOC,... : CLICKED,...'; got {show(malformed[at_line(malformed) == l][0])}."))
    empty_query = np.flatnonzero(ok & (lens[first] == 0))
    errors.check(at_line(empty_query), lambda l: "a session with an empty query token.")
    doc_tok = np.flatnonzero((seg == 1) & ok[rec])
    empty_doc = rec[doc_tok[lens[doc_tok] == 0]]
    errors.check(at_line(empty_doc), lambda l: (
        f"an empty document token (',,' or ',:') in {show(empty_doc[at_line(empty_doc) == l][0])}."))
    click_tok = np.flatnonzero((seg == 2) & ok[rec])
    nclick = np.bincount(rec[click_tok], minlength=num)
    empty_click = rec[click_tok[(lens[click_tok] == 0) & (nclick[rec[click_tok]] > 1)]]
    errors.check(at_line(empty_click), lambda l: (
        f"an empty clicked-document token in {show(empty_click[at_line(empty_click) == l][0])}."))
    errors.raise_first()

    records = records[records < live]
    row = np.full(num, -1, np.int64)
    row[records] = np.arange(records.size)
    pos = doc_tok - first[rec[doc_tok]] - 1
    ndocs = np.bincount(rec[doc_tok], minlength=num)
    state.truncated += int((ndocs[records] > k).sum())
    doc_tok = doc_tok[pos < k]
    pos = pos[pos < k]
    click_tok = click_tok[lens[click_tok] > 0]
    keys = tc.token_keys(b, np.concatenate([starts[doc_tok], starts[click_tok]]),
                         np.concatenate([ends[doc_tok], ends[click_tok]]))
    local = unique_first_inverse(keys)[2]
    pages = np.full((records.size, k), -1, np.int64)
    rows = row[rec[doc_tok]]
    pages[rows, pos] = local[:doc_tok.size]
    click_rows = row[rec[click_tok]]
    match = pages[click_rows] == local[doc_tok.size:, None]
    hit = match.any(1)
    state.ignored += int((~hit).sum())
    query = tc.token_keys(b, starts[first[records]], ends[first[records]])
    return _Chunk(query, keys[:doc_tok.size], rows, pos, click_rows[hit], match.argmax(1)[hit])


def _tsv_chunk(b: np.ndarray, errors: _Errors, state: _State, header: tuple[int, int, int]) -> _Chunk:
    num_queries, num_pairs, file_k = header
    k = state.k
    nl = np.flatnonzero(b == _NL)
    line_start = np.concatenate([[0], nl[:-1] + 1])
    drop = (line_start == nl) | (b[np.minimum(line_start, b.size - 1)] == ord("#"))
    line_no = np.arange(nl.size)
    if drop.any():
        b = b[np.repeat(~drop, nl - line_start + 1)]
        line_no = line_no[~drop]
    if not b.size:
        return _Chunk(np.zeros(0, np.int64), np.zeros(0, np.int64), *(np.zeros(0, np.int64),) * 4)
    starts, ends, term, is_field, line, field, nfields, field_tokens, first_field = _fields(b, b"\t\n,")
    lens = ends - starts
    num = nfields.size
    if num > state.remaining():
        num = state.remaining()
        state.stop = True
        keep_tok = line < num
        starts, ends, term, is_field, line, field = (a[keep_tok] for a in (starts, ends, term, is_field, line, field))
        lens, nfields, first_field = ends - starts, nfields[:num], first_field[:num]
    lines = line_no[:num]
    values, bad = tc.parse_uints(b, starts, ends)
    f3 = field == 3
    ntok = np.bincount(line, minlength=num)
    counts = [np.bincount(line[field == f], minlength=num) for f in range(3)]
    empty_tok = np.bincount(line[(lens == 0) & (field >= 1) & (field <= 3)], minlength=num)
    flags_len = np.zeros(num, np.int64)
    flags_len[line[f3 & is_field]] = lens[f3 & is_field]

    def show(l):
        return repr(tc.text(b, int(starts[field_tokens[first_field[l]]]), int(ends[field_tokens[first_field[l]] +
                                                                                   ntok[l] - 1]), 60))

    errors.check(lines[nfields != 4], lambda l: (
        f"expected 4 tab-separated fields (query, docs, pairs, clicks); got {nfields[lines == l][0]}."))
    ok = nfields == 4
    errors.check(lines[ok & (empty_tok > 0) & (counts[1] == 1) | ok & (flags_len == 0)], lambda l: (
        "an empty session (no shown document); every session shows at least one document: drop the line."))
    int_bad = np.bincount(line[bad & (field <= 2)], minlength=num) + np.bincount(line[~is_field & (field != 1) &
                                                                                   (field != 2)], minlength=num)
    errors.check(lines[ok & (int_bad > 0)], lambda l: f"ids must be integers in [0, 10^18); got {show(int(np.flatnonzero(lines == l)[0]))}.")
    width = max(int(flags_len.max(initial=0)), 1)
    f3_start = np.zeros(num, np.int64)
    f3_start[line[f3 & is_field]] = starts[f3 & is_field]
    cols = np.arange(width)
    flag_bytes = b[np.minimum(f3_start[:, None] + cols, b.size - 1)]
    in_flag = cols < flags_len[:, None]
    bad_flag = (in_flag & (flag_bytes != 48) & (flag_bytes != 49)).any(1) | (counts[0] != 1)
    unequal = ok & ((counts[1] != counts[2]) | (counts[1] != flags_len) | bad_flag)
    errors.check(lines[unequal], lambda l: (
        "needs as many documents, pairs and 0/1 click flags; got "
        f"{counts[1][lines == l][0]}, {counts[2][lines == l][0]} and {show(int(np.flatnonzero(lines == l)[0]))}."))
    errors.check(lines[ok & (counts[1] > file_k)], lambda l: (
        f"{counts[1][lines == l][0]} positions but the header says num_positions={file_k}."))
    q_tok = field_tokens[first_field]
    out = (values[q_tok] >= num_queries) | (np.bincount(line[(field == 2) & (values >= num_pairs)], minlength=num) > 0)
    errors.check(lines[ok & out], lambda l: (
        f"query or pair id outside the header's num_queries={num_queries}, num_pairs={num_pairs}; got "
        f"{show(int(np.flatnonzero(lines == l)[0]))}."))
    errors.raise_first()

    state.truncated += int((counts[1] > k).sum())
    doc_tok = np.flatnonzero(field == 1)
    pair_tok = np.flatnonzero(field == 2)
    rows = line[doc_tok]
    pos = doc_tok - field_tokens[first_field[rows] + 1]
    keep = pos < k
    doc_tok, pair_tok, rows, pos = doc_tok[keep], pair_tok[keep], rows[keep], pos[keep]
    clicked = (flag_bytes[:, :k] == 49) & in_flag[:, :k]
    click_rows, click_cols = np.nonzero(clicked)
    return _Chunk(values[q_tok], values[doc_tok], rows, pos, click_rows, click_cols, values[pair_tok])


def detect_format(path) -> str:
    """``wscd``, ``pyclick`` or ``tsv`` from the first non-blank line of ``path``.

    Raises:
      ValueError: naming the file and its first line when it fits none of the formats.
    """
    head = tc.read_head(path)
    head = head[len(tc.BOM):] if head.startswith(tc.BOM) else head
    line = next((l for l in head.split(b"\n") if l.strip()), b"")
    fields = line.split(b"\t")
    if _TSV_HEADER.match(line.strip()):
        return "tsv"
    if len(fields) >= 4 and fields[2] in (b"Q", b"C"):
        return "wscd"
    if len(fields) >= 2 and b":" in fields[1]:
        return "pyclick"
    if not line:
        raise ValueError(f"{path}: the file is empty (no sessions).")
    raise ValueError(f"{path}:1: cannot tell the click-log format from {line[:60].decode('utf-8', 'replace')!r}; pass "
                     f"format= one of {FORMATS}.")


def _check_args(num_positions, max_sessions, chunk_bytes, format):
    for name, value, low in (("num_positions", num_positions, 1), ("chunk_bytes", chunk_bytes, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an int >= {low}; got {value!r}.")
    if max_sessions is not None and (isinstance(max_sessions, bool) or not isinstance(max_sessions, (int, np.integer))
                                     or max_sessions < 1):
        raise ValueError(f"max_sessions must be a positive int or None (the whole file); got {max_sessions!r}.")
    if format not in FORMATS + ("auto",):
        raise ValueError(f"format must be 'auto' or one of {FORMATS}; got {format!r}.")


def _chunks(path, format, state, chunk_bytes):
    """Yields each chunk's ``(_Chunk, bytes)`` (the tsv header read and checked first)."""
    header = None
    for chunk, line0 in tc.read_chunks(path, chunk_bytes=chunk_bytes, ends=b";\n" if format == "pyclick" else b"\n"):
        if state.stop:  # not at remaining() == 0: the next chunk may still click the last session
            break
        if format == "tsv" and header is None:
            first, _, chunk = chunk.partition(b"\n")
            match = _TSV_HEADER.match(first.strip())
            if not match:
                raise ValueError(f"{path}:1: expected the header '# jaxrank sessions: num_queries=Q num_pairs=P "
                                 f"num_positions=K'; got {first.strip()[:80].decode('utf-8', 'replace')!r}.")
            header = tuple(int(g) for g in match.groups())
            line0 += 1
            if not chunk:
                continue
        b = np.frombuffer(chunk, np.uint8)
        errors = _Errors(path, line0)
        if format == "wscd":
            yield _wscd_chunk(b, errors, state), b.size
        elif format == "pyclick":
            yield _pyclick_chunk(b, errors, state), b.size
        else:
            yield _tsv_chunk(b, errors, state, header), b.size


class _Assembly:
    """The log's ``[S, K]`` arrays, allocated once for the sessions the file is expected to hold (its
    size times the sessions per byte read so far, 2% over; pages never written take no memory) and
    cut to the sessions read at the end with ``ndarray.resize`` (in place), so the peak is the log
    itself, not the log plus a concatenated copy. A compressed file (size unknown) or an estimate
    short of the file grows the arrays by a quarter, one array at a time: the growth holds at most
    one field twice."""

    _GROWTH = 1.25

    def __init__(self, k, file_bytes: Optional[int], max_sessions: Optional[int]):
        self.k, self.file_bytes, self.max_sessions = k, file_bytes, max_sessions
        self.num = self.capacity = self.bytes_read = 0
        self.arrays = {"query": np.zeros(0, np.int32), "pair": np.zeros((0, k), np.int32),
                       "doc": np.zeros((0, k), np.int32), "clicks": np.zeros((0, k), bool),
                       "mask": np.zeros((0, k), bool)}

    def _reserve(self, need: int) -> None:
        if need <= self.capacity:
            return
        size = max(need, int(self.capacity * self._GROWTH))
        if self.file_bytes and self.bytes_read:
            size = max(size, int(need / self.bytes_read * self.file_bytes * 1.02) + 1024)
        if self.max_sessions is not None:
            size = max(need, min(size, self.max_sessions))
        if not self.capacity:
            self.arrays = {name: np.zeros((size,) + a.shape[1:], a.dtype) for name, a in self.arrays.items()}
        else:
            for a in self.arrays.values():
                a.resize((size,) + a.shape[1:], refcheck=False)
        self.capacity = size

    def add(self, query_id, chunk: _Chunk, pair_id, doc_id, carry_clicks, nbytes: int):
        """Writes a chunk's sessions; ``pair_id`` ``None`` leaves the pairs to ``settle``."""
        if carry_clicks.size:
            self.arrays["clicks"][self.num - 1, carry_clicks] = True
        self.bytes_read += nbytes
        s = query_id.size
        if not s:
            return
        self._reserve(self.num + s)
        rows = chunk.rows + self.num
        self.arrays["query"][self.num:self.num + s] = query_id
        if pair_id is not None:
            self.arrays["pair"][rows, chunk.cols] = pair_id
        self.arrays["doc"][rows, chunk.cols] = doc_id
        self.arrays["mask"][rows, chunk.cols] = True
        self.arrays["clicks"][chunk.click_rows + self.num, chunk.click_cols] = True
        self.num += s

    def settle(self, vocab: Vocabulary, batch: list, known: tuple, counts: list, path, work: dict) -> None:
        """Turns the staged query and document indices of the sessions ``batch`` (``[(first row, end
        row)]``, one a chunk) into ids, then stages and settles their (query, document) pairs;
        ``counts`` gains the sessions with a new query and the positions with a new pair. ``work``
        holds the settles' buffers from one batch to the next (each settle's ids are read before the
        next settle)."""
        tables = vocab.tables
        query, doc, pair, mask = (self.arrays[name] for name in ("query", "doc", "pair", "mask"))
        query_ids = tables["queries"].settle(work)
        for r0, r1 in batch:
            q = query[r0:r1]
            q[:] = query_ids[q]
            counts[0] += int((q >= known[0]).sum())
        del query_ids  # a view of work's buffer: released, the next settle may grow it in place
        doc_ids = tables["docs"].settle(work)
        if vocab.num_docs >= _ID_LIMIT:
            raise ValueError(f"{path}: more than 2^31 - 1 distinct documents; the SessionLog ids are int32: split the "
                             "log.")
        position = 0
        for r0, r1 in batch:
            q, d, m = query[r0:r1], doc[r0:r1], mask[r0:r1]
            d[m] = doc_ids[d[m]]
            keys = pair_keys(np.repeat(q, m.sum(1)), d[m])
            unique, first, inverse = unique_first_inverse(keys)
            pair[r0:r1][m] = tables["pairs"].stage(unique, first + position)[inverse]
            position += keys.size
        del doc_ids
        pair_ids = tables["pairs"].settle(work)
        if vocab.num_pairs >= _ID_LIMIT:
            raise ValueError(f"{path}: more than 2^31 - 1 distinct pairs; the SessionLog ids are int32: split the log.")
        for r0, r1 in batch:
            p, m = pair[r0:r1], mask[r0:r1]
            p[m] = pair_ids[p[m]]
            counts[1] += int((p[m] >= known[2]).sum())

    def log(self, num_pairs, num_queries) -> SessionLog:
        for a in self.arrays.values():
            a.resize((self.num,) + a.shape[1:], refcheck=False)
        arrays, self.arrays = self.arrays, {}
        return SessionLog(arrays["query"], arrays["pair"], arrays["doc"], arrays["clicks"], arrays["mask"],
                          np.asarray(num_pairs, np.int32), np.asarray(num_queries, np.int32))


def read_click_log(path, *, format: str = "auto", vocabulary: Optional[Vocabulary] = None,
                   num_positions: int = DEFAULT_POSITIONS, max_sessions: Optional[int] = None,
                   chunk_bytes: int = CHUNK_BYTES) -> tuple[SessionLog, Vocabulary, ClickLogInfo]:
    """Reads a click log (formats and conventions in this module's docstring).

    Args:
      path: the log, plain or gzip/bzip2/xz-compressed.
      format: ``"auto"`` (from the first line), ``"wscd"``, ``"pyclick"`` or ``"tsv"``.
      vocabulary: the ids of an earlier log (a training log's): its ids are kept and new queries,
        documents and pairs get ids after them. ``None`` starts an empty one. Never modified.
      num_positions: ``K``, positions kept per page (10, as PyClick and CLAX).
      max_sessions: stop after this many sessions; ``None`` reads the whole file.
      chunk_bytes: bytes of text tokenised at once (memory per chunk is about 40 bytes per byte).

    Returns:
      ``(log, vocabulary, info)``: the ``SessionLog`` (``num_queries``/``num_pairs`` are the returned
      vocabulary's sizes), the vocabulary extended by this log (save it with ``Vocabulary.save`` and pass
      it to the next read), and the ``ClickLogInfo`` counts.

    Raises:
      ValueError: naming the file and line, for anything the format does not allow.
    """
    _check_args(num_positions, max_sessions, chunk_bytes, format)
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such click log.")
    if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
        raise ValueError(f"vocabulary must be a jaxrank.data.Vocabulary or None; got {type(vocabulary).__name__}.")
    format = detect_format(path) if format == "auto" else format
    vocab = Vocabulary() if vocabulary is None else vocabulary.copy()
    known = (vocab.num_queries, vocab.num_docs, vocab.num_pairs)
    state = _State(path, num_positions, max_sessions)
    parts = _Assembly(num_positions, tc.plain_size(path), max_sessions)
    tables, batch, positions, counts, work = vocab.tables, [], 0, [0, 0], {}
    for chunk, nbytes in _chunks(path, format, state, chunk_bytes):
        # ids are settled in batches (jaxrank.data.vocabulary.IdTable): until then the log holds each
        # query's and document's staging index
        if chunk.query.size:
            unique, first, inverse = unique_first_inverse(chunk.query)
            query_id = tables["queries"].stage(unique, first + parts.num)[inverse]
            unique, first, inverse = unique_first_inverse(chunk.docs)
            doc_id = tables["docs"].stage(unique, first + positions)[inverse]
            positions += chunk.docs.size
            batch.append((parts.num, parts.num + query_id.size))
        else:
            query_id = doc_id = np.zeros(0, np.int64)
        parts.add(query_id, chunk, None, doc_id, state.carry_clicks, nbytes)
        state.carry_clicks = np.zeros(0, np.int64)
        state.num += query_id.size
        if tables["queries"].settle_due or tables["docs"].settle_due:
            parts.settle(vocab, batch, known, counts, path, work)
            batch = []
    parts.settle(vocab, batch, known, counts, path, work)
    del work
    new_query_sessions, new_pair_positions = counts
    if not state.num:
        raise ValueError(f"{path}: no sessions (every page is empty); a click log needs at least one shown document.")
    log = parts.log(vocab.num_pairs, vocab.num_queries)
    info = ClickLogInfo(str(path), format, state.num, state.empty, state.truncated, state.ignored, *known,
                        vocab.num_queries - known[0], vocab.num_docs - known[1], vocab.num_pairs - known[2],
                        new_query_sessions, new_pair_positions)
    return log, vocab, info


def read_sessions_tsv_ids(path, *, chunk_bytes: int = CHUNK_BYTES) -> SessionLog:
    """A ``tsv`` log with the file's own ids (``jaxrank.data.sessions.read_sessions_tsv``)."""
    path = Path(path)
    first = tc.read_head(path).partition(b"\n")[0]
    match = _TSV_HEADER.match(first.strip())
    if not match:
        raise ValueError(f"{path}:1: expected the header '# jaxrank sessions: num_queries=Q num_pairs=P "
                         f"num_positions=K'; got {first.strip()[:80].decode('utf-8', 'replace')!r}.")
    num_queries, num_pairs, k = (int(g) for g in match.groups())
    if max(num_queries, num_pairs) > _ID_LIMIT:
        raise ValueError(f"{path}:1: num_queries={num_queries} or num_pairs={num_pairs} exceeds 2^31; ids are int32.")
    state = _State(path, k, None)
    parts = _Assembly(k, tc.plain_size(path), None)
    for chunk, nbytes in _chunks(path, "tsv", state, chunk_bytes):
        if chunk.docs.size and chunk.docs.max() >= _ID_LIMIT:
            raise ValueError(f"{path}: document id {int(chunk.docs.max())} is outside [0, 2^31); ids are int32.")
        parts.add(chunk.query, chunk, chunk.pairs, chunk.docs, np.zeros(0, np.int64), nbytes)
        state.num += chunk.query.size
    if not state.num:
        return SessionLog(np.zeros(0, np.int32), *(np.zeros((0, k), d) for d in (np.int32, np.int32, bool, bool)),
                          np.asarray(num_pairs, np.int32), np.asarray(num_queries, np.int32))
    return parts.log(num_pairs, num_queries)
