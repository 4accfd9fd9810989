"""Preference-matrix estimation: flat rankings equal a per-query argsort, rank-space interleaving equals
jaxrank.clicks, the estimate equals a plain-Python reference comparison by comparison, P's
invariants, resuming after a kill, and the same counts on 1, 2 and 4 devices."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import data
from jaxrank import lanes
from jaxrank.clicks import cascade_model, probabilistic_interleave, team_draft_interleave
from jaxrank.clicks.interleave import probabilistic_interleave_rankings, team_draft_interleave_rankings
from jaxrank.envs import estimate as estimate_module
from jaxrank.envs.estimate import (
    estimate_preference_matrix,
    estimate_wins,
    rank_dtype,
    rank_weights_table,
    rankings,
    sample_rank,
)
from jaxrank.envs.ranker_duel import interleaved_duel, ranker_duel_env, single_feature_rankers
from jaxrank.types import QueryBatch, RaggedQueries
from tests.conftest import REPO, SAMPLE_DATA, child_env, killed_after_checkpoints
from tests.reference import preference_estimate as ref

TAU = 3.0


@pytest.fixture(scope="module")
def dense():
    return data.synthetic_queries(jax.random.key(0), num_queries=8, list_size=8, num_features=5,
                                  num_informative=2, num_grades=5, noise=0.1)


@pytest.fixture(scope="module")
def queries(dense):
    return data.as_ragged(dense)


def _tied_queries(seed, lengths, num_features=4):
    """Ragged queries with small integer features (many ties), a NaN, a -0.0 and a -inf."""
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths)
    features = rng.integers(0, 3, size=(lengths.sum(), num_features)).astype(np.float32)
    features[1, 0], features[2, 0], features[3, 1] = np.nan, -0.0, -np.inf
    labels = rng.integers(0, 5, size=lengths.sum()).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return RaggedQueries(features, labels, offsets, np.arange(lengths.size))


def _argsort_reference(queries: RaggedQueries, rankers):
    """``(ranks, order)`` ``[K, N]`` by a per-query NumPy argsort: descending score, NaN last, ties by index."""
    rankers = np.asarray(rankers, np.float32)
    ranks = np.zeros((rankers.shape[0], queries.num_documents), np.int64)
    order = np.zeros_like(ranks)
    for k, w in enumerate(rankers):
        for q in range(queries.num_queries):
            lo, hi = queries.offsets[q], queries.offsets[q + 1]
            with np.errstate(invalid="ignore"):
                scores = (queries.features[lo:hi].astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
            ranked = sorted(range(hi - lo), key=lambda m: (np.isnan(scores[m]), -np.nan_to_num(scores[m]), m))
            order[k, lo:hi] = ranked
            ranks[k, lo + np.asarray(ranked)] = np.arange(1, hi - lo + 1)
    return ranks, order


@pytest.mark.parametrize("settings", [dict(), dict(rankers_per_pass=2, docs_per_block=7),
                                      dict(rankers_per_pass=1, docs_per_block=1), "per-row sort"])
def test_rankings_equal_a_per_query_argsort(settings, monkeypatch):
    queries = _tied_queries(0, [5, 1, 9, 3, 12, 2, 7])
    rankers = np.concatenate([np.eye(4, dtype=np.float32), [[1.0, 0.5, 0.0, -2.0], [0.0, 0.0, 0.0, 0.0]]])
    if settings == "per-row sort":  # no room for the ranker in the key: one sort per ranker row
        monkeypatch.setattr(estimate_module, "_FLAT_KEY_BITS", 0)
        settings = dict(docs_per_block=16)
    tables = rankings(queries, rankers, **settings)
    ranks, order = _argsort_reference(queries, rankers)
    assert tables.ranks.dtype == jnp.int16 and tables.order.dtype == jnp.int16
    np.testing.assert_array_equal(np.asarray(tables.ranks), ranks)
    np.testing.assert_array_equal(np.asarray(tables.order), order)
    np.testing.assert_array_equal(np.asarray(tables.offsets), queries.offsets[:-1])
    np.testing.assert_array_equal(np.asarray(tables.num_docs), queries.lengths)
    np.testing.assert_array_equal(np.asarray(tables.labels), queries.labels)


def test_rankings_tie_signed_zeros_and_put_nan_last():
    features = np.array([[0.0], [-0.0], [np.nan], [1.0], [0.0], [-np.inf]], np.float32)
    queries = RaggedQueries(features, np.zeros(6, np.float32), np.array([0, 6]), np.arange(1))
    tables = rankings(queries, np.array([[1.0], [-1.0]], np.float32))
    # 1 first; the zeros (either sign) tie and keep file order; NaN after -inf.
    np.testing.assert_array_equal(np.asarray(tables.order), [[3, 0, 1, 4, 5, 2], [5, 0, 1, 4, 3, 2]])
    np.testing.assert_array_equal(np.asarray(tables.ranks), [[2, 3, 6, 1, 4, 5], [2, 3, 6, 5, 4, 1]])


def test_rankings_of_a_query_of_32768_documents_are_int32():
    assert rank_dtype(32767) == np.int16 and rank_dtype(32768) == np.int32
    n = 40_000
    scores = np.random.default_rng(1).integers(0, 50, size=n).astype(np.float32)
    queries = RaggedQueries(scores[:, None], np.zeros(n, np.float32), np.array([0, 3, n]), np.arange(2))
    tables = rankings(queries, np.ones((1, 1), np.float32))
    assert tables.order.dtype == jnp.int32
    expected = np.lexsort((np.arange(n - 3), -scores[3:]))  # lexsort: the last key is the primary one
    np.testing.assert_array_equal(np.asarray(tables.order[0, 3:]), expected)
    np.testing.assert_array_equal(np.asarray(tables.ranks[0, 3 + expected]), np.arange(1, n - 2))


def test_rankings_accept_a_query_batch(dense, queries):
    rankers = np.eye(5, dtype=np.float32)
    for a, b in zip(rankings(dense, rankers), rankings(queries, rankers)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match=r"rankers must be \[K, D\] with D = 5"):
        rankings(queries, np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match="docs_per_block must be an int in"):
        rankings(queries, rankers, docs_per_block=1 << 17)


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
    """Scores of two rankers on one padded query with ties (integer-valued scores), and their rankings."""
    key_1, key_2 = jax.random.split(jax.random.key(seed))
    where = jnp.arange(size) < num_docs
    s1 = jax.random.randint(key_1, (size,), 0, 4).astype(jnp.float32)
    s2 = jax.random.randint(key_2, (size,), 0, 4).astype(jnp.float32)
    features = jnp.stack([s1, s2], -1)[None]  # [1, N, 2]
    batch = QueryBatch(features, jnp.zeros((1, size)), where[None], jnp.zeros(1, jnp.int32))
    return s1, s2, where, rankings(batch, np.eye(2, dtype=np.float32))


def _table_rankings(tables, weights=None):
    return tables.query(jnp.array([0, 1]), 0, weights)


@jax.jit
def _team_draft_ref(keys, s1, s2, where):
    return jax.vmap(lambda k: team_draft_interleave(k, s1, s2, where, list_size=4))(keys)


@jax.jit
def _team_draft_ranked(keys, table_rankings):
    return jax.vmap(lambda k: team_draft_interleave_rankings(k, table_rankings, list_size=4))(keys)


def test_team_draft_on_tables_equals_clicks_team_draft():
    """Same key, same coins: the rank-space list is the padded query's list, document for document."""
    for seed in range(3):
        s1, s2, where, tables = _one_query(seed)
        keys = jax.random.split(jax.random.key(seed), 50)
        ref = _team_draft_ref(keys, s1, s2, where)
        got = _team_draft_ranked(keys, _table_rankings(tables))
        for a, b in zip(ref, got):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_probabilistic_on_tables_has_the_distribution_of_clicks_probabilistic_interleave():
    """The tables draw in rank order, the padded query in document order: the same law, other lists."""
    s1, s2, where, tables = _one_query(3)
    keys = jax.random.split(jax.random.key(5), 20_000)
    ref = jax.jit(jax.vmap(lambda k: probabilistic_interleave(k, s1, s2, where, list_size=3, tau=TAU)))(keys)
    table = rank_weights_table(6, TAU)  # the longest query's length
    got = jax.jit(jax.vmap(lambda k: probabilistic_interleave_rankings(k, _table_rankings(tables, table),
                                                                       list_size=3)))(keys)
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


