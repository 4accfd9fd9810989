"""The one statistics module against ``scipy.stats``: Student t distribution and quantiles, the
interval of a mean, the proportion interval and the paired t-test."""

import math

import numpy as np
import pytest
from scipy import stats

from jaxrank.metrics import statistics

DFS = (1, 2, 3, 4, 7, 29, 30, 31, 89, 1000, 0.5, 2.7)


@pytest.mark.parametrize("df", DFS)
def test_t_distribution_matches_scipy(df):
    for t in (-40.0, -3.0, -0.1, 0.0, 0.01, 1.0, 2.5, 30.0):
        assert statistics.t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), rel=1e-10, abs=1e-300)
    for prob in (0.0005, 0.05, 0.6, 0.9, 0.975, 0.995):
        assert statistics.t_quantile(prob, df) == pytest.approx(stats.t.ppf(prob, df), rel=1e-10)


def test_large_df_tends_to_the_normal():
    assert statistics.normal_quantile(0.975) == pytest.approx(stats.norm.ppf(0.975), rel=1e-14)
    assert statistics.t_cdf(-2.0, math.inf) == pytest.approx(stats.norm.cdf(-2.0), rel=1e-14)
    assert statistics.t_quantile(0.975, 1e6) == pytest.approx(stats.t.ppf(0.975, 1e6), rel=1e-8)


@pytest.mark.parametrize("n", [2, 3, 5, 30, 90])
def test_mean_ci_is_the_student_t_interval(n):
    values = np.random.default_rng(n).normal(size=(n, 4))
    mean, half = statistics.mean_ci(values, level=0.95)
    lo, hi = stats.t.interval(0.95, n - 1, loc=values.mean(0), scale=stats.sem(values, axis=0))
    np.testing.assert_allclose(mean, values.mean(0), rtol=1e-14)
    np.testing.assert_allclose(mean - half, lo, rtol=1e-10)
    np.testing.assert_allclose(mean + half, hi, rtol=1e-10)
    # several run axes pool their values
    pooled = statistics.mean_ci(values.reshape(n, 2, 2), axis=(0, 1), level=0.9)
    flat = values.reshape(n * 2, 2)
    lo, hi = stats.t.interval(0.9, 2 * n - 1, loc=flat.mean(0), scale=stats.sem(flat, axis=0))
    np.testing.assert_allclose(pooled[1], (hi - lo) / 2, rtol=1e-10)


def test_one_run_has_no_interval_and_bad_levels_are_named():
    mean, half = statistics.mean_ci(np.asarray([[2.0, 3.0]]))
    np.testing.assert_array_equal(mean, [2.0, 3.0])
    np.testing.assert_array_equal(half, [0.0, 0.0])
    assert statistics.half_width(1.0, 1) == 0.0
    assert statistics.half_width(2.0, 4) == pytest.approx(stats.t.ppf(0.975, 3) * 2.0 / 2.0, rel=1e-10)
    with pytest.raises(ValueError, match="level must lie in"):
        statistics.mean_ci(np.ones(3), level=95)
    with pytest.raises(ValueError, match="at least one value"):
        statistics.mean_ci(np.ones((0, 2)))


def test_proportion_interval_is_the_normal_one():
    z = stats.norm.ppf(0.975)
    assert statistics.proportion_half(0.3, 200) == pytest.approx(z * math.sqrt(0.3 * 0.7 / 200), rel=1e-12)
    assert statistics.proportion_half(0.3, 0) == math.inf


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_paired_t_test_matches_scipy(alternative):
    rng = np.random.default_rng(7)
    for n in (2, 3, 10, 50):
        a, b = rng.random(n), rng.random(n) + 0.05
        ours = statistics.paired_t_test(a, b, alternative=alternative)
        theirs = stats.ttest_rel(a, b, alternative=alternative)
        assert ours.t == pytest.approx(theirs.statistic, rel=1e-10)
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)
        assert ours.df == n - 1 and ours.mean_diff == pytest.approx(np.mean(a - b), rel=1e-12)
        assert (ours.wins, ours.losses) == (int((a > b).sum()), int((a < b).sum()))


def test_paired_t_test_without_spread_has_no_statistic():
    result = statistics.paired_t_test([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert result.mean_diff == 1.0 and math.isnan(result.t) and math.isnan(result.p_value)
    with pytest.raises(ValueError, match="as many values"):
        statistics.paired_t_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="alternative must be"):
        statistics.paired_t_test([1.0, 2.0], [1.0, 3.0], alternative="two_sided")
