"""Propensity estimators of ``jaxrank.counterfactual``: parity with the loops of
``tests/reference/counterfactual.py`` on one small log, and recovery of the simulated examination
(a small log with a loose tolerance here; 10⁶ clicks inside bootstrap 95% intervals under ``--runslow``)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.counterfactual import (PROPENSITY_ESTIMATORS, bootstrap, click_model_propensities, dla, harvesting,
                                    propensity_data, randomization, rankers, regression_em, simulation, user_models)
from jaxrank.counterfactual.propensity_estimator import estimate
from jaxrank.click_models import CLICK_MODELS, fit_em
from jaxrank.data import synthetic_queries
from tests.reference import click_models as ref_click_models
from tests.reference import counterfactual as ref

K = 5
NUM_RANKERS = 4


@functools.lru_cache(maxsize=None)
def _setting(num_queries=30, list_size=8):
    queries = synthetic_queries(jax.random.key(0), num_queries=num_queries, list_size=list_size, num_features=4,
                                num_grades=3, min_docs=K + 1)
    theta = user_models.inverse_rank(K, 1.0)
    user = user_models.position_based(theta, user_models.graded_click_probability(2))
    return queries, user, np.asarray(theta / theta[0], np.float64)


def _swap_log(num_sessions, **kw):
    queries, user, _ = _setting(**kw)
    return randomization.swap_sessions(jax.random.key(1), queries, num_sessions, user, scores=queries.features[..., 0],
                                       num_positions=K)


def _harvest_log(num_sessions, **kw):
    """Sessions of several rankers (noisy label orders), pooled."""
    queries, user, _ = _setting(**kw)
    logs = []
    for i in range(NUM_RANKERS):
        scores = jax.random.normal(jax.random.key(10 + i), queries.labels.shape) + 1.5 * queries.labels
        logs.append(simulation.simulate_sessions(jax.random.key(20 + i), queries, num_sessions, user, scores=scores,
                                                 num_positions=K))
    return jax.tree.map(lambda *x: jnp.concatenate(x) if jnp.ndim(x[0]) else x[0], *logs)


def _grade_features(queries):
    """One-hot grades: a well-specified relevance regression (γ depends on the grade alone)."""
    return jax.nn.one_hot(queries.labels.astype(jnp.int32), 3)


def test_swap_propensities_parity_and_recovery():
    log, r = _swap_log(6000)
    ours = np.asarray(randomization.swap_propensities(log, r))
    want = ref.swap_ratio(np.asarray(log.clicks, float), np.asarray(log.mask), np.asarray(r))
    np.testing.assert_allclose(ours, want, rtol=1e-5)
    np.testing.assert_allclose(ours, _setting()[2], atol=0.12)
    # the control sessions are never changed, and swap-r sessions show the logger's first document at r
    unswapped = simulation.simulate_sessions(jax.random.key(1), _setting()[0], 6000, _setting()[1],
                                             scores=_setting()[0].features[..., 0], num_positions=K)
    rows = np.flatnonzero(np.asarray(r) == 2)
    np.testing.assert_array_equal(log.doc[rows, 2], unswapped.doc[rows, 0])
    np.testing.assert_array_equal(log.doc[np.asarray(r) == 0], unswapped.doc[np.asarray(r) == 0])


def test_harvesting_parity_and_recovery():
    log = _harvest_log(1500)
    counts = simulation.session_counts(log, *_setting()[0].labels.shape)
    sets = harvesting.intervention_sets(counts)
    c, n = ref.harvested_sets(np.asarray(log.query), np.asarray(log.doc), np.asarray(log.clicks, float),
                              np.asarray(log.mask), K)
    np.testing.assert_allclose(sets.clicks, c, rtol=1e-5)
    np.testing.assert_array_equal(sets.size, n)
    truth = _setting()[2]
    for ours, want in ((harvesting.pivot_propensities(sets), ref.pivot(c)),
                       (harvesting.adjacent_chain_propensities(sets), ref.adjacent_chain(c)),
                       (harvesting.all_pairs_propensities(sets, num_steps=3000), ref.all_pairs(c, n))):
        np.testing.assert_allclose(ours, want, rtol=2e-3)
        np.testing.assert_allclose(ours, truth, atol=0.1)


def test_pair_index_names_each_unordered_pair_once():
    index = harvesting.pair_index(6)
    pairs = {(min(a, b), max(a, b)): index[a, b] for a in range(6) for b in range(6) if a != b}
    assert sorted(pairs.values()) == list(range(15))  # (1, 6) and (2, 3) do not share a relevance
    np.testing.assert_array_equal(index, index.T)


def test_the_click_model_propensities_are_the_session_em_of_the_pbm():
    """EM on the [P, K] cell counts has the iterates of ``fit_em`` over the sessions themselves."""
    log = _harvest_log(300)
    ours = click_model_propensities.pbm_em(*click_model_propensities.cell_counts(log, int(log.num_pairs)), 30)
    want = fit_em(log, CLICK_MODELS.build("pbm"), num_iterations=30)
    np.testing.assert_allclose(jax.nn.sigmoid(ours.examination), jax.nn.sigmoid(want.examination), rtol=1e-5)
    np.testing.assert_allclose(jax.nn.sigmoid(ours.attraction), jax.nn.sigmoid(want.attraction), rtol=1e-5,
                               atol=1e-7)
    with pytest.raises(ValueError, match="num_iterations"):
        click_model_propensities.pbm_propensities(log, num_iterations=0)


def _run(name, data, num_steps, *, options=None, **hparams):
    """``propensities`` of the registered estimator ``name`` after ``num_steps`` steps, through its contract."""
    estimator = PROPENSITY_ESTIMATORS.build(name, **(options or {}))
    key = jax.random.key(0)
    state = estimator.init(key, data, **hparams)
    return np.asarray(estimator.propensities(jax.jit(estimate, static_argnums=(1, 4))(
        key, estimator, state, data, num_steps)[0]))


def test_registered_estimators_reproduce_the_reference_loops():
    """The estimators of ``PROPENSITY_ESTIMATORS`` on the pooled counts of four rankers, against the loops of
    ``tests/reference`` on the sessions: the PBM against the click-model reference's EM (every assignment
    of the hidden variables, Chuklin et al. ch. 4), regression EM against Wang et al.'s impression-level
    loop, harvesting against the interventional sets' ratios and scipy's all-pairs maximum likelihood."""
    queries = _setting()[0]
    log = _harvest_log(400)
    counts = simulation.session_counts(log, *queries.labels.shape)
    features = np.asarray(_grade_features(queries), np.float64)
    data = propensity_data(counts, features)
    arrays = [np.asarray(x) for x in (log.query, log.doc, log.clicks, log.mask)]
    # regression EM: 4 iterations of 2 Newton steps, lam 1e-3
    theta, _, _ = ref.regression_em(*arrays, features, K, 4, 1e-3, 2)
    np.testing.assert_allclose(_run("regression_em", data, 4, options={"newton_steps": 2}, lam=1e-3),
                               theta / theta[0], rtol=1e-4)
    # harvesting: the closed forms, and the all-pairs extremum
    c, n = ref.harvested_sets(*arrays[:2], arrays[2].astype(float), arrays[3], K)
    for method, want in (("pivot", ref.pivot(c)), ("adjacent_chain", ref.adjacent_chain(c))):
        np.testing.assert_allclose(_run("harvesting", data, 1, options={"method": method}), want, rtol=1e-5)
    np.testing.assert_allclose(_run("harvesting", data, 3000), ref.all_pairs(c, n), rtol=2e-3)
    # the PBM by EM, on a log short enough for the reference's enumeration (K = 3: 8³ assignments a session)
    short = jax.tree.map(lambda x: x[:300, :3] if jnp.ndim(x) == 2 else (x[:300] if jnp.ndim(x) else x), log)
    sessions = [([int(p) for p, m in zip(pairs, mask) if m], [int(c) for c, m in zip(clicks, mask) if m])
                for pairs, clicks, mask in zip(np.asarray(short.pair), np.asarray(short.clicks), np.asarray(short.mask))]
    want = ref_click_models.em("pbm", sessions, num_iterations=10)
    exam = np.array([want[("exam", r)] for r in range(3)])
    data = propensity_data(simulation.session_counts(short, *queries.labels.shape))
    np.testing.assert_allclose(_run("pbm_em", data, 10), exam / exam[0], rtol=1e-4)


def test_a_grid_of_hyperparameters_is_lanes_of_one_program():
    """Three learning rates of the all-pairs estimator and three pseudo-counts of the PBM's EM, vmapped over
    ``init``'s f32 leaves: each lane is the single run with that value."""
    queries = _setting()[0]
    data = propensity_data(simulation.session_counts(_harvest_log(200), *queries.labels.shape))
    for name, hparam, values, steps in (("harvesting", "learning_rate", (0.01, 0.05, 0.2), 50),
                                        ("pbm_em", "prior_b", (2.0, 4.0, 8.0), 5)):
        estimator = PROPENSITY_ESTIMATORS.build(name)

        def lane(value):
            state = estimator.init(jax.random.key(0), data, **{hparam: value})
            return estimator.propensities(estimate(jax.random.key(0), estimator, state, data, steps)[0])

        lanes = np.asarray(jax.jit(jax.vmap(lane))(jnp.asarray(values, jnp.float32)))
        for i, value in enumerate(values):
            np.testing.assert_allclose(lanes[i], _run(name, data, steps, **{hparam: value}), rtol=1e-5, atol=1e-6)
        assert not np.allclose(lanes[0], lanes[-1])