def _estimate(queries, chunk_size=64, method="probabilistic", num=400, seed=0, **options):
    return estimate_wins(jax.random.key(seed), queries, single_feature_rankers([1, 3, 5], 5), cascade_model("perfect", 5),
                         method, num, chunk_size=chunk_size, verbose=False, **options)


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
    # Chunks of 7 comparisons per pair (the last one partial) in calls of 3 chunks (the last call
    # padded) give identical counts; the same key repeats exactly.
    np.testing.assert_array_equal(_estimate(queries, chunk_size=21, comparisons_per_call=63).wins, est.wins)
    pref, counts = estimate_preference_matrix(jax.random.key(1), queries, single_feature_rankers([1, 3, 5], 5),
                                              cascade_model("perfect", 5), "probabilistic", 400, chunk_size=64,
                                              verbose=False)
    np.testing.assert_array_equal(counts, est.counts)
    assert not np.array_equal(pref, p)  # another key, other comparisons


def test_estimate_of_a_query_batch_is_the_estimate_of_its_ragged_queries(dense, queries):
    np.testing.assert_array_equal(_estimate(dense, chunk_size=64).wins, _estimate(queries, chunk_size=64).wins)


def _reference_case(queries, ids, method, num, seed, list_size=10):
    """Every comparison of the estimate and of the plain-Python reference on the same draws.

    Returns ``(est, got, want)``: ``estimate_wins``, and per comparison ``(first_won, outcome)``
    from ``interleaved_duel`` on the rank tables and from ``ref.comparison``, ``[pairs, num]``.
    """
    rankers = single_feature_rankers(ids, queries.num_features)
    model = cascade_model("perfect", 5)
    key = jax.random.key(seed)
    est = estimate_wins(key, queries, rankers, model, method, num, list_size=list_size, chunk_size=256, verbose=False)
    tables = rankings(queries, rankers)
    weights = rank_weights_table(queries.list_size, TAU)
    pairs = np.stack(np.triu_indices(len(ids), 1), -1)

    def one(i, j, c):  # comparison c of pair (i, j) and the uniforms it consumed
        key_c = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(key, i), j), c)
        won, outcome = interleaved_duel(
            key_c, tables.num_docs.shape[0],
            lambda q: (tables.query(jnp.stack([i, j]), q, weights), tables.labels, tables.offsets[q]),
            model, method=method, list_size=list_size)
        key_query, key_list, key_clicks, key_tie = jax.random.split(key_c, 4)
        shape = (list_size, 2) if method == "probabilistic" else (list_size,)
        draws = dict(q=jax.random.randint(key_query, (), 0, tables.num_docs.shape[0]),
                     list_u=jax.random.uniform(key_list, shape), clicks_u=jax.random.uniform(key_clicks, (2, list_size)),
                     u_tie=jax.random.uniform(key_tie))
        return won, outcome, draws

    c = jnp.arange(num)
    won, outcome, draws = jax.jit(jax.vmap(lambda ij: jax.vmap(lambda c: one(ij[0], ij[1], c))(c)))(jnp.asarray(pairs))
    won, outcome = np.asarray(won), np.asarray(outcome)
    draws = jax.tree.map(lambda x: np.asarray(x, np.float64), draws)
    features = np.asarray(queries.features, np.float64)
    want = np.zeros((len(pairs), num, 2))
    for p, (i, j) in enumerate(pairs):
        for n in range(num):
            q = int(draws["q"][p, n])
            lo, hi = queries.offsets[q], queries.offsets[q + 1]
            scores = [features[lo:hi, ids[k] - 1].tolist() for k in (i, j)]
            grades = [int(g) for g in queries.labels[lo:hi]]
            one_draws = dict(list_u=draws["list_u"][p, n].tolist(), u_click=draws["clicks_u"][p, n, 0],
                             u_stop=draws["clicks_u"][p, n, 1], u_tie=draws["u_tie"][p, n])
            _, want[p, n, 1], want[p, n, 0] = ref.comparison(one_draws, *scores, grades, np.asarray(model.click_prob),
                                                             np.asarray(model.stop_prob), method, list_size, TAU)
    return est, np.stack([won, outcome], -1), want


