"""Primal RankSVM (Newton) against scikit-learn's LinearSVC (liblinear's primal trust-region
Newton) on the explicit, doubled pair-difference set: ``½‖w‖² + C Σ ξ²`` with ``C = 1/(2 λ N_p)``
is ``F(w) = L̄(w) + (λ/2)‖w‖²`` scaled by ``1/(λ)``. Also: ``RankSVMInfo.converged`` and
``check_converged``'s warning, float32 against float64 on raw MSLR-WEB features."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.data import load_fold, load_queries
from jaxrank.solvers.pairwise import make_pairs
from jaxrank.solvers.ranksvm import RankSVMInfo, check_converged, ranksvm, ranksvm_objective
from jaxrank.utils.checks import check_number
from tests.conftest import SAMPLE_DATA

MSLR_SUBSET = "MSLR-WEB_Fold1_subset/msn1.fold1.train.5k.txt.gz"


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
            assert int(info.iterations) < 50 and float(info.grad_norm) < 1e-6 and bool(info.converged)


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
        check_number("RankSVM λ", bad, low=0)


def _mslr_subset(shared_data, **kwargs):
    path = shared_data / MSLR_SUBSET
    if not path.exists():
        pytest.skip(f"the raw MSLR-WEB subset is not at {path}")
    return load_queries(path, **kwargs)


@pytest.mark.slow
def test_float32_on_raw_mslr_features_warns_and_float64_converges(shared_data):
    """Raw MSLR features (‖∇F(0)‖ ≈ 1.4e4): float32 Newton stalls short of the optimum, and
    ``check_converged`` says so; float64 meets the gradient test and stays silent."""
    queries = _mslr_subset(shared_data)
    lam = 1e-4
    w32, info32 = _solver()(make_pairs(queries, form="index"), lam)  # the form large sets get
    assert not bool(info32.converged)
    with pytest.warns(UserWarning) as record:
        assert not check_converged(info32, jnp.float32)
    assert len(record) == 1
    message = str(record[0].message)
    for part in ("did not converge", f"gradient norm {float(info32.grad_norm):.3g}",
                 f"after {int(info32.iterations)} iterations",
                 "jax.enable_x64(True)", "make_pairs(..., dtype=jnp.float64)", "normalize=True"):
        assert part in message, (part, message)
    with jax.enable_x64(True):
        pairs64 = make_pairs(queries, form="index", dtype=jnp.float64)
        w64, info64 = _solver()(pairs64, lam)
        assert bool(info64.converged) and int(info64.iterations) < 50
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert check_converged(info64, jnp.float64)
        # the float32 answer, judged by the float64 objective, is above the float64 optimum
        f32_at_64 = float(ranksvm_objective(jnp.asarray(w32, jnp.float64), pairs64, lam))
    assert f32_at_64 > float(info64.objective) * (1 + 1e-4)


def test_check_converged_warns_once_per_lane_that_did_not_converge():
    converged = np.array([[True, False, True], [False, True, True]])
    info = RankSVMInfo(objective=np.ones((2, 3)), grad_norm=np.array([[1e-9, 128.0, 1e-9], [3.5, 1e-9, 1e-9]]),
                       iterations=np.array([[7, 50, 6], [50, 5, 5]]), converged=converged)
    lanes = [f"fold {f}, λ={lam:g}" for f in (1, 2) for lam in (1e-4, 1e-3, 1e-2)]
    with pytest.warns(UserWarning) as record:
        got = check_converged(info, jnp.float32, lanes=lanes)
    np.testing.assert_array_equal(got, converged)
    messages = [str(r.message) for r in record]
    assert len(messages) == 2
    assert "(fold 1, λ=0.001)" in messages[0] and "gradient norm 128 after 50 iterations" in messages[0]
    assert "(fold 2, λ=0.0001)" in messages[1] and "gradient norm 3.5 after 50 iterations" in messages[1]
    assert all("jax.enable_x64(True)" in m for m in messages)
    with pytest.warns(UserWarning) as record:  # lanes named by index; in float64, no float64 advice
        check_converged(info, np.float64)
    messages = [str(r.message) for r in record]
    assert len(messages) == 2 and "(lane (0, 1))" in messages[0] and "(lane (1, 0))" in messages[1]
    assert all("raise max_iters" in m and "enable_x64" not in m for m in messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_converged(info._replace(converged=np.ones((2, 3), bool)), jnp.float32)
