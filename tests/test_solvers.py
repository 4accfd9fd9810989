"""Sparse RankSVM solvers against an independent float64 NumPy reference (tests/reference)."""

import numpy as np
import pytest

import chex
import jax
import jax.numpy as jnp

from jaxrank import solvers as S
from jaxrank.data import load_fold
from jaxrank.types import QueryBatch
from tests.conftest import SAMPLE_DATA
from tests.reference import sparse_ranksvm as ref

PENALTIES = {
    "log": (S.log(0.01), {"eps": 0.01}),
    "mcp": (S.mcp(3.0), {"gamma": 3.0}),
    "mcp_inside": (S.mcp(3.0, lambda_inside=True), {"gamma": 3.0}),
    "lp": (S.lp(0.5), {"p": 0.5, "eps": 1e-3}),
    "scad": (S.scad(3.7), {"a": 3.7}),
}


def _synthetic(seed=0, q=5, l=8, d=6) -> QueryBatch:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(q, l, d))
    labels = rng.integers(0, 3, size=(q, l)).astype(np.float32)
    mask = np.ones((q, l), bool)
    mask[0, 5:] = False
    mask[2, 6:] = False
    features[~mask] = 0.0
    labels[~mask] = 0.0
    return QueryBatch(jnp.asarray(features, jnp.float32), jnp.asarray(labels), jnp.asarray(mask), np.arange(q))


@pytest.fixture(scope="module")
def mini():
    train, _, _ = load_fold(SAMPLE_DATA / "MQ2008-mini", 1, layout="dense")
    return train


@pytest.fixture(scope="module", params=["mq2008_mini", pytest.param("synthetic", marks=pytest.mark.slow)])
def problem(request, mini):
    batch = mini if request.param == "mq2008_mini" else _synthetic()
    X = ref.pair_matrix(batch.features, batch.labels, batch.mask)
    return batch, X


