"""Independent float64 NumPy sparse RankSVM (explicit pair matrix, FISTA, reweighted-ℓ1 MM).

Shares no code with ``jaxrank.solvers``: pairs are stacked row by row with Python loops, the
Lipschitz constant comes from ``numpy.linalg.eigvalsh`` and the penalties are written out again
from Laporte et al. 2014 (eq. 2, Table II). Loss scaling as in jaxrank: ``(1/N_p) Σ_p max(0, 1 - wᵀx_p)²``.
"""

import numpy as np


def pair_matrix(features, labels, mask):
    """``[N_p, D]`` rows ``x_i - x_j`` for every query and pair with ``l_i > l_j``, both real."""
    rows = []
    for x, y, m in zip(np.asarray(features, np.float64), np.asarray(labels), np.asarray(mask)):
        idx = np.flatnonzero(m)
        for i in idx:
            for j in idx:
                if y[i] > y[j]:
                    rows.append(x[i] - x[j])
    return np.array(rows)


def loss(X, w):
    r = np.maximum(1.0 - X @ w, 0.0)
    return r @ r / X.shape[0]


def grad(X, w):
    r = np.maximum(1.0 - X @ w, 0.0)
    return -2.0 * X.T @ r / X.shape[0]


def lipschitz(X):
    return 2.0 * np.linalg.eigvalsh(X.T @ X)[-1] / X.shape[0]


def penalty_value(name, w, lam, **hp):
    u = np.abs(w)
    if name == "l1":
        return lam * u.sum()
    if name == "log":
        eps = hp.get("eps", 0.01)
        return lam * np.sum(np.log(eps + u) - np.log(eps))
    if name == "lp":
        p, eps = hp.get("p", 0.5), hp.get("eps", 1e-3)
        return lam * np.sum((u + eps) ** p - eps**p)
    if name == "mcp":
        g = hp.get("gamma", 3.0)
        return lam * np.sum(np.where(u <= g, u - u**2 / (2 * g), g / 2))
    if name == "mcp_inside":
        g = hp.get("gamma", 3.0)
        return np.sum(np.where(u <= g * lam, lam * u - u**2 / (2 * g), g * lam**2 / 2))
    if name == "scad":
        a = hp.get("a", 3.7)
        mid = (2 * a * lam * u - u**2 - lam**2) / (2 * (a - 1))
        return np.sum(np.where(u <= lam, lam * u, np.where(u <= a * lam, mid, lam**2 * (a + 1) / 2)))
    raise ValueError(name)


def penalty_derivative(name, u, lam, **hp):
    """``R_λ'(u)`` per coordinate (the MM subproblem's ℓ1 thresholds, before the step size)."""
    if name == "l1":
        return lam * np.ones_like(u)
    if name == "log":
        return lam / (hp.get("eps", 0.01) + u)
    if name == "lp":
        p, eps = hp.get("p", 0.5), hp.get("eps", 1e-3)
        return lam * p * (u + eps) ** (p - 1)
    if name == "mcp":
        return lam * np.maximum(1 - u / hp.get("gamma", 3.0), 0)
    if name == "mcp_inside":
        return np.maximum(lam - u / hp.get("gamma", 3.0), 0)
    if name == "scad":
        a = hp.get("a", 3.7)
        return np.where(u <= lam, lam, np.maximum(a * lam - u, 0) / (a - 1))
    raise ValueError(name)


def fista(X, thresholds, w0=None, tol=1e-10, max_iter=100_000):
    """Restarted FISTA for ``loss + Σ_j thresholds_j |w_j|``, stopped on the KKT residual."""
    d = X.shape[1]
    step = 1.0 / lipschitz(X)
    w = np.zeros(d) if w0 is None else np.array(w0, np.float64)
    v, t = w.copy(), 1.0
    scale = max(np.max(thresholds), 1e-300)
    for k in range(max_iter):
        g = grad(X, w)
        resid = np.where(w == 0, np.maximum(np.abs(g) - thresholds, 0), np.abs(g + thresholds * np.sign(w)))
        if resid.max() <= tol * scale:
            return w, k
        z = v - step * grad(X, v)
        w_new = np.sign(z) * np.maximum(np.abs(z) - step * thresholds, 0)
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        if (v - w_new) @ (w_new - w) > 0:
            v, t_new = w_new.copy(), 1.0
        else:
            v = w_new + (t - 1) / t_new * (w_new - w)
        w, t = w_new, t_new
    return w, max_iter


def reweighted(X, lam, name, num_outer=10, outer_tol=1e-4, tol=1e-10, **hp):
    """MM: start at the ℓ1 solution, then ``num_outer`` weighted-ℓ1 rounds. Returns (w, objectives)."""
    d = X.shape[1]
    w, _ = fista(X, lam * np.ones(d), tol=tol)
    objs = [loss(X, w) + penalty_value(name, w, lam, **hp)]
    for _ in range(num_outer):
        w_new, _ = fista(X, penalty_derivative(name, np.abs(w), lam, **hp), w0=w, tol=tol)
        moved = np.max(np.abs(w_new - w))
        w = w_new
        objs.append(loss(X, w) + penalty_value(name, w, lam, **hp))
        if moved < outer_tol:
            break
    return w, np.array(objs)
