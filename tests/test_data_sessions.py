"""Tests for ``jaxrank.data.sessions`` (the session-log container and its text format) and
``jaxrank.data.yandex`` (the WSCD 2012 click-log reader).

The Yandex expectations are worked out by hand from the small logs written below."""

import numpy as np
import pytest

from jaxrank.data import read_sessions_tsv, read_yandex, session_log, take_sessions, write_sessions_tsv


def _log():
    return session_log(
        query=[0, 1, 0],
        pair=[[0, 1, 2], [3, 4, 0], [1, 0, 2]],
        doc=[[10, 11, 12], [20, 21, 0], [11, 10, 12]],
        clicks=[[0, 1, 0], [1, 0, 0], [0, 0, 0]],
        mask=[[1, 1, 1], [1, 1, 0], [1, 1, 1]],
    )


def test_session_log_sizes_dtypes_and_padding():
    log = session_log([0], [[2, 7]], [[5, 9]], [[True, False]], [[True, False]], num_pairs=4)
    assert (log.num_sessions, log.num_positions, int(log.num_pairs), int(log.num_queries)) == (1, 2, 4, 1)
    assert log.pair.dtype == np.int32 and log.clicks.dtype == bool
    assert log.pair.tolist() == [[2, 0]] and log.doc.tolist() == [[5, 0]]  # padding is zeroed


@pytest.mark.parametrize("mask, match", [
    ([[1, 0, 1]], "not a non-empty prefix"),
    ([[0, 0, 0]], "not a non-empty prefix"),
])
def test_session_log_rejects_bad_masks(mask, match):
    with pytest.raises(ValueError, match=match):
        session_log([0], [[0, 1, 2]], [[0, 1, 2]], [[0, 0, 0]], mask)


def test_session_log_rejects_clicks_on_padding_and_bad_ids():
    with pytest.raises(ValueError, match="click on a position it does not show"):
        session_log([0], [[0, 1]], [[0, 1]], [[0, 1]], [[1, 0]])
    with pytest.raises(ValueError, match="pair id -1 is outside"):
        session_log([0], [[0, -1]], [[0, 1]], [[0, 0]], [[1, 1]])
    with pytest.raises(ValueError, match="num_pairs must be an int >= the largest id \\+ 1 = 2"):
        session_log([0], [[0, 1]], [[0, 1]], [[0, 0]], [[1, 1]], num_pairs=1)


def test_tsv_round_trip(tmp_path):
    log = _log()
    path = write_sessions_tsv(tmp_path / "log.tsv", log)
    assert path.read_text().splitlines()[:3] == [
        "# jaxrank sessions: num_queries=2 num_pairs=5 num_positions=3",
        "0\t10,11,12\t0,1,2\t010",
        "1\t20,21\t3,4\t10",
    ]
    back = read_sessions_tsv(path)
    for a, b in zip(back, log):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary


def _python_lines(log) -> str:
    """The text format written by a plain loop over sessions (the reference for the vectorised writer)."""
    lines = [f"# jaxrank sessions: num_queries={int(log.num_queries)} num_pairs={int(log.num_pairs)} "
             f"num_positions={log.mask.shape[1]}"]
    for q, docs, pairs, clicks, mask in zip(log.query, log.doc, log.pair, log.clicks, log.mask):
        n = int(mask.sum())
        lines.append(f"{q}\t{','.join(str(d) for d in docs[:n])}\t{','.join(str(p) for p in pairs[:n])}\t"
                     f"{''.join('1' if c else '0' for c in clicks[:n])}")
    return "\n".join(lines) + "\n"


def test_tsv_writer_is_the_plain_loop_and_reads_back_across_chunks(tmp_path, monkeypatch):
    """Ids of every digit count (0, 9, 10, 2^31 - 2), sessions of 1 to K positions, written in chunks of
    7 sessions: the bytes of a loop over sessions, and both readers give the log back."""
    from jaxrank.data import read_click_log
    from jaxrank.data import sessions

    rng = np.random.default_rng(5)
    num, k = 40, 6
    lengths = rng.integers(1, k + 1, num)
    mask = np.arange(k) < lengths[:, None]
    ids = np.array([0, 9, 10, 99, 100, 12345, 2**31 - 2])  # num_pairs = largest + 1 is an int32
    pair = np.where(mask, rng.choice(ids, (num, k)), 0)
    doc = np.where(mask, rng.integers(0, 10**rng.integers(1, 10, (num, k))), 0)
    doc[0, 0] = 2**31 - 1
    log = session_log(rng.choice(ids, num), pair, doc, mask & (rng.random((num, k)) < 0.4), mask)
    monkeypatch.setattr(sessions, "_WRITE_CHUNK", 7)
    path = write_sessions_tsv(tmp_path / "log.tsv", log)
    assert path.read_text() == _python_lines(log)
    back = read_sessions_tsv(path)
    for a, b in zip(back, log):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    through, vocab, _ = read_click_log(path, num_positions=k)
    np.testing.assert_array_equal(through.clicks, log.clicks)
    np.testing.assert_array_equal(vocab.docs[through.doc].astype(np.int64)[through.mask], log.doc[log.mask])


