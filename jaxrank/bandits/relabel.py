"""A random relabelling of the arms for each run, as the MergeDTS authors' driver does (``demo.py`` of
github.com/chang-li/MergeDTS permutes the rankers of the matrix before every run).

Regret does not depend on the arms' labels, but tie-breaking by index does (the first of equal
scores, a round robin's start, the arm order before a random partition), and so does anything
an algorithm does "in index order". Without a relabelling every run of the same matrix meets the
same labels, so such a preference for low indices acts the same way in every run; with one it is
averaged out over the runs, as in the authors' runs.

``wrap(algo)`` wraps any ``Bandit``; ``jaxrank.bandits.run_sweep(..., relabel=True)`` runs every lane
through it. The wrapped state is ``Relabelled(inner, order)``:
``init(key, K)`` splits ``key`` into ``(key_order, key_inner)``, draws ``order = permutation(key_order, K)``
and initialises the bandit with ``key_inner``; the bandit's arm ``a`` is the environment's arm
``order[a]``: ``step`` hands it the environment seen through ``order`` and reports the duel in the
environment's labels, and ``best_arm`` maps its report back the same way. So the wrapped bandit
on ``P`` plays exactly the bandit on ``P[order][:, order]`` (``permuted_matrix``), and a run is
scored against ``P`` as before.

Keys: in a sweep, run ``r``'s lane key is ``fold_in(root, r)`` whatever the algorithm, and ``init``
gets the first of its three splits (``jaxrank.bandits.lane.init_lane``), so run ``r`` has the same
order for every algorithm and matrix size of one seed (common random numbers) and a different one
for each run; ``run_orders`` computes them on the host.
"""

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Bandit, StepInfo


class Relabelled(NamedTuple):
    """A bandit's state under a relabelling of the arms."""

    inner: Any  # the bandit's own state, in its own labels
    order: jax.Array  # [K] i32, order[a] = the environment's arm that the bandit's arm a is


class RelabelledEnv(NamedTuple):
    """``env`` seen through ``order``: a duel of arms ``(i, j)`` is ``env``'s duel of ``(order[i], order[j])``."""

    env: Any  # the DuelEnv played
    order: jax.Array  # [K] i32

    def duel(self, key, i, j, u=None):
        return self.env.duel(key, self.order[i], self.order[j], u)


def _permutation(key_order, num_arms: int) -> jax.Array:
    return jax.random.permutation(key_order, num_arms).astype(jnp.int32)


def arm_order(key, num_arms: int) -> jax.Array:
    """``[K]`` i32, the order ``init(key, K)`` draws (from the first split of its ``key``)."""
    return _permutation(jax.random.split(key)[0], num_arms)


def run_orders(key, num_runs: int, num_arms: int) -> np.ndarray:
    """``[R, K]``: run ``r``'s order in a ``run_sweep`` with root ``key`` (its lane key ``fold_in(key, r)``,
    whose first split is the key of ``init``)."""
    key_init = jax.vmap(lambda r: jax.random.split(jax.random.fold_in(key, r), 3)[0])(jnp.arange(num_runs))
    return np.asarray(jax.vmap(lambda k: arm_order(k, num_arms))(key_init))


def permuted_matrix(pref, order) -> np.ndarray:
    """``P[order][:, order]``: the matrix the bandit plays under ``order`` (its arm ``a`` is ``order[a]``)."""
    order = np.asarray(order)
    return np.asarray(pref)[np.ix_(order, order)]


def own_label(state: Relabelled, arm) -> jax.Array:
    """``[]`` i32, the bandit's label of the environment's arm ``arm`` (``order⁻¹[arm]``)."""
    return jnp.argmax(state.order == arm).astype(jnp.int32)


_WRAPPED: dict = {}  # one Bandit per inner Bandit, so equal options give the same object (and program)


def wrap(algo: Bandit) -> Bandit:
    """``algo`` playing under a random relabelling of the arms drawn by ``init`` (module docstring)."""
    if algo in _WRAPPED:
        return _WRAPPED[algo]

    def init(key, num_arms: int, **hparams) -> Relabelled:
        key_order, key_inner = jax.random.split(key)
        order = _permutation(key_order, num_arms)
        return Relabelled(algo.init(key_inner, num_arms, **hparams), order)

    def step(key, state: Relabelled, env):
        inner, info = algo.step(key, state.inner, RelabelledEnv(env, state.order))
        return state._replace(inner=inner), StepInfo(state.order[info.first], state.order[info.second], info.first_won)

    def best_arm(key, state: Relabelled):
        return state.order[algo.best_arm(key, state.inner)]

    _WRAPPED[algo] = Bandit(init, step, best_arm)
    return _WRAPPED[algo]
