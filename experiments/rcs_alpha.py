"""RCS and RUCB with a too-small exploration constant, alpha = 0.1 (Zoghi et al. 2014, Fig. 4):
30 runs on MSLR-Perfect, K = 10, 400,000 steps; alpha = 0.501 alongside for comparison.

``alphas`` is the grid every algorithm runs (one program per algorithm); its other settings come from
``--set params=algo.key=value`` (``experiments.common.params``)."""

import dataclasses

import numpy as np

from experiments.common import duel_runs
from experiments.analysis import rcs_alpha as analysis
from experiments.common.matrices import load_matrices
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data


@dataclasses.dataclass(frozen=True)
class Config:
    matrices: tuple[str, ...] = ("paper",)
    num_arms: int = 10
    num_runs: int = 30
    num_steps: int = 400_000
    alphas: tuple[float, ...] = (0.1, 0.501)
    algorithms: tuple[str, ...] = ("rcs", "rucb")
    params: tuple[str, ...] = ()  # "algo.key=value" overrides of the modules' HPARAMS / OPTIONS (alpha: use alphas)
    seed: int = 0


@register("rcs_alpha", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """RCS vs RUCB at alpha = 0.1 (and 0.501), cumulative regret (paper Fig. 4)."""
    settings = duel_runs.settings(config.params, config.algorithms)
    for name, (_, hparams) in settings.items():
        if "alpha" not in hparams:
            raise ValueError(f"rcs_alpha runs algorithms with an exploration constant alpha; {name} has none "
                             "(hyperparameters: " + ", ".join(hparams) + ").")
    if any(item.split("=", 1)[0].strip().endswith(".alpha") for item in config.params):
        raise ValueError("rcs_alpha sweeps alpha over the alphas field; set --set alphas=0.1,0.501, not params.")
    matrices = load_matrices(config.matrices, config.num_arms)
    results, arrays = {m.name: {"source": m.source, "rankers": m.rankers, "curves": {}} for m in matrices}, {}
    for name in config.algorithms:
        options, hparams = settings[name]
        grid = {k: v * len(config.alphas) for k, v in duel_runs.changed(name, hparams).items()}
        traces = duel_runs.run_on_matrices(name, matrices, seed=config.seed, num_runs=config.num_runs,
                                           num_steps=config.num_steps, options=options,
                                           hparams={**grid, "alpha": list(config.alphas)}, checkpoint_dir=checkpoint_dir(run_dir))
        for m in matrices:
            for h, alpha in enumerate(config.alphas):
                label = f"{name.upper()} alpha={alpha}"
                results[m.name]["curves"][label] = duel_runs.summarize(traces[m.name], setting=h)
                arrays[f"{name}__{m.name}__alpha{alpha}__regret"] = traces[m.name].regret[h]
                # A run that never locks onto the winner grows linearly: its second half adds about as
                # much regret as its first; a run that has locked on adds little (log growth).
                regret = traces[m.name].regret[h]
                half = np.searchsorted(traces[m.name].checkpoints, config.num_steps // 2)
                linear = (regret[:, -1] - regret[:, half]) > 0.5 * regret[:, half]
                results[m.name]["curves"][label]["final"]["linear_runs"] = int(linear.sum())
                results[m.name]["curves"][label]["final"]["regret_median"] = round(float(np.median(regret[:, -1])), 3)
        checkpoints = traces[matrices[0].name].checkpoints
    for m in matrices:
        print(f"[rcs_alpha] {m.name}: " + ", ".join(
            f"{k} {v['final']['regret_mean']:.1f}" for k, v in results[m.name]["curves"].items()), flush=True)
    data.write_npz(run_dir / "arrays.npz", checkpoints=checkpoints, **arrays)
    return {"checkpoints": checkpoints.tolist(), "num_runs": config.num_runs, "matrices": results}
