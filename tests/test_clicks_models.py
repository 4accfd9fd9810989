"""Tests for ``jaxrank.clicks.models``: cascade and position-based click models.

Statistical checks compare empirical rates with Lerot's click-model table (typed in again below, not
imported) within binomial confidence intervals of ``Z`` standard errors; the cascade's full
click-pattern distribution is checked against exact probabilities with a χ² test.
"""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from scipy import stats

from jaxrank import clicks

Z = 4.5  # ~7e-6 two-sided per check; there are ~70 rate checks
NUM_POSITIONS = 8
NUM_LISTS = 100_000  # every statistical test simulates [NUM_LISTS, NUM_POSITIONS]: compiles are shared

# Lerot's click models (config-sigir2014-PI.yml, lerot-3 meta.yml), copied by hand:
# (name, G) -> (P(click | g), P(stop | g)).
TABLE = {
    ("perfect", 2): ([0.0, 1.0], [0.0, 0.0]),
    ("navigational", 2): ([0.05, 0.95], [0.2, 0.9]),
    ("informational", 2): ([0.4, 0.9], [0.1, 0.5]),
    ("perfect", 3): ([0.0, 0.5, 1.0], [0.0, 0.0, 0.0]),
    ("navigational", 3): ([0.05, 0.5, 0.95], [0.2, 0.5, 0.9]),
    ("informational", 3): ([0.4, 0.7, 0.9], [0.1, 0.3, 0.5]),
    ("perfect", 5): ([0.0, 0.2, 0.4, 0.8, 1.0], [0.0] * 5),
    ("navigational", 5): ([0.05, 0.3, 0.5, 0.7, 0.95], [0.2, 0.3, 0.5, 0.7, 0.9]),
    ("informational", 5): ([0.4, 0.6, 0.7, 0.8, 0.9], [0.1, 0.2, 0.3, 0.4, 0.5]),
    ("random", 2): ([0.5] * 2, [0.0] * 2),
    ("random", 3): ([0.5] * 3, [0.0] * 3),
    ("random", 5): ([0.5] * 5, [0.0] * 5),
}


@functools.partial(jax.jit, static_argnames="click_fn")
def _simulate(keys, labels, where, model, click_fn=clicks.cascade_clicks):
    """``[B, L]`` clicks for a batch of lists, one key each."""
    return jax.vmap(click_fn, in_axes=(0, 0, 0, None))(keys, labels, where, model)


def _keys(seed, num):
    return jax.random.split(jax.random.key(seed), num)


def _assert_rate(successes, trials, expected, what):
    """Binomial check: exact for p in {0, 1}, else within Z standard errors."""
    rate = successes / trials
    if expected in (0.0, 1.0):
        assert rate == expected, f"{what}: rate {rate} but the model says exactly {expected}"
        return
    bound = Z * np.sqrt(expected * (1.0 - expected) / trials)
    assert abs(rate - expected) <= bound, f"{what}: rate {rate:.4f} vs {expected} ± {bound:.4f} (n={trials})"


# ------------------------------------------------------------------------------------------
# Construction and validation
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,num_grades", sorted(TABLE))
def test_cascade_table(name, num_grades):
    model = clicks.cascade_model(name, num_grades)
    click_prob, stop_prob = TABLE[name, num_grades]
    assert model.click_prob.dtype == jnp.float32 and model.stop_prob.dtype == jnp.float32
    np.testing.assert_allclose(model.click_prob, click_prob, rtol=0, atol=1e-7)
    np.testing.assert_allclose(model.stop_prob, stop_prob, rtol=0, atol=1e-7)


def test_random_model_any_grades():
    model = clicks.cascade_model("random", 7)
    np.testing.assert_array_equal(model.click_prob, np.full(7, 0.5, np.float32))
    np.testing.assert_array_equal(model.stop_prob, np.zeros(7, np.float32))


def test_unknown_model_lists_known_names():
    with pytest.raises(ValueError, match="perfect.*navigational.*informational.*random"):
        clicks.cascade_model("optimistic", 5)
    with pytest.raises(ValueError, match="num_grades=4.*2, 3, 5"):
        clicks.cascade_model("perfect", 4)
    with pytest.raises(ValueError, match="num_grades"):
        clicks.cascade_model("random", 0)


