"""The budget checks every experiment runs before any work (``experiments.common.budget``)."""

import resource
import subprocess
import sys

import pytest

from experiments.common import budget


def test_check_count_names_value_and_largest():
    budget.check_count("n", 5, largest=5, why="w")
    with pytest.raises(ValueError, match=r"^`n=6`: too many; the largest that fits is 5\.$"):
        budget.check_count("n", 6, largest=5, why="too many")


def test_check_int32_largest_is_exact():
    budget.check_int32("num_impressions", (2**31 - 1) // 7, factor=7)
    with pytest.raises(ValueError, match=r"`num_impressions=306783379`.*largest that fits is 306783378\.$"):
        budget.check_int32("num_impressions", (2**31 - 1) // 7 + 1, factor=7)


def test_check_memory_proportional_and_fixed():
    assert budget.check_memory({"a": 600, "b": 400}, name="n", value=10, available=1000) == 1000
    # proportional: 100 bytes per unit, 1000 bytes available -> 10
    with pytest.raises(ValueError, match=r"^`n=20`: the run would allocate 2\.0 KiB \(a 1\.2 KiB, b 800 B\) "
                                         r"but 1000 B is available; the largest that fits is 10\.$"):
        budget.check_memory({"a": 1200, "b": 800}, name="n", value=20, available=1000)
    # 500 bytes fixed, 50 per unit: (1000 - 500) / 50 = 10
    with pytest.raises(ValueError, match=r"largest that fits is 10\.$"):
        budget.check_memory({"fixed": 500, "per": 1000}, name="n", value=20, per_unit=50, available=1000)
    with pytest.raises(ValueError, match=r"largest that fits is 0\.$"):
        budget.check_memory({"fixed": 2000, "per": 1000}, name="n", value=20, per_unit=50, available=1000)


def test_available_bytes_honours_rlimit_as():
    code = ("import resource; from experiments.common import budget; "
            "resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY)); "
            "print(budget.available_bytes())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 0 <= int(out.stdout) < 4 << 30


def test_available_bytes_matches_meminfo_when_unlimited():
    if resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
        pytest.skip("an address-space limit is set")
    with open("/proc/meminfo") as f:
        free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    assert budget.available_bytes() <= free * 1.1


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0, "x", True])
def test_check_finite_positive(value):
    with pytest.raises(ValueError, match=r"must be a finite number > 0\.$"):
        budget.check_finite_positive("learning_rate", value)


def test_check_finite_result_is_nonfinite_error():
    budget.check_finite_result("learning_rate", 0.1, "the weights", [1.0, 2.0])
    with pytest.raises(budget.NonFiniteError, match=r"^`learning_rate=1000000.0`: the weights became non-finite "
                                                    r"\(1 of 2 values\)"):
        budget.check_finite_result("learning_rate", 1e6, "the weights", [1.0, float("nan")])


def test_announce_prints_one_line(capsys):
    seconds = budget.announce("oltr", work=3_600_000, rate=1000, unit="impressions")
    assert seconds == 3600
    assert capsys.readouterr().out == ("[oltr] work: 3,600,000 impressions; about 1.0 h at 1,000 impressions/s "
                                       "on a 2-core CPU.\n")
