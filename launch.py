"""Runs a registered experiment: ``python launch.py --experiment=NAME [--set key=value ...]``.

``--resume=RUN_DIR`` (or ``--resume=latest`` with ``--experiment``: the newest run that is
unfinished and holds a checkpoint) continues an interrupted run from its checkpoints;
``--distributed`` calls ``jax.distributed.initialize()`` first, for a launch of the same command on
several hosts. Compiled programs are kept in JAX's persistent compilation
cache (``--compilation_cache``), so a second launch with the same shapes skips XLA compilation.
"""

import os
import sys

import jax
from absl import app, flags, logging

import experiments  # noqa: F401  (registers every experiment)
from experiments.common import registry
from jaxrank.data.locations import compilation_cache_dir

_EXPERIMENT = flags.DEFINE_string("experiment", None, "Registered experiment name (see --list).")
_WORKDIR = flags.DEFINE_string("workdir", "runs", "Results go to WORKDIR/<experiment>/<timestamp>/.")
_SET = flags.DEFINE_multi_string("set", [], "Config override key=value, typed by the Config field; repeatable.")
_SEED = flags.DEFINE_integer("seed", None, "Overrides the config's seed.")
_LIST = flags.DEFINE_bool("list", False, "List the registered experiments and exit.")
_RESUME = flags.DEFINE_string("resume", None, "Continue the run in this run directory from its checkpoints, or "
                              "'latest': the newest resumable run of --experiment under --workdir (unfinished, with a "
                              "checkpoint). Its config.json is kept.")
_DISTRIBUTED = flags.DEFINE_bool("distributed", False, "Call jax.distributed.initialize() first, so runs are "
                                 "sharded over the devices of every process; on SLURM/MPI/TPU/Kubernetes it "
                                 "finds its peers itself.")
_COORDINATOR = flags.DEFINE_string("coordinator_address", None, "With --distributed elsewhere: host:port of process 0 "
                                   "(or set JAX_COORDINATOR_ADDRESS).")
_NUM_PROCESSES = flags.DEFINE_integer("num_processes", None, "With --distributed elsewhere: how many processes.")
_PROCESS_ID = flags.DEFINE_integer("process_id", None, "With --distributed elsewhere: this process's index, 0-based.")
_COMPILATION_CACHE = flags.DEFINE_string(
    "compilation_cache", str(compilation_cache_dir()),
    "Folder of JAX's persistent compilation cache (default $JAXRANK_COMPILATION_CACHE or <user cache>/jaxrank/xla); "
    "every compiled program is stored there and reused by later launches with the same shapes. Empty: off.")


def _use_compilation_cache(folder: str) -> None:
    if not folder:
        return
    jax.config.update("jax_compilation_cache_dir", os.path.expanduser(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def main(argv):
    if not flags.FLAGS["verbosity"].present:  # keep library INFO chatter (e.g. backend probing) out of results
        logging.set_verbosity(logging.WARNING)
    if len(argv) > 1:
        sys.exit(f"error: unexpected arguments {argv[1:]}; use --set key=value.")
    if _LIST.value:
        for name in registry.names():
            print(f"{name:24s} {(registry.get(name).run.__doc__ or '').strip().splitlines()[0]}")
        return
    _use_compilation_cache(_COMPILATION_CACHE.value)
    if _DISTRIBUTED.value:
        jax.distributed.initialize(_COORDINATOR.value, _NUM_PROCESSES.value, _PROCESS_ID.value)
    if not _EXPERIMENT.value and not _RESUME.value:
        sys.exit(f"error: --experiment is required; registered: {', '.join(registry.names())}.")
    try:
        if _RESUME.value == "latest":
            if not _EXPERIMENT.value:
                raise registry.ExperimentError("--resume=latest needs --experiment=NAME to know which runs to look at.")
            run_dir = registry.latest_run_dir(_WORKDIR.value, _EXPERIMENT.value)
            registry.resume(run_dir, _SET.value, _SEED.value, _EXPERIMENT.value)
        elif _RESUME.value:
            registry.resume(_RESUME.value, _SET.value, _SEED.value, _EXPERIMENT.value)
        else:
            registry.launch(_EXPERIMENT.value, _WORKDIR.value, _SET.value, _SEED.value)
    except registry.ExperimentError as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    app.run(main)
