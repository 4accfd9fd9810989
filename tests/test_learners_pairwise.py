"""SPD / SPD-MV / LCRA (Tsivtsivadze et al. 2012): the pair samplers against the rejection sampler's exact law (χ²), the ragged
layout against its padded view, partner counts against brute force, one step and short runs
against NumPy transcriptions (``tests/reference/lcra.py``), the semi-supervised protocol's splits,
bad input, compilation hygiene, the experiment end to end, and (slow, needs pysofia) test-MAP
parity with sofia-ml on MQ2008 Fold1."""

import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import ClosedJaxpr, Jaxpr
from scipy import stats

from experiments import lcra_table
from experiments.common import registry
from jaxrank.data import as_ragged, document_query, load_fold, pad_queries, synthetic_queries
from jaxrank.learners import LEARNERS
from jaxrank.learners.pairwise import (
    PairBatch,
    check_pairs,
    check_sizes,
    num_ordered_pairs,
    pair_source,
    partner_counts,
    random_views,
    sample_pair_indices,
    sample_pairs,
    train,
    unlabeled_counts,
)
from jaxrank.learners.pairwise import pair_sampling as flat_pairs
from jaxrank.learners.pairwise import semi_supervised as protocol
from jaxrank.metrics import average_precision
from jaxrank.pairs import pairs_per_query
from jaxrank.types import QueryBatch, RaggedQueries
from benchmarks.spd import import_pysofia, write_sofia_file
from tests.conftest import SAMPLE_DATA
from tests.reference import lcra as ref

D = 5
NUM_DRAWS = 200_000
SPD = LEARNERS.build("spd")


def _lcra(**options):
    return LEARNERS.build("lcra", **options)
@pytest.fixture(scope="module")
def mini():
    """4 real MQ2008 queries (32 docs, 46 features): 56 valid ordered pairs (padded QueryBatch)."""
    train_batch, _, _ = load_fold(str(SAMPLE_DATA / "MQ2008-mini"), 1, layout="dense")
    return train_batch


