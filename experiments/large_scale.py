"""Large-scale online ranker evaluation (Li, Markov, de Rijke, Zoghi, MergeDTS, TOIS 2020, the
large-scale experiments): MergeDTS against the baselines of its authors' code
(github.com/chang-li/MergeDTS, ``demo.py``) on the 136-ranker MSLR-Perfect and the 135-ranker
MSLR-Informational matrices, cumulative regret on log-log axes; and a Copeland setting: seeded
MSLR subsets without a Condorcet winner, CCB / SCB / D-TS / MergeDTS (RUCB and RCS for contrast)
by Copeland regret (Zoghi et al., NIPS 2015).

Rows (``algorithms``): a row is a registered bandit at its module's defaults (``merge_dts``) or a
preset ``algo@variant`` (``VARIANTS``): ``@tuned`` is the setting the authors' code ships as the
algorithm's best (``individual_run.py``: "MergeDTSBest" α = 0.8⁶, C = 4·10⁵, M = 16;
"MergeRUCBBEST" α = 0.8⁶, C = 4·10⁵, M = 8; "DTSBEST" α = 0.8⁷); ``sparring`` is Sparring with UCB
inside (α = 0.51, as ``demo.py``), ``sparring@ts`` and ``sparring@exp3`` with Thompson sampling and
Exp3 (γ by Auer et al. 2002, Corollary 3.2, for the run's K and T, ``sparring.exp3_gamma``; the
authors' ``demo.py`` passes a fixed 0.51). ``rex3@mergedts_code``, ``sparring@mergedts_code`` and
``sparring@exp3_mergedts_code`` are the authors' own versions (``convention="mergedts"``: REX3's
full step and anytime γ_t, Sparring-UCB's phantom play, Exp3's anytime γ_t), rows on request
only. The default rows are ``ROWS``: MergeDTS, MergeRUCB and D-TS in their
default and tuned settings, RCS, RMED1, Self-Sparring, REX3 and the three Sparrings; every other
setting is its module's default, which each module's docstring relates to the authors'. Choose rows
with ``--set algorithms=merge_dts@tuned,merge_rucb@tuned`` and change a row's setting with
``--set params=merge_dts@tuned.alpha=0.5`` (a row's own name; ``experiments.common.params``).

Horizons: the paper runs 10^8 steps; the default here is 10^6 steps × 10 runs (``results.json``
records the horizon and runs used next to the paper's): with every row, 5 runs took 93 minutes on
the shared 2-core CPU and 10 take about twice that. Rows of the
algorithms in ``slow`` (D-TS and RMED1, whose steps cost O(K²): a K x K bound matrix, all
divergences) run ``slow_num_steps`` (2·10⁴) instead, as the table says. The long stage reruns
the rows of ``long_algorithms`` to ``long_num_steps`` with ``long_num_runs`` runs (default: the
same runs): ``best`` stands for the three rows with the least summed regret at ``num_steps`` over
the matrices (slow rows left out). It is off by default (``long_num_steps=None``).

The paper-horizon setting: ``--set algorithms=merge_dts@tuned,self_sparring,sparring@ts,merge_rucb@tuned
--set num_steps=10000000 --set num_runs=5 --set copeland_algorithms= --set slow=`` (10^7 steps, the
four rows the large-scale claim turns on), resumable with ``--resume=latest``; a row per process
(``--set algorithms=self_sparring``, ...) and a matrix per process (``--set matrices=...``) run side by
side. On the shared 2-core CPU with other jobs running (load average 13-20), 10^7 steps of 5 runs on
one matrix took over an hour for Self-Sparring and Sparring-TS (1.8-3.4k steps/s for the 5 runs;
both draw 2K exact Beta samples a step), 22-38 minutes for MergeDTS tuned and 7-8 for MergeRUCB tuned.

Arm relabelling (``permute_arms``, default on): as the authors' driver, every run relabels the
arms by a random permutation (``run_sweep(..., relabel=True)``, ``jaxrank.bandits.relabel``): run ``r``'s order comes from its
own key (``fold_in(seed key, r)``), so it differs between runs and is the same for every row of
one seed; regret is scored in the matrix's own labels.

Copeland subsets (``copeland_subsets``): "cycle" (default) builds each subset around the matrix's
widest Condorcet cycle (three rankers a ≻ b ≻ c ≻ a, largest smallest margin: 0.016 on
MSLR-Informational, 0.0075 on MSLR-Perfect), which become its tied Copeland winners, plus seeded
rankers that all three beat by ``copeland_filler_margin`` and that are ``copeland_pair_gap`` from
1/2 against each other. Every gap is then resolvable within 10^6 duels, the regime in which the
paper's regret bounds speak. "uniform" draws subsets uniformly among those without a Condorcet
winner; on the MSLR matrices these have 2–3 Copeland winners within about 0.001 of 1/2 of each
other, so RUCB's candidate set never empties at feasible horizons, its duels among the winners
cost no Copeland regret, and no algorithm but RCS is visibly linear there. Each run's regret per
step in the second half of the horizon against the first (``late_early``) decides whether a curve
bends down (``experiments.analysis.large_scale.verdicts``).

Every setting, matrix size and Copeland subset is checked before the first run.

"Winner dropped": MergeDTS and MergeRUCB drop arms for good. They run through ``jaxrank.bandits.survival_probe``,
whose report is the Condorcet winner while it survives (and the algorithm's own report, never the
winner, once it is dropped), so their ``accuracy`` curve is the share of runs still holding the
winner at each checkpoint and the runs that dropped it are counted exactly.
"""

