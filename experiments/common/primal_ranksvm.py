"""The SOLAR paper's RankSVM baseline, as an algorithm: Chapelle's primal Newton (Chapelle 2007,
"Training a support vector machine in the primal", §4 and its RankSVM application; Chapelle &
Keerthi 2010, §3), in NumPy float64, for the scalability comparison (Wang et al., ACL 2015, Fig. 3
and footnote 3: "we adopt the code from [9]").

    min_w  ½‖w‖² + (C/2) Σ_p max(0, 1 − wᵀ(x_i − x_j))²

over the preference pairs ``p = (i, j)``. Every Newton step forms the difference rows of the pairs
with a positive loss, ``[n_sv, D]`` (what multiplying the sparse pair matrix by the features
gives), the Hessian ``I + C Xsvᵀ Xsv``, solves for the Newton direction, then minimises exactly
along it by 1-D Newton on the piecewise quadratic; it stops when the Newton decrement falls below
``prec`` times the objective. The data flow (explicit rows, dense ``D x D`` solve) is the paper's
baseline's; jaxrank's ``solvers.ranksvm`` solves the same problem (``λ = 2 / (C N_p)``).
"""

from typing import NamedTuple

import numpy as np


class PrimalInfo(NamedTuple):
    objective: float
    newton_steps: int
    active_pairs: int  # pairs with a positive loss at the solution


def primal_ranksvm(features: np.ndarray, first: np.ndarray, second: np.ndarray, c: float, *,
                   max_newton: int = 20, prec: float = 1e-4) -> tuple[np.ndarray, PrimalInfo]:
    """Chapelle's primal Newton RankSVM from ``w = 0``.

    Args:
      features: ``[N, D]`` documents.
      first, second: ``[P]`` indices of the pairs, ``first`` preferred.
      c: the loss weight ``C`` of every pair.
      max_newton: most Newton steps.
      prec: stop once the Newton decrement ``−stepᵀ grad`` is below ``prec · objective``.

    Returns:
      ``(w [D], PrimalInfo)``, float64.
    """
    x = np.asarray(features, np.float64)
    first, second = np.asarray(first), np.asarray(second)
    num_docs, dim = x.shape
    w = np.zeros(dim)
    out = np.ones(first.shape[0])  # 1 − margins, at w = 0
    steps = 0

    def pair_apply(v):  # A v: the margin of every pair for document scores v
        return v[first] - v[second]

    def pair_transpose(u):  # Aᵀ u: each pair's weight added to its first document, taken from its second
        return np.bincount(first, u, num_docs) - np.bincount(second, u, num_docs)

    obj = 0.0
    for steps in range(1, max_newton + 1):
        loss = np.maximum(out, 0.0)
        obj = 0.5 * w @ w + 0.5 * c * loss @ loss
        grad = w - c * (x.T @ pair_transpose(loss))
        sv = out > 0
        rows = x[first[sv]] - x[second[sv]]  # [n_sv, D] difference rows of the active pairs
        hessian = np.eye(dim) + c * (rows.T @ rows)
        step = -np.linalg.solve(hessian, grad)
        # Exact line search: 1-D Newton on t ↦ F(w + t·step), piecewise quadratic.
        along = pair_apply(x @ step)
        wd, dd, t = w @ step, step @ step, 0.0
        for _ in range(50):
            out_t = out - t * along
            act = out_t > 0
            g = wd + t * dd - c * (out_t[act] @ along[act])
            h = dd + c * (along[act] @ along[act])
            t -= g / h
            if g * g / h < 1e-10:
                break
        w = w + t * step
        out = out - t * along
        if -step @ grad < prec * obj:
            break
    loss = np.maximum(out, 0.0)
    return w, PrimalInfo(float(0.5 * w @ w + 0.5 * c * loss @ loss), steps, int((out > 0).sum()))
