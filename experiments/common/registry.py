"""Experiment registry: name -> (frozen ``Config`` dataclass, ``run``, optional ``report``).

An experiment module defines ``Config`` and decorates ``run(config, run_dir) -> dict`` with
``@register(name, Config, report=...)``. ``launch`` builds the config from ``--set key=value``
strings typed by the dataclass fields, makes ``workdir/<name>/<timestamp>/``, writes
``config.json``, calls ``run`` (which may save ``arrays.npz``), writes its summary as
``results.json`` and lets ``report`` (from ``experiments/analysis``) draw tables and figures
from the saved files. Every file is written atomically.

Same seed, same bytes: ``results.json`` holds only what the seed and config determine, so two runs
of one config write byte-identical files. Wall-clock figures go to ``timings.json``: a summary may
carry them in one top-level ``"timings"`` dict, which the registry writes there and strips from
``results.json``; a report reads ``timings.json`` for them and keeps them out of ``table.md``.

An experiment that passes ``checkpoint_dir(run_dir)`` to ``jaxrank.bandits.run_sweep`` is
resumable: ``resume(run_dir)`` reloads ``config.json`` and runs it again in the same folder;
finished simulations are read back from their checkpoints and the interrupted one continues
where its last checkpoint left it. The checkpoints are deleted once ``results.json`` is written.
With several processes (``jax.distributed.initialize()``), they agree on the run directory and
only process 0 writes the registry's files and the checkpoints.
"""

import dataclasses
import datetime
import json
import shutil
import types
import typing
from pathlib import Path
from typing import Any, Callable, Optional

import jax
import numpy as np

from experiments.common.budget import NonFiniteError
from jaxrank.data import remove_stale_temporaries, write_json

CHECKPOINTS = "checkpoints"  # subfolder of a run directory holding resumable simulation state
TIMINGS = "timings"  # top-level summary key whose dict goes to timings.json instead of results.json


class ExperimentError(ValueError):
    """A bad experiment name, config key or value; the message is one line."""


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    config_cls: type
    run: Callable[[Any, Path], dict]
    report: Optional[Callable[[Path], None]] = None


_REGISTRY: dict[str, Experiment] = {}


def register(name: str, config_cls: type, *, report: Optional[Callable[[Path], None]] = None):
    """Decorator registering ``run(config, run_dir) -> summary dict`` under ``name``."""

    def decorate(run_fn):
        if name in _REGISTRY:
            raise ExperimentError(f"experiment {name!r} is registered twice.")
        _REGISTRY[name] = Experiment(name, config_cls, run_fn, report)
        return run_fn

    return decorate


def names() -> list[str]:
    return sorted(_REGISTRY)


def get(name: str) -> Experiment:
    if name not in _REGISTRY:
        raise ExperimentError(f"unknown experiment {name!r}; registered: {', '.join(names())}.")
    return _REGISTRY[name]


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _coerce(text: str, hint):
    """Parses ``text`` as the field type ``hint``; raises ValueError naming the expected type."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if text.strip().lower() == "none":
            return None
        (hint,) = [a for a in args if a is not type(None)]
        return _coerce(text, hint)
    if origin is tuple:
        return tuple(_coerce(part.strip(), args[0]) for part in text.split(",") if part.strip())
    if hint is bool:
        if text.strip().lower() in _TRUE | _FALSE:
            return text.strip().lower() in _TRUE
        raise ValueError("expected a bool (true/false)")
    try:
        return hint(text)
    except ValueError:
        raise ValueError(f"expected {getattr(hint, '__name__', hint)}") from None


def make_config(experiment: Experiment, overrides: list[str], seed: Optional[int] = None):
    """The experiment's default ``Config`` with ``key=value`` overrides and ``seed`` applied."""
    hints = typing.get_type_hints(experiment.config_cls)
    values = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep:
            raise ExperimentError(f"--set {item!r}: expected key=value.")
        if key not in hints:
            raise ExperimentError(
                f"unknown config key {key!r} for {experiment.name}; keys: {', '.join(sorted(hints))}."
            )
        try:
            values[key] = _coerce(text, hints[key])
        except ValueError as e:
            raise ExperimentError(f"--set {key}={text}: {e}.") from None
    if seed is not None:
        if "seed" not in hints:
            raise ExperimentError(f"experiment {experiment.name} has no seed field.")
        values["seed"] = seed
    return experiment.config_cls(**values)