import dataclasses
import time
from typing import NamedTuple, Optional

import jax
import numpy as np

from experiments.common import duel_runs
from experiments.common import params as params_lib
from experiments.analysis import large_scale as analysis
from experiments.common.matrices import MATRIX_DIR, by_size, load_matrices
from experiments.common.registry import checkpoint_dir, register
from jaxrank import bandits, data, envs
from jaxrank.bandits import merge_dts, merge_rucb, sparring
from jaxrank.metrics.statistics import mean_ci
from jaxrank.utils.checks import check_int, check_number

PAPER_HORIZON = 100_000_000
ELIMINATING = ("merge_dts", "merge_rucb")  # algorithms that drop arms for good: run through survival_probe
DTS_TUNED = {"alpha": 0.8**7}  # "DTSBEST" of the MergeDTS authors' individual_run.py
# Presets of the rows beyond a module's defaults: row -> (algorithm, settings).
VARIANTS = {
    "merge_dts@tuned": ("merge_dts", {**merge_dts.TUNED_OPTIONS, **merge_dts.TUNED}),
    "merge_rucb@tuned": ("merge_rucb", dict(merge_rucb.TUNED)),
    "dts@tuned": ("dts", dict(DTS_TUNED)),
    "sparring@ts": ("sparring", {"inner": "ts"}),
    "sparring@exp3": ("sparring", {"inner": "exp3"}),
    # The MergeDTS authors' own versions (convention="mergedts"; not in ROWS): REX3's full step and
    # anytime γ_t, Sparring-UCB's phantom play, Exp3's anytime γ_t.
    "rex3@mergedts_code": ("rex3", {"convention": "mergedts"}),
    "sparring@mergedts_code": ("sparring", {"convention": "mergedts"}),
    "sparring@exp3_mergedts_code": ("sparring", {"inner": "exp3", "convention": "mergedts"}),
}
ROWS = ("merge_dts", "merge_dts@tuned", "merge_rucb", "merge_rucb@tuned", "dts", "dts@tuned", "rcs", "rmed",
        "self_sparring", "rex3", "sparring", "sparring@ts", "sparring@exp3")
BEST = "best"  # in long_algorithms: the LONG_BEST rows with the least regret at num_steps
LONG_BEST = 3


