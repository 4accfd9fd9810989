"""Online pairwise learners: parity with scikit-learn's PA-II and with NumPy transcriptions
(``tests/reference/online_learners.py``), bad input, masking, jit/vmap and state structure."""

import functools
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.data import load_fold, synthetic_queries
from jaxrank.learners import LEARNERS
from jaxrank.learners.online import num_pair_slots, predict_rank, query_pairs
from jaxrank.types import InstanceInfo, Learner, QueryBatch, UpdateInfo
from tests.conftest import SAMPLE_DATA
from tests.reference import online_learners as ref

D = 5
ONLINE = ("solar_first_order", "solar_second_order", "committee_perceptron", "prank_pairwise", "prank_pointwise")
# built once: the jitted programs below are static in the learner, so equal learners share compiles
SOLAR1 = LEARNERS.build("solar_first_order")
SOLAR2 = LEARNERS.build("solar_second_order")
SOLAR2_NOGUARD = LEARNERS.build("solar_second_order", guard=False)
PRANK = LEARNERS.build("prank_pointwise", num_grades=3)
PRANK_PAIR = LEARNERS.build("prank_pairwise")
COMMITTEE = {n: LEARNERS.build("committee_perceptron", num_members=n) for n in (20, 2)}


@functools.lru_cache(maxsize=None)
def _synthetic(seed=0, num_queries=6, list_size=8):
    make = functools.partial(
        synthetic_queries, num_queries=num_queries, list_size=list_size, num_features=D, num_grades=3
    )
    return jax.jit(make)(jax.random.PRNGKey(seed))


@pytest.fixture(scope="module")
def mq2008():
    train, _, _ = load_fold(str(SAMPLE_DATA / "MQ2008-mini"), 1, layout="dense")
    return train


def _numpy(batch, dtype):
    return QueryBatch(
        features=np.asarray(batch.features, dtype),
        labels=np.asarray(batch.labels, dtype),
        mask=np.asarray(batch.mask),
        qid=np.asarray(batch.qid),
    )


@functools.partial(jax.jit, static_argnames=("learner", "dtype"))
def _scan(learner, batch, hparams, dtype):
    state = learner.init(None, batch.features.shape[-1], dtype, **hparams)
    return jax.lax.scan(learner.update, state, batch)


def _train(learner, batch, dtype=jnp.float32, **hparams):
    """Online pass over ``batch`` from ``init(**hparams)``: hyperparameters are arguments, so one
    compile per (learner, dtype, shapes) serves every value."""
    return _scan(learner, batch, {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}, dtype)


def _sklearn_pa2(z, s, c):
    from sklearn.linear_model import PassiveAggressiveClassifier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = PassiveAggressiveClassifier(C=c, loss="squared_hinge", fit_intercept=False, shuffle=False)
        for k in range(len(s)):
            clf.partial_fit(z[k : k + 1], s[k : k + 1].astype(int), classes=[-1, 1])
    return clf.coef_[0]


def _stream(batch):
    b = _numpy(batch, np.float64)
    return ref.batch_stream(b.features, b.labels, b.mask)


# ---------------------------------------------------------------------------------- pairs


