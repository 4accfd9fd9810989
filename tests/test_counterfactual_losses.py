"""Counterfactual losses and learners of ``jaxrank.counterfactual``.

* Unbiasedness by brute force (float64): on lists of at most 4 documents, every displayed ranking of
  the logging policy and every click pattern are enumerated with their probabilities
  (``tests/reference/counterfactual.py``); the expected IPS loss and gradient equal the
  full-information ones to 1e-10 (deterministic logger; the policy-aware propensity under a
  stochastic top-k policy; the doubly robust estimate under trust bias), and the naive ones do not.
* Parity: every loss and gradient equals the NumPy float64 reference within 1e-6.
"""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.counterfactual import (dla, doubly_robust, ips_losses, policy_aware, propensity_svm, rankers,
                                    user_models)
from tests.reference import counterfactual as ref

LOSSES = {"pointwise": ips_losses.pointwise_ips_loss, "listwise": ips_losses.listwise_ips_loss,
          "pairwise": ips_losses.pairwise_ips_hinge_loss}
SCORES = np.array([0.3, -1.2, 0.9, 0.1])
GRADES = np.array([2, 0, 1, 1])
L = 4


@functools.partial(jax.jit, static_argnames=("name", "clip"))
def _jitted_per_list(name, scores, clicks, propensities, where, clip):
    def total(s):
        values = LOSSES[name](s, clicks, propensities, where=where, clip=clip, reduce_fn=None)
        return jnp.sum(values), values

    grad, values = jax.grad(total, has_aux=True)(scores)
    return values, grad


def _per_list(name, scores, clicks, propensities, where=None, clip=None):
    """``(per-list loss [N], per-list gradient [N, L])`` of a jaxrank loss."""
    values, grad = _jitted_per_list(name, scores, clicks, propensities, where, clip)
    return np.asarray(values), np.asarray(grad)


def _expectation(name, rows, probs, full_clicks, where=None):
    """Expected loss/gradient over enumerated ``rows = (clicks [N, L], propensities [N, L])`` and the
    full-information loss/gradient ``loss(s, γ, 1)``."""
    clicks, propensities = (jnp.asarray(np.array(x)) for x in rows)
    n = clicks.shape[0]
    scores = jnp.broadcast_to(jnp.asarray(SCORES), (n, L))
    w = None if where is None else jnp.broadcast_to(jnp.asarray(where), (n, L))
    values, grads = _per_list(name, scores, clicks, propensities, w)
    probs = np.asarray(probs)
    full_value, full_grad = _per_list(name, jnp.asarray(SCORES)[None], jnp.asarray(full_clicks)[None],
                                      jnp.ones((1, L)), None if where is None else jnp.asarray(where)[None])
    return probs @ values, probs @ grads, full_value[0], full_grad[0]


def _pbm():
    theta = np.array([1.0, 0.6, 0.35, 0.2])
    gamma = np.array(ref.ULTRA_CLICK_PROB_4)[[3, 0, 1, 1]]  # the grades' click probabilities, L = 4 documents
    return theta, gamma


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_ips_is_unbiased_for_a_deterministic_logger_and_naive_is_not(name):
    theta, gamma = _pbm()
    with jax.enable_x64(True):
        (ranking, _), = ref.topk_rankings(-np.arange(L, dtype=float), 0.0, L)  # shows documents 0, 1, 2, 3
        rows, naive_rows, probs = ([], []), ([], []), []
        click_probs = [theta[k] * gamma[d] for k, d in enumerate(ranking)]
        for pattern, p in ref.click_patterns(click_probs):
            clicks = np.zeros(L)
            rho = np.zeros(L)
            for k, d in enumerate(ranking):
                clicks[d], rho[d] = pattern[k], theta[k]
            rows[0].append(clicks), rows[1].append(rho), probs.append(p)
            naive_rows[0].append(clicks), naive_rows[1].append(np.ones(L))
        assert abs(sum(probs) - 1) < 1e-12
        value, grad, full_value, full_grad = _expectation(name, rows, probs, gamma)
        np.testing.assert_allclose(value, full_value, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grad, full_grad, rtol=0, atol=1e-10)
        naive_value, naive_grad, _, _ = _expectation(name, naive_rows, probs, gamma)
        assert abs(naive_value - full_value) > 1e-3 and np.abs(naive_grad - full_grad).max() > 1e-3


