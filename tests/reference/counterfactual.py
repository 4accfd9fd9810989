"""Slow, obviously-correct counterfactual learning to rank (test reference only).

Written from the papers with Python loops and float64 numpy; no code is shared with ``jaxrank``.
Every random choice comes in as an explicit draw, so a caller can replay another implementation's.

* Users: a document of grade ``g`` at rank ``k`` (0-based) is clicked with ``alpha[k] · rel[g] +
  beta[k]`` (position-based: ``beta = 0``); the cascade user scans down, clicks with ``P(click | g)``
  and, after a click, stops with ``P(stop | g)``. ULTRA's tables are typed in again below.
* Logging policy: documents sorted by ``score + temperature · gumbel`` descending, ties by index;
  the top ``K`` are shown. A Plackett–Luce top-``k`` prefix ``(d_1, ..., d_k)`` has probability
  ``Π_i exp(s_{d_i}/T) / Σ_{j not chosen yet} exp(s_j/T)``; the exact placement probabilities sum it
  over every prefix.
* Losses (Joachims, Swaminathan & Schnabel, WSDM 2017; Ai et al., SIGIR 2018; Oosterhuis, TOIS
  2023), with the inverse-propensity weight ``w_d = c_d / max(ρ_d, τ)`` (0 when ``ρ_d = 0``):
  pointwise ``Σ_d −[w log σ(s) + (1 − w) log(1 − σ(s))]`` (gradient ``σ(s_d) − w_d``), listwise
  ``−Σ_d w_d log softmax(s)_d`` (gradient ``−w_j + (Σ_d w_d) softmax(s)_j``), pairwise hinge
  ``Σ_d w_d Σ_{j≠d} max(0, 1 − s_d + s_j)`` (gradient: ``−w_d`` per active pair where ``d`` is the
  clicked one, ``+w_i`` per active pair ``(i, d)``); every gradient written out by hand.
* Propensity estimators, from their definitions: the swap-intervention ratio (Joachims et al. 2017),
  the pivot-rank and adjacent-chain ratios of harvested interventions and the all-pairs likelihood
  (Agarwal et al., WSDM 2019), the EM of the position-based model with a logistic relevance
  regression (Wang et al., WSDM 2018).
"""

import itertools
import math

import numpy as np

ULTRA_CLICK_PROB_4 = (0.1, 0.16, 0.28, 0.52, 1.0)  # example/ClickModel/pbm_0.1_1.0_4_1.0.json
ULTRA_EYE_TRACKING = (0.68, 0.61, 0.48, 0.34, 0.28, 0.2, 0.11, 0.1, 0.08, 0.06)


# ------------------------------------------------------------------------------------------ users


def click_probability(alpha, beta, rel, grade, rank):
    g = int(min(max(round(float(grade)), 0), len(rel) - 1))
    return float(alpha[rank]) * float(rel[g]) + float(beta[rank])


def affine_session_clicks(grades, u, alpha, beta, rel):
    """Clicks of one shown list: position ``k`` is clicked iff ``u[k] < P(click)``."""
    return [bool(u[k] < click_probability(alpha, beta, rel, grades[k], k)) for k in range(len(grades))]


def cascade_session_clicks(grades, u_click, u_stop, click_prob, stop_prob):
    clicks = []
    for k, g in enumerate(grades):
        g = int(min(max(round(float(g)), 0), len(click_prob) - 1))
        clicked = bool(u_click[k] < click_prob[g])
        clicks.append(clicked)
        if clicked and u_stop[k] < stop_prob[g]:
            clicks.extend([False] * (len(grades) - k - 1))
            break
    return clicks


def trust_bias_oosterhuis(num_positions):
    """``(alpha, beta)`` of Oosterhuis (TOIS 2023)'s default trust-bias user, rank ``r`` from 0."""
    alpha, beta = [], []
    for r in range(num_positions):
        theta = 0.35 / (r + 1) + 0.65 / (1 + 0.05 * r)
        eps_plus, eps_minus = 1 / (1 + 0.005 * r), 0.65 / (r + 1)
        alpha.append(theta * (eps_plus - eps_minus))
        beta.append(theta * eps_minus)
    return np.array(alpha), np.array(beta)


# ------------------------------------------------------------------------------- logging policy


