"""The neural rankers of the PDGD paper (Oosterhuis & de Rijke, CIKM 2018, §4.3: DBGD and PDGD with
one hidden layer of sigmoid units): the network and its gradient against a hand-written NumPy one,
neural DBGD and PDGD against the NumPy reference on the same draws, the registry contract over the
neural variants, and bad options refused."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import oltr
from jaxrank.clicks import cascade_model
from tests.reference import oltr as ref
from tests import test_contract as contract
from tests.test_oltr import D, K, L, _queries, _replay

H = 6  # hidden units: unlike D = 5, so a transposed weight matrix cannot pass


def _reference_init(key_init):
    """The reference network from the standard normals ``scorers.neural_init`` draws from ``key_init``."""
    key_hidden, key_bias, key_output = jax.random.split(key_init, 3)
    return ref.neural_init(np.asarray(jax.random.normal(key_hidden, (D, H))),
                           np.asarray(jax.random.normal(key_bias, (H,))),
                           np.asarray(jax.random.normal(key_output, (H,))))


def _dbgd_draws(interleaving):
    """DBGD's draws with one direction over all ``D·H + 2H`` weights (``_team_draft_draws(2)`` and
    ``_probabilistic_draws`` of ``test_oltr`` with ``P`` in place of ``D``)."""
    num_params = D * H + 2 * H

    def draws(key_rank, n):
        key_dir, key_list = jax.random.split(key_rank)
        normal = np.asarray(jax.random.normal(key_dir, (1, num_params)))[0]
        if interleaving == "team_draft":
            key_order, _ = jax.random.split(key_list)
            return dict(normal=normal, order_u=np.asarray(jax.random.uniform(key_order, (math.ceil(K / 2), 2))))
        return dict(normal=normal, pi_u=np.asarray(jax.random.uniform(key_list, (K, 2))))
    return draws


CASES = {  # (registry name, options, hyperparameters, reference step, reference draws, click model)
    "pdgd": ("pdgd", {}, {"learning_rate": 0.1},
             lambda w, x, y, d, m: ref.neural_pdgd_impression(w, x, y, d, m, learning_rate=0.1),
             lambda key_rank, n: dict(gumbel=np.asarray(jax.random.gumbel(key_rank, (L,)))[:n]), "informational"),
    "dbgd_team_draft": ("dbgd", {"interleaving": "team_draft"}, {"learning_rate": 0.05, "delta": 0.5},
                        lambda w, x, y, d, m: ref.neural_dbgd_impression(w, x, y, d, m, learning_rate=0.05, delta=0.5,
                                                                         interleaving="team_draft"),
                        _dbgd_draws("team_draft"), "navigational"),
    "dbgd_probabilistic": ("dbgd", {"interleaving": "probabilistic"}, {"learning_rate": 0.05, "delta": 1.0},
                           lambda w, x, y, d, m: ref.neural_dbgd_impression(w, x, y, d, m, learning_rate=0.05,
                                                                            delta=1.0, interleaving="probabilistic"),
                           _dbgd_draws("probabilistic"), "perfect"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_neural_learner_matches_numpy_reference(name):
    """100 impressions on the same draws, from the same initial network: every weight within 1e-5
    of the float64 reference and the same online NDCG."""
    algo, options, hparams, step, draws, model_name = CASES[name]
    ranker = oltr.RANKERS.build(algo, model="neural", hidden_units=H, **options)
    batch = _queries()
    data = oltr.click_queries(batch)
    key = jax.random.key(7)
    result = jax.jit(lambda k: oltr.simulate(k, ranker, data, data, cascade_model(model_name, 3),
                                             checkpoints=(0, 40, 100), hparams=hparams))(key)
    net_ref, online_ref = _replay(step, draws, key, batch, model_name, 100, init_fn=_reference_init)
    start = _reference_init(jax.random.split(key)[0])
    assert max(np.abs(net_ref[k] - start[k]).max() for k in start) > 1e-3  # it learned something
    assert isinstance(result.params, oltr.NeuralParams)
    for k in ("hidden", "bias", "output"):
        np.testing.assert_allclose(np.asarray(getattr(result.params, k)), net_ref[k], atol=1e-5, err_msg=k)
    np.testing.assert_allclose(float(result.online[-1]), online_ref, rtol=1e-5)


def test_neural_scores_and_weighted_gradient_match_the_hand_written_network():
    """``apply`` on features with two leading axes, and ``gradient`` (``Σ_i c_i ∇f(x_i)`` by
    ``jax.vjp``) against the network and its chain rule written out in NumPy."""
    scorer = oltr.scorers.make("neural", H)
    params = scorer.init(jax.random.key(2), D)
    params = params._replace(output=params.output * 20.0)  # weights of order 1: the sigmoid's curvature counts
    net = {k: np.asarray(getattr(params, k), np.float64) for k in ("hidden", "bias", "output")}
    rng = np.random.default_rng(4)
    features = rng.normal(size=(2, 3, 4, D)).astype(np.float32)
    scores = np.asarray(scorer.apply(params, jnp.asarray(features)))
    assert scores.shape == (2, 3, 4)
    want = ref.neural_scores(net, features.reshape(-1, D).astype(np.float64)).reshape(2, 3, 4)
    np.testing.assert_allclose(scores, want, rtol=1e-5, atol=1e-6)
    weights = rng.normal(size=4).astype(np.float32)
    grad = scorer.gradient(params, jnp.asarray(features[0, 0]), jnp.asarray(weights))
    want = ref.neural_weighted_gradient(net, features[0, 0].astype(np.float64), weights.astype(np.float64))
    for k in ("hidden", "bias", "output"):
        np.testing.assert_allclose(np.asarray(getattr(grad, k)), want[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_linear_model_starts_at_zero_and_its_gradient_is_the_weighted_sum_of_features():
    """``w = 0`` whatever the key, and ``Σ_i c_i ∇_w (w·x_i) = Σ_i c_i x_i``."""
    scorer = oltr.scorers.make("linear")
    features = np.random.default_rng(5).normal(size=(4, D)).astype(np.float32)
    weights = np.asarray([0.5, -1.0, 0.0, 2.0], np.float32)
    w = scorer.init(None, D)
    np.testing.assert_array_equal(w, np.zeros(D, np.float32))
    want = sum(float(c) * x.astype(np.float64) for c, x in zip(weights, features))
    np.testing.assert_allclose(scorer.gradient(w, jnp.asarray(features), jnp.asarray(weights)), want, rtol=1e-6)


NEURAL = {  # every ranker with the neural model, small enough for fast tests
    "pdgd": ("pdgd", {"model": "neural", "hidden_units": 8}),
    "dbgd": ("dbgd", {"model": "neural", "hidden_units": 8}),
    "mgd": ("mgd", {"model": "neural", "hidden_units": 8, "num_candidates": 3}),
}


@pytest.fixture(scope="module", params=list(NEURAL), ids=[f"ranker-{n}-neural" for n in NEURAL])
def case(request):
    """``tests.test_contract``'s ``case`` for a ranker built with the neural model."""
    name, options = NEURAL[request.param]
    f = contract.FAMILIES["ranker"]
    algo = f.registry.build(name, **options)
    problem = f.problem()
    traces = []

    def lane(key, hparams):
        traces.append(1)
        return f.lane(algo, key, hparams, problem)

    return name, f, algo, jax.jit(lane), traces


