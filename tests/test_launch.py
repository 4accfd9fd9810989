"""The experiment registry, the launcher's flags and the feature_rankers experiment end to end."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from experiments.common import registry
from tests.conftest import REPO, SAMPLE_DATA

MINI = str(SAMPLE_DATA / "MQ2008-mini")


@dataclasses.dataclass(frozen=True)
class _Config:
    count: int = 1
    rate: float = 0.5
    name: str = "a"
    flag: bool = False
    sizes: tuple[int, ...] = (1, 2)
    limit: Optional[int] = None
    seed: int = 0


_EXP = registry.Experiment("toy", _Config, run=lambda config, run_dir: {})


def test_make_config_types_each_field():
    config = registry.make_config(
        _EXP, ["count=3", "rate=1e-3", "name=x=y", "flag=True", "sizes=4, 8,16", "limit=7"], seed=5
    )
    assert config == _Config(count=3, rate=1e-3, name="x=y", flag=True, sizes=(4, 8, 16), limit=7, seed=5)
    assert registry.make_config(_EXP, ["limit=none", "flag=0"]) == _Config(limit=None, flag=False)


@pytest.mark.parametrize(
    "override, words",
    [
        ("bogus=1", ["unknown config key 'bogus'", "count, flag, limit, name, rate, seed, sizes"]),
        ("count=1.5", ["count=1.5", "expected int"]),
        ("flag=maybe", ["flag=maybe", "expected a bool"]),
        ("sizes=1,x", ["sizes=1,x", "expected int"]),
        ("count", ["expected key=value"]),
    ],
)
def test_make_config_rejects_bad_overrides_in_one_line(override, words):
    with pytest.raises(registry.ExperimentError) as info:
        registry.make_config(_EXP, [override])
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_unknown_experiment_lists_the_registered_ones():
    with pytest.raises(registry.ExperimentError, match="unknown experiment 'nope'; registered: .*feature_rankers"):
        registry.get("nope")


def _launch(*args, cwd=REPO):
    return subprocess.run([sys.executable, "launch.py", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_launch_list_and_errors():
    listing = _launch("--list")
    assert listing.returncode == 0 and "feature_rankers" in listing.stdout
    bad = _launch("--experiment=nope")
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines()[-1].startswith("error: unknown experiment 'nope'; registered: ")


def _run(tmp_path, *overrides):
    return registry.launch("feature_rankers", tmp_path, [f"dataset={MINI}", "folds=1", *overrides])


def test_feature_rankers_writes_results_table_figure_and_is_deterministic(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert first != second
    assert (first / "results.json").read_bytes() == (second / "results.json").read_bytes()
    for name in ("config.json", "results.json", "arrays.npz", "table.md", "feature_rankers.png"):
        assert (first / name).is_file(), name
    assert not list(first.glob("*.tmp")) and not list(first.glob(".*"))
    results = json.loads((first / "results.json").read_text())
    assert results["metrics"] == ["NDCG@1", "NDCG@5", "NDCG@10", "MAP"]
    assert len(results["features"]) == 46
    per_fold = np.load(first / "arrays.npz")["per_fold"]
    assert per_fold.shape == (1, 4, 46)
    assert np.all((per_fold >= 0) & (per_fold <= 1))
    config = json.loads((first / "config.json").read_text())
    assert config["dataset"] == MINI and config["folds"] == [1]


def test_feature_rankers_seed_changes_tie_breaking_only(tmp_path):
    a = np.load(_run(tmp_path, "seed=1") / "arrays.npz")["per_fold"]
    b = np.load(_run(tmp_path, "seed=2") / "arrays.npz")["per_fold"]
    assert not np.array_equal(a, b)  # single features tie a lot, so the tie-breaking key matters
    # letor_compat keeps file order for ties: the seed has no effect.
    c = np.load(_run(tmp_path, "seed=1", "letor_compat=true") / "arrays.npz")["per_fold"]
    d = np.load(_run(tmp_path, "seed=2", "letor_compat=true") / "arrays.npz")["per_fold"]
    np.testing.assert_array_equal(c, d)


def test_score_features_over_buckets_equals_the_metrics_of_the_padded_batch(monkeypatch):
    """160 queries of 2..8 documents in five buckets of 32 x 32 slots, all features at once or one per pass.

    With the LETOR conventions (ties keep file order) the per-feature means over all queries equal
    the metrics' own mean on the padded batch; the features are continuous (no ties), so with a
    tie-breaking key they do too.
    """
    import functools

    import jax
    import jax.numpy as jnp

    from experiments import feature_rankers
    from jaxrank import data, metrics

    @functools.partial(jax.jit, static_argnames="letor_compat")
    def padded_metrics(features, labels, mask, letor_compat):
        kw = dict(where=mask, letor_compat=letor_compat)
        scores = jnp.moveaxis(features, -1, 0)  # [D, Q, L]
        ndcg = [jax.vmap(lambda s: metrics.ndcg(s, labels, topn=k, **kw))(scores) for k in (1, 5)]
        return jnp.stack(ndcg + [jax.vmap(lambda s: metrics.average_precision(s, labels, **kw))(scores)])

    monkeypatch.setattr(data.ragged, "BLOCK_BYTES", 1)  # the smallest blocks: 1,024 slots
    dense = data.synthetic_queries(jax.random.key(3), num_queries=160, list_size=8, num_features=3, num_grades=3)
    queries = data.as_ragged(dense)
    blocks = data.buckets(queries, features=False, max_cells=1 << 10, minimum=feature_rankers.MIN_LIST)
    assert [b.docs.shape for b in blocks] == [(32, 32)] * 5
    for letor_compat, sort_cells in [(True, None), (False, None), (False, 1)]:
        if sort_cells is not None:
            monkeypatch.setattr(feature_rankers, "SORT_CELLS", sort_cells)
        got = feature_rankers.score_features(queries, jax.random.key(0), topns=(1, 5), letor_compat=letor_compat)
        assert got.shape == (3, 3) and 0.0 < got.min() and got.max() < 1.0
        expected = padded_metrics(dense.features, dense.labels, dense.mask, letor_compat)
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_feature_rankers_falls_back_to_synthetic_without_data(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "empty"))
    run_dir = registry.launch(
        "feature_rankers", tmp_path, ["folds=1", "synthetic_queries=8", "synthetic_features=5"]
    )
    out = capsys.readouterr().out
    assert "JAXRANK_DATA" in out and "using synthetic data" in out
    results = json.loads((run_dir / "results.json").read_text())
    assert results["source"].startswith("synthetic(")
    # The generator makes only the first three features informative.
    ndcg10 = np.asarray(results["mean"]["NDCG@10"])
    assert ndcg10[:3].mean() > ndcg10[3:].mean()


def test_feature_rankers_named_dataset_missing_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "empty"))
    with pytest.raises(registry.ExperimentError, match="JAXRANK_DATA"):
        registry.launch("feature_rankers", tmp_path, ["dataset=MQ2008"])
    assert not list(tmp_path.glob("feature_rankers/*"))


@pytest.mark.slow
def test_feature_rankers_on_shared_mq2008_matches_letor_statistics(shared_data, tmp_path):
    run_dir = registry.launch("feature_rankers", tmp_path, [f"dataset={shared_data / 'MQ2008'}"])
    results = json.loads((run_dir / "results.json").read_text())
    assert results["folds"] == [1, 2, 3, 4, 5]
    best = int(np.argmax(results["mean"]["NDCG@10"]))
    # The strongest MQ2008 single features are the LMIR / BM25 whole-document ones (ids 21-24, 37-40).
    assert results["features"][best] in {21, 22, 23, 24, 37, 38, 39, 40}
    assert Path(run_dir / "feature_rankers.png").stat().st_size > 10_000


@pytest.mark.parametrize("override, words", [
    ("params=rcs.alpha=-1", ["alpha must be > 0; got -1.0."]),
    ("num_steps=0", ["num_steps must be an int >= 1; got 0."]),
    ("algorithms=", ["no algorithm selected", "--set algorithms=rcs,rucb"]),
    ("algorithms=rcs,ucb", ["unknown bandit 'ucb'", "registered: rcs, rucb"]),
    ("matrices=/no/such/folder", ["/no/such/folder"]),
])
def test_bad_values_are_one_line_errors_that_leave_no_run_directory(tmp_path, no_data, override, words):
    """Caught before anything compiles, as one line, and no run directory holding only config.json
    is left for --resume=latest to pick."""
    with pytest.raises(registry.ExperimentError) as info:
        registry.launch("rcs_regret", tmp_path, [override])
    message = str(info.value)
    assert "\n" not in message and all(word in message for word in words), (words, message)
    assert not (tmp_path / "rcs_regret").exists() or not list((tmp_path / "rcs_regret").iterdir())
    with pytest.raises(registry.ExperimentError, match="no run of rcs_regret"):
        registry.latest_run_dir(tmp_path, "rcs_regret")


def test_the_command_line_prints_a_bad_value_as_one_line_without_traceback(tmp_path, no_data):
    proc = _launch("--experiment=rcs_regret", f"--workdir={tmp_path}", "--set=params=rcs.alpha=-1")
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "alpha must be > 0; got -1.0." in lines[0], proc.stderr
    resume = _launch("--experiment=rcs_regret", f"--workdir={tmp_path}", "--resume=latest")
    assert resume.returncode != 0 and "no run of rcs_regret" in resume.stderr


def test_rcs_regret_table_names_the_rankers_and_the_condorcet_winner(tmp_path, no_data):
    run_dir = registry.launch("rcs_regret", tmp_path, ["num_runs=2", "num_steps=300"])
    results = json.loads((run_dir / "results.json").read_text())
    (matrix,) = results["matrices"].values()
    # the embedded arXiv matrix: six rankers, ranker 1 is the Condorcet winner (duelingbanditlib)
    assert matrix["rankers"] == [1, 2, 3, 4, 5, 6] and matrix["condorcet_winner"] == 1
    table = (run_dir / "table.md").read_text()
    assert "| rankers (ids in the source matrix) | Condorcet winner |" in table
    assert "| 1, 2, 3, 4, 5, 6 | 1 |" in table
