"""Every paper experiment in one go, and one Markdown report of their tables and figures next to
the papers' numbers and claims, with a measured verdict on every claim.

``mode=quick`` shrinks run counts and horizons (keeping each claim's direction visible where that
is affordable) so the whole report takes about 10–15 minutes on a 2-core CPU; ``mode=full`` runs
every experiment with its paper defaults (and the paper's horizons where the default is a CPU
budget). Each experiment writes its own run directory under ``<run_dir>/runs/``; ``report.md``
links their tables and figures. An experiment that fails is reported (with its error) and the
others still run.

Resume: the report records each part's run directory and wall time in
``checkpoints/report.npz`` as it goes, so ``--resume`` on a killed report keeps the finished parts,
continues an interrupted one from its own checkpoints (``registry.resume``; a part without
checkpoints runs again) and runs the rest. A part's seconds add up over the processes that ran
it: an interrupted process counts up to its part's last checkpoint (the work after it is redone
and counted in the next one).

Verdicts: each experiment's analysis module ``experiments/analysis/<experiment>.py`` exposes
``verdicts(summary) -> [(claim, verdict, detail)]``, ``verdict`` one of ``"holds"``,
``"does not hold"``, ``"not testable here"`` (``experiments.analysis.verdicts``), computed from the
run's summary (``results.json`` with ``timings.json`` under ``"timings"``). The report lists them
per part and in one table at its top, and returns them in its summary.
"""

import dataclasses
import importlib
import json
import re
import time
import traceback
from pathlib import Path
from typing import Optional

import jax
import numpy as np

from experiments.analysis import verdicts as V
from experiments.analysis.plotting import load_summary
from experiments.common import registry
from experiments.common.registry import register
from jaxrank.data import write_npz, write_text

PROGRESS = "report.npz"  # in checkpoint_dir(run_dir): {experiment: {"run_dir", "seconds", "started", "done"}}


@dataclasses.dataclass(frozen=True)
class Part:
    experiment: str
    claim: str  # what the paper reports, to read the table against
    quick: tuple[str, ...] = ()  # --set overrides in quick mode
    full: tuple[str, ...] = ()  # --set overrides in full mode: the paper's settings where the default is a CPU budget
    name: str = ""  # the part's name in the report when an experiment runs more than once (default: the experiment)

    @property
    def key(self) -> str:
        return self.name or self.experiment


