"""DBGD, MGD, PDGD and Pairwise against the NumPy reference on the same draws, Pairwise's first
impressions traced by hand, PDGD's unbiasedness on a brute-forced tiny case, the Plackett–Luce
display law, the grid on the lane runner (equal to single runs, resumable), and bad input refused
before any work."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import lanes, oltr
from jaxrank.clicks import cascade_model
from jaxrank.data import as_ragged, synthetic_queries
from jaxrank.types import QueryBatch, RankerInfo
from tests.conftest import killed_after_checkpoints
from tests.reference import oltr as ref

LENGTHS = (12, 7, 10, 3, 9)  # real documents per query: longer and shorter than the list of 10
L, D, K = 12, 5, 10  # padded documents per query, features, displayed positions
MODELS = ("perfect", "navigational", "informational")


def _queries(seed=0):
    rng = np.random.default_rng(seed)
    features = np.zeros((len(LENGTHS), L, D), np.float32)
    labels = np.zeros((len(LENGTHS), L), np.float32)
    mask = np.zeros((len(LENGTHS), L), bool)
    for q, n in enumerate(LENGTHS):
        features[q, :n] = rng.uniform(size=(n, D))
        labels[q, :n] = rng.integers(0, 3, size=n)
        mask[q, :n] = True
    return QueryBatch(features, labels, mask, np.arange(len(LENGTHS)))


def _replay(step_fn, draws_fn, key, batch, model_name, num_impressions, init_fn=None):
    """The reference loop on the draws ``simulate`` makes: ``(weights, discounted online NDCG)``;
    the weights start at ``init_fn(key_init)`` (default zero)."""
    click_prob, stop_prob = (np.asarray(v, np.float64) for v in cascade_model(model_name, 3))
    key_init, key_steps = jax.random.split(key)
    w, online = (np.zeros(D) if init_fn is None else init_fn(key_init)), 0.0
    for t in range(num_impressions):
        key_query, key_rank, key_click = jax.random.split(jax.random.fold_in(key_steps, t), 3)
        q = int(jax.random.randint(key_query, (), 0, len(LENGTHS)))
        n = LENGTHS[q]
        u_click, u_stop = np.asarray(jax.random.uniform(key_click, (2, K)), np.float64)
        draws = dict(u_click=u_click, u_stop=u_stop, **draws_fn(key_rank, n))
        features, labels = np.asarray(batch.features[q, :n], np.float64), batch.labels[q, :n].tolist()
        w, shown_labels = step_fn(w, features, labels, draws, (click_prob, stop_prob))
        online += oltr.ONLINE_DISCOUNT ** t * ref.displayed_ndcg(shown_labels, labels)
    return w, online


def _team_draft_draws(num_rankers):
    def draws(key_rank, n):
        key_dir, key_list = jax.random.split(key_rank)
        key_order, _ = jax.random.split(key_list)
        order_u = np.asarray(jax.random.uniform(key_order, (math.ceil(K / num_rankers), num_rankers)))
        return dict(normal=np.asarray(jax.random.normal(key_dir, (num_rankers - 1, D))), order_u=order_u)
    return draws


def _probabilistic_multileave_draws(num_rankers):
    team_draft = _team_draft_draws(num_rankers)

    def draws(key_rank, n):
        _, key_pick = jax.random.split(jax.random.split(key_rank)[1])
        return dict(team_draft(key_rank, n), pick_u=np.asarray(jax.random.uniform(key_pick, (K,))))
    return draws


def _probabilistic_draws(key_rank, n):
    key_dir, key_list = jax.random.split(key_rank)
    return dict(normal=np.asarray(jax.random.normal(key_dir, (1, D))),
                pi_u=np.asarray(jax.random.uniform(key_list, (K, 2))))


CASES = {  # (registry name, options, hyperparameters, reference step, reference draws)
    "pdgd": ("pdgd", {}, {"learning_rate": 0.1},
             lambda w, x, y, d, m: ref.pdgd_impression(w, x, y, d, m, learning_rate=0.1),
             lambda key_rank, n: dict(gumbel=np.asarray(jax.random.gumbel(key_rank, (L,)))[:n])),
    "dbgd_team_draft": ("dbgd", {"interleaving": "team_draft"}, {"learning_rate": 0.05, "delta": 1.0},
                        lambda w, x, y, d, m: ref.dbgd_impression(w, x, y, {**d, "normal": d["normal"][0]}, m,
                                                                  learning_rate=0.05, delta=1.0,
                                                                  interleaving="team_draft"),
                        _team_draft_draws(2)),
    "dbgd_probabilistic": ("dbgd", {"interleaving": "probabilistic"}, {"learning_rate": 0.05, "delta": 1.0},
                           lambda w, x, y, d, m: ref.dbgd_impression(w, x, y, {**d, "normal": d["normal"][0]}, m,
                                                                     learning_rate=0.05, delta=1.0,
                                                                     interleaving="probabilistic"),
                           _probabilistic_draws),
    "mgd_team_draft": ("mgd", {"num_candidates": 4, "multileaving": "team_draft"},
                       {"learning_rate": 0.05, "delta": 1.0},
                       lambda w, x, y, d, m: ref.mgd_impression(w, x, y, d, m, learning_rate=0.05, delta=1.0),
                       _team_draft_draws(5)),
    "mgd_probabilistic": ("mgd", {"num_candidates": 3, "multileaving": "probabilistic"},
                          {"learning_rate": 0.05, "delta": 1.0},
                          lambda w, x, y, d, m: ref.mgd_impression(w, x, y, d, m, learning_rate=0.05, delta=1.0,
                                                                   multileaving="probabilistic"),
                          _probabilistic_multileave_draws(4)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_learner_matches_numpy_reference(name):
    """100 impressions on the same draws: weights within 1e-5 and the same online NDCG."""
    algo, options, hparams, step, draws = CASES[name]
    ranker = oltr.RANKERS.build(algo, **options)
    batch = _queries()
    data = oltr.click_queries(batch)
    model_name = "navigational" if name != "pdgd" else "informational"
    key = jax.random.key(7)
    result = jax.jit(lambda k: oltr.simulate(k, ranker, data, data, cascade_model(model_name, 3),
                                             checkpoints=(0, 40, 100), hparams=hparams))(key)
    w_ref, online_ref = _replay(step, draws, key, batch, model_name, 100)
    assert np.abs(w_ref).max() > 1e-3  # it learned something
    np.testing.assert_allclose(np.asarray(result.params), w_ref, atol=1e-5)
    np.testing.assert_allclose(float(result.online[-1]), online_ref, rtol=1e-5)


def _pairwise_draws(key_rank, n):
    key_coin, key_explore = jax.random.split(key_rank)
    return dict(u_coin=np.asarray(jax.random.uniform(key_coin, (K,))),
                gumbel=np.asarray(jax.random.gumbel(key_explore, (L,)))[:n])


@pytest.mark.parametrize("exploit_order, model_name, epsilon", [
    ("descending", "informational", 0.5),
    ("ascending", "navigational", 0.8),
])
def test_pairwise_matches_numpy_reference(exploit_order, model_name, epsilon):
    """100 impressions on the same draws, with a decaying learning rate: weights within 1e-5 and the
    same online NDCG."""
    hparams = {"learning_rate": 0.05, "learning_rate_decay": 0.99, "epsilon": epsilon}
    ranker = oltr.RANKERS.build("pairwise", exploit_order=exploit_order)
    batch = _queries()
    data = oltr.click_queries(batch)
    key = jax.random.key(11)
    result = jax.jit(lambda k: oltr.simulate(k, ranker, data, data, cascade_model(model_name, 3),
                                             checkpoints=(0, 40, 100), hparams=hparams))(key)
    rate = [hparams["learning_rate"]]  # η of the reference, decayed after each update

    def step(w, x, y, d, m):
        w, shown_labels, rate[0] = ref.pairwise_impression(
            w, x, y, d, m, learning_rate=rate[0], learning_rate_decay=hparams["learning_rate_decay"],
            epsilon=np.float32(epsilon), exploit_order=exploit_order)  # ε compared in f32, as the ranker does
        return w, shown_labels

    w_ref, online_ref = _replay(step, _pairwise_draws, key, batch, model_name, 100)
    assert np.abs(w_ref).max() > 1e-3 and rate[0] < 0.9 * hparams["learning_rate"]  # it learned and decayed
    np.testing.assert_allclose(np.asarray(result.params), w_ref, atol=1e-5)
    np.testing.assert_allclose(float(result.online[-1]), online_ref, rtol=1e-5)


def test_pairwise_first_impressions_by_hand():
    """Two impressions of 4 documents traced by hand: the ε-greedy mix, the click-skip-above pairs
    (clicked ≻ unclicked above the last click and the first one after it) and the step with decay."""
    x = jnp.asarray([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]])
    where = jnp.ones(4, bool)
    ranker = oltr.RANKERS.build("pairwise", list_size=3)
    state = ranker.init(None, 2, learning_rate=0.1, learning_rate_decay=0.5)
    # Impression 1, w = 0: every score ties, the exploitative list is 0, 1, 2, 3; the random order of
    # the priorities is 1, 3, 0, 2. Exploit → 0; explore → 1; explore → 3 (1 is shown).
    docs, shown = oltr.pairwise.epsilon_greedy_display(ranker.score(ranker.params(state), x), where,
                                                       jnp.asarray([False, True, True]),
                                                       jnp.asarray([0.1, 2.0, -1.0, 0.7]))
    np.testing.assert_array_equal(docs, [0, 1, 3])
    # A click on position 1: doc 1 ≻ doc 0 (above) and doc 1 ≻ doc 3 (first after the last click).
    # Step 0.1 (2 x_1 − x_0 − x_3) = 0.1 ([0, 2] − [1, 0] − [0.5, 0]) = [−0.15, 0.2]; η → 0.05.
    state, info = ranker.update(state, x, where, docs, shown, jnp.asarray([False, True, False]), ())
    assert bool(info.updated) and int(state.t) == 1
    np.testing.assert_allclose(state.w, [-0.15, 0.2], atol=1e-6)
    np.testing.assert_allclose(state.learning_rate, 0.05, rtol=1e-7)
    # Impression 2: scores x·w = [−0.15, 0.2, 0.05, −0.075]: exploitative list 1, 2, 3, 0 (best first) or
    # 0, 3, 2, 1 (ascending, the authors' code); random order 2, 0, 3, 1. Explore → 2, then exploit twice.
    scores = ranker.score(ranker.params(state), x)
    np.testing.assert_allclose(scores, [-0.15, 0.2, 0.05, -0.075], atol=1e-6)
    mix, priorities = jnp.asarray([True, False, False]), jnp.asarray([0.3, -0.2, 0.9, 0.1])
    docs, shown = oltr.pairwise.epsilon_greedy_display(scores, where, mix, priorities)
    np.testing.assert_array_equal(docs, [2, 1, 3])  # 2; then 1; then 3 (1 and 2 are shown)
    ascending, _ = oltr.pairwise.epsilon_greedy_display(scores, where, mix, priorities, exploit_order="ascending")
    np.testing.assert_array_equal(ascending, [2, 0, 3])
    # Clicks on positions 0 and 2 (docs 2, 3): 2 ≻ 1 and 3 ≻ 1. Step 0.05 (x_2 + x_3 − 2 x_1) = 0.05 [1.5, −1].
    after, info = ranker.update(state, x, where, docs, shown, jnp.asarray([True, False, True]), ())
    assert bool(info.updated)
    np.testing.assert_allclose(after.w, [-0.075, 0.15], atol=1e-6)
    np.testing.assert_allclose(after.learning_rate, 0.025, rtol=1e-7)
    # The ascending list 2, 0, 3 with one click on top: 2 ≻ 0 only (3 is below the first unclicked after
    # the last click). Step 0.05 (x_2 − x_0) = [0, 0.05].
    after, _ = ranker.update(state, x, where, ascending, shown, jnp.asarray([True, False, False]), ())
    np.testing.assert_allclose(after.w, [-0.15, 0.25], atol=1e-6)
    # No click, or every position clicked: no pair, no step, η kept; the impression still counts.
    for clicks in ([False] * 3, [True] * 3):
        same, info = ranker.update(state, x, where, docs, shown, jnp.asarray(clicks), ())
        assert not bool(info.updated) and int(same.t) == 2
        np.testing.assert_array_equal(same.w, state.w)
        np.testing.assert_array_equal(same.learning_rate, state.learning_rate)
    # Two real documents and three positions: both shown, in the mix's order, then −1.
    docs, shown = oltr.pairwise.epsilon_greedy_display(scores, jnp.asarray([True, True, False, False]),
                                                       jnp.asarray([False, True, True]), priorities)
    np.testing.assert_array_equal(docs, [1, 0, -1])
    np.testing.assert_array_equal(shown, [True, True, False])


def _click_distribution(labels_shown, click_prob, stop_prob):
    """``{clicks tuple: probability}`` of the cascade model, enumerating click and stop events."""
    out = {}

    def walk(r, clicks, p, stopped):
        if r == len(labels_shown):
            out[tuple(clicks)] = out.get(tuple(clicks), 0.0) + p
            return
        g = labels_shown[r]
        if stopped:
            walk(r + 1, clicks + [False], p, True)
            return
        walk(r + 1, clicks + [False], p * (1 - click_prob[g]), False)
        walk(r + 1, clicks + [True], p * click_prob[g] * stop_prob[g], True)
        walk(r + 1, clicks + [True], p * click_prob[g] * (1 - stop_prob[g]), False)

    walk(0, [], 1.0, False)
    return out


@pytest.mark.parametrize("model_name", MODELS)
def test_pdgd_gradient_unbiased_on_brute_forced_case(model_name):
    """Oosterhuis & de Rijke 2018, §4.3: over every displayed top-3 of a 4-document PL ranking and
    every cascade click pattern, the expected PDGD gradient equals ``Σ_{k<l} α_kl ∇P(d_k ≻ d_l)``
    (checked against jaxrank's per-impression gradients), with ``α_kl > 0`` when ``d_k`` is more
    relevant than ``d_l`` and ``α_kl = 0`` for equally relevant documents (the pair-preference
    unbiasedness the paper proves)."""
    rng = np.random.default_rng(3)
    features = rng.normal(size=(4, 3))
    weights = rng.normal(size=3)
    labels = [2, 0, 1, 0]
    scores = features @ weights
    click_prob, stop_prob = (np.asarray(v, np.float64) for v in cascade_model(model_name, 3))
    alpha = np.zeros((4, 4))
    cases, probs = [], []
    for prefix in itertools.permutations(range(4), 3):
        p_rank = ref.pl_probability(list(prefix) + [d for d in range(4) if d not in prefix], scores, range(3))
        for clicks, p_click in _click_distribution([labels[d] for d in prefix], click_prob, stop_prob).items():
            p = p_rank * p_click
            for da, db, weight in ref.pdgd_pair_terms(scores, list(prefix), list(clicks)):
                fa, fb = scores[da], scores[db]
                rho = weight / (np.exp(fa) * np.exp(fb) / (np.exp(fa) + np.exp(fb)) ** 2)
                alpha[da, db] += p * rho
                alpha[db, da] -= p * rho
            cases.append((prefix, clicks))
            probs.append(p)
    np.testing.assert_allclose(sum(probs), 1.0, atol=1e-12)
    for k, l in itertools.combinations(range(4), 2):
        if labels[k] == labels[l]:
            assert abs(alpha[k, l]) < 1e-12, (k, l, alpha[k, l])
        else:
            assert np.sign(alpha[k, l]) == np.sign(labels[k] - labels[l]), (k, l, alpha[k, l])
    docs = jnp.asarray([list(c[0]) for c in cases], jnp.int32)
    clicks = jnp.asarray([list(c[1]) for c in cases], bool)
    x32 = jnp.asarray(features, jnp.float32)
    grads = jax.vmap(oltr.pdgd_gradient, in_axes=(None, None, None, 0, None, 0))(
        x32 @ jnp.asarray(weights, jnp.float32), x32, jnp.ones(4, bool), docs, jnp.ones(3, bool), clicks)
    expected = np.asarray(probs) @ np.asarray(grads, np.float64)
    by_pairs = sum(alpha[k, l] * np.exp(scores[k] + scores[l]) / (np.exp(scores[k]) + np.exp(scores[l])) ** 2
                   * (features[k] - features[l]) for k, l in itertools.combinations(range(4), 2))
    np.testing.assert_allclose(expected, by_pairs, atol=1e-6)


RANKERS = {  # every registered ranker with each comparison it offers, small enough for fast tests
    "pdgd": ("pdgd", {}),
    "dbgd_team_draft": ("dbgd", {"interleaving": "team_draft"}),
    "dbgd_probabilistic": ("dbgd", {}),
    "mgd_team_draft": ("mgd", {"num_candidates": 3, "multileaving": "team_draft"}),
    "mgd_probabilistic": ("mgd", {"num_candidates": 3}),
    "mgd_sampled": ("mgd", {"num_candidates": 3, "outcome_samples": 100}),
    "pairwise": ("pairwise", {}),
    "pairwise_ascending": ("pairwise", {"exploit_order": "ascending"}),
}


@pytest.mark.parametrize("name", list(RANKERS))
def test_short_query_shows_only_its_documents_and_reports_an_update(name):
    """A query with fewer documents than the list shows only its documents; ``update`` returns
    ``(state, RankerInfo)`` whose ``updated`` says whether ``w`` moved."""
    algo, options = RANKERS[name]
    ranker = oltr.RANKERS.build(algo, **options)
    batch = _queries()
    features, where = jnp.asarray(batch.features[3]), jnp.asarray(batch.mask[3])
    state = ranker.init(jax.random.key(0), D)
    docs, shown, aux = ranker.rank(jax.random.key(1), state, features, where)
    assert docs.shape == (K,) and int(shown.sum()) == 3 and set(np.asarray(docs[:3])) == {0, 1, 2}
    assert (np.asarray(docs[3:]) == -1).all()
    new, info = ranker.update(state, features, where, docs, shown, shown & (docs == docs[0]), aux)
    assert isinstance(info, RankerInfo)
    assert bool(info.updated) == (not np.array_equal(ranker.params(new), ranker.params(state)))
    np.testing.assert_array_equal(ranker.score(ranker.params(new), features), features @ new.w)


@pytest.mark.parametrize("algo", ["dbgd", "mgd"])
def test_sampled_outcomes_let_exact_ties_win(algo):
    """With δ = 0 every candidate ranks as ``w`` does, so the exact outcome is a tie and ``w`` stays;
    the authors' sampled estimate (``outcome_samples``) makes a tie a win about half the time."""
    batch = _queries()
    features, where = jnp.asarray(batch.features[0]), jnp.asarray(batch.mask[0])

    def moved(outcome_samples, key):
        ranker = oltr.RANKERS.build(algo, outcome_samples=outcome_samples)
        state = ranker.init(jax.random.key(0), D)._replace(w=jnp.arange(D, dtype=jnp.float32), delta=jnp.float32(0.0))
        docs, shown, aux = ranker.rank(key, state, features, where)
        return ranker.update(state, features, where, docs, shown, shown & (jnp.arange(K) < 2), aux)[1].updated

    # the outcome's key is neither the list's nor the directions' (fold_in(key, 1) is split(key)[1])
    ranker = oltr.RANKERS.build(algo, outcome_samples=10)
    key = jax.random.key(9)
    outcome_key = ranker.rank(key, ranker.init(jax.random.key(0), D), features, where)[2][-1]
    used = {tuple(np.asarray(jax.random.key_data(k)).tolist()) for k in jax.random.split(key)}
    assert tuple(np.asarray(jax.random.key_data(outcome_key)).tolist()) not in used

    keys = jax.random.split(jax.random.key(3), 64)
    exact = np.asarray(jax.vmap(lambda k: moved(0, k))(keys))
    sampled = np.asarray(jax.vmap(lambda k: moved(10_000, k))(keys))
    assert not exact.any()
    if algo == "dbgd":
        assert 0.25 < sampled.mean() < 0.75, sampled.mean()
    else:  # 49 tied candidates: some join B almost every time
        assert sampled.mean() > 0.9, sampled.mean()


@pytest.mark.parametrize("make, message", [
    (lambda: oltr.dbgd.init(None, D, learning_rate=-0.1), "learning_rate must be in \\(0, inf\\); got -0.1"),
    (lambda: oltr.pdgd.init(None, D, learning_rate=float("inf")), "learning_rate must be in \\(0, inf\\); got inf"),
    (lambda: oltr.pdgd.init(None, D, learning_rate=float("nan")), "learning_rate must be .*got nan"),
    (lambda: oltr.dbgd.init(None, D, delta=0.0), "delta must be .*got 0.0"),
    (lambda: oltr.mgd.init(None, D, learning_rate_decay=1.5), "learning_rate_decay must be .*got 1.5"),
    (lambda: oltr.mgd.init(None, D, num_candidates=3), "'num_candidates' is a static option.*got num_candidates=3"),
    (lambda: oltr.pdgd.init(None, D, delta=1.0), "ranker 'pdgd' has no hyperparameter 'delta'"),
    (lambda: oltr.RANKERS.build("dbgd", interleaving="balanced"), "interleaving must be one of .*'balanced'"),
    (lambda: oltr.RANKERS.build("mgd", num_candidates=0), "num_candidates must be an int >= 1; got 0"),
    (lambda: oltr.RANKERS.build("pdgd", list_size=0), "list_size must be an int >= 1; got 0"),
    (lambda: oltr.RANKERS.build("pdgd", learning_rate=0.1), "learning_rate=0.1 is a hyperparameter"),
    (lambda: oltr.RANKERS.split("pdgd", {"learning_rate": float("inf")}), "learning_rate=inf must be finite"),
    (lambda: oltr.RANKERS.build("sgd"), "unknown ranker 'sgd'"),
    (lambda: oltr.pairwise.init(None, D, epsilon=1.5), "epsilon must be in \\[0, 1\\]; got 1.5"),
    (lambda: oltr.RANKERS.build("pairwise", exploit_order="random"), "exploit_order must be one of .*'random'"),
    (lambda: oltr.RANKERS.build("mgd", outcome_samples=-1), "outcome_samples must be an int >= 0; got -1"),
    (lambda: oltr.RANKERS.build("dbgd", interleaving="team_draft", outcome_samples=10),
     "outcome_samples=10 applies to probabilistic comparisons only, not 'team_draft'"),
    (lambda: cascade_model("clicky", 3), "clicky"),
    (lambda: oltr.log_checkpoints(0), "num_impressions"),
])
def test_bad_input_raises_one_line(make, message):
    with pytest.raises(ValueError, match=message) as info:
        make()
    assert "\n" not in str(info.value)


def _folds():
    """``{fold: (train, test)}`` ragged queries of the synthetic generator (tiny)."""
    return {k: tuple(as_ragged(synthetic_queries(jax.random.key(10 * k + p), num_queries=5, list_size=12,
                                                 num_features=D)) for p in (0, 1)) for k in (1, 2)}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_features_are_refused_before_any_work(value):
    """NaN or inf features would make PDGD's weights NaN without a word: the simulation's input
    refuses them on host, naming the query, document and feature."""
    batch = _queries()
    features = np.array(batch.features)
    features[1, 2, 3] = value
    with pytest.raises(ValueError, match=f"feature 3 of document 2 of query 1 is {value}") as info:
        oltr.click_queries(batch._replace(features=features))
    assert "\n" not in str(info.value)
    folds = _folds()
    train, test = folds[2]
    bad = train._replace(features=np.where(np.arange(train.num_documents)[:, None] == 0, value, train.features)
                         .astype(np.float32))
    with pytest.raises(ValueError, match=f"of query 0 is {value}"):
        oltr.stack_folds({**folds, 2: (bad, test)}, (1, 2))


def test_padding_may_hold_anything():
    """Only real documents are checked: padded rows are masked out of every computation."""
    batch = _queries()
    features = np.array(batch.features)
    features[3, 5:] = np.nan  # query 3 has 3 documents; rows 5.. are padding
    np.testing.assert_array_equal(oltr.click_queries(batch._replace(features=features)).labels,
                                  oltr.click_queries(batch).labels)


def test_empty_or_repeated_folds_are_refused_before_any_work():
    """A part with 0 queries would fail inside training (no query to draw) or give a NaN offline
    NDCG; a fold named twice would run identical lanes and report a CI of 0."""
    folds = _folds()
    train, test = folds[2]
    empty = test._replace(features=test.features[:0], labels=test.labels[:0], offsets=test.offsets[:1],
                          qid=test.qid[:0])
    with pytest.raises(ValueError, match="fold 2's test part has 0 queries"):
        oltr.stack_folds({**folds, 2: (train, empty)}, (1, 2))
    with pytest.raises(ValueError, match=r"got \(1, 1\)"):
        oltr.stack_folds(folds, (1, 1))
    with pytest.raises(ValueError, match="click_queries got 0 queries"):
        oltr.click_queries(jax.tree.map(lambda x: x[:0], _queries()))


def _grid_inputs():
    folds = _folds()
    train, test, _ = oltr.stack_folds(folds, (1, 2))
    models = jax.tree.map(lambda *x: jnp.stack(x), *[cascade_model(m, 3) for m in ("perfect", "informational")])
    return train, test, models, oltr.lane_keys(3, (1, 2), 2, 2)


def test_grid_lanes_equal_single_runs_and_hyperparameters_reach_their_lanes():
    """``simulate_grid`` (the lane runner) gives each (fold, click model, run) exactly what ``simulate``
    gives that run alone on its fold; a per-lane hyperparameter changes only its lanes."""
    train, test, models, keys = _grid_inputs()
    ranker = oltr.RANKERS.build("pdgd")
    rates = np.asarray([0.1, 0.3], np.float32)[None, :, None]  # one learning rate per click model
    grid = oltr.simulate_grid(keys, ranker, train, test, models, checkpoints=(0, 3, 10),
                              hparams={"learning_rate": rates})
    assert grid.offline.shape == (2, 2, 2, 3) and grid.params.shape == (2, 2, 2, D)
    single = jax.jit(lambda k, tr, te, m, rate: oltr.simulate(k, ranker, tr, te, m, checkpoints=(0, 3, 10),
                                                              hparams={"learning_rate": rate}))
    for f, m, r in itertools.product(range(2), range(2), range(2)):
        fold = lambda x: x[f]  # noqa: E731
        one = single(keys[f, m, r], jax.tree.map(fold, train), jax.tree.map(fold, test),
                     jax.tree.map(lambda x: x[m], models), rates[0, m, 0])
        for got, want in zip(jax.tree.leaves(grid), jax.tree.leaves(one)):
            np.testing.assert_allclose(got[f, m, r], want, rtol=1e-6, atol=1e-7)
    assert not np.allclose(grid.params[:, 0], grid.params[:, 1])


def test_an_interrupted_grid_resumes_bit_identical(tmp_path, monkeypatch):
    """Killed after its second stretch, the grid continues from its checkpoint with the same bytes
    as an uninterrupted run."""
    train, test, models, keys = _grid_inputs()
    ranker = oltr.RANKERS.build("dbgd", interleaving="team_draft")

    def run(**kwargs):
        return oltr.simulate_grid(keys, ranker, train, test, models, checkpoints=(0, 2, 5, 9), **kwargs)

    full = run()
    saved = lanes.Checkpoint(tmp_path, "dbgd", {"ranker": "dbgd"})
    with killed_after_checkpoints(monkeypatch, 2) as written:
        run(checkpoint=saved)
    resumed = run(checkpoint=saved)
    assert [h["next_call"] for _, h in written] == [1, 2]
    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed)):
        np.testing.assert_array_equal(a, b, strict=True)
