"""Tests for ``jaxrank.click_models.generate_sessions`` (replayed session by session against the click
simulators it calls) and ``jaxrank.click_models.metrics`` (against the PyClick formulas in
``tests/reference/click_models.py``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import click_models
from jaxrank.click_models import CLICK_MODELS, from_probabilities, generate_sessions
from jaxrank.clicks import cascade_clicks, cascade_model, make_position_based_model, position_based_clicks
from jaxrank.data import session_log
from jaxrank.oltr import ClickQueries
from jaxrank.types import QueryBatch
from tests.reference import click_models as ref

Q, L, K = 3, 5, 4
LABELS = np.array([[2, 0, 1, 2, 0], [1, 1, 0, 0, 0], [0, 2, 2, 1, 0]], np.float32)
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], bool)


def _queries():
    return QueryBatch(jnp.zeros((Q, L, 1)), jnp.asarray(LABELS), jnp.asarray(MASK), np.arange(Q))


def _session_keys(key, num):
    """``(query [S], key_click [S])``: each session's query and click key, as the generator derives them."""
    keys = jax.vmap(lambda s: jax.random.split(jax.random.fold_in(key, s), 3))(jnp.arange(num))
    return np.asarray(jax.vmap(lambda k: jax.random.randint(k, (), 0, Q))(keys[:, 0])), keys[:, 2]


def _replay(click_fn, keys, labels, where, model):
    return np.asarray(jax.jit(jax.vmap(click_fn, in_axes=(0, 0, 0, None)))(keys, labels, where, model))


def test_cascade_sessions_replay_the_simulator():
    key, model = jax.random.key(0), cascade_model("informational", 3)
    scores = jnp.asarray(np.random.default_rng(0).normal(size=(Q, L)), jnp.float32)
    log = generate_sessions(key, _queries(), 40, model, scores=scores, num_positions=K)
    assert log.pair.shape == (40, K) and (int(log.num_pairs), int(log.num_queries)) == (Q * L, Q)
    queries, key_click = _session_keys(key, 40)
    docs = np.zeros((40, K), int)
    for s, q in enumerate(queries):
        order = [d for d in np.argsort(-np.asarray(scores[q]), kind="stable") if MASK[q, d]][:K]
        n = len(order)
        assert int(log.query[s]) == q and log.mask[s].tolist() == [True] * n + [False] * (K - n)
        assert log.doc[s, :n].tolist() == order and log.pair[s, :n].tolist() == [q * L + d for d in order]
        docs[s, :n] = order
    want = _replay(cascade_clicks, key_click, LABELS[queries[:, None], docs], log.mask, model)
    np.testing.assert_array_equal(log.clicks, want)


def test_position_based_sessions_with_a_fixed_ranking():
    key = jax.random.key(1)
    model = make_position_based_model([0.9, 0.6, 0.4, 0.2], [0.1, 0.5, 0.9])
    ranking = jnp.asarray([[4, 3, 2, 1, 0], [2, 0, 1, -1, -1], [3, 0, -1, -1, -1]], jnp.int32)
    log = generate_sessions(key, _queries(), 30, model, ranking=ranking, num_positions=K)
    queries, key_click = _session_keys(key, 30)
    for s, q in enumerate(queries):
        order = [int(d) for d in ranking[q, :K] if d >= 0]
        assert log.doc[s, :len(order)].tolist() == order and int(log.mask[s].sum()) == len(order)
    docs = np.clip(np.asarray(ranking)[queries, :K], 0, None)
    want = _replay(position_based_clicks, key_click, LABELS[queries[:, None], docs], log.mask, model)
    np.testing.assert_array_equal(log.clicks, want)


def test_fitted_model_sessions_and_key_per_session():
    model = CLICK_MODELS.build("dbn")
    params = from_probabilities(jax.tree.map(lambda x: jnp.full(x.shape, 0.6, jnp.float32), model.init_params(Q * L, K)))
    key = jax.random.key(2)
    log = generate_sessions(key, _queries(), 25, model, params=params, temperature=1.0, num_positions=K)
    head = generate_sessions(key, _queries(), 10, model, params=params, temperature=1.0, num_positions=K)
    for a, b in zip(head[:5], log[:5]):  # session s does not depend on how many are drawn
        np.testing.assert_array_equal(a, b[:10])
    _, key_click = _session_keys(key, 25)
    want = jax.jit(jax.vmap(model.sample, in_axes=(0, None, 0, 0)))(key_click, params, log.pair, log.mask)
    np.testing.assert_array_equal(log.clicks, want)
    other = generate_sessions(jax.random.key(3), _queries(), 25, model, params=params, temperature=1.0,
                              num_positions=K)
    assert not np.array_equal(other.pair, log.pair)