def _assert_agrees_with_reference(est, got, want):
    """Outcomes within f32 rounding, the same winners, and the estimate counts exactly these comparisons."""
    # The same lists and clicks: the outcomes differ only by f32 rounding of the posteriors and the DP.
    np.testing.assert_allclose(got[..., 1], want[..., 1], atol=1e-4)
    clear = np.abs(want[..., 1]) > 1e-4  # elsewhere a rounding can cross the tie tolerance
    np.testing.assert_array_equal(got[..., 0][clear], want[..., 0][clear])
    assert clear.sum() >= 50 and (~clear).sum() > 0  # both kinds of comparison happen
    i, j = np.triu_indices(est.pref.shape[0], 1)
    np.testing.assert_array_equal(est.wins[i, j], got[..., 0].sum(-1))
    np.testing.assert_array_equal(est.ties[i, j], (got[..., 1] == 0.0).sum(-1))
    wins = want[..., 0].sum(-1)
    assert np.abs(est.wins[i, j] - wins).max() <= max(1, int(0.01 * got.shape[1]))
    ref_pref = ref.preference_matrix({(a, b): want[p, :, 0] for p, (a, b) in enumerate(zip(i, j))})
    np.testing.assert_allclose(est.pref, ref_pref, atol=0.01)


@pytest.mark.parametrize("method", ["probabilistic", "team_draft"])
def test_estimate_equals_the_reference_on_tied_queries(method):
    """Queries of 1..13 documents with many ties: list by list, click by click, the paper's protocol."""
    queries = _tied_queries(2, [5, 1, 9, 3, 13, 2, 7, 11])
    queries = queries._replace(features=np.nan_to_num(queries.features, nan=1.0, neginf=-1.0))  # ties, no NaN
    _assert_agrees_with_reference(*_reference_case(queries, [1, 2, 3, 4], method, num=150, seed=11))