def test_tsv_writer_text_of_negative_ids():
    from jaxrank.data.sessions import _int_text

    chars, shown = _int_text(np.array([-2**31, -1, 0, 7, -10, 2**31 - 1]))
    assert [bytes(c[m]).decode() for c, m in zip(chars, shown)] == ["-2147483648", "-1", "0", "7", "-10",
                                                                     "2147483647"]


@pytest.mark.parametrize("line, match", [
    ("0\t1,2\t0,1", "expected 4 tab-separated fields"),
    ("0\t1,x\t0,1\t00", "ids must be integers"),
    ("0\t1,2\t0,1\t0", "as many documents, pairs and 0/1 click flags"),
    ("0\t1,2\t0,1\t0a", "as many documents, pairs and 0/1 click flags"),
    ("0\t1,2,3,4\t0,1,2,3\t0000", "4 positions but the header says num_positions=3"),
    ("0\t1,2\t0,9\t00", "outside the header's"),
])
def test_tsv_reader_names_file_and_line(tmp_path, line, match):
    path = tmp_path / "bad.tsv"
    path.write_text("# jaxrank sessions: num_queries=1 num_pairs=5 num_positions=3\n0\t1\t0\t1\n" + line + "\n")
    with pytest.raises(ValueError, match=f"bad.tsv:3: .*{match}"):
        read_sessions_tsv(path)
    path.write_text("0\t1\t0\t1\n")
    with pytest.raises(ValueError, match="bad.tsv:1: expected the header"):
        read_sessions_tsv(path)


def test_take_sessions_keeps_id_spaces():
    part = take_sessions(_log(), np.array([2, 0]))
    assert part.query.tolist() == [0, 0] and int(part.num_pairs) == 5 and part.clicks[1].tolist() == [0, 1, 0]


YANDEX = "\n".join([
    "7\t0\tQ\t100\t3\t55\t66\t77",
    "7\t5\tC\t66",
    "7\t9\tC\t66",  # a repeated click counts once
    "7\t12\tQ\t200\t3\t66,4\t88,4",  # URL tokens with a domain
    "7\t14\tC\t55",  # not on the current page: ignored
    "7\t15\tC\t88",
    "8\t0\tQ\t100\t1\t77\t55\t66\t99",  # longer than num_positions=3: truncated
    "8\t3\tC\t99",  # the truncated URL: ignored
    "8\t4\tC\t55",
    "9\t0\tQ\t300\t1",  # an empty page: dropped
    "9\t1\tC\t55",  # its click: ignored
    "",
])


def test_yandex_reader(tmp_path):
    path = tmp_path / "clicks.txt"
    path.write_text(YANDEX)
    log, ids = read_yandex(path, num_positions=3)
    assert (ids.num_empty, ids.num_truncated, ids.num_ignored_clicks) == (1, 1, 3)
    assert ids.query_ids.tolist() == [100, 200]
    assert log.query.tolist() == [0, 1, 0]
    assert log.doc.tolist() == [[55, 66, 77], [66, 88, 0], [77, 55, 66]]
    assert log.mask.tolist() == [[True] * 3, [True, True, False], [True] * 3]
    assert log.clicks.tolist() == [[False, True, False], [False, True, False], [False, True, False]]
    # pairs in increasing (query, URL) order: (100,55) (100,66) (100,77) (200,66) (200,88)
    assert log.pair.tolist() == [[0, 1, 2], [3, 4, 0], [2, 0, 1]]
    assert ids.pair_query.tolist() == [0, 0, 0, 1, 1] and ids.pair_doc.tolist() == [55, 66, 77, 66, 88]
    assert (int(log.num_pairs), int(log.num_queries)) == (5, 2)
    first, _ = read_yandex(path, num_positions=3, max_sessions=2)
    assert first.num_sessions == 2 and first.clicks.tolist() == log.clicks[:2].tolist()


@pytest.mark.parametrize("line, match", [
    ("7\t0\tQ\t100", "at least 4 tab-separated fields|a Q line needs"),
    ("7\t0\tQ\tabc\t1\t5", "QueryID must be an integer"),
    ("7\t0\tQ\t1\t1\t5x", "URLID must be an integer"),
    ("7\t0\tC\t5\t6", "a C line is"),
    ("7\t0\tX\t5", "unknown action 'X'"),
    ("7\t0", "at least 4 tab-separated fields"),
])
def test_yandex_malformed_line_names_file_and_line(tmp_path, line, match):
    path = tmp_path / "clicks.txt"
    path.write_text("1\t0\tQ\t1\t1\t5\t6\n" + line + "\n")
    with pytest.raises(ValueError, match=f"clicks.txt:2: .*({match})"):
        read_yandex(path)