@pytest.mark.parametrize(
    "click_prob,stop_prob,match",
    [
        ([0.5, 1.2], [0.0, 0.0], r"click_prob\[1\] = 1.2"),
        ([-0.1, 0.5], [0.0, 0.0], r"click_prob\[0\] = -0.1"),
        ([0.5, 0.5], [0.0, float("nan")], r"stop_prob\[1\] = nan"),
        ([0.5, 0.5, 0.5], [0.0, 0.0], "same|both"),
        ([], [], "non-empty"),
        ([[0.5]], [[0.0]], "1-D"),
    ],
)
def test_make_cascade_model_rejects_bad_probabilities(click_prob, stop_prob, match):
    with pytest.raises(ValueError, match=match):
        clicks.make_cascade_model(click_prob, stop_prob)


def test_check_click_model_and_position_based_validation():
    with pytest.raises(ValueError, match=r"stop_prob\[0\] = 2 is not a probability"):
        clicks.check_click_simulator(clicks.CascadeModel(jnp.array([0.5]), jnp.array([2.0])))
    with pytest.raises(ValueError, match=r"examination\[2\] = 1.5"):
        clicks.make_position_based_model([1.0, 0.5, 1.5], [0.1, 0.9])
    with pytest.raises(ValueError, match=r"click_prob\[0\] = -1 is not"):
        clicks.make_position_based_model([1.0], [-1.0, 0.9])
    clicks.check_click_simulator(clicks.make_position_based_model([1.0, 0.5], [0.0, 1.0]))  # valid: no error


def test_make_cascade_model_inside_jit_skips_checks_on_tracers():
    @jax.jit
    def f(c):
        model = clicks.make_cascade_model(c, jnp.zeros_like(c))
        return clicks.cascade_clicks(jax.random.key(0), jnp.array([1.0, 0.0]), jnp.array([True, True]), model)

    assert f(jnp.array([0.0, 1.0])).tolist() == [True, False]


def test_list_shapes_checked():
    model = clicks.cascade_model("perfect", 2)
    with pytest.raises(ValueError, match=r"both be \[L\]"):
        clicks.cascade_clicks(jax.random.key(0), jnp.zeros(3), jnp.ones(4, bool), model)
    with pytest.raises(ValueError, match=r"both be \[L\]"):
        clicks.cascade_clicks(jax.random.key(0), jnp.zeros((2, 3)), jnp.ones((2, 3), bool), model)


def test_position_based_examination_too_short():
    model = clicks.make_position_based_model([1.0, 1.0], [0.5, 0.5])
    with pytest.raises(ValueError, match="AffineClickModel covers 2 positions; the list has 3"):
        clicks.position_based_clicks(jax.random.key(0), jnp.zeros(3), jnp.ones(3, bool), model)


# ------------------------------------------------------------------------------------------
# Deterministic behaviour
# ------------------------------------------------------------------------------------------


def test_masked_positions_never_clicked_or_stop():
    model = clicks.make_cascade_model([1.0, 1.0], [1.0, 1.0])  # click and stop at the first real doc
    labels = jnp.ones(NUM_POSITIONS)
    where = jnp.array([False, False, True, False, True, True, False, True])
    got = clicks.cascade_clicks(jax.random.key(1), labels, where, model)
    assert got.tolist() == [False, False, True] + [False] * 5
    no_stop = clicks.make_cascade_model([1.0, 1.0], [0.0, 0.0])
    assert clicks.cascade_clicks(jax.random.key(1), labels, where, no_stop).tolist() == where.tolist()
    assert not clicks.cascade_clicks(jax.random.key(1), labels, jnp.zeros(NUM_POSITIONS, bool), no_stop).any()
    pbm = clicks.make_position_based_model(np.ones(NUM_POSITIONS), [1.0, 1.0])
    assert clicks.position_based_clicks(jax.random.key(1), labels, where, pbm).tolist() == where.tolist()


