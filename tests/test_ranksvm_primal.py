"""Primal RankSVM (Newton) against scikit-learn's LinearSVC (liblinear's primal trust-region
Newton) on the explicit, doubled pair-difference set: ``½‖w‖² + C Σ ξ²`` with ``C = 1/(2 λ N_p)``
is ``F(w) = L̄(w) + (λ/2)‖w‖²`` scaled by ``1/(λ)``."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.data import load_fold
from jaxrank.solvers.pairwise import make_pairs
from jaxrank.solvers.ranksvm import check_ranksvm_lambda, ranksvm, ranksvm_objective
from tests.conftest import SAMPLE_DATA


def _pair_differences(queries):
    """``[N_p, D]`` explicit rows, as liblinear needs them, by a loop over queries and documents."""
    x, labels = np.asarray(queries.features, np.float64), np.asarray(queries.labels)
    rows = []
    for start, end in zip(queries.offsets[:-1], queries.offsets[1:]):
        for i in range(start, end):
            for j in range(start, end):
                if labels[i] > labels[j]:
                    rows.append(x[i] - x[j])
    return np.asarray(rows)


def _liblinear(z, lam):
    from sklearn.svm import LinearSVC

    n = len(z)
    svc = LinearSVC(penalty="l2", loss="squared_hinge", dual=False, fit_intercept=False, C=1.0 / (2.0 * lam * n),
                    tol=1e-12, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc.fit(np.vstack([z, -z]), np.r_[np.ones(n), -np.ones(n)])
    return svc.coef_[0]


def _numpy_objective(w, z, lam):
    return np.mean(np.maximum(0.0, 1.0 - z @ w) ** 2) + 0.5 * lam * w @ w


@functools.lru_cache(maxsize=None)
def _solver():
    return jax.jit(ranksvm)


def _check(batch, lams, w_atol, form="auto"):
    z = _pair_differences(batch)
    with jax.enable_x64(True):
        pairs = make_pairs(batch, form=form, dtype=jnp.float64)
        for lam in lams:
            w, info = _solver()(pairs, lam)
            w = np.asarray(w)
            expected = _liblinear(z, lam)
            ours, theirs = _numpy_objective(w, z, lam), _numpy_objective(expected, z, lam)
            assert ours <= theirs * (1 + 1e-10), (lam, ours, theirs)
            np.testing.assert_allclose(ours, theirs, rtol=1e-9)
            np.testing.assert_allclose(float(ranksvm_objective(jnp.asarray(w), pairs, lam)), ours, rtol=1e-12)
            np.testing.assert_allclose(w, expected, rtol=0, atol=w_atol)
            assert int(info.iterations) < 50 and float(info.grad_norm) < 1e-6


@pytest.mark.parametrize("form", ["rows", "index"])
def test_matches_liblinear_on_sample(form):
    train, _, _ = load_fold(str(SAMPLE_DATA / "MQ2008-mini"), 1)
    _check(train, [1e-4, 1e-2, 1.0], w_atol=1e-4, form=form)


def test_matches_liblinear_on_mq2008(shared_data):
    train, _, _ = load_fold(shared_data / "MQ2008", 1)
    _check(train, [1e-3, 1e-2], w_atol=1e-4, form="index")


def test_float32_close_to_float64():
    train, _, _ = load_fold(str(SAMPLE_DATA / "MQ2008-mini"), 1)
    w32, _ = _solver()(make_pairs(train), 1e-2)
    z = _pair_differences(train)
    np.testing.assert_allclose(np.asarray(w32), _liblinear(z, 1e-2), rtol=0, atol=1e-4)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), [1e-3, 0.0]])
def test_bad_lambda(bad):
    with pytest.raises(ValueError, match="λ must be > 0"):
        check_ranksvm_lambda(bad)
