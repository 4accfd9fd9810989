"""Runs a registered experiment: ``python launch.py --experiment=NAME [--set key=value ...]``."""

import sys

from absl import app, flags, logging

import experiments  # noqa: F401  (registers every experiment)
from experiments import registry

_EXPERIMENT = flags.DEFINE_string("experiment", None, "Registered experiment name (see --list).")
_WORKDIR = flags.DEFINE_string("workdir", "runs", "Results go to WORKDIR/<experiment>/<timestamp>/.")
_SET = flags.DEFINE_multi_string("set", [], "Config override key=value, typed by the Config field; repeatable.")
_SEED = flags.DEFINE_integer("seed", None, "Overrides the config's seed.")
_LIST = flags.DEFINE_bool("list", False, "List the registered experiments and exit.")


def main(argv):
    if not flags.FLAGS["verbosity"].present:  # keep library INFO chatter (e.g. backend probing) out of results
        logging.set_verbosity(logging.WARNING)
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; use --set key=value.")
    if _LIST.value:
        for name in registry.names():
            print(f"{name:24s} {(registry.get(name).run.__doc__ or '').strip().splitlines()[0]}")
        return
    if not _EXPERIMENT.value:
        sys.exit(f"error: --experiment is required; registered: {', '.join(registry.names())}.")
    try:
        registry.launch(_EXPERIMENT.value, _WORKDIR.value, _SET.value, _SEED.value)
    except registry.ExperimentError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    app.run(main)
