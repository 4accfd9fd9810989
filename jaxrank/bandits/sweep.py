"""Dueling-bandit sweeps: many lanes of ``jaxrank.bandits.lane`` over a device mesh, in resumable
chunks, with progress.

A lane is one (matrix, hyperparameter setting, run) triple; all lanes of a ``sweep`` call run
in one compiled program (``vmap`` of ``lane.advance``). Long horizons run as several calls of that
one compiled program with progress printed between them. The environment is either the
preference matrices themselves (each lane draws its duels from its matrix) or any ``DuelEnv``
shared by every lane (e.g. rankers interleaved on LTR queries), scored against a reference matrix.

Run ``r`` uses the key ``fold_in(key, r)`` for every matrix and setting (common random numbers),
so its numbers do not depend on how many runs are launched.

Scaling out: the flattened lane axis is sharded over a 1-D ``jax.sharding.Mesh`` (axis
``"lanes"``, default: every device of every process, so after ``jax.distributed.initialize()``
it spans all hosts). The lane count is padded to a multiple of the device count with copies of
the last lane, which are dropped from the results. Lanes never communicate and each lane's key
is fixed by its run index, so the numbers are bit-identical for any device count; one CPU is a
mesh of one device and runs the same code.

Resuming: with ``checkpoint_dir``, the whole carry (bandit states, PRNG keys as key data, the
recorded trace) and the index of the next call are written atomically after every call, to a
file named by a hash of the sweep's inputs; a later ``sweep`` with the same inputs
continues from it (or returns at once if it had finished) with bit-identical results.
"""

import functools
import hashlib
import json
import time
from pathlib import Path
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrank.bandits.lane import Scoring, advance, default_checkpoints, init_lane, segments
from jaxrank.data.checkpoint import load_checkpoint, save_checkpoint
from jaxrank.envs.matrix import PrefMatrixEnv
from jaxrank.metrics.duel_regret import regret_table
from jaxrank.registry import Registry
from jaxrank.types import DuelEnv
from jaxrank.utils.checks import check_int, check_key


_SEGMENTS_PER_CALL = 16  # fixed, so every horizon reuses one compiled program
_CHECKPOINT_FORMAT = 3
LANE_AXIS = "lanes"

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
    regret: np.ndarray  # [M, H, R, C] f32 cumulative regret
    correct: np.ndarray  # [M, H, R, C] bool, the best-arm guess is a best arm (Condorcet or Copeland winner)
    suboptimal: np.ndarray  # [M, H, R, C] f32 fraction of duels with positive regret


def _run_lanes(algo, env_axis, carry, starts, stops, slots, env, score):
    """One call: every lane (leading axis ``N``) runs segments ``[S]`` of ``starts``/``stops``/``slots``."""
    lanes = jax.vmap(functools.partial(advance, algo), in_axes=(0, None, None, None, env_axis, 0))
    return lanes(carry, starts, stops, slots, env, score)


def _init_lanes(algo, key_impl, num_arms, num_checkpoints, key_data, hparams):
    """``Lane`` with leading lane axis ``N`` from key data ``[N, 2] u32`` and ``{name: [N] f32}``."""

    def one(kd, hp):
        return init_lane(jax.random.wrap_key_data(kd, impl=key_impl), algo, num_arms, num_checkpoints, **hp)

    return jax.vmap(one)(key_data, hparams)


def lane_mesh(devices=None) -> Mesh:
    """A 1-D mesh with axis ``"lanes"`` over ``devices``.

    Args:
      devices: a sequence of devices; default ``jax.devices()``, i.e. every device of every
        process (all hosts once ``jax.distributed.initialize()`` has run).
    """
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("lane_mesh needs at least one device; got an empty list.")
    return Mesh(np.asarray(devices, dtype=object), (LANE_AXIS,))


@functools.lru_cache(maxsize=None)
def _init_program(algo, mesh, key_impl, num_arms, num_checkpoints):
    lanes = NamedSharding(mesh, PartitionSpec(LANE_AXIS))
    return jax.jit(functools.partial(_init_lanes, algo, key_impl, num_arms, num_checkpoints),
                   in_shardings=lanes, out_shardings=lanes)


def compiler_options_for(name: str, mesh) -> Optional[dict]:
    """``CPU_COMPILER_OPTIONS[name]`` when every device of ``mesh`` is a CPU, else None."""
    if any(d.platform != "cpu" for d in mesh.devices.flat):
        return None
    return CPU_COMPILER_OPTIONS.get(name)


@functools.lru_cache(maxsize=None)
def _run_program(algo, mesh, shared_env: bool, options: Optional[tuple]):
    lanes, shared = NamedSharding(mesh, PartitionSpec(LANE_AXIS)), NamedSharding(mesh, PartitionSpec())
    return jax.jit(functools.partial(_run_lanes, algo, None if shared_env else 0),  # (carry, starts, stops, slots, env, score)
                   in_shardings=(lanes, shared, shared, shared, shared if shared_env else lanes, lanes),
                   out_shardings=lanes, donate_argnums=0, compiler_options=dict(options) if options else None)


