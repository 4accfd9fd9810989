"""Tests for ``jaxrank.data.click_log`` (the streaming click-log reader) and ``jaxrank.data.vocabulary``.

Expected values are worked out by hand from the small logs below, or come from a slow line-by-line
reader written here from the formats' descriptions (``_reference``), run on seeded logs read in
chunks small enough to cut every session."""

import bz2
import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxrank.data import Vocabulary, read_click_log, read_sessions_tsv, session_log, write_sessions_tsv

PYCLICK = ("98435_1\t11,12,13 : 12 , 12 , 99; 98435_1\t12,11,13 :; 7\t11,14 : 14  ;  98435_1\t11,12,13,15 : 11\n"
           "7\t14,11 :\n")


def test_pyclick_sessions_by_hand(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(PYCLICK)
    log, vocab, info = read_click_log(path, num_positions=3)
    assert info.format == "pyclick" and (info.num_sessions, info.num_truncated, info.num_ignored_clicks) == (5, 1, 1)
    assert vocab.queries.tolist() == [b"98435_1", b"7"] and vocab.docs.tolist() == [b"11", b"12", b"13", b"14"]
    assert log.query.tolist() == [0, 0, 1, 0, 1]
    assert log.doc.tolist() == [[0, 1, 2], [1, 0, 2], [0, 3, 0], [0, 1, 2], [3, 0, 0]]
    # pairs in order of first appearance: (q0,11) (q0,12) (q0,13) (q1,11) (q1,14)
    assert log.pair.tolist() == [[0, 1, 2], [1, 0, 2], [3, 4, 0], [0, 1, 2], [4, 3, 0]]
    assert log.clicks.astype(int).tolist() == [[0, 1, 0], [0, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 0]]
    assert log.mask.sum(1).tolist() == [3, 3, 2, 3, 2]
    assert (int(log.num_queries), int(log.num_pairs)) == (2, 5)


@pytest.mark.parametrize("shard_size", [1 << 20, 1])
def test_test_log_maps_into_training_ids(tmp_path, shard_size, monkeypatch):
    from jaxrank.data.vocabulary import IdTable

    monkeypatch.setattr(IdTable, "SHARD_SIZE", shard_size)  # 1: a shard a key, doubled at each new key
    (tmp_path / "train.txt").write_text(PYCLICK)
    _, train_vocab, _ = read_click_log(tmp_path / "train.txt", num_positions=3)
    saved = train_vocab.save(tmp_path / "train.vocab.npz")
    assert not list(tmp_path.glob(".*.tmp"))
    vocab = Vocabulary.load(saved)
    with gzip.open(tmp_path / "test.txt.gz", "wt") as f:
        f.write("7\t14,15 : 15\n9\t11:11\n98435_1\t13,12:\n")
    before = [vocab.queries, vocab.docs, vocab.pair_query, vocab.pair_doc]
    log, test_vocab, info = read_click_log(tmp_path / "test.txt.gz", vocabulary=vocab, num_positions=3)
    assert vocab.num_pairs == 5 and vocab.num_queries == 2  # the given vocabulary is untouched
    for want, got in zip(before, [vocab.queries, vocab.docs, vocab.pair_query, vocab.pair_doc]):
        np.testing.assert_array_equal(got, want)
    assert test_vocab.queries.tolist() == [b"98435_1", b"7", b"9"]
    assert log.query.tolist() == [1, 2, 0]
    # known pairs keep their ids; (7,15) (9,11) are appended as 5 and 6
    assert log.pair.tolist() == [[4, 5, 0], [6, 0, 0], [2, 1, 0]]
    assert (info.known_queries, info.known_pairs, info.new_queries, info.new_docs, info.new_pairs) == (2, 5, 1, 1, 2)
    assert (info.sessions_new_query, info.positions_new_pair) == (1, 2)
    assert (int(log.num_queries), int(log.num_pairs)) == (3, 7)
    assert test_vocab.pair_ids(["7", "9", "7"], ["15", "11", "12"]).tolist() == [5, 6, -1]


def test_vocabulary_load_rejects_other_files(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(2))
    with pytest.raises(ValueError, match="x.npz: not a saved jaxrank Vocabulary"):
        Vocabulary.load(tmp_path / "x.npz")


def _wscd_text(rng, num_lines):
    """A seeded WSCD log with every case: several sessions per SessionID, empty and long pages, clicks
    on other pages, repeated clicks and domains."""
    lines, sid, page = [], 0, []
    for _ in range(num_lines):
        u = rng.random()
        if u < 0.35 or not page:
            sid += rng.random() < 0.5
            page = [int(x) for x in rng.integers(0, 40, rng.integers(0, 14))]
            urls = [f"{x},{x % 3}" if rng.random() < 0.1 else str(x) for x in page]
            lines.append("\t".join([str(sid), str(int(rng.integers(0, 900))), "Q", str(int(rng.integers(0, 12))),
                                    str(int(rng.integers(0, 5)))] + urls))
        else:
            target = page[int(rng.integers(len(page)))] if page and rng.random() < 0.8 else int(rng.integers(0, 40))
            lines.append(f"{sid if rng.random() < 0.95 else sid + 7}\t{int(rng.integers(0, 900))}\tC\t{target}")
    return "\n".join(lines) + "\n"


def _reference(text, k):
    """Line-by-line WSCD reader: ``(query tokens, pages of URL tokens, clicked sets, ignored)``."""
    queries, pages, clicked, ignored, current = [], [], [], 0, None
    for line in text.splitlines():
        f = line.split("\t")
        if f[2] == "Q":
            urls = [t.split(",")[0] for t in f[5:]][:k]
            current = (f[0], len(pages)) if urls else (f[0], None)
            if urls:
                queries.append(f[3]), pages.append(urls), clicked.append(set())
        elif current is not None and current[0] == f[0] and current[1] is not None and f[3] in pages[current[1]]:
            clicked[current[1]].add(pages[current[1]].index(f[3]))
        else:
            ignored += 1
    return queries, pages, clicked, ignored


@pytest.mark.parametrize("chunk_bytes, compress, min_settle", [(64, True, 1 << 20), (1 << 20, True, 1 << 20),
                                                              (64, False, 1 << 20), (4096, False, 1 << 20),
                                                              (64, False, 1), (256, True, 3)])
def test_wscd_matches_a_line_by_line_reader(tmp_path, chunk_bytes, compress, min_settle, monkeypatch):
    """Compressed, the log's arrays grow chunk by chunk; plain, they are sized from the file and the
    first chunk (and grown when that under-estimates). A small ``min_settle`` settles the id tables
    many times, over shards of 4 keys that double as the tables grow."""
    from jaxrank.data.vocabulary import IdTable

    monkeypatch.setattr(IdTable, "MIN_SETTLE", min_settle)
    if min_settle < 1 << 20:
        monkeypatch.setattr(IdTable, "SHARD_SIZE", 4)
    text = _wscd_text(np.random.default_rng(3), 600)
    path = tmp_path / ("clicks.txt.bz2" if compress else "clicks.txt")
    path.write_bytes(bz2.compress(text.encode()) if compress else text.encode())
    log, vocab, info = read_click_log(path, num_positions=5, chunk_bytes=chunk_bytes)
    queries, pages, clicked, ignored = _reference(text, 5)
    assert info.format == "wscd" and info.num_sessions == len(pages) and info.num_ignored_clicks == ignored
    assert [vocab.queries[q].decode() for q in log.query] == queries
    assert [t.decode() for t in vocab.queries] == list(dict.fromkeys(queries))  # ids in order of first appearance
    assert [t.decode() for t in vocab.docs] == list(dict.fromkeys(t for page in pages for t in page))
    for s, (page, clicks) in enumerate(zip(pages, clicked)):
        n = len(page)
        assert log.mask[s].sum() == n
        assert [vocab.docs[d].decode() for d in log.doc[s, :n]] == page
        assert set(np.flatnonzero(log.clicks[s]).tolist()) == clicks
        keys = list(zip(vocab.pair_query[log.pair[s, :n]].tolist(), vocab.pair_doc[log.pair[s, :n]].tolist()))
        assert keys == [(log.query[s], d) for d in log.doc[s, :n]]
    pair_ids = {}  # dense, in order of first appearance, one id a (query, document)
    expected = [[pair_ids.setdefault((q, d), len(pair_ids)) for d in page] for q, page in zip(queries, pages)]
    assert [log.pair[s, :len(page)].tolist() for s, page in enumerate(pages)] == expected
    assert vocab.num_pairs == len(pair_ids)
    first, _, _ = read_click_log(path, num_positions=5, chunk_bytes=chunk_bytes, max_sessions=50)
    for a, b in zip(first[:5], log[:5]):
        np.testing.assert_array_equal(a, b[:50])


def test_tsv_through_the_vocabulary(tmp_path):
    log = session_log([0, 1, 0], [[0, 1, 2], [3, 4, 0], [1, 0, 2]], [[10, 11, 12], [20, 21, 0], [11, 10, 12]],
                      [[0, 1, 0], [1, 0, 0], [0, 0, 0]], [[1, 1, 1], [1, 1, 0], [1, 1, 1]])
    path = write_sessions_tsv(tmp_path / "log.tsv", log)
    back, vocab, info = read_click_log(path, num_positions=3)
    assert info.format == "tsv" and back.clicks.tolist() == np.asarray(log.clicks).tolist()
    assert vocab.docs[back.doc].astype(int)[back.mask].tolist() == np.asarray(log.doc)[log.mask].tolist()
    assert back.pair.tolist() == [[0, 1, 2], [3, 4, 0], [1, 0, 2]]
    same = read_sessions_tsv(path)
    assert same.doc.tolist() == np.asarray(log.doc).tolist()


def test_max_sessions_stops_early(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(PYCLICK)
    log, _, info = read_click_log(path, num_positions=3, max_sessions=2)
    assert info.num_sessions == 2 and log.clicks.astype(int).tolist() == [[0, 1, 0], [0, 0, 0]]


WSCD_OK = "1\t0\tQ\t5\t1\t50\t60\n1\t3\tC\t60\n"


@pytest.mark.parametrize("text, match", [
    (WSCD_OK + "2\t0\tQ\t98435_1\t1\t5\n", r":3: QueryID must be an integer in \[0, 10\^18\) written in digits; got "
                                           "'98435_1'"),
    (WSCD_OK + "2\t0\tQ\t7\t1\t5\t-1\n", r":3: URLID must be an integer .*got '-1'"),
    (WSCD_OK + "2\t0\tQ\t7\t1\t5\t100000000000000000000\n", r":3: URLID must be an integer in \[0, 10\^18\)"),
    (WSCD_OK + "2\t0\tC\t+5\n", r":3: URLID must be an integer .*got '\+5'"),
    (WSCD_OK + "2\t0\tX\t5\n", r":3: unknown action 'X'"),
    (WSCD_OK + "2\t0\tQ\t7\n", r":3: a Q line needs SessionID TimePassed Q QueryID RegionID"),
    (WSCD_OK + "2\t0\n", r":3: expected 'SessionID TimePassed Q\|C ...' with at least 4"),
    (WSCD_OK + "2\t0\tQ\t7\t1\n2\t1\tC\t5\t6\n", r":4: a C line is"),
    (WSCD_OK + "2\t0\tQ\t7\t1\t5", r":3: the last line ends without a record end"),
    ("\ufeff" + WSCD_OK, r":1: the file starts with a UTF-8 byte-order mark"),
    ("", r"clicks.txt: the file is empty"),
    ("\n\n", r"clicks.txt: the file is empty"),
    ("1\t0\tQ\t5\t1\n", r"clicks.txt: no sessions"),
])
def test_wscd_bad_input_names_file_and_line(tmp_path, text, match):
    path = tmp_path / "clicks.txt"
    path.write_bytes(text.encode())
    with pytest.raises(ValueError, match=r"clicks.txt" + match if match.startswith(":") else match):
        read_click_log(path, format="wscd", chunk_bytes=16)


@pytest.mark.parametrize("text, match", [
    ("q\t1,2\n", r":1: a PyClick session is"),
    ("q\t1:1\nq\t1,,2:\n", r":2: an empty document token"),
    ("q\t1:1,,2\n", r":1: an empty clicked-document token"),
    ("q\t1:1;\tx:\n", r":1: a session with an empty query token"),
    ("q\t1:1\nq\t2:", r":2: the last line ends without a record end"),
])
def test_pyclick_bad_input_names_file_and_line(tmp_path, text, match):
    path = tmp_path / "log.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match="log.txt" + match):
        read_click_log(path, format="pyclick")


def test_corrupt_gzip_names_the_file(tmp_path):
    data = gzip.compress((WSCD_OK * 2000).encode())
    path = tmp_path / "clicks.txt.gz"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="clicks.txt.gz: cannot read the compressed file"):
        read_click_log(path)


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="format must be 'auto' or one of"):
        read_click_log(__file__, format="csv")
    with pytest.raises(ValueError, match="num_positions must be an int >= 1; got 0"):
        read_click_log(__file__, num_positions=0)
    with pytest.raises(ValueError, match=r"test_data_click_log.py:1: cannot tell the click-log format"):
        read_click_log(__file__)