def test_pairs_order_and_validity():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    q = QueryBatch(x, np.array([2.0, 0.0, 2.0, 1.0], np.float32), np.array([True, True, True, False]), np.int32(0))
    p = query_pairs(q)
    assert p.z.shape == (num_pair_slots(4), 3)
    np.testing.assert_array_equal(p.first, [0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(p.second, [1, 2, 3, 2, 3, 3])
    np.testing.assert_array_equal(p.valid, [True, False, False, True, False, False])
    np.testing.assert_array_equal(p.sign, [1, 0, 0, -1, 0, 0])
    np.testing.assert_allclose(p.z[0], x[0] - x[1])
    np.testing.assert_allclose(p.z[3], x[1] - x[2])
    np.testing.assert_array_equal(p.z[1], 0)


# ---------------------------------------------------------------------------------- SOLAR-I


@pytest.mark.parametrize("c", [1e-5, 0.1])
def test_solar_first_order_matches_sklearn_mq2008(mq2008, c):
    z, s = _stream(mq2008)
    assert len(s) > 0
    expected = _sklearn_pa2(z, s, c)
    np.testing.assert_allclose(expected, ref.pa2(z, s, c), rtol=0, atol=1e-12)
    state, info = _train(SOLAR1, mq2008, c=c)
    np.testing.assert_allclose(np.asarray(state.w), expected, rtol=0, atol=1e-4)
    assert int(info.instances.sum()) == len(s)
    with jax.enable_x64(True):
        state64, _ = _train(SOLAR1, _numpy(mq2008, np.float64), jnp.float64, c=c)
        assert state64.w.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(state64.w), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("c", [1e-5, 0.1])
def test_solar_first_order_matches_sklearn_synthetic(c):
    batch = _synthetic()
    z, s = _stream(batch)
    expected = _sklearn_pa2(z, s, c)
    state, _ = _train(SOLAR1, batch, c=c)
    np.testing.assert_allclose(np.asarray(state.w), expected, rtol=0, atol=1e-4)
    with jax.enable_x64(True):
        state64, _ = _train(SOLAR1, _numpy(batch, np.float64), jnp.float64, c=c)
        np.testing.assert_allclose(np.asarray(state64.w), expected, rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------- SOLAR-II


@pytest.mark.parametrize("gamma,guard", [(1e4, True), (1.0, True), (1.0, False)])
def test_solar_second_order_matches_numpy_arow(gamma, guard):
    batch = _synthetic()
    z, s = _stream(batch)
    mu, sigma = ref.arow(z, s, gamma, guard=guard)
    learner = SOLAR2 if guard else SOLAR2_NOGUARD
    state, _ = _train(learner, batch, gamma=gamma)
    np.testing.assert_allclose(np.asarray(state.w), mu, rtol=0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(state.sigma), sigma, rtol=0, atol=1e-4)
    with jax.enable_x64(True):
        state64, _ = _train(learner, _numpy(batch, np.float64), jnp.float64, gamma=gamma)
        np.testing.assert_allclose(np.asarray(state64.w), mu, rtol=0, atol=1e-6)
        np.testing.assert_allclose(np.asarray(state64.sigma), sigma, rtol=0, atol=1e-6)


def test_solar_second_order_matches_numpy_arow_mq2008(mq2008):
    z, s = _stream(mq2008)
    mu, sigma = ref.arow(z, s, 1.0)
    state, _ = _train(SOLAR2, mq2008, gamma=1.0)
    np.testing.assert_allclose(np.asarray(state.w), mu, rtol=0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(state.sigma), sigma, rtol=0, atol=1e-4)


# ---------------------------------------------------------------------------------- Prank, Com-P


def test_prank_pointwise_matches_numpy():
    batch = _synthetic()
    b = _numpy(batch, np.float64)
    x = b.features[b.mask]  # real documents, query by query, in index order
    y = b.labels[b.mask].astype(int) + 1
    w, thresholds = ref.prank(x, y, 3)
    state, info = _train(PRANK, batch)
    np.testing.assert_allclose(np.asarray(state.w), w, rtol=0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(state.b), thresholds, rtol=0, atol=1e-4)
    assert np.all(np.diff(np.asarray(state.b)) >= 0)
    assert int(info.updates.sum()) > 0
    ranks = predict_rank(state, batch.features)
    assert ranks.shape == batch.labels.shape and int(ranks.min()) >= 1 and int(ranks.max()) <= 3


def test_prank_pairwise_matches_numpy():
    batch = _synthetic()
    z, s = _stream(batch)
    w, threshold = ref.prank_pairwise(z, s)
    state, _ = _train(PRANK_PAIR, batch)
    np.testing.assert_allclose(np.asarray(state.w), w, rtol=0, atol=1e-4)
    np.testing.assert_allclose(float(state.b), threshold, rtol=0, atol=1e-4)


@pytest.mark.parametrize("n", [20, 2])
def test_committee_perceptron_matches_numpy(n):
    batch = _synthetic()
    z, s = _stream(batch)
    w, c, committee = ref.committee_perceptron(z, s, n)
    learner = COMMITTEE[n]
    state, _ = _train(learner, batch)
    np.testing.assert_allclose(np.asarray(state.w), w, rtol=0, atol=1e-4)
    assert int(state.count) == c
    assert int(state.filled.sum()) == len(committee)
    for k, (wk, ck) in enumerate(committee):
        np.testing.assert_allclose(np.asarray(state.members[k]), wk, rtol=0, atol=1e-4)
        assert int(state.member_counts[k]) == ck
    x = np.asarray(batch.features[0], np.float64)
    np.testing.assert_allclose(
        np.asarray(learner.score(learner.params(state), batch.features[0])), ref.committee_score(w, committee, x),
        rtol=1e-4, atol=1e-4
    )


# ---------------------------------------------------------------------------------- contract, bad input

LEARNER_CASES = {  # (learner, hyperparameters): built once, so the jitted programs are shared between tests
    "solar1": (SOLAR1, {"c": 0.1}),
    "solar2": (SOLAR2, {"gamma": 1.0}),
    "solar2_noguard": (SOLAR2_NOGUARD, {"gamma": 1.0}),
    "prank": (PRANK, {}),
    "prank_pair": (PRANK_PAIR, {}),
    "comp": (COMMITTEE[20], {}),
}


def _one_query(batch, i):
    return jax.tree.map(lambda a: a[i], batch)


@pytest.mark.parametrize("name", sorted(LEARNER_CASES))
def test_contract(name):
    learner, hparams = LEARNER_CASES[name]
    batch = _synthetic()
    update = jax.jit(learner.update)
    state = learner.init(jax.random.PRNGKey(0), D, **hparams)
    for i in range(batch.num_queries):
        q = _one_query(batch, i)
        new, info = update(state, q)
        assert isinstance(info, UpdateInfo)
        chex.assert_trees_all_equal_shapes_and_dtypes(new, state)
        if i == 1:
            new_nojit, info_nojit = learner.update(state, q)
            chex.assert_trees_all_close(new, new_nojit, rtol=1e-6, atol=1e-6)
            chex.assert_trees_all_close(info, info_nojit, rtol=1e-6, atol=1e-6)
        assert all(bool(jnp.all(jnp.isfinite(v))) for v in jax.tree.leaves((new, info)))
        state = new
    x = batch.features[0]
    chex.assert_trees_all_close(learner.score(learner.params(state), x), jax.jit(learner.score)(learner.params(state), x))
    new, info = learner.step(state, x[0] - x[1], jnp.float32(1.0))
    assert isinstance(info, InstanceInfo)
    chex.assert_trees_all_equal_shapes_and_dtypes(new, state)
    if name != "prank":  # pairwise learners take a ready QueryPairs as well
        q = _one_query(batch, 0)
        a, _ = learner.update(state, q)
        b, _ = learner.update(state, query_pairs(q))
        chex.assert_trees_all_close(a, b)


def _pad(batch, extra):
    """Appends ``extra`` masked documents (random features and grades) to every query."""
    key = jax.random.PRNGKey(7)
    q, _, d = batch.features.shape
    junk_x = jax.random.uniform(key, (q, extra, d))
    junk_l = jnp.full((q, extra), 2.0)
    return QueryBatch(
        features=jnp.concatenate([batch.features, junk_x], 1),
        labels=jnp.concatenate([batch.labels, junk_l], 1),
        mask=jnp.concatenate([batch.mask, jnp.zeros((q, extra), bool)], 1),
        qid=batch.qid,
    )


@pytest.mark.parametrize("name", sorted(LEARNER_CASES))
def test_masked_padding_changes_nothing(name):
    learner, hparams = LEARNER_CASES[name]
    batch = _synthetic()
    a, info_a = _train(learner, batch, **hparams)
    b, info_b = _train(learner, _pad(batch, 3), **hparams)
    chex.assert_trees_all_close(a, b, rtol=1e-6, atol=1e-6)
    chex.assert_trees_all_close(info_a, info_b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(LEARNER_CASES))
def test_no_pairs_no_update(name):
    learner, hparams = LEARNER_CASES[name]
    x = jax.random.uniform(jax.random.PRNGKey(3), (8, D))
    single_doc = QueryBatch(x, jnp.full(8, 2.0), jnp.arange(8) == 0, jnp.int32(0))
    single_grade = QueryBatch(x, jnp.ones(8), jnp.arange(8) < 5, jnp.int32(0))
    # a state that has already learned something, so "unchanged" is not trivially zero
    state, _ = _train(learner, _synthetic(), **hparams)
    for q in (single_doc, single_grade):
        new, info = jax.jit(learner.update)(state, q)
        expected = state._replace(t=state.t + 1)
        if name == "prank":  # pointwise Prank learns from single documents; only padding is inert
            q = q._replace(mask=jnp.zeros(8, bool))
            new, info = jax.jit(learner.update)(state, q)
        chex.assert_trees_all_equal(new, expected)
        assert int(info.updates) == 0
        assert float(info.loss) == 0.0


@pytest.mark.parametrize("name", ONLINE)
def test_registry_modules_declare_their_settings(name):
    """Every online learner is one module with HPARAMS (f32 leaves of its state, set by ``init``) and
    OPTIONS (bound by ``make``), and its ``make(**OPTIONS)`` is a ``Learner`` with ``step``."""
    module = LEARNERS[name]
    learner = LEARNERS.build(name)
    assert isinstance(learner, Learner) and learner.step is not None
    state = learner.init(jax.random.key(0), D, **{k: 2.0 * v for k, v in module.HPARAMS.items()})
    for hparam, default in module.HPARAMS.items():
        leaf = getattr(state, hparam)
        assert leaf.dtype == jnp.float32 and float(leaf) == np.float32(2.0 * default)


def test_bad_settings_are_rejected_with_the_fix():
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match=rf"c must be > 0; got {bad!r}; C is PA-II's aggressiveness"):
            SOLAR1.init(None, D, c=bad)
        with pytest.raises(ValueError, match=rf"gamma must be > 0; got {bad!r}; γ is AROW's regularizer"):
            SOLAR2.init(None, D, gamma=bad)
    with pytest.raises(ValueError, match="num_grades must be an int >= 2; got 1"):
        LEARNERS.build("prank_pointwise", num_grades=1)
    with pytest.raises(ValueError, match="score_by must be one of 'raw', 'rank'; got 'votes'"):
        LEARNERS.build("prank_pointwise", score_by="votes")
    with pytest.raises(ValueError, match="num_members must be an int >= 1; got 0"):
        LEARNERS.build("committee_perceptron", num_members=0)
    with pytest.raises(ValueError, match=r"'solar_second_order': gamma=1.0 is a hyperparameter, set through init"):
        LEARNERS.build("solar_second_order", gamma=1.0)
    with pytest.raises(ValueError, match=r"'solar_second_order': 'guard' is a static option, not a hyperparameter"):
        LEARNERS.check_hparams("solar_second_order", ["guard"])
    with pytest.raises(ValueError, match=r"learner 'solar_first_order' has no setting 'C'; hyperparameters: c"):
        LEARNERS.split("solar_first_order", {"C": 1.0})


def test_vmap_over_c_traces_once_and_matches_separate_runs():
    batch = _synthetic()
    cs = [1e-5, 1e-2, 1.0]

    def train(c):
        return jax.lax.scan(SOLAR1.update, SOLAR1.init(None, D, c=c), batch)[0].w

    run = jax.jit(jax.vmap(chex.assert_max_traces(train, n=1)))
    together = run(jnp.array(cs, jnp.float32))
    again = run(jnp.array(cs[::-1], jnp.float32))  # other values, the same program: a second trace would raise
    np.testing.assert_array_equal(np.asarray(again), np.asarray(together)[::-1])
    for k, c in enumerate(cs):
        separate, _ = _train(SOLAR1, batch, c=c)
        np.testing.assert_allclose(np.asarray(together[k]), np.asarray(separate.w), rtol=1e-6, atol=1e-7)


def test_vmap_over_gamma_matches_separate_runs():
    batch = _synthetic()
    gammas = [1.0, 1e4]

    def train(gamma):
        return jax.lax.scan(SOLAR2.update, SOLAR2.init(None, D, gamma=gamma), batch)[0]

    together = jax.jit(jax.vmap(train))(jnp.array(gammas, jnp.float32))
    for k, gamma in enumerate(gammas):
        separate, _ = _train(SOLAR2, batch, gamma=gamma)
        np.testing.assert_allclose(np.asarray(together.w[k]), np.asarray(separate.w), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(np.asarray(together.sigma[k]), np.asarray(separate.sigma), rtol=1e-6, atol=1e-7)
