"""Slow, obviously-correct online learning to rank loops (test reference only).

Written from the papers with Python loops and float64 numpy; no code is shared with ``jaxrank``.
Every random choice comes in as an explicit draw so a caller can replay the draws of another
implementation:

* DBGD: Yue & Joachims, ICML 2009, Algorithm 2 (no projection): candidate ``w + δu``, step
  ``w += η u`` when the candidate wins the interleaved comparison.
* MGD: Schuth et al., WSDM 2016, Algorithm 1 (mean winner): ``w += η mean_{j beats w}(u_j)``, with
  team-draft or probabilistic multileaving (``tests.reference.multileaving``).
* PDGD: Oosterhuis & de Rijke, CIKM 2018, Algorithm 1: the displayed list is the top of the
  Plackett–Luce ranking given by sorting ``f + Gumbel`` (its Gumbel-max form); pairs from the
  click-skip-above rule plus the first unclicked document after the last click; each pair's
  weight ``ρ = P(R*) / (P(R) + P(R*))`` with both probabilities computed by multiplying the PL
  choice probabilities of the displayed positions (eq. 2, 9), and the gradient of eq. 10.
* The neural model of that paper (§4.3): ``f(x) = v·σ(xW + b)``, one hidden layer of sigmoid
  units, no output bias, weights ``N(0, (1/fan_in)²)`` (the authors' ``models/neuralmodel.py``),
  its gradient by the chain rule written out per document. Neural DBGD perturbs the weights with
  one unit vector over ``W`` (row-major), ``b`` and ``v`` concatenated in that order (the authors'
  ``models/evolutionneuralmodel.py``); neural PDGD steps along ``Σ_i c_i ∇f(d_i)``, ``c_i`` the sum
  of the eq. 10 pair weights with ``+`` on the preferred and ``−`` on the other document.
* Pairwise: Hofmann, Whiteson & de Rijke, Information Retrieval 16(1), 2013, as the PDGD authors'
  ``algorithms/baselines/pairwise.py`` runs it: each position takes, with probability ε, the next
  document not shown yet of a random order (Gumbel keys), else of the current ranking (descending,
  or ascending as that code); pairs from the same click rule as PDGD; ``w += η Σ (x_a − x_b)`` over
  all pairs and ``η *= decay`` when there is a pair.
* Cascade clicks (Craswell et al. 2008 with click/stop probabilities): at position ``r`` the user
  clicks when ``u_click[r] < P(click | g)`` and, after a click, stops when ``u_stop[r] < P(stop | g)``.

Queries are ``(features [n, D], labels [n])`` of their real documents only.
"""

import itertools

import numpy as np

from tests.reference import multileaving as ml


def ranking(scores):
    """Document indices by descending score, equal scores by index."""
    return sorted(range(len(scores)), key=lambda d: (-scores[d], d))


def cascade(labels_shown, u_click, u_stop, click_prob, stop_prob, stop_rule="after_click"):
    """``stop_rule="every_position"``: the stop coin of every scanned position counts, clicked or not
    (the PDGD authors' ``utils/clicks.py``)."""
    clicks = []
    stopped = False
    for r, g in enumerate(labels_shown):
        g = int(min(max(round(g), 0), len(click_prob) - 1))
        click = (not stopped) and u_click[r] < click_prob[g]
        clicks.append(bool(click))
        if (click or stop_rule == "every_position") and u_stop[r] < stop_prob[g]:
            stopped = True
    return clicks


def unit(z):
    z = np.asarray(z, np.float64)
    return z / np.linalg.norm(z)


# ---------------------------------------------------------------- interleaving with explicit draws


def probabilistic_interleave(uniforms, scores_first, scores_second, list_size, tau):
    """Hofmann et al. 2011: per position a coin (``uniforms[n][0] < 0.5``: ranker 2 draws) and an
    inverse-CDF draw (``uniforms[n][1]``) from the drawing ranker's ``1/rank^τ`` softmax over the
    remaining documents. Returns ``(shown, prob_second)`` with the posterior of ranker 2 per position."""
    rankings = (ranking(scores_first), ranking(scores_second))
    remaining = set(range(len(scores_first)))
    shown, prob_second = [], []
    for n in range(min(list_size, len(scores_first))):
        soft = [ml.softmax_over_remaining(rk, remaining, tau) for rk in rankings]
        doc = ml._draw(float(uniforms[n][1]), soft[1 if uniforms[n][0] < 0.5 else 0])
        prob_second.append(soft[1][doc] / (soft[0][doc] + soft[1][doc]))
        shown.append(doc)
        remaining.discard(doc)
    return shown, prob_second


