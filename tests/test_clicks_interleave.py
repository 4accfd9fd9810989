"""Tests for ``jaxrank.clicks.interleave``: probabilistic, team-draft and balanced interleaving.

References: ``tests/reference/interleaving.py`` (plain Python from the papers, no shared code).
Random cases use ``N = 8`` documents with tied integer scores and padding anywhere in the list,
1..8 of them real, and ``L = 5`` slots: lists with fewer and with more real documents than slots.
Every batched call has ``B = 64`` queries so the few compiled programs are shared across tests
(compiles dominate the runtime on a 2-core CPU).
"""

import functools
import random

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from absl.testing import parameterized
from scipy import stats
from tests.reference import interleaving as ref

from jaxrank import clicks

NUM_DOCS = 8
LIST_SIZE = 5
BATCH = 64
Z = 4.5


# ------------------------------------------------------------------------------------------
# Helpers: jitted batched versions (module level so compiles are shared across tests)
# ------------------------------------------------------------------------------------------


def _batch(name: str):
    fn = getattr(clicks, name)
    if name == "probabilistic_interleave":
        single = lambda k, a, b, w, tau: fn(k, a, b, w, list_size=LIST_SIZE, tau=tau)  # noqa: E731
        return jax.jit(jax.vmap(single, in_axes=(0, 0, 0, 0, None)))
    return jax.jit(jax.vmap(functools.partial(fn, list_size=LIST_SIZE)))


_BATCHED = {name: _batch(name)
            for name in ("probabilistic_interleave", "team_draft_interleave", "balanced_interleave")}


def _run(name, keys, s1, s2, where, tau=3.0):
    """``[B, ...]`` outputs of interleaver ``name`` with ``L = 5``, in chunks of ``BATCH`` queries."""
    s1, s2, where = (np.broadcast_to(x, (len(keys), NUM_DOCS)) for x in (s1, s2, where))
    chunks = []
    for start in range(0, len(keys), BATCH):
        part = slice(start, start + BATCH)
        assert len(keys[part]) == BATCH, "use a multiple of BATCH"
        args = (keys[part], jnp.asarray(s1[part], jnp.float32), jnp.asarray(s2[part], jnp.float32),
                jnp.asarray(where[part]))
        if name == "probabilistic_interleave":
            args += (jnp.asarray(tau, jnp.float32),)
        chunks.append(_BATCHED[name](*args))
    return tuple(np.concatenate(x) for x in zip(*chunks))


def _random_queries(seed, num, num_docs=NUM_DOCS):
    """Tied integer scores, padding anywhere, 1..N real documents (scores on padding are junk)."""
    rng = np.random.default_rng(seed)
    s1 = rng.integers(0, 4, (num, num_docs)).astype(np.float32)
    s2 = rng.integers(0, 4, (num, num_docs)).astype(np.float32)
    where = np.zeros((num, num_docs), bool)
    for i in range(num):
        where[i, rng.choice(num_docs, rng.integers(1, num_docs + 1), replace=False)] = True
    return s1, s2, where


def _real(s, w):
    """Reference view of one query: real documents' scores and the map reference doc -> our index."""
    idx = np.flatnonzero(w)
    return [float(x) for x in s[idx]], idx


def _keys(seed, num):
    return jax.random.split(jax.random.key(seed), num)


def _sign(x, tol=1e-6):
    x = np.asarray(x, np.float64)
    return np.where(np.abs(x) < tol, 0, np.sign(x)).astype(int)


def _check_list_basics(docs, shown, where, list_size):
    """Shared invariants: prefix of min(L, n) shown real documents, each at most once, -1 after."""
    num_shown = min(list_size, int(where.sum()))
    assert shown.tolist() == [True] * num_shown + [False] * (list_size - num_shown)
    assert (docs[~shown] == -1).all()
    shown_docs = docs[shown]
    assert len(set(shown_docs.tolist())) == num_shown, f"repeated document in {docs}"
    assert where[shown_docs].all(), f"padding shown: {docs} with mask {where}"


# ------------------------------------------------------------------------------------------
# Probabilistic interleave: DP outcome
# ------------------------------------------------------------------------------------------

_outcome = jax.jit(jax.vmap(clicks.probabilistic_outcome))