@pytest.mark.parametrize("shard_size", [1 << 20, 8])
def test_id_table_keeps_first_appearance_ids_across_merges_and_kinds(shard_size, monkeypatch):
    from jaxrank.data.vocabulary import IdTable

    monkeypatch.setattr(IdTable, "SHARD_SIZE", shard_size)

    rng = np.random.default_rng(0)
    table, reference = IdTable(np.zeros(0, np.int64)), {}
    batches = [rng.integers(0, 60_000, 5_000) for _ in range(12)] + [np.array([b"x_1", b"7", b"0123"])]
    batches += [rng.integers(0, 60_000, 3_000), np.array([b"a_token_of_19_bytes", b"x_1"])]
    batches += [rng.integers(0, 60_000, 300)]
    for batch in batches:
        unique, first = np.unique(batch, return_index=True)
        got = table.ids(unique, first)
        for value in unique[np.argsort(first, kind="stable")].tolist():
            reference.setdefault(str(value.decode() if isinstance(value, bytes) else value), len(reference))
        assert got.tolist() == [reference[str(v.decode() if isinstance(v, bytes) else v)] for v in unique.tolist()]
    assert table.tokens[reference["0123"]] == b"0123" and table.tokens[reference["7"]] == b"7"
    assert len(table) == len(reference)


