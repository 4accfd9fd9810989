"""The semi-synthetic protocol of ``jaxrank.counterfactual``: user models, the logging policy and the
simulated logs, replayed session by session against ``tests/reference/counterfactual.py``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.clicks import make_affine_click_model, make_cascade_model
from jaxrank.counterfactual import logging_policy, policy_aware, propensity_svm, simulation, user_models
from jaxrank.data import synthetic_queries, take_sessions
from jaxrank.types import QueryBatch
from tests.reference import counterfactual as ref

Q, L, K = 4, 6, 4
LABELS = np.array([[2, 0, 1, 2, 0, 0], [1, 1, 0, 0, 0, 0], [0, 2, 2, 1, 0, 1], [0, 0, 0, 0, 0, 0]], np.float32)
MASK = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]], bool)
SCORES = np.random.default_rng(0).normal(size=(Q, L)).astype(np.float32)


def _queries():
    return QueryBatch(jnp.zeros((Q, L, 1)), jnp.asarray(LABELS), jnp.asarray(MASK), np.arange(Q))


def test_user_model_tables():
    np.testing.assert_allclose(user_models.graded_click_probability(4), ref.ULTRA_CLICK_PROB_4, rtol=1e-6)
    np.testing.assert_allclose(user_models.graded_click_probability(2), [0.1, 0.4, 1.0], rtol=1e-6)
    np.testing.assert_allclose(user_models.eye_tracking(12, 2.0), np.array(ref.ULTRA_EYE_TRACKING + (0.06, 0.06)) ** 2,
                               rtol=1e-6)
    np.testing.assert_allclose(user_models.inverse_rank(4, 0.5), [1.0, 0.5**0.5, (1 / 3) ** 0.5, 0.5], rtol=1e-6)
    trust = user_models.trust_bias(10, 4, "oosterhuis")
    alpha, beta = ref.trust_bias_oosterhuis(10)
    np.testing.assert_allclose(trust.alpha, alpha, rtol=1e-6)
    np.testing.assert_allclose(trust.beta, beta, rtol=1e-6)
    np.testing.assert_allclose(trust.relevance, [0, 0.25, 0.5, 0.75, 1.0])
    ultra = user_models.trust_bias(3, 4, "ultra")  # rank 2: θ = 0.48, ε+ = 0.96, ε− = 0.65/3
    np.testing.assert_allclose([ultra.alpha[2], ultra.beta[2]], [0.48 * (0.96 - 0.65 / 3), 0.48 * 0.65 / 3], rtol=1e-6)


def test_user_model_errors():
    with pytest.raises(ValueError, match="kind must be one of"):
        user_models.trust_bias(5, 2, "tois")
    with pytest.raises(ValueError, match=r"examination\[1\] = 1.5 is not a probability"):
        user_models.position_based([0.5, 1.5], [0.1, 1.0])
    with pytest.raises(ValueError, match="every alpha_k \\* relevance_g \\+ beta_k a probability"):
        make_affine_click_model([0.5, 0.9], [0.0, 0.2], [0.1, 1.0])
    with pytest.raises(ValueError, match="covers 3 ranks but num_positions=4"):
        simulation.simulate_sessions(jax.random.key(0), _queries(), 5, user_models.position_based(
            [1.0, 0.5, 0.3], [0.1, 0.5, 1.0]), num_positions=4)
    user = user_models.position_based(user_models.inverse_rank(K), user_models.graded_click_probability(2))
    with pytest.raises(ValueError, match=r"at most 2\^31 - 1 - chunk_size·K = 2147418111; got \(10, 2147483000\)"):
        simulation.simulate_click_counts(jax.random.key(0), _queries(), user, (10, 2_147_483_000), scores=SCORES,
                                         num_positions=K, chunk_size=16_384)


def _replay_lists(key, num_sessions, temperature):
    """Each session's query, shown documents and click uniforms, from the documented key derivation."""
    out = []
    for s in range(num_sessions):
        key_query, key_rank, key_click, _ = jax.random.split(jax.random.fold_in(key, s), 4)
        q = int(jax.random.randint(key_query, (), 0, Q))
        noise = temperature * np.asarray(jax.random.gumbel(key_rank, (L,)), np.float64)
        docs = ref.shown_list(SCORES[q], MASK[q], K, noise)
        out.append((q, docs, key_click))
    return out


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_affine_sessions_replay(temperature):
    key = jax.random.key(3)
    user = user_models.trust_bias(K, 2, "oosterhuis")
    log = simulation.simulate_sessions(key, _queries(), 60, user, scores=SCORES, temperature=temperature,
                                       num_positions=K)
    assert log.pair.shape == (60, K) and int(log.num_pairs) == Q * L
    for s, (q, docs, key_click) in enumerate(_replay_lists(key, 60, temperature)):
        n = len(docs)
        assert int(log.query[s]) == q and log.mask[s].tolist() == [True] * n + [False] * (K - n)
        assert log.doc[s, :n].tolist() == docs and log.pair[s, :n].tolist() == [q * L + d for d in docs]
        u = np.asarray(jax.random.uniform(key_click, (K,)))
        want = ref.affine_session_clicks(LABELS[q, docs], u, np.asarray(user.alpha), np.asarray(user.beta),
                                         np.asarray(user.relevance))
        assert log.clicks[s, :n].tolist() == want and not log.clicks[s, n:].any()