def test_pi_outcome_dp_matches_brute_force_enumeration():
    """DP over the click difference == enumeration of all 2^L assignments (float64), L = 0..10.

    The cases are ``[10]`` and ``[5]`` vectors whose shown prefix has every length 0..L, so two
    compiles cover every effective L and check that unshown positions are ignored.
    """
    rng = np.random.default_rng(0)
    max_err = 0.0
    for list_size, num in ((10, BATCH), (LIST_SIZE, BATCH)):
        prob = rng.random((num, list_size))
        prob[rng.random(prob.shape) < 0.15] = 0.0  # exact 0, 1 and 1/2 posteriors happen
        prob[rng.random(prob.shape) < 0.15] = 1.0
        prob[rng.random(prob.shape) < 0.1] = 0.5
        clicked = rng.random((num, list_size)) < 0.6
        clicked[:4] = True  # every position clicked
        shown = np.arange(list_size)[None, :] < (np.arange(num) % (list_size + 1))[:, None]
        shown[:2] = True
        got = np.asarray(_outcome(jnp.asarray(prob, jnp.float32), jnp.asarray(clicked), jnp.asarray(shown)))
        for i in range(num):
            n = int(shown[i].sum())  # enumerate the 2^n assignments of the shown positions
            p32 = prob[i, :n].astype(np.float32).astype(np.float64)  # the DP saw float32 posteriors
            want = ref.outcome_by_enumeration(p32, clicked[i, :n])
            max_err = max(max_err, abs(float(got[i]) - want))
    print(f"PI outcome: DP vs brute force max abs error {max_err:.2e}")
    assert max_err <= 1e-6, max_err


def test_pi_outcome_simple_values():
    one = functools.partial(_outcome)
    p = jnp.array([[0.8, 0.3, 0.5]], jnp.float32)
    sh = jnp.ones((1, 3), bool)
    np.testing.assert_allclose(one(p, jnp.array([[False] * 3]), sh), [0.0])  # no click: tie
    np.testing.assert_allclose(one(p, jnp.array([[True, False, False]]), sh), [0.8 - 0.2], atol=1e-6)
    # Two clicks: o = +2 w.p. .8*.3, -2 w.p. .2*.7, 0 otherwise.
    np.testing.assert_allclose(one(p, jnp.array([[True, True, False]]), sh), [0.24 - 0.14], atol=1e-6)
    # A click on a position that is not shown does not count.
    np.testing.assert_allclose(one(p, jnp.array([[True, True, False]]), jnp.array([[True, False, False]])),
                               [0.6], atol=1e-6)


# ------------------------------------------------------------------------------------------
# Probabilistic interleave: list sampling
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tau", [3.0, 1.0])
def test_pi_lists_and_posteriors_match_reference(tau):
    num = 3 * BATCH
    s1, s2, where = _random_queries(1, num)
    docs, shown, prob = _run("probabilistic_interleave", _keys(2, num), s1, s2, where, tau)
    for i in range(num):
        _check_list_basics(docs[i], shown[i], where[i], LIST_SIZE)
        a, idx = _real(s1[i], where[i])
        b, _ = _real(s2[i], where[i])
        to_ref = {int(d): j for j, d in enumerate(idx)}
        ref_list = [to_ref[int(d)] for d in docs[i][shown[i]]]
        p_first, p_second = ref.posteriors_of_list(ref_list, a, b, tau)
        want = [y / (x + y) for x, y in zip(p_first, p_second)]
        np.testing.assert_allclose(prob[i][shown[i]], want, rtol=1e-5, atol=1e-6)
        assert (prob[i][~shown[i]] == 0.5).all()


def test_pi_first_position_distribution():
    """P(l_1 = d) = (P_1(d) + P_2(d)) / 2: χ² goodness of fit over 20,000 lists."""
    s1 = np.array([5, 3, 3, 1, 0, 2, 9, 4], np.float32)
    s2 = np.array([0, 1, 2, 3, 4, 5, 6, 7], np.float32)
    where = np.array([1, 1, 1, 1, 1, 0, 1, 1], bool)
    num = 313 * BATCH  # 20,032
    docs, _, _ = _run("probabilistic_interleave", _keys(3, num), s1, s2, where)
    a, idx = _real(s1, where)
    b, _ = _real(s2, where)
    everything = set(range(len(idx)))
    p1 = ref.softmax_over_remaining(ref.ranking(a), everything, 3.0)
    p2 = ref.softmax_over_remaining(ref.ranking(b), everything, 3.0)
    expected = np.array([(p1[j] + p2[j]) / 2 for j in range(len(idx))])
    observed = np.array([(docs[:, 0] == d).sum() for d in idx])
    assert observed.sum() == num
    assert stats.chisquare(observed, expected * num).pvalue > 1e-3


