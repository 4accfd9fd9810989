"""Regularisation paths (jaxrank/solvers/path.py) against the float64 NumPy reference in tests/reference."""

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

PENALTIES = [("l1", S.l1(), {}), ("log", S.log(0.01), {"eps": 0.01}), ("mcp", S.mcp(3.0), {"gamma": 3.0}),
             ("lp", S.lp(0.5), {"p": 0.5, "eps": 1e-3})]


@pytest.fixture(scope="module")
def folds():
    """Two 'folds' with the same D: the sample's train and test splits."""
    train, _, test = load_fold(SAMPLE_DATA / "MQ2008-mini", 1, layout="dense")
    return train, test


def test_both_pair_forms_equal_the_explicit_matrix_with_padding(folds):
    batch = folds[0]
    X = ref.pair_matrix(batch.features, batch.labels, batch.mask)
    with jax.enable_x64(True):
        w = jnp.asarray(np.random.default_rng(0).normal(size=X.shape[1]) * 0.2)
        for form in ("rows", "index"):
            padded = S.make_pairs(batch, form=form, num_pairs=X.shape[0] + 7, dtype=jnp.float64)
            assert int(padded.num_pairs) == X.shape[0] and int(padded.valid.sum()) == X.shape[0], form
            np.testing.assert_allclose(S.squared_hinge_loss(w, padded), ref.loss(X, w), rtol=1e-12)
            np.testing.assert_allclose(S.squared_hinge_grad(w, padded), ref.grad(X, w), rtol=1e-10, atol=1e-14)
            np.testing.assert_allclose(S.pair_gram(padded), X.T @ X, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(S.lambda_max(padded), np.abs(ref.grad(X, np.zeros(X.shape[1]))).max(), rtol=1e-12)
    with pytest.raises(ValueError, match="num_pairs=3"):
        S.make_pairs(batch, num_pairs=3)
    with pytest.raises(ValueError, match="form must be"):
        S.make_pairs(batch, form="dense")


@pytest.mark.slow
def test_index_form_paths_equal_row_form_paths(folds):
    """The path solver reads pair indices (the large-data form) to the same solutions as rows."""
    with jax.enable_x64(True):
        pens = S.stack_penalties([S.l1(), S.log(0.01)], jnp.float64)
        out = {}
        for form in ("rows", "index"):
            pairs = S.stack_pairs(folds, form=form, dtype=jnp.float64)
            lip = jax.vmap(S.lipschitz_constant, in_axes=(None, 0))(jax.random.key(S.POWER_START_SEED), pairs)
            lams = S.lambda_grid(jax.vmap(S.lambda_max)(pairs), num=3, decades=1.5)
            out[form] = jax.jit(lambda p, l, h, c: S.solve_paths(p, l, h, c, tol=1e-9, max_iter=20_000))(
                pairs, lams, pens, lip)
        np.testing.assert_allclose(out["index"][0], out["rows"][0], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(out["index"][2].objective, out["rows"][2].objective, rtol=1e-10)


def test_lambda_grid_follows_spec():
    grid = np.asarray(S.lambda_grid(jnp.asarray([2.0, 0.5])))
    assert grid.shape == (2, 17)
    np.testing.assert_allclose(grid[:, 0], [2.0, 0.5])
    np.testing.assert_allclose(grid[0], 2.0 * 10.0 ** -np.arange(0, 4.01, 0.25), rtol=1e-6)


def test_path_penalty_equals_each_penalty():
    u = jnp.array([0.0, 0.05, 0.5, 2.0, 4.0])
    for pen in (S.l1(), S.log(0.1), S.mcp(2.0), S.mcp(2.0, lambda_inside=True), S.lp(0.5), S.scad(3.7)):
        pp = S.path_penalty(pen)
        np.testing.assert_allclose(pp.value(u, 0.7), pen.value(u, 0.7), rtol=1e-6)
        np.testing.assert_allclose(pp.weight(u, 0.7), pen.weight(u, 0.7), rtol=1e-6)
    with pytest.raises(TypeError, match="unknown penalty"):
        S.path_penalty("log")


def test_paths_over_folds_and_penalties_match_numpy(folds):
    """vmap(folds) x vmap(penalties) x scan(λ): each final objective equals the NumPy FISTA / MM
    solved one problem at a time from zero, to 1e-6 relative (float64), in one compile."""
    with jax.enable_x64(True):
        pairs = S.stack_pairs(folds, dtype=jnp.float64)
        lip = jax.vmap(S.lipschitz_constant, in_axes=(None, 0))(jax.random.key(S.POWER_START_SEED), pairs)
        lams = S.lambda_grid(jax.vmap(S.lambda_max)(pairs), num=3, decades=1.5)  # [2, 3]
        pens = S.stack_penalties([p for _, p, _ in PENALTIES], jnp.float64)

        @jax.jit
        @chex.assert_max_traces(n=1)
        def solve(p, l, h, c):
            return S.solve_paths(p, l, h, c, tol=1e-10, max_iter=50_000)

        w, w_l1, info = solve(pairs, lams, pens, lip)
        solve(pairs, lams * 0.9, pens, lip)  # new λ values: no retrace
        chex.clear_trace_counter()
        w, info, lams = np.asarray(w), jax.tree.map(np.asarray, info), np.asarray(lams)
    assert w.shape == (2, len(PENALTIES), 3, folds[0].features.shape[-1])
    assert bool(np.all(info.converged))
    for f, batch in enumerate(folds):
        X = ref.pair_matrix(batch.features, batch.labels, batch.mask)
        for a, lam in enumerate(np.asarray(lams[f])):
            w_ref, _ = ref.fista(X, lam * np.ones(X.shape[1]))
            l1_ref = ref.loss(X, w_ref) + lam * np.abs(w_ref).sum()
            np.testing.assert_allclose(info.l1_objective[f, :, a], l1_ref, rtol=1e-6)
            for h, (name, _, hp) in enumerate(PENALTIES):
                if name == "l1":
                    np.testing.assert_allclose(info.objective[f, h, a], l1_ref, rtol=1e-6)
                    continue
                _, objs_ref = ref.reweighted(X, lam, name, **hp)
                np.testing.assert_allclose(info.objective[f, h, a], objs_ref[-1], rtol=1e-6, err_msg=f"{name} {f} {a}")
                assert info.objective[f, h, a] <= objs_ref[0] * (1 + 1e-12)  # MM never ends above its ℓ1 start


def test_sparsity_ratio_excludes_constant_features():
    features = np.zeros((2, 3, 4), np.float32)
    features[..., 0] = [[0.1, 0.5, 0.9], [0.2, 0.3, 0.0]]
    features[..., 1] = 0.7  # constant: excluded
    features[..., 2] = [[1.0, 0.0, 0.5], [0.0, 0.0, 0.0]]  # feature 3 is identically zero: excluded
    mask = np.ones((2, 3), bool)
    batch = QueryBatch(jnp.asarray(features), jnp.zeros((2, 3)), jnp.asarray(mask), np.arange(2))
    informative = S.informative_features(batch)
    np.testing.assert_array_equal(informative, [True, False, True, False])
    w = jnp.array([[0.3, 0.0, 0.0, 0.0], [0.3, 0.0, -1.0, 0.0], [0.0, 5.0, 0.0, 2.0]])
    np.testing.assert_allclose(S.sparsity_ratio(w, informative), [0.5, 1.0, 0.0])


def test_negative_lambda_on_a_path_raises(folds):
    pairs = S.make_pairs(folds[0])
    with pytest.raises(ValueError, match=r"lam must be >= 0; got .*-0\.1.*lambda_grid"):
        S.solve_path(pairs, jnp.array([0.1, -0.1]), S.path_penalty(S.l1()))


@pytest.mark.slow
def test_chunked_paths_equal_one_program_and_report_progress(folds, capsys):
    """Folds as lanes of the lane runner, all at once or one at a time, by chunks of any size: the
    one-program result (bit for bit between chunk sizes), progress between calls and a line per batch of folds."""
    with jax.enable_x64(True):
        pairs = S.stack_pairs(folds, dtype=jnp.float64)
        lip = jax.vmap(S.lipschitz_constant, in_axes=(None, 0))(jax.random.key(S.POWER_START_SEED), pairs)
        lams = S.lambda_grid(jax.vmap(S.lambda_max)(pairs), num=3, decades=1.5)
        pens = S.stack_penalties([S.l1(), S.log(0.01)], jnp.float64)
        kw = dict(tol=1e-8, max_iter=3000, num_outer=4)
        w, w_l1, info = jax.jit(lambda p, l, h, c: S.solve_paths(p, l, h, c, **kw))(pairs, lams, pens, lip)
        steps = int(np.max(np.asarray(info.l1_iterations).sum(-1) + np.asarray(info.mm_iterations).sum(-1)))
        assert steps > 1000  # several chunks of 500
        for fold_batch, chunk_steps in ((None, 500), (1, 500), (1, 777)):
            lines = []
            w_c, w_l1_c, info_c = S.solve_paths_in_chunks(pairs, lams, pens, lip, chunk_steps=chunk_steps,
                                                          fold_batch=fold_batch, log=lines.append, **kw)
            np.testing.assert_allclose(w_c, w, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(w_l1_c, w_l1, rtol=1e-12, atol=1e-14)
            for got, want in zip(info_c, info):  # counts exactly; KKT gaps near 0 to the last bits
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
            if chunk_steps == 777:  # where the chunks end changes no bit
                for got, want in zip(jax.tree.leaves((w_c, w_l1_c, info_c)), jax.tree.leaves(by_500)):
                    np.testing.assert_array_equal(got, want)
            by_500 = (w_c, w_l1_c, info_c)
            assert "12/12 (fold, penalty, λ) solved, 4/4 lanes and 2/2 folds finished" in lines[-1]
            assert len(lines) == (1 if fold_batch is None else 2)
            if fold_batch == 1:  # the first fold's lanes finish before the second fold starts
                assert "6/12 (fold, penalty, λ) solved, 2/4 lanes and 1/2 folds" in lines[0]
            printed = capsys.readouterr().out
            assert "[sparse path] compiled and reached" in printed and "lanes finished" in printed
        with pytest.raises(ValueError, match="fold_batch must be None"):
            S.solve_paths_in_chunks(pairs, lams, pens, lip, fold_batch=0)
        with pytest.raises(ValueError, match="chunk_steps must be >= 1; got 0"):
            S.solve_paths_in_chunks(pairs, lams, pens, lip, chunk_steps=0)
