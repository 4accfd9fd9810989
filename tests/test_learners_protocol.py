"""SOLAR's online and batch protocols: a replayed NumPy pass, snapshots before learning, queries
without pairs, NaN-free metrics, determinism, vmapped grids, padded folds, and the same numbers
from the ragged and the dense layout."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.data import as_ragged, concat_queries, load_fold, pad_queries, synthetic_queries
from jaxrank.learners import LEARNERS
from jaxrank.learners.online import batch_protocol, online_pass, streams
from jaxrank.utils.swap_or_not import shuffle_index
from jaxrank.types import QueryBatch
from tests.conftest import SAMPLE_DATA
from tests.reference import online_protocol as ref
from tests.reference import ranking_metrics as ref_metrics

D = 5
SOLAR1 = LEARNERS.build("solar_first_order")
C = {"c": 0.1}  # SOLAR-I's C in these tests


@functools.lru_cache(maxsize=None)
def _synthetic(seed=0, num_queries=6, list_size=8):
    make = functools.partial(synthetic_queries, num_queries=num_queries, list_size=list_size, num_features=D,
                             num_grades=3)
    return make(jax.random.PRNGKey(seed))


@functools.lru_cache(maxsize=None)
def _mini():
    return pad_queries(concat_queries(load_fold(str(SAMPLE_DATA / "MQ2008-mini"), 1)))


@functools.lru_cache(maxsize=None)
def _with_empty_queries():
    """Six synthetic queries plus one with a single document and one with a single grade."""
    b = _synthetic()
    x = jax.random.uniform(jax.random.PRNGKey(5), (2, 8, D))
    extra = QueryBatch(x, jnp.array([[2.0] + [0.0] * 7, [1.0] * 8]), jnp.array([[True] + [False] * 7, [True] * 5 + [False] * 3]),
                       np.array([100, 101]))
    return QueryBatch(*(jnp.concatenate([a, e]) for a, e in zip(b[:3], extra[:3])), np.r_[b.qid, extra.qid])


@functools.partial(jax.jit, static_argnames=("learner", "dtype"))
def _pass(key, learner, docs, stream, hparams, dtype=jnp.float32):
    state = learner.init(None, docs.features.shape[-1], dtype, **hparams)
    return online_pass.run_pass(key, learner, state, docs, stream, dtype=dtype)


def _run(batch, key, learner=SOLAR1, hparams=C):
    stream = streams.instance_stream(batch, learner.instances)
    return _pass(key, learner, streams.documents(batch), stream, hparams), stream


@pytest.mark.parametrize("which", ["mini", "empty"])
def test_pass_matches_numpy_replay(which):
    batch = _mini() if which == "mini" else _with_empty_queries()
    c, key = 0.1, jax.random.key(3)  # SOLAR1's C
    run, stream = _run(batch, key)
    feats, labels, mask = (np.asarray(a, np.float64) for a in batch[:3])
    assert stream.first.shape[0] == len(ref.canonical_pairs(labels, mask.astype(bool)))
    order, keys, flips = ref.pass_draws(key, batch.features.shape[0], stream.first.shape[0], online_pass.BLOCK)
    w_final, w_before = ref.online_pa2(feats, labels, mask.astype(bool), order, keys, flips, c)
    np.testing.assert_array_equal(np.asarray(run.order), order)
    np.testing.assert_allclose(np.asarray(run.state.w), w_final, rtol=0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(run.params), w_before, rtol=0, atol=1e-4)
    assert np.abs(w_final).max() > 1e-2  # the pass learned something


@pytest.mark.parametrize("guard", [True, False])
def test_solar_second_order_pass_matches_numpy_replay(guard):
    """SOLAR-II's segment form (``steps``: 16 steps in [S, S] and [S, D] products, guards firing,
    padded steps skipped) against the NumPy AROW loop over the same visits, in float64."""
    batch, key, gamma = _mini(), jax.random.key(4), 1.0
    feats, labels, mask = (np.asarray(a, np.float64) for a in batch[:3])
    order, keys, flips = ref.pass_draws(key, batch.features.shape[0], int(streams.instance_stream(batch).first.shape[0]),
                                        online_pass.BLOCK)
    w_final, sigma_final, w_before = ref.online_arow(feats, labels, mask.astype(bool), order, keys, flips, gamma, guard)
    with jax.enable_x64(True):
        run = _pass(key, LEARNERS.build("solar_second_order", guard=guard), streams.documents(batch, jnp.float64),
                    streams.instance_stream(batch), {"gamma": jnp.float32(gamma)}, dtype=jnp.float64)
        assert run.state.w.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(run.state.w), w_final, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(run.state.sigma), sigma_final, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(run.params), w_before, rtol=0, atol=1e-9)
    assert np.abs(w_final).max() > 1e-1  # the pass learned something


def test_shuffle_is_the_reference_permutation_and_close_to_uniform():
    """``shuffle_index`` equals the swap-or-not written out in NumPy, is a permutation for every size,
    and draws the 4! orders of a 4-instance query equally often over keys."""
    sizes = np.array([1, 2, 3, 7, 64, 1000, 250_001], np.uint32)
    keys = np.array([0, 1, 2**31, 12345, 2**32 - 1, 99, 7], np.uint32)
    for n, key in zip(sizes, keys):
        positions = np.arange(min(int(n), 1000), dtype=np.uint32)
        got = np.asarray(shuffle_index(jnp.uint32(key), jnp.asarray(positions), jnp.uint32(n)))
        assert got.tolist() == [ref.swap_or_not(int(x), int(n), int(key)) for x in positions]
        if n <= 1000:
            assert sorted(got.tolist()) == list(range(int(n)))
    draws = 4800
    keys = jax.random.bits(jax.random.key(0), (draws,), jnp.uint32)
    perms = np.asarray(jax.vmap(lambda k: shuffle_index(k, jnp.arange(4, dtype=jnp.uint32), jnp.uint32(4)))(keys))
    _, counts = np.unique(perms, axis=0, return_counts=True)
    assert counts.size == 24
    expected = draws / 24
    assert np.sum((counts - expected) ** 2 / expected) < 49.7  # 23 degrees of freedom, p = 0.001


def test_online_metrics_match_reference_on_tie_free_queries():
    batch, c = _mini(), 0.1
    result = online_pass.online_protocol(jax.random.key(1), SOLAR1, batch, num_permutations=2, hparams={"c": c})
    feats, labels, mask = (np.asarray(a, np.float64) for a in batch[:3])
    mask = mask.astype(bool)
    num_instances = len(ref.canonical_pairs(labels, mask))
    compared = 0
    for p in range(2):
        key_pass, _ = jax.random.split(jax.random.fold_in(jax.random.key(1), p))
        order, keys, flips = ref.pass_draws(key_pass, batch.features.shape[0], num_instances, online_pass.BLOCK)
        np.testing.assert_array_equal(np.asarray(result.order[p]), order)
        _, w_before = ref.online_pa2(feats, labels, mask, order, keys, flips, c)
        for k, q in enumerate(order):
            s, lab = feats[q][mask[q]] @ w_before[k], labels[q][mask[q]]
            if len(np.unique(s)) < len(s):
                continue  # ties are broken at random; the reference keeps list order
            expected = [ref_metrics.ndcg_at_k(s, lab, n) for n in (1, 5, 10)] + [ref_metrics.average_precision(s, lab)]
            np.testing.assert_allclose(np.asarray(result.per_query[p, k]), expected, rtol=1e-5, atol=1e-6)
            compared += 1
    assert compared >= 8  # the first query of each permutation meets w = 0 (all tied)
    expected_cum = np.cumsum(np.asarray(result.per_query), axis=1) / np.arange(1, batch.features.shape[0] + 1)[None, :, None]
    np.testing.assert_allclose(np.asarray(result.cumulative), expected_cum, rtol=1e-5)


def test_ragged_and_dense_layouts_give_the_same_protocol_outputs():
    """The same queries as RaggedQueries and as a QueryBatch padded wider: identical passes and metrics
    (ties too: each query breaks ties with its own key, whatever block it is scored in)."""
    ragged = as_ragged(_mini())
    dense = pad_queries(ragged, list_size=128)
    a = online_pass.online_protocol(jax.random.key(7), SOLAR1, ragged, num_permutations=2, hparams=C)
    b = online_pass.online_protocol(jax.random.key(7), SOLAR1, dense, num_permutations=2, hparams=C)
    chex.assert_trees_all_close(a, b, atol=1e-6)


@pytest.mark.parametrize("name,options", [("solar_first_order", {}), ("prank_pointwise", {"score_by": "rank"})],
                         ids=["pairs", "documents"])
def test_queries_without_pairs_are_scored_and_metrics_finite(name, options):
    batch = _with_empty_queries()
    result = online_pass.online_protocol(jax.random.key(0), LEARNERS.build(name, **options), batch, num_permutations=3)
    assert result.per_query.shape == (3, 8, 4)
    assert bool(jnp.all(jnp.isfinite(result.per_query))) and bool(jnp.all(jnp.isfinite(result.cumulative)))
    assert float(result.per_query.min()) >= 0 and float(result.per_query.max()) <= 1
    # the single-document query is always perfectly ranked (NDCG = AP = 1), wherever it is visited
    for p in range(3):
        k = int(np.nonzero(np.asarray(result.order[p]) == 6)[0][0])
        np.testing.assert_allclose(np.asarray(result.per_query[p, k]), 1.0)


def test_empty_query_scored_by_next_model():
    batch = _with_empty_queries()
    run, stream = _run(batch, jax.random.key(4))
    order = np.asarray(run.order)
    counts = np.diff(np.asarray(stream.offsets))
    has_pairs = counts[order] > 0
    w = np.asarray(run.params)
    for k in np.nonzero(~has_pairs)[0]:
        later = [j for j in range(k + 1, len(order)) if has_pairs[j]]
        np.testing.assert_array_equal(w[k], w[later[0]] if later else np.asarray(run.state.w))


def test_deterministic():
    batch = _with_empty_queries()
    a = online_pass.online_protocol(jax.random.key(9), SOLAR1, batch, num_permutations=3, hparams=C)
    b = online_pass.online_protocol(jax.random.key(9), SOLAR1, batch, num_permutations=3, hparams=C)
    chex.assert_trees_all_equal(a, b)
    assert not np.array_equal(np.asarray(a.order[0]), np.asarray(a.order[1]))
    other = online_pass.online_protocol(jax.random.key(10), SOLAR1, batch, num_permutations=3, hparams=C)
    assert not np.array_equal(np.asarray(other.order), np.asarray(a.order))


def test_stream_errors():
    batch = _synthetic()
    one_grade = batch._replace(labels=jnp.ones_like(batch.labels))
    with pytest.raises(ValueError, match="no training pairs"):
        streams.instance_stream(one_grade, "pairs")
    with pytest.raises(ValueError, match="instances must be"):
        streams.instance_stream(batch, "triples")
    with pytest.raises(ValueError, match="num_permutations must be >= 1"):
        online_pass.online_protocol(jax.random.key(0), SOLAR1, batch, num_permutations=0)
    with pytest.raises(ValueError, match="c must be > 0; got -1.0"):
        online_pass.online_protocol(jax.random.key(0), SOLAR1, batch, num_permutations=1, hparams={"c": -1.0})
    stream = streams.instance_stream(one_grade, "documents")
    assert stream.first.shape[0] == int(batch.mask.sum())


def test_batch_protocol_matches_separate_runs_on_padded_folds():
    folds = [_synthetic(seed) for seed in (0, 1)]
    folds[1] = jax.tree.map(lambda a: a[:4], folds[1])  # folds of different sizes get padded
    cs = [1e-3, 1.0]
    result = batch_protocol.batch_protocol(jax.random.key(2), SOLAR1, {"c": cs}, folds, folds[::-1], folds)
    assert result.vali.shape == result.test.shape == result.test_letor.shape == (2, 2, 4)
    for f, fold in enumerate(folds):
        stream = streams.instance_stream(fold, "pairs")
        for h, c in enumerate(cs):
            state = _pass(jax.random.fold_in(jax.random.key(2), f), SOLAR1, streams.documents(fold), stream,
                          {"c": jnp.float32(c)}).state
            scores = fold.features @ state.w
            labels, mask = np.asarray(fold.labels), np.asarray(fold.mask)
            expected = np.mean([ref_metrics.letor_average_precision(np.asarray(scores[q])[mask[q]], labels[q][mask[q]])
                                for q in range(labels.shape[0])])
            np.testing.assert_allclose(float(result.test_letor[f, h, 3]), expected, rtol=1e-5)


def test_batch_protocol_rejects_bad_grids_before_tracing():
    folds = [_synthetic(0)]
    with pytest.raises(ValueError, match=r"same number of settings; got \{'c': 2, 'gamma': 1\}"):
        batch_protocol.batch_protocol(jax.random.key(0), SOLAR1, {"c": [1.0, 2.0], "gamma": [1.0]}, folds, folds, folds)
    with pytest.raises(ValueError, match=r"c must be > 0; got 0.0"):
        batch_protocol.batch_protocol(jax.random.key(0), SOLAR1, {"c": [1.0, 0.0]}, folds, folds, folds)
    with pytest.raises(ValueError, match=r"\['guard'\] are not all hyperparameters .* hyperparameters: gamma"):
        batch_protocol.batch_protocol(jax.random.key(0), LEARNERS.build("solar_second_order"), {"guard": [0.0]},
                                      folds, folds, folds)