@pytest.mark.parametrize("values", [np.random.default_rng(1).integers(0, 50, 400),
                                    np.array([b"b", b"a_1", b"b", b"", b"a_1", b"c"]), np.zeros(0, np.int64)])
def test_unique_first_inverse_is_numpys_unique(values):
    from jaxrank.data.vocabulary import unique_first_inverse

    unique, first, inverse = unique_first_inverse(values)
    expected = np.unique(values, return_index=True, return_inverse=True)
    for got, want in zip((unique, first, inverse), expected):
        np.testing.assert_array_equal(got, want.reshape(-1))


@pytest.mark.parametrize("settle_every, insert_block, shard_size", [(1, 1 << 20, 1 << 20), (7, 1 << 20, 1 << 20),
                                                                    (100, 1 << 20, 1 << 20), (7, 50, 1 << 20),
                                                                    (7, 50, 300)])
def test_staged_chunks_settle_to_first_appearance_ids_in_twelve_bytes_a_key(settle_every, insert_block, shard_size,
                                                                            monkeypatch):
    from jaxrank.data.vocabulary import IdTable, unique_first_inverse

    monkeypatch.setattr(IdTable, "INSERT_BLOCK", insert_block)
    monkeypatch.setattr(IdTable, "SHARD_SIZE", shard_size)

    table, reference, position = IdTable(np.zeros(0, np.int64)), {}, 0
    rng = np.random.default_rng(2)
    chunks = [rng.integers(0, 40_000, 3_000) for _ in range(40)]
    staged, got = [], []
    for i, chunk in enumerate(chunks):
        unique, first, inverse = unique_first_inverse(chunk)
        staged.append(table.stage(unique, first + position)[inverse])
        position += chunk.size
        if (i + 1) % settle_every == 0 or i + 1 == len(chunks):
            ids = table.settle()
            got += [ids[index] for index in staged]
            staged = []
    for value in np.concatenate(chunks).tolist():
        reference.setdefault(value, len(reference))
    assert np.concatenate(got).tolist() == [reference[v] for v in np.concatenate(chunks).tolist()]
    assert table.nbytes == 12 * len(table) and table.staged == 0


