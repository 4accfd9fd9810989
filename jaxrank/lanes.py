"""The lane runner: every study as many independent lanes of one pure program (purejaxrl's shape).

A *lane* is one run of a study: one seed, one hyperparameter setting, one permutation, one pair of
rankers. A study gives three pure functions of one lane (``Study``; a study whose lanes converge, a
fourth that says when a lane is finished); ``lane`` composes them into the whole single-lane
program ``lane(key, hparams, data, lane_data, chunks) -> result``, which a user can ``jit`` and
``vmap`` in their own code. ``run_lanes`` runs ``N`` lanes as ``jit(vmap(...))``:

* **sharded** over a 1-D ``jax.sharding.Mesh`` (axis ``"lanes"``, default every device of every
  process, so after ``jax.distributed.initialize()`` it spans all hosts). The lane count is padded
  to a multiple of the device count with copies of the last lane, dropped from the results. Lanes
  never communicate and each lane's inputs are fixed by its index, so the results are bit-identical
  on any number of devices or processes (of one platform: on GPU, XLA's scatter-adds use atomics
  and may reorder additions unless ``--xla_gpu_deterministic_ops=true`` is set);
* **in chunks**: the study's work is a sequence of ``C`` chunks (segments of steps, blocks of
  comparisons, ...); one compiled call scans ``chunks_per_call`` of them, so every call has the
  same shapes (one compile), and progress is printed between calls. ``C`` need not be a multiple:
  the last call's missing chunks repeat the last one and are skipped (``lax.cond`` on a flag shared
  by every lane, so no lane computes them). A study that says when a lane is ``finished`` (a solver
  that converges) stops as soon as every lane is: its chunks are a budget;
* **resumable**: with a ``Checkpoint``, the whole carry (PRNG keys as key data) and the index of
  the next call are written atomically after each call, to a file named by a hash of every input;
  a later run with the same inputs continues from it with bit-identical results.

The programs are ``jax.jit`` of module-level functions with the study as a static argument, so
jit's own cache serves: build a study from module-level functions and a hashable static config
(``bind``, ``bound_study``), and an equal study built again compiles nothing new. A study of fresh
closures still runs; it compiles once per ``run_lanes`` call.
"""

import functools
import hashlib
import json
import time
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


class Study(NamedTuple):
    """One lane's program, split so the runner can checkpoint and report between chunks.

    * ``init(key, hparams, data, lane_data) -> carry``: ``hparams`` is ``{name: [] f32}``;
    * ``advance(carry, chunk, data, lane_data) -> carry``: one chunk (one row of ``chunks``);
    * ``result(carry, data, lane_data) -> pytree``: what the lane reports;
    * ``finished(carry, data, lane_data) -> [] bool`` (optional): the lane is done, and ``advance``
      leaves its carry unchanged from then on (a solver that has converged). Once every lane is
      finished the runner skips the remaining chunks, so ``chunks`` may be a budget (at most that
      many) and the results do not depend on when it checks.

    ``data`` is shared by every lane; ``lane_data`` is this lane's slice of the per-lane inputs.
    """

    init: Callable[..., Any]
    advance: Callable[..., Any]
    result: Callable[..., Any]
    finished: Optional[Callable[..., Any]] = None


class Bound(NamedTuple):
    """``fn(static, *args)``: a module-level function with its static configuration bound first.

    Compared and hashed by value (``fn`` by identity, ``static`` by its own equality), unlike a
    closure or a ``functools.partial``, so two studies built from equal configurations are equal
    and share jit's compiled programs. ``static`` must be hashable (numbers, strings, dtypes,
    NamedTuples of them, algorithm objects); arrays go in ``data``, ``lane_data`` or ``chunks``.
    """

    fn: Callable[..., Any]
    static: Any

    def __call__(self, *args):
        return self.fn(self.static, *args)


def bind(fn: Callable[..., Any], static) -> Bound:
    """``fn`` with ``static`` bound as its first argument, equal by value (``Bound``)."""
    return Bound(fn, static)


def bound_study(static, init: Callable[..., Any], advance: Callable[..., Any], result: Callable[..., Any],
                finished: Optional[Callable[..., Any]] = None) -> Study:
    """A ``Study`` of module-level functions that take ``static`` first:
    ``init(static, key, hparams, data, lane_data)``, ``advance(static, carry, chunk, data, lane_data)``,
    ``result(static, carry, data, lane_data)`` and, optionally, ``finished(static, carry, data, lane_data)``."""
    return Study(bind(init, static), bind(advance, static), bind(result, static),
                 None if finished is None else bind(finished, static))


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


def fold_in_keys(key, num_lanes: int) -> jax.Array:
    """``[num_lanes]`` keys ``fold_in(key, n)``: lane ``n``'s key does not depend on how many lanes run."""
    return jax.vmap(lambda n: jax.random.fold_in(key, n))(jnp.arange(num_lanes))


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


def _init_lanes(key_data, hparams, data, lane_data, *, study: Study, key_impl: str):
    return jax.vmap(lambda k, h, l: study.init(jax.random.wrap_key_data(k, impl=key_impl), h, data, l))(
        key_data, hparams, lane_data)


