"""Tests for ``jaxrank.click_models``: the ten click models against ``tests/reference/click_models.py``.

* click probabilities (conditional on the clicks above, and unconditional) equal sums over every
  assignment of the hidden variables of a 3-position list, for all ten models;
* sampled click patterns have the reference's pattern probabilities;
* 50 EM iterations (float64) equal the reference's EM for PBM, UBM, DBN and CCM; the counting models
  equal plain counting;
* fitting a log generated from known parameters recovers them.
"""

import itertools
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import click_models
from jaxrank.click_models import CLICK_MODELS, fit_em, from_probabilities, generate_sessions
from jaxrank.data import session_log
from jaxrank.types import QueryBatch
from tests.reference import click_models as ref

NAMES = ("gctr", "rctr", "dctr", "pbm", "cm", "ubm", "dcm", "ccm", "dbn", "sdbn")
EM_MODELS = ("pbm", "ubm", "dbn", "ccm")
COUNTING_MODELS = ("gctr", "rctr", "dctr", "cm", "dcm", "sdbn")
# The reference's key prefix of each parameter field.
FIELDS = {
    "gctr": {"ctr": "ctr"}, "rctr": {"ctr": "ctr"}, "dctr": {"ctr": "ctr"},
    "pbm": {"attraction": "attr", "examination": "exam"},
    "ubm": {"attraction": "attr", "examination": "gamma"},
    "cm": {"attraction": "attr"},
    "dcm": {"attraction": "attr", "continuation": "lambda"},
    "sdbn": {"attraction": "attr", "satisfaction": "sat"},
    "dbn": {"attraction": "attr", "satisfaction": "sat", "continuation": "cont"},
    "ccm": {"attraction": "attr", "tau1": "tau1", "tau2": "tau2", "tau3": "tau3"},
}
NUM_PAIRS, K = 6, 3
REPO = Path(__file__).resolve().parents[1]


def _to_reference(name, probs) -> dict:
    """``{key: probability}`` of a params pytree of probabilities."""
    out = {}
    for field, prefix in FIELDS[name].items():
        values = np.asarray(getattr(probs, field), np.float64)
        if values.ndim == 0:
            out[(prefix,)] = float(values)
        elif values.ndim == 1:
            out.update({(prefix, i): float(v) for i, v in enumerate(values)})
        else:  # UBM: examination[r, d - 1]
            out.update({(prefix, r, j + 1): float(values[r, j]) for r in range(values.shape[0])
                        for j in range(values.shape[1])})
    return out


def _random_probs(name, seed, num_pairs=NUM_PAIRS, num_positions=K):
    model = CLICK_MODELS.build(name)
    shapes = model.init_params(num_pairs, num_positions)
    rng = np.random.default_rng(seed)
    return jax.tree.map(lambda x: jnp.asarray(rng.uniform(0.1, 0.9, x.shape), jnp.float32), shapes)


def _all_patterns_log(lists):
    """Every click pattern of each list (some lists shorter than ``K``, padded)."""
    rows = []
    for pairs in lists:
        for clicks in itertools.product((0, 1), repeat=len(pairs)):
            rows.append((pairs, clicks))
    pad = lambda xs: list(xs) + [0] * (K - len(xs))  # noqa: E731
    return session_log(np.zeros(len(rows), int), [pad(p) for p, _ in rows], [pad(p) for p, _ in rows],
                       [pad(c) for _, c in rows], [[1] * len(p) + [0] * (K - len(p)) for p, _ in rows],
                       num_pairs=NUM_PAIRS), rows


def test_registry_holds_the_ten_models():
    assert tuple(CLICK_MODELS) == NAMES
    for name in NAMES:
        model = CLICK_MODELS.build(name)
        assert model.name == name and model.fitting == ("em" if name in EM_MODELS else "counting")
        # PyClick's EM conventions (Param: numerator 1, denominator 2; ParamEM.PROB_MIN = 1e-6; start 0.5).
        assert CLICK_MODELS.hparams(name) == {"init": 0.5, "prior_a": 1.0, "prior_b": 2.0, "cap": 1.0 - 1e-6}
        assert CLICK_MODELS.options(name) == {"chunk_size": 16384}
        assert CLICK_MODELS.build(name, chunk_size=32).chunk_size == 32


