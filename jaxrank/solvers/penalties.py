"""Sparsity penalties for sparse RankSVM (Laporte et al., TNNLS 2014, eq. 2, 11–13 and Table II).

A penalty is a NamedTuple: its type picks the formula and its leaves are hyperparameters, so
it can be passed through ``jit`` and vmapped over. Every penalty offers

* ``value(w, lam)``: the full regulariser ``R_λ(w)`` added to the loss;
* ``weight(u, lam)`` with ``u = |w|``: the MM weights ``β ≥ 0`` such that the reweighted
  subproblem is ``L(w) + λ Σ_j β_j |w_j|`` (paper eq. 13); ``β = R_λ'(u) / λ``.

``value`` is exactly the integral of ``λ · weight``, so each MM step minimises a majoriser of
``L + value`` and the objective never increases. For log and ℓp this means the smoothed forms
``log(ε + u) - log ε`` and ``(u + ε)^p - ε^p`` (constants do not change minimisers; ε_p = 0
gives ``u^p``). Build penalties with the factories (``l1()``, ``log(eps)``, ``mcp(gamma)``,
``lp(p)``, ``scad(a)``), which reject impossible hyperparameters with ``ValueError``.
"""

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp

from jaxrank.utils.checks import check_number

ArrayLike = Union[jax.Array, float]


def soft_threshold(u: jax.Array, threshold: ArrayLike) -> jax.Array:
    """``prox_{τ‖·‖₁}(u) = sign(u) max(|u| - τ, 0)``; ``threshold`` broadcasts (weighted ℓ1)."""
    return jnp.sign(u) * jnp.maximum(jnp.abs(u) - threshold, 0.0)


def prox_l1(u: jax.Array, step: ArrayLike, lam: ArrayLike) -> jax.Array:
    """``prox_{step·λ‖·‖₁}(u)``."""
    return soft_threshold(u, step * lam)


def prox_weighted_l1(u: jax.Array, step: ArrayLike, lam: ArrayLike, weights: jax.Array) -> jax.Array:
    """``prox_{step·λ Σ β_j |·_j|}(u)_j = sign(u_j) max(|u_j| - step·λ·β_j, 0)`` (paper eq. 12)."""
    return soft_threshold(u, step * lam * weights)


def _safe_div(num, den):
    return num / jnp.where(den > 0, den, 1.0)


class L1(NamedTuple):
    """``R = λ‖w‖₁``, weight 1."""

    def value(self, w, lam):
        return lam * jnp.sum(jnp.abs(w))

    def weight(self, u, lam):
        del lam
        return jnp.ones_like(u)


class Log(NamedTuple):
    """``R = λ Σ [log(ε + |w_j|) - log ε]``, weight ``1 / (ε + u)`` (positive at 0, unlike skglm's)."""

    eps: ArrayLike = 0.01

    def value(self, w, lam):
        return lam * jnp.sum(jnp.log1p(jnp.abs(w) / self.eps))

    def weight(self, u, lam):
        del lam
        return 1.0 / (self.eps + u)


class Lp(NamedTuple):
    """``R = λ Σ [(|w_j| + ε)^p - ε^p]``, weight ``p / (u + ε)^(1-p)`` (smoothed at 0)."""

    p: ArrayLike = 0.5
    eps: ArrayLike = 1e-3

    def value(self, w, lam):
        return lam * jnp.sum((jnp.abs(w) + self.eps) ** self.p - self.eps**self.p)

    def weight(self, u, lam):
        del lam
        return self.p / (u + self.eps) ** (1.0 - self.p)


class MCP(NamedTuple):
    """Minimax concave penalty.

    ``lambda_inside=False`` (default; our choice, the paper does not fix the scaling):
    ``R = λ Σ g(|w_j|)`` with λ_M = 1, ``g(u) = u - u²/(2γ)`` for ``u ≤ γ``, ``γ/2`` beyond; weight
    ``max(1 - u/γ, 0)``.
    ``lambda_inside=True``: ``R = Σ p_λ(|w_j|)``, ``p_λ(u) = λu - u²/(2γ)`` for ``u ≤ γλ``,
    ``γλ²/2`` beyond; ``p_λ' = max(λ - u/γ, 0)``, so the weight is ``max(1 - u/(γλ), 0)``.
    """

    gamma: ArrayLike = 3.0
    lambda_inside: ArrayLike = False

    def _scale(self, lam):
        # both forms are t·g(u/t)·t-scaled versions of the λ_M = 1 penalty with t = λ (inside) or 1
        return jnp.where(self.lambda_inside, lam, 1.0)

    def value(self, w, lam):
        t = self._scale(lam)
        u = jnp.abs(w)
        inner = jnp.where(u <= self.gamma * t, t * u - u * u / (2.0 * self.gamma), self.gamma * t * t / 2.0)
        return jnp.sum(inner) * jnp.where(self.lambda_inside, 1.0, lam)

    def weight(self, u, lam):
        t = self._scale(lam)
        return jnp.where(t > 0, jnp.maximum(1.0 - _safe_div(u, self.gamma * t), 0.0), 0.0)


class SCAD(NamedTuple):
    """Fan & Li's SCAD with λ inside: ``R = Σ p_λ(|w_j|)``, weight ``p_λ'(u) / λ``.

    Fan & Li (JASA 2001); Laporte et al. 2014 only name it (§II-D) and do not use it in experiments.
    """

    a: ArrayLike = 3.7

    def value(self, w, lam):
        u = jnp.abs(w)
        a = self.a
        middle = (2.0 * a * lam * u - u * u - lam * lam) / (2.0 * (a - 1.0))
        far = lam * lam * (a + 1.0) / 2.0
        return jnp.sum(jnp.where(u <= lam, lam * u, jnp.where(u <= a * lam, middle, far)))

    def weight(self, u, lam):
        tail = _safe_div(jnp.maximum(self.a * lam - u, 0.0), (self.a - 1.0) * lam)
        return jnp.where(u <= lam, 1.0, tail)


Penalty = Union[L1, Log, Lp, MCP, SCAD]


def check_lambda(lam) -> None:
    """λ ≥ 0 (checked whenever λ is concrete, i.e. outside ``jit``)."""
    check_number("lam", lam, low=0, low_inclusive=True,
                 fix="λ weighs the penalty; use a grid below lambda_max(pairs), e.g. lambda_grid(lambda_max(pairs))")


def l1() -> L1:
    return L1()


def log(eps: ArrayLike = 0.01) -> Log:
    check_number("eps", eps, low=0, fix="ε smooths log(ε + |w|) at 0; the default is 0.01")
    return Log(eps=eps)


def lp(p: ArrayLike = 0.5, eps: ArrayLike = 1e-3) -> Lp:
    check_number("p", p, low=0, high=1, fix="use e.g. p=0.5 (the paper's ℓ0.5); p=1 is l1()")
    check_number("eps", eps, low=0, fix="ε_p smooths the ℓp weight at 0; the default is 1e-3")
    return Lp(p=p, eps=eps)


def mcp(gamma: ArrayLike = 3.0, *, lambda_inside: bool = False) -> MCP:
    check_number("gamma", gamma, low=1, fix="MCP's γ sets where the penalty flattens; the default is 3")
    return MCP(gamma=gamma, lambda_inside=lambda_inside)


def scad(a: ArrayLike = 3.7) -> SCAD:
    check_number("a", a, low=2, fix="Fan & Li's default is a=3.7")
    return SCAD(a=a)
