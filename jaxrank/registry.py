"""One registry type for every family of algorithms (bandits, learners, OLTR rankers).

An algorithm is a module with three module-level names:

* ``HPARAMS``: ``{name: default}`` of the continuous hyperparameters its ``init(key, size, **hparams)``
  stores as f32 leaves of the state (so a grid is a ``vmap`` and compiles once);
* ``OPTIONS``: ``{name: default}`` of its static structural switches (a loop length, a network's
  width, a variant flag), bound once by ``make``;
* ``make(**options)``: the algorithm, a NamedTuple of pure functions (the family's type in
  ``jaxrank.types``).

A family's registry maps names to such modules; adding an algorithm is one module plus one line.
"""

import math
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Iterator

_REQUIRED = ("make", "HPARAMS", "OPTIONS")


class Registry(Mapping):
    """``{name: algorithm module}`` of one family, with one way to build and configure them.

    Args:
      family: what the algorithms are ("bandit", "learner", "ranker"), used in error messages.
      modules: ``{name: module}``; each module has ``make``, ``HPARAMS`` and ``OPTIONS``.
    """

    def __init__(self, family: str, modules: Mapping[str, ModuleType]):
        for name, module in modules.items():
            missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
            if missing:
                raise TypeError(f"{family} {name!r} ({getattr(module, '__name__', module)}) lacks {', '.join(missing)}.")
            clash = set(module.HPARAMS) & set(module.OPTIONS)
            if clash:
                raise TypeError(f"{family} {name!r} names {sorted(clash)} both a hyperparameter and an option.")
        self.family = family
        self._modules = dict(modules)

    def __getitem__(self, name: str) -> ModuleType:
        if name not in self._modules:
            raise ValueError(f"unknown {self.family} {name!r}; registered: {', '.join(self._modules)}.")
        return self._modules[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def hparams(self, name: str) -> dict[str, float]:
        """The defaults of ``name``'s hyperparameters (``init``'s keywords)."""
        return dict(self[name].HPARAMS)

    def options(self, name: str) -> dict[str, Any]:
        """The defaults of ``name``'s static options (``make``'s keywords)."""
        return dict(self[name].OPTIONS)

    def build(self, name: str, **options) -> Any:
        """``name``'s algorithm with ``options`` bound (defaults for the rest)."""
        opts, _ = self.split(name, options, hparams_allowed=False)
        return self[name].make(**opts)

    def split(self, name: str, settings: Mapping[str, Any], *, hparams_allowed: bool = True) -> tuple[dict, dict]:
        """``(options, hparams)`` of ``name`` from one flat mapping of settings, defaults filled in.

        Raises:
          ValueError: naming the algorithm, the key and the value, for an unknown key, a static option
            passed where only hyperparameters go (or the reverse), or a hyperparameter that is not a
            finite number.
        """
        module = self[name]
        options, hparams = dict(module.OPTIONS), dict(module.HPARAMS)
        for key, value in settings.items():
            if key in module.OPTIONS:
                options[key] = value
            elif key in module.HPARAMS:
                if not hparams_allowed:
                    raise ValueError(f"{self.family} {name!r}: {key}={value!r} is a hyperparameter, set through "
                                     f"init(key, size, {key}=...), not an option of make(); options: "
                                     f"{', '.join(module.OPTIONS) or 'none'}.")
                hparams[key] = _finite(self.family, name, key, value)
            else:
                raise ValueError(f"{self.family} {name!r} has no setting {key!r}; hyperparameters: "
                                 f"{', '.join(module.HPARAMS) or 'none'}; options: {', '.join(module.OPTIONS) or 'none'}.")
        return options, hparams

    def check_hparams(self, name: str, names) -> None:
        """Raises ``ValueError`` when one of ``names`` is not a hyperparameter of ``name``
        (``check_hparam_names``)."""
        module = self[name]
        check_hparam_names(f"{self.family} {name!r}", module.HPARAMS, module.OPTIONS, names)


def check_hparam_names(owner: str, defaults: Mapping[str, Any], options: Mapping[str, Any], names) -> None:
    """The one check of hyperparameter names: ``ValueError`` naming ``owner`` when one of ``names``
    (an iterable, or a mapping whose values the message shows) is not a key of ``defaults``; a static
    option given as a hyperparameter gets its own message (options are bound by ``make``)."""
    for key in names:
        got = f" (got {key}={names[key]!r})" if isinstance(names, Mapping) else ""
        if key in options:
            raise ValueError(f"{owner}: {key!r} is a static option, not a hyperparameter; build the algorithm with "
                             f"make({key}=...) (Registry.build) instead{got}.")
        if key not in defaults:
            raise ValueError(f"{owner} has no hyperparameter {key!r}; hyperparameters: "
                             f"{', '.join(defaults) or 'none'}{got}.")


def hparams_with_defaults(owner: str, defaults: Mapping[str, Any], options: Mapping[str, Any],
                          given: Mapping[str, Any]) -> dict:
    """``defaults`` updated with ``given``, after ``check_hparam_names``: what an ``init(key, size,
    **hparams)`` stores."""
    check_hparam_names(owner, defaults, options, given)
    return {**defaults, **given}


def _finite(family: str, name: str, key: str, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{family} {name!r}: hyperparameter {key}={value!r} is not a number.") from None
    if not math.isfinite(number):
        raise ValueError(f"{family} {name!r}: hyperparameter {key}={value!r} must be finite.")
    return number