def shown_list(scores, mask, num_positions, noise=None):
    """Indices of the shown documents: real documents by descending ``score + noise``, ties by index."""
    real = [d for d in range(len(scores)) if mask[d]]
    key = {d: float(scores[d]) + (0.0 if noise is None else float(noise[d])) for d in real}
    order = sorted(real, key=lambda d: (-key[d], d))
    return order[:num_positions]


def pl_prefix_probability(scores, temperature, prefix, candidates):
    prob, left = 1.0, list(candidates)
    for d in prefix:
        weights = [math.exp(scores[j] / temperature) for j in left]
        prob *= math.exp(scores[d] / temperature) / sum(weights)
        left.remove(d)
    return prob


def topk_rankings(scores, temperature, num_positions, candidates=None):
    """Every ranking (shown prefix) a Plackett–Luce top-``k`` policy can show, with its probability;
    ``temperature = 0``: the single deterministic ranking."""
    candidates = list(range(len(scores))) if candidates is None else list(candidates)
    k = min(num_positions, len(candidates))
    if temperature == 0:
        mask = [d in candidates for d in range(len(scores))]
        return [(tuple(shown_list(scores, mask, k)), 1.0)]
    return [(prefix, pl_prefix_probability(scores, temperature, prefix, candidates))
            for prefix in itertools.permutations(candidates, k)]


def placement_exact(scores, temperature, num_positions, candidates=None):
    """``[L, K]`` ``P(d at rank k)`` by enumeration."""
    out = np.zeros((len(scores), num_positions))
    for prefix, prob in topk_rankings(scores, temperature, num_positions, candidates):
        for k, d in enumerate(prefix):
            out[d, k] += prob
    return out


def click_patterns(probs):
    """Every 0/1 pattern of independent clicks with success probabilities ``probs``, with its probability."""
    for pattern in itertools.product((0, 1), repeat=len(probs)):
        p = 1.0
        for c, q in zip(pattern, probs):
            p *= q if c else 1.0 - q
        yield np.array(pattern, float), p


# ----------------------------------------------------------------------------------------- losses


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def ips_weights(clicks, propensities, where, clip=None):
    w = np.zeros(len(clicks))
    for d in range(len(clicks)):
        rho = propensities[d] if clip is None else max(propensities[d], clip)
        if where[d] and rho > 0:
            w[d] = clicks[d] / rho
    return w


def pointwise(scores, w, where):
    """``(loss, d loss / d scores)`` of one list."""
    loss, grad = 0.0, np.zeros(len(scores))
    for d in range(len(scores)):
        if not where[d]:
            continue
        p = sigmoid(scores[d])
        loss -= w[d] * math.log(p) + (1 - w[d]) * math.log(1 - p)
        grad[d] = p - w[d]
    return loss, grad


def listwise(scores, w, where):
    docs = [d for d in range(len(scores)) if where[d]]
    if not docs:
        return 0.0, np.zeros(len(scores))
    top = max(scores[d] for d in docs)
    z = sum(math.exp(scores[d] - top) for d in docs)
    lse = top + math.log(z)
    loss = -sum(w[d] * (scores[d] - lse) for d in docs)
    total = sum(w[d] for d in docs)
    grad = np.zeros(len(scores))
    for j in docs:
        grad[j] = -w[j] + total * math.exp(scores[j] - lse)
    return loss, grad


def pairwise_hinge(scores, w, where, margin=1.0):
    loss, grad = 0.0, np.zeros(len(scores))
    for d in range(len(scores)):
        if not where[d]:
            continue
        for j in range(len(scores)):
            if j == d or not where[j]:
                continue
            slack = margin - (scores[d] - scores[j])
            if slack > 0:
                loss += w[d] * slack
                grad[d] -= w[d]
                grad[j] += w[d]
    return loss, grad


LOSSES = {"pointwise": pointwise, "listwise": listwise, "pairwise": pairwise_hinge}


def doubly_robust_targets(clicks, alpha_shown, beta_shown, rho, regression, where, clip=None):
    out = np.zeros(len(clicks))
    for d in range(len(clicks)):
        if not where[d]:
            continue
        r = rho[d] if clip is None else max(rho[d], clip)
        out[d] = regression[d]
        if r > 0:
            out[d] += (clicks[d] - alpha_shown[d] * regression[d] - beta_shown[d]) / r
    return out