SECTIONS = (
    ("Relative confidence sampling for online ranker evaluation (Zoghi, Whiteson, de Rijke, Munos, WSDM 2014)", (
        Part("feature_rankers", "The arms: single-feature rankers of a LETOR set (MQ2008 here), NDCG and MAP per fold."),
        Part("condorcet_probability", "Fig. 1: for random subsets of the 136 MSLR features, P(a Condorcet winner exists) "
             "stays above 0.91 at every size; P(total order) falls quickly with size.", ("num_subsets=1000",)),
        Part("preference_matrix", "P is estimated with 80,000 probabilistic-interleave comparisons per pair under the "
             "perfect cascade click model (paper §5).", ("num_comparisons=5000",)),
        Part("rcs_regret", "Fig. 3: RCS has roughly a third less cumulative regret than RUCB (α = 0.501), "
             "plateau gap ≈ 200 on MSLR-Perfect.", ("num_runs=30", "num_steps=50000")),
        Part("rcs_accuracy", "Fig. 2: RCS beats Condorcet SAVAGE in best-ranker accuracy and reaches a given "
             "accuracy about 2× sooner; at 100% accuracy SAVAGE has ≥ 3× RCS's regret.",
             ("num_runs=30", "max_horizon=10000", "num_horizons=5")),
        Part("rcs_alpha", "Fig. 4: at α = 0.1 RUCB's mean regret grows linearly (2 of 30 runs never lock on); "
             "RCS's regret about doubles against α = 0.501 but flattens.",
             # the paper's 30 runs and 400,000 steps: at 100,000 one RCS run at α = 0.1 was still exploring
             ("num_runs=30", "num_steps=400000")),
        Part("rcs_scaling", "Fig. 5: with K = 20/30/40, RUCB makes far more suboptimal comparisons near the crossing "
             "time (27% vs 3.6% for K = 20) and has 12–30% more regret at 2T0.",
             # K = 20 only: its mean regret curves cross at T0 ≈ 1.4e5–1.7e5 steps (10 / 20 runs), so 4e5 steps
             # reach 2·T0 (K = 40 crosses near 6e5 and needs 1.2e6); full mode runs the paper's 1M / 1.5M / 2M.
             ("num_runs=20", "num_steps=400000", "arm_counts=20"), ("paper_horizons=true",)),
    )),
    ("Large-scale online ranker evaluation: MergeDTS (Li, Markov, de Rijke, Zoghi, TOIS 2020) and Copeland "
     "dueling bandits (Zoghi, Karnin, Whiteson, de Rijke, NIPS 2015)", (
        Part("large_scale", "MergeDTS has less cumulative regret than MergeRUCB on the 136-ranker MSLR matrices and "
             "never drops the Condorcet winner; without a Condorcet winner, CCB and SCB have sublinear Copeland regret.",
             ("num_runs=3", "num_steps=100000", "copeland_num_runs=3", "copeland_num_steps=1000000")),
    )),
    ("Online learning to rank from clicks: DBGD (Yue & Joachims, ICML 2009), MGD (Schuth et al., WSDM 2016), "
     "PDGD (Oosterhuis & de Rijke, CIKM 2018)", (
        Part("oltr", "Tables 3-4 (MQ2008): PDGD (linear) has the highest offline NDCG@10 and online (discounted) "
             "NDCG@10 of DBGD, MGD, Pairwise and PDGD, linear and neural, under every click model; each of the 36 "
             "cells next to the paper's.",
             ("folds=1,2", "num_runs=5", "num_impressions=3000", "comparisons=team_draft")),
    )),
    ("Click models fitted to session logs (Chuklin, Markov, de Rijke, Click Models for Web Search, 2015) and "
     "counterfactual learning to rank (Joachims, Swaminathan, Schnabel, WSDM 2017; Oosterhuis, TOIS 2023)", (
        Part("click_models", "The click model that generated a log predicts its held-out clicks best (lowest "
             "perplexity); DBN and CCM beat PBM on cascade logs; fitted relevance ranks better than the logging ranker.",
             ("num_sessions=4000", "num_seeds=2"), ("num_sessions=40000",)),
        Part("closed_loop", "A DBN fitted to a cascade user's log (MQ2008), its attraction linear in the features or "
             "per-pair tables, drives PDGD as the user does: paired offline NDCG@10 differences within their 95% CIs.",
             ("num_sessions=20000", "num_runs=8", "num_impressions=3000")),
        # each claim under the protocol of the paper that makes it
        Part("counterfactual_ltr", "Joachims et al. (WSDM 2017, §6): Propensity SVM-Rank (IPS) rises above the naive "
             "ranker as clicks grow and approaches the skyline; clipping trades bias for variance.",
             ("etas=1.0", "click_budgets=1000,100000", "num_seeds=2", "pairs=all"), ("pairs=all",),
             name="counterfactual_ltr_joachims2017"),
        Part("counterfactual_ltr", "Oosterhuis (TOIS 2023): the doubly robust estimator needs far fewer sessions than "
             "IPS to reach the same NDCG (Plackett–Luce top-5 logger, trust-bias users).",
             ("protocol=oosterhuis2023", "session_budgets=1000,100000", "num_seeds=2"),
             ("protocol=oosterhuis2023", "folds=1,2,3,4,5", "num_seeds=10"),
             name="counterfactual_ltr_oosterhuis2023"),
    )),
    ("SOLAR: scalable online learning to rank (Wang, Wan, Zhang, Hoi, ACL 2015)", (
        Part("solar_online", "Table 2 / Fig. 2: SOLAR-II ≥ SOLAR-I > Com-P > Prank (pairwise) > Prank (pointwise) "
             "in online cumulative NDCG and MAP.", ("num_permutations=10",)),
        Part("solar_batch", "Table 3: batch SOLAR is on par with the LETOR baselines (RankSVM, AdaRank, RankBoost, "
             "ListNet); MQ2008 NDCG@10 ≈ 0.23 for the baselines is the LETOR-script convention.",
             # every fold (Table 3 averages all five; folds 1-3 alone score ~0.04 lower), coarser grids
             ("c_grid=3.16e-4,1e-4,3.16e-5,1e-5", "gamma_grid=1e3,3.16e3,1e4,1e5", "lambda_grid=1e-4,1e-2,1")),
        Part("solar_scalability", "Fig. 3: SOLAR trains more than 100× faster than the primal RankSVM baseline.",
             ("num_queries=100,784", "repeats=3")),
    )),
    ("Co-regularised ranking: SPD and LCRA (Tsivtsivadze, Hofmann, Heskes 2012)", (
        Part("lcra_table", "Table 1: with 20% of the training labels, LCRA-1-5 ≥ LCRA-1-1 > SPD-MV ≥ SPD in test MAP "
             "on every LETOR 3.0 set.", ("num_splits=5", "cv_steps=10000", "num_steps=20000",
                                        "lambdas=1e-4,1e-3,1e-2,1e-1", "mus=1e-2,1e-1,1")),
    )),
    ("Sparse RankSVM with non-convex penalties (Laporte, Flamary, Canu, Déjean, Mothe, TNNLS 2014)", (
        Part("sparse_ranksvm", "Tables IV–VI: log and ℓ0.5 keep about half of ℓ1's features (MQ2008 sparsity ratio "
             "ℓ1 0.39, MCP 0.27, log 0.09, ℓ0.5 0.07) with test MAP/NDCG statistically unchanged.",
             # the certified path: proximal Newton in float64 (the default) over every fold (Tables IV–VI
             # average all five) and the default 17 λ (with 9 the sparsity ratios per fold scatter too
             # much to compare); no ε / γ sweep
             ("sweep=",)),
    )),
)

