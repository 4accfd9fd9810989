"""Dueling-bandit sweeps: many lanes of ``jaxrank.bandits.lane`` run by ``jaxrank.lanes.run_lanes``
(sharded over every device of every process, in resumable chunks, with progress).

A lane is one (matrix, hyperparameter setting, run) triple; all lanes of a ``run_sweep`` call run in
one compiled program. The environment is either the preference matrices themselves (each lane
draws its duels from its matrix) or any ``DuelEnv`` shared by every lane (e.g. rankers interleaved
on LTR queries), scored against a reference matrix. Its chunks are the segments between
checkpoints (at most ``chunk_size`` steps each), 16 per compiled call, so every horizon reuses one
program.

Run ``r`` uses the key ``fold_in(key, r)`` for every matrix and setting (common random numbers),
so its numbers do not depend on how many runs are launched, nor on the device count.

What is bandit-specific here: which algorithm (a registered name or module, its options and
hyperparameters checked by ``jaxrank.registry.Registry`` before anything is traced), the lanes'
matrices and scoring, and the compiler options chosen per algorithm (``CPU_COMPILER_OPTIONS``).
"""

import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from jaxrank import lanes
from jaxrank.bandits import relabel as relabel_lib
from jaxrank.bandits.lane import LaneData, Scoring, default_checkpoints, segments, study
from jaxrank.envs.matrix import PrefMatrixEnv
from jaxrank.lanes import lane_mesh
from jaxrank.metrics.duel_regret import regret_table
from jaxrank.registry import Registry
from jaxrank.types import DuelEnv
from jaxrank.utils.checks import check_int, check_key

_SEGMENTS_PER_CALL = 16  # segments per compiled call: progress and checkpoints come between calls

# XLA options of a sweep's compiled program on CPU, per algorithm. XLA:CPU splits a large kernel over
# the cores; RCS and Interleaved Filter read only rows or entries of the lanes' [K, K] arrays per step,
# where waking a second thread costs more than it saves (RCS at K = 136: 20% faster on one thread).
CPU_COMPILER_OPTIONS = {
    "rcs": {"xla_disable_hlo_passes": "cpu-parallel-task-assigner"},
    "interleaved_filter": {"xla_disable_hlo_passes": "cpu-parallel-task-assigner"},
}


class Trace(NamedTuple):
    """Per-checkpoint results, ``[M, H, R, C]`` (matrices, settings, runs, checkpoints)."""

    checkpoints: np.ndarray  # [C] i64, 1-based step counts
    regret: np.ndarray  # [M, H, R, C] f64 cumulative regret (exact to about 1e-7 of it at any horizon)
    correct: np.ndarray  # [M, H, R, C] bool, the best-arm guess is a best arm (Condorcet or Copeland winner)
    suboptimal: np.ndarray  # [M, H, R, C] f32 fraction of duels with positive regret


def compiler_options_for(name: str, mesh: Mesh) -> Optional[dict]:
    """``CPU_COMPILER_OPTIONS[name]`` when every device of ``mesh`` is a CPU, else None."""
    if any(d.platform != "cpu" for d in mesh.devices.flat):
        return None
    return CPU_COMPILER_OPTIONS.get(name)


def _identify(algo) -> list[str]:
    """``module.qualname`` of the bandit's functions (``functools.partial``: of the function and its
    keywords), so that two algorithms under one name never share a checkpoint."""

    def name(f):
        if isinstance(f, functools.partial):
            return f"{name(f.func)}{sorted(f.keywords.items())}"
        return f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', type(f).__name__)}"

    return [name(f) for f in algo]


def _resolve(algorithm) -> tuple[str, Registry]:
    """``(name, registry)`` of a registered name or an algorithm module (``make``, ``HPARAMS``, ``OPTIONS``)."""
    from jaxrank.bandits import ALGORITHMS  # the package imports this module

    if isinstance(algorithm, str):
        ALGORITHMS[algorithm]  # noqa: B018  (an unknown name raises, listing the registered ones)
        return algorithm, ALGORITHMS
    for name, module in ALGORITHMS.items():
        if module is algorithm:
            return name, ALGORITHMS
    name = getattr(algorithm, "__name__", type(algorithm).__name__).rsplit(".", 1)[-1]
    return name, Registry("bandit", {name: algorithm})