def test_pi_more_peaked_with_larger_tau_and_tau_traced():
    s1, s2, where = _random_queries(4, 1)
    where[:] = True
    keys = _keys(5, 40 * BATCH)
    top_first = int(np.argmax(np.where(where[0], s1[0], -np.inf)))
    top_second = int(np.argmax(np.where(where[0], s2[0], -np.inf)))
    hits = []
    for tau in (0.5, 3.0, 8.0):  # traced f32: one compile for all three
        docs, _, _ = _run("probabilistic_interleave", keys, s1[0], s2[0], where[0], tau)
        hits.append(np.isin(docs[:, 0], [top_first, top_second]).mean())
    assert hits[0] < hits[1] < hits[2]


# ------------------------------------------------------------------------------------------
# Full PI comparison vs the independent Python implementation (distribution of the sign)
# ------------------------------------------------------------------------------------------


_cascade = jax.jit(jax.vmap(clicks.cascade_clicks, in_axes=(0, 0, 0, None)))


@functools.partial(jax.jit, static_argnames="list_size")
def _pi_comparisons(keys, s1, s2, labels, where, model, list_size):
    """One fused program: ``[B]`` outcomes of full comparisons (list, cascade clicks, outcome)."""

    def one(key):
        key_list, key_click = jax.random.split(key)
        docs, shown, prob = clicks.probabilistic_interleave(key_list, s1, s2, where, list_size=list_size)
        click = clicks.cascade_clicks(key_click, labels[jnp.maximum(docs, 0)], shown, model)
        return clicks.probabilistic_outcome(prob, click, shown)

    return jax.vmap(one)(keys)


def _pi_comparisons_from_parts(keys, s1, s2, labels, where, model):
    """The same comparisons with ``L = 5`` from the programs the other tests already compiled."""
    key_lists, key_clicks = jax.vmap(jax.random.split, out_axes=1)(keys)
    docs, shown, prob = _run("probabilistic_interleave", key_lists, s1, s2, where)
    outcomes = []
    for start in range(0, len(keys), BATCH):
        part = slice(start, start + BATCH)
        click = _cascade(key_clicks[part], jnp.asarray(labels[np.maximum(docs[part], 0)]), jnp.asarray(shown[part]),
                         model)
        outcomes.append(_outcome(jnp.asarray(prob[part]), click, jnp.asarray(shown[part])))
    return np.concatenate(outcomes)


def _compare_sign_distributions(s1, s2, labels, where, num, seed, list_size):
    """χ² homogeneity test of the {-1, 0, +1} frequencies of ``num`` JAX and ``num`` reference comparisons."""
    model = clicks.cascade_model("perfect", 5)
    if list_size == LIST_SIZE:
        got = _pi_comparisons_from_parts(_keys(seed, num), s1, s2, labels, where, model)
    else:
        got = _pi_comparisons(_keys(seed, num), jnp.asarray(s1), jnp.asarray(s2), jnp.asarray(labels),
                              jnp.asarray(where), model, list_size=list_size)
    got = _sign(got)
    a, idx = _real(s1, where)
    b, _ = _real(s2, where)
    grades = [int(g) for g in labels[idx]]
    rng = random.Random(seed)
    click_prob, stop_prob = [0.0, 0.2, 0.4, 0.8, 1.0], [0.0] * 5
    want = _sign([ref.probabilistic_comparison(rng, a, b, grades, click_prob, stop_prob, list_size, 3.0)
                  for _ in range(num)])
    table = np.array([[(got == v).sum() for v in (-1, 0, 1)], [(want == v).sum() for v in (-1, 0, 1)]])
    p_value = stats.chi2_contingency(table[:, table.sum(0) > 0]).pvalue
    return table, p_value


def test_pi_comparison_agrees_with_reference_synthetic():
    s1 = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.0], np.float32)
    s2 = np.array([0.2, 0.8, 0.6, 0.1, 0.9, 0.0, 0.3, 0.4], np.float32)
    labels = np.array([1, 4, 2, 0, 3, 0, 1, 2], np.float32)
    where = np.ones(NUM_DOCS, bool)
    table, p_value = _compare_sign_distributions(s1, s2, labels, where, 47 * BATCH, seed=7, list_size=LIST_SIZE)
    assert table[0, 2] > table[0, 0]  # ranker 2 puts the grade-4 document higher: it should win more
    assert p_value > 1e-3, (table, p_value)


