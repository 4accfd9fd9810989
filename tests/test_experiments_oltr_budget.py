"""`oltr` sizes that overflow int32 or cannot fit in memory are one-line errors naming the value and
the largest that fits, raised before the data is loaded; accepted runs announce their work."""

import pytest

from experiments import oltr as oltr_experiment
from experiments.common import budget, registry


@pytest.fixture
def no_data(monkeypatch):
    """Loading data fails the test: every check here must fire before it."""
    monkeypatch.setattr(oltr_experiment, "load_folds", lambda config: pytest.fail("loaded data before refusing"))


def _launch(tmp_path, *items):
    return registry.launch("oltr", tmp_path / "runs", ["dataset=synthetic", *items])


@pytest.mark.parametrize("item, match", [
    ("num_runs=1000000000", r"^`num_runs=1000000000`: the run would allocate [\d.]+ [GTP]iB \(.*\) "
                            r"but .* is available; the largest that fits is \d+\.$"),
    ("num_impressions=1000000000000", r"^`num_impressions=1000000000000`: the impression counter = "
                                      r"1,000,000,000,000 overflows the int32 .*"
                                      r"the largest that fits is 2147483647\.$"),
    ("list_size=1000000", r"^`list_size=1000000`: one run per lane would allocate .* but .* is available; "
                          r"the largest that fits is \d+\.$"),
])
def test_huge_sizes_are_one_line_errors_before_loading(tmp_path, no_data, item, match):
    with pytest.raises(ValueError, match=match) as caught:
        _launch(tmp_path, item)
    assert "\n" not in str(caught.value)
    assert not any((tmp_path / "runs" / "oltr").iterdir())  # nothing left behind
    largest = int(str(caught.value).rsplit(" ", 1)[1].rstrip("."))
    value = int(item.split("=")[1])
    assert 0 < largest < value


def test_largest_list_size_named_fits_and_one_more_does_not(tmp_path, no_data, monkeypatch):
    """The named largest is the bound itself: accepted as given, and one above it refused."""
    monkeypatch.setattr(budget, "available_bytes", lambda: 1 << 30)
    with pytest.raises(ValueError, match=r"`list_size=100000`") as caught:
        _launch(tmp_path, "num_runs=1", "list_size=100000")
    largest = int(str(caught.value).rsplit(" ", 1)[1].rstrip("."))
    with pytest.raises(ValueError, match=rf"`list_size={largest + 1}`: .*the largest that fits is {largest}\."):
        _launch(tmp_path, "num_runs=1", f"list_size={largest + 1}")
    with pytest.raises(pytest.fail.Exception, match="loaded data"):  # accepted: goes on to load the data
        _launch(tmp_path, "num_runs=1", f"list_size={largest}")


def test_accepted_run_announces_its_work(tmp_path, no_data, capsys):
    with pytest.raises(pytest.fail.Exception, match="loaded data"):
        _launch(tmp_path, "folds=1", "click_models=perfect", "learners=pdgd,mgd", "num_runs=2",
                "num_impressions=1000")
    out = capsys.readouterr().out
    # PDGD at 69,222 and MGD at 5,349 impressions/s (BENCHMARKS.md): 2,000 / 69,222 + 2,000 / 5,349 s
    assert "[oltr] work: 4,000 impressions; about 0 s at 9,931 impressions/s on a 2-core CPU" in out
    assert "2 rows x 2 lanes x 1,000 impressions" in out