@pytest.mark.parametrize("form", ["rows", "index"])
def test_pairs_count_and_loss_match_explicit_pairs(problem, form):
    batch, X = problem
    pairs = S.make_pairs(batch, form=form)
    assert int(pairs.num_pairs) == X.shape[0]
    w = np.random.default_rng(1).normal(size=X.shape[1]) * 0.1
    np.testing.assert_allclose(S.squared_hinge_loss(jnp.asarray(w, jnp.float32), pairs), ref.loss(X, w), rtol=1e-5)
    with jax.enable_x64(True):
        p64 = S.make_pairs(batch, form=form, dtype=jnp.float64)
        np.testing.assert_allclose(S.squared_hinge_loss(jnp.asarray(w), p64), ref.loss(X, w), rtol=1e-12)
        np.testing.assert_allclose(S.squared_hinge_grad(jnp.asarray(w), p64), ref.grad(X, w), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(S.pair_gram(p64), X.T @ X, rtol=1e-10, atol=1e-12)
        active = np.asarray(S.pair_margins(jnp.asarray(w), p64)) < 1.0
        np.testing.assert_allclose(S.pair_gram(p64, jnp.asarray(active)), X[active].T @ X[active], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("form", ["rows", "index"])
def test_gradient_matches_autodiff_and_finite_differences(form):
    with jax.enable_x64(True):
        pairs = S.make_pairs(_synthetic(3), form=form, dtype=jnp.float64)
        w = jnp.asarray(np.random.default_rng(2).normal(size=6) * 0.3)
        np.testing.assert_allclose(S.squared_hinge_grad(w, pairs), jax.grad(S.squared_hinge_loss)(w, pairs), rtol=1e-10)
        jax.test_util.check_grads(lambda v: S.squared_hinge_loss(v, pairs), (w,), order=1, modes=["rev"])


def test_lipschitz_matches_eigvalsh_and_bounds_gradient_ratio(problem):
    batch, X = problem
    with jax.enable_x64(True):
        pairs = S.make_pairs(batch, dtype=jnp.float64)
        lip = float(S.lipschitz_constant(jax.random.key(0), pairs, num_iters=200))
        np.testing.assert_allclose(lip, ref.lipschitz(X), rtol=1e-4)
        rng = np.random.default_rng(5)
        for _ in range(20):
            a, b = rng.normal(size=(2, X.shape[1])) * rng.choice([0.01, 1.0, 10.0])
            ratio = np.linalg.norm(ref.grad(X, a) - ref.grad(X, b)) / np.linalg.norm(a - b)
            assert ratio <= lip * (1 + 1e-9)


def test_prox_closed_forms():
    u = jnp.array([-3.0, -0.5, 0.0, 0.2, 2.0])
    np.testing.assert_allclose(S.prox_l1(u, 0.5, 2.0), [-2.0, 0.0, 0.0, 0.0, 1.0])
    beta = jnp.array([1.0, 0.0, 5.0, 0.1, 4.0])
    np.testing.assert_allclose(S.prox_weighted_l1(u, 1.0, 0.5, beta), [-2.5, -0.5, 0.0, 0.15, 0.0], atol=1e-7)


def test_penalty_weights_are_derivatives_of_values():
    lam = 0.7
    for name, (pen, hp) in PENALTIES.items():
        u = jnp.array([0.0, 0.05, 0.5, 1.0, 2.5, 4.0])
        weights = pen.weight(u, lam)
        assert bool(jnp.all(weights >= 0)), name
        derivative = jax.vmap(jax.grad(lambda x: pen.value(x[None], lam)))(u + 1e-4)  # right derivative
        np.testing.assert_allclose(lam * pen.weight(u + 1e-4, lam), derivative, rtol=1e-3, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(pen.value(u, lam), ref.penalty_value(name, np.asarray(u), lam, **hp), rtol=1e-6)
    assert float(S.log(0.01).weight(jnp.zeros(()), 1.0)) == pytest.approx(100.0)  # not skglm's signed 0


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: S.log(0.0), r"eps must be > 0; got 0\.0; ε smooths log"),
        (lambda: S.log(-1.0), r"eps must be > 0; got -1\.0"),
        (lambda: S.lp(1.0), r"p must be in \(0, 1\); got 1\.0; .*p=1 is l1\(\)"),
        (lambda: S.lp(0.0), r"p must be in \(0, 1\); got 0\.0"),
        (lambda: S.lp(0.5, eps=0.0), r"eps must be > 0; got 0\.0; ε_p smooths the ℓp weight"),
        (lambda: S.mcp(1.0), r"gamma must be > 1; got 1\.0"),
        (lambda: S.scad(2.0), r"a must be > 2; got 2\.0; Fan & Li's default is a=3\.7"),
    ],
)
def test_bad_hyperparameters_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_negative_lambda_raises(mini):
    pairs = S.make_pairs(mini)
    with pytest.raises(ValueError, match="lam"):
        S.fista(pairs, -0.1)
    with pytest.raises(ValueError, match="lam"):
        S.reweighted_l1(pairs, -1.0, S.log())


def _lam(pairs, frac):
    return float(S.lambda_max(pairs)) * frac


@pytest.mark.parametrize("frac", [0.3, 0.03])
def test_l1_objective_matches_numpy(problem, frac):
    batch, X = problem
    with jax.enable_x64(True):
        pairs = S.make_pairs(batch, dtype=jnp.float64)
        lam = _lam(pairs, frac)
        w, info = jax.jit(lambda p, l: S.fista(p, l, tol=1e-10, max_iter=50_000))(pairs, lam)
        w_ref, _ = ref.fista(X, lam * np.ones(X.shape[1]))
        obj_ref = ref.loss(X, w_ref) + lam * np.abs(w_ref).sum()
        assert bool(info.converged)
        np.testing.assert_allclose(float(info.objective), obj_ref, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(w) != 0, w_ref != 0)


def test_l1_float32_objective_close(problem):
    batch, X = problem
    pairs = S.make_pairs(batch)
    lam = _lam(pairs, 0.1)
    _, info = jax.jit(lambda p, l: S.fista(p, l, tol=1e-5))(pairs, lam)
    w_ref, _ = ref.fista(X, lam * np.ones(X.shape[1]))
    np.testing.assert_allclose(float(info.objective), ref.loss(X, w_ref) + lam * np.abs(w_ref).sum(), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(PENALTIES))