def run_sweep(
    key,
    algorithm,
    prefs,
    *,
    num_runs: int,
    num_steps: int,
    options: Optional[dict] = None,
    hparams: Optional[dict] = None,
    checkpoints=None,
    chunk_size: int = 4096,
    label: Optional[str] = None,
    mesh: Optional[Mesh] = None,
    checkpoint_dir=None,
    env: Optional[DuelEnv] = None,
    regret: str = "auto",
    compiler_options: Optional[dict] = None,
    relabel: bool = False,
) -> Trace:
    """Runs a dueling bandit for ``num_runs`` runs per matrix and setting, in one compiled program.

    Args:
      key: root PRNG key (``jax.random.key(seed)``).
      algorithm: a name of ``jaxrank.bandits.ALGORITHMS`` (``"rcs"``) or an algorithm module (an
        object with ``make``, ``HPARAMS`` and ``OPTIONS``, registered or not).
      prefs: ``[K, K]`` or ``[M, K, K]`` preference matrices: regret and best-arm accuracy are
        scored against them.
      num_runs: ``R`` independent runs per matrix and setting.
      num_steps: horizon ``T``.
      options: the algorithm's static options (``make``'s keywords, e.g. ``{"lerot": True}``).
      hparams: ``{name: [H] values}`` passed to ``init`` (e.g. ``{"alpha": [0.1, 0.501]}``); every lane
        of a setting gets the same values. A hyperparameter left out keeps the module's default as a
        constant of ``init``; a ``horizon`` left out is ``num_steps``.
      checkpoints: 1-based step counts at which to record (default ``default_checkpoints``).
      chunk_size: the longest run of steps between two recordings; one compiled call runs 16
        such segments, and progress is printed between calls when ``label`` is given.
      label: name printed with progress; None is silent.
      mesh: a 1-D mesh with axis ``"lanes"`` over which the ``M * H * R`` lanes are sharded
        (default ``lane_mesh()``: all devices). The results do not depend on it.
      checkpoint_dir: folder for a resumable checkpoint, written atomically after every call;
        if it already holds one for these same inputs, the sweep continues from it.
      env: the ``DuelEnv`` the bandit plays, shared by every lane (e.g. ``ranker_duel_env`` over
        LTR queries), with ``prefs`` ``[K, K]`` its reference matrix; default: each lane draws its
        duels from its own matrix (``PrefMatrixEnv``).
      regret: ``"condorcet"``, ``"copeland"`` or ``"auto"`` (per matrix: Condorcet regret when it has
        a Condorcet winner, Copeland regret otherwise; ``jaxrank.metrics.regret_table``). Tied
        Copeland winners: regret against their common score, and a guess of any of them is correct.
      compiler_options: XLA options of the compiled program; default: ``CPU_COMPILER_OPTIONS`` of
        the algorithm when every device is a CPU (``{}``: none). They change speed only, never a result.
      relabel: every run plays under its own random relabelling of the arms, as the MergeDTS
        authors' driver (``jaxrank.bandits.relabel``): run ``r``'s order is drawn from its lane key,
        so it is the same for every algorithm, matrix and setting of one ``key``
        (``relabel.run_orders``); regret is scored in the matrix's own labels.

    Returns:
      ``Trace`` with ``[M, H, R, C]`` arrays (``M = 1`` for a single matrix).

    Raises:
      ValueError: on an invalid matrix, ``regret="condorcet"`` for one without a Condorcet winner, bad
        sizes, an unknown option, an unknown or impossible hyperparameter (a static option passed as
        one included), or a bad key, before anything is compiled; on an unreadable or mismatched
        checkpoint.
    """
    check_key("key", key)
    check_int("num_runs", num_runs, minimum=1)
    check_int("num_steps", num_steps, minimum=1)
    check_int("chunk_size", chunk_size, minimum=1)
    name, registry = _resolve(algorithm)
    if relabel and getattr(registry[name], "RELABELLED", False):
        raise ValueError(f"{name} already plays under a relabelling of the arms; run it with relabel=False.")
    options = dict(options or {})
    algo = registry.build(name, **options)
    if relabel:
        algo = relabel_lib.wrap(algo)
    hparams = dict(hparams or {})
    registry.check_hparams(name, hparams)
    auto_horizon = "horizon" in registry.hparams(name) and "horizon" not in hparams
    prefs = np.asarray(prefs, np.float64)
    prefs = prefs[None] if prefs.ndim == 2 else prefs
    if prefs.ndim != 3:
        raise ValueError(f"prefs must be [K, K] or [M, K, K]; got shape {prefs.shape}.")
    if env is not None and prefs.shape[0] != 1:
        raise ValueError(f"a shared env is scored against one reference matrix; got {prefs.shape[0]} matrices.")
    tables, winners = zip(*(regret_table(p, regret) for p in prefs))
    num_matrices, num_arms = prefs.shape[0], prefs.shape[-1]
    hparams = {k: np.asarray(v, np.float32).reshape(-1) for k, v in hparams.items()}
    num_settings = len(next(iter(hparams.values()))) if hparams else 1
    if auto_horizon:
        hparams["horizon"] = np.full(num_settings, num_steps, np.float32)
    if any(v.size != num_settings for v in hparams.values()):
        raise ValueError(f"every hyperparameter needs the same number of settings; got { {k: v.size for k, v in hparams.items()} }.")
    for h in range(num_settings):  # traced, not run: impossible values fail here, not inside jit
        setting = {k: float(v[h]) for k, v in hparams.items()}
        jax.eval_shape(lambda: algo.init(key, num_arms, **setting))  # noqa: B023
    checkpoints = default_checkpoints(num_steps) if checkpoints is None else np.unique(np.asarray(checkpoints, np.int64))
    if checkpoints.size == 0 or checkpoints[0] < 1 or checkpoints[-1] > num_steps:
        raise ValueError(f"checkpoints must lie in [1, {num_steps}]; got {checkpoints}.")
    mesh = lane_mesh() if mesh is None else mesh
    if compiler_options is None:
        compiler_options = compiler_options_for(name, mesh)

    # Lanes in (matrix, setting, run) order; run r's key is fold_in(key, r) whatever the rest.
    key = key if lanes.is_key(key) else jax.random.wrap_key_data(key)
    shape = (num_matrices, num_settings, num_runs)
    size = int(np.prod(shape))
    run_keys = np.asarray(jax.random.key_data(jax.vmap(lambda r: jax.random.fold_in(key, r))(jnp.arange(num_runs))))
    keys = jax.random.wrap_key_data(np.broadcast_to(run_keys, shape + run_keys.shape[1:]).reshape((size, -1)),
                                    impl=jax.random.key_impl(key))
    lane_hparams = {k: np.broadcast_to(v[None, :, None], shape).reshape(size) for k, v in hparams.items()}

    def per_lane(x):  # [M, ...] -> [M * H * R, ...]
        return np.repeat(np.stack(x), num_settings * num_runs, axis=0)

    own_env = None if env is not None else PrefMatrixEnv(per_lane(prefs).astype(np.float32))
    lane_data = LaneData(own_env, Scoring(per_lane(tables), per_lane(winners)))
    starts, stops, slots = segments(checkpoints, chunk_size)
    checkpoint = None
    if checkpoint_dir is not None:  # the runner adds digests of the keys, settings, matrices and segments
        checkpoint = lanes.Checkpoint(checkpoint_dir, f"{name}{'-relabelled' * relabel}-K{num_arms}", {
            "algorithm": name, "module": getattr(registry[name], "__name__", name),
            "functions": _identify(registry.build(name, **options)),
            "options": {k: repr(v) for k, v in sorted(options.items())}, "regret": regret, "relabel": bool(relabel),
            "shape": list(shape), "num_steps": num_steps})
    record = lanes.run_lanes(study(algo, int(checkpoints.size)), keys, lane_hparams, data=env, lane_data=lane_data,
                             chunks=(starts, stops, slots), chunks_per_call=_SEGMENTS_PER_CALL, mesh=mesh,
                             checkpoint=checkpoint, label=label, progress=stops, compiler_options=compiler_options)

    def shaped(x):
        return np.asarray(x).reshape(shape + (checkpoints.size,))

    regret = shaped(record.regret).astype(np.float64) + shaped(record.regret_low).astype(np.float64)
    return Trace(checkpoints, regret, shaped(record.correct), shaped(record.suboptimal))
