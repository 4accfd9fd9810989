"""Large-scale online ranker evaluation (Li, Markov, de Rijke, Zoghi, MergeDTS, TOIS 2020, the
large-scale experiments): MergeDTS vs MergeRUCB vs D-TS (and RCS) on the 136-ranker MSLR-Perfect
and the 135-ranker MSLR-Informational matrices, cumulative regret on log-log axes; and a Copeland
setting: seeded MSLR subsets without a Condorcet winner, CCB / SCB / D-TS / MergeDTS (RUCB and
RCS for contrast) by Copeland regret (Zoghi et al., NIPS 2015).

Copeland subsets (``copeland_subsets``): "cycle" (default) builds each subset around the matrix's
widest Condorcet cycle (three rankers a ≻ b ≻ c ≻ a, largest smallest margin: 0.016 on
MSLR-Informational, 0.0075 on MSLR-Perfect), which become its tied Copeland winners, plus seeded
rankers that all three beat by ``copeland_filler_margin`` and that are ``copeland_pair_gap`` from
1/2 against each other. Every gap is then resolvable within 10^6 duels, the regime in which the
paper's regret bounds speak. "uniform" draws subsets uniformly among those without a Condorcet
winner; on the MSLR matrices these have 2–3 Copeland winners within about 0.001 of 1/2 of each
other, so RUCB's candidate set never empties at feasible horizons, its duels among the winners
cost no Copeland regret, and no algorithm but RCS is visibly linear there.

The paper runs 10^8 steps; the defaults here are what fits a small CPU (``results.json`` records
the horizon and runs used next to the paper's). Algorithms whose step costs O(K²) (``slow``: D-TS)
run a shorter horizon. Every algorithm uses its module's default hyperparameters (MergeDTS and
MergeRUCB: α = 1.01, M = 4, failure probability 0.01, the authors' code defaults; D-TS and RCS
α = 0.51) unless ``--set params=algo.key=value`` (``experiments.common.params``) says otherwise; every
setting, matrix size and Copeland subset is checked before the first run.

"Winner dropped": MergeDTS and MergeRUCB drop arms for good. They run through ``survival_probe``,
whose report is the Condorcet winner while it survives (and the algorithm's own report, never the
winner, once it is dropped), so their ``accuracy`` curve is the share of runs still holding the
winner at each checkpoint and the runs that dropped it are counted exactly.
"""

import dataclasses
import time
import types

import jax
import numpy as np

from experiments.common import duel_runs
from experiments.analysis import large_scale as analysis
from experiments.common.matrices import MATRIX_DIR, load_matrices
from experiments.common.registry import checkpoint_dir, register
from jaxrank import bandits, data, envs
from jaxrank.types import Bandit
from jaxrank.utils.checks import check_int, check_number

PAPER_HORIZON = 100_000_000
ELIMINATING = ("merge_dts", "merge_rucb")  # report among surviving arms


@dataclasses.dataclass(frozen=True)
class Config:
    matrices: tuple[str, ...] = ("MSLR-Perfect.txt", "MSLR-Informational-CDC.txt")  # under preference_matrices
    num_arms: int = 136  # larger matrices are cut to the RCS paper's first K rankers
    num_runs: int = 10
    num_steps: int = 1_000_000
    algorithms: tuple[str, ...] = ("merge_dts", "merge_rucb", "rcs", "dts")
    slow: tuple[str, ...] = ("dts",)  # O(K^2) steps: run to slow_num_steps only
    slow_num_steps: int = 20_000
    copeland_algorithms: tuple[str, ...] = ("ccb", "scb", "dts", "merge_dts", "rucb", "rcs")
    copeland_subsets: str = "cycle"  # "cycle" (resolvable gaps) or "uniform"; see the module docstring
    copeland_num_arms: int = 8
    copeland_num_subsets: int = 2  # per matrix
    copeland_filler_margin: float = 0.03  # "cycle": each winner beats every other arm by at least this
    copeland_pair_gap: float = 0.02  # "cycle": the other arms are at least this far from 1/2 pairwise
    copeland_num_runs: int = 10
    copeland_num_steps: int = 1_000_000
    params: tuple[str, ...] = ()  # "algo.key=value" overrides of the modules' HPARAMS / OPTIONS
    seed: int = 0
    chunk_size: int = 65_536