def _policy_rows(theta, gamma, logging_scores, temperature, num_shown, propensity_of):
    """Rows over every (ranking, click pattern) of a Plackett–Luce top-k policy."""
    rows, probs = ([], []), []
    for ranking, p_rank in ref.topk_rankings(logging_scores, temperature, num_shown):
        click_probs = [theta[k] * gamma[d] for k, d in enumerate(ranking)]
        for pattern, p_click in ref.click_patterns(click_probs):
            clicks = np.zeros(L)
            for k, d in enumerate(ranking):
                clicks[d] = pattern[k]
            rows[0].append(clicks), rows[1].append(propensity_of(ranking)), probs.append(p_rank * p_click)
    return rows, probs


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_policy_aware_is_unbiased_for_a_stochastic_top_k_policy(name):
    theta, gamma = _pbm()
    theta = theta[:2]  # top-2 of 4 documents
    logging_scores, temperature = np.array([1.0, 0.2, -0.5, 0.4]), 0.8
    with jax.enable_x64(True):
        placement = ref.placement_exact(logging_scores, temperature, 2)
        rho = np.asarray(policy_aware.expected_examination(jnp.asarray(placement), jnp.asarray(theta)))
        np.testing.assert_allclose(rho, placement @ theta, rtol=1e-12)
        rows, probs = _policy_rows(theta, gamma, logging_scores, temperature, 2, lambda ranking: rho)
        value, grad, full_value, full_grad = _expectation(name, rows, probs, gamma)
        np.testing.assert_allclose(value, full_value, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grad, full_grad, rtol=0, atol=1e-10)

        def oblivious(ranking):  # the examination of the rank shown at; unshown documents get nothing
            out = np.zeros(L)
            for k, d in enumerate(ranking):
                out[d] = theta[k]
            return out

        rows, probs = _policy_rows(theta, gamma, logging_scores, temperature, 2, oblivious)
        value, grad, _, _ = _expectation(name, rows, probs, gamma)
        assert abs(value - full_value) > 1e-3 and np.abs(grad - full_grad).max() > 1e-3


