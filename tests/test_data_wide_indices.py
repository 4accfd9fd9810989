"""Feature indices that would make the dense layout huge are refused, naming the file, the line and
the ``num_features=`` way out, whatever the file's size (a few documents, or one split of a fold)."""

from pathlib import Path

import numpy as np
import pytest

from jaxrank.data import load_fold, load_queries, parse_svmlight, svmlight

DENSE = " ".join(f"{j}:0.5" for j in range(1, 47))


def _file(path: Path, num_docs: int, extra: dict[int, str], *, qid_every: int = 10) -> Path:
    """``num_docs`` 46-feature documents; ``extra[k]`` is appended to document ``k``'s line (line k + 1)."""
    lines = [f"{k % 3} qid:{k // qid_every + 1} {DENSE}{' ' + extra[k] if k in extra else ''}" for k in range(num_docs)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("index", [1_000_000_000, 10_000_000, 1000])
def test_stray_index_in_a_tiny_file_names_its_line(tmp_path, index):
    path = _file(tmp_path / "tiny.txt", 3, {1: f"{index}:1"})
    with pytest.raises(ValueError, match=rf"tiny.txt, line 2: feature index {index} .*num_features={index}"):
        parse_svmlight(path)


def test_num_features_keeps_a_real_high_index(tmp_path):
    path = _file(tmp_path / "tiny.txt", 3, {1: "1000:1"})
    data = parse_svmlight(path, num_features=1000)
    assert data.features.shape == (3, 1000) and data.features[1, 999] == 1.0


@pytest.mark.parametrize("index", ["12345678901234567", "123456789012345678901", "2147483648"])
def test_index_too_large_for_any_dense_row_names_its_line(tmp_path, index):
    path = _file(tmp_path / "big.txt", 5, {3: f"{index}:1"})
    with pytest.raises(ValueError, match=rf"big.txt, line 4: feature index {index} is too large"):
        parse_svmlight(path)


def test_one_line_of_many_features_does_not_widen_every_document(tmp_path):
    wide = " ".join(f"{j}:0.25" for j in range(47, 100_001))
    path = _file(tmp_path / "one_wide_line.txt", 1000, {500: wide})
    with pytest.raises(ValueError, match=r"one_wide_line.txt, line 501: feature index 100000 .*MiB of zeros"
                                         r".*num_features=100000"):
        parse_svmlight(path)


def test_widening_within_the_limit_is_kept(tmp_path):
    """Near indices that add few zeros (a feature present in only some documents) stay accepted."""
    path = _file(tmp_path / "ok.txt", 200, {k: "60:1" for k in range(0, 200, 7)})
    assert parse_svmlight(path).features.shape == (200, 60)


def _fold(root: Path, test_extra: dict[int, str]) -> Path:
    folder = root / "Fold1"
    folder.mkdir(parents=True)
    _file(folder / "train.txt", 1500, {})
    _file(folder / "vali.txt", 300, {})
    _file(folder / "test.txt", 51, test_extra)
    return root


def test_single_stray_index_in_a_small_test_split_names_its_line(tmp_path):
    root = _fold(tmp_path / "set", {40: "50000:1"})
    with pytest.raises(ValueError, match=r"test.txt, line 41: feature index 50000 is far above.*num_features=50000"):
        load_fold(root, 1, cache=False)


def test_index_of_a_small_split_that_would_widen_the_fold_names_its_line(tmp_path):
    """Used by two of the test split's 51 documents (so not a stray within that file), index 50,000
    would widen train and vali to 50,000 features."""
    root = _fold(tmp_path / "set", {40: "50000:1", 45: "50000:2"})
    assert parse_svmlight(root / "Fold1" / "test.txt").features.shape == (51, 50000)
    with pytest.raises(ValueError, match=r"test.txt, line 41: feature index 50000 is above every index of the "
                                         r"fold's other splits \(largest 46\).*num_features=50000"):
        load_fold(root, 1, cache=False)


def test_load_fold_num_features_is_the_way_out(tmp_path):
    root = _fold(tmp_path / "set", {40: "200:1", 45: "200:2"})
    train, vali, test = load_fold(root, 1, num_features=200, cache=False)
    assert train.features.shape[1] == vali.features.shape[1] == test.features.shape[1] == 200
    assert load_queries(root / "Fold1" / "test.txt", num_features=200, cache=False).features.shape == (51, 200)


def test_width_limit_is_a_module_setting(tmp_path, monkeypatch):
    path = _file(tmp_path / "ok.txt", 200, {k: "60:1" for k in range(0, 200, 7)})
    monkeypatch.setattr(svmlight, "WIDTH_LIMIT_BYTES", 1000)
    with pytest.raises(ValueError, match=r"ok.txt, line \d+: feature index 60 .*num_features=60"):
        parse_svmlight(path)
    np.testing.assert_array_equal(parse_svmlight(path, num_features=60).features[0, 59], 1.0)