def test_click_queries_limit_the_queries():
    queries = ClickQueries(jnp.zeros((Q, L, 1)), jnp.asarray(LABELS), jnp.asarray(MASK), jnp.zeros(Q),
                           jnp.asarray(2, jnp.int32))
    log = generate_sessions(jax.random.key(4), queries, 200, cascade_model("perfect", 3), num_positions=K)
    assert set(np.asarray(log.query).tolist()) == {0, 1}


def test_generate_rejects_bad_arguments():
    model = CLICK_MODELS.build("pbm")
    with pytest.raises(ValueError, match="pass params="):
        generate_sessions(jax.random.key(0), _queries(), 5, model)
    with pytest.raises(ValueError, match="scores must be"):
        generate_sessions(jax.random.key(0), _queries(), 5, cascade_model("perfect", 3), scores=jnp.zeros((Q, 2)))
    with pytest.raises(ValueError, match="shown real documents must come first"):
        generate_sessions(jax.random.key(0), _queries(), 5, cascade_model("perfect", 3),
                          ranking=jnp.asarray([[0, -1, 1], [0, 1, 2], [0, 1, 2]]))
    with pytest.raises(ValueError, match="click_model must be"):
        generate_sessions(jax.random.key(0), _queries(), 5, "dbn")


@pytest.mark.parametrize("name", ("pbm", "ubm", "dbn", "cm"))
def test_metrics_equal_pyclick_formulas(name):
    model = CLICK_MODELS.build(name)
    rng = np.random.default_rng(5)
    shapes = model.init_params(6, 3)
    probs = jax.tree.map(lambda x: jnp.asarray(rng.uniform(0.1, 0.9, x.shape), jnp.float32), shapes)
    rows = []
    for _ in range(40):
        n = int(rng.choice([2, 3]))
        rows.append((tuple(int(p) for p in rng.permutation(6)[:n]),
                     tuple(int(c) for c in rng.random(n) < (0.2 if name == "cm" else 0.4))))
    if name == "cm":  # the cascade model gives a second click probability 0: keep one click per session
        rows = [(p, tuple(int(i == c.index(1)) for i in range(len(c))) if 1 in c else c) for p, c in rows]
    pad = lambda xs: list(xs) + [0] * (3 - len(xs))  # noqa: E731
    log = session_log(np.zeros(len(rows), int), [pad(p) for p, _ in rows], [pad(p) for p, _ in rows],
                      [pad(c) for _, c in rows], [[1] * len(p) + [0] * (3 - len(p)) for p, _ in rows], num_pairs=6)
    from tests.test_click_models import _to_reference  # the key mapping of the click-model tests

    reference = _to_reference(name, probs)
    params = from_probabilities(probs)
    log_likelihood = jax.jit(click_models.log_likelihood, static_argnums=0)
    assert float(log_likelihood(model, params, log)) == pytest.approx(ref.log_likelihood(name, reference, rows),
                                                                       rel=1e-5)
    for conditional, fn in ((False, click_models.perplexity), (True, click_models.conditional_perplexity)):
        overall, per_rank = ref.perplexity(name, reference, rows, 3, conditional=conditional)
        got = jax.jit(fn, static_argnums=0)(model, params, log)
        assert float(got.overall) == pytest.approx(overall, rel=1e-5)
        np.testing.assert_allclose(got.per_rank, per_rank, rtol=1e-5)


def test_cascade_examination_is_the_product_of_not_stopping_above():
    """Hand-computed: click (0.2, 0.8), stop after a click (0.5, 1.0) per grade 0, 1; a grade-1 document
    stops 0.8 of users, a grade-0 one 0.1. Sessions [1, 0, 1] and [0, 1, -]: P(E) = (1, 0.2, 0.18) and
    (1, 0.9, -), averaged over the sessions showing each rank."""
    from jaxrank.click_models.examination import cascade_examination
    from jaxrank.clicks import make_cascade_model

    model = make_cascade_model([0.2, 0.8], [0.5, 1.0])
    grades = np.asarray([[1, 0, 1], [0, 1, 0], [1, 1, 0]])
    mask = np.asarray([[True, True, True], [True, True, False], [False, False, False]])
    np.testing.assert_allclose(cascade_examination(model, grades[:2], mask[:2]), [1.0, 0.55, 0.18], rtol=1e-6)
    got = cascade_examination(model, grades, mask)
    np.testing.assert_allclose(got, [1.0, 0.55, 0.18], rtol=1e-6)
    with pytest.raises(ValueError, match=r"grades must lie in \[0, 2\) on the shown ranks; got \[0, 2\]"):
        cascade_examination(model, grades + np.asarray([[0, 0, 1], [0, 0, 0], [0, 0, 0]]), mask)