@pytest.mark.parametrize("stop_rule", clicks.STOP_RULES)
def test_stop_rules_replay_the_reference_loop(stop_rule):
    # The same uniforms through the NumPy loop (tests/reference/oltr.py): the published model stops
    # only after a click; the PDGD authors' simulator stops at any position whose stop coin fires.
    from tests.reference import oltr as ref

    model = clicks.cascade_model("navigational", 3)
    rng = np.random.default_rng(5)
    differ = 0
    for i in range(40):
        labels = rng.integers(0, 3, NUM_POSITIONS).astype(np.float32)
        key = jax.random.key(i)
        got = clicks.cascade_clicks(key, jnp.asarray(labels), jnp.ones(NUM_POSITIONS, bool), model,
                                    stop_rule=stop_rule)
        u_click, u_stop = np.asarray(jax.random.uniform(key, (2, NUM_POSITIONS)))
        want = ref.cascade(labels, u_click, u_stop, np.asarray(model.click_prob), np.asarray(model.stop_prob),
                           stop_rule=stop_rule)
        assert np.asarray(got).tolist() == want, i
        other = ref.cascade(labels, u_click, u_stop, np.asarray(model.click_prob), np.asarray(model.stop_prob))
        differ += want != other
    assert (differ > 0) == (stop_rule == "every_position")


def test_unknown_stop_rule_is_named():
    with pytest.raises(ValueError, match="stop_rule='never' is not one of after_click, every_position"):
        clicks.cascade_clicks(jax.random.key(0), jnp.zeros(3), jnp.ones(3, bool), clicks.cascade_model("perfect", 3),
                              stop_rule="never")


def test_grades_are_clipped():
    perfect = clicks.cascade_model("perfect", 5)
    labels = jnp.array([7.0, -2.0, 4.0, 0.0, 9.0, 3.0, 1.0, 0.0])  # 7, 9 -> grade 4 (click 1); -2 -> 0
    got = clicks.cascade_clicks(jax.random.key(3), labels, jnp.ones(NUM_POSITIONS, bool), perfect)
    assert got[0] and not got[1] and got[2] and not got[3] and got[4]


def test_same_key_same_clicks_different_keys_differ():
    model = clicks.cascade_model("informational", 5)
    labels = np.tile(np.arange(NUM_POSITIONS) % 5.0, (NUM_LISTS, 1))
    where = np.ones(labels.shape, bool)
    a = _simulate(_keys(0, NUM_LISTS), labels, where, model)
    b = _simulate(_keys(0, NUM_LISTS), labels, where, model)
    c = _simulate(_keys(1, NUM_LISTS), labels, where, model)
    np.testing.assert_array_equal(a, b)
    assert (np.asarray(a) != np.asarray(c)).any()


class ClickVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(("cascade", "cascade"), ("pbm", "pbm"))
    def test_jit_matches_nojit_and_vmap_matches_loop(self, kind):
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 5, (NUM_LISTS, NUM_POSITIONS)).astype(np.float32)
        where = rng.random((NUM_LISTS, NUM_POSITIONS)) < 0.8
        keys = _keys(7, NUM_LISTS)
        if kind == "cascade":
            fn, model = clicks.cascade_clicks, clicks.cascade_model("navigational", 5)
        else:
            fn = clicks.position_based_clicks
            model = clicks.make_position_based_model(1.0 / np.arange(1, NUM_POSITIONS + 1), [0.1, 0.3, 0.5, 0.7, 0.9])
        # The batch shape of the statistical tests, so this vmapped program is compiled only once.
        batched = np.asarray(_simulate(keys, labels, where, model, click_fn=fn))
        assert batched.dtype == np.bool_ and batched.shape == (NUM_LISTS, NUM_POSITIONS)
        for i in (0, 1, NUM_LISTS - 1):
            single = self.variant(fn)(keys[i], jnp.asarray(labels[i]), jnp.asarray(where[i]), model)
            assert single.dtype == jnp.bool_
            np.testing.assert_array_equal(single, batched[i])