@pytest.mark.parametrize("block", [1, 3, 64])
def test_in_place_insert_is_numpys_insert(block):
    from jaxrank.data.vocabulary import _insert_sorted

    rng = np.random.default_rng(3)
    for n, k in [(0, 4), (20, 0), (50, 7), (50, 60), (200, 30)]:
        keys = np.sort(rng.choice(1000, n, replace=False)).astype(np.int64)
        new = np.sort(rng.choice(np.setdiff1d(np.arange(-5, 1005), keys), k, replace=False)).astype(np.int64)
        pos = np.searchsorted(keys, new)
        want_keys, want_ids = np.insert(keys, pos, new), np.insert(np.arange(n, dtype=np.int32), pos, -1 - np.arange(k))
        run, ids = keys.copy(), np.arange(n, dtype=np.int32)
        scratch = np.empty(block, np.int64), np.empty(block, np.int32), np.empty(block + k, bool)
        _insert_sorted(run, ids, pos, new, -1 - np.arange(k), scratch)
        np.testing.assert_array_equal(run, want_keys)
        np.testing.assert_array_equal(ids, want_ids)


def test_a_batch_staging_integers_then_strings_settles_as_bytes():
    from jaxrank.data.vocabulary import IdTable, unique_first_inverse

    table = IdTable(np.array([5, 17]))
    first_chunk = np.array([17, 3, 3, 9])
    second_chunk = np.array([b"x_1", b"9", b"05"])
    u, f, inv = unique_first_inverse(first_chunk)
    a = table.stage(u, f)[inv]
    u, f, inv = unique_first_inverse(second_chunk)
    b = table.stage(u, f + first_chunk.size)[inv]
    ids = table.settle()
    # 5, 17 known; then 3, 9 (first chunk), x_1, 05 (second): 9 is the same token in both kinds
    assert ids[a].tolist() == [1, 2, 2, 3] and ids[b].tolist() == [4, 3, 5]
    assert table.tokens.tolist() == [b"5", b"17", b"3", b"9", b"x_1", b"05"]


