"""RCS vs RUCB as the number of rankers grows, K = 20, 30, 40 (Zoghi et al. 2014, Fig. 5).

The paper runs 90 runs of 1M / 1.5M / 2M steps; ``paper_horizons=true`` uses those. The CPU
default runs 200,000 steps for every K and says so; regret and the share of suboptimal
comparisons are reported at every checkpoint. Per-algorithm settings: ``--set params=rcs.alpha=0.51``
(``experiments.common.params``); RCS and RUCB default to the paper's alpha = 0.501."""

import dataclasses

import numpy as np

from experiments.common import duel_runs
from experiments.analysis import rcs_scaling as analysis
from experiments.common.matrices import load_matrices
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data
from jaxrank.metrics.statistics import mean_ci

PAPER_HORIZONS = {20: 1_000_000, 30: 1_500_000, 40: 2_000_000}
DEFAULTS = {"rcs": {"alpha": 0.501}, "rucb": {"alpha": 0.501}}  # the paper's alpha (WSDM 2014, §5)


@dataclasses.dataclass(frozen=True)
class Config:
    matrices: tuple[str, ...] = ("paper",)
    arm_counts: tuple[int, ...] = (20, 30, 40)
    num_runs: int = 90
    num_steps: int = 200_000
    paper_horizons: bool = False
    algorithms: tuple[str, ...] = ("rcs", "rucb")
    params: tuple[str, ...] = ()  # "algo.key=value" overrides of DEFAULTS and the modules' HPARAMS / OPTIONS
    seed: int = 0
    chunk_size: int = 4096  # most steps between two recordings; a checkpoint is written every 16 such segments


def window_shares(checkpoints, shares) -> np.ndarray:
    """``[R, C]`` share of suboptimal duels between consecutive checkpoints (from the start for the
    first) from the cumulative shares ``[R, C]``: the paper's "in the vicinity of" a time is a local
    rate, which the cumulative share (dominated by the exploration so far) hides."""
    steps = np.asarray(checkpoints, np.float64)
    counts = np.asarray(shares, np.float64) * steps  # suboptimal duels so far
    return np.diff(counts, axis=-1, prepend=0.0) / np.diff(steps, prepend=0.0)


@register("rcs_scaling", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """RCS vs RUCB for K = 20, 30, 40 rankers: regret and suboptimal comparisons (paper Fig. 5)."""
    settings = duel_runs.settings(config.params, config.algorithms, DEFAULTS)
    results, arrays = {}, {}
    for k in config.arm_counts:
        horizon = PAPER_HORIZONS.get(k, config.num_steps) if config.paper_horizons else config.num_steps
        if not config.paper_horizons:
            paper = f"{PAPER_HORIZONS[k]:,}" if k in PAPER_HORIZONS else "no run at this K"
            print(f"[rcs_scaling] K = {k}: {horizon:,} steps (the paper uses {paper}; "
                  "--set paper_horizons=true for those)", flush=True)
        matrices = load_matrices(config.matrices, k)
        for name in config.algorithms:
            options, hparams = settings[name]
            traces = duel_runs.run_on_matrices(name, matrices, seed=config.seed, num_runs=config.num_runs,
                                               num_steps=horizon, options=options,
                                               hparams=duel_runs.changed(name, hparams),
                                               chunk_size=config.chunk_size, checkpoint_dir=checkpoint_dir(run_dir))
            for m in matrices:
                key = f"{m.name} K={len(m.rankers)}"
                entry = results.setdefault(key, {"source": m.source, "rankers": m.rankers, "horizon": horizon,
                                                 "checkpoints": traces[m.name].checkpoints.tolist(), "algorithms": {}})
                entry["algorithms"][name] = summary = duel_runs.summarize(traces[m.name])
                window, half = mean_ci(window_shares(traces[m.name].checkpoints, traces[m.name].suboptimal[0]))
                summary["window_suboptimal"] = window.round(5).tolist()
                summary["window_suboptimal_ci95"] = half.round(5).tolist()
                arrays[f"{name}__{key}__regret"] = traces[m.name].regret[0]
                arrays[f"{name}__{key}__suboptimal"] = traces[m.name].suboptimal[0]
        for key in [key for key in results if key.endswith(f"K={k}")]:
            print(f"[rcs_scaling] {key}: " + ", ".join(
                f"{a} regret {v['final']['regret_mean']:.1f}, suboptimal {100 * v['final']['suboptimal']:.1f}%"
                for a, v in results[key]["algorithms"].items()), flush=True)
    data.write_npz(run_dir / "arrays.npz", **arrays)
    return {"num_runs": config.num_runs, "paper_horizons": config.paper_horizons, "panels": results}
