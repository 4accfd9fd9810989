"""Every paper experiment in one go, and one Markdown report of their tables and figures next to
the papers' numbers and claims.

``mode=quick`` shrinks run counts and horizons so the whole report takes a few minutes on a
laptop CPU; ``mode=full`` runs every experiment with its paper defaults. Each experiment writes
its own run directory under ``<run_dir>/runs/``; ``report.md`` links their tables and figures.
An experiment that fails is reported (with its error) and the others still run.
"""

import dataclasses
import time
import traceback
from pathlib import Path

from experiments.common import registry
from experiments.common.registry import register
from jaxrank.data import write_text


@dataclasses.dataclass(frozen=True)
class Part:
    experiment: str
    claim: str  # what the paper reports, to read the table against
    quick: tuple[str, ...] = ()  # --set overrides in quick mode


SECTIONS = (
    ("Relative confidence sampling for online ranker evaluation (Zoghi, Whiteson, de Rijke, Munos, WSDM 2014)", (
        Part("feature_rankers", "The arms: single-feature rankers of a LETOR set (MQ2008 here), NDCG and MAP per fold."),
        Part("condorcet_probability", "Fig. 1: for random subsets of the 136 MSLR features, P(a Condorcet winner exists) "
             "stays above 0.91 at every size; P(total order) falls quickly with size.", ("num_subsets=1000",)),
        Part("preference_matrix", "P is estimated with 80,000 probabilistic-interleave comparisons per pair under the "
             "perfect cascade click model (paper §5).", ("num_comparisons=5000",)),
        Part("rcs_regret", "Fig. 3: RCS has roughly a third less cumulative regret than RUCB (α = 0.501), "
             "plateau gap ≈ 200 on MSLR-Perfect.", ("num_runs=30", "num_steps=20000")),
        Part("rcs_accuracy", "Fig. 2: RCS beats Condorcet SAVAGE in best-ranker accuracy and reaches a given "
             "accuracy about 2× sooner; at 100% accuracy SAVAGE has ≥ 3× RCS's regret.",
             ("num_runs=30", "max_horizon=10000", "num_horizons=5")),
        Part("rcs_alpha", "Fig. 4: at α = 0.1 RUCB's mean regret grows linearly (2 of 30 runs never lock on); "
             "RCS's regret about doubles against α = 0.501 but flattens.", ("num_runs=10", "num_steps=50000")),
        Part("rcs_scaling", "Fig. 5: with K = 20/30/40, RUCB makes far more suboptimal comparisons near the crossing "
             "time (27% vs 3.6% for K = 20) and has 12–30% more regret at 2T0.",
             ("num_runs=10", "num_steps=20000", "arm_counts=20,40")),
    )),
    ("Large-scale online ranker evaluation: MergeDTS (Li, Markov, de Rijke, Zoghi, TOIS 2020) and Copeland "
     "dueling bandits (Zoghi, Karnin, Whiteson, de Rijke, NIPS 2015)", (
        Part("large_scale", "MergeDTS has less cumulative regret than MergeRUCB on the 136-ranker MSLR matrices and "
             "never drops the Condorcet winner; without a Condorcet winner, CCB and SCB have sublinear Copeland regret.",
             ("num_runs=3", "num_steps=100000", "copeland_num_runs=3", "copeland_num_steps=1000000")),
    )),
    ("Online learning to rank from clicks: DBGD (Yue & Joachims, ICML 2009), MGD (Schuth et al., WSDM 2016), "
     "PDGD (Oosterhuis & de Rijke, CIKM 2018)", (
        Part("oltr", "PDGD reaches higher offline NDCG@10 than MGD and DBGD under every click model, and higher "
             "online (discounted) NDCG@10.", ("folds=1,2", "num_runs=5", "num_impressions=3000")),
    )),
    ("SOLAR: scalable online learning to rank (Wang, Wan, Zhang, Hoi, ACL 2015)", (
        Part("solar_online", "Table 2 / Fig. 2: SOLAR-II ≥ SOLAR-I > Com-P > Prank (pairwise) > Prank (pointwise) "
             "in online cumulative NDCG and MAP.", ("num_permutations=3",)),
        Part("solar_batch", "Table 3: batch SOLAR is on par with the LETOR baselines (RankSVM, AdaRank, RankBoost, "
             "ListNet); MQ2008 NDCG@10 ≈ 0.23 for the baselines is the LETOR-script convention.",
             ("folds=1,2,3", "c_grid=1e-4,1e-5,1e-6", "gamma_grid=1e3,1e4,1e5", "lambda_grid=1e-4,1e-2,1")),
        Part("solar_scalability", "Fig. 3: SOLAR trains more than 100× faster than the primal RankSVM baseline.",
             ("num_queries=100,784", "repeats=1")),
    )),
    ("Co-regularised ranking: SPD and LCRA (Tsivtsivadze, Hofmann, Heskes 2012)", (
        Part("lcra_table", "Table 1: with 20% of the training labels, LCRA-1-5 ≥ LCRA-1-1 > SPD-MV ≥ SPD in test MAP "
             "on every LETOR 3.0 set.", ("num_splits=3", "cv_steps=20000", "num_steps=20000")),
    )),
    ("Sparse RankSVM with non-convex penalties (Laporte, Flamary, Canu, Déjean, Mothe, TNNLS 2014)", (
        Part("sparse_ranksvm", "Tables IV–VI: log and ℓ0.5 keep about half of ℓ1's features (MQ2008 sparsity ratio "
             "ℓ1 0.39, MCP 0.27, log 0.09, ℓ0.5 0.07) with test MAP/NDCG statistically unchanged.",
             ("folds=1,2,3", "num_lambdas=9", "tol=1e-3", "max_iter=200", "num_outer=3", "sweep=", "float64=false")),
    )),
)