@dataclasses.dataclass(frozen=True)
class Config:
    mode: str = "quick"  # quick (minutes) or full (every experiment at its paper defaults)
    only: tuple[str, ...] = ()  # run just these experiments (default: all)
    seed: int = 0


def _parts(config: Config):
    known = {n for _, parts in SECTIONS for p in parts for n in (p.experiment, p.key)}
    unknown = set(config.only) - known
    if unknown:
        raise ValueError(f"only: unknown experiments {sorted(unknown)}; choose from {sorted(known)}.")
    for title, parts in SECTIONS:
        chosen = [p for p in parts if (not config.only or {p.experiment, p.key} & set(config.only)) and p.experiment in registry.names()]
        if chosen:
            yield title, chosen


_VERDICT_HEADING = re.compile(r"^(#+\s*|\*\*)Verdicts(\*\*)?\s*$", re.MULTILINE)


def _without_verdicts(text: str) -> str:
    """A part's table without its own "Verdicts" section: the report lists the verdicts itself."""
    match = _VERDICT_HEADING.search(text)
    return (text[: match.start()] if match else text).rstrip()


def verdict_function(experiment: str):
    """``experiments.analysis.<experiment>.verdicts``, or None when that module or function is absent."""
    try:
        module = importlib.import_module(f"experiments.analysis.{experiment}")
    except ModuleNotFoundError as e:
        if e.name != f"experiments.analysis.{experiment}":
            raise  # the module exists but one of its imports is missing: a real error
        return None
    return getattr(module, "verdicts", None)