@pytest.mark.slow
def test_pi_comparison_agrees_with_reference_mslr(shared_data):
    from jaxrank.data import load_queries

    path = shared_data / "MSLR-WEB_Fold1_subset" / "msn1.fold1.train.5k.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} missing")
    queries = load_queries(path, layout="dense")
    mask, labels, features = map(np.asarray, (queries.mask, queries.labels, queries.features))
    # First query with 30..90 documents and every grade 0..4 present; rankers: features 10 and 129.
    q = next(i for i in range(len(mask)) if 30 <= mask[i].sum() <= 90
             and len(np.unique(labels[i][mask[i]])) == 5)
    s1, s2 = features[q, :, 10], features[q, :, 129]
    table, p_value = _compare_sign_distributions(s1, s2, labels[q], mask[q], 20_000, seed=8, list_size=10)
    print(f"MSLR query {q} ({mask[q].sum()} docs): JAX/ref sign counts (-1, 0, +1) {table.tolist()}, p={p_value:.3g}")
    assert p_value > 1e-3, (table, p_value)


# ------------------------------------------------------------------------------------------
# Team-draft
# ------------------------------------------------------------------------------------------


def test_team_draft_invariants():
    num, list_size = 4 * BATCH, LIST_SIZE
    s1, s2, where = _random_queries(10, num)
    docs, shown, team = _run("team_draft_interleave", _keys(11, num), s1, s2, where)
    ties = ties_to_second = 0
    for i in range(num):
        _check_list_basics(docs[i], shown[i], where[i], list_size)
        assert (team[i][~shown[i]] == 0).all() and np.isin(team[i][shown[i]], [1, 2]).all()
        a, idx = _real(s1[i], where[i])
        b, _ = _real(s2[i], where[i])
        rankings = {1: [idx[j] for j in ref.ranking(a)], 2: [idx[j] for j in ref.ranking(b)]}
        sizes = {1: 0, 2: 0}
        for n in np.flatnonzero(shown[i]):
            picker = int(team[i][n])
            if sizes[1] == sizes[2]:
                ties += 1
                ties_to_second += picker == 2
            else:  # the smaller team picks
                assert sizes[picker] < sizes[3 - picker], (docs[i], team[i])
            # the picker appends its best-ranked document not yet in the list
            taken = set(docs[i][:n].tolist())
            assert docs[i][n] == next(d for d in rankings[picker] if d not in taken), (docs[i], team[i])
            sizes[picker] += 1
            assert abs(sizes[1] - sizes[2]) <= 1
    trials = ties
    assert abs(ties_to_second / trials - 0.5) <= Z * np.sqrt(0.25 / trials), (ties_to_second, trials)


def test_team_draft_outcome_matches_reference():
    rng = np.random.default_rng(12)
    team = rng.integers(0, 3, (BATCH, LIST_SIZE))
    clicked = rng.random((BATCH, LIST_SIZE)) < 0.4
    shown = team > 0
    got = np.asarray(jax.jit(jax.vmap(clicks.team_draft_outcome))(jnp.asarray(team), jnp.asarray(clicked),
                                                                    jnp.asarray(shown)))
    want = [ref.team_draft_outcome(t[s].tolist(), c[s].tolist()) for t, c, s in zip(team, clicked, shown)]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.float32 and set(np.unique(got)) <= {-1.0, 0.0, 1.0}


# ------------------------------------------------------------------------------------------
# Balanced
# ------------------------------------------------------------------------------------------


def test_balanced_matches_reference_and_invariants():
    num, list_size = 4 * BATCH, LIST_SIZE
    s1, s2, where = _random_queries(20, num)
    docs, shown, rank1, rank2 = _run("balanced_interleave", _keys(21, num), s1, s2, where)
    leads = decided = 0
    for i in range(num):
        _check_list_basics(docs[i], shown[i], where[i], list_size)
        a, idx = _real(s1[i], where[i])
        b, _ = _real(s2[i], where[i])
        got = docs[i][shown[i]].tolist()
        options = {lead: [int(idx[j]) for j in ref.balanced(lead, a, b, list_size)] for lead in (False, True)}
        assert got in options.values(), (got, options)
        if options[False] != options[True]:
            decided += 1
            leads += got == options[True]
        # ranks of the shown documents in each ranker (1-based)
        r1 = {int(idx[j]): r + 1 for r, j in enumerate(ref.ranking(a))}
        r2 = {int(idx[j]): r + 1 for r, j in enumerate(ref.ranking(b))}
        assert rank1[i][shown[i]].tolist() == [r1[d] for d in got]
        assert rank2[i][shown[i]].tolist() == [r2[d] for d in got]
        assert (rank1[i][~shown[i]] == 0).all() and (rank2[i][~shown[i]] == 0).all()
        # every prefix is top-ka(A) ∪ top-kb(B) with |ka - kb| <= 1 for some ka, kb
        order1, order2 = [int(idx[j]) for j in ref.ranking(a)], [int(idx[j]) for j in ref.ranking(b)]
        for n in range(1, len(got) + 1):
            prefix = set(got[:n])
            assert any(prefix == set(order1[:ka]) | set(order2[:kb])
                       for ka in range(n + 1) for kb in (ka - 1, ka, ka + 1) if 0 <= kb <= n), (got, n)
    assert decided > 50 and abs(leads / decided - 0.5) <= Z * np.sqrt(0.25 / decided)


