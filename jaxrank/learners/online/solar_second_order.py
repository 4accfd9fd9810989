"""SOLAR-II (Wang, Wan, Zhang, Hoi, ACL 2015, eq. 7–9): AROW with a full covariance on pair
differences (Crammer, Kulesza, Dredze 2009).

On a pair ``(z, y)`` with ``ℓ = max(0, 1 − y wᵀz) > 0`` (always if ``guard=False``):
``β = zᵀΣz + γ``, ``w += (ℓ/β) y Σz``, ``Σ −= (Σz)(Σz)ᵀ/β``. ``step`` learns from one pair,
``update(state, query)`` runs one query's pair slots in order (``pair_slots``), ``steps`` runs a
segment of the online protocol's steps at once. Documents are scored by ``features @ w``.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.learners.online.pair_slots import pairwise_update
from jaxrank.types import InstanceInfo, Learner
from jaxrank.utils.checks import check_number

HPARAMS = {
    "gamma": 1e4,  # AROW's regularizer γ; SOLAR paper §5.2 (online experiments)
}
OPTIONS = {
    "guard": True,  # update only on a margin violation ℓ > 0, as AROW (Crammer et al. 2009, Fig. 1) and LIBOL
}

_ALIGN = 16  # float32 lanes of an AVX-512 register: the block form pads D to a multiple of it


class SolarSecondOrderState(NamedTuple):
    w: jax.Array  # [D] mean
    sigma: jax.Array  # [D, D] covariance
    gamma: jax.Array  # [] f32, γ
    t: jax.Array  # [] i32, queries seen


def init(key, num_features: int, dtype=jnp.float32, *, gamma=HPARAMS["gamma"]) -> SolarSecondOrderState:
    """``w = 0``, ``Σ = I``; ``γ > 0`` (checked when concrete)."""
    del key
    check_number("gamma", gamma, low=0, fix="γ is AROW's regularizer, e.g. 1e4 (SOLAR §5.2)")
    return SolarSecondOrderState(w=jnp.zeros(num_features, dtype), sigma=jnp.eye(num_features, dtype=dtype),
                                 gamma=jnp.asarray(gamma, jnp.float32), t=jnp.zeros((), jnp.int32))


def step(state: SolarSecondOrderState, z, y, *, guard: bool = OPTIONS["guard"]):
    """One pair (eq. 8–9): returns ``(state, InstanceInfo(ℓ, updated))``."""
    w, sigma = state.w, state.sigma
    loss = jnp.maximum(0.0, 1.0 - y * (w @ z))
    sz = sigma @ z
    beta = z @ sz + state.gamma.astype(w.dtype)
    updated = loss > 0 if guard else jnp.ones((), bool)
    w = jnp.where(updated, w + (loss / beta) * y * sz, w)
    sigma = jnp.where(updated, sigma - jnp.outer(sz, sz) / beta, sigma)
    return state._replace(w=w, sigma=sigma), InstanceInfo(loss=loss, updated=updated)


def steps(state: SolarSecondOrderState, z, y, live, *, guard: bool = OPTIONS["guard"]):
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
    gamma = state.gamma.astype(w0.dtype)
    # Row k: R_k [S], (R M)_k [S], a_k, c_k; one table, so a step updates one row. R is unit lower
    # triangular and rows k.. are still 0 at step k, so step k reads rows 0..k-1 and R_k[:k+1] only.
    table = jnp.zeros((size, 2 * size + 2), w0.dtype)
    eye = jnp.eye(size, dtype=w0.dtype)
    for k in range(size):
        col, wcoef, scoef = table[:k, size + k], table[:k, 2 * size], table[:k, 2 * size + 1]
        r = eye[k] - jnp.sum((scoef * col)[:, None] * table[:k, :size], axis=0)
        loss = jnp.maximum(0.0, 1.0 - y[k] * (margin0[k] + jnp.sum(wcoef * col)))
        p = jnp.sum(r[:k + 1, None] * gram[:k + 1], axis=0)
        beta = p[k] + gamma
        updated = live[k] & ((loss > 0) if guard else True)
        coefs = jnp.where(updated, jnp.stack([loss / beta * y[k], 1.0 / beta]), 0.0)
        table = table.at[k].set(jnp.concatenate([r, p, coefs]))
    ut = a0t @ table[:, :size].T  # [D, S]
    wcoef, scoef = table[:, 2 * size], table[:, 2 * size + 1]
    return state._replace(w=(w0 + ut @ wcoef)[:d], sigma=(sigma0 - (ut * scoef) @ ut.T)[:d, :d])


def make(*, guard: bool = OPTIONS["guard"]) -> Learner:
    """SOLAR-II as a ``jaxrank.types.Learner``; ``guard`` (static) as in ``OPTIONS``."""
    if not isinstance(guard, (bool,)):
        raise ValueError(f"guard must be True or False; got {guard!r}.")
    one = functools.partial(step, guard=guard)
    return Learner(init=init, update=functools.partial(pairwise_update, one), params=linear.params,
                   score=linear.score, step=one, steps=functools.partial(steps, guard=guard))
