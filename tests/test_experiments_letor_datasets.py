"""``experiments.common.letor_datasets``: one SVMlight file split into five rotated parts."""

import numpy as np
import pytest

from experiments.common import letor_datasets


def _write(path, num_queries, docs=3):
    rng = np.random.default_rng(0)
    lines = [f"{int(rng.integers(0, 3))} qid:{q + 1} 1:{100 + 50 * rng.random():.4f} 2:{rng.random():.4f}"
             for q in range(num_queries) for _ in range(docs)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_single_file_is_split_into_five_rotated_parts(tmp_path):
    folder = tmp_path / "slice"
    folder.mkdir()
    _write(folder / "train.txt", 12)
    ds = letor_datasets.resolve(str(folder), "test", single_file=True)
    assert ds.root is None and ds.file == folder / "train.txt"
    test_parts = []
    for k in range(1, 6):
        train, vali, test = letor_datasets.fold(ds, k, seed=3)
        qids = [set(np.asarray(x.qid).tolist()) for x in (train, vali, test)]
        assert set().union(*qids) == set(range(1, 13)) and sum(map(len, qids)) == 12  # a partition
        test_parts.append(qids[2])
    assert set().union(*test_parts) == set(range(1, 13))  # every query is tested in exactly one fold
    assert sum(map(len, test_parts)) == 12
    # normalised per query: every feature spans [0, 1] within each query (LETOR's QueryLevelNorm)
    feats = np.asarray(letor_datasets.fold(ds, 1, seed=3)[0].features)
    assert feats.min() >= 0.0 and feats.max() <= 1.0 and feats[:, 0].max() == 1.0


def test_single_files_are_refused_where_not_allowed_and_when_too_small(tmp_path):
    folder = tmp_path / "slice"
    folder.mkdir()
    _write(folder / "train.txt", 12)
    with pytest.raises(FileNotFoundError, match="expected a LETOR folder <root>/Fold1..Fold5.$"):
        letor_datasets.resolve(str(folder), "test")
    small = letor_datasets.resolve(str(_write(tmp_path / "small.txt", 4)), "test", single_file=True)
    with pytest.raises(ValueError, match="holds 4 queries"):
        letor_datasets.fold(small, 1)