@dataclasses.dataclass(frozen=True)
class Config:
    matrices: tuple[str, ...] = ("MSLR-Perfect.txt", "MSLR-Informational-CDC.txt")  # under preference_matrices
    num_arms: int = 136  # larger matrices are cut to the RCS paper's first K rankers
    num_runs: int = 10
    num_steps: int = 1_000_000
    algorithms: tuple[str, ...] = ROWS  # rows: "algo" or "algo@variant" (VARIANTS)
    slow: tuple[str, ...] = ("dts", "rmed")  # O(K^2) steps: every row of these runs to slow_num_steps only
    slow_num_steps: int = 20_000
    permute_arms: bool = True  # relabel the arms by a random permutation in every run (run_sweep's relabel)
    long_algorithms: tuple[str, ...] = (BEST,)  # rows of the long stage; "best": the 3 least-regret rows
    long_num_steps: Optional[int] = None  # horizon of the long stage; None: no long stage
    long_num_runs: Optional[int] = None  # runs of the long stage; None: num_runs
    copeland_algorithms: tuple[str, ...] = ("ccb", "scb", "dts", "merge_dts", "rucb", "rcs")
    copeland_subsets: str = "cycle"  # "cycle" (resolvable gaps) or "uniform"; see the module docstring
    copeland_num_arms: int = 8
    copeland_num_subsets: int = 2  # per matrix
    copeland_filler_margin: float = 0.03  # "cycle": each winner beats every other arm by at least this
    copeland_pair_gap: float = 0.02  # "cycle": the other arms are at least this far from 1/2 pairwise
    copeland_num_runs: int = 10
    copeland_num_steps: int = 1_000_000
    params: tuple[str, ...] = ()  # "row.key=value" overrides (a row's or a Copeland algorithm's name)
    seed: int = 0
    chunk_size: int = 65_536


class Row(NamedTuple):
    """One row of the comparison: a bandit and its settings."""

    algorithm: str  # registered name
    options: dict  # make()'s static options
    hparams: dict  # init()'s hyperparameters, all of them
    auto_gamma: bool  # Exp3's γ follows the run's K and T (sparring.exp3_gamma)


def row_algorithm(row: str) -> tuple[str, dict]:
    """``(registered algorithm, preset settings)`` of a row name (``ValueError`` listing the rows)."""
    if row in VARIANTS:
        return VARIANTS[row]
    if "@" not in row and row in bandits.ALGORITHMS:
        return row, {}
    raise ValueError(f"unknown row {row!r}; a row is a registered bandit ({', '.join(bandits.ALGORITHMS)}) or one "
                     f"of {', '.join(VARIANTS)}.")


def _rows(config: Config, overrides: dict) -> dict[str, Row]:
    """``{row: Row}`` of the rows of both stages, presets then ``params`` overrides, each checked."""
    rows = {}
    for row in dict.fromkeys(config.algorithms):
        algo, preset = row_algorithm(row)
        options, hparams = bandits.ALGORITHMS.split(algo, {**preset, **overrides.get(row, {})})
        built = bandits.ALGORITHMS.build(algo, **options)
        jax.eval_shape(lambda: built.init(jax.random.key(0), 4, **hparams))  # noqa: B023  (init's own checks)
        auto = options.get("inner") == "exp3" and options.get("convention") == "paper" and not hparams.get("gamma")
        rows[row] = Row(algo, options, hparams, auto)
    return rows


def _check(config: Config) -> tuple[dict, dict]:
    """Every setting checked before any work: ``({row: Row}, {copeland algo: (options, hparams)})``."""
    if not config.algorithms and not config.copeland_algorithms:
        raise ValueError("algorithms and copeland_algorithms are both empty; name at least one bandit.")
    overrides = params_lib.parse(config.params)
    stray = sorted(set(overrides) - set(config.algorithms) - set(config.copeland_algorithms))
    if stray:
        raise ValueError(f"params set {', '.join(stray)}, which this run does not run; rows: "
                         f"{', '.join(config.algorithms) or 'none'}; Copeland algorithms: "
                         f"{', '.join(config.copeland_algorithms) or 'none'}.")
    rows = _rows(config, overrides)
    copeland = {}
    if config.copeland_algorithms:
        items = [p for p in config.params if p.partition(".")[0].strip() in config.copeland_algorithms]
        copeland = duel_runs.settings(items, config.copeland_algorithms)
    for field in ("num_arms", "num_runs", "num_steps", "slow_num_steps", "copeland_num_runs",
                  "copeland_num_steps", "copeland_num_subsets"):
        check_int(field, getattr(config, field), minimum=1)
    for field in ("long_num_steps", "long_num_runs"):
        if getattr(config, field) is not None:
            check_int(field, getattr(config, field), minimum=1)
    for row in config.long_algorithms if config.long_num_steps is not None else ():
        if row != BEST and row not in rows:
            raise ValueError(f"long_algorithms names {row!r}, which is not a row of this run; rows: "
                             f"{', '.join(rows)} (or {BEST!r}: the {LONG_BEST} least-regret rows).")
    check_int("copeland_num_arms", config.copeland_num_arms, minimum=3)
    if config.copeland_subsets not in ("cycle", "uniform"):
        raise ValueError(f"copeland_subsets must be 'cycle' or 'uniform'; got {config.copeland_subsets!r}.")
    check_number("copeland_filler_margin", config.copeland_filler_margin, low=0, high=0.5)
    check_number("copeland_pair_gap", config.copeland_pair_gap, low=0, high=0.5, low_inclusive=True)
    return rows, copeland