def _trust_bias_rows(targets_of):
    """Rows ``(targets, 1)`` over every (ranking, pattern) of a top-3 Plackett–Luce policy and a trust-bias
    user; ``targets_of(clicks, alpha_shown, beta_shown)``."""
    user = user_models.trust_bias(3, 2, "oosterhuis")
    alpha, beta = np.asarray(user.alpha, float), np.asarray(user.beta, float)
    relevance = np.asarray(user.relevance, float)[GRADES]
    logging_scores, temperature = np.array([0.5, 1.0, -0.3, 0.2]), 1.3
    rows, probs = ([], []), []
    for ranking, p_rank in ref.topk_rankings(logging_scores, temperature, 3):
        click_probs = [alpha[k] * relevance[d] + beta[k] for k, d in enumerate(ranking)]
        for pattern, p_click in ref.click_patterns(click_probs):
            clicks, a_shown, b_shown = np.zeros(L), np.zeros(L), np.zeros(L)
            for k, d in enumerate(ranking):
                clicks[d], a_shown[d], b_shown[d] = pattern[k], alpha[k], beta[k]
            rows[0].append(targets_of(clicks, a_shown, b_shown)), rows[1].append(np.ones(L))
            probs.append(p_rank * p_click)
    rho = ref.placement_exact(logging_scores, temperature, 3) @ alpha
    return rows, probs, relevance, rho


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_doubly_robust_is_unbiased_under_trust_bias_whatever_the_regression(name):
    regression = np.array([0.9, 0.05, 0.3, 0.6])  # a wrong direct-method estimate
    with jax.enable_x64(True):
        rho = _trust_bias_rows(lambda *a: np.zeros(L))[3]

        def dr(clicks, a_shown, b_shown, clip=None, regression=regression):
            return np.asarray(doubly_robust.doubly_robust_targets(
                jnp.asarray(clicks), jnp.asarray(a_shown), jnp.asarray(b_shown), jnp.asarray(rho),
                jnp.asarray(regression), clip=clip))

        rows, probs, relevance, _ = _trust_bias_rows(dr)
        value, grad, full_value, full_grad = _expectation(name, rows, probs, relevance)
        np.testing.assert_allclose(value, full_value, rtol=0, atol=1e-10)
        np.testing.assert_allclose(grad, full_grad, rtol=0, atol=1e-10)
        # clipping: DR with the true relevance as regression stays unbiased, the affine IPS estimate does not
        clip = 0.99 * rho.max()  # binds for every document but the most exposed one
        rows, probs, _, _ = _trust_bias_rows(lambda c, a, b: dr(c, a, b, clip, relevance))
        value, _, _, _ = _expectation(name, rows, probs, relevance)
        np.testing.assert_allclose(value, full_value, rtol=0, atol=1e-10)
        rows, probs, _, _ = _trust_bias_rows(lambda c, a, b: np.asarray(doubly_robust.affine_ips_targets(
            jnp.asarray(c), jnp.asarray(b), jnp.asarray(rho), clip=clip)))
        value, _, _, _ = _expectation(name, rows, probs, relevance)
        assert abs(value - full_value) > 1e-3
        # and without a correction for trust bias, the plain position-bias IPS estimate is biased
        rows, probs, _, _ = _trust_bias_rows(lambda c, a, b: c / rho)
        value, _, _, _ = _expectation(name, rows, probs, relevance)
        assert abs(value - full_value) > 1e-3


def test_dla_ranking_loss_with_the_true_propensities_is_unbiased():
    theta, gamma = _pbm()
    with jax.enable_x64(True):
        scores = jnp.asarray(SCORES)[None]
        logits = jnp.log(jnp.asarray(theta))
        total_value, total_grad = 0.0, np.zeros(L)
        for pattern, p in ref.click_patterns(theta * gamma):  # documents shown in index order
            value, grad = jax.value_and_grad(lambda s: dla.dla_losses(s, logits, jnp.asarray(pattern)[None],
                                                                      reduce_fn=jnp.sum)[0])(scores)
            total_value += p * float(value)
            total_grad += p * np.asarray(grad[0])
        full, full_grad = jax.value_and_grad(lambda s: ips_losses.listwise_ips_loss(
            s, jnp.asarray(theta[0] * gamma)[None], jnp.ones((1, L)), reduce_fn=jnp.sum))(scores)
        np.testing.assert_allclose(total_value, full, rtol=0, atol=1e-10)
        np.testing.assert_allclose(total_grad, full_grad[0], rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------- parity


def _random_lists(seed, num_lists=5, size=6):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(num_lists, size)) * 1.5
    clicks = rng.integers(0, 3, size=(num_lists, size)) * rng.uniform(size=(num_lists, size))
    propensities = rng.uniform(0.05, 1.0, size=(num_lists, size)) * (rng.uniform(size=(num_lists, size)) > 0.15)
    where = rng.uniform(size=(num_lists, size)) > 0.2
    where[-1] = False  # a fully masked list
    return scores, clicks, propensities, where


