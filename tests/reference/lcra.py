"""Plain NumPy transcriptions for SPD and LCRA, written from the papers (no jaxrank code).

* ``rejection_law``: the exact law of the LCRA paper's pair sampler (§2.1): draw two training
  documents uniformly (with replacement) until they share a query and have different labels. Every
  one of the ``m²`` ordered draws is equally likely and the accepted ones are kept, so the law is the
  normalised indicator of acceptance; we enumerate the ``m²`` draws literally.
* ``sofia_rank_law``: sofia-ml's ``StochasticRankLoop``: ``a`` uniform over all ``m`` examples, the
  iteration is skipped when ``a`` has no other-label document in its query, else ``b`` uniform among them.
* ``spd_step``: pairwise Pegasos (Shalev-Shwartz et al. 2007; Sculley 2009), sofia-ml's
  ``SinglePegasosRankStep`` order: margin with the old ``w``, shrink clamped at ``clamp``, add, project.
* ``lcra_step``: Algorithm 1 line 6 / eq. 3 of the LCRA paper with the descent sign, all views from
  the old ``W``, hinge or squared loss, written with explicit loops over views and pairs.
"""

import math

import numpy as np


def rejection_law(qid, labels, usable, *, need_different_labels=True):
    """``{(a, b): probability}`` over document indices of one flat training set.

    ``usable[i]`` says whether document ``i`` takes part (labeled, or unlabeled for ``P̂``).
    """
    docs = [i for i in range(len(qid)) if usable[i]]
    accepted = {}
    for a in docs:
        for b in docs:
            same_query = qid[a] == qid[b]
            ok = same_query and (labels[a] != labels[b] if need_different_labels else a != b)
            if ok:
                accepted[(a, b)] = accepted.get((a, b), 0) + 1
    total = sum(accepted.values())
    return {pair: count / total for pair, count in accepted.items()}


def sofia_rank_law(qid, labels, usable):
    """``({(a, b): probability}, skip probability)`` of one sofia-ml rank-loop draw."""
    docs = [i for i in range(len(qid)) if usable[i]]
    law, skip = {}, 0.0
    for a in docs:
        partners = [b for b in docs if qid[b] == qid[a] and labels[b] != labels[a]]
        if not partners:
            skip += 1.0 / len(docs)
            continue
        for b in partners:
            law[(a, b)] = law.get((a, b), 0.0) + 1.0 / len(docs) / len(partners)
    return law, skip


def learning_rate(lam, t, schedule="pegasos", eta0=1.0):
    if schedule == "pegasos":
        return 1.0 / (lam * t)
    return eta0 / (1.0 + eta0 * lam * t)


def spd_step(w, t, p, y, lam, *, clamp=1e-7, project=True, schedule="pegasos", eta0=1.0):
    """One SPD step from ``w`` (step ``t`` ≥ 1) on pairs ``p [k, D]`` with hinge labels ``y [k]``."""
    w = np.array(w, dtype=np.float64)
    eta = learning_rate(lam, t, schedule, eta0)
    margins = [y[i] * float(np.dot(w, p[i])) for i in range(len(y))]
    new = max(1.0 - eta * lam, clamp) * w
    for i in range(len(y)):
        if margins[i] < 1.0:
            new = new + eta * y[i] * np.asarray(p[i], np.float64)
    if project:
        norm = math.sqrt(float(np.dot(new, new)))
        if norm > 0 and 1.0 / (math.sqrt(lam) * norm) < 1.0:
            new = new / (math.sqrt(lam) * norm)
    return new


def lcra_step(W, views, t, p, y, p_hat, lam, mu, *, loss="hinge", clamp=1e-7, project=False,
              schedule="pegasos", eta0=1.0):
    """One LCRA step. ``W [M, D]`` (zero outside views), ``views [M, D]`` 0/1, ``p [k, D]``, ``y [k]``
    (sign label for hinge, graded for squared), ``p_hat [l, D]``, ``lam [M]``."""
    W = np.array(W, dtype=np.float64)
    M = W.shape[0]
    new = np.zeros_like(W)
    for v in range(M):
        eta = learning_rate(lam[v], t, schedule, eta0)
        pv = [np.asarray(p[i], np.float64) * views[v] for i in range(len(y))]
        grad_term = np.zeros(W.shape[1])
        for i in range(len(y)):
            s = float(np.dot(W[v], pv[i]))
            if loss == "hinge":
                if y[i] * s < 1.0:
                    grad_term += y[i] * pv[i]
            else:
                grad_term += (y[i] - s) * pv[i]
        co_term = np.zeros(W.shape[1])
        for u in range(M):
            if u == v:
                continue
            for j in range(len(p_hat)):
                ph = np.asarray(p_hat[j], np.float64)
                gap = float(np.dot(W[v], ph * views[v])) - float(np.dot(W[u], ph * views[u]))
                co_term += gap * ph * views[v]
        new[v] = max(1.0 - eta * lam[v], clamp) * W[v] + eta * grad_term - 4.0 * mu * eta * co_term
        if project:
            norm = math.sqrt(float(np.dot(new[v], new[v])))
            if norm > 0 and 1.0 / (math.sqrt(lam[v]) * norm) < 1.0:
                new[v] = new[v] / (math.sqrt(lam[v]) * norm)
    return new
