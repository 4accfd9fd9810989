"""Sparse RankSVM against skglm 0.5 (an independent coordinate-descent solver), Laporte et al. 2014.

skglm ships no squared-hinge datafit, so one is written in ``tests/reference/skglm_datafit.py``
(a numba jitclass, as skglm's own datafits). Both sides minimise ``(1/N_p) Σ_p max(0, 1 - wᵀx_p)² + λ R(w)`` on the explicit pair
matrix of the MQ2008 sample; the objectives must agree to 1e-5 relative.
"""

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from jaxrank import solvers as S
from jaxrank.data import load_fold
from tests.conftest import SAMPLE_DATA
from tests.reference import sparse_ranksvm as ref

skglm = pytest.importorskip("skglm", reason="skglm is a reference from the 'bench' extra: pip install 'jaxrank[bench]'")
numba = pytest.importorskip("numba", reason="skglm's datafits are numba jitclasses")

from skglm import GeneralizedLinearEstimator  # noqa: E402
from skglm.experimental import IterativeReweightedL1  # noqa: E402
from skglm.penalties import L0_5, L1  # noqa: E402
from skglm.solvers import AndersonCD  # noqa: E402

from tests.reference.skglm_datafit import SquaredHingePairs  # noqa: E402


@pytest.fixture(scope="module")
def mini_problem():
    train, _, _ = load_fold(SAMPLE_DATA / "MQ2008-mini", 1, layout="dense")
    X = ref.pair_matrix(train.features, train.labels, train.mask)
    keep = np.any(X != 0, axis=0)  # all-zero columns give CD a zero Lipschitz constant
    return train, X, keep


def _solver():
    return AndersonCD(fit_intercept=False, tol=1e-13, max_iter=1000, max_epochs=100_000)


@pytest.mark.parametrize("solver", ["fista", "newton"])
@pytest.mark.parametrize("frac", [0.3, 0.05])
def test_l1_objective_matches_skglm(mini_problem, frac, solver):
    batch, X, keep = mini_problem
    with jax.enable_x64(True):
        pairs = S.make_pairs(batch, dtype=jnp.float64)
        lam = float(S.lambda_max(pairs)) * frac
        if solver == "fista":
            w, info = jax.jit(lambda p, l: S.fista(p, l, tol=1e-11, max_iter=100_000))(pairs, lam)
        else:
            w, info = jax.jit(lambda p, l: S.prox_newton(p, l, tol=1e-11))(pairs, lam)
    est = GeneralizedLinearEstimator(datafit=SquaredHingePairs(), penalty=L1(lam), solver=_solver())
    est.fit(X[:, keep], np.ones(X.shape[0]))
    coef = np.zeros(X.shape[1])
    coef[keep] = est.coef_
    obj_sk = ref.loss(X, coef) + lam * np.abs(coef).sum()
    assert bool(info.converged)
    np.testing.assert_allclose(float(info.objective), obj_sk, rtol=1e-5)
    # the sample repeats some feature columns: coordinate descent and FISTA spread a weight over the
    # copies, Newton's active set keeps one; the supports agree once copies are merged
    _, group = np.unique(np.round(X, 12), axis=1, return_inverse=True)
    merged = lambda v: np.bincount(group.ravel(), weights=np.abs(v)) != 0  # noqa: E731
    np.testing.assert_array_equal(merged(np.asarray(w)), merged(coef))
    if solver == "fista":
        np.testing.assert_array_equal(np.asarray(w) != 0, coef != 0)


@pytest.mark.parametrize("frac", [0.3, 0.05])
def test_l05_reweighted_objective_matches_skglm(mini_problem, frac):
    """skglm's ``IterativeReweightedL1`` with ``L0_5``: n solves, the first plain ℓ1, weights
    ``1/(2√|w| + 1e-12)``. jaxrank: ``lp(0.5, eps=1e-24)`` (weights ``0.5/√(|w| + 1e-24)``) with
    ``n - 1`` MM rounds and no early stop; objective ``L̄ + λ Σ √|w_j|`` on both sides."""
    batch, X, keep = mini_problem
    n_reweights = 15
    with jax.enable_x64(True):
        pairs = S.make_pairs(batch, dtype=jnp.float64)
        lam = float(S.lambda_max(pairs)) * frac
        pen = S.lp(0.5, eps=1e-24)
        w, info = jax.jit(lambda p, l: S.reweighted_l1(p, l, pen, num_outer=n_reweights - 1, outer_tol=0.0,
                                                       tol=1e-11, max_iter=100_000))(pairs, lam)
        w = np.asarray(w)
    est = IterativeReweightedL1(datafit=SquaredHingePairs(), penalty=L0_5(lam), solver=_solver(),
                                n_reweights=n_reweights)
    est.fit(X[:, keep], np.ones(X.shape[0]))
    coef = np.zeros(X.shape[1])
    coef[keep] = est.coef_
    obj = ref.loss(X, w) + lam * np.sum(np.sqrt(np.abs(w)))
    obj_sk = ref.loss(X, coef) + lam * np.sum(np.sqrt(np.abs(coef)))
    np.testing.assert_allclose(obj, obj_sk, rtol=1e-5)
    np.testing.assert_allclose(est.loss_history_[-1], obj_sk, rtol=1e-12)
    np.testing.assert_array_equal(w != 0, coef != 0)
    hist = np.asarray(est.loss_history_)
    assert np.all(np.diff(hist) <= 1e-12 * hist[:-1])