def _is_key(x) -> bool:
    return jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_host(x, size: int) -> np.ndarray:
    """``[N, ...]`` lane-sharded array -> its first ``size`` lanes ``[size, ...]`` in numpy (keys: key data)."""
    x = jax.random.key_data(x) if _is_key(x) else x
    # Every process gathers (a collective across hosts); on one process this is a plain copy.
    x = np.asarray(x) if x.is_fully_addressable else multihost_utils.process_allgather(x, tiled=True)
    return np.asarray(x[:size])


def _carry_from_host(template, leaves, take, sharding, key_impl, path):
    """Lane-sharded carry ``[N, ...]`` from checkpointed leaves ``[size, ...]`` (lanes ``take``, padding
    included); ``template`` (``ShapeDtypeStruct``s) gives the structure, shapes and dtypes."""
    flat, treedef = jax.tree.flatten(template)
    if len(flat) != len(leaves):
        raise ValueError(f"checkpoint {path} holds {len(leaves)} arrays but this sweep carries {len(flat)}; "
                         "it was written by another version of jaxrank: delete it to start that part again.")
    out = []
    for spec, leaf in zip(flat, leaves):
        want = jax.eval_shape(jax.random.key_data, spec) if _is_key(spec) else spec
        if leaf.shape[1:] != want.shape[1:] or leaf.dtype != want.dtype or leaf.shape[0] != take.max() + 1:
            raise ValueError(f"checkpoint {path} has an array {leaf.dtype}{list(leaf.shape)} where this sweep "
                             f"needs {want.dtype}{[int(take.max()) + 1, *want.shape[1:]]}; delete it to start again.")
        x = jax.device_put(np.ascontiguousarray(leaf[take]), sharding)
        out.append(jax.random.wrap_key_data(x, impl=key_impl) if _is_key(spec) else x)
    return jax.tree.unflatten(treedef, out)


def _digest_env(env) -> str:
    """A hash of an environment's type and leaves (names a resumable checkpoint)."""
    h = hashlib.sha256(type(env).__name__.encode())
    for leaf in jax.tree.leaves(env):
        h.update(np.asarray(jax.random.key_data(leaf) if _is_key(leaf) else leaf).tobytes())
    return h.hexdigest()


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