def test_balanced_outcome_matches_reference():
    num = BATCH
    s1, s2, where = _random_queries(30, num)
    docs, shown, rank1, rank2 = _run("balanced_interleave", _keys(31, num), s1, s2, where)
    clicked = np.random.default_rng(32).random((num, LIST_SIZE)) < 0.35
    got = np.asarray(jax.jit(jax.vmap(clicks.balanced_outcome))(rank1, rank2, jnp.asarray(clicked), shown))
    for i in range(num):
        a, idx = _real(s1[i], where[i])
        b, _ = _real(s2[i], where[i])
        to_ref = {int(d): j for j, d in enumerate(idx)}
        ref_list = [to_ref[int(d)] for d in docs[i][shown[i]]]
        want = ref.balanced_outcome(ref_list, clicked[i][shown[i]].tolist(), a, b)
        assert got[i] == want, (i, docs[i], clicked[i])


def test_balanced_outcome_hand_example():
    # A = (d1, d2, d3, d4), B = (d2, d3, d1, d4); list (d1, d2, d3, d4); clicks on d2 and d3.
    # Lowest click d3: k = min(3, 2) = 2; A's top 2 {d1, d2} has 1 click, B's top 2 {d2, d3} has 2: B wins.
    rank_first = jnp.array([1, 2, 3, 4])
    rank_second = jnp.array([3, 1, 2, 4])
    clicked = jnp.array([False, True, True, False])
    assert float(clicks.balanced_outcome(rank_first, rank_second, clicked, jnp.ones(4, bool))) == 1.0
    assert float(clicks.balanced_outcome(rank_second, rank_first, clicked, jnp.ones(4, bool))) == -1.0
    assert float(clicks.balanced_outcome(rank_first, rank_second, jnp.zeros(4, bool), jnp.ones(4, bool))) == 0.0


# ------------------------------------------------------------------------------------------
# Shared: validation, edge cases, jit/nojit, vmap vs loop, keys
# ------------------------------------------------------------------------------------------

INTERLEAVERS = ("probabilistic_interleave", "team_draft_interleave", "balanced_interleave")


@pytest.mark.parametrize("name", INTERLEAVERS)
@pytest.mark.parametrize("list_size", [0, -1, 2.5, True, None])
def test_bad_list_size(name, list_size):
    s = jnp.zeros(4)
    with pytest.raises(ValueError, match="list_size must be an int >= 1"):
        getattr(clicks, name)(jax.random.key(0), s, s, jnp.ones(4, bool), list_size=list_size)


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan"), [1.0, 2.0]])
def test_bad_tau(tau):
    s = jnp.zeros(4)
    with pytest.raises(ValueError, match="tau must be a positive scalar"):
        clicks.probabilistic_interleave(jax.random.key(0), s, s, jnp.ones(4, bool), tau=tau)


def test_tau_too_large_for_float32():
    s = jnp.zeros(4)
    clicks.probabilistic_interleave(jax.random.key(0), s, s, jnp.ones(4, bool), list_size=10, tau=17.0)  # fine
    with pytest.raises(ValueError, match=r"tau = 18.0 is too large.*tau <= 17.4"):
        clicks.probabilistic_interleave(jax.random.key(0), s, s, jnp.ones(4, bool), list_size=10, tau=18.0)


