"""Preference-matrix estimation: rank-space interleaving equals jaxrank.clicks, and P's invariants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import data
from jaxrank.clicks import cascade_model, probabilistic_interleave, team_draft_interleave
from jaxrank.envs.estimate import (
    estimate_preference_matrix,
    estimate_wins,
    probabilistic_list,
    rank_weights_table,
    rankings,
    sample_rank,
    team_draft_list,
)
from jaxrank.envs.ranker_duel import ranker_duel_env, single_feature_rankers
from jaxrank.types import QueryBatch

TAU = 3.0


@pytest.fixture(scope="module")
def queries():
    return data.synthetic_queries(jax.random.key(0), num_queries=8, list_size=8, num_features=5,
                                  num_informative=2, num_grades=5, noise=0.1)


def _brute_force_rank(u, shown, n):
    """Inverse CDF over the free ranks 1..n in rank order, float64."""
    free = [r for r in range(1, n + 1) if r not in shown]
    w = np.array([r ** -TAU for r in free])
    cum = np.cumsum(w)
    return free[int(np.argmax(cum > u * cum[-1]))]


def test_sample_rank_matches_brute_force():
    rng = np.random.default_rng(0)
    num_slots, max_docs, cases = 4, 12, []
    for _ in range(300):
        n = int(rng.integers(1, max_docs + 1))
        m = int(rng.integers(0, min(num_slots, n - 1) + 1))
        shown = list(rng.choice(np.arange(1, n + 1), size=m, replace=False))
        cases.append((rng.random(), shown + [0] * (num_slots - m), np.arange(num_slots) < m, n, shown))
    u, shown_ranks, valid, n = (np.array(x) for x in list(zip(*cases))[:4])
    table = rank_weights_table(max_docs, TAU)
    got = jax.jit(jax.vmap(lambda u, s, v, n: sample_rank(u, s, v, table, n)[0]))(
        jnp.asarray(u, jnp.float32), jnp.asarray(shown_ranks, jnp.int32), jnp.asarray(valid), jnp.asarray(n, jnp.int32))
    expected = [_brute_force_rank(c[0], c[4], c[3]) for c in cases]
    np.testing.assert_array_equal(np.asarray(got), expected)


def _one_query(seed, num_docs=6, size=8):
    """Scores of two rankers on one query with ties (integer-valued scores) and padding."""
    key_1, key_2 = jax.random.split(jax.random.key(seed))
    where = jnp.arange(size) < num_docs
    s1 = jax.random.randint(key_1, (size,), 0, 4).astype(jnp.float32)
    s2 = jax.random.randint(key_2, (size,), 0, 4).astype(jnp.float32)
    features = jnp.stack([s1, s2], -1)[None]  # [1, N, 2]
    batch = QueryBatch(features, jnp.zeros((1, size)), where[None], jnp.zeros(1, jnp.int32))
    return s1, s2, where, rankings(batch, np.eye(2, dtype=np.float32))


def _rank_space_args(tables):
    return (tables.ranks[0, 0], tables.order[0, 0], tables.ranks[1, 0], tables.order[1, 0], tables.num_docs[0])


@jax.jit
def _team_draft_ref(keys, s1, s2, where):
    return jax.vmap(lambda k: team_draft_interleave(k, s1, s2, where, list_size=4))(keys)


@jax.jit
def _team_draft_ranked(keys, args):
    return jax.vmap(lambda k: team_draft_list(k, *args, 4))(keys)


def test_team_draft_list_equals_clicks_team_draft():
    """Same key, same coins: the rank-space list is the reference list, document for document."""
    for seed in range(3):
        s1, s2, where, tables = _one_query(seed)
        keys = jax.random.split(jax.random.key(seed), 50)
        ref = _team_draft_ref(keys, s1, s2, where)
        got = _team_draft_ranked(keys, _rank_space_args(tables))
        for a, b in zip(ref, got):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_probabilistic_list_has_the_distribution_of_clicks_probabilistic_interleave():
    s1, s2, where, tables = _one_query(3)
    keys = jax.random.split(jax.random.key(5), 20_000)
    ref = jax.jit(jax.vmap(lambda k: probabilistic_interleave(k, s1, s2, where, list_size=3, tau=TAU)))(keys)
    table = rank_weights_table(8, TAU)
    got = jax.jit(jax.vmap(lambda k: probabilistic_list(k, *_rank_space_args(tables), table, 3)))(keys)
    for (docs_a, shown_a, prob_a), (docs_b, shown_b, prob_b) in [(ref, got)]:
        assert bool(shown_a.all()) and bool(shown_b.all())
        freq_a = np.stack([np.bincount(np.asarray(docs_a[:, p]), minlength=8) for p in range(3)]) / len(keys)
        freq_b = np.stack([np.bincount(np.asarray(docs_b[:, p]), minlength=8) for p in range(3)]) / len(keys)
        np.testing.assert_allclose(freq_b, freq_a, atol=0.015)  # s.e. of each frequency <= 0.0035
        np.testing.assert_allclose(np.asarray(prob_b).mean(0), np.asarray(prob_a).mean(0), atol=0.01)
        # The same document at the same position gets the same posterior, whichever path drew it.
        first = np.asarray(docs_a[:, 0])
        for d in np.unique(first):
            np.testing.assert_allclose(np.asarray(prob_b)[np.asarray(docs_b[:, 0]) == d, 0].mean(),
                                       np.asarray(prob_a)[first == d, 0].mean(), rtol=1e-5)


def _estimate(queries, chunk_size=64, method="probabilistic", num=400, seed=0):
    return estimate_wins(queries, single_feature_rankers([1, 3, 5], 5), cascade_model("perfect", 5), method, num,
                         jax.random.key(seed), chunk_size=chunk_size, verbose=False)


def test_estimate_invariants_and_chunking(queries):
    est = _estimate(queries, chunk_size=64)
    p = est.pref
    assert p.shape == (3, 3) and p.dtype == np.float64
    np.testing.assert_allclose(p + p.T, 1.0)
    np.testing.assert_array_equal(np.diag(p), 0.5)
    np.testing.assert_array_equal(est.counts, 400 * (1 - np.eye(3, dtype=int)))
    np.testing.assert_array_equal(est.wins + est.wins.T, est.counts)
    np.testing.assert_allclose(p, est.wins / np.maximum(est.counts, 1) + 0.5 * np.eye(3))
    assert np.all(est.ties == est.ties.T) and np.all(est.ties <= est.counts)
    assert p[0, 2] > 0.6  # the informative feature beats the noise feature
    # Chunks of 7 lanes (last one partial) give identical counts; the same key repeats exactly.
    np.testing.assert_array_equal(_estimate(queries, chunk_size=7).wins, est.wins)
    pref, counts = estimate_preference_matrix(queries, single_feature_rankers([1, 3, 5], 5), cascade_model("perfect", 5),
                                              "probabilistic", 400, jax.random.key(0), chunk_size=64, verbose=False)
    np.testing.assert_array_equal(pref, p)
    np.testing.assert_array_equal(counts, est.counts)
    assert not np.array_equal(_estimate(queries, chunk_size=64, seed=1).wins, est.wins)


@pytest.mark.parametrize("method", ["probabilistic", pytest.param("team_draft", marks=pytest.mark.slow)])
def test_estimate_agrees_with_direct_simulation_by_the_env(queries, method):
    """The rank-space estimator and env.duel (jaxrank.clicks on raw scores) estimate the same P."""
    ids = [1, 3, 5]
    est = _estimate(queries, chunk_size=64, method=method, num=2000)
    env = ranker_duel_env(queries, single_feature_rankers(ids, 5), cascade_model("perfect", 5), method=method)
    pairs = jnp.array([[0, 1], [0, 2], [1, 2]])
    keys = jax.random.split(jax.random.key(9), 2000)
    won = jax.jit(jax.vmap(lambda ij: jax.vmap(lambda k: env.duel(k, ij[0], ij[1]))(keys).mean()))(pairs)
    for (i, j), direct in zip(np.asarray(pairs), np.asarray(won)):
        assert abs(est.pref[i, j] - direct) < 0.05  # s.e. of the difference ~0.016
        if abs(direct - 0.5) > 0.05:
            assert np.sign(est.pref[i, j] - 0.5) == np.sign(direct - 0.5)


def test_estimate_validation(queries):
    rankers = single_feature_rankers([1, 2], 5)
    model = cascade_model("perfect", 5)
    with pytest.raises(ValueError, match="num_comparisons must be an int >= 1; got 0"):
        estimate_preference_matrix(queries, rankers, model, "probabilistic", 0, jax.random.key(0))
    with pytest.raises(ValueError, match="need at least 2 rankers"):
        estimate_preference_matrix(queries, rankers[:1], model, "probabilistic", 10, jax.random.key(0))
    with pytest.raises(ValueError, match="list_size must be an int >= 1; got -1"):
        estimate_preference_matrix(queries, rankers, model, "probabilistic", 10, jax.random.key(0), list_size=-1)