def collect_verdicts(experiment: str, outcome: dict) -> list:
    """The part's verdicts: its module's ``verdicts(summary)``; one "not testable here" line when the
    run failed, the module has no verdict function, or that function fails."""
    if outcome["status"] != "ok":
        return [V.Verdict("every claim of this part", V.UNTESTABLE, f"the run failed: {outcome['error']}")]
    fn = verdict_function(experiment)
    if fn is None:
        return [V.Verdict("every claim of this part", V.UNTESTABLE, "no verdict function")]
    try:
        return V.check(fn(load_summary(outcome["run_dir"])))
    except Exception as e:  # a broken verdict function must not lose the report
        traceback.print_exc()
        return [V.Verdict("every claim of this part", V.UNTESTABLE,
                          f"the verdict function failed: {type(e).__name__}: {e}".splitlines()[0])]


def _section(part: Part, outcome: dict, run_dir: Path) -> list[str]:
    lines = [f"### `{part.key}`", "", f"*Paper:* {part.claim}", ""]
    verdicts = ["**Verdicts**", "", *V.rows(outcome["verdicts"]), ""]
    if outcome["status"] != "ok":
        return lines + [f"**Failed** after {outcome['seconds']:.0f} s: `{outcome['error']}`", ""] + verdicts
    child = Path(outcome["run_dir"])
    rel = child.relative_to(run_dir)
    lines.append(f"*Run:* `{rel}` ({outcome['seconds']:.0f} s; settings `{' '.join(outcome['overrides']) or 'defaults'}`)")
    lines.append("")
    table = child / "table.md"
    lines += [_without_verdicts(table.read_text()) if table.is_file() else "(no table)", ""]
    timings = child / "timings.md"  # tables that read wall-clock times (kept out of table.md)
    if timings.is_file():
        lines += [_without_verdicts(timings.read_text()), ""]
    lines += verdicts
    for figure in sorted(child.glob("*.png")):
        lines += [f"![{part.key}: {figure.stem}]({rel / figure.name})", ""]
    return lines


def _summary_table(outcomes: dict) -> list[str]:
    """The verdict of every claim of every part, with the counts."""
    counts = {v: sum(x.verdict == v for o in outcomes.values() for x in o["verdicts"]) for v in V.VERDICTS}
    lines = ["## Verdicts", "", ", ".join(f"{n} {v}" for v, n in counts.items()) + ".", "",
             "| experiment | claim | verdict | detail |", "|---|---|---|---|"]
    for name, o in outcomes.items():
        lines += [f"| `{name}` |{row[1:]}" for row in V.rows(o["verdicts"])[2:]]
    return lines + [""]


def _progress_path(run_dir: Path) -> Path:
    return registry.checkpoint_dir(run_dir) / PROGRESS


def _load_progress(run_dir: Path) -> dict:
    path = _progress_path(run_dir)
    return json.loads(str(np.load(path)["progress"])) if path.is_file() else {}


def _save_progress(run_dir: Path, progress: dict) -> None:
    if jax.process_index() == 0:  # with several processes, process 0 writes the run's files
        write_npz(_progress_path(run_dir), progress=np.asarray(json.dumps(progress)))


def _last_progress(child: Path) -> Optional[float]:
    """When ``child`` last made progress: its results, else its newest checkpoint (epoch seconds)."""
    if (child / "results.json").is_file():
        return (child / "results.json").stat().st_mtime
    times = [p.stat().st_mtime for p in registry.checkpoint_dir(child).rglob("*.npz")]
    return max(times) if times else None


def _run_part(experiment: str, run_dir: Path, overrides: list, seed, progress: dict,
              key: Optional[str] = None) -> tuple[str, float]:
    """``(child run directory, seconds)`` of one part: kept when finished by an earlier process,
    resumed from its checkpoints when interrupted, launched otherwise (module docstring); ``key`` names
    the part in ``progress`` (default the experiment)."""
    key = key or experiment
    record = progress.get(key)
    last = None if record is None else _last_progress(Path(record["run_dir"]))
    if record is not None and (record["done"] or Path(record["run_dir"], "results.json").is_file()):
        return record["run_dir"], record["seconds"] + (0.0 if record["done"] else max(0.0, last - record["started"]))
    start = time.perf_counter()
    spent = 0.0
    if last is not None:  # interrupted after a checkpoint: continue it
        spent = record["seconds"] + max(0.0, last - record["started"])
        progress[key] = dict(record, seconds=spent, started=time.time())
        _save_progress(run_dir, progress)
        child = registry.resume(record["run_dir"])
    else:
        def started(child: Path) -> None:
            progress[key] = {"run_dir": str(child), "seconds": 0.0, "started": time.time(), "done": False}
            _save_progress(run_dir, progress)

        child = registry.launch(experiment, run_dir / "runs", overrides, seed=seed, on_start=started)
    seconds = spent + time.perf_counter() - start
    progress[key] = dict(progress[key], seconds=seconds, done=True)
    _save_progress(run_dir, progress)
    return str(child), seconds