def _copeland_subsets(config: Config, matrices) -> dict:
    """``{matrix name: (full matrix, subsets)}`` of the Copeland setting (``ValueError`` before any run)."""
    out = {}
    for m in matrices if config.copeland_algorithms else []:
        full = envs.check_preference_matrix(data.load_preference_matrix(m.source), name=m.name)
        if config.copeland_num_arms > full.shape[0]:
            raise ValueError(f"copeland_num_arms = {config.copeland_num_arms} exceeds the {full.shape[0]} rankers "
                             f"of {m.name}; pick at most {full.shape[0]}.")
        if config.copeland_subsets == "cycle":
            subsets = envs.matrix.cycle_subsets(full, config.copeland_num_arms, config.copeland_num_subsets, config.seed,
                                    filler_margin=config.copeland_filler_margin, pair_gap=config.copeland_pair_gap)
        else:
            subsets = envs.matrix.copeland_subsets(full, config.copeland_num_arms, config.copeland_num_subsets, config.seed)
        out[m.name] = full, subsets
    return out


def _module(algo: str, permute: bool, winner: Optional[int] = None) -> tuple[object, bool]:
    """What ``run_sweep`` runs and whether it relabels: the survival probe of ``winner`` for an
    eliminating algorithm (relabelled by the probe itself when ``permute``), else the bandit."""
    if winner is not None:
        return bandits.survival_probe(algo, winner, relabelled=permute), False
    return algo, permute


def _run_one(algo, prefs, options, hparams, *, module, seed, num_runs, num_steps, regret, chunk_size, run_dir,
             label):
    """One bandit on ``prefs [M, K, K]`` (one compiled program): ``(Trace, wall seconds)``."""
    start = time.perf_counter()
    mesh = bandits.lane_mesh()
    module, relabel = module
    trace = bandits.run_sweep(jax.random.key(seed), module, prefs, num_runs=num_runs, num_steps=num_steps,
                              relabel=relabel, options=options, hparams=duel_runs.changed(algo, hparams), chunk_size=chunk_size,
                              regret=regret, label=label, mesh=mesh, checkpoint_dir=checkpoint_dir(run_dir),
                              compiler_options=bandits.sweep.compiler_options_for(algo, mesh) or {})
    return trace, time.perf_counter() - start


def _summary(trace, m: int, seconds: float, steps: int, runs: int) -> dict:
    one = bandits.Trace(trace.checkpoints, trace.regret[m], trace.correct[m], trace.suboptimal[m])
    out = duel_runs.summarize(one)
    out["checkpoints"] = trace.checkpoints.tolist()
    out["wall_s"] = round(seconds, 2)  # of the whole simulation (all matrices of the call)
    out["num_steps"], out["num_runs"] = steps, runs
    return out


