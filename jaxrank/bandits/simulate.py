"""One driver for every dueling bandit: ``lax.scan`` over steps, ``vmap`` over lanes.

A lane is one (matrix, hyperparameter setting, run) triple; all lanes of a ``simulate`` call run
in one compiled program: a scan over the segments between checkpoints, each a ``fori_loop``
whose trip count all lanes share (so no per-step branch). Long horizons run as several calls of
that one compiled program with progress printed between them. Only what is reported is carried: cumulative regret (Zoghi et al. 2014,
§3), the count of duels other than (winner, winner), and at each checkpoint the best-arm guess;
no per-step array of size T x lanes is ever stored.

Run ``r`` uses the key ``fold_in(key, r)`` for every matrix and setting (common random numbers),
so its numbers do not depend on how many runs are launched.
"""

import functools
import time
from types import ModuleType
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.envs.matrix import PrefMatrixEnv
from jaxrank.metrics.duel_regret import regret_table


_SEGMENTS_PER_CALL = 16  # fixed, so every horizon reuses one compiled program


class Trace(NamedTuple):
    """Per-checkpoint results, ``[M, H, R, C]`` (matrices, settings, runs, checkpoints)."""

    checkpoints: np.ndarray  # [C] i64, 1-based step counts
    regret: np.ndarray  # [M, H, R, C] f32 cumulative regret
    correct: np.ndarray  # [M, H, R, C] bool, best-arm guess == Condorcet winner
    suboptimal: np.ndarray  # [M, H, R, C] f32 fraction of duels other than (winner, winner)


class _Carry(NamedTuple):
    state: tuple
    key_steps: jax.Array
    key_report: jax.Array
    regret: jax.Array  # [] f32
    suboptimal: jax.Array  # [] i32
    rec_regret: jax.Array  # [C] f32
    rec_correct: jax.Array  # [C] bool
    rec_suboptimal: jax.Array  # [C] f32


def default_checkpoints(num_steps: int, *, num_log: int = 40, num_linear: int = 50) -> np.ndarray:
    """Sorted unique step counts: log-spaced from 1 and evenly spaced, both ending at ``num_steps``."""
    log = np.geomspace(1, num_steps, num_log)
    linear = np.linspace(num_steps / num_linear, num_steps, num_linear)
    return np.unique(np.round(np.r_[log, linear]).astype(np.int64).clip(1, num_steps))


def _lane_segments(algo, carry: _Carry, starts, stops, slots, env, table, winner):
    """Runs steps ``[starts[g], stops[g])`` for each g, recording checkpoint ``slots[g]`` after each."""

    def one_step(t, c: _Carry):
        state, info = algo.step(c.state, jax.random.fold_in(c.key_steps, t), env)
        off_winner = (info.first != winner) | (info.second != winner)
        return c._replace(state=state, regret=c.regret + table[info.first, info.second],
                          suboptimal=c.suboptimal + off_winner.astype(jnp.int32))

    def segment(c: _Carry, bounds):
        start, stop, slot = bounds
        # The trip count is shared by all lanes, so under vmap this stays one loop with no per-step branch.
        c = jax.lax.fori_loop(start, stop, one_step, c)
        guess = algo.best_arm(c.state, jax.random.fold_in(c.key_report, stop))
        c = c._replace(
            rec_regret=c.rec_regret.at[slot].set(c.regret),
            rec_correct=c.rec_correct.at[slot].set(guess == winner),
            rec_suboptimal=c.rec_suboptimal.at[slot].set(c.suboptimal / jnp.maximum(stop, 1).astype(jnp.float32)),
        )
        return c, None

    return jax.lax.scan(segment, carry, (starts, stops, slots))[0]


@functools.partial(jax.jit, static_argnames=("algo",), donate_argnums=(1,))
def _run_segments(algo, carry, starts, stops, slots, env, table, winner):
    lanes = jax.vmap(functools.partial(_lane_segments, algo), in_axes=(0, None, None, None, 0, 0, 0))
    return lanes(carry, starts, stops, slots, env, table, winner)


@functools.partial(jax.jit, static_argnames=("algo", "num_arms", "num_checkpoints"))
def _init_lanes(algo, keys, hparams, *, num_arms, num_checkpoints):
    def one(key, hp):
        key_init, key_steps, key_report = jax.random.split(key, 3)
        zeros = jnp.zeros(num_checkpoints)
        return _Carry(algo.init(key_init, num_arms, **hp), key_steps, key_report,
                      jnp.zeros(()), jnp.zeros((), jnp.int32), zeros, zeros.astype(bool), zeros)

    return jax.vmap(one)(keys, hparams)