def test_cascade_sessions_replay():
    key = jax.random.key(4)
    user = make_cascade_model([0.2, 0.6, 0.9], [0.3, 0.5, 1.0])
    log = simulation.simulate_sessions(key, _queries(), 40, user, scores=SCORES, num_positions=K)
    for s, (q, docs, key_click) in enumerate(_replay_lists(key, 40, 0.0)):
        u_click, u_stop = np.asarray(jax.random.uniform(key_click, (2, K)))
        want = ref.cascade_session_clicks(LABELS[q, docs], u_click, u_stop, [0.2, 0.6, 0.9], [0.3, 0.5, 1.0])
        assert log.clicks[s, :len(docs)].tolist() == want[:len(docs)]


@pytest.mark.parametrize("temperature", [0.0, 0.5])
def test_click_counts_are_the_sessions_up_to_each_budget(temperature):
    key = jax.random.key(5)
    user = user_models.position_based(user_models.inverse_rank(K), user_models.graded_click_probability(2, 0.2))
    budgets = (7, 30, 61)
    counts = simulation.simulate_click_counts(key, _queries(), user, budgets, scores=SCORES, temperature=temperature,
                                              num_positions=K, chunk_size=16)
    log = simulation.simulate_sessions(key, _queries(), 400, user, scores=SCORES, temperature=temperature,
                                       num_positions=K)
    per_session = np.asarray(log.clicks.sum(1))
    before = np.cumsum(per_session) - per_session
    assert per_session.sum() > budgets[-1] + 10  # the 400 sessions cover every budget
    for b, budget in enumerate(budgets):
        want = simulation.session_counts(take_sessions(log, np.flatnonzero(before < budget)), Q, L)
        for name in ("clicks", "displays", "sessions", "num_clicks"):
            np.testing.assert_array_equal(getattr(counts, name)[b], getattr(want, name), err_msg=name)
        assert budget <= float(counts.num_clicks[b]) <= budget + K


def test_session_counts_by_hand():
    log = simulation.simulate_sessions(jax.random.key(6), _queries(), 30, user_models.position_based(
        np.ones(K), [0.5, 0.5, 0.5]), scores=SCORES, num_positions=K)
    counts = simulation.session_counts(log, Q, L)
    clicks, displays = np.zeros((Q, L, K)), np.zeros((Q, L, K))
    for s in range(30):
        for k in range(int(log.mask[s].sum())):
            displays[log.query[s], log.doc[s, k], k] += 1
            clicks[log.query[s], log.doc[s, k], k] += log.clicks[s, k]
    np.testing.assert_array_equal(counts.clicks, clicks)
    np.testing.assert_array_equal(counts.displays, displays)
    np.testing.assert_array_equal(counts.sessions, np.bincount(np.asarray(log.query), minlength=Q))


def test_count_views_and_the_policy_oblivious_rates():
    rng = np.random.default_rng(1)
    clicks = rng.integers(0, 3, (Q, L, K)).astype(np.float32)
    displays = rng.integers(3, 6, (Q, L, K)).astype(np.float32)
    sessions = np.array([4.0, 0.0, 2.0, 5.0], np.float32)
    counts = simulation.ClickCounts(jnp.asarray(clicks), jnp.asarray(displays), jnp.asarray(sessions),
                                    jnp.asarray(clicks.sum()))
    theta = np.array([1.0, 0.5, 0.25, 0.2], np.float32)
    safe = np.maximum(sessions, 1)[:, None]
    np.testing.assert_allclose(simulation.click_rates(counts), clicks.sum(-1) / safe, rtol=1e-6)
    np.testing.assert_allclose(simulation.display_frequencies(counts), displays / safe[..., None], rtol=1e-6)
    np.testing.assert_allclose(policy_aware.rank_ips_rates(counts, jnp.asarray(theta), clip=0.3),
                               (clicks / np.maximum(theta, 0.3)).sum(-1) / safe, rtol=1e-6)


