"""Tests for ``jaxrank.clicks.multileave``: team-draft and probabilistic multileaving.

References: ``tests/reference/multileaving.py`` (plain Python from the papers, no shared code),
replaying the very uniforms the JAX code draws (``multileave._uniforms``), so lists, teams,
assignments and credits must agree exactly, not only in law. Random cases use ``N = 8``
documents with tied integer scores and padding anywhere, 1..8 of them real, ``L = 5`` slots and
``n = 3`` rankers (two rounds, the second partial) or ``n = 6`` (one partial round). Batched calls
have ``B = 64`` queries so the few compiled programs are shared across tests.
"""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from scipy import stats
from tests.reference import interleaving as ref_interleave
from tests.reference import multileaving as ref

from jaxrank import clicks
from jaxrank.clicks import multileave

NUM_DOCS = 8
LIST_SIZE = 5
BATCH = 64


def _batch(name: str):
    fn = getattr(clicks, name)
    if name.startswith("probabilistic"):
        single = lambda k, s, w, tau: fn(k, s, w, list_size=LIST_SIZE, tau=tau)  # noqa: E731
        return jax.jit(jax.vmap(single, in_axes=(0, 0, 0, None)))
    return jax.jit(jax.vmap(functools.partial(fn, list_size=LIST_SIZE)))


_BATCHED = {name: _batch(name) for name in ("team_draft_multileave", "probabilistic_multileave")}


def _run(name, keys, scores, where, tau=3.0):
    """``[B, ...]`` outputs of multileaver ``name`` on ``scores [B, n, N]``, ``where [B, N]``."""
    args = (keys, jnp.asarray(scores, jnp.float32), jnp.asarray(where))
    if name.startswith("probabilistic"):
        args += (jnp.asarray(tau, jnp.float32),)
    return tuple(np.array(x) for x in _BATCHED[name](*args))


def _batched_uniforms(num_rankers):
    return jax.jit(jax.vmap(lambda k: multileave._uniforms(k, num_rankers, LIST_SIZE)))


def _draws(keys, num_rankers):
    """The uniforms each list consumed: ``(order_u [B, R, n], pick_u [B, L])`` as float64."""
    order_u, pick_u = _batched_uniforms(num_rankers)(keys)
    return np.asarray(order_u, np.float64), np.asarray(pick_u, np.float64)


