"""One lane of a dueling-bandit study: one run of one algorithm against one ``DuelEnv``, pure,
jittable and vmappable, whatever the environment.

A lane carries only what is reported, scored against a reference preference matrix: cumulative
regret (``jaxrank.metrics.regret_table``: Condorcet ``Σ_t (Δ_{1 i_t} + Δ_{1 j_t}) / 2``, Zoghi et al.,
WSDM 2014, §2, eq. 1, or Copeland regret, Zoghi et al., NIPS 2015, §2), the count of duels with
positive regret (all but those between best arms), and at each checkpoint whether the best-arm
guess is a best arm. Its steps run as a scan over the segments between checkpoints, each a
``fori_loop`` whose bounds all lanes share, so under ``vmap`` there is no per-step branch; no
per-step array of size T x lanes is ever stored.

Regret is summed exactly enough at any horizon: a float32 sum with Kahan's compensation (Kahan,
CACM 8(1), 1965; Higham, "Accuracy and Stability of Numerical Algorithms", 2002, §4.3), whose
error stays within about two float32 roundings of the total (``2 · 2⁻²⁴`` relative) however many
steps are added, where a plain float32 sum stops adding a duel of cost ``c`` once the total
exceeds ``2²⁴ c`` (at a total of 10⁵, duels below 0.006 add nothing). The record keeps the sum and
its compensation; ``jaxrank.bandits.run_sweep`` returns their float64 total. It costs three adds
a step, and no [K, K] counts.

Keys: a lane's key splits into ``(init, steps, report)``; step ``t`` uses ``fold_in(steps, t)``, the
best-arm guess after step ``s`` uses ``fold_in(report, s)``.

``study`` is the lane as a ``jaxrank.lanes.Study`` (its chunks are the segments), ``run_lane`` one
lane from start to horizon (``jaxrank.lanes.lane`` of it); ``jaxrank.bandits.run_sweep`` runs many lanes
(matrices × hyperparameter settings × runs) through ``jaxrank.lanes.run_lanes``.
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes
from jaxrank.metrics.duel_regret import regret_table
from jaxrank.types import Array, Bandit, DuelEnv, PRNGKey
from jaxrank.utils import prng


class Scoring(NamedTuple):
    """What a lane is scored against (from the reference preference matrix)."""

    table: Array  # [K, K] f32, regret of duel (i, j): Condorcet (Δ_1i + Δ_1j) / 2 or Copeland
    winners: Array  # [K] bool, the best arms: the Condorcet winner, or every Copeland winner


def scoring(pref, regret: str = "auto") -> Scoring:
    """``Scoring`` of a ``[K, K]`` preference matrix (``jaxrank.metrics.regret_table``).

    ``regret``: ``"condorcet"``, ``"copeland"`` or ``"auto"`` (Condorcet when the matrix has a
    Condorcet winner, Copeland otherwise).
    """
    table, winners = regret_table(pref, regret)
    return Scoring(jnp.asarray(table), jnp.asarray(winners))


class LaneData(NamedTuple):
    """A lane's own inputs: the environment it plays (None when every lane shares one) and its scoring."""

    env: Optional[DuelEnv]
    score: Scoring


class Lane(NamedTuple):
    """A lane between segments: the algorithm's state, its keys and the record so far."""

    state: tuple
    key_steps: jax.Array
    key_report: jax.Array
    regret: jax.Array  # [] f32 cumulative regret (Kahan sum)
    regret_low: jax.Array  # [] f32 what the sum lost to rounding: the regret is regret + regret_low
    suboptimal: jax.Array  # [] i32 duels not between two best arms
    rec_regret: jax.Array  # [C] f32
    rec_regret_low: jax.Array  # [C] f32
    rec_correct: jax.Array  # [C] bool, the best-arm guess is a best arm
    rec_suboptimal: jax.Array  # [C] f32 share of suboptimal duels


class Record(NamedTuple):
    """A lane's results at the checkpoints ``[C]``."""

    regret: Array  # [C] f32 cumulative regret, to float32 precision
    correct: Array  # [C] bool, the best-arm guess is a best arm (the Condorcet winner or a Copeland winner)
    suboptimal: Array  # [C] f32 share of duels not between two best arms
    regret_low: Array  # [C] f32 rounding error of regret: the exact sum is regret + regret_low (in float64)


def default_checkpoints(num_steps: int, *, num_log: int = 40, num_linear: int = 50) -> np.ndarray:
    """Sorted unique step counts: log-spaced from 1 and evenly spaced, both ending at ``num_steps``."""
    log = np.geomspace(1, num_steps, num_log)
    linear = np.linspace(num_steps / num_linear, num_steps, num_linear)
    return np.unique(np.round(np.r_[log, linear]).astype(np.int64).clip(1, num_steps))


