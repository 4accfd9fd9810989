"""A squared-hinge datafit for skglm 0.5 (which ships none), shared by the skglm parity tests and
``benchmarks/sparse_ranksvm.py``: ``(1/n) Σ_i max(0, 1 − y_i x_iᵀw)²`` over pair rows ``x_i``."""

import numpy as np
from skglm.datafits import BaseDatafit


class SquaredHingePairs(BaseDatafit):
    """``(1/n) Σ_i max(0, 1 - y_i x_iᵀw)²`` (paper eq. 5 over the pair rows, scaled by 1/N_p)."""

    def __init__(self):
        pass

    def get_spec(self):
        return ()

    def params_to_dict(self):
        return dict()

    def initialize(self, X, y):
        pass

    def value(self, y, w, Xw):
        r = np.maximum(1.0 - y * Xw, 0.0)
        return np.sum(r * r) / len(y)

    def gradient_scalar(self, X, y, w, Xw, j):
        r = np.maximum(1.0 - y * Xw, 0.0)
        return -2.0 * np.sum(X[:, j] * y * r) / len(y)

    def gradient(self, X, y, Xw):
        r = np.maximum(1.0 - y * Xw, 0.0)
        return -2.0 * X.T @ (y * r) / len(y)

    def get_lipschitz(self, X, y):
        lipschitz = np.zeros(X.shape[1])
        for j in range(X.shape[1]):
            lipschitz[j] = 2.0 * np.sum(X[:, j] ** 2) / len(y)
        return lipschitz

    def get_global_lipschitz(self, X, y):
        return 2.0 * np.linalg.norm(X, ord=2) ** 2 / len(y)
