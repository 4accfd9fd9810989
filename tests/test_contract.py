"""The one contract, checked over every registered algorithm of every family.

Adding an algorithm to a family's registry is all it takes to be covered, and every ``Registry`` in
the package must have its family here (``test_every_registry_in_the_package_has_a_family``): a
new family is one ``Family(...)`` entry of ``FAMILIES``. For each algorithm, a
short lane (init, a few steps or updates, a report) on a tiny problem of its family must:

* keep the state's tree, shapes and dtypes through a step (``lax.scan`` needs it) and report a
  NamedTuple info;
* trace once for two different hyperparameter values (they are f32 leaves, not constants);
* give the same result for the same key and another result for another key;
* give under ``vmap`` over lanes what a loop of single lanes gives.
"""

import functools
import importlib
import pkgutil
from typing import Any, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxrank
from jaxrank import bandits, click_models, learners, oltr
from jaxrank.clicks import cascade_model
from jaxrank.counterfactual import COUNTERFACTUAL_LEARNERS, PROPENSITY_ESTIMATORS
from jaxrank.counterfactual.learners import ClickLog
from jaxrank.counterfactual.propensity_estimator import PropensityData
from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.envs import PrefMatrixEnv
from jaxrank.pairs import PairBatch
from jaxrank.registry import Registry
from tests.conftest import ARXIV_ROWS

NUM_STEPS = 12


class Family(NamedTuple):
    name: str  # what the registry's algorithms are
    registry: Registry
    problem: Callable[[], Any]  # () -> the family's tiny problem
    lane: Callable[..., tuple]  # lane(algo, key, hparams, problem) -> (state0, state1, outputs)


def _bandit_problem():
    return PrefMatrixEnv(jnp.asarray(ARXIV_ROWS, jnp.float32))


def _bandit_lane(algo, key, hparams, env):
    key_init, key_steps, key_best = jax.random.split(key, 3)
    state0 = algo.init(key_init, env.pref.shape[0], **hparams)
    state1, _ = algo.step(jax.random.fold_in(key_steps, 0), state0, env)

    def body(state, t):
        return algo.step(jax.random.fold_in(key_steps, t), state, env)

    state, infos = jax.lax.scan(body, state0, jnp.arange(NUM_STEPS))
    return state0, state1, (infos, algo.best_arm(key_best, state))


class LearnerProblem(NamedTuple):
    features: jax.Array  # [Q, L, D]
    labels: jax.Array  # [Q, L]
    mask: jax.Array  # [Q, L]


def _learner_problem():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(4, 5, 3)).astype(np.float32)
    labels = rng.integers(0, 3, size=(4, 5)).astype(np.float32)
    labels[:, 0], labels[:, 1] = 2.0, 0.0  # every query has a preference pair
    mask = np.ones((4, 5), bool)
    mask[1, 4] = False
    return LearnerProblem(jnp.asarray(features), jnp.asarray(labels), jnp.asarray(mask))


def _learner_batches(algo, key, problem):
    """The learner's batches, in an order drawn from ``key``: padded queries, or pairs of a query."""
    order = jax.random.permutation(key, problem.features.shape[0])
    queries = jax.tree.map(lambda x: x[order], problem)
    if algo.batches == "queries":
        from jaxrank.types import QueryBatch

        return QueryBatch(queries.features, queries.labels, queries.mask, None)
    # One sampled preference pair per step: (best, worst) documents of each query.
    first, second = jnp.argmax(queries.labels, axis=1), jnp.argmin(jnp.where(queries.mask, queries.labels, 9), axis=1)
    take = functools.partial(jnp.take_along_axis, axis=1)
    x_first = take(queries.features, first[:, None, None])[:, 0]
    x_second = take(queries.features, second[:, None, None])[:, 0]
    y = take(queries.labels, first[:, None])[:, 0] - take(queries.labels, second[:, None])[:, 0]
    diff = (x_first - x_second)[:, None, :]  # [Q, 1, D]: one labeled and one unlabeled pair a step
    valid = jnp.ones((diff.shape[0], 1), bool)
    return PairBatch(diff, y[:, None], valid, diff, valid)


