"""The lane runner: every study as many independent lanes of one pure program (purejaxrl's shape).

A *lane* is one run of a study: one seed, one hyperparameter setting, one permutation, one pair of
rankers. A study gives three pure functions of one lane (``Study``); ``lane`` composes them into
the whole single-lane program ``lane(key, hparams, data, lane_data, chunks) -> result``, which a
user can ``jit`` and ``vmap`` in their own code. ``run_lanes`` runs ``N`` lanes as ``jit(vmap(...))``:

* **sharded** over a 1-D ``jax.sharding.Mesh`` (axis ``"lanes"``, default every device of every
  process, so after ``jax.distributed.initialize()`` it spans all hosts). The lane count is padded
  to a multiple of the device count with copies of the last lane, dropped from the results. Lanes
  never communicate and each lane's inputs are fixed by its index, so the results are bit-identical
  on any number of devices or processes (of one platform: on GPU, XLA's scatter-adds use atomics
  and may reorder additions unless ``--xla_gpu_deterministic_ops=true`` is set);
* **in chunks**: the study's work is a sequence of ``C`` chunks (segments of steps, blocks of
  comparisons, ...); one compiled call scans ``chunks_per_call`` of them, so every call has the
  same shapes (one compile), and progress is printed between calls;
* **resumable**: with a ``Checkpoint``, the whole carry (PRNG keys as key data) and the index of
  the next call are written atomically after each call, to a file named by a hash of every input;
  a later run with the same inputs continues from it with bit-identical results.

Studies are closures built per call, so the runner keys its compiled programs on what a study
computes (``program_key``: code and captured values) rather than on the objects, and keeps the last
``PROGRAM_CACHE_SIZE`` of them: equal studies compile once, and no program outlives that window.
"""

import functools
import hashlib
import json
import time
import types
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxrank.data.checkpoint import load_checkpoint, save_checkpoint

LANE_AXIS = "lanes"
_FORMAT = 1
PROGRAM_CACHE_SIZE = 16
_SMALL_ARRAY = 4096  # captured arrays up to this many elements are keyed by value, larger ones by identity


class Study(NamedTuple):
    """One lane's program, split so the runner can checkpoint and report between chunks.

    * ``init(key, hparams, data, lane_data) -> carry``: ``hparams`` is ``{name: [] f32}``;
    * ``advance(carry, chunk, data, lane_data) -> carry``: one chunk (one row of ``chunks``);
    * ``result(carry, data, lane_data) -> pytree``: what the lane reports.

    ``data`` is shared by every lane; ``lane_data`` is this lane's slice of the per-lane inputs.
    """

    init: Callable[..., Any]
    advance: Callable[..., Any]
    result: Callable[..., Any]


class Checkpoint(NamedTuple):
    """Where and under what name a run keeps its resumable state.

    ``inputs``: a JSON-ready description of whatever else determines the result (algorithm, sizes,
    settings); the runner adds digests of the keys, hyperparameters, data and chunks itself.
    """

    folder: Any
    name: str
    inputs: dict


def lane(study: Study, key, hparams: dict, data, lane_data, chunks):
    """The whole single-lane program: ``init``, every chunk in order, ``result``. Pure: jit and vmap it."""
    carry = study.init(key, hparams, data, lane_data)
    carry = jax.lax.scan(lambda c, chunk: (study.advance(c, chunk, data, lane_data), None), carry, chunks)[0]
    return study.result(carry, data, lane_data)


def lane_mesh(devices=None) -> Mesh:
    """A 1-D mesh with axis ``"lanes"`` over ``devices`` (default ``jax.devices()``: every device of
    every process)."""
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("lane_mesh needs at least one device; got an empty list.")
    return Mesh(np.asarray(devices, dtype=object), (LANE_AXIS,))


def is_key(x) -> bool:
    return jnp.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key)


def _key_data(x):
    return jax.random.key_data(x) if is_key(x) else x


def digest(tree) -> str:
    """SHA-256 of a pytree's structure, dtypes, shapes and bytes (PRNG keys by their key data)."""
    h = hashlib.sha256(str(jax.tree.structure(tree)).encode())
    for leaf in jax.tree.leaves(tree):
        x = np.asarray(_key_data(leaf))
        h.update(f"{x.dtype}{x.shape}".encode())
        h.update(np.ascontiguousarray(x).tobytes())
    return h.hexdigest()


