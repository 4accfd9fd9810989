"""Plain NumPy transcriptions of the online learners, written from the papers (no jaxrank code).

* ``pair_stream``: pairs of one query, row-major over i < j, both real, grades differ.
* ``pa2``: PA-II (Crammer et al. 2006) closed form, for a second opinion next to scikit-learn.
* ``arow``: AROW (Crammer, Kulesza, Dredze 2009) as SOLAR-II writes it (Wang et al. 2015, eq. 8–9).
* ``prank``: Crammer & Singer (2001), Figure 1 of the Prank paper.
* ``prank_pairwise``, ``committee_perceptron``: the rules of the jaxrank docstrings (our reading of
  SOLAR's baselines, Wang et al. 2015, §5.2; Elsas et al., WSDM 2008), one instance at a time.
"""

import numpy as np


def pair_stream(features, labels, mask):
    """``(z [P, D], s [P])`` of one query in the fixed slot order."""
    zs, ss = [], []
    n = len(labels)
    for i in range(n):
        for j in range(i + 1, n):
            if mask[i] and mask[j] and labels[i] != labels[j]:
                zs.append(features[i] - features[j])
                ss.append(1.0 if labels[i] > labels[j] else -1.0)
    d = features.shape[1]
    return np.asarray(zs, dtype=features.dtype).reshape(-1, d), np.asarray(ss, dtype=features.dtype)


def batch_stream(features, labels, mask):
    """Concatenates ``pair_stream`` over queries ``[Q, L, D]`` in query order."""
    parts = [pair_stream(features[q], labels[q], mask[q]) for q in range(len(labels))]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def pa2(z, s, c):
    w = np.zeros(z.shape[1], dtype=z.dtype)
    for zt, yt in zip(z, s):
        loss = max(0.0, 1.0 - yt * w.dot(zt))
        if loss > 0:
            w = w + loss / (zt.dot(zt) + 1.0 / (2.0 * c)) * yt * zt
    return w


def arow(z, s, r, guard=True):
    d = z.shape[1]
    mu = np.zeros(d, dtype=z.dtype)
    sigma = np.eye(d, dtype=z.dtype)
    for x, y in zip(z, s):
        hinge = max(0.0, 1.0 - y * mu.dot(x))
        if guard and hinge <= 0:
            continue
        confidence = x.dot(sigma).dot(x)
        beta = 1.0 / (confidence + r)  # AROW's beta_t
        alpha = hinge * beta
        sx = sigma.dot(x)
        mu = mu + alpha * y * sx
        sigma = sigma - beta * np.outer(sx, sx)
    return mu, sigma


def prank(x, y, num_ranks, w=None, b=None):
    """Prank over examples ``x [T, D]`` with ranks ``y`` in ``1..num_ranks``."""
    w = np.zeros(x.shape[1], dtype=x.dtype) if w is None else w.copy()
    b = np.zeros(num_ranks - 1, dtype=x.dtype) if b is None else b.copy()
    for xt, yt in zip(x, y):
        value = w.dot(xt)
        thresholds = list(b) + [np.inf]
        y_hat = next(r + 1 for r in range(num_ranks) if value - thresholds[r] < 0)
        if y_hat == yt:
            continue
        tau = np.zeros(num_ranks - 1, dtype=x.dtype)
        for r in range(1, num_ranks):
            y_r = 1.0 if yt > r else -1.0
            if y_r * (value - b[r - 1]) <= 0:
                tau[r - 1] = y_r
        w = w + tau.sum() * xt
        b = b - tau
    return w, b


def prank_pairwise(z, s):
    w = np.zeros(z.shape[1], dtype=z.dtype)
    b = 0.0
    for zt, yt in zip(z, s):
        if yt * (w.dot(zt) - b) <= 0:
            w = w + yt * zt
            b = b - yt
    return w, b


def committee_perceptron(z, s, n=20):
    w = np.zeros(z.shape[1], dtype=z.dtype)
    c = 0
    committee = []  # list of [w, c], insertion order
    for zt, yt in zip(z, s):
        if yt * w.dot(zt) > 0:
            c += 1
            continue
        if len(committee) < n:
            committee.append([w.copy(), c])
        else:
            k = min(range(n), key=lambda i: (committee[i][1], i))
            if c > committee[k][1]:
                committee[k] = [w.copy(), c]
        w = w + yt * zt
        c = 0
    return w, c, committee


def committee_score(w, committee, x):
    if not committee:
        return x.dot(w)
    return sum(ck * x.dot(wk) for wk, ck in committee)