def _run_row(name: str, row: Row, matrices, *, steps: int, runs: int, config: Config, run_dir,
             arrays: dict, stage: str) -> dict:
    """Row ``name`` on every matrix (those of one size in one program; an eliminating algorithm one
    matrix at a time, probed for its winner): ``{matrix name: summary}``."""
    out = {}
    eliminating = row.algorithm in ELIMINATING
    groups = [[m] for m in matrices] if eliminating else list(by_size(matrices).values())
    for group in groups:
        num_arms = group[0].pref.shape[0]
        hparams = dict(row.hparams)
        default_horizon = bandits.ALGORITHMS.hparams(row.algorithm).get("horizon")
        if default_horizon is not None and hparams.get("horizon", default_horizon) == default_horizon:
            hparams["horizon"] = float(steps)  # a horizon left at its default is the stage's T (run and recorded)
        if row.auto_gamma:
            hparams["gamma"] = float(sparring.exp3_gamma(num_arms, steps))  # what init derives, recorded
        winner = int(envs.condorcet_winner(group[0].pref)) if eliminating else None
        trace, seconds = _run_one(
            row.algorithm, np.stack([m.pref for m in group]), row.options, hparams,
            module=_module(row.algorithm, config.permute_arms, winner), seed=config.seed, num_runs=runs,
            num_steps=steps, regret="condorcet", chunk_size=config.chunk_size, run_dir=run_dir,
            label=f"{name} K={num_arms} x{len(group)} T={steps:,}")
        for i, m in enumerate(group):
            summary = _summary(trace, i, seconds, steps, runs)
            summary["settings"] = {**row.options, **{k: round(float(v), 8) for k, v in hparams.items()}}
            if eliminating:
                summary["winner_dropped_runs"] = int((~trace.correct[i, 0, :, -1]).sum())
                summary["final"]["accuracy"] = None  # the probe's curve is survival, not best-arm accuracy
                summary["winner_kept"] = summary.pop("accuracy")
            out[m.name] = summary
            arrays[f"{stage}__{name}__{m.name}__regret"] = trace.regret[i, 0]
            print(f"[large_scale] {m.name} {name}: regret at T = {steps:,} "
                  f"{summary['final']['regret_mean']:.1f} ± {summary['final']['regret_ci95']:.1f} "
                  f"({seconds:.1f} s)", flush=True)
    return out


def best_rows(results: dict, count: int = LONG_BEST) -> list[str]:
    """The ``count`` rows with the least summed mean regret at ``num_steps`` over the matrices (rows
    run on every matrix at ``num_steps`` only: slow rows are left out)."""
    totals = {}
    for m in results["matrices"].values():
        for row, s in m["algorithms"].items():
            if s["num_steps"] == results["num_steps"]:
                totals.setdefault(row, []).append(s["final"]["regret_mean"])
    full = {row: sum(v) for row, v in totals.items() if len(v) == len(results["matrices"])}
    return sorted(full, key=full.get)[:count]


def late_early(checkpoints: np.ndarray, regret: np.ndarray) -> dict:
    """Per run, regret per step over the second half of the horizon (late) and over the first
    (early), and the mean and 95% CI over runs of ``late - early / 2`` (``regret [R, C]`` at
    ``checkpoints [C]``). Below 0 by more than its CI: the per-step regret at least halves from the
    first half of the horizon to the second, which a linear curve (late = early) never does, while
    ``log T`` regret falls to ``ln 2 / ln(T/2)`` of early (5% at T = 10^6) and ``sqrt(T)`` to 41%."""
    horizon = checkpoints[-1]
    half = int(np.argmin(np.abs(checkpoints - horizon / 2)))
    regret = np.asarray(regret, np.float64)
    early = regret[:, half] / checkpoints[half]
    late = (regret[:, -1] - regret[:, half]) / (horizon - checkpoints[half])
    excess, ci = mean_ci(late - early / 2)
    return {"early": float(early.mean()), "late": float(late.mean()), "excess": float(excess),
            "excess_ci95": float(ci)}


