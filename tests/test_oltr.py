"""DBGD, MGD and PDGD against the NumPy reference on the same draws, PDGD's unbiasedness on a
brute-forced tiny case, the Plackett–Luce display law, and bad input."""

import itertools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import oltr
from jaxrank.clicks import cascade_model
from jaxrank.types import QueryBatch
from tests.reference import oltr as ref

LENGTHS = (12, 7, 10, 3, 9)  # real documents per query: longer and shorter than the list of 10
N, D, L = 12, 5, 10
MODELS = ("perfect", "navigational", "informational")


def _queries(seed=0):
    rng = np.random.default_rng(seed)
    features = np.zeros((len(LENGTHS), N, D), np.float32)
    labels = np.zeros((len(LENGTHS), N), np.float32)
    mask = np.zeros((len(LENGTHS), N), bool)
    for q, n in enumerate(LENGTHS):
        features[q, :n] = rng.uniform(size=(n, D))
        labels[q, :n] = rng.integers(0, 3, size=n)
        mask[q, :n] = True
    return QueryBatch(features, labels, mask, np.arange(len(LENGTHS)))


def _replay(step_fn, draws_fn, key, batch, model_name, num_impressions):
    """The reference loop on the draws ``simulate`` makes: ``(weights, discounted online NDCG)``."""
    click_prob, stop_prob = (np.asarray(v, np.float64) for v in cascade_model(model_name, 3))
    _, key_steps = jax.random.split(key)
    w, online = np.zeros(D), 0.0
    for t in range(num_impressions):
        key_query, key_rank, key_click = jax.random.split(jax.random.fold_in(key_steps, t), 3)
        q = int(jax.random.randint(key_query, (), 0, len(LENGTHS)))
        n = LENGTHS[q]
        u_click, u_stop = np.asarray(jax.random.uniform(key_click, (2, L)), np.float64)
        draws = dict(u_click=u_click, u_stop=u_stop, **draws_fn(key_rank, n))
        features, labels = np.asarray(batch.features[q, :n], np.float64), batch.labels[q, :n].tolist()
        w, shown_labels = step_fn(w, features, labels, draws, (click_prob, stop_prob))
        online += oltr.ONLINE_DISCOUNT ** t * ref.displayed_ndcg(shown_labels, labels)
    return w, online


def _team_draft_draws(num_rankers):
    def draws(key_rank, n):
        key_dir, key_list = jax.random.split(key_rank)
        key_order, _ = jax.random.split(key_list)
        order_u = np.asarray(jax.random.uniform(key_order, (math.ceil(L / num_rankers), num_rankers)))
        return dict(normal=np.asarray(jax.random.normal(key_dir, (num_rankers - 1, D))), order_u=order_u)
    return draws


def _probabilistic_multileave_draws(num_rankers):
    team_draft = _team_draft_draws(num_rankers)

    def draws(key_rank, n):
        _, key_pick = jax.random.split(jax.random.split(key_rank)[1])
        return dict(team_draft(key_rank, n), pick_u=np.asarray(jax.random.uniform(key_pick, (L,))))
    return draws


def _probabilistic_draws(key_rank, n):
    key_dir, key_list = jax.random.split(key_rank)
    return dict(normal=np.asarray(jax.random.normal(key_dir, (1, D))),
                pi_u=np.asarray(jax.random.uniform(key_list, (L, 2))))


