"""The counterfactual learners, their click log, the direct method and the doubly robust estimate,
against the NumPy references of ``tests/reference/counterfactual.py`` (exact enumeration where the
claim is about expectations or variances)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.counterfactual import COUNTERFACTUAL_LEARNERS, direct_method, dla, ips_losses, logging_policy, simulation
from jaxrank.counterfactual import user_models
from jaxrank.counterfactual.click_log import click_log
from jaxrank.counterfactual.learners import base
from tests.reference import counterfactual as ref

ALPHA3 = np.array([0.9, 0.45, 0.2])  # an affine user of three ranks: strong position bias, a little trust bias
BETA3 = np.array([0.05, 0.05, 0.05])


def _session_logs(scores, relevance, regression, rho, num_positions=3):
    """Every (ranking, click pattern) of one session as a batch of one-query ``ClickLog``s, with its probability."""
    num_docs = len(scores)
    logs, probs = [], []
    for prefix, p_rank in ref.topk_rankings(scores, 1.0, num_positions):
        click_probs = [ALPHA3[k] * relevance[d] + BETA3[k] for k, d in enumerate(prefix)]
        for pattern, p_click in ref.click_patterns(click_probs):
            c, a, b = np.zeros(num_docs), np.zeros(num_docs), np.zeros(num_docs)
            for k, d in enumerate(prefix):
                c[d], a[d], b[d] = pattern[k], ALPHA3[k], BETA3[k]
            logs.append((c, a, b))
            probs.append(p_rank * p_click)
    c, a, b = (np.stack(x)[:, None, :].astype(np.float32) for x in zip(*logs))
    n = c.shape[0]
    ones = np.ones((n, 1, num_docs), bool)
    batch = base.ClickLog(np.zeros((n, 1, num_docs, 1), np.float32), ones, c, a, b,
                          np.broadcast_to(rho, c.shape).astype(np.float32),
                          np.broadcast_to(regression, c.shape).astype(np.float32),
                          np.broadcast_to(relevance, c.shape).astype(np.float32), np.ones((n, 1), np.float32))
    return batch, np.asarray(probs)


def _moments(name, batch, probs, clip):
    learner = COUNTERFACTUAL_LEARNERS.build(name)
    state = learner.init(jax.random.key(0), 1, clip=clip)
    targets = np.asarray(jax.vmap(lambda log: learner.targets(state, log))(batch), np.float64)[:, 0]
    mean = probs @ targets
    return mean, probs @ (targets - mean) ** 2


SCORES = np.array([1.0, 0.5, 0.0, -0.5])
RELEVANCE = np.array([1.0, 0.5, 0.2, 0.0])


def test_doubly_robust_variance_by_exact_enumeration():
    """4 documents, Plackett–Luce top-3, trust bias: with a perfect regression DR's variance is below
    IPS's, and both moments equal the enumeration written from the paper (actual treatment in the
    control variate, the expected one in the denominator)."""
    rho = ref.placement_exact(SCORES, 1.0, 3) @ ALPHA3
    batch, probs = _session_logs(SCORES, RELEVANCE, RELEVANCE, rho)
    want = ref.single_session_moments(SCORES, 1.0, 3, ALPHA3, BETA3, RELEVANCE, RELEVANCE, 0.0)
    ips_mean, ips_var = _moments("ips", batch, probs, 0.0)
    dr_mean, dr_var = _moments("dr", batch, probs, 0.0)
    np.testing.assert_allclose(probs.sum(), 1.0, rtol=1e-9)
    np.testing.assert_allclose(ips_mean, RELEVANCE, atol=1e-5)
    np.testing.assert_allclose(dr_mean, RELEVANCE, atol=1e-5)
    np.testing.assert_allclose(ips_var, want["ips"][1], rtol=1e-4)
    np.testing.assert_allclose(dr_var, want["dr"][1], rtol=1e-4, atol=1e-6)
    assert dr_var.sum() < 0.9 * ips_var.sum(), (dr_var.sum(), ips_var.sum())


def test_doubly_robust_is_unbiased_unclipped_and_biased_towards_the_regression_when_clipped():
    """Unclipped DR is unbiased whatever ``R̂``; clipped at ``τ`` its mean is ``R + (1 − ρ/max(ρ, τ))(R̂ − R)``
    (Oosterhuis, TOIS 2023, §5): a DR that ignores ``τ`` has no such bias and fails here."""
    rho = ref.placement_exact(SCORES, 1.0, 3) @ ALPHA3
    wrong = np.array([0.3, 0.9, 0.6, 0.5])
    batch, probs = _session_logs(SCORES, RELEVANCE, wrong, rho)
    mean, _ = _moments("dr", batch, probs, 0.0)
    np.testing.assert_allclose(mean, RELEVANCE, atol=1e-5)
    tau = float(np.sort(rho)[1]) + 0.05  # clips the two least exposed documents
    mean, var = _moments("dr", batch, probs, tau)
    expected = RELEVANCE + (1.0 - rho / np.maximum(rho, tau)) * (wrong - RELEVANCE)
    np.testing.assert_allclose(mean, expected, atol=1e-5)
    assert np.abs(mean - RELEVANCE).max() > 0.05
    want = ref.single_session_moments(SCORES, 1.0, 3, ALPHA3, BETA3, RELEVANCE, wrong, tau)
    np.testing.assert_allclose(var, want["dr"][1], rtol=1e-4, atol=1e-6)


def test_estimates_from_counts_match_the_reference():
    """``click_log`` + the naive, IPS and DR learners' targets equal the reference's per-document estimates
    (HarrieO/2022-doubly-robust-LTR's ``compute_weights``), with propensities other than the true α."""
    rng = np.random.default_rng(3)
    num_queries, num_docs, k = 3, 6, 4
    displays = rng.integers(0, 5, size=(num_queries, num_docs, k)).astype(np.float32)
    clicks = np.minimum(displays, rng.integers(0, 3, size=displays.shape)).astype(np.float32)
    sessions = np.array([12.0, 0.0, 7.0], np.float32)
    alpha, beta = rng.uniform(0.2, 0.8, k), rng.uniform(0.0, 0.2, k)
    given = rng.uniform(0.3, 1.0, k)
    regression = rng.uniform(0.0, 1.0, (num_queries, num_docs)).astype(np.float32)
    where = np.ones((num_queries, num_docs), bool)
    features = np.zeros((num_queries, num_docs, 2), np.float32)
    log = click_log(clicks, displays, sessions, features, where, alpha, beta, np.zeros_like(regression),
                    propensities=given, regression=regression)
    tau = 0.4
    got = {}
    for name in ("naive", "ips", "dr"):
        learner = COUNTERFACTUAL_LEARNERS.build(name)
        got[name] = np.asarray(learner.targets(learner.init(jax.random.key(0), 2, clip=tau), log))
    for q in range(num_queries):
        naive, ips, dr = ref.per_document_estimates(clicks[q], displays[q], sessions[q], alpha, beta, given,
                                                    regression[q], tau)
        np.testing.assert_allclose(got["naive"][q], naive, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["ips"][q], ips, rtol=1e-5, atol=1e-6)
        if sessions[q] > 0:  # DR gives a query without sessions no target (it is not in the log)
            np.testing.assert_allclose(got["dr"][q], dr, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(log.weights), sessions / sessions.sum(), rtol=1e-6)


def test_propensities_reach_the_ranks_their_documents_were_shown_at():
    """Under a deterministic top-K logger the propensity of each shown document is the examination of
    its own rank (reversed ranks, or none, fail)."""
    rng = np.random.default_rng(4)
    scores = rng.normal(size=(3, 6)).astype(np.float32)
    mask = np.ones((3, 6), bool)
    mask[2, 5] = False
    labels = rng.integers(0, 3, size=(3, 6)).astype(np.float32)
    theta = np.array([1.0, 0.5, 0.25, 0.125], np.float32)
    user = user_models.position_based(theta, user_models.graded_click_probability(2))
    counts = simulation.simulate_click_counts(jax.random.key(1), simulation.ShownLists(labels, mask), user, (50,),
                                              scores=scores, num_positions=4, chunk_size=64)
    log = click_log(counts.clicks[0], counts.displays[0], counts.sessions[0], np.zeros((3, 6, 1), np.float32), mask,
                    theta, np.zeros(4), np.zeros((3, 6), np.float32))
    rho = np.asarray(log.rho)
    for q in range(3):
        if counts.sessions[0, q] == 0:
            continue
        shown = ref.shown_list(scores[q], mask[q], 4)
        for k, d in enumerate(shown):
            assert rho[q, d] == pytest.approx(theta[k]), (q, d, k)
        assert all(rho[q, d] == 0 for d in range(6) if d not in shown)
    docs, _ = logging_policy.deterministic_lists(jnp.asarray(scores), jnp.asarray(mask), 4)
    assert [list(map(int, d)) for d in docs] == [ref.shown_list(scores[q], mask[q], 4) for q in range(3)]


def test_pairwise_sums_and_gradient_match_the_reference():
    rng = np.random.default_rng(5)
    scores = (1.5 * rng.normal(size=(4, 7))).astype(np.float32)
    where = rng.random((4, 7)) < 0.8
    got = np.asarray(base.pairwise_sums(jnp.asarray(scores), jnp.asarray(where)))
    want = np.stack([ref.huberised_pairwise(s, w, base.SMOOTHING) for s, w in zip(scores, where)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    weights = rng.uniform(size=(4, 7))
    grad = np.asarray(jax.grad(lambda s: jnp.sum(weights * base.pairwise_sums(s, jnp.asarray(where))))(
        jnp.asarray(scores)))
    eps, numeric = 1e-4, np.zeros_like(scores, np.float64)
    for idx in np.ndindex(scores.shape):
        hi, lo = scores.astype(np.float64), scores.astype(np.float64)
        hi[idx] += eps
        lo[idx] -= eps
        f = lambda x: sum(weights[q] @ ref.huberised_pairwise(x[q], where[q], base.SMOOTHING) for q in range(4))  # noqa: E731
        numeric[idx] = (f(hi) - f(lo)) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, atol=2e-3)


def test_training_reaches_a_small_gradient_norm():
    rng = np.random.default_rng(6)
    features = rng.normal(size=(5, 6, 3)).astype(np.float32)
    relevance = rng.uniform(size=(5, 6)).astype(np.float32)
    where = np.ones((5, 6), bool)
    zeros = np.zeros((5, 6), np.float32)
    log = base.ClickLog(features, where, zeros, zeros, zeros, zeros, zeros, relevance, np.full(5, 0.2, np.float32))
    learner = COUNTERFACTUAL_LEARNERS.build("full_info")
    state, infos = jax.jit(base.train, static_argnames=("learner", "num_steps"))(
        jax.random.key(0), learner, learner.init(jax.random.key(1), 3, lam=1e-2), log, 40)
    first = float(jnp.linalg.norm(jax.grad(base.objective)(jnp.zeros(3), features, where, log.weights, relevance, 1e-2)))
    final = float(jnp.linalg.norm(jax.grad(base.objective)(state.params, features, where, log.weights, relevance, 1e-2)))
    # float32 line searches stall near 1e-4 relative (a step cannot lower J by less than its rounding)
    assert final < 1e-3 * first, (final, first)
    assert np.all(np.diff(np.asarray(infos.objective)) <= 1e-6)
    # the stated optimality: relative gradient norm, and the share of J(0) − J(w_T) made by the last 10 steps
    value = float(base.objective(state.params, features, where, log.weights, relevance, 1e-2))
    j0 = float(base.objective(jnp.zeros(3), features, where, log.weights, relevance, 1e-2))
    opt = base.optimality(infos.objective[0], infos.grad_norm[0], infos.objective[-10], value, final)
    assert float(opt.relative_grad) == pytest.approx(final / first, rel=1e-5)
    assert float(opt.last_decrease) == pytest.approx((float(infos.objective[-10]) - value) / (j0 - value), abs=1e-6)
    assert float(opt.last_decrease) < 1e-4
    early = base.optimality(infos.objective[0], infos.grad_norm[0], infos.objective[0], infos.objective[1],
                            infos.grad_norm[1])
    assert float(early.last_decrease) == pytest.approx(1.0) and float(early.relative_grad) > 1e-3


def test_direct_method_loss_matches_the_reference_and_the_intercept_fits_a_base_rate():
    rng = np.random.default_rng(7)
    ctr, beta = rng.uniform(0, 0.5, 8), rng.uniform(0, 0.1, 8)
    rho = np.where(rng.random(8) < 0.8, rng.uniform(0.05, 0.9, 8), 0.0)
    features = rng.normal(size=(8, 3)).astype(np.float32)
    params = direct_method.init(jax.random.key(0), 3, "mlp")
    preds = np.asarray(direct_method.predict(params, features), np.float64)
    got = direct_method.loss(params, features, ctr, None, beta, rho, np.ones(8, bool), 0.3)
    assert float(got) == pytest.approx(ref.dm_loss(preds, ctr, beta, rho, 0.3), rel=1e-5)
    # every document looks the same: only an intercept can fit the base rate (c − β)/ρ = 0.2
    n = (2, 4)
    log = base.ClickLog(np.zeros(n + (3,), np.float32), np.ones(n, bool), np.full(n, 0.1, np.float32),
                        np.full(n, 0.5, np.float32), np.zeros(n, np.float32), np.full(n, 0.5, np.float32),
                        np.zeros(n, np.float32), np.zeros(n, np.float32), np.full(2, 0.5, np.float32))
    params, info = direct_method.fit(jax.random.key(0), log, log, 0.0, num_steps=400, learning_rate=0.05)
    assert float(direct_method.predict(params, jnp.zeros(3))) == pytest.approx(0.2, abs=0.01)
    assert int(info.best) == int(np.argmin(np.asarray(info.vali_loss))) + 1


def test_dla_weights_are_constants_to_the_other_loss():
    """The gradient of DLA's summed losses with respect to the ranker's scores is the ranking loss's alone
    (the relevance weights of the examination loss carry no gradient)."""
    rng = np.random.default_rng(8)
    scores = jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)
    logits = jnp.asarray(rng.normal(size=4), jnp.float32)
    clicks = jnp.asarray(rng.integers(0, 2, size=(3, 4)), jnp.float32)

    def total(s):
        ranking, examination = dla.dla_losses(s, logits, clicks)
        return ranking + examination

    exam = dla.relative_softmax(jnp.broadcast_to(logits, scores.shape))
    want = jax.grad(lambda s: ips_losses.listwise_ips_loss(s, clicks, exam))(scores)
    np.testing.assert_allclose(np.asarray(jax.grad(total)(scores)), np.asarray(want), rtol=1e-5, atol=1e-7)
    rel = dla.relative_softmax(scores)
    want_logits = jax.grad(lambda g: ips_losses.listwise_ips_loss(jnp.broadcast_to(g, scores.shape), clicks, rel))(logits)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda g: sum(dla.dla_losses(scores, g, clicks)))(logits)),
                               np.asarray(want_logits), rtol=1e-5, atol=1e-7)