@register("large_scale", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """MergeDTS against its authors' baselines at K = 136; Copeland bandits on subsets without a Condorcet winner."""
    rows, copeland_settings = _check(config)
    matrices = load_matrices(config.matrices, config.num_arms)
    copeland = _copeland_subsets(config, matrices)
    results = {"paper_horizon": PAPER_HORIZON, "num_runs": config.num_runs, "num_steps": config.num_steps,
               "slow": list(config.slow), "slow_num_steps": config.slow_num_steps,
               "permute_arms": config.permute_arms, "rows": {}, "matrices": {}, "copeland": {}}
    for name, row in rows.items():
        hparams = {k: round(float(v), 8) for k, v in row.hparams.items()}
        defaults = {**bandits.ALGORITHMS.options(row.algorithm),
                    **{k: round(float(v), 8) for k, v in bandits.ALGORITHMS.hparams(row.algorithm).items()}}
        changed = {k: v for k, v in {**row.options, **hparams}.items() if v != defaults.get(k)}
        results["rows"][name] = {"algorithm": row.algorithm, "options": row.options, "hparams": hparams,
                                 "changed": changed, "exp3_gamma": "auto (K, T)" if row.auto_gamma else None}
    arrays = {}
    for m in matrices:
        winner = int(envs.condorcet_winner(m.pref))
        entry = {"source": m.source, "num_arms": m.pref.shape[0], "condorcet_winner": m.rankers[winner],
                 "algorithms": {}, "long": {}}
        if config.permute_arms:  # the winner's label in each run: the relabelling at work
            orders = bandits.relabel.run_orders(jax.random.key(config.seed), config.num_runs, m.pref.shape[0])
            entry["winner_label_by_run"] = [int(np.flatnonzero(o == winner)[0]) for o in orders]
        results["matrices"][m.name] = entry
    for name, row in rows.items():
        steps = config.slow_num_steps if row.algorithm in config.slow else config.num_steps
        for m_name, summary in _run_row(name, row, matrices, steps=steps, runs=config.num_runs, config=config,
                                        run_dir=run_dir, arrays=arrays, stage="main").items():
            results["matrices"][m_name]["algorithms"][name] = summary

    # Long stage: chosen rows again, to long_num_steps.
    long_rows = []
    if config.long_num_steps is not None:
        for row in config.long_algorithms:
            long_rows += best_rows(results) if row == BEST else [row]
        long_rows = list(dict.fromkeys(long_rows))
    results.update(long_algorithms=long_rows, long_num_steps=config.long_num_steps,
                   long_num_runs=config.long_num_runs or config.num_runs)
    for name in long_rows:
        for m_name, summary in _run_row(name, rows[name], matrices, steps=config.long_num_steps,
                                        runs=results["long_num_runs"], config=config, run_dir=run_dir,
                                        arrays=arrays, stage="long").items():
            results["matrices"][m_name]["long"][name] = summary

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
            options, hparams = copeland_settings[name]
            trace, seconds = _run_one(name, sub_prefs, options, hparams, module=_module(name, config.permute_arms),
                                      seed=config.seed, num_runs=config.copeland_num_runs,
                                      num_steps=config.copeland_num_steps, regret="copeland",
                                      chunk_size=config.chunk_size, run_dir=run_dir,
                                      label=f"{name} K={sub_prefs.shape[-1]} x{len(subsets)}")
            for s in range(len(subsets)):
                key = f"{m.name} subset {s}"
                summary = _summary(trace, s, seconds, config.copeland_num_steps, config.copeland_num_runs)
                summary["sublinearity"] = sublinearity(trace.checkpoints, trace.regret[s, 0])
                summary["late_early"] = {k: round(v, 7) for k, v in
                                         late_early(trace.checkpoints, trace.regret[s, 0]).items()}
                results["copeland"][key]["algorithms"][name] = summary
                arrays[f"copeland__{name}__{m.name}__{s}__regret"] = trace.regret[s, 0]
    data.write_npz(run_dir / "arrays.npz", **arrays)
    results["matrix_dir"] = MATRIX_DIR
    wall = {}
    for key, entry in results["matrices"].items():
        for stage in ("algorithms", "long"):
            for name, s in entry[stage].items():
                wall[f"{'long' if stage == 'long' else 'matrices'}: {key}: {name}"] = s.pop("wall_s")
    for key, entry in results["copeland"].items():
        for name, s in entry["algorithms"].items():
            wall[f"copeland: {key}: {name}"] = s.pop("wall_s")
    results["timings"] = {"wall_s": wall}
    return results


def sublinearity(checkpoints: np.ndarray, regret: np.ndarray) -> float:
    """Mean regret over the second half of the horizon divided by that over the first half, per step:
    about 1 for linear regret, near 0 once it flattens (``regret [R, C]`` at ``checkpoints [C]``); 0 when
    neither half has regret, ``inf`` when only the second has."""
    mean = regret.mean(axis=0)
    horizon = checkpoints[-1]
    half = int(np.argmin(np.abs(checkpoints - horizon / 2)))
    first, second = mean[half] / checkpoints[half], (mean[-1] - mean[half]) / (horizon - checkpoints[half])
    if first > 0:
        return round(float(second / first), 4)
    return float("inf") if second > 0 else 0.0