@dataclasses.dataclass(frozen=True)
class Config:
    mode: str = "quick"  # quick (minutes) or full (every experiment at its paper defaults)
    only: tuple[str, ...] = ()  # run just these experiments (default: all)
    seed: int = 0


def _parts(config: Config):
    known = {p.experiment for _, parts in SECTIONS for p in parts}
    unknown = set(config.only) - known
    if unknown:
        raise ValueError(f"only: unknown experiments {sorted(unknown)}; choose from {sorted(known)}.")
    for title, parts in SECTIONS:
        chosen = [p for p in parts if (not config.only or p.experiment in config.only) and p.experiment in registry.names()]
        if chosen:
            yield title, chosen


def _section(part: Part, outcome: dict, run_dir: Path) -> list[str]:
    lines = [f"### `{part.experiment}`", "", f"*Paper:* {part.claim}", ""]
    if outcome["status"] != "ok":
        return lines + [f"**Failed** after {outcome['seconds']:.0f} s: `{outcome['error']}`", ""]
    child = Path(outcome["run_dir"])
    rel = child.relative_to(run_dir)
    lines.append(f"*Run:* `{rel}` ({outcome['seconds']:.0f} s; settings `{' '.join(outcome['overrides']) or 'defaults'}`)")
    lines.append("")
    table = child / "table.md"
    lines += [table.read_text().rstrip() if table.is_file() else "(no table)", ""]
    for figure in sorted(child.glob("*.png")):
        lines += [f"![{part.experiment}: {figure.stem}]({rel / figure.name})", ""]
    return lines


@register("paper_report", Config)
def run(config: Config, run_dir) -> dict:
    """Runs the paper experiments and writes ``report.md``."""
    if config.mode not in ("quick", "full"):
        raise ValueError(f"mode must be 'quick' or 'full'; got {config.mode!r}.")
    run_dir = Path(run_dir)
    sections = list(_parts(config))
    outcomes, body = {}, []
    start_all = time.perf_counter()
    for title, parts in sections:
        body += [f"## {title}", ""]
        for part in parts:
            overrides = list(part.quick) if config.mode == "quick" else []
            fields = {f.name for f in dataclasses.fields(registry.get(part.experiment).config_cls)}
            seed = config.seed if "seed" in fields else None
            print(f"[paper_report] {part.experiment} {' '.join(overrides)}", flush=True)
            start = time.perf_counter()
            try:
                child = registry.launch(part.experiment, run_dir / "runs", overrides, seed=seed)
                outcome = {"status": "ok", "run_dir": str(child)}
            except Exception as e:  # one failing experiment must not lose the others
                traceback.print_exc()
                outcome = {"status": "failed", "error": f"{type(e).__name__}: {e}".splitlines()[0]}
            outcome.update(seconds=round(time.perf_counter() - start, 1), overrides=overrides)
            outcomes[part.experiment] = outcome
            body += _section(part, outcome, run_dir)
    total = time.perf_counter() - start_all
    failed = [name for name, o in outcomes.items() if o["status"] != "ok"]
    head = [f"# jaxrank: reproduced tables and figures ({config.mode} mode)", "",
            f"{len(outcomes)} experiments in {total / 60:.1f} min" + (f"; failed: {', '.join(failed)}" if failed else "") + ".",
            "Quick mode uses fewer runs and shorter horizons than the papers; `--set mode=full` runs the paper settings.",
            "", "| experiment | seconds | status |", "|---|---|---|"]
    head += [f"| {name} | {o['seconds']:.0f} | {o['status']} |" for name, o in outcomes.items()]
    write_text(run_dir / "report.md", "\n".join(head + [""] + body) + "\n")
    print(f"[paper_report] wrote {run_dir / 'report.md'} ({total / 60:.1f} min)", flush=True)
    timings = {"total_s": round(total, 1), "experiments": {name: o.pop("seconds") for name, o in outcomes.items()}}
    return {"mode": config.mode, "experiments": outcomes, "timings": timings}
