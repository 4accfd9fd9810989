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

Prediction averages the view scores: ``f(x) = (1/M) Σ_v w^vᵀx^v`` (``score``). Named variants:
SPD = ``lcra(λ, 0, num_views=1)``, SPD-MV = ``lcra(λ, 0, num_views=2)`` (views then train
independently on the same pair stream), LCRA-k-l = ``lcra(λ, μ)`` driven with ``k`` labeled and
``l`` unlabeled pairs per step (``train``).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.types import Learner
from jaxrank.utils.checks import check_choice, check_int, check_number
from jaxrank.learners.pairwise.pairs import PairSource, scan_pair_steps
from jaxrank.learners.pairwise.spd import (
    SOFIA_MIN_SCALING,
    check_schedule,
    learning_rate,
    pair_targets,
    project,
    shrink,
)

LOSSES = ("hinge", "squared")


class LCRAInfo(NamedTuple):
    """What one LCRA step reports."""

    updates: jax.Array  # [M] i32 |A_t^{v+}|, labeled pairs that moved view v
    disagreement: jax.Array  # [] mean squared view disagreement on the unlabeled pairs before the step


class LCRAState(NamedTuple):
    w: jax.Array  # [M, D] f32, view weights, zero outside each view
    views: jax.Array  # [M, D] f32, 1 where the feature belongs to the view (a partition)
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


def lcra(lam=1e-4, mu=0.0, *, num_views: int = 2, loss: str = "hinge", schedule: str = "pegasos",
         eta0=1.0, project_ball: bool = False, clamp=SOFIA_MIN_SCALING, graded_label: bool = False) -> Learner:
    """Co-regularized multi-view pairwise SGD (Tsivtsivadze et al. 2012, Algorithm 1 and eq. 3).

    Args:
      lam: ``λ_v > 0``, a scalar or ``[M]`` (one per view; the paper's λ1, λ2, §4).
      mu: co-regularization ``μ ≥ 0``; 0 gives SPD / SPD-MV.
      num_views: ``M ≥ 1`` (static).
      loss: ``"hinge"`` (sign label unless ``graded_label``) or ``"squared"`` (graded label), static.
      schedule, eta0, project_ball, clamp: step size, projection and shrink clamp as in ``spd``.

    Returns:
      ``Learner(init, update)``: ``init(key, num_features) -> LCRAState`` (``key`` draws the views);
      ``update(state, pairs: PairBatch) -> (state, LCRAInfo)``.
    """
    check_int("num_views", num_views, minimum=1)
    check_choice("loss", loss, LOSSES)
    check_number("lam", lam, low=0, fix="the step 1/(lam t) needs a positive regularization per view, e.g. 1e-4")
    check_number("mu", mu, low=0, low_inclusive=True, fix="mu = 0 switches co-regularization off")
    check_number("clamp", clamp, low=0, low_inclusive=True)
    check_schedule(schedule, eta0)
    lam = jnp.broadcast_to(jnp.asarray(lam, jnp.float32), (num_views,))
    mu = jnp.asarray(mu, jnp.float32)
    eta0 = jnp.asarray(eta0, jnp.float32)
    clamp = jnp.asarray(clamp, jnp.float32)

    def init(key, num_features: int, dtype=jnp.float32) -> LCRAState:
        views = random_views(key, num_features, num_views).astype(dtype)
        return LCRAState(w=jnp.zeros((num_views, num_features), dtype), views=views,
                         t=jnp.zeros((), jnp.int32))

    def update(state: LCRAState, pairs):
        w, views = state.w, state.views
        t = state.t + 1
        eta = learning_rate(schedule, lam, eta0, t).astype(w.dtype)  # [M]
        # labeled term: s[v, i] = w^vᵀ p_i^v (w^v is zero outside its view)
        s = w @ pairs.p.T  # [M, k]
        if loss == "hinge":
            y = pair_targets(pairs, graded_label)  # [k]
            active = pairs.valid[None, :] & (y[None, :] * s < 1.0)
            coef = jnp.where(active, y[None, :], 0.0)
        else:
            active = jnp.broadcast_to(pairs.valid[None, :], s.shape)
            coef = jnp.where(active, pairs.y[None, :] - s, 0.0)
        g = (coef @ pairs.p) * views  # [M, D]
        # co-regularization: Σ_{u≠v}(s^v − s^u) = M s^v − Σ_u s^u on each unlabeled pair
        s_hat = w @ pairs.p_hat.T  # [M, l]
        gap = jnp.where(pairs.valid_hat[None, :], num_views * s_hat - s_hat.sum(0, keepdims=True), 0.0)
        g_co = (gap @ pairs.p_hat) * views  # [M, D]
        new_w = shrink(eta, lam, clamp)[:, None] * w + eta[:, None] * g - 4.0 * mu * eta[:, None] * g_co
        if project_ball:
            new_w = project(new_w, lam)
        new_w = jnp.where(pairs.valid.any(), new_w, w)  # sofia-ml's skipped iteration
        num_hat = jnp.maximum(pairs.valid_hat.sum(), 1)
        pair_gap = s_hat[:, None, :] - s_hat[None, :, :]  # [M, M, l]
        disagreement = jnp.sum(jnp.where(pairs.valid_hat, pair_gap ** 2, 0.0)) / num_hat
        info = LCRAInfo(updates=active.sum(-1).astype(jnp.int32), disagreement=disagreement)
        return LCRAState(w=new_w, views=views, t=t), info

    return Learner(init, update)


def score(state, features: jax.Array) -> jax.Array:
    """``[..., L]`` averaged view scores ``(1/M) Σ_v w^vᵀx^v`` for ``features [..., L, D]``."""
    w = state.w.mean(0) if state.w.ndim == 2 else state.w
    return features @ w


def train(learner: Learner, state, key, source: PairSource, *, num_steps: int, num_labeled: int = 1,
          num_unlabeled: int = 0):
    """``num_steps`` SGD steps from ``state``; step ``t`` draws its pairs with ``fold_in(key, t)`` (so
    step ``t``'s pairs do not depend on ``num_steps``; ``scan_pair_steps``). Works for any learner
    whose ``update`` takes a ``PairBatch`` (``spd``, ``lcra``). Returns the final state."""
    check_sizes(num_labeled, num_unlabeled)
    return scan_pair_steps(lambda state, pairs: learner.update(state, pairs)[0], state, key, source,
                           num_steps=num_steps, num_labeled=num_labeled, num_unlabeled=num_unlabeled)
