"""Experiment registry: name -> (frozen ``Config`` dataclass, ``run``, optional ``report``).

An experiment module defines ``Config`` and decorates ``run(config, run_dir) -> dict`` with
``@register(name, Config, report=...)``. ``launch`` builds the config from ``--set key=value``
strings typed by the dataclass fields, makes ``workdir/<name>/<timestamp>/``, writes
``config.json``, calls ``run`` (which may save ``arrays.npz``), writes its summary as
``results.json`` and lets ``report`` (from ``experiments/analysis``) draw tables and figures
from the saved files. Every file is written atomically.
"""

import dataclasses
import datetime
import types
import typing
from pathlib import Path
from typing import Any, Callable, Optional

from jaxrank.data import write_json


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


def _new_run_dir(workdir, name: str) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(workdir) / name / stamp
    run_dir, n = base, 0
    while run_dir.exists():
        n += 1
        run_dir = base.with_name(f"{stamp}-{n}")
    run_dir.mkdir(parents=True)
    return run_dir


def launch(name: str, workdir, overrides: list[str], seed: Optional[int] = None) -> Path:
    """Runs one experiment end to end and returns its run directory."""
    experiment = get(name)
    config = make_config(experiment, overrides, seed)
    run_dir = _new_run_dir(workdir, name)
    write_json(run_dir / "config.json", dataclasses.asdict(config))
    print(f"[{name}] writing to {run_dir}", flush=True)
    summary = experiment.run(config, run_dir)
    write_json(run_dir / "results.json", summary)
    if experiment.report is not None:
        experiment.report(run_dir)
    return run_dir