def _learner_lane(algo, key, hparams, problem):
    key_init, key_order = jax.random.split(key)
    state0 = algo.init(key_init, problem.features.shape[-1], **hparams)
    batches = _learner_batches(algo, key_order, problem)
    state1, _ = algo.update(state0, jax.tree.map(lambda x: x[0], batches))
    state, infos = jax.lax.scan(algo.update, state0, batches)
    return state0, state1, (infos, algo.score(algo.params(state), problem.features))


def _ranker_problem():
    p = _learner_problem()
    return p._replace(features=jnp.concatenate([p.features] * 2, axis=1), labels=jnp.concatenate([p.labels] * 2, axis=1),
                      mask=jnp.concatenate([p.mask] * 2, axis=1))


def _ranker_lane(algo, key, hparams, problem):
    key_init, key_steps = jax.random.split(key)
    state0 = algo.init(key_init, problem.features.shape[-1], **hparams)
    click_model = cascade_model("perfect", 3)

    def impression(state, t):
        key_query, key_rank, key_click = jax.random.split(jax.random.fold_in(key_steps, t), 3)
        q = jax.random.randint(key_query, (), 0, problem.features.shape[0])
        features, where, labels = problem.features[q], problem.mask[q], problem.labels[q]
        docs, shown, aux = algo.rank(key_rank, state, features, where)
        ranked = jnp.where(shown, labels[jnp.maximum(docs, 0)], 0.0)
        from jaxrank.clicks import cascade_clicks

        clicks = cascade_clicks(key_click, ranked, shown, click_model)
        return algo.update(state, features, where, docs, shown, clicks, aux)

    state1, _ = impression(state0, 0)
    state, infos = jax.lax.scan(impression, state0, jnp.arange(NUM_STEPS))
    return state0, state1, (infos, algo.score(algo.params(state), problem.features))


def _counterfactual_lane(algo, key, hparams, problem):
    """A click log drawn from ``key`` (clicks of a position-based user, a regression, the relevance), then
    ``CF_STEPS`` L-BFGS steps of the learner on it (few: once converged, the gradient norms are float noise)."""
    key_log, key_init, key_steps = jax.random.split(key, 3)
    key_rel, key_reg, key_click = jax.random.split(key_log, 3)
    shape = problem.labels.shape
    relevance = jnp.where(problem.mask, jax.random.uniform(key_rel, shape), 0.0)
    alpha = jnp.where(problem.mask, 1.0 / (1.0 + jnp.arange(shape[1])), 0.0)
    ctr = jax.random.bernoulli(key_click, alpha * relevance).astype(jnp.float32)
    log = ClickLog(problem.features, problem.mask, ctr, alpha, jnp.zeros(shape), alpha,
                   jax.random.uniform(key_reg, shape), relevance, jnp.full(shape[0], 1.0 / shape[0]))
    state0 = algo.init(key_init, problem.features.shape[-1], **hparams)
    state1, _ = algo.step(jax.random.fold_in(key_steps, 0), state0, log)
    state, infos = jax.lax.scan(lambda s, t: algo.step(jax.random.fold_in(key_steps, t), s, log), state0,
                                jnp.arange(CF_STEPS))
    return state0, state1, (infos, algo.score(state.params, problem.features))


CF_STEPS = 4
class ClickLogProblem(NamedTuple):
    query: jax.Array  # [S] the query of each session
    pair: jax.Array  # [S, K] pairs shown
    mask: jax.Array  # [S, K] a prefix of each row
    num_pairs: int


def _click_model_problem():
    """16 sessions of 2 queries with 3 documents each, lists of 2 or 3 in a seeded random order."""
    rng = np.random.default_rng(0)
    query = rng.integers(0, 2, size=16)
    pair = np.stack([q * 3 + rng.permutation(3) for q in query]).astype(np.int32)
    mask = np.ones((16, 3), bool)
    mask[::4, 2] = False
    return ClickLogProblem(jnp.asarray(query, jnp.int32), jnp.asarray(np.where(mask, pair, 0)), jnp.asarray(mask), 6)


