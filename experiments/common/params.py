"""Per-algorithm settings of an experiment: one way from ``--set`` to any algorithm's options and
hyperparameters, in every experiment.

An experiment's ``Config`` holds ``params: tuple[str, ...]``, strings ``"algo.key=value"``
(``--set params=rcs.alpha=0.51,merge_dts.batch_size=16``). ``settings`` checks every one against
the family's ``jaxrank.registry.Registry`` for every selected algorithm before anything runs.
"""

import ast
from typing import Any, Mapping, Sequence

from jaxrank.registry import Registry


def _value(text: str) -> Any:
    """``"0.5"`` -> 0.5, ``"true"`` -> True, ``"16"`` -> 16; other text stays a string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def parse(params: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["rcs.alpha=0.5", ...]`` -> ``{"rcs": {"alpha": 0.5}, ...}``.

    Raises:
      ValueError: naming the item, for one that is not ``algo.key=value``.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in params:
        target, sep, text = item.partition("=")
        algo, dot, key = target.strip().partition(".")
        if not sep or not dot or not algo or not key:
            raise ValueError(f"params item {item!r} is not algo.key=value (e.g. rcs.alpha=0.51).")
        out.setdefault(algo, {})[key] = _value(text)
    return out


def settings(params: Sequence[str], registry: Registry, algorithms: Sequence[str],
             defaults: Mapping[str, Mapping[str, Any]] = None) -> dict[str, tuple[dict, dict]]:
    """``{algo: (options, hparams)}`` for every selected algorithm: the module's defaults, then the
    experiment's own ``defaults[algo]``, then the ``params`` overrides.

    Raises:
      ValueError: before any work, for an unknown algorithm, an override of an algorithm that is not
        selected, or an unknown or invalid setting (``Registry.split``).
    """
    overrides = parse(params)
    for algo in algorithms:
        registry[algo]  # noqa: B018  (an unknown name raises, listing the registered ones)
    stray = sorted(set(overrides) - set(algorithms))
    if stray:
        raise ValueError(f"params set {', '.join(stray)}, which this run does not run; algorithms: {', '.join(algorithms)}.")
    defaults = defaults or {}
    return {algo: registry.split(algo, {**defaults.get(algo, {}), **overrides.get(algo, {})}) for algo in algorithms}