# The contract's checks (tests/test_contract.py, unchanged), collected here so they run on the neural ``case``.
test_registry_entries_declare_their_settings = contract.test_registry_entries_declare_their_settings
test_a_step_keeps_the_state_tree_shapes_and_dtypes_and_reports_a_namedtuple = (
    contract.test_a_step_keeps_the_state_tree_shapes_and_dtypes_and_reports_a_namedtuple)
test_two_hyperparameter_values_share_one_trace_and_change_the_state = (
    contract.test_two_hyperparameter_values_share_one_trace_and_change_the_state)
test_same_key_same_result_other_key_other_result = contract.test_same_key_same_result_other_key_other_result
test_vmap_over_lanes_equals_a_loop_of_single_lanes = contract.test_vmap_over_lanes_equals_a_loop_of_single_lanes


@pytest.mark.parametrize("make, message", [
    (lambda: oltr.RANKERS.build("pdgd", model="deep"), "model must be one of 'linear', 'neural'; got 'deep'"),
    (lambda: oltr.RANKERS.build("dbgd", model="neural", hidden_units=0), "hidden_units must be an int >= 1; got 0"),
    (lambda: oltr.RANKERS.build("mgd", hidden_units=2.5), "hidden_units must be an int; got 2.5"),
    (lambda: oltr.RANKERS.build("pdgd", model="neural").init(None, D), "key .* must be a PRNG key .*got None"),
    (lambda: oltr.pdgd.init(jax.random.key(0), D, model="neural"), "'model' is a static option.*got model=.neural."),
])
def test_bad_model_options_raise_one_line(make, message):
    with pytest.raises(ValueError, match=message) as info:
        make()
    assert "\n" not in str(info.value)