# ------------------------------------------------------------------------------------------
# Statistics against the table
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_grades", [2, 3, 5])
def test_cascade_click_and_stop_rates_match_table(num_grades):
    """Per grade: click rate at position 1 (always examined) and the stop rate after a click.

    Lists are ``[g, top, top, ...]``. After a click on position 1 the user makes no later click
    iff they stop, or they go on and skip all ``L - 1`` top-grade documents:
    ``P(no later click | click) = s_g + (1 - s_g) (1 - c_top)^(L-1)``.

    To share one compiled program, 2- and 3-grade models are padded to 5 entries by repeating
    their top grade; the labels stay below G, so the padding is never read (clipping to G-1 is
    tested separately and the exact table vectors by ``test_cascade_table``).
    """
    grades = np.arange(NUM_LISTS) % num_grades  # >= 20,000 lists per grade
    per_grade = NUM_LISTS // num_grades
    labels = np.full((NUM_LISTS, NUM_POSITIONS), num_grades - 1, np.float32)
    labels[:, 0] = grades
    where = np.ones(labels.shape, bool)
    for name in ("perfect", "navigational", "informational", "random"):
        model = clicks.cascade_model(name, num_grades)
        model = jax.tree.map(lambda v: jnp.pad(v, (0, 5 - num_grades), mode="edge"), model)
        click_prob, stop_prob = TABLE[name, num_grades]
        got = np.asarray(_simulate(_keys(num_grades, NUM_LISTS), labels, where, model))
        skip_rest = (1.0 - click_prob[-1]) ** (NUM_POSITIONS - 1)
        for g in range(num_grades):
            rows = got[grades == g]
            _assert_rate(rows[:, 0].sum(), per_grade, click_prob[g], f"{name}/{num_grades} click rate of grade {g}")
            clicked = rows[rows[:, 0]]
            if len(clicked) < 100:  # P(click | g) = 0: nothing to measure
                continue
            expected = stop_prob[g] + (1.0 - stop_prob[g]) * skip_rest
            _assert_rate((~clicked[:, 1:].any(axis=1)).sum(), len(clicked), expected,
                         f"{name}/{num_grades} stop rate of grade {g}")


def _pattern_probability(pattern, grades, click_prob, stop_prob):
    """Exact ``P(clicks == pattern)`` by recursion over positions: scan, click, then stop or go on."""
    if not pattern:
        return 1.0
    c, s = click_prob[grades[0]], stop_prob[grades[0]]
    rest_p, rest_g = pattern[1:], grades[1:]
    if not pattern[0]:
        return (1.0 - c) * _pattern_probability(rest_p, rest_g, click_prob, stop_prob)
    stop_then_nothing = s * (0.0 if any(rest_p) else 1.0)
    return c * (stop_then_nothing + (1.0 - s) * _pattern_probability(rest_p, rest_g, click_prob, stop_prob))


@pytest.mark.parametrize("name", ["navigational", "informational"])
def test_cascade_pattern_distribution_chi2(name):
    """Full joint distribution of the 2^4 click patterns on one 4-position list (χ² goodness of fit)."""
    model = clicks.cascade_model(name, 5)
    click_prob, stop_prob = TABLE[name, 5]
    grades = [4, 1, 3, 2]
    num_lists = NUM_LISTS
    labels = np.zeros((num_lists, NUM_POSITIONS), np.float32)
    labels[:, :4] = grades
    where = np.zeros(labels.shape, bool)
    where[:, :4] = True
    got = np.asarray(_simulate(_keys(11, num_lists), labels, where, model))
    assert not got[:, 4:].any()  # padding is never clicked
    codes = got[:, :4] @ (1 << np.arange(4))  # pattern k: position i clicked iff bit i of k
    expected = np.array([_pattern_probability([bool(k >> i & 1) for i in range(4)], grades, click_prob, stop_prob)
                         for k in range(16)])
    assert abs(expected.sum() - 1.0) < 1e-12
    observed = np.bincount(codes, minlength=16)
    keep = expected > 0
    assert observed[~keep].sum() == 0, "a pattern with probability 0 occurred"
    p_value = stats.chisquare(observed[keep], expected[keep] * num_lists).pvalue
    assert p_value > 1e-3, p_value


def test_position_based_rates():
    examination = np.array([1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    attraction = [0.1, 0.5, 0.9]
    model = clicks.make_position_based_model(examination, attraction)
    num_lists = NUM_LISTS
    labels = np.tile(np.array([2, 1, 0, 2, 1, 0, 2, 2], np.float32), (num_lists, 1))
    where = np.ones(labels.shape, bool)
    got = np.asarray(_simulate(_keys(5, num_lists), labels, where, model, click_fn=clicks.position_based_clicks))
    for r in range(NUM_POSITIONS):
        expected = examination[r] * attraction[int(labels[0, r])]
        _assert_rate(got[:, r].sum(), num_lists, expected, f"PBM click rate at position {r}")
    # Independence across positions: P(click_0 and click_3) = P(click_0) P(click_3).
    _assert_rate((got[:, 0] & got[:, 3]).sum(), num_lists, 0.9 * 0.5 * 0.9, "PBM joint rate")
