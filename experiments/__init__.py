"""Paper experiments. Importing this package imports every module in it, so each experiment that
registers itself with ``registry.register`` is found without a list to keep up to date."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