def segments(checkpoints: np.ndarray, chunk_size: int) -> tuple[np.ndarray, ...]:
    """``(starts, stops, slots)`` i32: the steps between consecutive checkpoints, cut at most
    ``chunk_size`` long; segment ``i`` runs steps ``[starts[i], stops[i])`` and records checkpoint ``slots[i]``."""
    bounds = np.r_[0, checkpoints]
    starts, stops, slots = [], [], []
    for slot, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        cuts = np.r_[np.arange(lo, hi, chunk_size), hi]
        starts += list(cuts[:-1])
        stops += list(cuts[1:])
        slots += [slot] * (cuts.size - 1)
    return tuple(np.asarray(x, np.int32) for x in (starts, stops, slots))


def init_lane(key: PRNGKey, algorithm: Bandit, num_arms: int, num_checkpoints: int, **hparams) -> Lane:
    """A lane about to take its first step."""
    key_init, key_steps, key_report = jax.random.split(key, 3)
    zeros = jnp.zeros(num_checkpoints)
    return Lane(algorithm.init(key_init, num_arms, **hparams), key_steps, key_report, jnp.zeros(()), jnp.zeros(()),
                jnp.zeros((), jnp.int32), zeros, zeros, zeros.astype(bool), zeros)


def advance_segment(algorithm: Bandit, lane: Lane, segment, env: DuelEnv, score: Scoring) -> Lane:
    """Runs steps ``[start, stop)`` of ``segment = (start, stop, slot)`` and records checkpoint ``slot``."""
    start, stop, slot = segment

    def one_step(t, c: Lane):
        state, info = algorithm.step(prng.fold_in(c.key_steps, t), c.state, env)
        cost = score.table[info.first, info.second]  # zero exactly for a duel between two best arms
        # Kahan: -regret_low is the part of the earlier costs the sum has not absorbed yet.
        y = cost + c.regret_low
        total = c.regret + y
        low = y - (total - c.regret)
        return c._replace(state=state, regret=total, regret_low=low,
                          suboptimal=c.suboptimal + (cost > 0).astype(jnp.int32))

    c = jax.lax.fori_loop(start, stop, one_step, lane)  # bounds shared by all lanes: no per-step branch
    guess = algorithm.best_arm(prng.fold_in(c.key_report, stop), c.state)
    return c._replace(
        rec_regret=c.rec_regret.at[slot].set(c.regret),
        rec_regret_low=c.rec_regret_low.at[slot].set(c.regret_low),
        rec_correct=c.rec_correct.at[slot].set(score.winners[guess]),
        rec_suboptimal=c.rec_suboptimal.at[slot].set(c.suboptimal / jnp.maximum(stop, 1).astype(jnp.float32)),
    )


def record(lane: Lane) -> Record:
    return Record(lane.rec_regret, lane.rec_correct, lane.rec_suboptimal, lane.rec_regret_low)


def study(algorithm: Bandit, num_checkpoints: int) -> lanes.Study:
    """The lane as a ``jaxrank.lanes.Study``: ``hparams`` go to ``algorithm.init``; each chunk is one
    segment ``(start, stop, slot)`` (``segments``); the environment is the lane's own
    (``LaneData.env``) or, when that is None, the shared ``data``; the result is its ``Record``."""

    def init(key, hparams, data, lane_data: LaneData) -> Lane:
        del data
        return init_lane(key, algorithm, lane_data.score.table.shape[-1], num_checkpoints, **hparams)

    def advance(carry: Lane, segment, data, lane_data: LaneData) -> Lane:
        env = data if lane_data.env is None else lane_data.env
        return advance_segment(algorithm, carry, segment, env, lane_data.score)

    def result(carry: Lane, data, lane_data: LaneData) -> Record:
        del data, lane_data
        return record(carry)

    return lanes.Study(init, advance, result)


def run_lane(key: PRNGKey, algorithm: Bandit, env: DuelEnv, score: Scoring, *, num_steps: int,
             checkpoints: Optional[np.ndarray] = None, chunk_size: int = 4096, hparams: Optional[dict] = None) -> Record:
    """One run of ``algorithm`` against ``env`` for ``num_steps`` steps, scored against ``score``.

    Pure: jit it, and vmap it over keys (runs), environments (matrices) or hyperparameters.
    ``num_steps``, ``checkpoints`` and ``chunk_size`` are static.

    Args:
      key: the lane's key.
      algorithm: a ``Bandit`` (``jaxrank.bandits.ALGORITHMS.build("rcs")``, ``rcs.make()``, ...).
      env: any ``DuelEnv`` (``PrefMatrixEnv``, an interleaving env, ...).
      score: ``scoring(reference_pref)``.
      checkpoints: 1-based step counts to record (default ``default_checkpoints``).
      hparams: keyword hyperparameters of ``algorithm.init`` (arrays vmap).

    Returns:
      ``Record`` with ``[C]`` arrays.
    """
    checkpoints = default_checkpoints(num_steps) if checkpoints is None else np.asarray(checkpoints, np.int64)
    chunks = tuple(map(jnp.asarray, segments(checkpoints, chunk_size)))
    return lanes.lane(study(algorithm, int(checkpoints.size)), key, hparams or {}, None, LaneData(env, score), chunks)