def _pyclick_cm_conditional(attr, pairs, clicks):
    """PyClick's ``CM.get_conditional_click_probs`` as a loop: ``P(C_r = 1) = α_r Π_{i<r}(1 - α_i)`` and
    its complement up to and including the first click (every rank without one), ``10⁻⁶`` below it."""
    first = clicks.index(1) if 1 in clicks else len(clicks)
    probs, exam = [], 1.0
    for rank, (p, c) in enumerate(zip(pairs, clicks)):
        click = attr[p] * exam
        exam *= 1.0 - attr[p]
        probs.append(1e-6 if rank > first else (click if c else 1.0 - click))
    return probs


def test_pyclick_conventions_score_cm_by_pyclick_rule():
    """``conventions="pyclick"``: CM's log-likelihood and conditional perplexity equal PyClick's rule on
    sessions with several clicks (clicked and skipped positions below the first click); the other
    models and the unconditional perplexity are unchanged; "jaxrank" keeps the model's own."""
    model = CLICK_MODELS.build("cm")
    rng = np.random.default_rng(11)
    attr = rng.uniform(0.1, 0.9, 6)
    rows = []
    for _ in range(60):
        n = int(rng.choice([2, 3, 4]))
        rows.append((tuple(int(p) for p in rng.permutation(6)[:n]), tuple(int(c) for c in rng.random(n) < 0.45)))
    assert sum(sum(c) >= 2 for _, c in rows) > 5 and sum(1 not in c for _, c in rows) > 5
    pad = lambda xs: list(xs) + [0] * (4 - len(xs))  # noqa: E731
    log = session_log(np.zeros(len(rows), int), [pad(p) for p, _ in rows], [pad(p) for p, _ in rows],
                      [pad(c) for _, c in rows], [[1] * len(p) + [0] * (4 - len(p)) for p, _ in rows], num_pairs=6)
    params = from_probabilities(model.init_params(6, 4)._replace(attraction=jnp.asarray(attr, jnp.float32)))
    cond = [_pyclick_cm_conditional(attr, p, c) for p, c in rows]
    want_ll = np.mean([np.mean(np.log(c)) for c in cond])
    sums, counts = np.zeros(4), np.zeros(4)
    for c in cond:
        sums[:len(c)] += np.log2(c)
        counts[:len(c)] += 1
    want_per_rank = 2.0 ** (-sums / counts)
    got_ll = click_models.log_likelihood(model, params, log, conventions="pyclick")
    got_ppl = click_models.conditional_perplexity(model, params, log, conventions="pyclick")
    assert float(got_ll) == pytest.approx(want_ll, rel=1e-5)
    np.testing.assert_allclose(got_ppl.per_rank, want_per_rank, rtol=1e-5)
    assert float(got_ppl.overall) == pytest.approx(want_per_rank.mean(), rel=1e-5)
    # jaxrank's rule is another number on these sessions (the model's conditional α_r above the first click)
    assert abs(float(click_models.log_likelihood(model, params, log)) - want_ll) > 0.1
    dbn = CLICK_MODELS.build("dbn")
    dbn_params = dbn.init_params(6, 4)
    assert float(click_models.log_likelihood(dbn, dbn_params, log, conventions="pyclick")) == \
        float(click_models.log_likelihood(dbn, dbn_params, log))
    with pytest.raises(ValueError, match="conventions"):
        click_models.log_likelihood(model, params, log, conventions="clax")


def test_generate_logs_lanes_hold_each_keys_log():
    """One program over keys and per-lane rankers: lane n is ``generate_sessions`` with key n and scores n."""
    queries = _queries()
    keys = jax.random.split(jax.random.key(3), 3)
    scores = jax.random.normal(jax.random.key(4), (3,) + queries.labels.shape)
    user = cascade_model("navigational", 3)
    logs = click_models.generate_logs(keys, queries, 50, user, scores=scores, temperature=0.5, num_positions=4)
    for n in range(3):
        one = generate_sessions(keys[n], queries, 50, user, scores=scores[n], temperature=0.5, num_positions=4)
        for field, a, b in zip(one._fields, jax.tree.leaves(logs), jax.tree.leaves(one)):
            np.testing.assert_array_equal(np.asarray(a)[n], np.asarray(b), err_msg=f"lane {n}: {field}", strict=True)