def _random_queries(seed, num, num_rankers, num_docs=NUM_DOCS):
    """Tied integer scores ``[B, n, N]``, padding anywhere, 1..N real documents."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, (num, num_rankers, num_docs)).astype(np.float32)
    where = np.zeros((num, num_docs), bool)
    for i in range(num):
        where[i, rng.choice(num_docs, rng.integers(1, num_docs + 1), replace=False)] = True
    return scores, where


def _keys(seed, num):
    return jax.random.split(jax.random.key(seed), num)


def _real(scores, w):
    """Reference view of one query: per-ranker real scores and the map reference doc -> our index."""
    idx = np.flatnonzero(w)
    return [[float(x) for x in s[idx]] for s in scores], idx


def _check_list_basics(docs, shown, where):
    num_shown = min(LIST_SIZE, int(where.sum()))
    assert shown.tolist() == [True] * num_shown + [False] * (LIST_SIZE - num_shown)
    assert (docs[~shown] == -1).all()
    assert len(set(docs[shown].tolist())) == num_shown, f"repeated document in {docs}"
    assert where[docs[shown]].all(), f"padding shown: {docs} with mask {where}"


# ------------------------------------------------------------------------------------------
# Team Draft Multileaving
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_rankers", [3, 6])
def test_tdm_matches_reference_on_same_draws_and_invariants(num_rankers):
    num = 3 * BATCH
    scores, where = _random_queries(1 + num_rankers, num, num_rankers)
    keys = _keys(2 + num_rankers, num)
    docs, shown, team = _run("team_draft_multileave", keys, scores, where)
    order_u, _ = _draws(keys, num_rankers)
    rng = np.random.default_rng(3)
    clicked = rng.random((num, LIST_SIZE)) < 0.4
    credit = np.asarray(jax.jit(jax.vmap(functools.partial(clicks.team_draft_multileave_credit,
                                                           num_rankers=num_rankers)))(team, clicked, shown))
    first_pickers = []
    for i in range(num):
        _check_list_basics(docs[i], shown[i], where[i])
        real, idx = _real(scores[i], where[i])
        want_docs, want_teams = ref.team_draft_multileave(order_u[i], real, LIST_SIZE)
        assert docs[i][shown[i]].tolist() == [int(idx[d]) for d in want_docs], (i, docs[i])
        assert team[i][shown[i]].tolist() == want_teams, (i, team[i])
        assert (team[i][~shown[i]] == -1).all()
        # each full round has every ranker once: team sizes differ by at most 1 after every position
        for n in range(1, int(shown[i].sum()) + 1):
            sizes = np.bincount(team[i][:n], minlength=num_rankers)
            assert sizes.max() - sizes.min() <= 1, team[i]
        want_credit = ref.team_draft_credit(want_teams, clicked[i][shown[i]].tolist(), num_rankers)
        np.testing.assert_array_equal(credit[i], want_credit)
        assert credit[i].sum() == (clicked[i] & shown[i]).sum()
        if shown[i].any():
            first_pickers.append(team[i][0])
    # the first picker is uniform over the rankers
    counts = np.bincount(first_pickers, minlength=num_rankers)
    assert stats.chisquare(counts).pvalue > 1e-3, counts
    assert credit.dtype == np.float32


def test_tdm_credit_and_preferences_simple_values():
    team = jnp.array([2, 0, 1, 0, -1])
    clicked = jnp.array([True, True, False, True, True])
    shown = jnp.array([True, True, True, True, False])
    credit = clicks.team_draft_multileave_credit(team, clicked, shown, 3)
    np.testing.assert_array_equal(credit, [2.0, 0.0, 1.0])  # the click on the unshown slot is ignored
    np.testing.assert_array_equal(clicks.multileave_preferences(credit),
                                  [[0, 1, 1], [-1, 0, -1], [-1, 1, 0]])


# ------------------------------------------------------------------------------------------
# Probabilistic Multileave
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tau", [3.0, 1.0])
def test_pm_matches_reference_on_same_draws(tau):
    num, num_rankers = 3 * BATCH, 3
    scores, where = _random_queries(10, num, num_rankers)
    keys = _keys(11, num)
    docs, shown, assignment = _run("probabilistic_multileave", keys, scores, where, tau)
    order_u, pick_u = _draws(keys, num_rankers)
    for i in range(num):
        _check_list_basics(docs[i], shown[i], where[i])
        real, idx = _real(scores[i], where[i])
        want_docs, _ = ref.probabilistic_multileave(order_u[i], pick_u[i], real, LIST_SIZE, tau)
        assert docs[i][shown[i]].tolist() == [int(idx[d]) for d in want_docs], (i, docs[i])
        want = ref.posteriors_of_list(want_docs, real, tau)
        np.testing.assert_allclose(assignment[i][shown[i]], np.asarray(want).reshape(-1, num_rankers),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(assignment[i][~shown[i]], 1.0 / num_rankers)
    np.testing.assert_allclose(assignment.sum(-1), 1.0, rtol=1e-5)
    assert assignment.dtype == np.float32


def test_pm_credit_and_preferences_match_enumeration():
    num, num_rankers = BATCH, 3
    scores, where = _random_queries(20, num, num_rankers)
    docs, shown, assignment = _run("probabilistic_multileave", _keys(21, num), scores, where)
    rng = np.random.default_rng(22)
    assignment[:4] = rng.dirichlet(np.ones(num_rankers), (4, LIST_SIZE))  # generic rows too
    shown[:4] = True
    clicked = rng.random((num, LIST_SIZE)) < 0.5
    clicked[4:8] = True
    a, c, s = jnp.asarray(assignment, jnp.float32), jnp.asarray(clicked), jnp.asarray(shown)
    credit = np.asarray(jax.jit(jax.vmap(clicks.probabilistic_multileave_credit))(a, c, s))
    prefs = np.asarray(jax.jit(jax.vmap(clicks.probabilistic_multileave_preferences))(a, c, s))
    signs = np.asarray(jax.jit(jax.vmap(clicks.multileave_preferences))(jnp.asarray(credit)))
    for i in range(num):
        rows = np.asarray(assignment[i][shown[i]], np.float32).astype(np.float64).tolist()
        cl = clicked[i][shown[i]].tolist()
        np.testing.assert_allclose(credit[i], ref.expected_credit(rows, cl, num_rankers), atol=1e-5)
        np.testing.assert_allclose(prefs[i], ref.preferences_by_enumeration(rows, cl, num_rankers), atol=1e-5)
        np.testing.assert_array_equal(signs[i], ref.sign_matrix(credit[i].tolist()))
        assert abs(credit[i].sum() - sum(cl)) < 1e-5
    np.testing.assert_array_equal(prefs, -np.swapaxes(prefs, 1, 2))
    assert np.abs(prefs).max() <= 1.0 + 1e-6


def test_pm_two_rankers_agree_with_probabilistic_interleave():
    """n = 2: ``assignment[:, 1]`` is PI's ``P_2 / (P_1 + P_2)`` and the preference is PI's outcome."""
    num = BATCH
    scores, where = _random_queries(30, num, 2)
    docs, shown, assignment = _run("probabilistic_multileave", _keys(31, num), scores, where)
    for i in range(num):
        (a, b), idx = _real(scores[i], where[i])
        to_ref = {int(d): j for j, d in enumerate(idx)}
        p_first, p_second = ref_interleave.posteriors_of_list([to_ref[int(d)] for d in docs[i][shown[i]]], a, b)
        np.testing.assert_allclose(assignment[i][shown[i], 1], [y / (x + y) for x, y in zip(p_first, p_second)],
                                   rtol=1e-5, atol=1e-6)
    clicked = jnp.asarray(np.random.default_rng(32).random((num, LIST_SIZE)) < 0.5)
    a, s = jnp.asarray(assignment), jnp.asarray(shown)
    prefs = jax.vmap(clicks.probabilistic_multileave_preferences)(a, clicked, s)
    outcome = jax.vmap(clicks.probabilistic_outcome)(a[:, :, 1], clicked, s)
    np.testing.assert_allclose(prefs[:, 1, 0], outcome, atol=1e-5)


def test_sampled_outcome_has_the_law_of_the_monte_carlo_estimate():
    """``sampled_outcome`` on ``click_difference_law``'s terms is distributed as Algorithm 2's estimate
    from ``N`` sampled assignments of the clicked positions (χ² over its values), and an exact tie
    comes out positive about as often as negative."""
    from jaxrank.clicks.lists import click_difference_law, sampled_outcome

    rows = [[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.4, 0.4, 0.2], [0.2, 0.2, 0.6]]
    clicked, num_samples, draws = [True, False, True, True], 4, 4000
    a = jnp.asarray(rows, jnp.float32)
    win, loss = click_difference_law(a[:, 1], a[:, 0], jnp.asarray(clicked))
    keys = jax.random.split(jax.random.key(40), draws)
    ours = np.asarray(jax.jit(jax.vmap(sampled_outcome, in_axes=(0, None, None, None)), static_argnums=3)(
        keys, win, loss, num_samples))
    rng = np.random.default_rng(41)
    theirs = np.array([ref.sampled_preference(rows, clicked, num_samples, rng) for _ in range(draws)])
    values = np.arange(-num_samples, num_samples + 1) / num_samples
    table = np.array([[np.sum(np.isclose(x, v)) for v in values] for x in (ours, theirs)])
    table = table[:, table.sum(0) > 0]
    assert table.sum() == 2 * draws
    assert stats.chi2_contingency(table)[1] > 1e-3, table
    tie = jnp.asarray([0.5, 0.5, 0.5]), jnp.asarray([0.5, 0.5, 0.5])
    win, loss = click_difference_law(*tie, jnp.asarray([True, True, False]))
    assert abs(float(win) - float(loss)) < 1e-7
    tied = np.asarray(jax.vmap(sampled_outcome, in_axes=(0, None, None, None))(keys, win, loss, 100))
    positive, negative = np.mean(tied > 0), np.mean(tied < 0)
    assert abs(positive - negative) < 0.05 and positive > 0.4, (positive, negative)


# ------------------------------------------------------------------------------------------
# Laws (slow): n = 2 TDM is team-draft interleaving; the better ranker wins
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tdm_two_rankers_has_the_law_of_team_draft_interleave():
    scores = np.array([[5, 3, 3, 1, 0, 2, 9, 4], [0, 1, 2, 3, 4, 5, 6, 7]], np.float32)
    where = np.array([1, 1, 1, 1, 1, 0, 1, 1], bool)
    num = 40 * BATCH
    docs, _, team = _run("team_draft_multileave", _keys(40, num), np.broadcast_to(scores, (num, 2, NUM_DOCS)),
                         np.broadcast_to(where, (num, NUM_DOCS)))
    tdi = jax.jit(jax.vmap(functools.partial(clicks.team_draft_interleave, list_size=LIST_SIZE),
                           in_axes=(0, None, None, None)))
    docs_i, _, team_i = map(np.asarray, tdi(_keys(41, num), scores[0], scores[1], where))
    outcome = lambda d, t: [tuple(x) + tuple(y) for x, y in zip(d, t)]  # noqa: E731
    got, want = outcome(docs, team), outcome(docs_i, team_i - 1)  # TDI teams 1, 2 -> rankers 0, 1
    values = sorted(set(got) | set(want))
    table = np.array([[got.count(v) for v in values], [want.count(v) for v in values]])
    assert set(got) == set(want), values
    p_value = stats.chi2_contingency(table).pvalue
    print(f"TDM(n=2) vs TDI: {len(values)} lists, p={p_value:.3g}")
    assert p_value > 1e-3, table


@functools.partial(jax.jit, static_argnames="method")
def _mean_credit_and_preferences(keys, scores, labels, where, method):
    """Mean credit ``[n]`` and mean preference matrix over comparisons with perfect cascade clicks."""
    model = clicks.cascade_model("perfect", 5)

    def one(key, s, lab, w):
        key_list, key_click = jax.random.split(key)
        if method == "team_draft":
            docs, shown, team = clicks.team_draft_multileave(key_list, s, w, list_size=LIST_SIZE)
        else:
            docs, shown, assignment = clicks.probabilistic_multileave(key_list, s, w, list_size=LIST_SIZE)
        click = clicks.cascade_clicks(key_click, lab[jnp.maximum(docs, 0)], shown, model)
        if method == "team_draft":
            credit = clicks.team_draft_multileave_credit(team, click, shown, s.shape[0])
            return credit, clicks.multileave_preferences(credit)
        credit = clicks.probabilistic_multileave_credit(assignment, click, shown)
        return credit, clicks.probabilistic_multileave_preferences(assignment, click, shown)

    credit, prefs = jax.vmap(one)(keys, scores, labels, where)
    return credit.mean(0), prefs.mean(0)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["team_draft", "probabilistic"])
def test_relevance_order_wins_in_expectation(method):
    """Ranker 0 sorts by the labels; rankers 1..3 are noisy versions of it or random."""
    num, num_rankers = 32 * BATCH, 4
    rng = np.random.default_rng(50)
    labels = rng.integers(0, 5, (num, NUM_DOCS)).astype(np.float32)
    where = np.ones((num, NUM_DOCS), bool)
    where[: num // 2, -2:] = False
    noise = rng.normal(size=(num, num_rankers, NUM_DOCS))
    scores = labels[:, None, :] + np.array([0.0, 1.0, 3.0, 100.0])[None, :, None] * noise
    scores[:, 0] = labels + 1e-3 * noise[:, 0]  # ties among equal labels broken at random
    credit, prefs = map(np.asarray, _mean_credit_and_preferences(
        _keys(51, num), jnp.asarray(scores, jnp.float32), jnp.asarray(labels), jnp.asarray(where), method))
    print(f"{method}: mean credit {np.round(credit, 3)}, P[0, 1:] {np.round(prefs[0, 1:], 3)}")
    assert credit[0] > credit[1:].max() and (prefs[0, 1:] > 0.0).all(), (credit, prefs)
    assert credit[1] > credit[3] and prefs[1, 3] > 0.0  # less noise beats random


# ------------------------------------------------------------------------------------------
# Shared: validation, edge cases, jit/nojit, vmap vs loop, from_ranks, compile once
# ------------------------------------------------------------------------------------------

MULTILEAVERS = ("team_draft_multileave", "probabilistic_multileave")


@pytest.mark.parametrize("name", MULTILEAVERS)
def test_bad_arguments(name):
    fn, key, where = getattr(clicks, name), jax.random.key(0), jnp.ones(4, bool)
    for list_size in (0, -1, 2.5, True, None):
        with pytest.raises(ValueError, match="list_size must be an int >= 1"):
            fn(key, jnp.zeros((3, 4)), where, list_size=list_size)
    with pytest.raises(ValueError, match="needs n >= 2 rankers"):
        fn(key, jnp.zeros((1, 4)), where)
    for scores, mask in ((jnp.zeros((3, 4)), jnp.ones(5, bool)), (jnp.zeros(4), where),
                         (jnp.zeros((2, 3, 4)), where)):
        with pytest.raises(ValueError, match=r"scores must be \[n, N\] and where \[N\]"):
            fn(key, scores, mask)


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan"), [1.0, 2.0]])
def test_bad_tau(tau):
    with pytest.raises(ValueError, match="tau must be a positive scalar"):
        clicks.probabilistic_multileave(jax.random.key(0), jnp.zeros((2, 4)), jnp.ones(4, bool), tau=tau)


def test_tau_too_large_for_float32_and_bad_num_rankers():
    s, w = jnp.zeros((2, 4)), jnp.ones(4, bool)
    clicks.probabilistic_multileave(jax.random.key(0), s, w, list_size=10, tau=17.0)  # fine
    with pytest.raises(ValueError, match=r"tau = 18.0 is too large.*tau <= 17.4"):
        clicks.probabilistic_multileave(jax.random.key(0), s, w, list_size=10, tau=18.0)
    for num_rankers in (1, 2.0, True):
        with pytest.raises(ValueError, match="num_rankers must be an int >= 2"):
            clicks.team_draft_multileave_credit(jnp.zeros(3, jnp.int32), jnp.ones(3, bool), jnp.ones(3, bool),
                                                num_rankers)


@pytest.mark.parametrize("name", MULTILEAVERS)
def test_all_masked_query_shows_nothing(name):
    scores, where = _random_queries(60, BATCH, 3)
    where[:] = False
    docs, shown, third = _run(name, _keys(61, BATCH), scores, where)
    assert not shown.any() and (docs == -1).all()
    if name == "team_draft_multileave":
        assert (third == -1).all()
    else:
        np.testing.assert_allclose(third, 1.0 / 3)


@pytest.mark.parametrize("name", MULTILEAVERS)
def test_from_ranks_matches_scores(name):
    scores, where = _random_queries(70, BATCH, 3)
    keys = _keys(71, BATCH)
    want = _run(name, keys, scores, where)
    ranks = jax.vmap(jax.vmap(clicks.score_ranks, in_axes=(0, None)))(jnp.asarray(scores), jnp.asarray(where))
    got = jax.jit(jax.vmap(functools.partial(getattr(clicks, name + "_from_ranks"), list_size=LIST_SIZE)))(
        keys, ranks, jnp.asarray(where))
    chex.assert_trees_all_equal(tuple(np.asarray(x) for x in got), want)


class MultileaveVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*[(n, n) for n in MULTILEAVERS])
    def test_jit_matches_nojit_and_vmap_matches_loop(self, name):
        scores, where = _random_queries(80, BATCH, 3)
        keys = _keys(81, BATCH)
        batched = _run(name, keys, scores, where)
        fn = self.variant(functools.partial(getattr(clicks, name), list_size=LIST_SIZE))
        for i in range(0, 4, 2):
            single = fn(keys[i], jnp.asarray(scores[i]), jnp.asarray(where[i]))
            chex.assert_trees_all_close(jax.tree.map(np.asarray, tuple(single)), tuple(x[i] for x in batched))
        assert single[0].dtype == jnp.int32 and single[1].dtype == jnp.bool_
        assert single[2].dtype == (jnp.float32 if name.startswith("probabilistic") else jnp.int32)


def test_pm_compiles_once_across_tau_and_keys():
    scores, where = _random_queries(90, 1, 3)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(key, tau):
        return clicks.probabilistic_multileave(key, jnp.asarray(scores[0]), jnp.asarray(where[0]),
                                               list_size=LIST_SIZE, tau=tau)

    a = run(jax.random.key(0), jnp.asarray(3.0, jnp.float32))
    b = run(jax.random.key(1), jnp.asarray(0.5, jnp.float32))
    c = run(jax.random.key(0), jnp.asarray(3.0, jnp.float32))
    chex.assert_trees_all_equal(a, c)
    assert not np.array_equal(np.asarray(a[2]), np.asarray(b[2]))


@pytest.mark.parametrize("name", MULTILEAVERS)
def test_same_key_same_list_different_keys_differ(name):
    scores, where = _random_queries(100, BATCH, 3)
    where[:] = True
    a = _run(name, _keys(101, BATCH), scores, where)
    b = _run(name, _keys(101, BATCH), scores, where)
    c = _run(name, _keys(102, BATCH), scores, where)
    chex.assert_trees_all_equal(a, b)
    assert (a[0] != c[0]).any()