def _ragged(lengths, num_features=3, num_grades=3, seed=0) -> RaggedQueries:
    """Random queries of the given lengths with graded labels (ties within queries)."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    n = int(lengths.sum())
    return RaggedQueries(features=rng.normal(size=(n, num_features)).astype(np.float32),
                         labels=rng.integers(0, num_grades, n).astype(np.float32),
                         offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                         qid=np.arange(lengths.size, dtype=np.int64) + 100)


# unequal lengths, the longest (W = 12) in the middle and short queries at the end, whose window
# would run past the last document (N = 36)
LENGTHS = (3, 1, 12, 5, 2, 9, 4)


def _dense_flat_index(queries: RaggedQueries, list_size: int) -> np.ndarray:
    """``[N]``: the flat index ``q·L + position`` of each document in the padded view."""
    owner = document_query(queries.offsets)
    return owner * list_size + np.arange(queries.num_documents) - queries.offsets[owner]


def _to_dense(flat_mask, queries: RaggedQueries, list_size: int) -> np.ndarray:
    out = np.zeros(queries.num_queries * list_size, bool)
    out[_dense_flat_index(queries, list_size)] = flat_mask
    return out.reshape(queries.num_queries, list_size)


def _flat(batch, keep):
    """Flat (qid, labels, usable, padded flat index) of the real docs, in padded row-major order."""
    q, l = np.nonzero(np.asarray(batch.mask))
    return q, np.asarray(batch.labels)[q, l], np.asarray(keep)[q, l], q * batch.mask.shape[1] + l


def _fast_counts(draws, flat_index, law):
    """χ² goodness of fit of the draws (flat ``a, b`` of the source) against ``law`` over doc numbers
    (document ``i`` of the law is source document ``flat_index[i]``)."""
    a, b, valid = (np.asarray(x) for x in draws)
    pos = np.full(int(flat_index.max()) + 1, -1)
    pos[flat_index] = np.arange(len(flat_index))
    da, db = pos[a[valid]], pos[b[valid]]
    cells = sorted(law)
    index = {pair: i for i, pair in enumerate(cells)}
    keys = [index.get((int(x), int(y)), -1) for x, y in zip(da, db)]
    assert min(keys) >= 0, "a draw fell outside the law's support"
    counts = np.bincount(keys, minlength=len(cells))
    expected = np.asarray([law[c] for c in cells]) * counts.sum()
    return stats.chisquare(counts, expected), counts


_draw = jax.jit(sample_pair_indices, static_argnums=2, static_argnames="unlabeled")


# ---------------------------------------------------------------- samplers


def test_exact_sampler_matches_the_rejection_law_chi_square(mini):
    qid, labels, usable, flat = _flat(mini, mini.mask)
    law = ref.rejection_law(qid, labels, usable)
    assert len(law) == 56 == int(num_ordered_pairs(mini).sum())
    source = pair_source(mini)
    draws = _draw(jax.random.key(0), source, NUM_DRAWS)
    assert bool(np.all(np.asarray(draws.valid)))
    result, counts = _fast_counts(draws, flat, law)
    print(f"exact sampler chi2 = {result.statistic:.2f} on {len(law) - 1} df, p = {result.pvalue:.3f}")
    assert result.pvalue > 1e-3
    # query marginal is proportional to its number of ordered pairs (26 and 30 here)
    q = np.asarray(source.query)[np.asarray(draws.a)]
    np.testing.assert_array_equal(q, np.asarray(draws.b) // mini.mask.shape[1])  # b in a's query
    np.testing.assert_allclose(np.bincount(q, minlength=4) / NUM_DRAWS, [0, 26 / 56, 0, 30 / 56], atol=5e-3)


def test_unlabeled_sampler_matches_the_rejection_law_chi_square(mini):
    keep = np.asarray(jax.random.bernoulli(jax.random.key(3), 0.5, mini.mask.shape)) & np.asarray(mini.mask)
    source = pair_source(mini, labeled=mini.mask, unlabeled=keep)
    qid, labels, usable, flat = _flat(mini, keep)
    law = ref.rejection_law(qid, labels, usable, need_different_labels=False)
    draws = _draw(jax.random.key(1), source, NUM_DRAWS, unlabeled=True)
    result, _ = _fast_counts(draws, flat, law)
    print(f"unlabeled sampler chi2 = {result.statistic:.2f} on {len(law) - 1} df, p = {result.pvalue:.3f}")
    assert result.pvalue > 1e-3


def test_sofia_rank_sampler_matches_sofia_ml_law_including_skips(mini):
    qid, labels, usable, flat = _flat(mini, mini.mask)
    law, skip = ref.sofia_rank_law(qid, labels, usable)
    assert skip == pytest.approx(16 / 32)
    draws = _draw(jax.random.key(2), pair_source(mini, sampler="sofia_rank"), NUM_DRAWS)
    valid = np.asarray(draws.valid)
    assert abs(1 - valid.mean() - skip) < 4 * np.sqrt(skip * (1 - skip) / NUM_DRAWS)
    result, _ = _fast_counts(draws, flat, {k: v / (1 - skip) for k, v in law.items()})
    print(f"sofia_rank sampler chi2 = {result.statistic:.2f} on {len(law) - 1} df, p = {result.pvalue:.3f}, "
          f"skipped {1 - valid.mean():.4f} (law {skip})")
    assert result.pvalue > 1e-3


@pytest.mark.parametrize("unlabeled", [False, True])
def test_ragged_sampler_matches_the_rejection_law_chi_square(unlabeled):
    """Unequal query lengths, a partial labeled mask, windows clamped at the end of the documents."""
    queries = _ragged(LENGTHS, seed=1)
    rng = np.random.default_rng(2)
    labeled = rng.random(queries.num_documents) < 0.7
    unl = ~labeled & (rng.random(queries.num_documents) < 0.8)
    source = pair_source(queries, labeled, unl)
    usable = unl if unlabeled else labeled
    law = ref.rejection_law(document_query(queries.offsets), queries.labels, usable,
                            need_different_labels=not unlabeled)
    draws = _draw(jax.random.key(5), source, NUM_DRAWS // 2, unlabeled=unlabeled)
    assert bool(np.all(np.asarray(draws.valid)))
    result, _ = _fast_counts(draws, np.arange(queries.num_documents), law)
    print(f"ragged {'unlabeled' if unlabeled else 'labeled'} sampler chi2 = {result.statistic:.2f} on "
          f"{len(law) - 1} df, p = {result.pvalue:.3f}")
    assert result.pvalue > 1e-3


def _random_masks(key, mask, num):
    """``num`` random (labeled, unlabeled) pairs of disjoint ``[Q, L]`` masks inside ``mask``."""
    key_l, key_u = jax.random.split(key)
    labeled = jax.random.bernoulli(key_l, 0.5, (num,) + mask.shape) & mask
    unlabeled = jax.random.bernoulli(key_u, 0.7, (num,) + mask.shape) & mask & ~labeled
    return labeled, unlabeled


@pytest.mark.parametrize("sampler", ["exact", "sofia_rank"])
def test_ragged_source_draws_what_its_padded_view_draws(sampler):
    """The ``N`` flat documents and the ``Q × L`` padded view (L = 16 > W = 12) give the same
    documents for the same key, so SPD trains to the same weights."""
    queries = _ragged(LENGTHS, seed=3)
    batch = pad_queries(queries)
    list_size = batch.mask.shape[1]
    assert list_size == 16 and queries.list_size == 12
    to_dense = _dense_flat_index(queries, list_size)
    rng = np.random.default_rng(4)
    labeled = rng.random(queries.num_documents) < 0.6
    unlabeled = ~labeled & (rng.random(queries.num_documents) < 0.8)
    ragged = pair_source(queries, labeled, unlabeled, sampler=sampler)
    dense = pair_source(batch, _to_dense(labeled, queries, list_size), _to_dense(unlabeled, queries, list_size),
                        sampler=sampler)
    assert ragged.features.shape == (36, 3) and ragged.window == 12 and dense.window == 16
    for unl in (False, True):
        r = _draw(jax.random.key(6), ragged, 4000, unlabeled=unl)
        d = _draw(jax.random.key(6), dense, 4000, unlabeled=unl)
        valid = np.asarray(r.valid)
        np.testing.assert_array_equal(valid, d.valid)
        np.testing.assert_array_equal(to_dense[np.asarray(r.a)], d.a)
        np.testing.assert_array_equal(to_dense[np.asarray(r.b)[valid]], np.asarray(d.b)[valid])
        assert valid.mean() > 0.3
    w_ragged, w_dense = (jax.jit(lambda s: train(jax.random.key(1), SPD, SPD.init(None, 3, lam=0.05), s,
                                                 num_steps=200).w)(s) for s in (ragged, dense))
    np.testing.assert_array_equal(w_ragged, w_dense)


def test_partner_counts_match_brute_force_and_pairs_per_query():
    queries = _ragged((6, 1, 9, 4, 7), num_grades=4, seed=5)
    owner = document_query(queries.offsets)
    rng = np.random.default_rng(6)
    labeled = rng.random(queries.num_documents) < 0.7
    unlabeled = ~labeled
    lab = queries.labels
    same_query = owner[:, None] == owner[None, :]
    expected = (same_query & labeled[:, None] & labeled[None, :] & (lab[:, None] != lab[None, :])).sum(1)
    got = jax.jit(partner_counts, static_argnums=3)(jnp.asarray(lab), jnp.asarray(labeled), jnp.asarray(owner), 5)
    np.testing.assert_array_equal(got, expected)
    expected_unl = (same_query & unlabeled[:, None] & unlabeled[None, :] & ~np.eye(len(owner), dtype=bool)).sum(1)
    np.testing.assert_array_equal(unlabeled_counts(jnp.asarray(unlabeled), jnp.asarray(owner), 5), expected_unl)
    # every document labeled: twice the preference pairs of each query (grade-histogram formula)
    np.testing.assert_array_equal(num_ordered_pairs(queries), 2 * pairs_per_query(queries.labels, queries.offsets))
    np.testing.assert_array_equal(num_ordered_pairs(pad_queries(queries)),
                                  2 * pairs_per_query(queries.labels, queries.offsets))
    source = pair_source(queries, labeled)
    assert int(source.num_pairs) == int(expected.sum())


def _largest_intermediate(jaxpr) -> int:
    """Elements of the largest value any equation (sub-jaxprs included) produces."""
    largest = 0
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            largest = max(largest, int(np.prod(getattr(var.aval, "shape", ()), dtype=np.int64)))
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, ClosedJaxpr):
                    largest = max(largest, _largest_intermediate(sub.jaxpr))
                elif isinstance(sub, Jaxpr):
                    largest = max(largest, _largest_intermediate(sub))
    return largest


def test_ragged_tables_and_draws_grow_with_documents_not_queries_times_longest():
    """One 1,024-document query among 265 short ones: building the tables (labeled and unlabeled,
    both samplers) and drawing make nothing the size of ``Q × W`` (272,384) or ``W²``, only ``[N]``,
    ``[N, D]`` and ``[draws, W]`` values (N = 1,799). The padded ``[Q, L, L]`` tables were 279M."""
    lengths = np.r_[np.full(255, 3), 1024, np.full(10, 1)]
    queries = _ragged(lengths, seed=7)
    num_docs, num_queries, width = queries.num_documents, queries.num_queries, queries.list_size
    everything = np.ones(num_docs, bool)
    for sampler in ("exact", "sofia_rank"):
        build = jax.make_jaxpr(lambda: pair_source(queries, everything, everything, sampler=sampler))()
        assert _largest_intermediate(build.jaxpr) <= num_docs
    source = pair_source(queries, everything, everything)
    draws = jax.make_jaxpr(lambda s: sample_pairs(jax.random.key(0), s, 4, 4))(source)
    bound = max(num_docs * queries.num_features, 8 * width)  # [N, D] features, [4 + 4 draws, W] windows
    assert _largest_intermediate(draws.jaxpr) <= bound < num_queries * width // 20
    pairs = sample_pairs(jax.random.key(0), source, 4, 4)
    assert bool(np.all(np.asarray(pairs.valid))) and bool(np.all(np.asarray(pairs.valid_hat)))


def test_pair_batch_holds_differences_and_graded_labels(mini):
    source = pair_source(mini)
    pairs = sample_pairs(jax.random.key(4), source, 3, 0)
    a, b, _ = sample_pair_indices(jax.random.split(jax.random.key(4))[0], source, 3)
    x = np.asarray(mini.features).reshape(-1, mini.features.shape[-1])
    lab = np.asarray(mini.labels).reshape(-1)
    np.testing.assert_allclose(pairs.p, x[a] - x[b], rtol=0, atol=0)
    np.testing.assert_allclose(pairs.y, lab[a] - lab[b])
    assert np.all(np.asarray(pairs.y) != 0) and pairs.p_hat.shape == (0, mini.features.shape[-1])


def test_masked_padding_is_never_drawn():
    batch = QueryBatch(features=jnp.ones((2, 4, D)), labels=jnp.asarray([[0, 1, 2, 2], [1, 0, 5, 5]], jnp.float32),
                       mask=jnp.asarray([[1, 1, 0, 0], [1, 1, 0, 0]], bool), qid=np.arange(2))
    a, b, valid = _draw(jax.random.key(0), pair_source(batch), 2000)
    assert np.all(np.asarray(valid)) and np.asarray(a % 4).max() <= 1 and np.asarray(b % 4).max() <= 1
    assert np.all(np.asarray(a) // 4 == np.asarray(b) // 4)


# ---------------------------------------------------------------- one step vs NumPy


def _pairs(seed, k, l, d=D, graded=False):
    rng = np.random.default_rng(seed)
    y = rng.choice([-2.0, -1.0, 1.0, 2.0] if graded else [-1.0, 1.0], size=k)
    return PairBatch(p=jnp.asarray(rng.normal(size=(k, d)), jnp.float32), y=jnp.asarray(y, jnp.float32),
                     valid=jnp.ones(k, bool), p_hat=jnp.asarray(rng.normal(size=(l, d)), jnp.float32),
                     valid_hat=jnp.ones(l, bool))


@pytest.mark.parametrize("t,clamp,project,schedule", [(1, 1e-7, True, "pegasos"), (1, 0.0, False, "pegasos"),
                                                       (7, 1e-7, True, "pegasos"), (7, 1e-7, False, "eta0")])
def test_spd_step_matches_numpy(t, clamp, project, schedule):
    rng = np.random.default_rng(t)
    w0 = rng.normal(size=D).astype(np.float32) * 0.3
    pairs = _pairs(10 + t, 3, 0)
    lam = 0.5
    learner = LEARNERS.build("spd", project_ball=project, schedule=schedule)
    state = learner.init(None, D, lam=lam, clamp=clamp, eta0=0.7)._replace(w=jnp.asarray(w0), t=jnp.asarray(t - 1))
    new, info = jax.jit(learner.update)(state, pairs)
    expected = ref.spd_step(w0, t, np.asarray(pairs.p), np.asarray(pairs.y), lam, clamp=clamp, project=project,
                            schedule=schedule, eta0=0.7)
    err = float(np.max(np.abs(np.asarray(new.w) - expected)))
    print(f"SPD step t={t} clamp={clamp} project={project} {schedule}: max |w - numpy| = {err:.2e}")
    assert err < 1e-6 and int(new.t) == t


@pytest.mark.parametrize("loss,project,t", [("hinge", False, 3), ("hinge", True, 1), ("squared", False, 5)])
def test_lcra_step_matches_numpy(loss, project, t):
    rng = np.random.default_rng(t)
    views = np.asarray(random_views(jax.random.key(t), D, 2))
    w0 = (rng.normal(size=(2, D)) * 0.3 * views).astype(np.float32)
    pairs = _pairs(20 + t, 2, 5, graded=loss == "squared")
    lam, mu = np.asarray([0.5, 0.25]), 0.05
    learner = _lcra(num_views=2, loss=loss, project_ball=project)
    state = learner.init(jax.random.key(t), D, lam=lam, mu=mu)._replace(w=jnp.asarray(w0), t=jnp.asarray(t - 1))
    np.testing.assert_array_equal(state.views, views)
    new, info = jax.jit(learner.update)(state, pairs)
    expected = ref.lcra_step(w0, views, t, np.asarray(pairs.p), np.asarray(pairs.y), np.asarray(pairs.p_hat), lam, mu,
                             loss=loss, project=project)
    err = float(np.max(np.abs(np.asarray(new.w) - expected)))
    print(f"LCRA step {loss} project={project} t={t}: max |W - numpy| = {err:.2e}")
    assert err < 1e-6
    assert info.updates.shape == () and int(info.instances) == 2
    eager, _ = learner.update(state, pairs)  # jit / no-jit parity
    chex.assert_trees_all_close(eager, new, rtol=1e-6, atol=1e-6)


def test_fifty_steps_on_fixed_pairs_match_numpy():
    num_steps, k, l = 50, 1, 5
    batches = [_pairs(100 + i, k, l) for i in range(num_steps)]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *batches)
    lam, mu = np.asarray([0.3, 0.6]), 0.02
    learner = _lcra(num_views=2, project_ball=True)
    state = learner.init(jax.random.key(5), D, lam=lam, mu=mu)
    final, _ = jax.jit(lambda s, b: jax.lax.scan(learner.update, s, b))(state, stacked)
    w = np.zeros((2, D))
    for i, b in enumerate(batches):
        w = ref.lcra_step(w, np.asarray(state.views), i + 1, np.asarray(b.p), np.asarray(b.y), np.asarray(b.p_hat),
                          lam, mu, project=True)
    np.testing.assert_allclose(np.asarray(final.w), w, rtol=1e-5, atol=1e-6)


def test_blocked_steps_equal_one_draw_per_step(mini, monkeypatch):
    """``train`` draws a block of steps at a time; step ``t`` must still see the pairs of
    ``sample_pairs(fold_in(key, t))`` in order, across full blocks and the remainder."""
    monkeypatch.setattr(flat_pairs, "STEP_BLOCK", 8)  # 21 steps: two full blocks and 5 more
    source = pair_source(mini, sampler="sofia_rank")
    learner, key = SPD, jax.random.key(5)

    def one_at_a_time():
        def body(state, t):
            return learner.update(state, sample_pairs(jax.random.fold_in(key, t), source, 1, 0))[0], None
        return jax.lax.scan(body, learner.init(None, 46, lam=0.05), jnp.arange(21))[0].w

    blocked = jax.jit(lambda: train(key, learner, learner.init(None, 46, lam=0.05), source, num_steps=21).w)()
    np.testing.assert_allclose(np.asarray(blocked), np.asarray(jax.jit(one_at_a_time)()), rtol=1e-6, atol=1e-7)
    assert np.abs(np.asarray(blocked)).max() > 0


def test_single_view_lcra_without_co_regularization_is_spd(mini):
    source = pair_source(mini, sampler="sofia_rank")
    a, b = SPD, _lcra(num_views=1, project_ball=True)
    key = jax.random.key(9)
    wa = jax.jit(lambda: train(key, a, a.init(None, 46, lam=0.05), source, num_steps=300).w)()
    wb = jax.jit(lambda: train(key, b, b.init(None, 46, lam=0.05, mu=0.0), source, num_steps=300).w)()
    np.testing.assert_allclose(np.asarray(wb)[0], np.asarray(wa), rtol=1e-6, atol=1e-7)


def test_spd_mv_views_stay_disjoint_and_score_is_the_view_average(mini):
    learner = _lcra(num_views=2)
    state = jax.jit(lambda: train(jax.random.key(2), learner, learner.init(jax.random.key(1), 46, lam=0.05),
                                  pair_source(mini), num_steps=200))()
    views = np.asarray(state.views)
    assert np.all(views.sum(0) == 1) and sorted(views.sum(1)) == [23, 23]
    assert np.all(np.asarray(state.w)[views == 0] == 0)
    x = mini.features
    expected = 0.5 * (x @ state.w[0] + x @ state.w[1])
    np.testing.assert_allclose(learner.score(learner.params(state), x), expected, rtol=1e-5, atol=1e-6)


def test_skipped_sofia_draw_leaves_weights_but_advances_t():
    learner = SPD
    state = learner.init(None, D)._replace(w=jnp.ones(D))
    pairs = _pairs(0, 1, 0)._replace(valid=jnp.zeros(1, bool))
    new, _ = learner.update(state, pairs)
    np.testing.assert_array_equal(new.w, state.w)
    assert int(new.t) == 1


# ---------------------------------------------------------------- hygiene


def test_one_trace_for_many_hyperparameters_and_state_keeps_its_structure(mini):
    source = pair_source(mini, mini.mask, mini.mask)

    learner = _lcra(num_views=2)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(lam, mu):
        state = learner.init(jax.random.key(0), 46, lam=lam, mu=mu)
        new = train(jax.random.key(1), learner, state, source, num_steps=20, num_labeled=1, num_unlabeled=2)
        chex.assert_trees_all_equal_shapes_and_dtypes(new, state)
        return new.w

    first = run(jnp.asarray([0.1, 0.2], jnp.float32), jnp.float32(0.01))
    run(jnp.asarray([0.3, 0.4], jnp.float32), jnp.float32(0.1))
    again = run(jnp.asarray([0.1, 0.2], jnp.float32), jnp.float32(0.01))
    np.testing.assert_array_equal(first, again)  # deterministic


def test_vmap_over_grid_equals_single_runs(mini):
    source = pair_source(mini)
    lams = jnp.asarray([0.01, 0.1, 1.0], jnp.float32)

    def one(lam):
        return train(jax.random.key(0), SPD, SPD.init(None, 46, lam=lam), source, num_steps=50).w

    batched = jax.jit(jax.vmap(one))(lams)
    single = jax.jit(one)(lams[1])
    np.testing.assert_allclose(batched[1], single, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("bad", [0.0, -1e-3, [0.1, 0.0]])
def test_non_positive_lambda_is_rejected(bad):
    with pytest.raises(ValueError, match="lam must be > 0"):
        _lcra().init(jax.random.key(0), D, lam=bad, mu=0.1)
    if not isinstance(bad, list):
        with pytest.raises(ValueError, match="lam must be > 0"):
            SPD.init(None, D, lam=bad)


def test_bad_batch_sizes_and_options_are_rejected():
    with pytest.raises(ValueError, match=r"k \(labeled pairs per step\) must be an int >= 1; got 0"):
        protocol.lcra_method(0, 5)
    with pytest.raises(ValueError, match=r"l \(unlabeled pairs per step\) must be an int >= 1; got 0"):
        protocol.lcra_method(1, 0)
    with pytest.raises(ValueError, match="k .* got 0"):
        check_sizes(0)
    with pytest.raises(ValueError, match="mu must be >= 0"):
        _lcra().init(jax.random.key(0), D, lam=0.1, mu=-1.0)
    with pytest.raises(ValueError, match="num_views must be an int >= 1"):
        _lcra(num_views=0)
    with pytest.raises(ValueError, match="loss must be one of 'hinge', 'squared'; got 'l1'"):
        _lcra(loss="l1")
    with pytest.raises(ValueError, match=r"num_views is set by the method \(SPD: 1 views\)"):
        protocol.method_learner(protocol.METHODS["spd"], num_views=3)
    with pytest.raises(ValueError, match="learner 'lcra': mu=0.1 is a hyperparameter, set through init"):
        LEARNERS.build("lcra", mu=0.1)
    with pytest.raises(ValueError, match="sampler must be one of"):
        pair_source(QueryBatch(jnp.zeros((1, 2, D)), jnp.zeros((1, 2)), jnp.ones((1, 2), bool), np.zeros(1)),
                    sampler="uniform")


def test_masks_of_the_wrong_layout_are_rejected(mini):
    queries = as_ragged(mini)
    num_queries, list_size = mini.mask.shape
    with pytest.raises(ValueError, match=rf"labeled must be a bool mask of shape \(32,\) .* got shape "
                                         rf"\({num_queries}, {list_size}\); ragged masks are \[N\]"):
        pair_source(queries, np.asarray(mini.mask))
    with pytest.raises(ValueError, match=rf"unlabeled must be a bool mask of shape \({num_queries}, {list_size}\) "
                                         r".* got shape \(32,\)"):
        pair_source(mini, None, np.ones(32, bool))
    with pytest.raises(ValueError, match="the training set is empty"):
        pair_source(RaggedQueries(np.zeros((0, D), np.float32), np.zeros(0, np.float32), np.zeros(1, np.int64),
                                  np.zeros(0, np.int64)))


def test_training_set_without_a_valid_pair_is_rejected(mini):
    flat = mini._replace(labels=jnp.zeros_like(mini.labels))
    with pytest.raises(ValueError, match="no valid pair"):
        check_pairs(pair_source(flat))
    with pytest.raises(ValueError, match="no valid pair"):
        protocol.check_batch(flat)
    with pytest.raises(ValueError, match="needs unlabeled pairs"):
        check_pairs(pair_source(mini), need_unlabeled=True)


# ---------------------------------------------------------------- protocol


def test_semi_supervised_split_sizes_and_masks():
    mask = jnp.asarray(np.random.default_rng(0).random((40, 8)) < 0.7).at[:, 0].set(True)
    splits = jax.vmap(lambda k: protocol.semi_supervised_split(k, mask))(protocol.split_keys(jax.random.key(0), 3))
    m = np.asarray(mask)
    for s in range(3):
        train_q = np.asarray(splits.train_query[s])
        assert train_q.sum() == 28
        train_docs = m & train_q[:, None]
        lab, unl = np.asarray(splits.labeled[s]), np.asarray(splits.unlabeled[s])
        assert lab.sum() == round(0.2 * train_docs.sum()) and not np.any(lab & unl)
        np.testing.assert_array_equal(lab | unl, train_docs)
        fold = np.asarray(splits.fold[s])
        assert np.all(fold[~train_q] == -1) and sorted(np.bincount(fold[train_q])) == [5, 5, 6, 6, 6]
    assert not np.array_equal(splits.train_query[0], splits.train_query[1])


def test_make_grid_unties_view_lambdas_and_ignores_mu_for_supervised_methods():
    """The grids written out by hand: λ1 × λ2 untied (μ off for a supervised method), λ tied × μ for
    LCRA, the fixed hyperparameters repeated on every row."""
    g = protocol.make_grid(protocol.METHODS["spd_mv"], (1e-3, 1e-2), (0.1, 1.0), tie_view_lambdas=False)
    np.testing.assert_array_equal(g["lam"], np.float32([[1e-3, 1e-3], [1e-3, 1e-2], [1e-2, 1e-3], [1e-2, 1e-2]]))
    np.testing.assert_array_equal(g["mu"], np.zeros(4, np.float32))
    np.testing.assert_array_equal(g["eta0"], np.ones(4, np.float32))
    g = protocol.make_grid(protocol.METHODS["lcra_1_5"], (1e-3, 1e-2), (0.1, 1.0), (0.5,), fixed={"clamp": 0.0})
    np.testing.assert_array_equal(g["lam"], np.float32([[1e-3, 1e-3], [1e-3, 1e-3], [1e-2, 1e-2], [1e-2, 1e-2]]))
    np.testing.assert_array_equal(g["mu"], np.float32([0.1, 1.0, 0.1, 1.0]))
    np.testing.assert_array_equal(g["eta0"], np.full(4, 0.5, np.float32))
    np.testing.assert_array_equal(g["clamp"], np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="mu is searched over the grid"):
        protocol.make_grid(protocol.METHODS["lcra_1_5"], (1e-3,), (0.1,), fixed={"mu": 0.0})


def test_lanes_of_the_protocol_equal_its_pure_fits(monkeypatch):
    """``cross_validate`` and ``fit_and_test`` on the lane runner (chunks of ``STEP_BLOCK`` steps, the
    last one partly past ``num_steps``) give the bytes of ``fit_grid``'s single scan for the same
    keys, scored the same way."""
    monkeypatch.setattr(flat_pairs, "STEP_BLOCK", 8)  # 21 steps: two full chunks and a partial one
    batch = synthetic_queries(jax.random.key(3), num_queries=20, list_size=8, num_features=4)
    method = protocol.METHODS["lcra_1_1"]
    learner = protocol.method_learner(method, project_ball=True)
    grid = protocol.make_grid(method, (0.01, 0.1), (0.1,))
    keys = protocol.split_keys(jax.random.key(0), 2)
    common = dict(num_folds=3, train_fraction=0.7, label_fraction=0.4)
    val_map = protocol.cross_validate(keys, learner, method, batch, grid, num_steps=21, **common)
    assert val_map.shape == (2, 3, 2)
    num_val = -(-int(round(0.7 * 20)) // 3)

    @jax.jit  # one program for every split and fold
    def fold_map(key_views, key, labeled, unlabeled, others, idx, ok):
        w = protocol.fit_grid(key_views, key, learner, method, batch, labeled & others[:, None],
                              unlabeled & others[:, None], grid, num_steps=21)
        return protocol._mean_ap(w.mean(1), batch, idx, ok, labeled)

    for s in range(2):
        key_split, key_views, key_cv, key_final = (jax.random.fold_in(keys[s], i) for i in range(4))
        split = protocol.semi_supervised_split(key_split, batch.mask, num_folds=3, train_fraction=0.7,
                                               label_fraction=0.4)
        for f in range(3):
            (idx,) = np.nonzero(np.asarray(split.fold) == f)
            ok = np.arange(num_val) < idx.size
            idx = np.pad(idx, (0, num_val - idx.size))
            expected = fold_map(key_views, jax.random.fold_in(key_cv, f), split.labeled, split.unlabeled,
                                (split.fold >= 0) & (split.fold != f), idx, ok)
            np.testing.assert_array_equal(val_map[s, f], np.asarray(expected))
    _, chosen = protocol.select(jnp.asarray(val_map), grid)
    test_map = protocol.fit_and_test(keys, learner, method, batch, chosen, num_steps=21, **common)
    for s in range(2):
        key_split, key_views, _, key_final = (jax.random.fold_in(keys[s], i) for i in range(4))
        split = protocol.semi_supervised_split(key_split, batch.mask, num_folds=3, train_fraction=0.7,
                                               label_fraction=0.4)
        one = jax.tree.map(lambda x: x[s][None], chosen)
        w = protocol.fit_grid(key_views, key_final, learner, method, batch, split.labeled, split.unlabeled, one,
                              num_steps=21)
        (idx,) = np.nonzero(~np.asarray(split.train_query))
        expected = protocol._mean_ap(w.mean(1), batch, jnp.asarray(idx), jnp.ones(idx.size, bool), batch.mask)[0]
        np.testing.assert_array_equal(test_map[s], np.asarray(expected))


def test_paired_t_test_matches_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.random(10), rng.random(10)
    ours = lcra_table.paired_t_test(a, b)
    theirs = stats.ttest_rel(a, b)
    assert ours["t"] == pytest.approx(theirs.statistic, rel=1e-10)
    assert ours["p_value"] == pytest.approx(theirs.pvalue, rel=1e-5)


def _launch_lcra_table(tmp_path, monkeypatch, *overrides):
    monkeypatch.setenv("JAXRANK_DATA", str(tmp_path / "no-data"))
    tiny = ["dataset=synthetic", "num_splits=2", "num_steps=60", "cv_steps=40", "lambdas=0.01,0.1", "mus=0.01",
            "synthetic_queries=30"]
    run_dir = registry.launch("lcra_table", tmp_path, tiny + list(overrides))
    return run_dir, json.loads((run_dir / "results.json").read_text())


@pytest.mark.slow
def test_lcra_table_runs_lcra_end_to_end_on_synthetic_data(tmp_path, monkeypatch):
    run_dir, results = _launch_lcra_table(tmp_path, monkeypatch, "methods=lcra_1_1", "reference=lcra_1_1")
    r = results["methods"]["LCRA-1-1"]
    assert len(r["test_map"]) == 2 and all(0.0 <= x <= 1.0 for x in r["test_map"]) and r["grid_size"] == 2
    assert (run_dir / "table.md").is_file() and (run_dir / "arrays.npz").is_file()
    _, again = _launch_lcra_table(tmp_path, monkeypatch, "methods=lcra_1_1", "reference=lcra_1_1")
    assert again["methods"]["LCRA-1-1"]["test_map"] == r["test_map"]  # same seed, same numbers
    with pytest.raises(ValueError, match="unknown method 'lcra_2_2'"):
        registry.launch("lcra_table", tmp_path, ["methods=spd,lcra_2_2"])
    with pytest.raises(ValueError, match=r"lcra.mu is searched over the grid mus; set mus instead of params"):
        registry.launch("lcra_table", tmp_path, ["params=lcra.mu=0.5"])
    with pytest.raises(ValueError, match=r"lcra.num_views is set by each method"):
        registry.launch("lcra_table", tmp_path, ["params=lcra.num_views=3"])
    with pytest.raises(ValueError, match=r"learner 'lcra' has no setting 'gamma'"):
        registry.launch("lcra_table", tmp_path, ["params=lcra.gamma=1"])


@pytest.mark.slow
def test_lcra_table_all_four_methods_and_the_paired_test(tmp_path, monkeypatch):
    _, results = _launch_lcra_table(tmp_path, monkeypatch)
    assert set(results["methods"]) == {"SPD", "SPD-MV", "LCRA-1-1", "LCRA-1-5"}
    assert set(results["paired_t_test"]) == {"SPD-MV", "LCRA-1-1", "LCRA-1-5"}


# ---------------------------------------------------------------- sofia-ml parity (slow, needs pysofia)


def _import_pysofia():
    """pysofia with its import shims (``benchmarks/spd.py``); skips when it is not installed."""
    found = import_pysofia()
    if found is None:
        pytest.skip("sofia-ml parity needs pysofia, which builds only by hand: pip install 'cython<3' wheel && "
                    "pip install --no-build-isolation pysofia")
    return found


@pytest.mark.slow
def test_spd_matches_sofia_ml_test_map_on_mq2008_fold1(shared_data, tmp_path):
    _sofia_ml, sofia_ml = _import_pysofia()
    train_set, _, test_set = load_fold(shared_data / "MQ2008", 1)
    test_batch = pad_queries(test_set)
    lam, num_steps, num_seeds = 0.1, 100_000, 10
    path = tmp_path / "train.svm"
    write_sofia_file(path, train_set)
    num_features = train_set.num_features
    sofia_maps = []
    for _ in range(num_seeds):  # sofia-ml's rand() stream continues from call to call: 10 different runs
        coef = _sofia_ml.train(str(path).encode(), num_features + 1, lam, num_steps, False,
                               sofia_ml.learner_type.pegasos.value, "rank", sofia_ml.eta_type.pegasos_eta.value, 0.5)
        sofia_maps.append(float(average_precision(test_batch.features @ jnp.asarray(coef[1:], jnp.float32),
                                                  test_batch.labels, where=test_batch.mask)))
    source = pair_source(train_set, sampler="sofia_rank")

    def one(key):
        w = train(key, SPD, SPD.init(None, num_features, lam=lam), source, num_steps=num_steps).w
        return average_precision(test_batch.features @ w, test_batch.labels, where=test_batch.mask)

    ours = np.asarray(jax.jit(jax.vmap(one))(protocol.split_keys(jax.random.key(0), num_seeds)))
    print(f"MQ2008 Fold1 test MAP, lambda={lam}, {num_steps} steps, {num_seeds} seeds: jaxrank {ours.mean():.4f} ± "
          f"{ours.std(ddof=1):.4f}, sofia-ml {np.mean(sofia_maps):.4f} ± {np.std(sofia_maps, ddof=1):.4f}")
    assert abs(ours.mean() - np.mean(sofia_maps)) <= 0.01