@pytest.mark.parametrize("method", ["probabilistic", "team_draft"])
def test_estimate_equals_the_reference_on_a_letor_file(method):
    """4 MQ2008 queries of 5..9 documents, grades 0..2, the RCS paper's first three feature rankers."""
    queries = data.load_queries(SAMPLE_DATA / "MQ2008-mini" / "Fold1" / "train.txt.gz", layout="ragged")
    _assert_agrees_with_reference(*_reference_case(queries, [1, 10, 11], method, num=200, seed=4, list_size=5))


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
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="num_comparisons must be an int >= 1; got 0"):
        estimate_preference_matrix(key, queries, rankers, model, "probabilistic", 0)
    with pytest.raises(ValueError, match="need at least 2 rankers"):
        estimate_preference_matrix(key, queries, rankers[:1], model, "probabilistic", 10)
    with pytest.raises(ValueError, match="list_size must be an int >= 1; got -1"):
        estimate_preference_matrix(key, queries, rankers, model, "probabilistic", 10, list_size=-1)
    with pytest.raises(ValueError, match=r"the queries have grade 3 but the click model has only 2 grades"):
        estimate_preference_matrix(key, queries, rankers, cascade_model("perfect", 2), "probabilistic", 10)
    with pytest.raises(ValueError, match=r"rankers must be \[K, D\] with D = 5"):
        estimate_preference_matrix(key, queries, np.eye(4), model, "probabilistic", 10)
    with pytest.raises(ValueError, match="chunk_size must be an int >= 1; got 0"):
        estimate_preference_matrix(key, queries, rankers, model, "probabilistic", 10, chunk_size=0)


@pytest.mark.slow
def test_a_killed_estimate_resumes_with_the_same_counts(queries, tmp_path, monkeypatch):
    full = _estimate(queries, chunk_size=30, comparisons_per_call=60)  # 10 per pair per chunk, 2 chunks per call
    checkpoint = lanes.Checkpoint(tmp_path, "estimate", {})
    with killed_after_checkpoints(monkeypatch, 3) as written:
        _estimate(queries, chunk_size=30, comparisons_per_call=60, checkpoint=checkpoint)
    assert [h["next_call"] for _, h in written] == [1, 2, 3] and len(list(tmp_path.glob("estimate-*.npz"))) == 1
    resumed = _estimate(queries, chunk_size=30, comparisons_per_call=60, checkpoint=checkpoint)
    np.testing.assert_array_equal(resumed.wins, full.wins)
    np.testing.assert_array_equal(resumed.ties, full.ties)


_DEVICES_CHILD = """
import sys
import jax
import numpy as np
from jaxrank import data, lanes
from jaxrank.clicks import cascade_model
from jaxrank.envs.estimate import estimate_wins
from jaxrank.envs.ranker_duel import single_feature_rankers

queries = data.as_ragged(data.synthetic_queries(jax.random.key(0), num_queries=8, list_size=8, num_features=5,
                                                num_informative=2, num_grades=5, noise=0.1))
out = {}
for count in (1, 2, 4):
    est = estimate_wins(jax.random.key(3), queries, single_feature_rankers([1, 2, 3, 5], 5), cascade_model("perfect", 5),
                        "probabilistic", 90, chunk_size=60, comparisons_per_call=120,
                        mesh=lanes.lane_mesh(jax.devices()[:count]), verbose=False)
    out[f"{count}/wins"], out[f"{count}/ties"] = est.wins, est.ties
np.savez(sys.argv[1], **out)
"""


def test_the_estimate_gives_the_same_counts_on_1_2_and_4_devices(tmp_path):
    """6 pairs on 4 devices (2 padding lanes) and on 2: the lanes never depend on the mesh."""
    env = child_env(4, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "counts.npz"
    done = subprocess.run([sys.executable, "-c", _DEVICES_CHILD, str(out)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out) as counts:
        for name in ("wins", "ties"):
            assert counts[f"1/{name}"].sum() > 0
            for count in (2, 4):
                np.testing.assert_array_equal(counts[f"{count}/{name}"], counts[f"1/{name}"], err_msg=name)