def probabilistic_outcome(prob_second, clicks):
    """``P(o > 0) − P(o < 0)``, ``o`` = clicks credited to ranker 2 minus ranker 1, by enumeration."""
    clicked = [n for n, c in enumerate(clicks) if c]
    total = 0.0
    for assignment in itertools.product((1, 2), repeat=len(clicked)):
        p, o = 1.0, 0
        for n, a in zip(clicked, assignment):
            p *= prob_second[n] if a == 2 else 1.0 - prob_second[n]
            o += 1 if a == 2 else -1
        total += p * np.sign(o)
    return total


# ---------------------------------------------------------------- learners: one impression each


def dbgd_impression(w, features, labels, draws, model, *, learning_rate, delta, interleaving, tau=3.0,
                    list_size=10):
    """One DBGD impression; ``draws``: ``normal [D]``, ``order_u`` (team draft) or ``pi_u``
    (probabilistic), ``u_click``, ``u_stop``. Returns ``(w, displayed labels)``."""
    u = unit(draws["normal"])
    won, shown_labels = dbgd_duel(features @ w, features @ (w + delta * u), labels, draws, model,
                                  interleaving=interleaving, tau=tau, list_size=list_size)
    return (w + learning_rate * u if won else w), shown_labels


def dbgd_duel(current, candidate, labels, draws, model, *, interleaving, tau=3.0, list_size=10):
    """The interleaved comparison of DBGD from the two rankers' scores: ``(candidate won, displayed labels)``."""
    if interleaving == "team_draft":
        shown, teams = ml.team_draft_multileave(draws["order_u"], [list(current), list(candidate)], list_size)
    else:
        shown, prob_second = probabilistic_interleave(draws["pi_u"], current, candidate, list_size, tau)
    clicks = cascade([labels[d] for d in shown], draws["u_click"], draws["u_stop"], *model)
    if interleaving == "team_draft":
        credit = ml.team_draft_credit(teams, clicks, 2)
        won = credit[1] > credit[0]
    else:
        won = probabilistic_outcome(prob_second, clicks) > 0
    return won, [labels[d] for d in shown]


def mgd_impression(w, features, labels, draws, model, *, learning_rate, delta, multileaving="team_draft", tau=3.0,
                   list_size=10):
    """One MGD impression; ``draws``: ``normal [n, D]``, ``order_u``, ``pick_u`` (probabilistic),
    ``u_click``, ``u_stop``. Candidate ``j`` beats the current ranker when its team got more clicks
    (team draft) or when ``P(c_j > c_0) − P(c_j < c_0) > 0`` over every assignment of the clicked
    positions to the ``n + 1`` rankers (probabilistic multileave, Schuth et al. 2015, Algorithm 2),
    up to float64 rounding."""
    directions = [unit(z) for z in draws["normal"]]
    scores = [list(features @ w)] + [list(features @ (w + delta * u)) for u in directions]
    if multileaving == "team_draft":
        shown, teams = ml.team_draft_multileave(draws["order_u"], scores, list_size)
    else:
        shown, _ = ml.probabilistic_multileave(draws["order_u"], draws["pick_u"], scores, list_size, tau)
    clicks = cascade([labels[d] for d in shown], draws["u_click"], draws["u_stop"], *model)
    if multileaving == "team_draft":
        credit = ml.team_draft_credit(teams, clicks, len(scores))
        winners = [j for j in range(1, len(scores)) if credit[j] > credit[0]]
    else:
        prefs = ml.preferences_by_enumeration(ml.posteriors_of_list(shown, scores, tau), clicks, len(scores))
        winners = [j for j in range(1, len(scores)) if prefs[j, 0] > 1e-12]
    if winners:
        w = w + learning_rate * np.mean([directions[j - 1] for j in winners], axis=0)
    return w, [labels[d] for d in shown]


def pl_probability(order, scores, positions):
    """``Π_{r in positions} e^{f(order[r])} / Σ_{d not in order[:r]} e^{f(d)}`` (eq. 2), in float64."""
    p = 1.0
    for r in positions:
        remaining = [d for d in range(len(scores)) if d not in order[:r]]
        p *= np.exp(scores[order[r]]) / sum(np.exp(scores[d]) for d in remaining)
    return p