def sweep(
    algorithm,
    key,
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
) -> Trace:
    """Runs a dueling bandit for ``num_runs`` runs per matrix and setting, in one compiled program.

    Args:
      algorithm: a name of ``jaxrank.bandits.ALGORITHMS`` (``"rcs"``) or an algorithm module (an
        object with ``make``, ``HPARAMS`` and ``OPTIONS``, registered or not).
      key: root PRNG key (``jax.random.key(seed)``).
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
        the algorithm when every device is a CPU. They change speed only, never a result.

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
    options = dict(options or {})
    algo = registry.build(name, **options)
    hparams = dict(hparams or {})
    registry.check_hparams(name, hparams)
    if "horizon" in registry.hparams(name) and "horizon" not in hparams:
        hparams["horizon"] = [num_steps]
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
    if any(v.size != num_settings for v in hparams.values()):
        raise ValueError(f"every hyperparameter needs the same number of settings; got { {k: v.size for k, v in hparams.items()} }.")
    for h in range(num_settings):  # traced, not run: impossible values fail here, not inside jit
        setting = {k: float(v[h]) for k, v in hparams.items()}
        jax.eval_shape(lambda: algo.init(key, num_arms, **setting))  # noqa: B023
    checkpoints = default_checkpoints(num_steps) if checkpoints is None else np.unique(np.asarray(checkpoints, np.int64))
    if checkpoints.size == 0 or checkpoints[0] < 1 or checkpoints[-1] > num_steps:
        raise ValueError(f"checkpoints must lie in [1, {num_steps}]; got {checkpoints}.")
    mesh = lane_mesh() if mesh is None else mesh
    if mesh.axis_names != (LANE_AXIS,):
        raise ValueError(f"mesh must be 1-D with axis {LANE_AXIS!r} (see lane_mesh); got axes {mesh.axis_names}.")
    if compiler_options is None:
        compiler_options = compiler_options_for(name, mesh)

    key = key if _is_key(key) else jax.random.wrap_key_data(key)
    key_impl = str(jax.random.key_impl(key))
    lanes = (num_matrices, num_settings, num_runs)
    size = int(np.prod(lanes))
    # Pad the lanes to a multiple of the device count with copies of the last lane (dropped at the end).
    num_devices = mesh.devices.size
    take = np.minimum(np.arange(-(-size // num_devices) * num_devices), size - 1)
    sharding = NamedSharding(mesh, PartitionSpec(LANE_AXIS))

    def put(x):  # [size, ...] host array -> [padded, ...] lane-sharded device array
        return jax.device_put(np.ascontiguousarray(np.asarray(x)[take]), sharding)

    run_keys = np.asarray(jax.random.key_data(jax.vmap(lambda r: jax.random.fold_in(key, r))(jnp.arange(num_runs))))
    keys = np.broadcast_to(run_keys, lanes + run_keys.shape[1:]).reshape((size,) + run_keys.shape[1:])
    lane_hparams = {k: put(np.broadcast_to(v[None, :, None], lanes).reshape(size)) for k, v in hparams.items()}
    shared_env = env is not None
    if not shared_env:
        env = PrefMatrixEnv(put(np.repeat(prefs, num_settings * num_runs, axis=0).astype(np.float32)))
    score = Scoring(put(np.repeat(np.stack(tables), num_settings * num_runs, axis=0)),
                    put(np.repeat(np.stack(winners), num_settings * num_runs, axis=0)))
    init_fn = _init_program(algo, mesh, key_impl, num_arms, int(checkpoints.size))

    # Segments between consecutive checkpoints, cut at most chunk_size long and grouped so every
    # call has the same shapes (one compile); progress is printed between calls.
    per_call = _SEGMENTS_PER_CALL
    starts, stops, slots = segments(checkpoints, chunk_size, per_call)
    num_calls = len(starts) // per_call

    # A checkpoint is named by a hash of everything that determines the result (not the mesh).
    path, first_call = None, 0
    if checkpoint_dir is not None:
        inputs = {"format": _CHECKPOINT_FORMAT, "algo": name, "options": {k: repr(v) for k, v in sorted(options.items())},
                  "key_impl": key_impl,
                  "key": np.asarray(jax.random.key_data(key)).tolist(),
                  "prefs": hashlib.sha256(prefs.tobytes()).hexdigest(), "shape": list(prefs.shape), "regret": regret,
                  "hparams": {k: v.tolist() for k, v in sorted(hparams.items())}, "num_runs": num_runs,
                  "num_steps": num_steps, "checkpoints": checkpoints.tolist(), "chunk_size": chunk_size,
                  "segments_per_call": per_call}
        if shared_env:
            inputs["env"] = _digest_env(env)
        digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
        path = Path(checkpoint_dir) / f"{name}-K{num_arms}-{digest}.npz"
    template = jax.eval_shape(init_fn, jax.ShapeDtypeStruct((take.size,) + keys.shape[1:], keys.dtype), lane_hparams)
    if path is not None and path.exists():
        saved, header = load_checkpoint(path)
        if header.get("inputs") != inputs:
            raise ValueError(f"checkpoint {path} was written for a different sweep; delete it to start again.")
        carry, first_call = _carry_from_host(template, saved, take, sharding, key_impl, path), int(header["next_call"])
        if label is not None:
            print(f"[{label}] resuming at step {header['steps_done']:,}/{num_steps:,} from {path}", flush=True)
    else:
        carry = init_fn(put(keys), lane_hparams)
    run_fn = _run_program(algo, mesh, shared_env, tuple(sorted((compiler_options or {}).items())))

    host = None
    start = time.perf_counter()
    first_done, first_time = 0, None  # the first call compiles: rates and ETA start after it
    for call in range(first_call, num_calls):
        part = slice(call * per_call, (call + 1) * per_call)
        carry = run_fn(carry, starts[part], stops[part], slots[part], env, score)
        done = int(stops[part][-1])
        if path is not None:
            host = [_to_host(x, size) for x in jax.tree.leaves(carry)]
            if jax.process_index() == 0:  # every host holds the same gathered arrays; one writes them
                save_checkpoint(path, host, {"inputs": inputs, "next_call": call + 1, "num_calls": num_calls,
                                             "steps_done": done})
        if label is not None:
            jax.block_until_ready(carry.regret)
            now = time.perf_counter()
            if first_time is None:
                first_done, first_time = done, now
                print(f"[{label}] compiled and reached step {done:,}/{num_steps:,} in {now - start:.1f}s "
                      f"on {num_devices} {mesh.devices.flat[0].platform} device{'s' * (num_devices > 1)}", flush=True)
                continue
            rate = (done - first_done) / max(now - first_time, 1e-9)
            print(f"[{label}] step {done:,}/{num_steps:,}  {rate * size:,.0f} run-steps/s  "
                  f"ETA {(num_steps - done) / max(rate, 1e-9):.0f}s", flush=True)

    if host is None:
        host = [_to_host(x, size) for x in jax.tree.leaves(carry)]
    final = jax.tree.unflatten(jax.tree.structure(template), host)

    def shaped(x):
        return np.asarray(x).reshape(lanes + (checkpoints.size,))

    return Trace(checkpoints, shaped(final.rec_regret), shaped(final.rec_correct), shaped(final.rec_suboptimal))