@pytest.mark.parametrize("name,clip", list(itertools.product(sorted(LOSSES), [None, 0.3])))
def test_loss_and_gradient_parity(name, clip):
    scores, clicks, propensities, where = _random_lists(1)
    with jax.enable_x64(True):
        values, grads = _per_list(name, jnp.asarray(scores), jnp.asarray(clicks), jnp.asarray(propensities),
                                  jnp.asarray(where), clip)
        mean = LOSSES[name](jnp.asarray(scores), jnp.asarray(clicks), jnp.asarray(propensities),
                            where=jnp.asarray(where), clip=clip)
    for b in range(scores.shape[0]):
        w = ref.ips_weights(clicks[b], propensities[b], where[b], clip)
        want, want_grad = ref.LOSSES[name](scores[b], w, where[b])
        np.testing.assert_allclose(values[b], want, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(grads[b], want_grad, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(mean, values[:-1].mean(), rtol=1e-12)  # the fully masked list leaves the mean
    assert values[-1] == 0 and not np.any(grads[-1])


def test_losses_reject_mismatched_shapes():
    with pytest.raises(ValueError, match=r"propensities must have the shape of scores \(2, 3\)"):
        ips_losses.listwise_ips_loss(jnp.zeros((2, 3)), jnp.zeros((2, 3)), jnp.ones(3))


def test_doubly_robust_targets_parity():
    rng = np.random.default_rng(2)
    c, a, b, rho, reg = (rng.uniform(size=(3, 5)) for _ in range(5))
    rho[0, 1] = 0.0
    where = rng.uniform(size=(3, 5)) > 0.2
    for clip in (None, 0.4):
        with jax.enable_x64(True):
            ours = doubly_robust.doubly_robust_targets(jnp.asarray(c), jnp.asarray(a), jnp.asarray(b),
                                                       jnp.asarray(rho), jnp.asarray(reg), clip=clip,
                                                       where=jnp.asarray(where))
        for i in range(3):
            want = ref.doubly_robust_targets(c[i], a[i], b[i], rho[i], reg[i], where[i], clip)
            np.testing.assert_allclose(ours[i], want, rtol=1e-6)


def test_propensity_svm_objective_and_gradient_parity():
    rng = np.random.default_rng(3)
    features = rng.normal(size=(4, 6, 3))
    _, clicks, propensities, where = _random_lists(4, num_lists=4)
    weights = rng.uniform(1, 5, size=4)
    w = rng.normal(size=3)
    with jax.enable_x64(True):
        for clip in (None, 0.25):
            kw = dict(where=jnp.asarray(where), lam=0.1, clip=clip, weights=jnp.asarray(weights))
            value, grad = jax.value_and_grad(propensity_svm.objective)(
                jnp.asarray(w), jnp.asarray(features), jnp.asarray(clicks), jnp.asarray(propensities), **kw)
            want, want_grad = ref.propensity_svm(w, features, clicks, propensities, where, 0.1, clip, weights)
            np.testing.assert_allclose(value, want, rtol=1e-6)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-6, atol=1e-9)


def test_displayed_objective_is_the_objective_with_clicks_on_the_shown_documents():
    rng = np.random.default_rng(11)
    features = rng.normal(size=(3, 7, 3))
    candidates = rng.uniform(size=(3, 7)) > 0.2
    docs = np.stack([rng.permutation(7)[:4] for _ in range(3)])
    clicks, propensities = rng.uniform(size=(3, 4)) * (rng.uniform(size=(3, 4)) > 0.4), rng.uniform(0.1, 1, (3, 4))
    candidates[np.arange(3)[:, None], docs] = True
    clicks[0, 1], candidates[0, docs[0, 1]] = 0.7, False  # a click on a non-candidate counts nowhere
    scattered_clicks, scattered_props = np.zeros((3, 7)), np.ones((3, 7))
    for q in range(3):
        scattered_clicks[q, docs[q]], scattered_props[q, docs[q]] = clicks[q], propensities[q]
    w, weights = rng.normal(size=3), rng.uniform(1, 3, size=3)
    with jax.enable_x64(True):
        kw = dict(lam=0.3, clip=0.2, weights=jnp.asarray(weights))
        ours = jax.value_and_grad(propensity_svm.displayed_objective)(
            jnp.asarray(w), jnp.asarray(features), jnp.asarray(candidates), jnp.asarray(docs), jnp.asarray(clicks),
            jnp.asarray(propensities), **kw)
    want = ref.propensity_svm(w, features, scattered_clicks, scattered_props, candidates, 0.3, 0.2, weights)
    np.testing.assert_allclose(ours[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], want[1], rtol=1e-6, atol=1e-9)


def test_propensity_svm_training_lowers_the_objective():
    rng = np.random.default_rng(5)
    features = jnp.asarray(rng.normal(size=(6, 6, 3)), jnp.float32)
    relevant = features[..., 0] > 0.3
    kw = dict(where=jnp.ones((6, 6), bool), lam=0.01)
    w, info = jax.jit(lambda: propensity_svm.train(features, relevant.astype(jnp.float32), jnp.ones((6, 6)),
                                                   num_steps=300, **kw))()
    start = propensity_svm.objective(jnp.zeros(3), features, relevant.astype(jnp.float32), jnp.ones((6, 6)), **kw)
    assert float(info.final) < 0.5 * float(start) and float(w[0]) > 0


def _adam_reference(grad_fn, w, num_steps, learning_rate):
    """Adam (Kingma & Ba, ICLR 2015, Algorithm 1: β1 0.9, β2 0.999, ε 1e-8) with the step size decayed by
    ``½(1 + cos(π t / T))`` over ``T = num_steps`` steps, in float64."""
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t in range(num_steps):
        g = grad_fn(w)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        m_hat, v_hat = m / (1 - 0.9 ** (t + 1)), v / (1 - 0.999 ** (t + 1))
        w = w - learning_rate * 0.5 * (1 + np.cos(np.pi * t / num_steps)) * m_hat / (np.sqrt(v_hat) + 1e-8)
    return w


def test_propensity_svm_trainer_is_adam_on_the_reference_objective_and_a_grid_is_lanes():
    """``make``/``init``/``step`` with λ, τ and the step size as f32 leaves: three (λ, τ, step size) settings
    vmapped in one trace, each lane Adam on ``tests/reference``'s Propensity SVM-Rank gradient."""
    rng = np.random.default_rng(4)
    features = rng.normal(size=(4, 6, 3))
    _, clicks, propensities, where = _random_lists(4, num_lists=4)
    data = propensity_svm.ClickData(*(jnp.asarray(x, jnp.float32) for x in (features, clicks, propensities)),
                                    jnp.asarray(where))
    settings = np.array([[0.1, 0.0, 0.05], [0.01, 0.3, 0.1], [1.0, 0.0, 0.02]])  # (λ, τ, learning rate)
    svm = propensity_svm.make(num_steps=15)
    traces = []

    def lane(lam, clip, learning_rate):
        traces.append(1)
        state = svm.init(jax.random.key(0), 3, lam=lam, clip=clip, learning_rate=learning_rate)
        state, infos = jax.lax.scan(lambda s, t: svm.step(jax.random.fold_in(jax.random.key(1), t), s, data), state,
                                    jnp.arange(15))
        return state.fit.params, infos.loss

    lanes = jax.jit(jax.vmap(lane))(*jnp.asarray(settings.T, jnp.float32))
    assert len(traces) == 1
    for i, (lam, clip, learning_rate) in enumerate(settings):
        tau = clip if clip > 0 else None
        want = _adam_reference(lambda w: ref.propensity_svm(w, features, clicks, propensities, where, lam, tau)[1],
                               np.zeros(3), 15, learning_rate)
        np.testing.assert_allclose(lanes[0][i], want, rtol=1e-4, atol=1e-6)
        assert float(lanes[1][i, 0]) == pytest.approx(ref.propensity_svm(np.zeros(3), features, clicks, propensities,
                                                                         where, lam, tau)[0], rel=1e-5)
    state = svm.init(jax.random.key(0), 3)
    assert all(x.dtype == jnp.float32 for x in (state.lam, state.clip, state.fit.learning_rate))
    with pytest.raises(ValueError, match="'num_steps' is a static option"):
        svm.init(jax.random.key(0), 3, num_steps=4)


@pytest.mark.parametrize("max_weight", [None, 2.5])
def test_dla_parity(max_weight):
    scores, clicks, _, _ = _random_lists(6, num_lists=3, size=5)
    where = np.ones((3, 5), bool)
    where[1, 3:] = False  # a shorter displayed list
    logits = np.random.default_rng(7).normal(size=5)
    with jax.enable_x64(True):
        def losses(s, g):
            return dla.dla_losses(s, g, jnp.asarray(clicks), where=jnp.asarray(where), max_weight=max_weight,
                                  reduce_fn=None)

        (rank, exam) = losses(jnp.asarray(scores), jnp.asarray(logits))
        rank_grad = jax.grad(lambda s: jnp.sum(losses(s, jnp.asarray(logits))[0]))(jnp.asarray(scores))
        exam_grad = jax.jacrev(lambda g: losses(jnp.asarray(scores), g)[1])(jnp.asarray(logits))  # [3, K]
    for b in range(3):
        want = ref.dla(scores[b], logits, clicks[b], where[b], max_weight)
        np.testing.assert_allclose([rank[b], exam[b]], [want[0], want[2]], rtol=1e-6)
        np.testing.assert_allclose(rank_grad[b], want[1], rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(exam_grad[b], want[3], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_neural_ranker_objective_gradient_parity(name):
    rng = np.random.default_rng(8)
    features = rng.normal(size=(3, 6, 4))
    _, clicks, propensities, where = _random_lists(9, num_lists=3)
    with jax.enable_x64(True):
        params = rankers.init_ranker(jax.random.key(0), 4, model="neural", hidden_units=5)
        params = jax.tree.map(lambda x: jnp.asarray(x, jnp.float64) * 3.0, params)
        objective = rankers.ranker_objective(LOSSES[name], jnp.asarray(features), model="neural", lam=0.2,
                                             clicks=jnp.asarray(clicks), propensities=jnp.asarray(propensities),
                                             where=jnp.asarray(where), reduce_fn=jnp.sum)
        value, grad = jax.value_and_grad(objective)(params)
    hidden, bias, output = (np.asarray(x) for x in params)
    total = 0.2 * 0.5 * sum(np.sum(x**2) for x in (hidden, bias, output))
    want = [0.2 * hidden, 0.2 * bias, 0.2 * output]
    for b in range(3):
        scores, _ = ref.mlp_scores_and_backward(hidden, bias, output, features[b], np.zeros(6))
        loss, dscores = ref.LOSSES[name](scores, ref.ips_weights(clicks[b], propensities[b], where[b]), where[b])
        _, grads = ref.mlp_scores_and_backward(hidden, bias, output, features[b], dscores)
        total += loss
        want = [x + g for x, g in zip(want, grads)]
    # jaxrank.oltr.scorers computes the network in float32
    np.testing.assert_allclose(value, total, rtol=1e-6)
    for ours, theirs in zip(grad, want):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_fit_lowers_a_listwise_objective_for_both_models():
    rng = np.random.default_rng(10)
    features = jnp.asarray(rng.normal(size=(8, 6, 3)), jnp.float32)
    clicks = (features[..., 1] > 0).astype(jnp.float32)
    for model in rankers.MODELS:
        objective = rankers.ranker_objective(ips_losses.listwise_ips_loss, features, model=model, lam=1e-3,
                                             clicks=clicks, propensities=jnp.ones_like(clicks))
        params = rankers.init_ranker(jax.random.key(1), 3, model=model, hidden_units=4)
        fitted, info = jax.jit(lambda p: rankers.fit(objective, p, num_steps=200, learning_rate=0.1))(params)
        assert float(info.final) < 0.8 * float(objective(params)), model


def _ragged_case(seed):
    """Three queries of 5, 2 and 6 flat documents, top-3 shown rows, clicks on some shown ranks."""
    rng = np.random.default_rng(seed)
    lengths = np.array([5, 2, 6])
    offsets = np.r_[0, np.cumsum(lengths)]
    features = rng.normal(size=(offsets[-1], 3))
    rows = np.stack([offsets[q] + np.r_[rng.permutation(n)[:min(3, n)], np.zeros(3 - min(3, n), int)]
                     for q, n in enumerate(lengths)])
    shown = np.arange(3) < lengths[:, None]
    clicks = rng.integers(0, 4, size=(3, 3)) * shown
    propensities = rng.uniform(0.1, 1.0, size=(3, 3))
    return lengths, offsets, features, rows, shown, clicks.astype(float), propensities


@pytest.mark.parametrize("clip", [None, 0.4])
def test_ragged_objective_parity(clip):
    lengths, offsets, features, rows, shown, clicks, propensities = _ragged_case(7)
    rng = np.random.default_rng(8)
    candidates = rng.uniform(size=offsets[-1]) > 0.25
    candidates[rows[shown]] = True
    cell = np.argwhere(shown & (clicks > 0))[0]
    candidates[rows[tuple(cell)]] = False  # a click on a non-candidate counts nowhere, as in the reference
    weights, w = rng.uniform(1, 3, size=3), rng.normal(size=3)
    # the same lists padded for the reference: clicks and propensities scattered onto the shown documents
    padded, where = np.zeros((3, 6, 3)), np.zeros((3, 6), bool)
    per_doc_clicks, per_doc_props = np.zeros((3, 6)), np.ones((3, 6))
    for q, n in enumerate(lengths):
        padded[q, :n], where[q, :n] = features[offsets[q]:offsets[q + 1]], candidates[offsets[q]:offsets[q + 1]]
        for k in np.flatnonzero(shown[q]):
            per_doc_clicks[q, rows[q, k] - offsets[q]] = clicks[q, k]
            per_doc_props[q, rows[q, k] - offsets[q]] = propensities[q, k]
    want, want_grad = ref.propensity_svm(w, padded, per_doc_clicks, per_doc_props, where, 0.2, clip, weights)
    layout = propensity_svm.ragged_layout(offsets, candidates, minimum=2)
    assert len(layout.slots) > 1 and sorted(int(q) for block in layout.queries for q in block) == [0, 1, 2]
    clicked = np.where(shown, clicks, 0.0)
    want_pairs = sum(int(clicked[q, k] > 0 and candidates[rows[q, k]])
                     * (candidates[offsets[q]:offsets[q + 1]].sum() - 1) for q in range(3) for k in range(3))
    assert int(propensity_svm.ragged_pairs(layout, jnp.asarray(rows, jnp.int32), jnp.asarray(clicked),
                                           offsets[-1])) == want_pairs
    with jax.enable_x64(True):
        value, grad = jax.value_and_grad(propensity_svm.ragged_objective)(
            jnp.asarray(w), jnp.asarray(features), layout, jnp.asarray(rows, jnp.int32), jnp.asarray(clicked),
            jnp.asarray(propensities), lam=0.2, clip=clip, weights=jnp.asarray(weights))
    np.testing.assert_allclose(value, want, rtol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-6, atol=1e-9)


def test_ragged_training_lowers_the_objective():
    lengths, offsets, features, rows, shown, clicks, propensities = _ragged_case(9)
    layout = propensity_svm.ragged_layout(offsets)
    args = (jnp.asarray(features, jnp.float32), layout, jnp.asarray(rows, jnp.int32),
            jnp.asarray(np.where(shown, clicks, 0.0), jnp.float32), jnp.asarray(propensities, jnp.float32))
    w, info = jax.jit(lambda *a: propensity_svm.ragged_train(*a, lam=0.01, num_steps=200))(*args)
    assert float(info.final) < 0.5 * float(info.losses[0])