def pdgd_pairs(clicks):
    """``[(a, b)]`` displayed positions with ``a`` preferred: ``a`` clicked, ``b`` unclicked and
    above the last click or directly after it."""
    clicked = [r for r, c in enumerate(clicks) if c]
    if not clicked:
        return []
    last = max(clicked)
    observed = [r for r in range(len(clicks)) if r <= last + 1]
    return [(a, b) for a in clicked for b in observed if not clicks[b]]


def pdgd_pair_terms(scores, shown, clicks):
    """``[(doc_a, doc_b, weight)]``: each inferred pair with ``ρ · ∂P(a ≻ b)/∂(f_a − f_b)``."""
    terms = []
    for a, b in pdgd_pairs(clicks):
        lo, hi = min(a, b), max(a, b)
        full = list(shown) + [d for d in range(len(scores)) if d not in shown]
        swapped = list(full)
        swapped[a], swapped[b] = full[b], full[a]
        p = pl_probability(full, scores, range(lo, hi + 1))
        p_swap = pl_probability(swapped, scores, range(lo, hi + 1))
        rho = p_swap / (p + p_swap)
        fa, fb = scores[shown[a]], scores[shown[b]]
        dp = np.exp(fa) * np.exp(fb) / (np.exp(fa) + np.exp(fb)) ** 2
        terms.append((shown[a], shown[b], rho * dp))
    return terms


def pdgd_gradient(features, scores, shown, clicks):
    grad = np.zeros(features.shape[1])
    for da, db, weight in pdgd_pair_terms(scores, shown, clicks):
        grad += weight * (features[da] - features[db])
    return grad


def pdgd_impression(w, features, labels, draws, model, *, learning_rate, list_size=10):
    """One PDGD impression; ``draws``: ``gumbel [n]``, ``u_click``, ``u_stop``."""
    scores = features @ w
    shown = ranking(scores + np.asarray(draws["gumbel"], np.float64))[:list_size]
    clicks = cascade([labels[d] for d in shown], draws["u_click"], draws["u_stop"], *model)
    return w + learning_rate * pdgd_gradient(features, scores, shown, clicks), [labels[d] for d in shown]


# ---------------------------------------------------------------- the neural model and its learners


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def neural_init(normal_hidden, normal_bias, normal_output):
    """``{"hidden": W [D, H], "bias": b [H], "output": v [H]}`` from standard normal draws: each weight
    ``N(0, s²)`` with ``s = 1/fan_in`` (``1/D`` for ``W`` and ``b``, ``1/H`` for ``v``)."""
    normal_hidden = np.asarray(normal_hidden, np.float64)
    num_features, hidden_units = normal_hidden.shape
    return {"hidden": normal_hidden / num_features, "bias": np.asarray(normal_bias, np.float64) / num_features,
            "output": np.asarray(normal_output, np.float64) / hidden_units}


def neural_score(net, x):
    """``f(x) = Σ_j v_j σ(Σ_d x_d W_dj + b_j)`` for one document ``x [D]``."""
    hidden_units = len(net["bias"])
    h = [sigmoid(sum(x[d] * net["hidden"][d, j] for d in range(len(x))) + net["bias"][j]) for j in range(hidden_units)]
    return sum(net["output"][j] * h[j] for j in range(hidden_units))


def neural_scores(net, features):
    return np.asarray([neural_score(net, x) for x in features])


def neural_weighted_gradient(net, features, doc_weights):
    """``Σ_i c_i ∇f(x_i)`` by the chain rule: with ``h = σ(xW + b)``, ``∂f/∂v_j = h_j``,
    ``∂f/∂b_j = v_j h_j (1 − h_j)`` and ``∂f/∂W_dj = x_d v_j h_j (1 − h_j)``."""
    grad = {k: np.zeros_like(v) for k, v in net.items()}
    for x, c in zip(features, doc_weights):
        if c == 0:
            continue
        h = sigmoid(x @ net["hidden"] + net["bias"])
        back = net["output"] * h * (1.0 - h)
        grad["output"] += c * h
        grad["bias"] += c * back
        grad["hidden"] += c * np.outer(x, back)
    return grad