@register("paper_report", Config)
def run(config: Config, run_dir) -> dict:
    """Runs the paper experiments and writes ``report.md``."""
    if config.mode not in ("quick", "full"):
        raise ValueError(f"mode must be 'quick' or 'full'; got {config.mode!r}.")
    run_dir = Path(run_dir)
    sections = list(_parts(config))
    outcomes, body = {}, []
    progress = _load_progress(run_dir)
    start_all, here = time.perf_counter(), 0.0  # here: this process's time inside the parts
    for title, parts in sections:
        body += [f"## {title}", ""]
        for part in parts:
            overrides = list(part.quick if config.mode == "quick" else part.full)
            fields = {f.name for f in dataclasses.fields(registry.get(part.experiment).config_cls)}
            seed = config.seed if "seed" in fields else None
            print(f"[paper_report] {part.key} {' '.join(overrides)}", flush=True)
            start = time.perf_counter()
            try:
                child, seconds = _run_part(part.experiment, run_dir, overrides, seed, progress, part.key)
                outcome = {"status": "ok", "run_dir": child}
            except Exception as e:  # one failing experiment must not lose the others
                traceback.print_exc()
                outcome = {"status": "failed", "error": f"{type(e).__name__}: {e}".splitlines()[0]}
                seconds = time.perf_counter() - start
                progress.pop(part.key, None)  # a failed part runs again on resume
                _save_progress(run_dir, progress)
            here += time.perf_counter() - start
            outcome.update(seconds=round(seconds, 1), overrides=overrides)
            outcome["verdicts"] = collect_verdicts(part.experiment, outcome)
            outcomes[part.key] = outcome
            body += _section(part, outcome, run_dir)
    # the parts' seconds (over every process that ran them) and this process's time between them
    total = sum(o["seconds"] for o in outcomes.values()) + time.perf_counter() - start_all - here
    failed = [name for name, o in outcomes.items() if o["status"] != "ok"]
    head = [f"# jaxrank: reproduced tables and figures ({config.mode} mode)", "",
            f"{len(outcomes)} experiments in {total / 60:.1f} min" + (f"; failed: {', '.join(failed)}" if failed else "") + ".",
            "Quick mode uses fewer runs and shorter horizons than the papers; `--set mode=full` runs the paper "
            "settings. A verdict is decided from the run's own figures (`experiments/analysis/verdicts.py` states the rules): "
            "*not testable here* says what the run lacks.",
            "", *_summary_table(outcomes), "| experiment | seconds | status |", "|---|---|---|"]
    head += [f"| {name} | {o['seconds']:.0f} | {o['status']} |" for name, o in outcomes.items()]
    write_text(run_dir / "report.md", "\n".join(head + [""] + body) + "\n")
    print(f"[paper_report] wrote {run_dir / 'report.md'} ({total / 60:.1f} min)", flush=True)
    timings = {"total_s": round(total, 1), "experiments": {name: o.pop("seconds") for name, o in outcomes.items()}}
    for o in outcomes.values():
        o["verdicts"] = [list(v) for v in o["verdicts"]]
    counts = {v: sum(x[1] == v for o in outcomes.values() for x in o["verdicts"]) for v in V.VERDICTS}
    return {"mode": config.mode, "experiments": outcomes, "verdict_counts": counts, "timings": timings}
