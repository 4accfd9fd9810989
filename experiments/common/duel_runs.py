"""Running dueling bandits over groups of matrices and summarising the traces over runs."""

from typing import Mapping, Optional, Sequence

import jax
import numpy as np

from experiments.common import params as params_lib
from experiments.common.matrices import Matrix, by_size
from jaxrank import bandits
from jaxrank.metrics.statistics import mean_ci


def settings(params: Sequence[str], algorithms: Sequence[str],
             defaults: Optional[Mapping[str, Mapping]] = None) -> dict[str, tuple[dict, dict]]:
    """``{algo: (options, hparams)}`` of every selected bandit from an experiment's ``params``
    (``"algo.key=value"``) over its own ``defaults``, checked before any run (``experiments.common.params``)."""
    if not algorithms:
        raise ValueError(f"no algorithm selected; name at least one of {', '.join(bandits.ALGORITHMS)} "
                         "(e.g. --set algorithms=rcs,rucb).")
    out = params_lib.settings(params, bandits.ALGORITHMS, algorithms, defaults)
    for name, (options, hparams) in out.items():  # values init rejects (e.g. SCB's first_epoch) fail here too
        algo = bandits.ALGORITHMS.build(name, **options)
        jax.eval_shape(lambda: algo.init(jax.random.key(0), 4, **hparams))  # noqa: B023
    return out


def changed(name: str, hparams: Mapping[str, float]) -> dict[str, list]:
    """``{key: [value]}`` of the hyperparameters that differ from ``name``'s defaults: the sweep leaves
    the others as ``init``'s constants, as the published runs did (and a horizon at num_steps)."""
    defaults = bandits.ALGORITHMS.hparams(name)
    return {k: [v] for k, v in hparams.items() if v != defaults.get(k)}

def run_on_matrices(name: str, matrices: list[Matrix], *, seed: int, num_runs: int, num_steps: int,
                    hparams: dict, options: Optional[dict] = None, checkpoints=None, chunk_size: int = 4096,
                    checkpoint_dir=None) -> dict[str, bandits.Trace]:
    """Runs one algorithm on every matrix (one compiled program per arm count).

    The lanes are sharded over all devices; with ``checkpoint_dir`` (``registry.checkpoint_dir(run_dir)``)
    each simulation is checkpointed after every chunk and resumes from there when run again.

    ``hparams`` is ``{key: [H] values}`` (``changed`` of one setting, or a grid).

    Returns:
      ``{matrix name: Trace}`` with ``[H, R, C]`` arrays (``H`` hyperparameter settings).
    """
    traces = {}
    for size, group in by_size(matrices).items():
        trace = bandits.run_sweep(jax.random.key(seed), name, np.stack([m.pref for m in group]),
            num_runs=num_runs, num_steps=num_steps, options=options, hparams=hparams, checkpoints=checkpoints,
            chunk_size=chunk_size, label=f"{name} K={size} x{len(group)}", checkpoint_dir=checkpoint_dir)
        for i, m in enumerate(group):
            traces[m.name] = bandits.Trace(trace.checkpoints, trace.regret[i], trace.correct[i], trace.suboptimal[i])
    return traces


def summarize(trace: bandits.Trace, setting: int = 0) -> dict:
    """JSON-ready curves (mean and 95% CI over runs) and the values at the horizon."""
    regret_mean, regret_ci = mean_ci(trace.regret[setting])
    accuracy = trace.correct[setting].mean(axis=0)
    suboptimal = trace.suboptimal[setting].mean(axis=0)
    return {
        "regret_mean": regret_mean.round(4).tolist(),
        "regret_ci95": regret_ci.round(4).tolist(),
        "accuracy": accuracy.round(4).tolist(),
        "suboptimal": suboptimal.round(5).tolist(),
        "final": {"regret_mean": round(float(regret_mean[-1]), 3), "regret_ci95": round(float(regret_ci[-1]), 3),
                  "accuracy": round(float(accuracy[-1]), 4), "suboptimal": round(float(suboptimal[-1]), 5)},
    }
