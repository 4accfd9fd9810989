"""Survival probes of the bandits that drop arms for good (MergeRUCB, MergeDTS): whether the best arm
is still among the arms a run keeps, read off a sweep's best-arm accuracy.

``survival_probe(name, winner)`` is an algorithm module (``run_sweep``'s interface: ``make``,
``HPARAMS``, ``OPTIONS``) of the registered bandit ``name``, whose state has an ``active [K]`` bool
leaf: its ``best_arm`` reports ``winner`` while that arm is active and the bandit's own report (an
active arm, so never ``winner``) once it is not. A sweep's ``correct`` of the probe is thus, at each
checkpoint, whether the run still holds the winner, and the runs that dropped it are counted exactly.
"""

import types

import jax.numpy as jnp

from jaxrank.bandits import relabel
from jaxrank.types import Bandit


def survival_probe(name: str, winner: int, *, relabelled: bool = False):
    """The survival probe of bandit ``name`` for the environment's arm ``winner`` (module docstring).

    Same options and hyperparameters as ``name``. With ``relabelled``, the bandit plays under the
    per-run relabelling of ``jaxrank.bandits.relabel`` (the one ``run_sweep(..., relabel=True)``
    applies; the probe applies it itself, so run it with ``relabel=False``) and ``winner`` stays in
    the environment's labels.
    """
    from jaxrank.bandits import ALGORITHMS  # the package imports this module

    module = ALGORITHMS[name]
    probe = types.ModuleType(f"{name}{'_relabelled' * relabelled}_survival_{winner}")
    probe.HPARAMS, probe.OPTIONS = module.HPARAMS, module.OPTIONS
    probe.RELABELLED = relabelled

    def make(**options) -> Bandit:
        algo = module.make(**options)
        if not relabelled:
            def best_arm(key, state):
                return jnp.where(state.active[winner], winner, algo.best_arm(key, state))

            return Bandit(algo.init, algo.step, best_arm)
        outer = relabel.wrap(algo)

        def best_arm_relabelled(key, state: relabel.Relabelled):
            alive = state.inner.active[relabel.own_label(state, winner)]
            return jnp.where(alive, winner, outer.best_arm(key, state))

        return Bandit(outer.init, outer.step, best_arm_relabelled)

    probe.make = make
    return probe