def simulate(
    algo: ModuleType,
    key,
    prefs,
    *,
    num_runs: int,
    num_steps: int,
    hparams: Optional[dict] = None,
    checkpoints=None,
    chunk_size: int = 4096,
    label: Optional[str] = None,
) -> Trace:
    """Runs a dueling bandit on preference matrices.

    Args:
      algo: a module with ``init``, ``step`` and ``best_arm`` (e.g. ``jaxrank.bandits.rcs``).
      key: root PRNG key.
      prefs: ``[K, K]`` or ``[M, K, K]`` preference matrices, each with a Condorcet winner.
      num_runs: ``R`` independent runs per matrix and setting.
      num_steps: horizon ``T``.
      hparams: ``{name: [H] values}`` passed to ``algo.init`` (e.g. ``{"alpha": [0.1, 0.501]}``);
        every lane of a setting gets the same values. Default: the algorithm's defaults.
      checkpoints: 1-based step counts at which to record (default ``default_checkpoints``).
      chunk_size: the longest run of steps between two recordings; one compiled call runs 16
        such segments, and progress is printed between calls when ``label`` is given.
      label: name printed with progress; None is silent.

    Returns:
      ``Trace`` with ``[M, H, R, C]`` arrays (``M = 1`` for a single matrix).

    Raises:
      ValueError: on an invalid matrix, one without a Condorcet winner, bad sizes or
        hyperparameters, before anything is compiled.
    """
    prefs = np.asarray(prefs, np.float64)
    prefs = prefs[None] if prefs.ndim == 2 else prefs
    if prefs.ndim != 3:
        raise ValueError(f"prefs must be [K, K] or [M, K, K]; got shape {prefs.shape}.")
    if num_runs < 1 or num_steps < 1:
        raise ValueError(f"num_runs and num_steps must be >= 1; got {num_runs} and {num_steps}.")
    tables, winners = zip(*(regret_table(p) for p in prefs))
    num_matrices, num_arms = prefs.shape[0], prefs.shape[-1]
    hparams = {k: np.asarray(v, np.float32).reshape(-1) for k, v in (hparams or {}).items()}
    num_settings = len(next(iter(hparams.values()))) if hparams else 1
    if any(v.size != num_settings for v in hparams.values()):
        raise ValueError(f"every hyperparameter needs the same number of settings; got { {k: v.size for k, v in hparams.items()} }.")
    for h in range(num_settings):  # eager init: impossible values fail here, not inside jit
        algo.init(key, num_arms, **{k: float(v[h]) for k, v in hparams.items()})
    checkpoints = default_checkpoints(num_steps) if checkpoints is None else np.unique(np.asarray(checkpoints, np.int64))
    if checkpoints.size == 0 or checkpoints[0] < 1 or checkpoints[-1] > num_steps:
        raise ValueError(f"checkpoints must lie in [1, {num_steps}]; got {checkpoints}.")

    lanes = (num_matrices, num_settings, num_runs)
    size = int(np.prod(lanes))
    run_keys = jax.vmap(lambda r: jax.random.fold_in(key, r))(jnp.arange(num_runs))
    keys = jnp.broadcast_to(run_keys, lanes + run_keys.shape[1:]).reshape((size,) + run_keys.shape[1:])
    lane_hparams = {k: jnp.asarray(np.broadcast_to(v[None, :, None], lanes).reshape(size)) for k, v in hparams.items()}
    env = PrefMatrixEnv(jnp.asarray(np.repeat(prefs, num_settings * num_runs, axis=0), jnp.float32))
    table = jnp.asarray(np.repeat(np.stack(tables), num_settings * num_runs, axis=0))
    winner = jnp.asarray(np.repeat(np.asarray(winners, np.int32), num_settings * num_runs))
    carry = _init_lanes(algo, keys, lane_hparams, num_arms=num_arms, num_checkpoints=checkpoints.size)

    # Segments between consecutive checkpoints, cut at most chunk_size long and grouped so every
    # call has the same shapes (one compile); progress is printed between calls.
    bounds = np.r_[0, checkpoints]
    starts, stops, slots = [], [], []
    for slot, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        cuts = np.r_[np.arange(lo, hi, chunk_size), hi]
        starts += list(cuts[:-1])
        stops += list(cuts[1:])
        slots += [slot] * (cuts.size - 1)
    per_call = _SEGMENTS_PER_CALL
    pad = -len(starts) % per_call
    starts, stops, slots = (np.asarray(x + [x[-1]] * pad, np.int32) for x in (starts, stops, slots))
    starts[len(starts) - pad:] = stops[-1]  # padding segments are empty and rewrite the last slot
    start = time.perf_counter()
    first_done, first_time = 0, None  # the first call compiles: rates and ETA start after it
    for g in range(0, len(starts), per_call):
        part = slice(g, g + per_call)
        carry = _run_segments(algo, carry, starts[part], stops[part], slots[part], env, table, winner)
        if label is not None:
            jax.block_until_ready(carry.regret)
            done, now = int(stops[part][-1]), time.perf_counter()
            if first_time is None:
                first_done, first_time = done, now
                print(f"[{label}] compiled and ran {done:,} steps in {now - start:.1f}s", flush=True)
                continue
            rate = (done - first_done) / max(now - first_time, 1e-9)
            print(f"[{label}] step {done:,}/{num_steps:,}  {rate * size:,.0f} run-steps/s  "
                  f"ETA {(num_steps - done) / max(rate, 1e-9):.0f}s", flush=True)

    def shaped(x):
        return np.asarray(x).reshape(lanes + (checkpoints.size,))

    return Trace(checkpoints, shaped(carry.rec_regret), shaped(carry.rec_correct), shaped(carry.rec_suboptimal))