def _click_model_lane(algo, key, hparams, problem):
    """Clicks drawn from ``key`` by the model itself (probabilities spread over (0.27, 0.73)), then
    the EM fit of those sessions: init, ``NUM_STEPS`` steps, the fitted relevance of every pair."""
    from jaxrank.data.sessions import SessionLog

    num_positions = problem.pair.shape[1]
    start = algo.init_params(problem.num_pairs, num_positions)
    truth = jax.tree.map(lambda x: x + jnp.linspace(-1.0, 1.0, x.size).reshape(x.shape), start)
    keys = jax.random.split(key, problem.pair.shape[0])
    clicks = jax.vmap(algo.sample, in_axes=(0, None, 0, 0))(keys, truth, problem.pair, problem.mask)
    log = SessionLog(problem.query, problem.pair, problem.pair, clicks, problem.mask,
                     jnp.asarray(problem.num_pairs, jnp.int32), jnp.asarray(2, jnp.int32))
    state0 = algo.init(key, problem.num_pairs, num_positions, **hparams)
    state1, _ = algo.step(state0, log)
    state, infos = jax.lax.scan(lambda s, _: algo.step(s, log), state0, None, length=NUM_STEPS)
    return state0, state1, (infos, algo.relevance(state.params, jnp.arange(problem.num_pairs)))


def _propensity_lane(algo, key, hparams, problem):
    """Click counts drawn from ``key`` (a position-based user, ``θ_k = 1/k`` on 3 ranks, relevance from the
    labels) on the lists of two rankers that show each document at two ranks, then ``NUM_STEPS`` steps."""
    key_click, key_init, key_steps = jax.random.split(key, 3)
    num_sessions, num_positions = 8, 3
    num_queries, num_docs = problem.labels.shape
    ranks = jnp.arange(num_positions)
    # ranker r shows document (k + r) mod L at rank k: displays [Q, L, K]
    shown = sum(jax.nn.one_hot((ranks + r) % num_docs, num_docs, axis=0) for r in (0, 1))  # [L, K]
    displays = num_sessions * shown[None] * problem.mask[..., None]
    prob = (0.2 + 0.3 * problem.labels)[..., None] / (1.0 + ranks)  # [Q, L, K]
    draws = jax.random.bernoulli(key_click, prob, (2 * num_sessions,) + displays.shape)
    clicks = jnp.sum(draws * (jnp.arange(2 * num_sessions)[:, None, None, None] < displays), axis=0)
    counts = ClickCounts(clicks.astype(jnp.float32), displays, jnp.full(num_queries, 2.0 * num_sessions),
                         jnp.sum(clicks).astype(jnp.float32))
    data = PropensityData(counts, problem.features)
    state0 = algo.init(key_init, data, **hparams)
    state1, _ = algo.step(jax.random.fold_in(key_steps, 0), state0, data)
    state, infos = jax.lax.scan(lambda s, t: algo.step(jax.random.fold_in(key_steps, t), s, data), state0,
                                jnp.arange(NUM_STEPS))
    return state0, state1, (infos, algo.propensities(state))


FAMILIES = {f.name: f for f in (
    Family("bandit", bandits.ALGORITHMS, _bandit_problem, _bandit_lane),
    Family("learner", learners.LEARNERS, _learner_problem, _learner_lane),
    Family("ranker", oltr.RANKERS, _ranker_problem, _ranker_lane),
    Family("click model", click_models.CLICK_MODELS, _click_model_problem, _click_model_lane),
    Family("counterfactual", COUNTERFACTUAL_LEARNERS, _learner_problem, _counterfactual_lane),
    Family("propensity estimator", PROPENSITY_ESTIMATORS, _learner_problem, _propensity_lane),
)}
CASES = [(family, name) for family, f in FAMILIES.items() for name in f.registry]


def _registries_in_package() -> dict[int, list[str]]:
    """``{id(registry): ["jaxrank.module.NAME", ...]}`` of every ``Registry`` bound at module level
    anywhere in ``jaxrank`` (every module imported)."""
    found = {}
    for info in pkgutil.walk_packages(jaxrank.__path__, "jaxrank."):
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            if isinstance(value, Registry):
                found.setdefault(id(value), []).append(f"{info.name}.{attr}")
    return found


