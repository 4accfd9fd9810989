"""Tests for ``jaxrank.click_models.gradient`` and ``jaxrank.click_models.parametrization``.

* Gradient fitting climbs the log-likelihood EM climbs: on one small generated log (float64), the
  full-batch Adam fit of PBM, UBM, DBN and CCM reaches the log-likelihood of EM run to convergence
  (``prior=(0, 0)``: plain likelihood) within 1e-4 nats per session, absolute (the log-likelihood
  summed over a session's positions, averaged over sessions); with ``prior=(1, 2)`` (the default) it
  reaches EM's default (PyClick) fit, a Beta(2, 2) maximum a posteriori; with every default (minibatches,
  50 epochs) it scores EM's test log-likelihood within a stated tolerance.
* Early stopping returns the epoch with the best validation log-likelihood (NumPy, from each epoch's
  stored parameters) and never trains on the held-out sessions.
* Attraction as a linear function of the pairs' features recovers a generated ``sigmoid(x·w + b)``
  attraction, also on pairs the log never shows.
* Minibatches, ``vmap`` over keys and learning rates, and bad options.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import click_models
from jaxrank.click_models import CLICK_MODELS, fit_em, fit_gradient, from_probabilities, generate_sessions
from jaxrank.click_models import gradient
from jaxrank.click_models import parametrization as param_lib
from jaxrank.click_models.pbm import PBMParams
from jaxrank.types import QueryBatch
from tests.test_click_models import _queries, _true_params

NUM_QUERIES, NUM_DOCS, K = 3, 4, 4


def _log(name, num_sessions=400, seed=11):
    model = CLICK_MODELS.build(name)
    truth = _true_params(name, NUM_QUERIES * NUM_DOCS, K)
    return model, generate_sessions(jax.random.key(seed), _queries(NUM_QUERIES, NUM_DOCS), num_sessions, model,
                                    params=from_probabilities(truth), temperature=1e3, num_positions=K)


def _per_session(model, params, log) -> float:
    return float(jnp.sum(model.conditional_log_probs(params, log))) / log.pair.shape[0]


def _log_prior(params, prior) -> float:
    """``Σ a log θ + (b - a) log(1 - θ)`` over every probability, in NumPy."""
    a, b = prior
    probs = [np.asarray(p, np.float64).ravel() for p in jax.tree.leaves(click_models.probabilities(params))]
    return float(sum(np.sum(a * np.log(p) + (b - a) * np.log1p(-p)) for p in probs))


@pytest.mark.parametrize("name", ("pbm", "ubm", "dbn", "ccm"))
def test_gradient_reaches_the_em_optimum(name):
    model, log = _log(name)
    with jax.enable_x64(True):
        em = fit_em(log, model, num_iterations=600, prior=(0.0, 0.0))  # converged: 3000 give the same to 1e-15
        grad = fit_gradient(jax.random.key(0), log, model, num_epochs=600, batch_size=None, learning_rate=0.1,
                            schedule="cosine", prior=None)
        assert jax.tree.leaves(grad)[0].dtype == jnp.float64
        em_value, grad_value = _per_session(model, em, log), _per_session(model, grad, log)
    start = _per_session(model, model.init_params(NUM_QUERIES * NUM_DOCS, K), log)
    assert grad_value - start > 0.05  # far from the start: the comparison is not vacuous
    assert abs(grad_value - em_value) < 1e-4, (name, em_value, grad_value)


@pytest.mark.parametrize("name", ("pbm", "dbn"))
def test_the_defaults_score_ems_fit(name):
    """Every default (learning rate 0.05, 50 epochs in batches of 64, EM's prior (1, 2), float32) on 1,000
    sessions: the training and the test log-likelihood (a second log of the same user) within 0.002 nats
    per session of EM's (PyClick's settings; measured gaps at most 0.0006)."""
    model, train = _log(name, num_sessions=1000)
    test = _log(name, num_sessions=1000, seed=12)[1]
    assert gradient.resolve_batch_size(gradient.DEFAULT_BATCH_SIZE, 1000) == 64
    em, grad = fit_em(train, model), fit_gradient(jax.random.key(0), train, model)
    start = model.init_params(NUM_QUERIES * NUM_DOCS, K)
    for log in (train, test):
        assert _per_session(model, grad, log) - _per_session(model, start, log) > 0.1  # not vacuous
        assert abs(_per_session(model, grad, log) - _per_session(model, em, log)) < 2e-3, name


def test_the_closed_form_likelihood_has_the_value_and_gradient_of_the_summed_conditionals():
    """DBN's ``session_log_probs`` (a cumulative sum, no pass per position) against ``conditional_log_probs``
    summed (the filter), float64, on a log with short sessions and empty ones (a minibatch's padding)."""
    model, log = _log("dbn", num_sessions=200)
    assert model.session_log_probs is not None
    mask = log.mask.at[:40].set(log.mask[:40] & (jnp.arange(K) < 2)).at[-5:].set(False)
    log = log._replace(mask=mask, clicks=log.clicks & mask)
    assert 0 < int(jnp.sum(log.clicks[:, -1])) and int(jnp.sum(~log.clicks.any(-1))) > 5
    rng = np.random.default_rng(4)
    with jax.enable_x64(True):
        params = jax.tree.map(lambda x: jnp.asarray(rng.normal(size=x.shape)), model.init_params(NUM_QUERIES * NUM_DOCS, K))
        closed_fn = lambda p: click_models.session_log_likelihood(model, p, log)  # noqa: E731
        summed_fn = lambda p: jnp.sum(model.conditional_log_probs(p, log), -1)  # noqa: E731
        np.testing.assert_allclose(jax.jit(closed_fn)(params), jax.jit(summed_fn)(params), rtol=1e-12, atol=1e-12)
        closed = jax.jit(jax.value_and_grad(lambda p: jnp.sum(closed_fn(p))))(params)
        summed = jax.jit(jax.value_and_grad(lambda p: jnp.sum(summed_fn(p))))(params)
    for ours, want in zip(jax.tree.leaves(closed), jax.tree.leaves(summed)):
        np.testing.assert_allclose(ours, want, rtol=1e-10, atol=1e-10)


def test_prior_gives_em_map_fit():
    """EM's pseudo-counts (1, 2) are the Beta(2, 2) MAP: the gradient fit with that prior reaches EM's
    objective, and the plain-likelihood fit does not score higher on it."""
    model, log = _log("pbm", num_sessions=300)
    prior = (1.0, 2.0)
    with jax.enable_x64(True):
        em = fit_em(log, model, num_iterations=600)  # PyClick's prior (1, 2)
        grad = fit_gradient(jax.random.key(0), log, model, num_epochs=600, batch_size=None, learning_rate=0.1,
                            schedule="cosine", prior=prior)
        plain = fit_gradient(jax.random.key(0), log, model, num_epochs=600, batch_size=None, learning_rate=0.1,
                             schedule="cosine", prior=None)
        value = {k: _per_session(model, p, log) + _log_prior(p, prior) / log.pair.shape[0]
                 for k, p in (("em", em), ("grad", grad), ("plain", plain))}
    assert abs(value["grad"] - value["em"]) < 1e-4, value
    assert value["plain"] < value["em"] - 1e-3, value  # the prior changes the optimum: the test can fail


def _linear_pbm_log(seen_queries=15, num_queries=20, num_docs=6, num_sessions=8000):
    """A PBM log whose attraction is ``sigmoid(x·w + b)`` of per-pair features; the last queries are never shown."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (num_queries * num_docs, 3)).astype(np.float32)
    w, b = np.array([2.0, -1.5, 1.0], np.float32), np.float32(-0.5)
    exam = click_models.logit(jnp.asarray([1.0 - 1e-4, 0.7, 0.5, 0.35, 0.25], jnp.float32))
    truth = PBMParams(jnp.asarray(x @ w + b)[:seen_queries * num_docs], exam)
    queries = QueryBatch(jnp.zeros((seen_queries, num_docs, 1)), jnp.zeros((seen_queries, num_docs)),
                         jnp.ones((seen_queries, num_docs), bool), np.arange(seen_queries))
    log = generate_sessions(jax.random.key(0), queries, num_sessions, CLICK_MODELS.build("pbm"), params=truth,
                            temperature=1e3, num_positions=5)
    return log, x, w, b, seen_queries * num_docs


def test_linear_features_recover_a_generated_attraction():
    log, x, w, b, seen = _linear_pbm_log()
    model = CLICK_MODELS.build("pbm")
    fitted = fit_gradient(jax.random.key(1), log, model, parametrization=param_lib.features(("attraction",)),
                          features=jnp.asarray(x), num_pairs=x.shape[0], num_epochs=300, batch_size=None,
                          learning_rate=0.05, schedule="cosine")
    logits = np.asarray(fitted.attraction, np.float64)
    # The fitted logits are x·ŵ + b̂ exactly: read ŵ and b̂ back by least squares.
    design = np.concatenate([x, np.ones((x.shape[0], 1))], axis=1).astype(np.float64)
    coef = np.linalg.lstsq(design, logits, rcond=None)[0]
    np.testing.assert_allclose(design @ coef, logits, atol=1e-4)
    np.testing.assert_allclose(coef, np.append(w, b), atol=0.25)
    true_attraction = 1.0 / (1.0 + np.exp(-(x @ w + b)))
    unseen = slice(seen, None)  # pairs of queries the log never shows: predicted from their features
    assert np.abs(np.asarray(jax.nn.sigmoid(fitted.attraction))[unseen] - true_attraction[unseen]).max() < 0.08
    np.testing.assert_allclose(jax.nn.sigmoid(fitted.examination), [1.0, 0.7, 0.5, 0.35, 0.25], atol=0.08)


def test_mlp_features_and_tables_for_other_fields():
    """DBN with attraction from a small MLP and satisfaction and continuation as tables: the fit climbs."""
    model, log = _log("dbn", num_sessions=400)
    x = jnp.asarray(np.random.default_rng(1).normal(size=(NUM_QUERIES * NUM_DOCS, 2)), jnp.float32)
    par = param_lib.features(("attraction",), hidden=(8,))
    trainable = param_lib.init(jax.random.key(0), par, model, NUM_QUERIES * NUM_DOCS, K, features=x)
    assert set(trainable.tables) == {"satisfaction", "continuation"} and set(trainable.nets) == {"attraction"}
    start = param_lib.apply(par, model, trainable, x)
    np.testing.assert_array_equal(start.attraction, 0.0)  # a network starts at logit 0, as a table at 0.5
    fitted = fit_gradient(jax.random.key(1), log, model, parametrization=par, features=x, num_epochs=60, batch_size=128,
                          learning_rate=0.05)
    assert _per_session(model, fitted, log) > _per_session(model, start, log) + 0.1


def test_minibatches_vmap_and_full_batch():
    model, log = _log("ubm", num_sessions=300)
    # A batch as large as the log is the full batch.
    whole = fit_gradient(jax.random.key(2), log, model, num_epochs=3, batch_size=None, learning_rate=0.1)
    large = fit_gradient(jax.random.key(2), log, model, num_epochs=3, batch_size=10_000, learning_rate=0.1)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(large)):
        np.testing.assert_array_equal(a, b)
    # Minibatches of 64 (the last of 300 padded): vmapped over keys x learning rates = the single runs.
    fit = lambda key, rate: fit_gradient(key, log, model, num_epochs=4, batch_size=64, learning_rate=rate,  # noqa: E731
                                         num_pairs=NUM_QUERIES * NUM_DOCS)
    keys = jax.random.split(jax.random.key(3), 2)
    rates = jnp.asarray([0.02, 0.1], jnp.float32)
    grid = jax.jit(jax.vmap(jax.vmap(fit, in_axes=(None, 0)), in_axes=(0, None)))(keys, rates)
    for i in range(2):
        for j in range(2):
            single = fit(keys[i], float(rates[j]))
            for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(grid)):
                np.testing.assert_allclose(a, b[i, j], rtol=1e-5, atol=1e-6)
    values = [[_per_session(model, jax.tree.map(lambda x: x[i, j], grid), log) for j in range(2)] for i in range(2)]
    assert values[0][0] != values[1][0]  # another key, another order of the minibatches
    start = _per_session(model, model.init_params(NUM_QUERIES * NUM_DOCS, K), log)
    assert min(min(v) for v in values) > start


def test_an_epochs_batches_cover_every_session_once():
    rows = jax.jit(jax.vmap(gradient.batch_rows, in_axes=(None, 0, None, None)), static_argnums=(2, 3))
    orders = [np.asarray(rows(jnp.uint32(word), jnp.arange(5), 64, 300)).ravel() for word in (7, 8)]
    for order in orders:
        assert sorted(order[:300].tolist()) == list(range(300)) and (order[300:] == 300).all()
    assert (orders[0][:300] != orders[1][:300]).mean() > 0.9  # another word, another order


def test_a_fit_without_a_finite_validation_value_returns_its_last_epoch():
    """Adam steps of 10⁶ make every held-out log-likelihood non-finite: no epoch is picked (``best_epoch`` 0) and
    the fit returns its last, broken parameters, so a caller's finiteness check still sees them."""
    model, log = _log("pbm", num_sessions=100)
    params, infos = fit_gradient(jax.random.key(0), log, model, num_epochs=2, learning_rate=1e6, validation=0.25,
                                 prior=None, return_info=True)
    assert np.asarray(infos.best_epoch).tolist() == [0, 0] and not np.isfinite(np.asarray(infos.validation)).any()
    assert not np.isfinite(_per_session(model, params, log))


def test_adam_is_optax_adam():
    """``gradient.adam`` (optax's moments, the bias corrections as one step factor) against
    ``optax.scale_by_adam`` over 300 steps of random gradients, float64: the same updates to 1e-12."""
    import optax

    rng = np.random.default_rng(6)
    with jax.enable_x64(True):
        params = {"a": jnp.asarray(rng.normal(size=7)), "b": jnp.asarray(rng.normal(size=(2, 3)))}
        grads = [jax.tree.map(lambda x: jnp.asarray(rng.normal(size=x.shape) * 10.0 ** rng.integers(-9, 2)), params)
                 for _ in range(300)]

        def run(tx):
            step = jax.jit(tx.update)
            state, out = tx.init(params), []
            for g in grads:
                update, state = step(g, state)
                out.append(update)
            return out

        for ours, theirs in zip(run(gradient.adam()), run(optax.scale_by_adam())):
            for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_auto_batches_give_at_least_32_steps_an_epoch_within_64_to_4096():
    sizes = {s: gradient.auto_batch_size(s) for s in (100, 3000, 35_000, 200_000, 10**7)}
    assert sizes == {100: 64, 3000: 64, 35_000: 1024, 200_000: 4096, 10**7: 4096}


@pytest.mark.parametrize("kwargs, match", [
    (dict(optimizer="lbfgs"), "optimizer must be one of 'adam', 'adamw', 'sgd'; got 'lbfgs'"),
    (dict(schedule="linear"), "schedule must be one of"),
    (dict(batch_size=0), "batch_size must be an int >= 1; got 0; \"auto\", or None for full batch"),
    (dict(validation=1.0), r"validation must be in \[0, 1\); got 1.0"),
    (dict(validation=0.01), "validation=0.01 of 20 sessions holds out 0"),
    (dict(num_epochs=0), "num_epochs must be an int >= 1"),
    (dict(learning_rate=-0.1), "learning_rate must be > 0; got -0.1"),
    (dict(prior=(2.0, 1.0)), r"prior must be \(a, b\) pseudo-counts with 0 <= a <= b"),
    (dict(init=1.0), r"init must be in \(0, 1\); got 1.0"),
    (dict(parametrization=param_lib.features(("examination",))), "no per-pair field 'examination'.*attraction"),
    (dict(parametrization=param_lib.features()), r"needs features= of shape \[P=12, D\].*got None"),
    (dict(features=jnp.zeros((12, 2))), "features= is for a features"),
    (dict(parametrization="tables"), "parametrization must be"),
])
def test_bad_options_are_named(kwargs, match):
    model, log = _log("pbm", num_sessions=20)
    with pytest.raises(ValueError, match=match):
        fit_gradient(jax.random.key(0), log, model, **kwargs)


def test_bad_parametrizations_are_named():
    with pytest.raises(ValueError, match="distinct field names"):
        param_lib.features(("attraction", "attraction"))
    with pytest.raises(ValueError, match=r"hidden widths must be ints >= 1"):
        param_lib.features(hidden=(0,))
    assert param_lib.pair_fields(CLICK_MODELS.build("dbn")) == ("attraction", "satisfaction")
    assert param_lib.pair_fields(CLICK_MODELS.build("rctr")) == ()


def _sparse_pbm_log(num_queries=40, num_docs=5, num_sessions=320, seed=3):
    """A PBM log of 200 pairs seen about 8 times each: per-pair tables overfit it."""
    model = CLICK_MODELS.build("pbm")
    rng = np.random.default_rng(seed)
    truth = PBMParams(jnp.asarray(rng.uniform(0.1, 0.9, num_queries * num_docs), jnp.float32),
                      jnp.asarray(np.linspace(0.95, 0.4, K), jnp.float32))
    log = generate_sessions(jax.random.key(seed), _queries(num_queries, num_docs), num_sessions, model,
                            params=from_probabilities(truth), temperature=1e3, num_positions=K)
    return model, log, num_queries * num_docs


def _pbm_log_likelihood(params, log, rows) -> float:
    """PBM's log-likelihood per session of the sessions ``rows``, in NumPy float64: ``Σ_r c log(α ε_r) +
    (1 - c) log(1 - α ε_r)`` over the shown positions."""
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))  # noqa: E731
    prob = sigmoid(params.attraction)[np.asarray(log.pair)[rows]] * sigmoid(params.examination)[None, :]
    clicks, mask = np.asarray(log.clicks)[rows], np.asarray(log.mask)[rows]
    return float(np.where(mask, np.where(clicks, np.log(prob), np.log1p(-prob)), 0.0).sum() / len(rows))