class _Same:
    """Compares by identity and holds the object, so its ``id`` is not reused while a key lives."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def program_key(obj, _seen: tuple = ()):
    """A hashable key, equal for two objects that trace to the same program.

    Functions compare by code and captured values (closure cells, defaults), partials and bound
    methods by function and arguments, tuples (NamedTuples too), lists and dicts by type and
    contents, numbers and strings by type and exact value, small arrays by dtype, shape and bytes;
    anything else by identity. Globals, and objects compared by identity, are read at trace time,
    as for any ``jax.jit`` function: mutating one does not retrace a program already kept.
    """
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        return type(obj), repr(obj)
    if isinstance(obj, (type, np.dtype)):
        return obj
    if id(obj) in _seen:
        return _Same(obj)
    seen = (*_seen, id(obj))
    key = functools.partial(program_key, _seen=seen)
    if isinstance(obj, functools.partial):
        return ("partial", key(obj.func), key(obj.args), key(obj.keywords))
    if isinstance(obj, types.MethodType):
        return "method", key(obj.__func__), key(obj.__self__)
    if isinstance(obj, types.FunctionType):
        try:
            cells = tuple(key(cell.cell_contents) for cell in obj.__closure__ or ())
        except ValueError:  # an unbound cell: the function is still being defined
            return _Same(obj)
        return "function", obj.__code__, cells, key(obj.__defaults__), key(obj.__kwdefaults__)
    if isinstance(obj, (tuple, list)):
        return type(obj), tuple(map(key, obj))
    if isinstance(obj, dict):
        return dict, tuple((key(k), key(v)) for k, v in obj.items())
    if isinstance(obj, (np.ndarray, np.generic, jax.Array)) and not is_key(obj) and np.size(obj) <= _SMALL_ARRAY:
        if not isinstance(obj, jax.core.Tracer) and getattr(obj, "is_fully_addressable", True):
            x = np.asarray(obj)
            return "array", x.dtype, x.shape, x.tobytes()
    return _Same(obj)


_PROGRAMS: "OrderedDict[tuple, tuple]" = OrderedDict()


def _lane_programs(study: Study, key_impl, lanes: NamedSharding, compiler_options: Optional[dict]) -> tuple:
    """``(init, advance, result)``, jitted over lanes; the same objects for an equal study (LRU)."""
    cache_key = (program_key(study), str(key_impl), lanes, program_key(compiler_options))
    programs = _PROGRAMS.pop(cache_key, None)
    if programs is None:
        def init_lanes(kd, hp, d, ld):
            return jax.vmap(lambda k, h, l: study.init(jax.random.wrap_key_data(k, impl=key_impl), h, d, l))(kd, hp, ld)

        def advance_lanes(carry, group, d, ld):
            def one(c, l):
                return jax.lax.scan(lambda c, chunk: (study.advance(c, chunk, d, l), None), c, group)[0]
            return jax.vmap(one)(carry, ld)

        def result_lanes(carry, d, ld):
            return jax.vmap(lambda c, l: study.result(c, d, l))(carry, ld)

        programs = (jax.jit(init_lanes, out_shardings=lanes),
                    jax.jit(advance_lanes, out_shardings=lanes, donate_argnums=0, compiler_options=compiler_options),
                    jax.jit(result_lanes, out_shardings=lanes))
    _PROGRAMS[cache_key] = programs
    while len(_PROGRAMS) > PROGRAM_CACHE_SIZE:
        _PROGRAMS.popitem(last=False)
    return programs


def _to_host(x, size: int) -> np.ndarray:
    """``[padded, ...]`` lane-sharded array -> its first ``size`` lanes in numpy (keys: key data)."""
    x = _key_data(x)
    # Every process gathers (a collective across hosts); on one process this is a plain copy.
    x = np.asarray(x) if x.is_fully_addressable else multihost_utils.process_allgather(x, tiled=True)
    return np.asarray(x[:size])


def _carry_from_host(template, leaves, take, sharding, key_impl, path):
    """The lane-sharded carry from checkpointed leaves ``[size, ...]`` (padding lanes ``take``)."""
    flat, treedef = jax.tree.flatten(template)
    if len(flat) != len(leaves):
        raise ValueError(f"checkpoint {path} holds {len(leaves)} arrays but this run carries {len(flat)}; "
                         "it was written by another version of jaxrank: delete it to start that part again.")
    out = []
    for spec, leaf in zip(flat, leaves):
        want = jax.eval_shape(jax.random.key_data, spec) if is_key(spec) else spec
        if leaf.shape[1:] != want.shape[1:] or leaf.dtype != want.dtype or leaf.shape[0] != take.max() + 1:
            raise ValueError(f"checkpoint {path} has an array {leaf.dtype}{list(leaf.shape)} where this run needs "
                             f"{want.dtype}{[int(take.max()) + 1, *want.shape[1:]]}; delete it to start again.")
        x = jax.device_put(np.ascontiguousarray(leaf[take]), sharding)
        out.append(jax.random.wrap_key_data(x, impl=key_impl) if is_key(spec) else x)
    return jax.tree.unflatten(treedef, out)


def run_lanes(
    study: Study,
    keys,
    hparams: Optional[dict] = None,
    *,
    data=None,
    lane_data=None,
    chunks,
    chunks_per_call: int = 1,
    mesh: Optional[Mesh] = None,
    checkpoint: Optional[Checkpoint] = None,
    label: Optional[str] = None,
    progress: Optional[np.ndarray] = None,
    compiler_options: Optional[dict] = None,
):
    """Runs ``N`` lanes of ``study`` in one compiled program, sharded, in chunks, resumably.

    Args:
      study: the lane's ``Study``.
      keys: ``[N]`` typed PRNG keys, one per lane (``jax.random.key``), or their key data.
      hparams: ``{name: [N]}`` per-lane hyperparameters (cast to f32); ``None`` for none.
      data: pytree shared by every lane (replicated on every device).
      lane_data: pytree of per-lane inputs with leading axis ``[N]`` (sharded with the lanes).
      chunks: pytree of host arrays with leading axis ``[C]``, one row per chunk of work, ``C`` a
        multiple of ``chunks_per_call``.
      chunks_per_call: chunks scanned by one compiled call; progress and checkpoints come between calls.
      mesh: a 1-D mesh with axis ``"lanes"`` (``lane_mesh``); default every device. The results do
        not depend on it.
      checkpoint: where to keep the resumable state; ``None``: not resumable.
      label: printed with progress (compile time, rate, ETA); ``None`` is silent.
      progress: ``[C]`` work done after each chunk (e.g. steps), for the progress line; default the
        chunk count.
      compiler_options: XLA options for the lanes' program (``jax.jit(compiler_options=...)``), e.g.
        per-algorithm CPU tuning chosen by the study's caller.

    Returns:
      The ``result`` pytree as numpy arrays with leading axis ``[N]``.

    Raises:
      ValueError: on mismatched sizes, a bad mesh, or a checkpoint written for other inputs.
    """
    if chunks_per_call < 1:
        raise ValueError(f"chunks_per_call must be >= 1; got {chunks_per_call}.")
    chunks = jax.tree.map(np.asarray, chunks)
    num_chunks = {x.shape[0] for x in jax.tree.leaves(chunks)}
    if len(num_chunks) != 1:
        raise ValueError(f"every leaf of chunks needs the same leading size C; got {sorted(num_chunks)}.")
    (num_chunks,) = num_chunks
    if num_chunks == 0 or num_chunks % chunks_per_call:
        raise ValueError(f"chunks has {num_chunks} rows; it needs a positive multiple of chunks_per_call={chunks_per_call}.")
    progress = np.arange(1, num_chunks + 1) if progress is None else np.asarray(progress)
    if progress.shape != (num_chunks,):
        raise ValueError(f"progress must be [C={num_chunks}]; got shape {progress.shape}.")

    keys = jax.random.wrap_key_data(keys) if not is_key(keys) else keys
    key_impl = jax.random.key_impl(keys)
    key_data = np.asarray(jax.random.key_data(keys))
    size = key_data.shape[0]
    hparams = {k: np.asarray(v, np.float32).reshape(-1) for k, v in (hparams or {}).items()}
    bad = {k: v.size for k, v in hparams.items() if v.size != size}
    if bad:
        raise ValueError(f"hyperparameters need one value per lane ({size}); got sizes {bad}.")
    lane_sizes = {np.shape(x)[0] if np.ndim(x) else None for x in jax.tree.leaves(lane_data)}
    if lane_sizes - {size}:
        raise ValueError(f"lane_data leaves need leading size {size} (one per lane); got {sorted(map(str, lane_sizes))}.")

    mesh = lane_mesh() if mesh is None else mesh
    if mesh.axis_names != (LANE_AXIS,):
        raise ValueError(f"mesh must be 1-D with axis {LANE_AXIS!r} (see lane_mesh); got axes {mesh.axis_names}.")
    num_devices = mesh.devices.size
    take = np.minimum(np.arange(-(-size // num_devices) * num_devices), size - 1)
    lanes = NamedSharding(mesh, PartitionSpec(LANE_AXIS))
    shared = NamedSharding(mesh, PartitionSpec())

    def put(x):  # [size, ...] -> [padded, ...] lane-sharded
        x = _key_data(x)
        x = jax.device_put(np.ascontiguousarray(np.asarray(x)[take]), lanes)
        return x

    def put_tree(tree):
        return jax.tree.map(lambda x: jax.random.wrap_key_data(put(x), impl=jax.random.key_impl(x)) if is_key(x)
                            else put(x), tree)

    data_dev = jax.device_put(data, shared)
    lane_dev = put_tree(lane_data)
    hparams_dev = {k: put(v) for k, v in hparams.items()}

    init_fn, advance_fn, result_fn = _lane_programs(study, key_impl, lanes, compiler_options)

    path, inputs, first_call = None, None, 0
    num_calls = num_chunks // chunks_per_call
    template = jax.eval_shape(init_fn, put(key_data), hparams_dev, data_dev, lane_dev)
    if checkpoint is not None:
        inputs = {"format": _FORMAT, "user": checkpoint.inputs, "key_impl": str(key_impl),
                  "keys": digest(key_data), "hparams": digest(hparams), "data": digest(data),
                  "lane_data": digest(lane_data), "chunks": digest(chunks), "chunks_per_call": chunks_per_call}
        name = hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()[:16]
        path = Path(checkpoint.folder) / f"{checkpoint.name}-{name}.npz"
        inputs = json.loads(json.dumps(inputs, sort_keys=True, default=str))
    if path is not None and path.exists():
        saved, header = load_checkpoint(path)
        if header.get("inputs") != inputs:
            raise ValueError(f"checkpoint {path} was written for a different run; delete it to start again.")
        carry, first_call = _carry_from_host(template, saved, take, lanes, key_impl, path), int(header["next_call"])
        if label is not None:
            print(f"[{label}] resuming at {progress[first_call * chunks_per_call - 1]:,}/{progress[-1]:,} from {path}",
                  flush=True)
    else:
        carry = init_fn(put(key_data), hparams_dev, data_dev, lane_dev)

    host = None
    start, first_done, first_time = time.perf_counter(), 0, None  # the first call compiles: rates start after it
    for call in range(first_call, num_calls):
        part = slice(call * chunks_per_call, (call + 1) * chunks_per_call)
        group = jax.device_put(jax.tree.map(lambda x: x[part], chunks), shared)
        carry = advance_fn(carry, group, data_dev, lane_dev)
        done = progress[part.stop - 1]
        if path is not None:
            host = [_to_host(x, size) for x in jax.tree.leaves(carry)]
            if jax.process_index() == 0:  # every process holds the same gathered arrays; one writes them
                save_checkpoint(path, host, {"inputs": inputs, "next_call": call + 1, "num_calls": num_calls,
                                             "done": int(done)})
        if label is not None:
            jax.block_until_ready(carry)
            now = time.perf_counter()
            if first_time is None:
                first_done, first_time = done, now
                print(f"[{label}] compiled and reached {done:,}/{progress[-1]:,} in {now - start:.1f}s on "
                      f"{num_devices} {mesh.devices.flat[0].platform} device{'s' * (num_devices > 1)}", flush=True)
                continue
            rate = (done - first_done) / max(now - first_time, 1e-9)
            print(f"[{label}] {done:,}/{progress[-1]:,}  {rate * size:,.0f} lane-units/s  "
                  f"ETA {(progress[-1] - done) / max(rate, 1e-9):.0f}s", flush=True)
    del host
    return jax.tree.map(lambda x: _to_host(x, size), result_fn(carry, data_dev, lane_dev))