def test_every_registry_in_the_package_has_a_family():
    """No registry can be left out of the contract: each one found in the package has a lane here."""
    found = _registries_in_package()
    covered = {id(f.registry) for f in FAMILIES.values()}
    missing = sorted(min(paths) for key, paths in found.items() if key not in covered)
    assert not missing, f"registries without a Family lane in tests/test_contract.py: {', '.join(missing)}"
    assert covered <= set(found), "a family's registry is not bound at module level in jaxrank"


def _other_values(hparams: dict) -> dict:
    """Valid values other than the defaults: each hyperparameter moved 10% towards zero."""
    return {k: 0.9 * v if v else 0.1 for k, v in hparams.items()}


def _f32(hparams: dict) -> dict:
    return {k: jnp.asarray(v, jnp.float32) for k, v in hparams.items()}


@pytest.fixture(scope="module", params=CASES, ids=[f"{f}-{n}" for f, n in CASES])
def case(request):
    family, name = request.param
    f = FAMILIES[family]
    algo = f.registry.build(name)
    problem = f.problem()
    traces = []

    def lane(key, hparams):
        traces.append(1)
        return f.lane(algo, key, hparams, problem)

    return name, f, algo, jax.jit(lane), traces


def test_registry_entries_declare_their_settings(case):
    name, f, _, _, _ = case
    module = f.registry[name]
    assert all(isinstance(v, float) for v in module.HPARAMS.values()), module.HPARAMS
    assert not set(module.HPARAMS) & set(module.OPTIONS)


def test_a_step_keeps_the_state_tree_shapes_and_dtypes_and_reports_a_namedtuple(case):
    name, f, _, lane, _ = case
    state0, state1, (infos, _) = lane(jax.random.key(0), _f32(f.registry.hparams(name)))
    chex.assert_trees_all_equal_shapes_and_dtypes(state0, state1)
    assert jax.tree.structure(state0) == jax.tree.structure(state1)
    assert isinstance(infos, tuple) and hasattr(infos, "_fields"), type(infos)


def test_two_hyperparameter_values_share_one_trace_and_change_the_state(case):
    name, f, _, lane, traces = case
    defaults = f.registry.hparams(name)
    before = len(traces)
    a = lane(jax.random.key(1), _f32(defaults))
    b = lane(jax.random.key(1), _f32(_other_values(defaults)))
    assert len(traces) - before <= 1, "a new hyperparameter value retraced the lane"
    if defaults:
        # The hyperparameters are leaves of the state: the initial states differ.
        assert any(not np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a[0]), jax.tree.leaves(b[0])))


def _leaves_equal(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def test_same_key_same_result_other_key_other_result(case):
    name, f, _, lane, _ = case
    hp = _f32(f.registry.hparams(name))
    first, again, other = (lane(jax.random.key(k), hp) for k in (3, 3, 4))
    assert _leaves_equal(first, again)
    assert not _leaves_equal(first[1:], other[1:])


def test_vmap_over_lanes_equals_a_loop_of_single_lanes(case):
    name, f, _, lane, _ = case
    hp = _f32(f.registry.hparams(name))
    keys = jax.random.split(jax.random.key(5), 3)
    batched = jax.vmap(lane, in_axes=(0, None))(keys, hp)
    for i in range(3):
        single = lane(keys[i], hp)
        for x, y in zip(jax.tree.leaves(single), jax.tree.leaves(batched)):
            np.testing.assert_allclose(np.asarray(y[i]), np.asarray(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_an_option_given_as_a_hyperparameter_is_a_clear_error(family):
    registry = FAMILIES[family].registry
    name = next((n for n in registry if registry.options(n)), None)
    if name is None:
        pytest.skip(f"no {family} declares a static option")
    option = next(iter(registry.options(name)))
    with pytest.raises(ValueError, match=f"{option!r} is a static option"):
        registry.check_hparams(name, [option])
    with pytest.raises(ValueError, match="has no setting 'no_such_setting'"):
        registry.split(name, {"no_such_setting": 1.0})