def propensity_svm(w, features, clicks, propensities, where, lam, clip=None, weights=None):
    """``(objective, gradient [D])`` of Propensity SVM-Rank: ``(λ/2)‖w‖² + (1/n) Σ_q weight_q hinge_q``."""
    loss, grad, n = 0.0, lam * np.asarray(w, float), 0.0
    loss += 0.5 * lam * float(np.dot(w, w))
    data, data_grad = 0.0, np.zeros(len(w))
    for q in range(features.shape[0]):
        weight = 1.0 if weights is None else weights[q]
        x = np.asarray(features[q], float)
        s = x @ np.asarray(w, float)
        value, g = pairwise_hinge(s, ips_weights(clicks[q], propensities[q], where[q], clip), where[q])
        data += weight * value
        data_grad += weight * (g @ x)
        n += weight * sum(clicks[q][d] for d in range(len(s)) if where[q][d])
    n = max(n, 1.0)
    return loss + data / n, grad + data_grad / n


def dla(scores, logits, clicks, where, max_weight=None):
    """``(ranking loss, its gradient in scores, examination loss, its gradient in logits)`` of one list."""
    docs = [k for k in range(len(scores)) if where[k]]

    def relative(x):
        out = np.ones(len(x))
        for k in docs:
            out[k] = math.exp(x[k] - x[0])
        return out

    def weights(relative_propensity):
        w = np.zeros(len(scores))
        for k in docs:
            inverse = 1.0 / relative_propensity[k]
            w[k] = clicks[k] * (inverse if max_weight is None else min(inverse, max_weight))
        return w

    rank_loss, rank_grad = listwise(scores, weights(relative(logits)), where)
    exam_loss, exam_grad = listwise(logits, weights(relative(scores)), where)
    return rank_loss, rank_grad, exam_loss, exam_grad


# ------------------------------------------------------------------------- propensity estimation


def swap_ratio(clicks, mask, swap_rank):
    """``[K]`` swap-intervention propensities: per rank ``r``, (clicks at r / sessions) over the sessions that
    swapped rank 0 with ``r`` and show rank ``r``, divided by (clicks at 0 / sessions) over the unchanged
    sessions that show rank ``r``."""
    num_sessions, num_positions = np.shape(clicks)
    out = [1.0]
    for r in range(1, num_positions):
        treated, treated_n, control, control_n = 0.0, 0, 0.0, 0
        for s in range(num_sessions):
            if not mask[s][r]:
                continue
            if swap_rank[s] == r:
                treated += clicks[s][r]
                treated_n += 1
            elif swap_rank[s] == 0:
                control += clicks[s][0]
                control_n += 1
        out.append((treated / treated_n) / (control / control_n) if treated_n and control_n and control else np.nan)
    return np.array(out)


def harvested_sets(query, doc, clicks, mask, num_positions):
    """``(ĉ [K, K], n [K, K])``: for each (query, document) shown at ranks ``k ≠ k'``, add its click rate at
    ``k`` to ``ĉ[k, k']`` and 1 to ``n[k, k']``."""
    shows, hits = {}, {}
    for s in range(len(query)):
        for k in range(num_positions):
            if mask[s][k]:
                cell = (int(query[s]), int(doc[s][k]))
                shows.setdefault(cell, np.zeros(num_positions))[k] += 1
                hits.setdefault(cell, np.zeros(num_positions))[k] += clicks[s][k]
    c, n = np.zeros((num_positions, num_positions)), np.zeros((num_positions, num_positions))
    for cell, shown in shows.items():
        for k in range(num_positions):
            for k2 in range(num_positions):
                if k != k2 and shown[k] > 0 and shown[k2] > 0:
                    c[k, k2] += hits[cell][k] / shown[k]
                    n[k, k2] += 1
    return c, n


def pivot(c):
    return np.array([1.0] + [c[k, 0] / c[0, k] for k in range(1, len(c))])


def adjacent_chain(c):
    out = [1.0]
    for k in range(len(c) - 1):
        out.append(out[-1] * c[k + 1, k] / c[k, k + 1])
    return np.array(out)