@pytest.mark.parametrize("shard_size", [1 << 20, 2])
def test_stages_out_of_order_settle_in_order_of_first(shard_size, monkeypatch):
    from jaxrank.data.vocabulary import IdTable

    monkeypatch.setattr(IdTable, "SHARD_SIZE", shard_size)
    table = IdTable(np.array([40, 41]))
    a = table.stage(np.array([7, 40, 50]), np.array([12, 10, 11]))  # appear at 10, 11, 12 ...
    b = table.stage(np.array([3, 7, 9]), np.array([2, 0, 1]))  # ... after 0, 1, 2
    ids = table.settle()
    # 40, 41 known; then 7 (first at 0), 9, 3, 50
    assert ids[a].tolist() == [2, 0, 5] and ids[b].tolist() == [4, 2, 3]
    assert table.keys.tolist() == [40, 41, 7, 9, 3, 50]
    assert table.find(np.array([3, 50, 8, 41])).tolist() == [4, 5, -1, 1]


def test_tsv_errors_count_skipped_comment_and_blank_lines(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_text("# jaxrank sessions: num_queries=2 num_pairs=5 num_positions=3\n0\t1\t0\t1\n# note\n\n"
                    "1\t1,x\t0,1\t00\n")
    for read in (read_sessions_tsv, read_click_log):
        with pytest.raises(ValueError, match=r"log.tsv:5: ids must be integers"):
            read(path)


def test_gzip_wscd_with_crlf_through_read_yandex(tmp_path):
    from jaxrank.data import read_yandex

    path = tmp_path / "clicks.txt.gz"
    path.write_bytes(gzip.compress(b"1\t0\tQ\t5\t1\t50\t60\r\n1\t3\tC\t60\r\n"))
    log, ids = read_yandex(path)
    assert log.doc[0, :2].tolist() == [50, 60] and log.clicks[0, :2].tolist() == [False, True]
    assert ids.query_ids.tolist() == [5] and ids.pair_doc.tolist() == [50, 60]


def test_reading_a_click_log_does_not_import_jax(tmp_path):
    """A preprocessing worker pays for the reader alone: no JAX import (about 130 MB and half a second)."""
    path = tmp_path / "log.txt"
    path.write_text("0\t0\tQ\t7\t1\t11\t12\n0\t5\tC\t12\n")
    code = ("import sys; from jaxrank.data import read_click_log, Vocabulary; log, vocab, info = read_click_log(sys.argv[1]);"
            " assert log.clicks.tolist() == [[False, True] + [False] * 8], log.clicks;"
            " print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"



def test_more_distinct_documents_or_pairs_than_int32_ids_is_an_error(tmp_path, monkeypatch):
    from jaxrank.data import click_log

    path = tmp_path / "log.txt"
    path.write_text("q1\ta,b,c : a\nq2\ta,d : \n")
    monkeypatch.setattr(click_log, "_ID_LIMIT", 4)
    with pytest.raises(ValueError, match=r"log.txt: more than 2\^31 - 1 distinct documents"):
        read_click_log(path)
    monkeypatch.setattr(click_log, "_ID_LIMIT", 5)
    with pytest.raises(ValueError, match=r"log.txt: more than 2\^31 - 1 distinct pairs"):
        read_click_log(path)


def test_settle_buffers_grow_in_place_and_spare_a_held_view():
    from jaxrank.data.vocabulary import _buffer

    work = {}
    buffer = _buffer(work, "out", 10, np.int64)
    kept = id(work["out"])
    del buffer
    held = _buffer(work, "out", 20, np.int64)  # nothing else refers to it: grown in place
    assert id(work["out"]) == kept and work["out"].shape == (20,)
    held[:] = 7
    other = _buffer(work, "out", 40, np.int64)  # held is still read: a new buffer, held keeps its memory
    other[:] = -1
    assert id(work["out"]) != kept and held.tolist() == [7] * 20 and other.shape == (40,)


@pytest.mark.parametrize("shard_size", [1 << 20, 16])
def test_tables_settled_in_turn_through_one_work_dict(shard_size, monkeypatch):
    from jaxrank.data.vocabulary import IdTable, unique_first_inverse

    monkeypatch.setattr(IdTable, "SHARD_SIZE", shard_size)
    rng = np.random.default_rng(4)
    tables, references, work = [IdTable(np.zeros(0, np.int64)) for _ in range(2)], [{}, {}], {}
    for step in range(5):
        for table, reference in zip(tables, references):
            chunks = [rng.integers(0, 3_000, 200 * (step + 1)) for _ in range(3)]
            staged, position = [], 0
            for chunk in chunks:
                unique, first, inverse = unique_first_inverse(chunk)
                staged.append(table.stage(unique, first + position)[inverse])
                position += chunk.size
            ids = table.settle(work)
            for value in np.concatenate(chunks).tolist():
                reference.setdefault(value, len(reference))
            assert np.concatenate([ids[index] for index in staged]).tolist() == [
                reference[v] for v in np.concatenate(chunks).tolist()]