def copeland_subsets(pref: np.ndarray, num_arms: int, count: int, seed: int, *, max_tries: int = 100_000) -> list:
    """``count`` distinct sorted subsets of ``num_arms`` arms of ``pref`` without a Condorcet winner,
    from a seeded search over uniformly drawn subsets (0-based arm ids)."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(max_tries):
        arms = np.sort(rng.choice(pref.shape[0], num_arms, replace=False))
        if envs.condorcet_winner(pref[np.ix_(arms, arms)]) is None and arms.tolist() not in found:
            found.append(arms.tolist())
            if len(found) == count:
                return found
    raise ValueError(f"found only {len(found)} of {count} subsets of {num_arms} arms without a Condorcet winner "
                     f"in {max_tries} draws; lower copeland_num_subsets or change copeland_num_arms.")


def widest_cycle(pref: np.ndarray) -> tuple[list, float]:
    """The Condorcet cycle ``a ≻ b ≻ c ≻ a`` of ``pref [K, K]`` whose smallest margin ``p - 1/2`` is
    largest: ``([a, b, c], margin)`` (0-based; margin <= 0 when ``pref`` has no cycle of three)."""
    gap = np.asarray(pref, np.float64) - 0.5
    # smallest[a, b, c] = min(gap[a, b], gap[b, c], gap[c, a])
    smallest = np.minimum(np.minimum(gap[:, :, None], gap[None, :, :]), gap.T[:, None, :])
    a, b, c = np.unravel_index(int(np.argmax(smallest)), smallest.shape)
    return [int(a), int(b), int(c)], float(smallest[a, b, c])


def cycle_subsets(pref: np.ndarray, num_arms: int, count: int, seed: int, *, filler_margin: float,
                  pair_gap: float, max_tries: int = 1_000) -> list:
    """``count`` distinct sorted subsets of ``num_arms`` arms of ``pref`` (0-based) without a Condorcet
    winner and with resolvable gaps: the three arms of ``widest_cycle(pref)``, which become the
    subset's tied Copeland winners, and ``num_arms - 3`` arms drawn (seeded, greedily in a random
    order) among those all three beat by ``>= filler_margin``, each ``>= pair_gap`` from 1/2
    against the others drawn."""
    cycle, margin = widest_cycle(pref)
    if margin <= 0 or num_arms < 3:
        raise ValueError(f"cycle subsets need a Condorcet cycle of three arms and num_arms >= 3 (got num_arms = "
                         f"{num_arms}, widest cycle margin {margin:.4f}); use copeland_subsets=uniform.")
    gap = np.abs(np.asarray(pref, np.float64) - 0.5)
    beaten = np.flatnonzero(np.min(pref[cycle], axis=0) - 0.5 >= filler_margin)
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(max_tries):
        fillers = []
        for j in rng.permutation(beaten):
            if len(fillers) == num_arms - 3:
                break
            if all(gap[j, f] >= pair_gap for f in fillers):
                fillers.append(int(j))
        arms = sorted(cycle + fillers)
        if len(arms) == num_arms and arms not in found:
            found.append(arms)
            if len(found) == count:
                return found
    raise ValueError(f"found only {len(found)} of {count} cycle subsets of {num_arms} arms ({beaten.size} arms are "
                     f"beaten by the cycle {cycle} by >= {filler_margin}); lower copeland_num_arms, "
                     f"copeland_filler_margin or copeland_pair_gap.")


def survival_probe(name: str, winner: int):
    """An algorithm module: bandit ``name`` (with an ``active [K]`` bool state leaf) whose ``best_arm``
    reports ``winner`` while it is active and its own report (an active arm, so never ``winner``) once
    it is not. Same options and hyperparameters as ``name``."""
    module = bandits.ALGORITHMS[name]
    probe = types.ModuleType(f"{name}_survival_{winner}")
    probe.HPARAMS, probe.OPTIONS = module.HPARAMS, module.OPTIONS

    def make(**options) -> Bandit:
        algo = module.make(**options)

        def best_arm(key, state):
            return jax.numpy.where(state.active[winner], winner, algo.best_arm(key, state))

        return Bandit(algo.init, algo.step, best_arm)

    probe.make = make
    return probe


def _check(config: Config) -> dict:
    """Every setting checked before any work: ``{algo: (options, hparams)}``."""
    if not config.algorithms and not config.copeland_algorithms:
        raise ValueError("algorithms and copeland_algorithms are both empty; name at least one bandit.")
    names = list(dict.fromkeys((*config.algorithms, *config.copeland_algorithms)))
    settings = duel_runs.settings(config.params, names)
    for field in ("num_arms", "num_runs", "num_steps", "slow_num_steps", "copeland_num_runs",
                  "copeland_num_steps", "copeland_num_subsets"):
        check_int(field, getattr(config, field), minimum=1)
    check_int("copeland_num_arms", config.copeland_num_arms, minimum=3)
    if config.copeland_subsets not in ("cycle", "uniform"):
        raise ValueError(f"copeland_subsets must be 'cycle' or 'uniform'; got {config.copeland_subsets!r}.")
    check_number("copeland_filler_margin", config.copeland_filler_margin, low=0, high=0.5)
    check_number("copeland_pair_gap", config.copeland_pair_gap, low=0, high=0.5, low_inclusive=True)
    return settings


def _copeland_subsets(config: Config, matrices) -> dict:
    """``{matrix name: (full matrix, subsets)}`` of the Copeland setting (``ValueError`` before any run)."""
    out = {}
    for m in matrices if config.copeland_algorithms else []:
        full = envs.check_preference_matrix(data.load_preference_matrix(m.source), name=m.name)
        if config.copeland_num_arms > full.shape[0]:
            raise ValueError(f"copeland_num_arms = {config.copeland_num_arms} exceeds the {full.shape[0]} rankers "
                             f"of {m.name}; pick at most {full.shape[0]}.")
        if config.copeland_subsets == "cycle":
            subsets = cycle_subsets(full, config.copeland_num_arms, config.copeland_num_subsets, config.seed,
                                    filler_margin=config.copeland_filler_margin, pair_gap=config.copeland_pair_gap)
        else:
            subsets = copeland_subsets(full, config.copeland_num_arms, config.copeland_num_subsets, config.seed)
        out[m.name] = full, subsets
    return out


def _run_one(name, prefs, settings, *, seed, num_runs, num_steps, regret, chunk_size, run_dir, algo=None):
    """One algorithm on ``prefs [M, K, K]`` (one compiled program): ``(Trace, wall seconds)``."""
    options, hparams = settings[name]
    start = time.perf_counter()
    trace = bandits.run_sweep(algo or name, jax.random.key(seed), prefs, num_runs=num_runs, num_steps=num_steps,
                          options=options, hparams=duel_runs.changed(name, hparams), chunk_size=chunk_size,
                          regret=regret, label=f"{name} K={prefs.shape[-1]} x{prefs.shape[0]}",
                          checkpoint_dir=checkpoint_dir(run_dir))
    return trace, time.perf_counter() - start


def _summary(trace, m: int, seconds: float, steps: int, runs: int) -> dict:
    one = bandits.Trace(trace.checkpoints, trace.regret[m], trace.correct[m], trace.suboptimal[m])
    out = duel_runs.summarize(one)
    out["checkpoints"] = trace.checkpoints.tolist()
    out["wall_s"] = round(seconds, 2)  # of the whole simulation (all matrices of the call)
    out["num_steps"], out["num_runs"] = steps, runs
    return out


@register("large_scale", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """MergeDTS vs MergeRUCB vs D-TS (+ RCS) at K = 136, and Copeland bandits on subsets without a Condorcet winner."""
    settings = _check(config)
    matrices = load_matrices(config.matrices, config.num_arms)
    copeland = _copeland_subsets(config, matrices)
    prefs = np.stack([m.pref for m in matrices]) if len({m.pref.shape for m in matrices}) == 1 else None
    results = {"paper_horizon": PAPER_HORIZON, "num_runs": config.num_runs, "num_steps": config.num_steps,
               "slow": list(config.slow), "slow_num_steps": config.slow_num_steps, "matrices": {}, "copeland": {}}
    arrays = {}
    for m in matrices:
        results["matrices"][m.name] = {"source": m.source, "num_arms": m.pref.shape[0],
                                       "condorcet_winner": m.rankers[int(envs.condorcet_winner(m.pref))],
                                       "algorithms": {}}
    for name in config.algorithms:
        steps = config.slow_num_steps if name in config.slow else config.num_steps
        # Eliminating algorithms run one matrix at a time, probed for their matrix's winner.
        together = prefs is not None and name not in ELIMINATING
        groups = [(prefs, matrices)] if together else [(m.pref[None], [m]) for m in matrices]
        for group_prefs, group in groups:
            probe = survival_probe(name, int(envs.condorcet_winner(group[0].pref))) if name in ELIMINATING else None
            trace, seconds = _run_one(name, group_prefs, settings, seed=config.seed, num_runs=config.num_runs, num_steps=steps,
                                      regret="condorcet", chunk_size=config.chunk_size, run_dir=run_dir, algo=probe)
            for i, m in enumerate(group):
                summary = _summary(trace, i, seconds, steps, config.num_runs)
                if name in ELIMINATING:
                    summary["winner_dropped_runs"] = int((~trace.correct[i, 0, :, -1]).sum())
                    summary["final"]["accuracy"] = None  # the probe's curve is survival, not best-arm accuracy
                    summary["winner_kept"] = summary.pop("accuracy")
                results["matrices"][m.name]["algorithms"][name] = summary
                arrays[f"{name}__{m.name}__regret"] = trace.regret[i, 0]
                print(f"[large_scale] {m.name} {name}: regret at T = {steps:,} "
                      f"{summary['final']['regret_mean']:.1f} ± {summary['final']['regret_ci95']:.1f} "
                      f"({seconds:.1f} s)", flush=True)

    # Copeland setting: subsets of each full matrix without a Condorcet winner.
    for m in matrices if config.copeland_algorithms else []:
        full, subsets = copeland[m.name]
        sub_prefs = np.stack([full[np.ix_(s, s)] for s in subsets])
        for s, arms in enumerate(subsets):
            key = f"{m.name} subset {s}"
            winners = bandits.scoring(sub_prefs[s], "copeland").winners
            sub_gap = np.abs(sub_prefs[s] - 0.5)[~np.eye(len(arms), dtype=bool)]
            results["copeland"][key] = {"rankers": [a + 1 for a in arms], "copeland_winners":
                                        [arms[i] + 1 for i in np.flatnonzero(np.asarray(winners))],
                                        "construction": config.copeland_subsets,
                                        "smallest_gap": round(float(sub_gap.min()), 5), "algorithms": {}}
        for name in config.copeland_algorithms:
            trace, seconds = _run_one(name, sub_prefs, settings, seed=config.seed, num_runs=config.copeland_num_runs,
                                      num_steps=config.copeland_num_steps, regret="copeland",
                                      chunk_size=config.chunk_size, run_dir=run_dir)
            for s in range(len(subsets)):
                key = f"{m.name} subset {s}"
                summary = _summary(trace, s, seconds, config.copeland_num_steps, config.copeland_num_runs)
                summary["sublinearity"] = sublinearity(trace.checkpoints, trace.regret[s, 0])
                results["copeland"][key]["algorithms"][name] = summary
                arrays[f"copeland__{name}__{m.name}__{s}__regret"] = trace.regret[s, 0]
    data.write_npz(run_dir / "arrays.npz", **arrays)
    results["matrix_dir"] = MATRIX_DIR
    results["timings"] = {"wall_s": {f"{group}: {key}: {name}": s.pop("wall_s") for group in ("matrices", "copeland")
                                     for key, entry in results[group].items() for name, s in entry["algorithms"].items()}}
    return results


def sublinearity(checkpoints: np.ndarray, regret: np.ndarray) -> float:
    """Mean regret over the second half of the horizon divided by that over the first half, per step:
    about 1 for linear regret, near 0 once it flattens (``regret [R, C]`` at ``checkpoints [C]``)."""
    mean = regret.mean(axis=0)
    horizon = checkpoints[-1]
    half = int(np.argmin(np.abs(checkpoints - horizon / 2)))
    first, second = mean[half] / checkpoints[half], (mean[-1] - mean[half]) / (horizon - checkpoints[half])
    return round(float(second / first), 4) if first > 0 else 0.0