def checkpoint_dir(run_dir) -> Path:
    """Where an experiment keeps its resumable checkpoints: ``run_dir/checkpoints``."""
    return Path(run_dir) / CHECKPOINTS


def _new_run_dir(workdir, name: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(workdir) / name / stamp
    run_dir, n = base, 0
    while run_dir.exists():
        n += 1
        run_dir = base.with_name(f"{stamp}-{n}")
    run_dir.mkdir(parents=True)
    return run_dir


def _shared_run_dir(workdir, name: str) -> Path:
    """A new run directory; with several processes, process 0 makes it and tells the others."""
    if jax.process_count() == 1:
        return _new_run_dir(workdir, name)
    from jax.experimental import multihost_utils

    text = str(_new_run_dir(workdir, name)).encode() if jax.process_index() == 0 else b""
    buffer = np.zeros(4096, np.uint8)
    buffer[: len(text)] = np.frombuffer(text, np.uint8)
    buffer = multihost_utils.broadcast_one_to_all(buffer)
    return Path(bytes(np.asarray(buffer)).rstrip(b"\0").decode())


def _execute(experiment: Experiment, config, run_dir: Path, *, fresh: bool) -> Path:
    """Runs the experiment in ``run_dir``. A bad value (``ValueError``) or missing input
    (``FileNotFoundError``) becomes a one-line ``ExperimentError``; a fresh run that fails before
    writing anything resumable leaves no run directory behind (``--resume=latest`` would pick it).
    A ``NonFiniteError`` (a hyperparameter made the numbers non-finite) deletes the run's checkpoints,
    which hold the broken state, and a fresh run's directory: a resume cannot repeat the failure."""
    try:
        summary = experiment.run(config, run_dir)
    except NonFiniteError as e:
        if jax.process_index() == 0:
            shutil.rmtree(run_dir if fresh else checkpoint_dir(run_dir), ignore_errors=True)
        raise ExperimentError(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
    except (ValueError, FileNotFoundError) as e:
        if fresh and jax.process_index() == 0 and not _has_checkpoint(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)
        raise ExperimentError(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
    except BaseException:
        if fresh and jax.process_index() == 0 and not _has_checkpoint(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    if jax.process_index() == 0:
        summary = dict(summary)
        timings = summary.pop(TIMINGS, None)
        if timings is not None:
            write_json(run_dir / "timings.json", timings)
        write_json(run_dir / "results.json", summary)
        if experiment.report is not None:
            experiment.report(run_dir)
        shutil.rmtree(checkpoint_dir(run_dir), ignore_errors=True)
    return run_dir


def launch(name: str, workdir, overrides: list[str], seed: Optional[int] = None,
           on_start: Optional[Callable[[Path], None]] = None) -> Path:
    """Runs one experiment end to end and returns its run directory; ``on_start(run_dir)`` is called
    once the directory and its ``config.json`` exist, before the run (a caller that tracks it)."""
    experiment = get(name)
    config = make_config(experiment, overrides, seed)
    run_dir = _shared_run_dir(workdir, name)
    if jax.process_index() == 0:
        write_json(run_dir / "config.json", dataclasses.asdict(config))
    print(f"[{name}] writing to {run_dir}", flush=True)
    if on_start is not None:
        on_start(run_dir)
    return _execute(experiment, config, run_dir, fresh=True)


def _saved_config(experiment: Experiment, run_dir: Path):
    """The ``Config`` stored in ``run_dir/config.json`` (JSON lists become tuples again)."""
    values = json.loads((run_dir / "config.json").read_text())
    hints = typing.get_type_hints(experiment.config_cls)
    unknown = sorted(set(values) - set(hints))
    if unknown:
        raise ExperimentError(f"{run_dir / 'config.json'} has keys {unknown} that {experiment.name} no longer has; "
                              "it cannot be resumed, start a new run.")
    return experiment.config_cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def _has_checkpoint(run_dir: Path) -> bool:
    return any(checkpoint_dir(run_dir).rglob("*.npz"))  # any layout of checkpoint files below it


def latest_run_dir(workdir, name: str) -> Path:
    """The newest ``workdir/<name>/<timestamp>[-n]`` folder that can be resumed: unfinished (no
    ``results.json``) and holding a checkpoint.

    Raises:
      ExperimentError: when no run of ``name`` is resumable, saying how many runs finished or
        stopped before their first checkpoint.
    """
    get(name)
    folder = Path(workdir) / name
    runs = [p for p in folder.glob("*") if (p / "config.json").is_file()] if folder.is_dir() else []
    if not runs:
        raise ExperimentError(f"no run of {name} under {folder} to resume; start one with --experiment={name}.")
    resumable = [p for p in runs if not (p / "results.json").is_file() and _has_checkpoint(p)]
    if not resumable:
        finished = sum((p / "results.json").is_file() for p in runs)
        raise ExperimentError(
            f"no resumable run of {name} under {folder}: of its {len(runs)} runs {finished} finished and "
            f"{len(runs) - finished} stopped before their first checkpoint; start one with --experiment={name}.")

    def order(p):  # "<date>-<time>[-n]": "-10" comes after "-9"
        parts = p.name.split("-")
        return parts[:2], int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0

    return max(resumable, key=order)


def resume(run_dir, overrides: list[str] = (), seed: Optional[int] = None, name: Optional[str] = None) -> Path:
    """Continues an interrupted run in its own directory and returns it.

    The experiment is the run directory's parent folder name (``workdir/<name>/<timestamp>``) and
    the config is read from its ``config.json``; ``overrides``/``seed``/``name``, if given, must
    agree with them (a resumed run cannot change its config).

    Raises:
      ExperimentError: if ``run_dir`` is not a run directory, has finished (``results.json``),
        has no checkpoint, or the requested name, overrides or seed differ from the saved run.
    """
    run_dir = Path(run_dir)
    if not (run_dir / "config.json").is_file():
        raise ExperimentError(f"--resume={run_dir}: no config.json there; "
                              "expected a folder WORKDIR/<experiment>/<timestamp>.")
    if name is not None and name != run_dir.parent.name:
        raise ExperimentError(f"--resume={run_dir} is a run of {run_dir.parent.name!r}, not {name!r}; "
                              f"drop --experiment or pass a run of {name}.")
    experiment = get(run_dir.parent.name)
    config = _saved_config(experiment, run_dir)
    requested = make_config(experiment, list(overrides), seed)
    changed = sorted({item.partition("=")[0].strip() for item in overrides} | ({"seed"} if seed is not None else set()))
    differ = [f"{k}={getattr(requested, k)!r} (saved: {getattr(config, k)!r})"
              for k in changed if getattr(requested, k) != getattr(config, k)]
    if differ:
        raise ExperimentError(f"--resume={run_dir}: the run's config differs from the requested {', '.join(differ)}; "
                              "a resumed run keeps its config: drop those --set/--seed flags or start a new run.")
    if (run_dir / "results.json").is_file():
        raise ExperimentError(f"--resume={run_dir}: this run has finished (results.json exists); nothing to resume.")
    if not _has_checkpoint(run_dir):
        raise ExperimentError(f"--resume={run_dir}: no checkpoint in {checkpoint_dir(run_dir)} (the run stopped "
                              f"before its first chunk finished, or {experiment.name} does not checkpoint); "
                              f"start it again with --experiment={experiment.name}.")
    if jax.process_index() == 0:  # an interrupted atomic write leaves only a temporary file: drop it
        for folder in (run_dir, checkpoint_dir(run_dir)):
            remove_stale_temporaries(folder)
    print(f"[{experiment.name}] resuming {run_dir}", flush=True)
    return _execute(experiment, config, run_dir, fresh=False)