def neural_unflatten(net, vector):
    """``vector [P]`` cut into ``net``'s shapes in the authors' order: ``W`` row-major, ``b``, ``v``."""
    out, start = {}, 0
    for k in ("hidden", "bias", "output"):
        size = net[k].size
        out[k] = np.asarray(vector[start:start + size], np.float64).reshape(net[k].shape)
        start += size
    assert start == len(vector)
    return out


def neural_dbgd_impression(net, features, labels, draws, model, *, learning_rate, delta, interleaving, tau=3.0,
                           list_size=10):
    """One neural DBGD impression; ``draws`` as ``dbgd_impression`` with ``normal [P]`` over all the
    weights. Returns ``(net, displayed labels)``."""
    u = neural_unflatten(net, unit(draws["normal"]))
    candidate = {k: net[k] + delta * u[k] for k in net}
    won, shown_labels = dbgd_duel(neural_scores(net, features), neural_scores(candidate, features), labels, draws,
                                  model, interleaving=interleaving, tau=tau, list_size=list_size)
    return ({k: net[k] + learning_rate * u[k] for k in net} if won else net), shown_labels


def neural_pdgd_impression(net, features, labels, draws, model, *, learning_rate, list_size=10):
    """One neural PDGD impression; ``draws``: ``gumbel [n]``, ``u_click``, ``u_stop``."""
    scores = neural_scores(net, features)
    shown = ranking(scores + np.asarray(draws["gumbel"], np.float64))[:list_size]
    clicks = cascade([labels[d] for d in shown], draws["u_click"], draws["u_stop"], *model)
    doc_weights = np.zeros(len(features))
    for da, db, weight in pdgd_pair_terms(scores, shown, clicks):
        doc_weights[da] += weight
        doc_weights[db] -= weight
    grad = neural_weighted_gradient(net, features, doc_weights)
    return {k: net[k] + learning_rate * grad[k] for k in net}, [labels[d] for d in shown]

def pairwise_display(scores, explore, priorities, list_size, exploit_order="descending"):
    """The displayed documents: position ``i`` takes the first document of the random order
    (``priorities`` descending, when ``explore[i]``) or of the current ranking that is not shown yet."""
    if exploit_order == "descending":
        exploit = ranking(scores)
    else:
        exploit = sorted(range(len(scores)), key=lambda d: (scores[d], d))
    random_order = ranking(priorities)
    shown = []
    for i in range(min(list_size, len(scores))):
        source = random_order if explore[i] else exploit
        shown.append(next(d for d in source if d not in shown))
    return shown


def pairwise_step(w, features, shown, clicks, learning_rate, learning_rate_decay=1.0):
    """``(w, learning_rate)`` after one update from the clicks on ``shown``."""
    pairs = pdgd_pairs(clicks)
    if not pairs:
        return w, learning_rate
    step = sum(features[shown[a]] - features[shown[b]] for a, b in pairs)
    return w + learning_rate * step, learning_rate * learning_rate_decay


def pairwise_impression(w, features, labels, draws, model, *, learning_rate, epsilon, learning_rate_decay=1.0,
                        exploit_order="descending", list_size=10):
    """One Pairwise impression; ``draws``: ``u_coin [k]`` (position ``i`` explores when ``u_coin[i] < ε``),
    ``gumbel [n]``, ``u_click``, ``u_stop``. Returns ``(w, displayed labels, learning_rate)``."""
    explore = [u < epsilon for u in draws["u_coin"]]
    shown = pairwise_display(features @ w, explore, np.asarray(draws["gumbel"], np.float64), list_size,
                             exploit_order)
    clicks = cascade([labels[d] for d in shown], draws["u_click"], draws["u_stop"], *model)
    w, learning_rate = pairwise_step(w, features, shown, clicks, learning_rate, learning_rate_decay)
    return w, [labels[d] for d in shown], learning_rate


def displayed_ndcg(shown_labels, labels, topn=10):
    disc = lambda r: 1.0 / np.log2(r + 2.0)  # noqa: E731
    dcg = sum((2.0 ** g - 1.0) * disc(r) for r, g in enumerate(shown_labels[:topn]))
    ideal = sum((2.0 ** g - 1.0) * disc(r) for r, g in enumerate(sorted(labels, reverse=True)[:topn]))
    return dcg / ideal if ideal > 0 else 0.0
