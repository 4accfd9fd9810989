"""Tests for ``jaxrank.data.svmlight`` (``parse_svmlight``).

* Parity: every real file parses to exactly the dense matrix, labels and qids that
  ``sklearn.datasets.load_svmlight_file`` gives (an independent parser); LightGBM files (no qid)
  get qids whose runs are the ``.query`` group sizes.
* Docids: ``keep_docids=True`` matches the ``#docid = X`` comments read here with plain string ops.
* Bad input: every malformed file raises ``ValueError`` naming the file, ``line N`` and the problem.
"""

import gzip
import itertools
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_svmlight_file

from jaxrank.data import parse_svmlight
from jaxrank.data import svmlight

SAMPLE = Path(__file__).resolve().parent / "data" / "MQ2008-mini" / "Fold1"
SAMPLE_FILES = {"train": "train.txt.gz", "vali": "vali.txt", "test": "test.txt.gz"}
# tests/data/README.md: (queries, lines, qids) of each sample file.
SAMPLE_COUNTS = {
    "train": (4, 32, [10002, 10032, 10035, 10036]),
    "vali": (2, 23, [15928, 15948]),
    "test": (2, 69, [18219, 18230]),
}


def _read_lines(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read().split("\n")


def _runs(values):
    """Run lengths of consecutive equal values (independent of jaxrank.query_lengths)."""
    return [len(list(group)) for _, group in itertools.groupby(list(values))]


def _assert_sklearn_parity(path):
    ours = parse_svmlight(path)
    X, y, qid = load_svmlight_file(str(path), query_id=True)
    assert ours.features.dtype == np.float32 and ours.labels.dtype == np.float32
    assert ours.qids.dtype == np.int64
    assert ours.features.shape == X.shape
    np.testing.assert_array_equal(ours.features, X.toarray().astype(np.float32))  # the float64 value, rounded once
    np.testing.assert_array_equal(ours.labels, y.astype(np.float32))
    np.testing.assert_array_equal(ours.qids, qid)
    assert ours.docids is None
    return ours


# --------------------------------------------------------------------------------------------
# Parity with sklearn on real files
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", list(SAMPLE_FILES))
def test_sample_parity_with_sklearn(split):
    path = SAMPLE / SAMPLE_FILES[split]
    ours = _assert_sklearn_parity(path)
    num_queries, num_lines, qids = SAMPLE_COUNTS[split]
    assert ours.features.shape == (num_lines, 46)
    assert list(dict.fromkeys(ours.qids.tolist())) == qids
    assert len(_runs(ours.qids)) == num_queries


@pytest.mark.parametrize("split", ["train", "vali", "test"])
@pytest.mark.parametrize("fold", [1, 2, 3, 4, 5])
def test_mq2008_parity_with_sklearn(shared_data, fold, split):
    ours = _assert_sklearn_parity(shared_data / "MQ2008" / f"Fold{fold}" / f"{split}.txt.gz")
    assert ours.features.shape[1] == 46
    assert set(np.unique(ours.labels)) <= {0.0, 1.0, 2.0}


@pytest.mark.slow
@pytest.mark.parametrize("part", [1, 2, 3, 4, 5])
def test_mq2008_partition_parity_with_sklearn(shared_data, part):
    _assert_sklearn_parity(shared_data / "MQ2008" / f"S{part}.txt.gz")


def test_mslr_subset_parity_with_sklearn(shared_data):
    ours = _assert_sklearn_parity(shared_data / "MSLR-WEB_Fold1_subset" / "msn1.fold1.train.5k.txt.gz")
    assert ours.features.shape == (5000, 136)
    assert len(_runs(ours.qids)) == 43


@pytest.mark.parametrize("split,num_queries,num_docs", [("train", 201, 3005), ("test", 50, 768)])
def test_lightgbm_parity_with_sklearn_and_query_file(shared_data, split, num_queries, num_docs):
    folder = shared_data / "LightGBM_lambdarank"
    path = folder / f"rank.{split}.gz"
    ours = parse_svmlight(path)  # default group file: rank.<split>.query
    X, y = load_svmlight_file(str(path))
    assert ours.features.shape == X.shape == (num_docs, 300)
    np.testing.assert_array_equal(ours.features, X.toarray().astype(np.float32))
    np.testing.assert_array_equal(ours.labels, y.astype(np.float32))
    sizes = [int(s) for s in (folder / f"rank.{split}.query").read_text().split()]
    assert len(sizes) == num_queries and sum(sizes) == num_docs
    assert _runs(ours.qids) == sizes
    assert len(np.unique(ours.qids)) == num_queries  # one distinct id per group


def test_lightgbm_explicit_query_file(shared_data, tmp_path):
    folder = shared_data / "LightGBM_lambdarank"
    copy = tmp_path / "renamed.gz"
    shutil.copyfile(folder / "rank.test.gz", copy)  # no renamed.query beside it
    ours = parse_svmlight(copy, query_file=folder / "rank.test.query")
    sizes = [int(s) for s in (folder / "rank.test.query").read_text().split()]
    assert _runs(ours.qids) == sizes


# --------------------------------------------------------------------------------------------
# Docids
# --------------------------------------------------------------------------------------------


def _docids_from_text(path):
    docids = []
    for line in _read_lines(path):
        if line.strip() and not line.lstrip().startswith("#"):
            docids.append(line.split("#docid = ")[1].split()[0])
    return docids


@pytest.mark.parametrize("split", list(SAMPLE_FILES))
def test_sample_docids(split):
    path = SAMPLE / SAMPLE_FILES[split]
    ours = parse_svmlight(path, keep_docids=True)
    expected = _docids_from_text(path)
    assert ours.docids.shape == (len(expected),)
    assert ours.docids.tolist() == expected
    # The same arrays as without docids.
    plain = parse_svmlight(path)
    np.testing.assert_array_equal(ours.features, plain.features)
    assert plain.docids is None


def test_sample_docids_spot_checks():
    # Read by eye from tests/data/MQ2008-mini/Fold1/train.txt.gz (first two lines).
    ours = parse_svmlight(SAMPLE / "train.txt.gz", keep_docids=True)
    assert ours.docids[0] == "GX008-86-4444840"
    assert ours.docids[1] == "GX037-06-11625428"
    lines = [ln for ln in _read_lines(SAMPLE / "train.txt.gz") if ln]
    for i in (0, 7, 8, 31):
        assert f"#docid = {ours.docids[i]} " in lines[i]
        assert lines[i].startswith(f"{int(ours.labels[i])} qid:{ours.qids[i]} ")


def test_mq2008_docids(shared_data):
    path = shared_data / "MQ2008" / "Fold1" / "vali.txt.gz"
    ours = parse_svmlight(path, keep_docids=True)
    lines = [ln for ln in _read_lines(path) if ln]
    assert len(lines) == ours.docids.size == 2707
    for i in (0, 1, 1000, 2706):
        docid = lines[i].split("#docid = ")[1].split(" ")[0]
        assert docid.startswith("GX")
        assert ours.docids[i] == docid
    assert ours.docids.tolist() == _docids_from_text(path)


def test_docids_without_docid_comment(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("0 qid:1 1:0.5 # just a note \n1 qid:1 1:0.7\n2 qid:1 1:0.1 #docid = D3 inc = 1\n")
    ours = parse_svmlight(path, keep_docids=True)
    assert ours.docids.tolist() == ["just a note", "", "D3"]


# --------------------------------------------------------------------------------------------
# Small well-formed files
# --------------------------------------------------------------------------------------------


def test_small_file_values(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_text(
        "# header comment\n"
        "\n"
        "2 qid:7 1:0.5 3:-1.25e1 #docid = a\n"
        "0 qid:7 2:3\n"
        "1.5 qid:9\n"  # a document without features
        "   \n"
        "0 qid:9 3:1 1:2\n"  # indices out of order
    )
    ours = parse_svmlight(path)
    np.testing.assert_array_equal(
        ours.features, [[0.5, 0.0, -12.5], [0.0, 3.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 1.0]]
    )
    np.testing.assert_array_equal(ours.labels, [2.0, 0.0, 1.5, 0.0])
    np.testing.assert_array_equal(ours.qids, [7, 7, 9, 9])


def test_num_features_pads_and_checks(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_text("0 qid:1 1:0.5\n1 qid:1 2:0.25\n")
    ours = parse_svmlight(path, num_features=5)
    assert ours.features.shape == (2, 5)
    np.testing.assert_array_equal(ours.features[:, 2:], 0.0)
    _assert_bad(path, 2, "feature index 2", "num_features=1", num_features=1)


def test_lightgbm_gz_default_query_file(tmp_path):
    path = tmp_path / "lgb.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("0 1:0.5\n1 2:0.5\n2 1:0.1\n0 3:1\n1 1:1\n")
    (tmp_path / "lgb.txt.query").write_text("2\n3\n")
    ours = parse_svmlight(path)
    assert _runs(ours.qids) == [2, 3]
    assert ours.features.shape == (5, 3)


def test_crlf_line_endings(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"0 qid:1 1:0.5\r\n1 qid:1 1:0.25 #docid = x\r\n")
    ours = parse_svmlight(path, keep_docids=True)
    np.testing.assert_array_equal(ours.features, [[0.5], [0.25]])
    assert ours.docids.tolist() == ["", "x"]


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _assert_bad(path, lineno, *words, **kwargs):
    with pytest.raises(ValueError) as info:
        parse_svmlight(path, **kwargs)
    message = str(info.value)
    assert str(path) in message, message
    if lineno is not None:
        assert re.search(rf"\bline {lineno}\b", message), message
    for word in words:
        assert word.lower() in message.lower(), (word, message)
    return message


# Good lines 1 and 4, a comment line 2 and a blank line 3, the bad line is line 5, another line 6.
_HEAD = "0 qid:1 1:0.1 2:0.2 #docid = a\n# a comment line\n\n1 qid:1 1:0.3 2:0.4\n"
_TAIL = "0 qid:2 1:0.5 2:0.6\n"

BAD_LINES = {
    "label_non_numeric": ("abc qid:2 1:0.5", ["bad label", "abc"]),
    "label_negative": ("-1 qid:2 1:0.5", ["bad label", "-1"]),
    "label_nan": ("nan qid:2 1:0.5", ["bad label", "nan"]),
    "label_inf": ("inf qid:2 1:0.5", ["bad label", "inf"]),
    "qid_missing": ("0 1:0.5 2:0.6", ["missing qid"]),
    "qid_duplicate": ("0 qid:2 qid:2 1:0.5", ["duplicate qid"]),
    "qid_not_first": ("0 1:0.5 qid:2", ["qid"]),
    "qid_text": ("0 qid:abc 1:0.5", ["qid", "integer", "abc"]),
    "qid_float": ("0 qid:2.5 1:0.5", ["qid", "integer", "2.5"]),
    "qid_empty": ("0 qid: 1:0.5", ["qid", "integer"]),
    "index_zero": ("0 qid:2 0:0.5", ["feature index 0", ">= 1"]),
    "index_negative": ("0 qid:2 1:0.1 -3:0.5", ["feature index -3", ">= 1"]),
    "index_text": ("0 qid:2 x:0.5", ["feature index", "'x'", "not an integer"]),
    "index_fraction": ("0 qid:2 1.5:0.5", ["feature index", "'1.5'", "not an integer"]),
    # sklearn rejects this too (int(b"2.0") fails); see the report on the fast path.
    "index_float_integral": ("0 qid:2 2.0:0.5", ["feature index", "'2.0'", "not an integer"]),
    "index_duplicate": ("0 qid:2 1:0.5 2:0.1 1:0.6", ["duplicate feature index 1"]),
    "value_text": ("0 qid:2 1:abc", ["non-numeric value", "abc"]),
    "value_empty_last": ("0 qid:2 1:0.5 2:", ["non-numeric value", "feature 2"]),
    "value_nan": ("0 qid:2 1:nan", ["non-finite", "nan"]),
    "value_NaN": ("0 qid:2 2:NaN", ["non-finite", "nan"]),
    "value_inf": ("0 qid:2 1:inf", ["non-finite", "inf"]),
    "value_minus_inf": ("0 qid:2 1:0.5 2:-inf", ["non-finite", "-inf"]),
    "token_no_colon": ("0 qid:2 1:0.5 7", ["malformed", "'7'"]),
    "token_two_colons": ("0 qid:2 1:0.5:0.6", ["malformed", "1:0.5:0.6"]),
    # The next three have as many numbers as 2 x colons, so a parser that only splits on
    # colons and spaces misreads them instead of rejecting them (sklearn rejects all three).
    "token_two_colons_balanced": ("0 qid:2 1:2:3 4", ["malformed"]),
    "token_empty_value_then_number": ("0 qid:2 1: 5", ["feature"]),
    "token_space_before_colon": ("0 qid:2 1 :5", ["malformed"]),
}


@pytest.mark.parametrize("gz", [False, True], ids=["txt", "gz"])
@pytest.mark.parametrize("case", list(BAD_LINES))
def test_bad_line(tmp_path, case, gz):
    bad, words = BAD_LINES[case]
    path = _write(tmp_path / ("bad.txt.gz" if gz else "bad.txt"), _HEAD + bad + "\n" + _TAIL)
    _assert_bad(path, 5, *words)


def test_bad_line_is_first_bad_line(tmp_path):
    path = _write(tmp_path / "bad.txt", _HEAD + "0 qid:2 1:abc\n0 qid:2 0:1\n")
    _assert_bad(path, 5, "non-numeric")


def _no_slow_path(*args, **kwargs):
    raise AssertionError("this well-formed chunk should take the vectorised path")


@pytest.mark.parametrize("path_taken", ["fast", "slow"])
@pytest.mark.parametrize("label", ["128", "200", "1e3", "4096.5"])
def test_label_of_a_score_is_rejected_naming_file_line_and_label(tmp_path, monkeypatch, path_taken, label):
    # 2^128 - 1 is inf in float32: such a "grade" is a score. Both readings of a chunk must say so.
    if path_taken == "fast":
        monkeypatch.setattr(svmlight, "_slow_rows", _no_slow_path)
    else:
        monkeypatch.setattr(svmlight, "_fast_rows", lambda *args, **kwargs: None)
    path = _write(tmp_path / "scores.txt", _HEAD + f"{label} qid:2 1:0.5\n" + _TAIL)
    message = _assert_bad(path, 5, "look like scores rather than grades", "rescale", "small integer")
    assert re.search(rf"\blabel {float(label):g}\b", message), message


@pytest.mark.parametrize("path_taken", ["fast", "slow"])
def test_largest_accepted_label_is_127(tmp_path, monkeypatch, path_taken):
    if path_taken == "fast":
        monkeypatch.setattr(svmlight, "_slow_rows", _no_slow_path)
    else:
        monkeypatch.setattr(svmlight, "_fast_rows", lambda *args, **kwargs: None)
    path = _write(tmp_path / "grades.txt", "127 qid:1 1:0.5\n127.5 qid:1 1:0.25\n0 qid:1 1:0.75\n")
    np.testing.assert_array_equal(parse_svmlight(path).labels, [127.0, 127.5, 0.0])
    path = _write(tmp_path / "grades.txt", "127 qid:1 1:0.5\n128 qid:1 1:0.25\n0 qid:1 1:0.75\n")
    _assert_bad(path, 2, "label 128", "scores rather than grades")


def test_stray_token_does_not_shift_values_into_next_line(tmp_path):
    # Line 1 has a stray number, line 2 a token without value: together they hold 2 x colons
    # numbers, so a parser that ignores token boundaries reads doc0 = {1: 0.5}, doc1 = {7: 2}.
    path = _write(tmp_path / "bad.txt", "0 qid:1 1:0.5 7\n1 qid:1 2:\n")
    _assert_bad(path, 1, "malformed", "'7'")


def test_qid_field_in_file_without_qids(tmp_path):
    path = _write(tmp_path / "lgb.txt", "0 1:0.5\n1 2:0.5\n0 qid:3 1:0.5\n")
    (tmp_path / "lgb.txt.query").write_text("3\n")
    _assert_bad(path, 3, "qid field in a file without qids")


def test_missing_qid_on_later_line_counts_comment_lines(tmp_path):
    path = _write(tmp_path / "bad.txt", "# c\n0 qid:1 1:1\n0 qid:1 1:2\n# c\n\n0 1:3\n")
    _assert_bad(path, 6, "missing qid")


@pytest.mark.parametrize("text", ["", "\n\n  \n", "# only a comment\n\n#another\n"], ids=["empty", "blank", "comments"])
@pytest.mark.parametrize("gz", [False, True], ids=["txt", "gz"])
def test_file_without_data_lines(tmp_path, text, gz):
    path = _write(tmp_path / ("e.txt.gz" if gz else "e.txt"), text)
    _assert_bad(path, None, "empty")


@pytest.mark.parametrize(
    "qids,line,first",
    [
        ([1, 1, 2, 1], 4, 1),
        ([5, 6, 6, 7, 6, 8], 5, 2),
        ([3, 4, 3, 4], 3, 1),
    ],
)
def test_non_contiguous_queries(tmp_path, qids, line, first):
    path = _write(tmp_path / "nc.txt", "".join(f"0 qid:{q} 1:{i}\n" for i, q in enumerate(qids)))
    message = _assert_bad(path, line, f"qid {qids[line - 1]}", "contiguous")
    assert re.search(rf"first seen at line {first}\b", message), message


def test_non_contiguous_line_numbers_skip_comments(tmp_path):
    text = "# header\n0 qid:1 1:1\n\n0 qid:1 1:2\n0 qid:2 1:3\n# note\n0 qid:1 1:4\n"
    path = _write(tmp_path / "nc.txt.gz", text)
    message = _assert_bad(path, 7, "qid 1", "contiguous")
    assert "first seen at line 2" in message


def test_lightgbm_without_query_file(tmp_path):
    path = _write(tmp_path / "lgb.txt", "# c\n0 1:0.5\n1 2:0.5\n")
    _assert_bad(path, 2, "missing qid", "lgb.txt.query")


def test_lightgbm_gz_without_query_file(tmp_path):
    path = _write(tmp_path / "lgb.txt.gz", "0 1:0.5\n1 2:0.5\n")
    _assert_bad(path, 1, "missing qid", "lgb.txt.query")


@pytest.mark.parametrize("sizes", ["1\n3\n", "1\n", "3\n0\n", "4\n-1\n"], ids=["over", "under", "zero", "negative"])
def test_lightgbm_query_sizes_must_sum_to_docs(tmp_path, sizes):
    path = _write(tmp_path / "lgb.txt", "0 1:0.5\n1 2:0.5\n2 1:0.1\n")
    query = tmp_path / "lgb.txt.query"
    query.write_text(sizes)
    with pytest.raises(ValueError) as info:
        parse_svmlight(path)
    message = str(info.value)
    assert str(query) in message and "sum" in message and "3 documents" in message, message


def test_lightgbm_query_file_not_integers(tmp_path):
    path = _write(tmp_path / "lgb.txt", "0 1:0.5\n1 2:0.5\n")
    query = tmp_path / "lgb.txt.query"
    query.write_text("one\ntwo\n")
    with pytest.raises(ValueError, match=re.escape(str(query))):
        parse_svmlight(path)


def test_not_utf8(tmp_path):
    path = tmp_path / "bin.txt"
    path.write_bytes(b"0 qid:1 1:0.5 #\xff\xfe\n")
    _assert_bad(path, None, "utf-8")


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "broken.txt.gz"
    path.write_bytes(gzip.compress(b"0 qid:1 1:0.5\n" * 100)[:40])
    with pytest.raises(ValueError, match=re.escape(str(path))):
        parse_svmlight(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        parse_svmlight(tmp_path / "nope.txt")


def test_value_accepted_by_float_but_not_numpy_names_the_line(tmp_path):
    # ``float("1_0") == 10`` (and sklearn reads 10); either accept it or name the line.
    path = _write(tmp_path / "u.txt", "0 qid:1 1:0.5\n0 qid:1 1:1_0\n")
    try:
        ours = parse_svmlight(path)
    except ValueError as e:
        assert str(path) in str(e) and re.search(r"\bline 2\b", str(e)), str(e)
    else:
        np.testing.assert_array_equal(ours.features, [[0.5], [10.0]])


@pytest.mark.parametrize("sep", ["\x0c", "\u2028", "\x85"], ids=["formfeed", "U+2028", "NEL"])
def test_comment_text_is_ignored_whatever_its_characters(tmp_path, sep):
    # Only "\n" (and "\r\n") end a line; a comment may contain any other character.
    path = _write(tmp_path / "c.txt", f"0 qid:1 1:0.5 #docid = a{sep}b 2\n1 qid:1 1:0.25\n0 qid:1 0:1\n")
    _assert_bad(path, 3, "feature index 0")
    path = _write(tmp_path / "c.txt", f"0 qid:1 1:0.5 #docid = a{sep}b 2\n1 qid:1 1:0.25\n")
    ours = parse_svmlight(path)
    np.testing.assert_array_equal(ours.labels, [0.0, 1.0])


# --------------------------------------------------------------------------------------------
# Streaming, widths and ids (large files)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [64, 997])
def test_chunked_reading_equals_one_chunk(monkeypatch, chunk):
    """Chunks of a few lines (and line-aligned chunk boundaries) give the same arrays."""
    whole = parse_svmlight(SAMPLE / "test.txt.gz", keep_docids=True)
    monkeypatch.setattr(svmlight, "CHUNK_BYTES", chunk)
    parts = parse_svmlight(SAMPLE / "test.txt.gz", keep_docids=True)
    for name in ("features", "labels", "qids", "docids"):
        np.testing.assert_array_equal(getattr(parts, name), getattr(whole, name), err_msg=name)


@pytest.mark.parametrize("bad_line, fragments", [
    ("0 qid:2 1:0.5 2:x", ("non-numeric value", "'x'")),
    ("1000 qid:2 1:0.5 2:0.25", ("label 1000", "scores rather than grades")),
])
def test_errors_name_the_file_line_across_chunks(monkeypatch, tmp_path, bad_line, fragments):
    monkeypatch.setattr(svmlight, "CHUNK_BYTES", 40)
    lines = [f"{i % 3} qid:{i // 10} 1:{i}.5 2:0.25" for i in range(30)]
    lines[23] = bad_line
    path = _write(tmp_path / "bad.txt", "\n".join(lines) + "\n")
    _assert_bad(path, 24, *fragments)


def test_stray_huge_index_is_rejected_naming_its_line(tmp_path):
    lines = [f"{i % 3} qid:{i // 10} " + " ".join(f"{j}:{(i * j) % 7}" for j in range(1, 137)) for i in range(200)]
    lines[57] += " 1000000000:1"
    path = _write(tmp_path / "stray.txt", "\n".join(lines) + "\n")
    message = _assert_bad(path, 58, "feature index 1000000000", "num_features=1000000000")
    assert "largest 136" in message
    lines[57] = lines[57].replace("1000000000:1", "5000:1")
    path = _write(tmp_path / "stray.txt", "\n".join(lines) + "\n")
    _assert_bad(path, 58, "feature index 5000", "1 of 200 documents")
    data = parse_svmlight(path, num_features=5000)  # kept when asked for
    assert data.features.shape == (200, 5000) and data.features[57, 4999] == 1.0


def test_huge_num_features_is_refused_before_allocating(tmp_path):
    path = _write(tmp_path / "ok.txt", "0 qid:1 1:0.5\n1 qid:1 2:1\n")
    with pytest.raises(ValueError, match=r"float32 feature array needs .* GiB"):
        parse_svmlight(path, num_features=10**12)
    with pytest.raises(ValueError, match="num_features must be a positive int"):
        parse_svmlight(path, num_features=0)


def test_high_index_used_by_many_documents_widens_the_file(tmp_path):
    """A sparse file whose last ids appear only in later chunks (Yahoo! LTR style) is not a typo."""
    lines = [f"{i % 2} qid:{i // 4} 1:0.5 3:{i}" + (" 700:0.25" if i >= 50 else "") for i in range(100)]
    path = _write(tmp_path / "sparse.txt", "\n".join(lines) + "\n")
    data = parse_svmlight(path)
    assert data.features.shape == (100, 700)
    np.testing.assert_array_equal(data.features[50:, 699], 0.25)
    assert not data.features[:50, 3:].any()


def test_query_ids_beyond_int32_keep_their_value(tmp_path):
    big = [2**31 + 5, 2**40 + 1, 2**53 + 3]  # the last one is above float64's exact integers
    text = "".join(f"{i % 2} qid:{q} 1:{i}\n" for i, q in enumerate(big) for _ in range(2))
    path = _write(tmp_path / "ids.txt", text)
    data = parse_svmlight(path)
    np.testing.assert_array_equal(np.unique(data.qids), big)
    from jaxrank.data import load_queries, pad_queries

    queries = load_queries(path)
    np.testing.assert_array_equal(queries.qid, big)
    np.testing.assert_array_equal(pad_queries(queries).qid, big)
    np.testing.assert_array_equal(load_queries(path).qid, big)  # from the cache