def all_pairs(c, n):
    """Maximum likelihood of ``Σ_{k≠k'} c[k,k'] log(θ_k r_{kk'}) + (n − c) log(1 − θ_k r_{kk'})`` with
    ``r_{kk'} = r_{k'k}`` (scipy L-BFGS on logits); ``θ / θ_1``."""
    from scipy.optimize import minimize

    num = len(c)
    pairs = [(k, k2) for k in range(num) for k2 in range(k + 1, num)]

    def nll(x):
        theta, rel = 1 / (1 + np.exp(-x[:num])), 1 / (1 + np.exp(-x[num:]))
        total = 0.0
        for i, (a, b) in enumerate(pairs):
            for k in (a, b):
                k2 = b if k == a else a
                p = theta[k] * rel[i]
                total -= c[k, k2] * np.log(p) + (n[k, k2] - c[k, k2]) * np.log(1 - p)
        return total / n.sum()

    x = minimize(nll, np.zeros(num + len(pairs)), method="L-BFGS-B", options={"maxiter": 5000, "gtol": 1e-10}).x
    theta = 1 / (1 + np.exp(-x[:num]))
    return theta / theta[0]


def regression_em(query, doc, clicks, mask, features, num_positions, num_iterations, lam, newton_steps, init=0.5):
    """EM of the position-based model with ``γ = σ(wᵀx + b)``, impression by impression (Wang et al. 2018):
    posteriors of every unclicked impression, ``θ_k`` = expected examined share, and ``newton_steps``
    Newton steps of the ℓ2-penalised (not the bias) logistic regression of each (query, document)'s mean
    relevance posterior, weighted by its impressions. Returns ``(θ [K], w [D], b)``."""
    theta = np.full(num_positions, float(init))
    num_features = features.shape[-1]
    coef = np.zeros(num_features + 1)
    for _ in range(num_iterations):
        examined, shown = np.zeros(num_positions), np.zeros(num_positions)
        rel_sum, count = {}, {}
        for s in range(len(query)):
            for k in range(num_positions):
                if not mask[s][k]:
                    continue
                q, d = int(query[s]), int(doc[s][k])
                x = np.append(features[q, d], 1.0)
                gamma = sigmoid(float(x @ coef))
                if clicks[s][k]:
                    e, r = 1.0, 1.0
                else:
                    e = theta[k] * (1 - gamma) / (1 - theta[k] * gamma)
                    r = (1 - theta[k]) * gamma / (1 - theta[k] * gamma)
                examined[k] += e
                shown[k] += 1
                rel_sum[(q, d)] = rel_sum.get((q, d), 0.0) + r
                count[(q, d)] = count.get((q, d), 0) + 1
        theta = np.clip(examined / np.maximum(shown, 1e-12), 1e-6, 1.0)
        cells = list(count)
        xs = np.array([np.append(features[q, d], 1.0) for q, d in cells])
        targets = np.array([rel_sum[c] / count[c] for c in cells])
        weights = np.array([count[c] for c in cells], float)
        penalty = np.full(num_features + 1, lam)
        penalty[-1] = 0.0
        for _ in range(newton_steps):
            p = 1 / (1 + np.exp(-xs @ coef))
            grad = xs.T @ (weights * (p - targets)) / weights.sum() + penalty * coef
            hess = (xs * (weights * p * (1 - p))[:, None]).T @ xs / weights.sum() + np.diag(penalty)
            coef = coef - np.linalg.solve(hess + 1e-8 * np.eye(len(coef)), grad)
    return theta, coef[:-1], coef[-1]


def mlp_scores_and_backward(hidden, bias, output, features, dscores):
    """Scores ``v·σ(xW + b)`` of ``features [L, D]`` and the gradient of ``Σ_d dscores_d · score_d`` in
    ``(W, b, v)`` by the chain rule."""
    grad_w, grad_b, grad_v = np.zeros_like(hidden), np.zeros_like(bias), np.zeros_like(output)
    scores = np.zeros(len(features))
    for d, x in enumerate(features):
        h = np.array([sigmoid(float(x @ hidden[:, j] + bias[j])) for j in range(len(bias))])
        scores[d] = float(h @ output)
        back = dscores[d] * output * h * (1 - h)
        grad_v += dscores[d] * h
        grad_b += back
        grad_w += np.outer(x, back)
    return scores, (grad_w, grad_b, grad_v)


# ------------------------------------------------------------------- doubly robust (TOIS 2023)


