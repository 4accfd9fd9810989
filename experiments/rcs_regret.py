"""RCS vs RUCB cumulative regret (Zoghi et al., WSDM 2014, Fig. 3): alpha = 0.501, K = 10,
90 runs of 50,000 steps on every real preference matrix present (``MSLR-Perfect`` is the
paper's perfect-click-model setting), else on the embedded arXiv 6-ranker matrix.

Per-algorithm settings: ``--set params=rcs.alpha=0.51,rucb.alpha=0.51`` (``experiments.common.params``);
RCS and RUCB default to the paper's alpha = 0.501, every other bandit to its module's ``HPARAMS``."""

import dataclasses


from experiments.common import duel_runs
from experiments.analysis import rcs_regret as analysis
from experiments.common.matrices import load_matrices
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data, envs

DEFAULTS = {"rcs": {"alpha": 0.501}, "rucb": {"alpha": 0.501}}  # the paper's alpha (WSDM 2014, §5)


@dataclasses.dataclass(frozen=True)
class Config:
    matrices: tuple[str, ...] = ("auto",)  # file names under JAXRANK_DATA/preference_matrices, paths, or auto
    num_arms: int = 10
    num_runs: int = 90
    num_steps: int = 50_000
    algorithms: tuple[str, ...] = ("rcs", "rucb")
    params: tuple[str, ...] = ()  # "algo.key=value" overrides of DEFAULTS and the modules' HPARAMS / OPTIONS
    seed: int = 0
    chunk_size: int = 4096  # most steps between two recordings; a checkpoint is written every 16 such segments


@register("rcs_regret", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """RCS vs RUCB cumulative regret on real preference matrices (paper Fig. 3)."""
    settings = duel_runs.settings(config.params, config.algorithms, DEFAULTS)
    matrices = load_matrices(config.matrices, config.num_arms)
    results, arrays = {}, {}
    for name in config.algorithms:
        options, hparams = settings[name]
        traces = duel_runs.run_on_matrices(name, matrices, seed=config.seed, num_runs=config.num_runs,
                                           num_steps=config.num_steps, options=options,
                                           hparams=duel_runs.changed(name, hparams), chunk_size=config.chunk_size, checkpoint_dir=checkpoint_dir(run_dir))
        for m in matrices:
            results.setdefault(m.name, {"source": m.source, "rankers": m.rankers,
                                        "condorcet_winner": m.rankers[int(envs.condorcet_winner(m.pref))],
                                        "algorithms": {}})
            results[m.name]["algorithms"][name] = duel_runs.summarize(traces[m.name])
            arrays[f"{name}__{m.name}__regret"] = traces[m.name].regret[0]
        checkpoints = traces[matrices[0].name].checkpoints
    for m in matrices:
        algos = results[m.name]["algorithms"]
        if "rcs" in algos and "rucb" in algos:
            results[m.name]["rcs_over_rucb"] = round(algos["rcs"]["final"]["regret_mean"] / algos["rucb"]["final"]["regret_mean"], 4)
        print(f"[rcs_regret] {m.name}: " + ", ".join(
            f"{a} {v['final']['regret_mean']:.1f} ± {v['final']['regret_ci95']:.1f}" for a, v in algos.items()), flush=True)
    data.write_npz(run_dir / "arrays.npz", checkpoints=checkpoints, **arrays)
    return {"checkpoints": checkpoints.tolist(), "num_runs": config.num_runs,
            "settings": {name: {**settings[name][0], **settings[name][1]} for name in config.algorithms},
            "matrices": results}