def test_init_and_step_keep_the_contract_and_give_fit_em():
    """``init(key, P, K, **hparams)`` stores the hyperparameters as leaves; ``step`` returns
    ``(state, EMInfo)``; steps from the defaults give ``fit_em``'s params, and the info's
    log-likelihood is that of a NumPy sum over sessions of the params before each step."""
    log, _ = _em_log()
    model = CLICK_MODELS.build("dbn")
    state = model.init(jax.random.key(0), 8, K, **CLICK_MODELS.hparams("dbn"))
    assert state.prior_a.dtype == jnp.float32 and float(state.prior_b) == 2.0 and int(state.iteration) == 0
    step = jax.jit(model.step)
    want_lls = []
    for _ in range(3):
        want_lls.append(np.sum(np.asarray(model.conditional_log_probs(state.params, log), np.float64)))
        state, info = step(state, log)
    assert type(info).__name__ == "EMInfo" and int(info.iteration) == 3
    np.testing.assert_allclose(float(info.log_likelihood), want_lls[-1], rtol=1e-5)
    assert want_lls[0] < want_lls[1] < want_lls[2]  # EM climbs the likelihood
    want = fit_em(log, model, num_iterations=3)
    for x, y in zip(jax.tree.leaves(state.params), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    start = model.init(jax.random.key(0), 8, K)
    looped, infos = click_models.run_em(model, start, log, 3)  # the loop fit_em and the lanes run
    np.testing.assert_array_equal(np.asarray(infos.iteration), [1, 2, 3])
    np.testing.assert_allclose(np.asarray(infos.log_likelihood), want_lls, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(looped.params.attraction), np.asarray(want.attraction))
    # A weaker prior is a leaf value, not a new program: the fit moves and the trace is reused.
    weak = model.init(jax.random.key(0), 8, K, prior_a=0.5, prior_b=1.0)
    moved, _ = step(weak, log)
    assert step._cache_size() == 1
    assert not np.array_equal(np.asarray(moved.params.attraction), np.asarray(
        fit_em(log, model, num_iterations=1).attraction))


def test_log1mexp_is_stable():
    x = jnp.asarray([0.0, -1e-10, -0.5, -float(np.log(2)), -5.0, -50.0, -jnp.inf])
    with np.errstate(divide="ignore"):
        expected = np.log1p(-np.exp(np.asarray([0.0, -1e-10, -0.5, -np.log(2), -5.0, -50.0, -np.inf], np.float64)))
    np.testing.assert_allclose(click_models.log1mexp(x), expected, rtol=1e-5)
    assert np.isfinite(jax.grad(lambda v: click_models.log1mexp(v))(-1e-3))


@pytest.mark.parametrize("name", NAMES)
def test_probabilities_equal_enumeration(name):
    model = CLICK_MODELS.build(name)
    probs = _random_probs(name, seed=len(name))
    params = from_probabilities(probs)
    log, rows = _all_patterns_log([(0, 1, 2), (3, 1, 5), (4, 2)])
    cond = np.asarray(jax.jit(model.conditional_log_probs)(params, log), np.float64)
    uncond = np.asarray(jax.jit(model.click_probs)(params, log), np.float64)
    reference = _to_reference(name, probs)
    for s, (pairs, clicks) in enumerate(rows):
        n = len(pairs)
        want_cond, want_uncond = ref.conditional_and_unconditional(name, reference, pairs, clicks)
        np.testing.assert_allclose(uncond[s, :n], want_uncond, rtol=2e-5, err_msg=f"{name} P(C_r = 1) of {rows[s]}")
        assert (uncond[s, n:] == 0).all() and (cond[s, n:] == 0).all()
        possible = ~np.isnan(want_cond)
        if name == "cm":  # a click above: the model's probability 0 of another click is floored at 1e-6
            above = np.cumsum(clicks) - np.asarray(clicks) > 0
            floored = np.where(np.asarray(clicks) == 1, np.log(1e-6), np.log1p(-1e-6))
            np.testing.assert_allclose(cond[s, :n][above], floored[above], rtol=1e-5)
            possible &= ~above
        np.testing.assert_allclose(np.exp(cond[s, :n][possible]), want_cond[possible], rtol=2e-5,
                                   err_msg=f"{name} P(C_r = c_r | C_<r) of {rows[s]}")


@pytest.mark.parametrize("name", NAMES)
def test_sample_frequencies_match_enumeration(name):
    model = CLICK_MODELS.build(name)
    probs = _random_probs(name, seed=7 + len(name), num_positions=K + 1)
    params = from_probabilities(probs)
    pairs, num = (4, 0, 3), 40_000
    keys = jax.random.split(jax.random.key(len(name)), num)
    clicks = jax.jit(jax.vmap(model.sample, in_axes=(0, None, None, None)))(
        keys, params, jnp.asarray(pairs + (1,)), jnp.asarray([True] * 3 + [False]))
    clicks = np.asarray(clicks)
    assert not clicks[:, 3].any()  # the padded position is never clicked
    table = ref.pattern_table(name, _to_reference(name, probs), pairs)
    codes = clicks[:, :3] @ np.array([4, 2, 1])
    for pattern, p in table.items():
        rate = np.mean(codes == pattern[0] * 4 + pattern[1] * 2 + pattern[2])
        bound = 5.0 * np.sqrt(p * (1.0 - p) / num)  # 5 standard errors; exact for p in {0, 1}
        assert abs(rate - p) <= bound, (name, pattern, rate, p)


def _em_log(seed=0, num_sessions=300):
    """Random lists of 2-3 of a query's 4 documents (2 queries, 8 pairs) with random clicks."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(num_sessions):
        q = rng.integers(2)
        n = rng.choice([2, 3], p=[0.2, 0.8])
        pairs = tuple(int(q * 4 + d) for d in rng.permutation(4)[:n])
        clicks = tuple(int(c) for c in rng.random(n) < 0.35)
        rows.append((pairs, clicks))
    pad = lambda xs: list(xs) + [0] * (K - len(xs))  # noqa: E731
    log = session_log(np.zeros(len(rows), int), [pad(p) for p, _ in rows], [pad(p) for p, _ in rows],
                      [pad(c) for _, c in rows], [[1] * len(p) + [0] * (K - len(p)) for p, _ in rows], num_pairs=8)
    return log, rows


@pytest.mark.parametrize("name", EM_MODELS)
def test_em_equals_reference(name):
    log, rows = _em_log()
    want = ref.em(name, rows, num_iterations=50)
    with jax.enable_x64(True):
        fitted = fit_em(log, CLICK_MODELS.build(name), num_iterations=50)
        assert jax.tree.leaves(fitted)[0].dtype == jnp.float64
        got = _to_reference(name, click_models.probabilities(fitted))
    worst = max(abs(got[key] - value) for key, value in want.items())
    assert worst < 1e-9, (name, worst)  # float64 agrees to ~1e-14; float32 gives ~5e-7
    untouched = set(got) - set(want)  # e.g. UBM's unused upper triangle: still the start value
    assert all(got[key] == pytest.approx(0.5) for key in untouched)


@pytest.mark.parametrize("name", ("dbn", "ccm"))
def test_reference_by_depth_equals_the_enumeration(name):
    """The linear-time reference iteration (used to time the reference at 10 positions) is the full one."""
    _, rows = _em_log(seed=6, num_sessions=60)
    params = ref.em(name, rows, num_iterations=2)
    assert ref.em_iteration_by_depth(name, rows, params) == pytest.approx(ref.em(name, rows, num_iterations=3),
                                                                          rel=1e-12)


@pytest.mark.parametrize("name", COUNTING_MODELS)
def test_counting_models_equal_counting(name):
    log, rows = _em_log(seed=1)
    want = ref.counting(name, rows)
    fitted = fit_em(log, CLICK_MODELS.build(name))
    got = _to_reference(name, click_models.probabilities(fitted))
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-5), (name, key)
    assert all(got[key] == pytest.approx(0.5) for key in set(got) - set(want))


@pytest.mark.parametrize("name", ("ubm", "dbn", "ccm", "dcm"))
def test_padding_changes_nothing(name):
    """Appending masked positions leaves probabilities and fitted parameters unchanged."""
    model = CLICK_MODELS.build(name)
    log, _ = _em_log(seed=2, num_sessions=60)
    wide = log._replace(**{f: np.pad(getattr(log, f), ((0, 0), (0, 2))) for f in ("pair", "doc", "clicks", "mask")})
    params = from_probabilities(_random_probs(name, seed=3, num_pairs=8, num_positions=K + 2))
    conditional, unconditional = jax.jit(model.conditional_log_probs), jax.jit(model.click_probs)
    np.testing.assert_allclose(conditional(params, wide)[:, :K], conditional(params, log), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(unconditional(params, wide)[:, :K], unconditional(params, log), rtol=1e-5, atol=1e-7)
    narrow_fit = jax.tree.leaves(fit_em(log, model, num_iterations=5))
    wide_fit = jax.tree.leaves(fit_em(wide, model, num_iterations=5))
    for a, b in zip(narrow_fit, wide_fit):
        if a.ndim == 0 or a.shape[0] == 8:  # pair tables and scalars
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        else:  # rank tables: the first K rows
            np.testing.assert_allclose(a, b[:K] if a.ndim == 1 else b[:K, :K], rtol=1e-5, atol=1e-6)


def test_fit_em_vmaps_over_settings():
    log, _ = _em_log(seed=4, num_sessions=80)
    model = CLICK_MODELS.build("dbn")
    inits = jnp.asarray([0.3, 0.6], jnp.float32)
    batched = jax.vmap(lambda init: fit_em(log, model, num_iterations=10, init=init, num_pairs=8))(inits)
    for i, init in enumerate([0.3, 0.6]):
        single = fit_em(log, model, num_iterations=10, init=init)
        for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(batched)):
            np.testing.assert_allclose(a, b[i], rtol=1e-5, atol=1e-6)
    two_logs = jax.tree.map(lambda x: jnp.stack([x, x]), log)
    with pytest.raises(ValueError, match="pass num_pairs= as an int"):
        jax.vmap(lambda one: fit_em(one, model))(two_logs)


@pytest.mark.parametrize("name", ("ubm", "ccm", "sdbn"))
def test_chunked_em_equals_whole_log(name):
    log, _ = _em_log(seed=5, num_sessions=70)
    model = CLICK_MODELS.build(name)
    whole = fit_em(log, model, num_iterations=4)
    chunked = fit_em(log, model, num_iterations=4, chunk_size=16)  # 5 chunks, the last one padded
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(chunked)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _queries(num_queries, num_docs):
    mask = jnp.ones((num_queries, num_docs), bool)
    return QueryBatch(jnp.zeros((num_queries, num_docs, 1)), jnp.zeros((num_queries, num_docs)), mask,
                      np.arange(num_queries))


def _true_params(name, num_pairs, num_positions, seed=0):
    """Known parameters in the range where a moderate log pins them down."""
    probs = _random_probs(name, seed, num_pairs, num_positions)
    if name == "pbm":
        probs = probs._replace(examination=jnp.asarray(np.linspace(0.95, 0.35, num_positions), jnp.float32))
    if name == "ubm":
        gamma = np.clip(0.95 - 0.12 * np.arange(num_positions)[:, None] + 0.08 * np.arange(num_positions)[None, :]
                        - 0.1 * (np.arange(num_positions)[None, :] > 0), 0.2, 0.95)
        probs = probs._replace(examination=jnp.asarray(gamma, jnp.float32))
    if name == "dbn":
        probs = probs._replace(continuation=jnp.asarray(0.8, jnp.float32))
    if name == "ccm":
        probs = probs._replace(tau1=jnp.asarray(0.8, jnp.float32), tau2=jnp.asarray(0.6, jnp.float32),
                               tau3=jnp.asarray(0.3, jnp.float32))
    return probs


def _recovery(name, num_sessions, tolerance, num_queries=3, num_docs=4, num_positions=4):
    model = CLICK_MODELS.build(name)
    truth = _true_params(name, num_queries * num_docs, num_positions)
    log = generate_sessions(jax.random.key(11), _queries(num_queries, num_docs), num_sessions, model,
                            params=from_probabilities(truth), temperature=1e3, num_positions=num_positions)
    fitted = click_models.probabilities(fit_em(log, model, num_iterations=100 if name in ("pbm", "ubm") else 50))
    if name in ("pbm", "ubm"):
        # α·ε is what the clicks identify: compare ε relative to its first entry and α times that entry.
        first = lambda p: p.examination.reshape(-1)[0]  # noqa: E731
        got = (fitted.examination / first(fitted), fitted.attraction * first(fitted))
        want = (truth.examination / first(truth), truth.attraction * first(truth))
        if name == "ubm":  # only the (r, d) cells a list can reach: d <= r + 1
            reach = np.tril(np.ones((num_positions, num_positions), bool))
            got, want = (got[0][reach], got[1]), (want[0][reach], want[1])
    else:
        got, want = fitted, truth
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_allclose(g, w, atol=tolerance, err_msg=name)


@pytest.mark.parametrize("name", ("pbm", "ubm", "dbn", "ccm"))
def test_recovery_from_generated_log(name):
    _recovery(name, num_sessions=5_000, tolerance=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("name", ("pbm", "ubm", "dbn", "ccm"))
def test_recovery_from_a_million_sessions(name):
    # The suite's XLA flags (conftest) trade run time for compile time; a million sessions runs in a child
    # process with XLA's defaults, about ten times faster.
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAX_PLATFORMS="cpu")
    code = f"from tests.test_click_models import _recovery; _recovery({name!r}, num_sessions=1_000_000, tolerance=0.02)"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
