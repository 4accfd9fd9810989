"""Tests for ``jaxrank.clicks.fitted``: a fitted DBN-family click model as the user of every simulator.

The DBN click probabilities are checked against a NumPy loop written from the chain of Chuklin, Markov,
de Rijke (2015, ch. 3): ``P(E_0) = 1``, ``P(C_r) = P(E_r) α_r``, ``P(E_{r+1}) = P(E_r) γ (1 − α_r σ_r)``.
A user built from a cascade user's own parameters (``α = P(click | g)``, ``σ = P(stop | g)``, ``γ = 1``)
clicks exactly as ``cascade_clicks`` on the same keys, so OLTR runs, interleaved duels, the
preference-matrix estimate and counterfactual logs come out the same with either; built through a DBN's
logits it reproduces the cascade user's click rates within binomial intervals.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import oltr
from jaxrank.click_models import CLICK_MODELS
from jaxrank.click_models.dbn import DBNParams
from jaxrank.clicks import (FittedUser, cascade_clicks, cascade_model, check_user, fitted_click_probs, fitted_clicks,
                            fitted_user, make_fitted_user, user_clicks)
from jaxrank.counterfactual.simulation import simulate_sessions
from jaxrank.data import as_ragged, synthetic_queries
from jaxrank.envs import estimate_preference_matrix, ranker_duel_env, single_feature_rankers

K = 8  # displayed positions
N = 40  # documents of the user's tables
Z = 4.5  # standard errors of a binomial rate check
# Lerot's 3-grade cascade users, typed in again: (P(click | g), P(stop | click, g)).
CASCADE = {"navigational": ([0.05, 0.5, 0.95], [0.2, 0.5, 0.9]),
           "informational": ([0.4, 0.7, 0.9], [0.1, 0.3, 0.5])}


def _dbn_click_probs(alpha, sigma, gamma, shown):
    """``P(C_r = 1)`` of the DBN chain at each position of one list, a plain loop over positions;
    unshown positions are skipped (the user passes them) and have probability 0."""
    out = np.zeros(len(alpha))
    examined = 1.0
    for r in range(len(alpha)):
        if not shown[r]:
            continue
        out[r] = examined * alpha[r]
        examined = examined * gamma * (1.0 - alpha[r] * sigma[r])
    return out


def _random_user(seed, gamma=0.7):
    rng = np.random.default_rng(seed)
    return make_fitted_user(rng.uniform(size=N), rng.uniform(size=N), gamma)


def test_click_probs_equal_the_dbn_chain():
    rng = np.random.default_rng(0)
    for seed in range(5):
        user = _random_user(seed, gamma=rng.uniform(0.3, 1.0))
        ids = rng.integers(0, N, size=K)
        shown = np.arange(K) < rng.integers(1, K + 1)
        shown[rng.integers(0, K)] = False  # a hole too: the user passes it
        got = np.asarray(fitted_click_probs(jnp.asarray(ids), jnp.asarray(shown), user))
        a, s, g = (np.asarray(x, np.float64) for x in user)
        want = _dbn_click_probs(a[ids], s[ids], float(g), shown)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_sampled_clicks_follow_the_click_probs():
    user = _random_user(1, gamma=0.8)
    ids, shown = jnp.arange(K) * 3, jnp.arange(K) < 7
    num = 40_000
    clicks = jax.vmap(lambda k: fitted_clicks(k, ids, shown, user))(jax.random.split(jax.random.key(0), num))
    rate = np.asarray(clicks, np.float64).mean(0)
    a, s, g = (np.asarray(x, np.float64) for x in user)
    want = _dbn_click_probs(a[np.asarray(ids)], s[np.asarray(ids)], float(g), np.asarray(shown))
    se = np.sqrt(want * (1 - want) / num) + 1e-12
    assert np.all(np.abs(rate - want) <= Z * se), (rate, want)
    assert not np.asarray(clicks)[:, 7].any()


def test_fitted_user_maps_each_dbn_family_model():
    rng = np.random.default_rng(2)
    logits = [rng.normal(size=6).astype(np.float32) for _ in range(2)] + [np.float32(0.4)]
    sig = lambda x: 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))  # noqa: E731
    pairs = np.array([[5, 0], [2, 2]])
    user = fitted_user(CLICK_MODELS.build("dbn"), DBNParams(*map(jnp.asarray, logits)), pairs=pairs)
    np.testing.assert_allclose(user.attraction, sig(logits[0])[pairs.ravel()], rtol=1e-6)
    np.testing.assert_allclose(user.satisfaction, sig(logits[1])[pairs.ravel()], rtol=1e-6)
    np.testing.assert_allclose(user.continuation, sig(logits[2]), rtol=1e-6)
    sdbn = CLICK_MODELS.build("sdbn")
    user = fitted_user(sdbn, sdbn.init_params(6, K)._replace(attraction=jnp.asarray(logits[0])))
    assert float(user.continuation) == 1.0 and np.allclose(user.satisfaction, 0.5)
    cm = CLICK_MODELS.build("cm")
    user = fitted_user(cm, cm.init_params(6, K))
    assert float(user.continuation) == 1.0 and np.all(np.asarray(user.satisfaction) == 1.0)
    pbm = CLICK_MODELS.build("pbm")
    with pytest.raises(ValueError, match="DBN-family click model .* got 'pbm'"):
        fitted_user(pbm, pbm.init_params(6, K))
    with pytest.raises(ValueError, match=r"pair id 6 is outside the fitted tables \[0, 6\)"):
        fitted_user(CLICK_MODELS.build("dbn"), DBNParams(*map(jnp.asarray, logits)), pairs=[0, 6])


def test_bad_users_are_refused():
    with pytest.raises(ValueError, match=r"FittedUser.satisfaction\[1\] = nan is not a probability"):
        make_fitted_user([0.5, 0.5], [0.2, np.nan])
    with pytest.raises(ValueError, match="attraction and satisfaction \\[N\\]"):
        make_fitted_user([0.5, 0.5], [0.2])
    with pytest.raises(ValueError, match=r"FittedUser.continuation\[0\] = 1.5"):
        make_fitted_user([0.5], [0.2], 1.5)
    user = _random_user(0)
    with pytest.raises(ValueError, match="has 40 documents but the simulator's queries number theirs 0..9"):
        check_user(user, 10)
    with pytest.raises(ValueError, match="FittedUser stops as its DBN chain does"):
        user_clicks(jax.random.key(0), user, jnp.zeros(K), jnp.arange(K), jnp.ones(K, bool),
                    stop_rule="every_position")
    with pytest.raises(ValueError, match="got dict"):
        user_clicks(jax.random.key(0), {}, jnp.zeros(K), jnp.arange(K), jnp.ones(K, bool))


def _cascade_tables(name, labels):
    """The cascade user ``name`` as a ``FittedUser`` over documents with grades ``labels [N]``."""
    click, stop = (np.asarray(v, np.float32) for v in CASCADE[name])
    grades = np.asarray(labels).astype(int)
    return make_fitted_user(click[grades], stop[grades], 1.0)


@pytest.mark.parametrize("name", sorted(CASCADE))
def test_cascade_tables_click_exactly_as_the_cascade_user(name):
    labels = np.random.default_rng(3).integers(0, 3, size=N)
    user = _cascade_tables(name, labels)
    ids = jax.vmap(lambda k: jax.random.permutation(k, N)[:K])(jax.random.split(jax.random.key(1), 2000))
    shown = jnp.arange(K)[None, :] < jnp.arange(2000)[:, None] % K + 1
    keys = jax.random.split(jax.random.key(2), 2000)
    got = jax.vmap(lambda k, i, w: fitted_clicks(k, i, w, user))(keys, ids, shown)
    want = jax.vmap(lambda k, i, w: cascade_clicks(k, jnp.asarray(labels, jnp.float32)[i], w,
                                                   cascade_model(name, 3)))(keys, ids, shown)
    assert np.asarray(want).sum() > 1000
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(CASCADE))
def test_a_dbn_with_the_cascade_parameters_reproduces_its_click_rates(name):
    click, stop = (np.asarray(v, np.float64) for v in CASCADE[name])
    grades = np.array([2, 0, 1, 1, 0, 2, 0, 1])  # the list shown, one document per grade-position
    logit = lambda p: np.log(p) - np.log1p(-p)  # noqa: E731
    params = DBNParams(jnp.asarray(logit(click[grades]), jnp.float32), jnp.asarray(logit(stop[grades]), jnp.float32),
                       jnp.asarray(30.0, jnp.float32))  # γ = 1 within float32
    user = fitted_user(CLICK_MODELS.build("dbn"), params)
    num = 40_000
    clicks = jax.vmap(lambda k: fitted_clicks(k, jnp.arange(K), jnp.ones(K, bool), user))(
        jax.random.split(jax.random.key(4), num))
    rate = np.asarray(clicks, np.float64).mean(0)
    # The cascade user: examined until a click stops them; no stop without a click.
    want, examined = np.zeros(K), 1.0
    for r, g in enumerate(grades):
        want[r] = examined * click[g]
        examined *= 1.0 - click[g] * stop[g]
    se = np.sqrt(want * (1 - want) / num)
    assert np.all(np.abs(rate - want) <= Z * se), (rate, want)


def _oltr_queries():
    return oltr.click_queries(synthetic_queries(jax.random.key(0), num_queries=6, list_size=12, num_features=5,
                                                num_grades=3))


def test_oltr_runs_the_same_with_the_cascade_tables():
    train = _oltr_queries()
    ranker = oltr.RANKERS.build("pdgd")
    user = _cascade_tables("informational", np.asarray(train.labels).reshape(-1))  # document q·L + d
    run = lambda u: oltr.simulate(jax.random.key(5), ranker, train, train, u, checkpoints=(0, 20, 80))  # noqa: E731
    want, got = run(cascade_model("informational", 3)), run(user)
    assert float(want.online[-1]) > 0
    for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        np.testing.assert_array_equal(a, b)


def _duel_queries():
    return synthetic_queries(jax.random.key(0), num_queries=8, list_size=8, num_features=5, num_grades=3)


@pytest.mark.parametrize("method", ["probabilistic", "team_draft"])
def test_duels_are_the_same_with_the_cascade_tables(method):
    queries, rankers = _duel_queries(), single_feature_rankers([1, 2, 3], 5)
    padded = _cascade_tables("navigational", np.asarray(queries.labels).reshape(-1))  # q·N + d
    envs = [ranker_duel_env(queries, rankers, u, method=method) for u in (cascade_model("navigational", 3), padded)]
    keys = jax.random.split(jax.random.key(6), 300)
    wins = [jax.vmap(lambda k: env.duel(k, 0, 2))(keys) for env in envs]
    assert 0 < int(np.sum(wins[0])) < 300
    np.testing.assert_array_equal(*wins)


def test_the_preference_estimate_is_the_same_with_the_cascade_tables():
    ragged = as_ragged(_duel_queries())
    flat = _cascade_tables("navigational", np.asarray(ragged.labels))  # offsets[q] + d
    prefs = [estimate_preference_matrix(jax.random.key(7), ragged, single_feature_rankers([1, 2, 3], 5), u,
                                        "team_draft", 200, verbose=False)[0]
             for u in (cascade_model("navigational", 3), flat)]
    assert not np.all(prefs[0] == 0.5)
    np.testing.assert_array_equal(*prefs)


def test_counterfactual_logs_are_the_same_with_the_cascade_tables():
    queries = synthetic_queries(jax.random.key(1), num_queries=6, list_size=12, num_features=5, num_grades=3)
    user = _cascade_tables("informational", np.asarray(queries.labels).reshape(-1))  # q·L + d
    logs = [simulate_sessions(jax.random.key(8), queries, 400, u, temperature=1.0, num_positions=K)
            for u in (cascade_model("informational", 3), user)]
    assert np.asarray(logs[0].clicks).sum() > 100
    for a, b in zip(logs[0], logs[1]):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="has 40 documents but the simulator's queries number theirs 0..71"):
        simulate_sessions(jax.random.key(8), queries, 10, _random_user(0), num_positions=K)


def test_fitted_user_is_a_pytree_of_lanes():
    users = jax.tree.map(lambda *x: jnp.stack(x), _random_user(0), _random_user(1))
    assert isinstance(users, FittedUser) and users.attraction.shape == (2, N)
    probs = jax.vmap(lambda u: fitted_click_probs(jnp.arange(K), jnp.ones(K, bool), u))(users)
    np.testing.assert_allclose(probs[1], fitted_click_probs(jnp.arange(K), jnp.ones(K, bool), _random_user(1)))
