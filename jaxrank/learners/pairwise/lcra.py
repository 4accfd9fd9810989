"""LCRA: large-scale co-regularized ranking (Tsivtsivadze, Hofmann, Heskes 2012, eq. 1–3, Algorithm 1).

``M`` views split the ``D`` features into disjoint random subsets (drawn by ``init`` from its key,
fixed for the run). View ``v`` has weights ``w^v`` (stored as ``w[v]`` over all ``D`` features, zero
outside the view) and sees ``p^v``, the pair difference restricted to its features. Objective
(paper eq. 1) with ``L_R = ½‖·‖²``::

    Σ_v [Σ_{P} L(p^v, y; w^v) + λ_v ½‖w^v‖²] + μ Σ_{v≠u} Σ_{P̂} (w^vᵀp̂^v − w^uᵀp̂^u)²

Update (paper eq. 3 / Algorithm 1 line 6, all views at once from the *old* ``W_t``)::

    w^v ← max(1 − η_t^v λ_v, clamp) w^v + η_t^v g^v − 4 μ η_t^v Σ_{u≠v} Σ_{p̂∈Â_t} (w^vᵀp̂^v − w^uᵀp̂^u) p̂^v

with ``g^v = Σ_{A_t^{v+}} y p^v`` for the hinge loss (``A^{v+} = {y⟨p^v, w^v⟩ < 1}``) or
``g^v = Σ_{A_t} (y − w^vᵀp^v) p^v`` with the graded label for the squared loss. Algorithm 1 line 6
prints ``− η Σ y p``, an ascent step on the hinge: we read it as a typo and descend.
The factor 4 is 2 (ordered view pairs) × 2 (derivative of the square). ``Σ_{u≠v}(s^v − s^u) = M s^v − Σ_u s^u``, so
the co-regularization costs ``O(M l D)``. The ``k`` labeled and ``l`` unlabeled pairs are drawn
fresh each step and shared by the views. ``η_t^v = 1/(λ_v t)`` or ``η0/(1 + η0 λ_v t)`` and the
optional projection ``min(1, 1/(√λ_v ‖w^v‖))`` per view, as in ``spd.py``.

Prediction averages the view scores: ``f(x) = (1/M) Σ_v w^vᵀx^v`` (``params`` is the view
average ``[D]``). Named variants (``semi_supervised.METHODS``): SPD = ``μ = 0, num_views=1``,
SPD-MV = ``μ = 0, num_views=2`` (views then train independently on the same pair stream),
LCRA-k-l = ``μ > 0`` driven with ``k`` labeled and ``l`` unlabeled pairs per step (``train``).
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.learners import linear
from jaxrank.learners.pairwise.pair_sampling import PairSource, scan_pair_steps
from jaxrank.learners.pairwise.spd import (
    SOFIA_MIN_SCALING,
    check_hparams,
    check_schedule,
    learning_rate,
    pair_targets,
    project,
    shrink,
)
from jaxrank.pairs import PairBatch
from jaxrank.types import Learner, UpdateInfo
from jaxrank.utils.checks import check_choice, check_int, check_number

LOSSES = ("hinge", "squared")

HPARAMS = {
    "lam": 1e-4,  # λ_v, one value for every view (or [M] to init); the paper's grid 1e-6..1e-1 (§4)
    "mu": 0.0,  # co-regularization μ (eq. 1); 0 gives SPD / SPD-MV, the paper's grid 1e-4..1 (§4)
    "eta0": 1.0,  # η0 of schedule="eta0" (§4, "learning rate η0"); unused by "pegasos"
    "clamp": SOFIA_MIN_SCALING,  # floor of the shrink factor, as SPD (sofia-ml's L2Regularize)
}
OPTIONS = {
    "num_views": 2,  # M: two views in the paper's experiments (§4)
    "loss": "hinge",  # L of eq. 1: "hinge" or "squared" (graded label)
    "schedule": "pegasos",  # η_t = 1/(λ_v t), Algorithm 1; "eta0": η0/(1 + η0 λ_v t)
    "project_ball": False,  # Pegasos projection per view (the paper's Algorithm 1 has none)
    "graded_label": False,  # hinge label sign(l_a − l_b) (ours); True: the graded difference (§2.1)
}


class LCRAState(NamedTuple):
    w: jax.Array  # [M, D] view weights, zero outside each view
    views: jax.Array  # [M, D] 1 where the feature belongs to the view (a partition)
    lam: jax.Array  # [M] f32, λ_v
    mu: jax.Array  # [] f32, μ
    eta0: jax.Array  # [] f32, η0
    clamp: jax.Array  # [] f32, shrink floor
    t: jax.Array  # [] i32, steps taken


def random_views(key, num_features: int, num_views: int) -> jax.Array:
    """``[M, D]`` f32 random partition of the features into ``M`` near-equal disjoint views."""
    if num_views == 1:
        return jnp.ones((1, num_features), jnp.float32)
    rank = jax.random.permutation(key, num_features)
    view_of = (rank * num_views) // num_features  # sizes floor/ceil of D/M
    return (view_of[None, :] == jnp.arange(num_views)[:, None]).astype(jnp.float32)


def check_sizes(num_labeled: int, num_unlabeled: int = 0, *, co_regularized: bool = False) -> None:
    """Rejects batch sizes of LCRA-k-l: ``k >= 1`` always, ``l >= 1`` when co-regularizing."""
    if not isinstance(num_labeled, int) or num_labeled < 1:
        raise ValueError(f"k (labeled pairs per step) must be an int >= 1; got {num_labeled!r}.")
    lower = 1 if co_regularized else 0
    if not isinstance(num_unlabeled, int) or num_unlabeled < lower:
        raise ValueError(f"l (unlabeled pairs per step) must be an int >= {lower}; got {num_unlabeled!r}"
                         + ("; co-regularization (mu > 0) needs unlabeled pairs." if co_regularized else "."))


def init(key, num_features: int, dtype=jnp.float32, *, num_views: int = OPTIONS["num_views"], lam=HPARAMS["lam"],
         mu=HPARAMS["mu"], eta0=HPARAMS["eta0"], clamp=HPARAMS["clamp"]) -> LCRAState:
    """Zero weights on ``M`` random views drawn from ``key``; ``lam`` a scalar or ``[M]`` (one per
    view, the paper's λ1, λ2, §4)."""
    check_hparams(lam, eta0, clamp)
    check_number("mu", mu, low=0, low_inclusive=True, fix="mu = 0 switches co-regularization off")
    views = random_views(key, num_features, num_views).astype(dtype)
    f32 = functools.partial(jnp.asarray, dtype=jnp.float32)
    return LCRAState(w=jnp.zeros((num_views, num_features), dtype), views=views,
                     lam=jnp.broadcast_to(f32(lam), (num_views,)), mu=f32(mu), eta0=f32(eta0), clamp=f32(clamp),
                     t=jnp.zeros((), jnp.int32))


def update(state: LCRAState, pairs: PairBatch, *, loss: str = OPTIONS["loss"], schedule: str = OPTIONS["schedule"],
           project_ball: bool = OPTIONS["project_ball"], graded_label: bool = OPTIONS["graded_label"]):
    """One step of Algorithm 1 (all views from the old ``W_t``) on ``k`` labeled and ``l`` unlabeled pairs."""
    w, views, lam = state.w, state.views, state.lam
    num_views = w.shape[0]
    t = state.t + 1
    eta = learning_rate(schedule, lam, state.eta0, t).astype(w.dtype)  # [M]
    # labeled term: s[v, i] = w^vᵀ p_i^v (w^v is zero outside its view)
    s = w @ pairs.p.T  # [M, k]
    if loss == "hinge":
        y = pair_targets(pairs, graded_label)  # [k]
        active = pairs.valid[None, :] & (y[None, :] * s < 1.0)
        coef = jnp.where(active, y[None, :], 0.0)
        losses = jnp.maximum(0.0, 1.0 - y[None, :] * s)
    else:
        active = jnp.broadcast_to(pairs.valid[None, :], s.shape)
        coef = jnp.where(active, pairs.y[None, :] - s, 0.0)
        losses = 0.5 * (pairs.y[None, :] - s) ** 2
    g = (coef @ pairs.p) * views  # [M, D]
    # co-regularization: Σ_{u≠v}(s^v − s^u) = M s^v − Σ_u s^u on each unlabeled pair
    s_hat = w @ pairs.p_hat.T  # [M, l]
    gap = jnp.where(pairs.valid_hat[None, :], num_views * s_hat - s_hat.sum(0, keepdims=True), 0.0)
    g_co = (gap @ pairs.p_hat) * views  # [M, D]
    new_w = shrink(eta, lam, state.clamp)[:, None] * w + eta[:, None] * g - 4.0 * state.mu * eta[:, None] * g_co
    if project_ball:
        new_w = project(new_w, lam)
    new_w = jnp.where(pairs.valid.any(), new_w, w)  # sofia-ml's skipped iteration
    instances = pairs.valid.sum().astype(jnp.int32)
    mean_loss = jnp.sum(jnp.where(pairs.valid[None, :], losses, 0.0)) / (num_views * jnp.maximum(instances, 1))
    info = UpdateInfo(loss=mean_loss, updates=active.any(0).sum().astype(jnp.int32), instances=instances)
    return state._replace(w=new_w, t=t), info


def params(state: LCRAState) -> jax.Array:
    """``[D]`` the view average ``(1/M) Σ_v w^v`` (``w^v`` is zero outside its view)."""
    return state.w.mean(-2)


def make(*, num_views: int = OPTIONS["num_views"], loss: str = OPTIONS["loss"], schedule: str = OPTIONS["schedule"],
         project_ball: bool = OPTIONS["project_ball"], graded_label: bool = OPTIONS["graded_label"]) -> Learner:
    """Co-regularized multi-view pairwise SGD (Tsivtsivadze et al. 2012, Algorithm 1 and eq. 3) as a
    ``jaxrank.types.Learner``: ``init(key, D, **hparams)`` (``key`` draws the views),
    ``update(state, pairs: PairBatch) -> (state, UpdateInfo)`` (``loss``: the mean loss over views and
    valid labeled pairs before the step; ``updates``: labeled pairs that moved some view); the options are static (``OPTIONS``)."""
    check_int("num_views", num_views, minimum=1)
    check_choice("loss", loss, LOSSES)
    check_schedule(schedule)
    return Learner(init=functools.partial(init, num_views=int(num_views)),
                   update=functools.partial(update, loss=loss, schedule=schedule, project_ball=bool(project_ball),
                                            graded_label=bool(graded_label)),
                   params=params, score=linear.score, batches="pairs")


def train(key, learner: Learner, state, source: PairSource, *, num_steps: int, num_labeled: int = 1,
          num_unlabeled: int = 0):
    """``num_steps`` SGD steps from ``state``; step ``t`` draws its pairs with ``fold_in(key, t)`` (so
    step ``t``'s pairs do not depend on ``num_steps``; ``scan_pair_steps``). Works for any learner
    whose ``update`` takes a ``PairBatch`` (``spd``, ``lcra``). Returns the final state."""
    check_sizes(num_labeled, num_unlabeled)
    return scan_pair_steps(key, lambda state, pairs: learner.update(state, pairs)[0], state, source,
                           num_steps=num_steps, num_labeled=num_labeled, num_unlabeled=num_unlabeled)