def test_early_stopping_keeps_the_epoch_with_the_best_validation_likelihood():
    """Adam at a large step on a sparse log (no prior) overfits after a few epochs. Every epoch's
    validation value is the NumPy log-likelihood of that epoch's parameters on the held-out sessions;
    the fit returns the parameters of the epoch where it peaks, and reports that epoch. The held-out
    sessions are never trained on: flipping their clicks leaves the training path bit for bit."""
    from jaxrank.utils.swap_or_not import shuffle_index

    model, log, num_pairs = _sparse_pbm_log()
    epochs, options = 12, dict(batch_size=16, validation=0.25)
    fitter = gradient.gradient_fitter(model, num_pairs=num_pairs, num_epochs=epochs, **options)
    init = jax.jit(lambda key, log: fitter.init(key, log, learning_rate=0.05, prior_a=0.0, prior_b=0.0))
    step = jax.jit(fitter.epoch)
    key = jax.random.key(4)
    state = init(key, log)
    num_held = gradient.num_validation(log.pair.shape[0], 0.25)
    held = np.asarray(shuffle_index(state.split, jnp.arange(num_held, dtype=jnp.uint32), jnp.uint32(320)))
    params, values = [], []
    for _ in range(epochs):
        state, info = step(state, log)
        params.append(param_lib.apply(param_lib.tables(), model, state.trainable))
        values.append(float(info.validation))
    reference = [_pbm_log_likelihood(p, log, held) for p in params]
    np.testing.assert_allclose(values, reference, rtol=1e-5)
    best = int(np.argmax(reference)) + 1
    assert 1 < best < epochs and reference[-1] < reference[best - 1] - 0.01, reference  # it does overfit
    assert int(info.best_epoch) == best
    for a, b in zip(fitter.params(state), params[best - 1]):
        np.testing.assert_array_equal(a, b)
    fitted, infos = fit_gradient(key, log, model, num_epochs=epochs, learning_rate=0.05, prior=None, return_info=True,
                                 **options)
    np.testing.assert_array_equal(infos.best_epoch, np.maximum.accumulate(np.where(  # the best so far, epoch by epoch
        np.asarray(reference) == np.maximum.accumulate(reference), np.arange(1, epochs + 1), 0)))
    np.testing.assert_allclose(fitted.attraction, params[best - 1].attraction, rtol=1e-5, atol=1e-6)
    flipped = log._replace(clicks=np.asarray(log.clicks) ^ (np.isin(np.arange(320), held)[:, None] & log.mask))
    one, two = init(key, log), init(key, flipped)
    for _ in range(2):
        (one, info_one), (two, info_two) = step(one, log), step(two, flipped)
    for a, b in zip(jax.tree.leaves(one.trainable), jax.tree.leaves(two.trainable)):
        np.testing.assert_array_equal(a, b)
    assert float(info_one.validation) != float(info_two.validation)