CASES = {
    "pdgd": (lambda: oltr.pdgd(0.1),
             lambda w, x, y, d, m: ref.pdgd_impression(w, x, y, d, m, learning_rate=0.1),
             lambda key_rank, n: dict(gumbel=np.asarray(jax.random.gumbel(key_rank, (N,)))[:n])),
    "dbgd_team_draft": (lambda: oltr.dbgd(0.05, 1.0, interleaving="team_draft"),
                        lambda w, x, y, d, m: ref.dbgd_impression(w, x, y, {**d, "normal": d["normal"][0]}, m,
                                                                  learning_rate=0.05, delta=1.0,
                                                                  interleaving="team_draft"),
                        _team_draft_draws(2)),
    "dbgd_probabilistic": (lambda: oltr.dbgd(0.05, 1.0, interleaving="probabilistic"),
                           lambda w, x, y, d, m: ref.dbgd_impression(w, x, y, {**d, "normal": d["normal"][0]}, m,
                                                                     learning_rate=0.05, delta=1.0,
                                                                     interleaving="probabilistic"),
                           _probabilistic_draws),
    "mgd_team_draft": (lambda: oltr.mgd(0.05, 1.0, num_candidates=4, multileaving="team_draft"),
                       lambda w, x, y, d, m: ref.mgd_impression(w, x, y, d, m, learning_rate=0.05, delta=1.0),
                       _team_draft_draws(5)),
    "mgd_probabilistic": (lambda: oltr.mgd(0.05, 1.0, num_candidates=3, multileaving="probabilistic"),
                          lambda w, x, y, d, m: ref.mgd_impression(w, x, y, d, m, learning_rate=0.05, delta=1.0,
                                                                   multileaving="probabilistic"),
                          _probabilistic_multileave_draws(4)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_learner_matches_numpy_reference(name):
    """100 impressions on the same draws: weights within 1e-5 and the same online NDCG."""
    make, step, draws = CASES[name]
    batch = _queries()
    data = oltr.click_queries(batch)
    model_name = "navigational" if name != "pdgd" else "informational"
    key = jax.random.key(7)
    result = jax.jit(lambda k: oltr.simulate(make(), k, data, data, cascade_model(model_name, 3),
                                             checkpoints=(0, 40, 100)))(key)
    w_ref, online_ref = _replay(step, draws, key, batch, model_name, 100)
    assert np.abs(w_ref).max() > 1e-3  # it learned something
    np.testing.assert_allclose(np.asarray(result.weights), w_ref, atol=1e-5)
    np.testing.assert_allclose(float(result.online[-1]), online_ref, rtol=1e-5)


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


def test_plackett_luce_top_has_the_plackett_luce_law():
    """Gumbel-top-k frequencies of the displayed top 2 of 3 documents match eq. 2."""
    scores = jnp.asarray([1.0, 0.0, -0.5])
    docs, _ = jax.vmap(lambda k: oltr.plackett_luce_top(k, scores, jnp.ones(3, bool), 2))(
        jax.random.split(jax.random.key(0), 40_000))
    docs = np.asarray(docs)
    for a, b in itertools.permutations(range(3), 2):
        freq = np.mean((docs[:, 0] == a) & (docs[:, 1] == b))
        exact = ref.pl_probability([a, b] + [d for d in range(3) if d not in (a, b)], np.asarray(scores), range(2))
        assert abs(freq - exact) < 0.01, (a, b, freq, exact)


def test_short_query_and_state_contract():
    """A query with fewer documents than the list shows only its documents, and a step keeps the
    state's shapes and dtypes (a valid scan carry) for every learner."""
    batch = _queries()
    features, where = jnp.asarray(batch.features[3]), jnp.asarray(batch.mask[3])
    for make in (oltr.pdgd, lambda: oltr.dbgd(interleaving="team_draft"), oltr.dbgd,
                 lambda: oltr.mgd(num_candidates=3, multileaving="team_draft"), lambda: oltr.mgd(num_candidates=3)):
        ranker = make()
        state = ranker.init(jax.random.key(0), D)
        docs, shown, aux = ranker.rank(state, jax.random.key(1), features, where)
        assert docs.shape == (L,) and int(shown.sum()) == 3 and set(np.asarray(docs[:3])) == {0, 1, 2}
        assert (np.asarray(docs[3:]) == -1).all()
        new = ranker.update(state, features, where, docs, shown, shown, aux)
        chex.assert_trees_all_equal_shapes_and_dtypes(state, new)


@pytest.mark.parametrize("make, message", [
    (lambda: oltr.dbgd(learning_rate=-0.1), "learning_rate"),
    (lambda: oltr.dbgd(delta=0.0), "delta"),
    (lambda: oltr.dbgd(interleaving="balanced"), "interleaving"),
    (lambda: oltr.mgd(num_candidates=0), "num_candidates"),
    (lambda: oltr.mgd(learning_rate_decay=1.5), "learning_rate_decay"),
    (lambda: oltr.pdgd(list_size=0), "list_size"),
    (lambda: oltr.pdgd(learning_rate=float("nan")), "learning_rate"),
    (lambda: cascade_model("clicky", 3), "clicky"),
    (lambda: oltr.log_checkpoints(0), "num_impressions"),
])
def test_bad_input_raises_one_line(make, message):
    with pytest.raises(ValueError, match=message) as info:
        make()
    assert "\n" not in str(info.value)


def test_hyperparameter_grid_is_one_trace_and_matches_single_runs():
    """Learning rates as traced data: one compiled program vmaps a grid, and each lane equals its
    own run (hyperparameters never change shapes)."""
    data = oltr.click_queries(_queries())
    model = cascade_model("perfect", 3)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(rate):
        return oltr.simulate(oltr.pdgd(rate), jax.random.key(1), data, data, model, checkpoints=(0, 30)).weights

    grid = jax.jit(jax.vmap(lambda r: oltr.simulate(oltr.pdgd(r), jax.random.key(1), data, data, model,
                                                    checkpoints=(0, 30)).weights))(jnp.asarray([0.05, 0.2]))
    for i, rate in enumerate((0.05, 0.2)):
        np.testing.assert_allclose(np.asarray(run(jnp.float32(rate))), np.asarray(grid[i]), atol=1e-6)
