"""SPD: stochastic pairwise descent = pairwise Pegasos (Sculley 2009; Shalev-Shwartz et al. 2007).

The LCRA paper's baseline (Tsivtsivadze et al. 2012, §4) and sofia-ml's Pegasos learner in its
``rank`` loop. State ``w`` starts at 0; at step ``t = 1..N`` with ``k`` labeled pairs ``A_t`` and
``A_t⁺ = {(p, y) ∈ A_t : y wᵀp < 1}`` (margins taken with the old ``w``)::

    η_t = 1/(λ t)                      (schedule="pegasos", Algorithm 1 of the LCRA paper)
    η_t = η0 / (1 + η0 λ t)            (schedule="eta0", the "learning rate η0" of its §4) [ours]
    w ← max(1 − η_t λ, clamp) · w + η_t Σ_{A_t⁺} y p
    w ← min(1, 1/(√λ ‖w‖)) · w         (project_ball=True; Pegasos / sofia-ml projection)

The sum over ``A_t⁺`` is not divided by ``k`` (LCRA paper eq. 3; Pegasos divides by ``k``, which
only matters for ``k > 1``). ``clamp`` mirrors sofia-ml's ``L2Regularize``, whose shrink factor never
drops below 1e-7 (at ``t = 1`` the exact factor ``1 − η_1 λ`` is 0 and would erase ``w``); ``clamp=0``
gives the textbook update. The hinge label is ``sign(l_a − l_b)`` unless ``graded_label=True``
(the LCRA paper's label, §2.1; the margin condition ``y wᵀp < 1`` then uses the graded difference).
The sign label by default is our choice: the paper does not say which label its hinge loss uses.

A step whose labeled draws are all invalid (sofia-ml's skipped iteration, see ``pair_sampling.py``) leaves
``w`` untouched while ``t`` still advances, as in sofia-ml's ``StochasticRankLoop``.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.pairs import PairBatch
from jaxrank.types import Learner, UpdateInfo
from jaxrank.utils.checks import check_choice, check_number

SCHEDULES = ("pegasos", "eta0")
SOFIA_MIN_SCALING = 1e-7  # sofia-ml MIN_SCALING_FACTOR

HPARAMS = {
    "lam": 0.1,  # λ: sofia-ml's default --lambda (Sculley 2009)
    "eta0": 1.0,  # η0 of schedule="eta0" (LCRA paper §4, "learning rate η0"); unused by "pegasos"
    "clamp": SOFIA_MIN_SCALING,  # floor of the shrink factor: sofia-ml's L2Regularize MIN_SCALING_FACTOR
}
OPTIONS = {
    "schedule": "pegasos",  # η_t = 1/(λt): Pegasos and LCRA paper Algorithm 1; "eta0": η0/(1 + η0 λ t)
    "project_ball": True,  # Pegasos projection onto the ball of radius 1/√λ (sofia-ml's default)
    "graded_label": False,  # hinge label sign(l_a − l_b) (ours); True: the graded difference (LCRA paper §2.1)
}


class SPDState(NamedTuple):
    w: jax.Array  # [D] weights
    lam: jax.Array  # [] f32, λ
    eta0: jax.Array  # [] f32, η0
    clamp: jax.Array  # [] f32, shrink floor
    t: jax.Array  # [] i32, steps taken


def check_schedule(schedule: str) -> None:
    check_choice("schedule", schedule, SCHEDULES)


def check_hparams(lam, eta0, clamp) -> None:
    """Rejects concrete ``λ ≤ 0``, ``η0 ≤ 0`` or ``clamp < 0`` (traced values pass)."""
    check_number("lam", lam, low=0, fix="the Pegasos step 1/(lam t) needs a positive regularization, e.g. 1e-4")
    check_number("eta0", eta0, low=0, fix="eta0 is the initial step size of eta_t = eta0/(1 + eta0 lam t)")
    check_number("clamp", clamp, low=0, low_inclusive=True)


def learning_rate(schedule: str, lam: jax.Array, eta0: jax.Array, t: jax.Array) -> jax.Array:
    """``η_t`` for step ``t ≥ 1`` (any broadcastable shapes); ``schedule`` is static."""
    t = t.astype(lam.dtype)
    if schedule == "pegasos":
        return 1.0 / (lam * t)
    return eta0 / (1.0 + eta0 * lam * t)


def shrink(eta: jax.Array, lam: jax.Array, clamp: jax.Array) -> jax.Array:
    """Pegasos shrink factor ``max(1 − ηλ, clamp)`` (sofia-ml ``L2Regularize``)."""
    return jnp.maximum(1.0 - eta * lam, clamp)


def project(w: jax.Array, lam: jax.Array) -> jax.Array:
    """``min(1, 1/(√λ ‖w‖)) · w`` over the last axis; ``lam`` broadcasts against ``w[..., 0]``."""
    norm = jnp.sqrt(jnp.sum(w * w, axis=-1))
    scale = jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.sqrt(lam) * norm, 1e-30))
    return w * scale[..., None]


def pair_targets(pairs: PairBatch, graded_label: bool) -> jax.Array:
    """``[k]`` hinge labels: ``sign(y)`` or the graded ``y`` (static choice); 0 on invalid draws."""
    y = pairs.y if graded_label else jnp.sign(pairs.y)
    return jnp.where(pairs.valid, y, 0.0)


def init(key, num_features: int, dtype=jnp.float32, *, lam=HPARAMS["lam"], eta0=HPARAMS["eta0"],
         clamp=HPARAMS["clamp"]) -> SPDState:
    """``w = 0`` and the hyperparameters as f32 leaves."""
    del key
    check_hparams(lam, eta0, clamp)
    f32 = functools.partial(jnp.asarray, dtype=jnp.float32)
    return SPDState(w=jnp.zeros(num_features, dtype), lam=f32(lam), eta0=f32(eta0), clamp=f32(clamp),
                    t=jnp.zeros((), jnp.int32))


def update(state: SPDState, pairs: PairBatch, *, schedule: str = OPTIONS["schedule"],
           project_ball: bool = OPTIONS["project_ball"], graded_label: bool = OPTIONS["graded_label"]):
    """One step on ``k`` pairs: ``loss`` the mean hinge over valid pairs before the step, ``updates``
    = ``|A_t⁺|``, ``instances`` the valid pairs."""
    t = state.t + 1
    lam = state.lam
    eta = learning_rate(schedule, lam, state.eta0, t).astype(state.w.dtype)
    y = pair_targets(pairs, graded_label)  # [k]
    # products as sums, not dots: under vmap a dot of these tiny shapes costs a transpose and a call
    margin = y * jnp.sum(pairs.p * state.w, axis=-1)  # [k], with the old w (sofia-ml computes it before shrinking)
    active = pairs.valid & (margin < 1.0)
    w = shrink(eta, lam, state.clamp) * state.w + eta * jnp.sum(jnp.where(active, y, 0.0)[:, None] * pairs.p, axis=0)
    if project_ball:
        w = project(w, lam)
    w = jnp.where(pairs.valid.any(), w, state.w)  # sofia-ml's skipped iteration
    loss = jnp.sum(jnp.where(pairs.valid, jnp.maximum(0.0, 1.0 - margin), 0.0))
    loss = loss / jnp.maximum(pairs.valid.sum(), 1)
    return state._replace(w=w, t=t), UpdateInfo(loss=loss, updates=active.sum().astype(jnp.int32),
                                                instances=pairs.valid.sum().astype(jnp.int32))


def make(*, schedule: str = OPTIONS["schedule"], project_ball: bool = OPTIONS["project_ball"],
         graded_label: bool = OPTIONS["graded_label"]) -> Learner:
    """Pairwise Pegasos as a ``jaxrank.types.Learner``: ``update(state, pairs: PairBatch)``; the
    options are static (``OPTIONS``)."""
    check_schedule(schedule)
    return Learner(init=init, update=functools.partial(update, schedule=schedule, project_ball=bool(project_ball),
                                                       graded_label=bool(graded_label)),
                   params=linear.params, score=linear.score, batches="pairs")