def test_mm_fixed_point_matches_numpy_and_never_increases(problem, name):
    """Parity to 1e-6 relative in float64 (one compile per penalty type, hence the synthetic copy is slow)."""
    batch, X = problem
    pen, hp = PENALTIES[name]
    with jax.enable_x64(True):
        pairs = S.make_pairs(batch, dtype=jnp.float64)
        lam = _lam(pairs, 0.1)
        w, info = jax.jit(lambda p, l, g: S.reweighted_l1(p, l, g, tol=1e-10, max_iter=50_000))(pairs, lam, pen)
        objs = np.asarray(info.objectives)
        w_ref, objs_ref = ref.reweighted(X, lam, name, **hp)
        assert np.all(np.diff(objs) <= 1e-12 * np.abs(objs[:-1])), objs
        assert np.all(np.diff(objs_ref) <= 1e-12 * np.abs(objs_ref[:-1])), objs_ref
        np.testing.assert_allclose(objs[-1], objs_ref[-1], rtol=1e-6)
        np.testing.assert_allclose(float(S.objective(w, pairs, lam, pen)), objs_ref[-1], rtol=1e-6)
        assert int(info.outer_iterations) == len(objs_ref) - 1


def test_vmap_over_lambda_one_compile_equals_separate_solves(mini):
    pairs = S.make_pairs(mini)
    lip = S.lipschitz_constant(jax.random.key(0), pairs)
    lams = jnp.asarray(float(S.lambda_max(pairs)) * np.array([0.5, 0.1, 0.02]), jnp.float32)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def solve(lam):
        return S.reweighted_l1(pairs, lam, S.log(), lipschitz=lip, tol=1e-5, max_iter=3000)

    batched = jax.jit(jax.vmap(solve))
    w_all, info_all = batched(lams)
    w_all2, _ = batched(lams * 1.01)  # second call: no retrace
    chex.clear_trace_counter()
    single = jax.jit(lambda l: S.reweighted_l1(pairs, l, S.log(), lipschitz=lip, tol=1e-5, max_iter=3000))
    for i, lam in enumerate(lams):
        w_i, info_i = single(lam)
        # float32 batched and unbatched matmuls round differently: same solution, not same bits
        np.testing.assert_allclose(w_all[i], w_i, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(info_all.objectives[i, -1], info_i.objectives[-1], rtol=1e-5)


def test_converged_lanes_stay_frozen_under_vmap(mini):
    pairs = S.make_pairs(mini)
    lmax = float(S.lambda_max(pairs))
    lams = jnp.asarray([2.0 * lmax, 0.05 * lmax], jnp.float32)
    w, info = jax.jit(jax.vmap(lambda l: S.fista(pairs, l, tol=1e-5, max_iter=2000)))(lams)
    assert int(info.iterations[0]) == 0 and not np.any(np.asarray(w[0]))
    assert int(info.iterations[1]) > 0
    w1, info1 = jax.jit(lambda l: S.fista(pairs, l, tol=1e-5, max_iter=2000))(lams[1])
    assert abs(int(info1.iterations) - int(info.iterations[1])) <= 0.05 * int(info1.iterations)
    np.testing.assert_allclose(w[1], w1, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(info.objective[1], info1.objective, rtol=1e-5)


def test_ranksvm_grid_runs_the_folds_as_lanes_with_the_bytes_of_a_nested_vmap():
    """Folds × λ on the lane runner: the same bytes as ``jit(vmap(vmap(ranksvm)))``, and each lane
    the optimum of its own fold (gradient test met)."""
    pairs = S.stack_pairs([_synthetic(seed) for seed in (1, 2)])
    lams = np.asarray([1e-3, 1e-1], np.float32)
    w, info = S.ranksvm_grid(pairs, lams)
    nested = jax.jit(jax.vmap(jax.vmap(S.ranksvm, in_axes=(None, 0)), in_axes=(0, None)))(pairs, jnp.asarray(lams))
    np.testing.assert_array_equal(w, np.asarray(nested[0]))
    np.testing.assert_array_equal(info.iterations, np.asarray(nested[1].iterations))
    assert w.shape == (2, 2, 6) and np.asarray(info.converged).all()