def test_regression_em_parity_recovery_and_agreement_with_the_click_model():
    queries = _setting()[0]
    log = _harvest_log(400)
    features = np.asarray(_grade_features(queries), np.float64)
    counts = simulation.session_counts(log, *queries.labels.shape)
    model = regression_em.fit(counts, features, num_iterations=4, newton_steps=2, lam=1e-3)
    theta, w, b = ref.regression_em(np.asarray(log.query), np.asarray(log.doc), np.asarray(log.clicks),
                                    np.asarray(log.mask), features, K, 4, 1e-3, 2)
    np.testing.assert_allclose(model.examination, theta, rtol=1e-4)
    np.testing.assert_allclose(model.weights, w, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(model.bias, b, rtol=1e-3, atol=1e-4)
    big = _harvest_log(3000)
    counts = simulation.session_counts(big, *queries.labels.shape)
    rem = np.asarray(regression_em.propensities(regression_em.fit(counts, features)))
    pbm = np.asarray(click_model_propensities.pbm_propensities(big, num_iterations=100))
    truth = _setting()[2]
    np.testing.assert_allclose(rem, truth, atol=0.08)
    np.testing.assert_allclose(pbm, truth, atol=0.08)
    np.testing.assert_allclose(rem, pbm, atol=0.06)


def test_dla_learns_the_propensities_with_the_ranker():
    queries, user, truth = _setting()
    log = simulation.simulate_sessions(jax.random.key(3), queries, 6000, user, scores=queries.features[..., 0],
                                       temperature=1.0, num_positions=K)
    features = queries.features[log.query[:, None], log.doc]  # [S, K, D] shown documents in display order

    @jax.jit
    def train(features, clicks, where):
        params = (rankers.init_ranker(jax.random.key(0), features.shape[-1]), jnp.zeros(K))
        return rankers.fit(lambda p: dla.objective(p, features, clicks, where=where) / clicks.shape[0], params,
                           num_steps=400, learning_rate=0.05)

    # the summed losses are no objective (each model's weights come from the other and move), so only the
    # propensity model's estimate is checked
    (_, logits), _ = train(features, log.clicks.astype(jnp.float32), log.mask)
    np.testing.assert_allclose(dla.propensities(logits), truth, atol=0.08)


def test_bootstrap_replicates_are_the_estimator_on_resampled_sessions():
    log, r = _swap_log(800)
    key = jax.random.key(7)
    interval = bootstrap.bootstrap(key, (log, r), lambda d: randomization.swap_propensities(*d), num_sessions=800,
                                   num_resamples=6)
    index = np.asarray(jax.random.randint(jax.random.fold_in(key, 3), (800,), 0, 800))
    want = ref.swap_ratio(np.asarray(log.clicks, float)[index], np.asarray(log.mask)[index], np.asarray(r)[index])
    np.testing.assert_allclose(interval.replicates[3], want, rtol=1e-5)
    assert interval.replicates.shape == (6, K)
    np.testing.assert_array_equal(interval.lower <= interval.upper, True)
    with pytest.raises(ValueError, match="num_resamples must be"):
        bootstrap.bootstrap(key, (log, r), lambda d: randomization.swap_propensities(*d), num_sessions=800,
                            num_resamples=1)


def _inside(interval, truth, name):
    lower, upper = np.asarray(interval.lower), np.asarray(interval.upper)
    misses = np.flatnonzero((truth < lower - 1e-6) | (truth > upper + 1e-6))
    worst = int(np.argmax(np.abs(np.asarray(interval.estimate) - truth)))
    print(f"{name}: largest deviation {float(interval.estimate[worst]) - truth[worst]:+.4f} at rank {worst + 1} "
          f"(95% interval [{lower[worst]:.4f}, {upper[worst]:.4f}] around truth {truth[worst]:.4f}, half-width "
          f"{(upper[worst] - lower[worst]) / 2:.4f}); ranks outside: {(misses + 1).tolist()}")
    # K - 1 = 4 free ranks at 95% each: at most one miss (probability of two or more ~1.4%)
    assert misses.size <= 1, f"{name}: truth {truth} outside [{lower}, {upper}] at ranks {misses}"


@functools.lru_cache(maxsize=None)
def _big_harvest_log():
    pooled = _harvest_log(500_000)  # 2M sessions of 4 rankers, over 1M clicks
    assert int(pooled.clicks.sum()) >= 1_000_000
    return pooled


@pytest.mark.slow
def test_swap_interventions_recover_the_examination_within_95_percent_intervals():
    log, r = _swap_log(2_000_000)  # ~1.06M clicks
    assert int(log.clicks.sum()) >= 1_000_000
    swap = bootstrap.bootstrap(jax.random.key(8), (log, r), lambda d: randomization.swap_propensities(*d),
                               num_sessions=log.query.shape[0], num_resamples=200)
    _inside(swap, _setting()[2], "swap")


@pytest.mark.slow
def test_harvesting_and_regression_em_recover_the_examination_within_95_percent_intervals():
    truth, queries = _setting()[2], _setting()[0]
    num_queries, num_docs = queries.labels.shape
    pooled = _big_harvest_log()
    size = pooled.query.shape[0]
    key = jax.random.key(8)

    def sets_of(log):
        return harvesting.intervention_sets(simulation.session_counts(log, num_queries, num_docs))

    for name, fn in (("pivot", harvesting.pivot_propensities), ("adjacent", harvesting.adjacent_chain_propensities),
                     ("all pairs", harvesting.all_pairs_propensities)):
        _inside(bootstrap.bootstrap(key, pooled, lambda log: fn(sets_of(log)), num_sessions=size,
                                    num_resamples=100), truth, name)
    features = _grade_features(queries)
    rem = bootstrap.bootstrap(key, pooled, lambda log: regression_em.propensities(regression_em.fit(
        simulation.session_counts(log, num_queries, num_docs), features)), num_sessions=size, num_resamples=50)
    _inside(rem, truth, "regression EM")


@pytest.mark.slow
def test_the_fitted_click_model_recovers_the_examination_within_95_percent_intervals():
    pooled = _big_harvest_log()
    # 20 EM fits of 2M sessions: the slowest of these checks
    pbm = bootstrap.bootstrap(jax.random.key(8), pooled, click_model_propensities.pbm_propensities,
                              num_sessions=pooled.query.shape[0], num_resamples=20)
    _inside(pbm, _setting()[2], "click model (PBM)")
    # regression EM on the same 10^6-click log agrees with the fitted click model: each rank's difference
    # inside the click model's 95% interval width (the difference of two consistent estimates has about
    # sqrt(2) times one estimate's standard error, the width is 2 x 1.96 of it)
    queries = _setting()[0]
    rem = np.asarray(regression_em.propensities(regression_em.fit(
        simulation.session_counts(pooled, *queries.labels.shape), _grade_features(queries))))
    gap, width = np.abs(rem - np.asarray(pbm.estimate)), np.asarray(pbm.upper - pbm.lower)
    print(f"regression EM vs click model: largest |difference| {gap.max():.4f} at rank {int(gap.argmax()) + 1} "
          f"(click model's 95% interval width there {width[gap.argmax()]:.4f})")
    np.testing.assert_array_less(gap, width + 1e-6)