def huberised_pairwise(scores, where, delta=0.5):
    """``[L]`` ``Σ_{j ∈ where, j ≠ d} h_δ(s_d − s_j)`` with the Huberised hinge ``h_δ`` (Chapelle 2007)."""
    def h(z):
        if z >= 1.0:
            return 0.0
        if z > 1.0 - delta:
            return (1.0 - z) ** 2 / (2.0 * delta)
        return 1.0 - z - delta / 2.0

    out = np.zeros(len(scores))
    for d in range(len(scores)):
        if where[d]:
            out[d] = sum(h(scores[d] - scores[j]) for j in range(len(scores)) if where[j] and j != d)
    return out


def per_document_estimates(clicks, displays, sessions, alpha, beta, propensities, regression, clip):
    """Naive, IPS and DR targets of one query from its logged counts, as HarrieO/2022-doubly-robust-LTR's
    ``compute_weights`` defines them (read, not copied): click-through rate ``ctr = Σ_k clicks / n``,
    actual treatments ``ᾱ = Σ_k displays α_k / n`` (likewise ``β̄``), the propensity
    ``ρ = Σ_k displays α̃_k / n`` clipped at ``τ``; IPS ``(ctr − β̄)/max(ρ, τ)`` (0 where ``ρ = 0``), DR
    ``(ctr − β̄ − (ᾱ − max(ρ, τ)) R̂)/max(ρ, τ)``. Returns ``(naive, ips, dr)``, each ``[L]``."""
    num_docs, num_positions = len(clicks), len(alpha)
    n = max(sessions, 1.0)
    naive, ips, dr = np.zeros(num_docs), np.zeros(num_docs), np.zeros(num_docs)
    for d in range(num_docs):
        ctr = sum(clicks[d][k] for k in range(num_positions)) / n
        a = sum(displays[d][k] * alpha[k] for k in range(num_positions)) / n
        b = sum(displays[d][k] * beta[k] for k in range(num_positions)) / n
        rho = sum(displays[d][k] * propensities[k] for k in range(num_positions)) / n
        clipped = max(rho, clip)
        naive[d] = ctr
        ips[d] = (ctr - b) / clipped if clipped > 0 else 0.0
        dr[d] = (ctr - b - (a - clipped) * regression[d]) / clipped if clipped > 0 else regression[d]
    return naive, ips, dr


def dm_loss(predictions, ctr, beta, rho, clip):
    """The reference's clipped DM cross-entropy (``optimize_regressor_counterfactual_param_given``), mean over
    the documents with ``ρ > 0``."""
    total, count = 0.0, 0
    for p, c, b, r in zip(predictions, ctr, beta, rho):
        if r <= 0:
            continue
        denom = max(r, clip)
        total -= (c - b) / denom * math.log(p) + (r - c + b) / denom * math.log(1.0 - p)
        count += 1
    return total / max(count, 1)


def single_session_moments(scores, temperature, num_positions, alpha, beta, relevance, regression, clip):
    """Exact mean and variance of one session's IPS and DR estimates per document, by enumerating every
    top-``K`` ranking of a Plackett–Luce logger and every click pattern. The propensity is the expected
    treatment ``ρ_d = Σ_k P(d at k) α_k``; DR's control variate the actual treatment ``α_{k(d)}``.
    Returns ``{"ips": (mean [L], var [L]), "dr": (mean [L], var [L])}``."""
    num_docs = len(scores)
    placement = placement_exact(scores, temperature, num_positions)
    rho = placement @ np.asarray(alpha[:num_positions], float)
    moments = {"ips": [np.zeros(num_docs), np.zeros(num_docs)], "dr": [np.zeros(num_docs), np.zeros(num_docs)]}
    for prefix, p_rank in topk_rankings(scores, temperature, num_positions):
        probs = [alpha[k] * relevance[d] + beta[k] for k, d in enumerate(prefix)]
        for pattern, p_click in click_patterns(probs):
            c, a, b = np.zeros(num_docs), np.zeros(num_docs), np.zeros(num_docs)
            for k, d in enumerate(prefix):
                c[d], a[d], b[d] = pattern[k], alpha[k], beta[k]
            for d in range(num_docs):
                r = max(rho[d], clip)
                estimates = {"ips": (c[d] - b[d]) / r, "dr": regression[d] + (c[d] - a[d] * regression[d] - b[d]) / r}
                for name, x in estimates.items():
                    moments[name][0][d] += p_rank * p_click * x
                    moments[name][1][d] += p_rank * p_click * x * x
    return {name: (m, s - m * m) for name, (m, s) in moments.items()}