def test_placement_probabilities():
    deterministic = logging_policy.placement_probabilities(jax.random.key(0), jnp.asarray(SCORES), jnp.asarray(MASK),
                                                           0.0, num_positions=K)
    for q in range(Q):
        np.testing.assert_array_equal(deterministic[q], ref.placement_exact(SCORES[q], 0.0, K, np.flatnonzero(MASK[q])))
    sampled = logging_policy.placement_probabilities(jax.random.key(1), jnp.asarray(SCORES), jnp.asarray(MASK), 1.0,
                                                     num_positions=K, num_samples=4000)
    for q in range(Q):
        exact = ref.placement_exact(SCORES[q].astype(np.float64), 1.0, K, np.flatnonzero(MASK[q]))
        # Monte Carlo: 4000 draws, standard error at most 0.008
        np.testing.assert_allclose(sampled[q], exact, atol=0.035)


def test_logging_ranker_uses_a_fraction_of_the_usable_queries():
    queries = synthetic_queries(jax.random.key(0), num_queries=40, list_size=8, num_features=4)
    w, info, chosen = logging_policy.train_logging_ranker(jax.random.key(1), queries, fraction=0.1)
    labels, mask = np.asarray(queries.labels), np.asarray(queries.mask)
    usable = [q for q in range(40) if labels[q][mask[q]].max() > labels[q][mask[q]].min()]
    assert len(chosen) == round(0.1 * len(usable)) and set(chosen) <= set(usable)
    assert bool(info.converged) and np.isfinite(np.asarray(w)).all()
    with pytest.raises(ValueError, match="no query has two documents of different grades"):
        logging_policy.train_logging_ranker(jax.random.key(1), queries._replace(labels=jnp.zeros_like(queries.labels)))


def test_ragged_shown_documents_are_the_per_query_top_k():
    rng = np.random.default_rng(4)
    lengths = np.array([5, 1, 0, 12, 3, 0])  # empty queries inside and at the end
    offsets = np.r_[0, np.cumsum(lengths)]
    scores = rng.integers(0, 4, size=offsets[-1]).astype(np.float32)  # many ties: broken by the lower index
    rows, shown = logging_policy.ragged_shown_documents(jnp.asarray(scores), jnp.asarray(offsets), 4)
    assert rows.shape == (6, 4) and int(rows.max()) < offsets[-1]
    for q, n in enumerate(lengths):
        want = ref.shown_list(scores[offsets[q]:offsets[q + 1]], np.ones(n, bool), 4)
        assert np.asarray(shown[q]).sum() == len(want)
        assert (np.asarray(rows[q])[:len(want)] - offsets[q]).tolist() == want
    layout = propensity_svm.ragged_layout(offsets, minimum=2)  # blocks of 2 (narrower than K), 4, 8 and 16
    blocked = logging_policy.blocked_shown_documents(jnp.asarray(scores), layout, 4)
    nonempty = lengths > 0
    np.testing.assert_array_equal(blocked[0][nonempty], rows[nonempty])
    np.testing.assert_array_equal(blocked[1], shown)
    assert not np.asarray(blocked[1])[~nonempty].any()


def test_sessions_on_the_shown_lists_are_those_on_the_full_lists():
    key = jax.random.key(12)
    user = user_models.position_based(user_models.inverse_rank(K), user_models.graded_click_probability(2, 0.2))
    full = simulation.simulate_click_counts(key, _queries(), user, (40, 90), scores=SCORES, num_positions=K,
                                            chunk_size=16)
    docs, shown = jax.vmap(lambda s, m: logging_policy.shown_documents(key, s, m, 0.0, K))(
        jnp.asarray(SCORES), jnp.asarray(MASK))
    rows = jnp.arange(Q)[:, None] * L + docs  # the flat rows of a [Q, L] layout
    lists = simulation.shown_lists(jnp.asarray(LABELS).ravel(), rows, shown)
    short = simulation.simulate_click_counts(key, lists, user, (40, 90), num_positions=K, chunk_size=16)
    # the full counts' clicks on the document shown at rank k, at rank k
    at_rank = np.take_along_axis(np.asarray(full.clicks), np.broadcast_to(np.asarray(docs)[None, :, :, None],
                                                                          (2, Q, K, K)), axis=2)
    want = np.diagonal(at_rank, axis1=-2, axis2=-1) * np.asarray(shown)
    assert want.sum() > 0
    np.testing.assert_array_equal(simulation.position_clicks(short), want)
    np.testing.assert_array_equal(short.sessions, full.sessions)
    np.testing.assert_array_equal(short.num_clicks, full.num_clicks)
