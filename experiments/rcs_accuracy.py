"""RCS vs Condorcet SAVAGE, accuracy and regret against the horizon (Zoghi et al. 2014, Fig. 2).

SAVAGE is explore-then-exploit and needs its horizon, so it is rerun for each of the log-spaced
horizons; RCS runs once to the longest and its best-arm guess is read at every horizon.

Per-algorithm settings: ``--set params=rcs.alpha=0.51`` (``experiments.common.params``); RCS defaults to the
paper's alpha = 0.501. SAVAGE's horizon is each run's length."""

import dataclasses

import numpy as np

from experiments.common import duel_runs
from experiments.common import params as params_lib
from experiments.analysis import rcs_accuracy as analysis
from experiments.common.matrices import load_matrices
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data
from jaxrank.metrics.statistics import mean_ci

DEFAULTS = {"rcs": {"alpha": 0.501}}  # the paper's alpha (WSDM 2014, §5)


@dataclasses.dataclass(frozen=True)
class Config:
    matrices: tuple[str, ...] = ("auto",)
    num_arms: int = 10
    num_runs: int = 90
    min_horizon: int = 100
    max_horizon: int = 100_000
    num_horizons: int = 10
    params: tuple[str, ...] = ()  # "algo.key=value" for rcs and savage (overrides DEFAULTS and the modules' HPARAMS)
    seed: int = 0


@register("rcs_accuracy", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """RCS vs Condorcet SAVAGE accuracy and regret at log-spaced horizons (paper Fig. 2)."""
    if not 1 <= config.min_horizon <= config.max_horizon or config.num_horizons < 1:
        raise ValueError(f"need 1 <= min_horizon <= max_horizon and num_horizons >= 1; got {config}.")
    settings = duel_runs.settings(config.params, ("rcs", "savage"), DEFAULTS)
    if "horizon" in params_lib.parse(config.params).get("savage", {}):
        raise ValueError("rcs_accuracy runs SAVAGE with its horizon set to each run's length; drop savage.horizon "
                         "from params (min_horizon, max_horizon and num_horizons choose the horizons).")
    horizons = np.unique(np.round(np.geomspace(config.min_horizon, config.max_horizon, config.num_horizons)).astype(int))
    matrices = load_matrices(config.matrices, config.num_arms)
    common = dict(seed=config.seed, num_runs=config.num_runs, checkpoint_dir=checkpoint_dir(run_dir))
    (rcs_options, rcs_hparams), (savage_options, savage_hparams) = settings["rcs"], settings["savage"]
    rcs = duel_runs.run_on_matrices("rcs", matrices, num_steps=int(horizons[-1]), options=rcs_options,
                                    hparams=duel_runs.changed("rcs", rcs_hparams), checkpoints=horizons, **common)
    savage = [duel_runs.run_on_matrices("savage", matrices, num_steps=int(h), options=savage_options,
                                        hparams={**duel_runs.changed("savage", savage_hparams), "horizon": [float(h)]},
                                        checkpoints=[int(h)], **common) for h in horizons]
    results, arrays = {}, {}
    for m in matrices:
        savage_regret = np.concatenate([s[m.name].regret[0] for s in savage], axis=1)  # [R, horizons]
        savage_correct = np.concatenate([s[m.name].correct[0] for s in savage], axis=1)
        rcs_summary = duel_runs.summarize(rcs[m.name])
        savage_mean, savage_ci = mean_ci(savage_regret)
        results[m.name] = {
            "source": m.source, "rankers": m.rankers,
            "rcs": {"accuracy": rcs_summary["accuracy"], "regret_mean": rcs_summary["regret_mean"],
                    "regret_ci95": rcs_summary["regret_ci95"]},
            "savage": {"accuracy": savage_correct.mean(0).round(4).tolist(), "regret_mean": savage_mean.round(3).tolist(),
                       "regret_ci95": savage_ci.round(3).tolist()},
        }
        arrays[f"rcs__{m.name}__correct"] = rcs[m.name].correct[0]
        arrays[f"savage__{m.name}__correct"] = savage_correct
        print(f"[rcs_accuracy] {m.name}: accuracy RCS {results[m.name]['rcs']['accuracy']} vs SAVAGE "
              f"{results[m.name]['savage']['accuracy']}", flush=True)
    data.write_npz(run_dir / "arrays.npz", horizons=horizons, **arrays)
    return {"horizons": horizons.tolist(), "num_runs": config.num_runs, "matrices": results}