def test_from_ranks_matches_scores():
    s1, s2, where = _random_queries(70, BATCH)
    keys = _keys(71, BATCH)
    want = _run("probabilistic_interleave", keys, s1, s2, where)
    ranks = jax.vmap(clicks.score_ranks)
    r1, r2 = ranks(jnp.asarray(s1), jnp.asarray(where)), ranks(jnp.asarray(s2), jnp.asarray(where))
    for i in range(8):  # real documents get ranks 1..n in the reference ranking's order
        a, idx = _real(s1[i], where[i])
        assert [int(r1[i][idx[j]]) for j in ref.ranking(a)] == list(range(1, len(a) + 1))
    got = jax.jit(jax.vmap(functools.partial(clicks.probabilistic_interleave_from_ranks, list_size=LIST_SIZE)))(
        keys, r1, r2, jnp.asarray(where))
    chex.assert_trees_all_equal(tuple(np.asarray(x) for x in got), want)


@pytest.mark.parametrize("name", INTERLEAVERS)
def test_bad_shapes(name):
    with pytest.raises(ValueError, match=r"must all be \[N\]"):
        getattr(clicks, name)(jax.random.key(0), jnp.zeros(4), jnp.zeros(5), jnp.ones(4, bool))
    with pytest.raises(ValueError, match=r"must all be \[N\]"):
        getattr(clicks, name)(jax.random.key(0), jnp.zeros((2, 4)), jnp.zeros((2, 4)), jnp.ones((2, 4), bool))


@pytest.mark.parametrize("name", INTERLEAVERS)
def test_all_masked_query_shows_nothing(name):
    s1, s2, where = _random_queries(40, BATCH)
    where[:] = False
    out = _run(name, _keys(41, BATCH), s1, s2, where)
    docs, shown = out[0], out[1]
    assert not shown.any() and (docs == -1).all()
    no_clicks = jnp.zeros((BATCH, LIST_SIZE), bool)
    if name == "probabilistic_interleave":
        all_clicks = jnp.ones((BATCH, LIST_SIZE), bool)
        np.testing.assert_array_equal(_outcome(jnp.asarray(out[2]), all_clicks, jnp.asarray(shown)), 0.0)
    elif name == "team_draft_interleave":
        assert (out[2] == 0).all()
        assert float(clicks.team_draft_outcome(jnp.asarray(out[2][0]), no_clicks[0], shown[0])) == 0.0


class InterleaveVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    @parameterized.named_parameters(*[(n, n) for n in INTERLEAVERS])
    def test_jit_matches_nojit_and_vmap_matches_loop(self, name):
        s1, s2, where = _random_queries(50, BATCH)
        keys = _keys(51, BATCH)
        batched = _run(name, keys, s1, s2, where)
        fn = self.variant(functools.partial(getattr(clicks, name), list_size=LIST_SIZE))
        for i in range(0, 4, 2):
            single = fn(keys[i], jnp.asarray(s1[i]), jnp.asarray(s2[i]), jnp.asarray(where[i]))
            chex.assert_trees_all_close(jax.tree.map(np.asarray, tuple(single)), tuple(x[i] for x in batched))
        dtypes = [x.dtype for x in single]
        assert dtypes[0] == jnp.int32 and dtypes[1] == jnp.bool_
        assert dtypes[2] == (jnp.float32 if name == "probabilistic_interleave" else jnp.int32)

    @chex.variants(with_jit=True, without_jit=True)
    def test_outcomes_jit_matches_nojit(self):
        prob = jnp.array([0.9, 0.2, 0.6, 0.5, 0.1], jnp.float32)
        clicked = jnp.array([True, False, True, True, False])
        shown = jnp.array([True, True, True, True, False])
        np.testing.assert_allclose(self.variant(clicks.probabilistic_outcome)(prob, clicked, shown),
                                   ref.outcome_by_enumeration(np.asarray(prob, np.float64), [1, 0, 1, 1, 0]),
                                   atol=1e-6)
        team = jnp.array([1, 2, 2, 1, 0])
        assert float(self.variant(clicks.team_draft_outcome)(team, clicked, shown)) == -1.0  # 2 clicks vs 1
        ranks = jnp.array([1, 2, 3, 4, 0]), jnp.array([2, 1, 4, 3, 0])
        assert float(self.variant(clicks.balanced_outcome)(*ranks, clicked, shown)) == 0.0


@pytest.mark.parametrize("name", INTERLEAVERS)
def test_same_key_same_list_different_keys_differ(name):
    s1, s2, where = _random_queries(60, BATCH)
    where[:] = True
    a = _run(name, _keys(61, BATCH), s1, s2, where)
    b = _run(name, _keys(61, BATCH), s1, s2, where)
    c = _run(name, _keys(62, BATCH), s1, s2, where)
    chex.assert_trees_all_equal(a, b)
    assert (a[0] != c[0]).any()