def _advance_lanes(carry, group, live, data, lane_data, *, study: Study, partial: bool):
    """Every lane through the chunks of ``group``; with ``partial``, chunk ``c`` runs only where ``live[c]``."""
    def one(c, l):
        if not partial:
            return jax.lax.scan(lambda c, chunk: (study.advance(c, chunk, data, l), None), c, group)[0]

        def chunk_step(c, x):
            chunk, on = x
            # ``on`` is one flag for every lane (not batched), so the cond stays a branch under vmap.
            return jax.lax.cond(on, lambda c: study.advance(c, chunk, data, l), lambda c: c, c), None
        return jax.lax.scan(chunk_step, c, (group, live))[0]
    return jax.vmap(one)(carry, lane_data)


def _result_lanes(carry, data, lane_data, *, study: Study):
    return jax.vmap(lambda c, l: study.result(c, data, l))(carry, lane_data)


def _finished_lanes(carry, data, lane_data, *, study: Study):
    return jax.vmap(lambda c, l: study.finished(c, data, l))(carry, lane_data)


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
      chunks: pytree of host arrays with leading axis ``[C]``, one row per chunk of work.
      chunks_per_call: chunks scanned by one compiled call (the last call may have fewer); progress
        and checkpoints come between calls.
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
    try:
        hash(study)
    except TypeError as err:
        raise ValueError(f"the study must be hashable (jit's static argument): {err}; bind only hashable static "
                         "values (lanes.bound_study) and pass arrays as data, lane_data or chunks.") from None
    chunks = jax.tree.map(np.asarray, chunks)
    num_chunks = {x.shape[0] for x in jax.tree.leaves(chunks)}
    if len(num_chunks) != 1:
        raise ValueError(f"every leaf of chunks needs the same leading size C; got {sorted(num_chunks)}.")
    (num_chunks,) = num_chunks
    if num_chunks == 0:
        raise ValueError("chunks has 0 rows; a study needs at least one chunk.")
    chunks_per_call = min(chunks_per_call, num_chunks)
    num_calls = -(-num_chunks // chunks_per_call)
    # The last call's missing chunks repeat the last chunk, flagged off: one shape for every call.
    padded = np.minimum(np.arange(num_calls * chunks_per_call), num_chunks - 1)
    live = np.arange(num_calls * chunks_per_call) < num_chunks
    partial = num_calls * chunks_per_call != num_chunks
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

    key_impl = str(key_impl)
    init_fn = functools.partial(jax.jit(_init_lanes, static_argnames=("study", "key_impl"), out_shardings=lanes),
                                study=study, key_impl=key_impl)
    advance_fn = functools.partial(
        jax.jit(_advance_lanes, static_argnames=("study", "partial"), out_shardings=lanes, donate_argnums=0,
                compiler_options=compiler_options), study=study, partial=partial)
    result_fn = functools.partial(jax.jit(_result_lanes, static_argnames=("study",), out_shardings=lanes),
                                  study=study)
    finished_fn = None if study.finished is None else functools.partial(
        jax.jit(_finished_lanes, static_argnames=("study",), out_shardings=lanes), study=study)

    path, inputs, first_call = None, None, 0
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
            reached = progress[padded[first_call * chunks_per_call - 1]]
            print(f"[{label}] resuming at {reached:,}/{progress[-1]:,} from {path}", flush=True)
    else:
        carry = init_fn(put(key_data), hparams_dev, data_dev, lane_dev)

    host = None
    start, first_done, first_time = time.perf_counter(), 0, None  # the first call compiles: rates start after it
    for call in range(first_call, num_calls):
        part = padded[call * chunks_per_call:(call + 1) * chunks_per_call]
        group = jax.device_put(jax.tree.map(lambda x: x[part], chunks), shared)
        on = jax.device_put(live[call * chunks_per_call:(call + 1) * chunks_per_call], shared)
        carry = advance_fn(carry, group, on, data_dev, lane_dev)
        done = progress[part[-1]]
        if path is not None:
            host = [_to_host(x, size) for x in jax.tree.leaves(carry)]
            if jax.process_index() == 0:  # every process holds the same gathered arrays; one writes them
                save_checkpoint(path, host, {"inputs": inputs, "next_call": call + 1, "num_calls": num_calls,
                                             "done": int(done)})
        finished = None if finished_fn is None else _to_host(finished_fn(carry, data_dev, lane_dev), size)
        if label is not None:
            jax.block_until_ready(carry)
            now = time.perf_counter()
            if first_time is None:
                first_done, first_time = done, now
                print(f"[{label}] compiled and reached {done:,}/{progress[-1]:,} in {now - start:.1f}s on "
                      f"{num_devices} {mesh.devices.flat[0].platform} device{'s' * (num_devices > 1)}", flush=True)
            else:
                rate = (done - first_done) / max(now - first_time, 1e-9)
                left = (f"{int(finished.sum())}/{size} lanes finished" if finished is not None
                        else f"ETA {(progress[-1] - done) / max(rate, 1e-9):.0f}s")
                print(f"[{label}] {done:,}/{progress[-1]:,}  {rate * size:,.0f} lane-units/s  {left}", flush=True)
        if finished is not None and finished.all():
            break
    del host
    return jax.tree.map(lambda x: _to_host(x, size), result_fn(carry, data_dev, lane_dev))
