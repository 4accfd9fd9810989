"""SOLAR (Wang, Wan, Zhang, Hoi, ACL 2015): online pairwise learners on pair differences.

SOLAR-I is PA-II with the squared hinge (paper eq. 4–6; Crammer et al. 2006); SOLAR-II is AROW with a
full covariance (paper eq. 7–9; Crammer, Kulesza, Dredze 2009). ``step`` learns from one pair
``(z, y)``; ``update(state, query)`` runs one query's pair slots in order (``pairs.py``) and also
takes a ready ``Pairs``; SOLAR-II's ``steps`` runs a segment of the online protocol's steps at once.
Documents are scored by ``features @ w``.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners.linear import linear_readout, linear_score
from jaxrank.learners.online.pairs import pairwise_update
from jaxrank.types import OnlineLearner
from jaxrank.utils.checks import check_number


class SolarFirstOrderState(NamedTuple):
    w: jax.Array  # [D] f32, weights
    t: jax.Array  # [] i32, queries seen


_ALIGN = 16  # float32 lanes of an AVX-512 register: SOLAR-II's block form pads D to a multiple of it


class SolarSecondOrderState(NamedTuple):
    w: jax.Array  # [D] f32, mean
    sigma: jax.Array  # [D, D] f32, covariance
    t: jax.Array  # [] i32, queries seen


score = linear_score  # ``[..., L]`` scores ``features @ w`` of any state or readout with a ``w`` leaf


def solar_first_order(c=1e-5) -> OnlineLearner:
    """SOLAR-I: ``ℓ = max(0, 1 − y wᵀz)``, ``τ = ℓ / (‖z‖² + 1/(2C))``, ``w += τ y z``. ``C > 0``."""
    check_number("c", c, low=0)
    c = jnp.asarray(c, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> SolarFirstOrderState:
        del key
        return SolarFirstOrderState(w=jnp.zeros(num_features, dtype), t=jnp.zeros((), jnp.int32))

    def step(state: SolarFirstOrderState, z, y):
        w = state.w
        loss = jnp.maximum(0.0, 1.0 - y * (w @ z))
        tau = loss / (z @ z + 0.5 / c.astype(w.dtype))
        return state._replace(w=w + tau * y * z), loss, loss > 0

    return OnlineLearner(init, pairwise_update(step), step, linear_readout, linear_score)


def solar_second_order(gamma=1e4, guard: bool = True) -> OnlineLearner:
    """SOLAR-II (AROW): on a pair with ``ℓ = max(0, 1 − y wᵀz) > 0`` (always if ``guard=False``),
    ``β = zᵀΣz + γ``, ``w += (ℓ/β) y Σz``, ``Σ −= (Σz)(Σz)ᵀ/β``. ``γ > 0``; ``guard`` is static."""
    check_number("gamma", gamma, low=0)
    gamma = jnp.asarray(gamma, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> SolarSecondOrderState:
        del key
        return SolarSecondOrderState(
            w=jnp.zeros(num_features, dtype), sigma=jnp.eye(num_features, dtype=dtype), t=jnp.zeros((), jnp.int32)
        )

    def step(state: SolarSecondOrderState, z, y):
        w, sigma = state.w, state.sigma
        loss = jnp.maximum(0.0, 1.0 - y * (w @ z))
        sz = sigma @ z
        beta = z @ sz + gamma.astype(w.dtype)
        updated = loss > 0 if guard else jnp.ones((), bool)
        w = jnp.where(updated, w + (loss / beta) * y * sz, w)
        sigma = jnp.where(updated, sigma - jnp.outer(sz, sz) / beta, sigma)
        return state._replace(w=w, sigma=sigma), loss, updated

    def steps(state: SolarSecondOrderState, z, y, live):
        """``S`` steps in order (``z [S, D]``, ``y [S]``, ``live [S]`` bool, a step with ``live`` False
        skipped), equal to ``S`` calls of ``step`` up to rounding, reading ``Σ`` in two ``[S, D] × [D, D]``
        products instead of ``2S`` matrix-vector passes. With ``Σ₀`` the covariance before them,
        ``Σ_{k−1} z_k = Σ_m R_km Σ₀z_m``: the coefficients ``R [S, S]`` follow from the rank-one updates
        and ``M = Z Σ₀ Zᵀ`` alone (``z_jᵀ Σ_{k−1} z_k = (R M)_kj``, ``β_k = (R M)_kk + γ``, the margin
        from ``w₀ᵀz_k`` and the earlier steps' coefficients), and ``w``, ``Σ`` take the ``S`` updates at
        the end: ``U = R Z Σ₀``, ``w = w₀ + Σ_k a_k U_k``, ``Σ = Σ₀ − Σ_k c_k U_kᵀU_k`` (``a_k = ℓ_k y_k / β_k``,
        ``c_k = 1/β_k``, both 0 for a step that does not update). ``D`` is padded with zeros to a
        multiple of ``_ALIGN`` inside (exact: the padded entries stay 0 and are cut off)."""
        d = state.w.shape[0]
        pad = -d % _ALIGN  # zero columns: the products run on whole vector registers (MQ2008: 46 -> 48)
        w0, z = jnp.pad(state.w, (0, pad)), jnp.pad(z, ((0, 0), (0, pad)))
        sigma0 = jnp.pad(state.sigma, ((0, pad), (0, pad)))
        size = z.shape[0]
        a0t = sigma0 @ z.T  # [D, S] columns Σ₀ z_m
        gram = z @ a0t  # [S, S] M
        margin0 = z @ w0  # [S] w₀ᵀ z_k
        gamma_ = gamma.astype(w0.dtype)
        # Row k: R_k [S], (R M)_k [S], a_k, c_k; one table, so a step updates one row. R is unit lower
        # triangular and rows k.. are still 0 at step k, so step k reads rows 0..k-1 and R_k[:k+1] only.
        table = jnp.zeros((size, 2 * size + 2), w0.dtype)
        eye = jnp.eye(size, dtype=w0.dtype)
        for k in range(size):
            col, wcoef, scoef = table[:k, size + k], table[:k, 2 * size], table[:k, 2 * size + 1]
            r = eye[k] - jnp.sum((scoef * col)[:, None] * table[:k, :size], axis=0)
            loss = jnp.maximum(0.0, 1.0 - y[k] * (margin0[k] + jnp.sum(wcoef * col)))
            p = jnp.sum(r[:k + 1, None] * gram[:k + 1], axis=0)
            beta = p[k] + gamma_
            updated = live[k] & ((loss > 0) if guard else True)
            coefs = jnp.where(updated, jnp.stack([loss / beta * y[k], 1.0 / beta]), 0.0)
            table = table.at[k].set(jnp.concatenate([r, p, coefs]))
        ut = a0t @ table[:, :size].T  # [D, S]
        wcoef, scoef = table[:, 2 * size], table[:, 2 * size + 1]
        return state._replace(w=(w0 + ut @ wcoef)[:d], sigma=(sigma0 - (ut * scoef) @ ut.T)[:d, :d])

    return OnlineLearner(init, pairwise_update(step), step, linear_readout, linear_score, steps=steps)
