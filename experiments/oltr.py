"""Online learning to rank from simulated clicks: the comparison of Oosterhuis & de Rijke (CIKM 2018,
§4, Tables 3–4) — DBGD, MGD, Pairwise and PDGD, linear and neural — runs × folds × click models
(perfect, navigational, informational cascade users), 10,000 impressions per run, offline NDCG@10 on
the test fold at log-spaced checkpoints and the discounted cumulative NDCG@10 (γ = 0.9995) of the
displayed lists, each cell next to the paper's.

Every (fold, click model, run) of one row is a lane of ONE compiled program
(``jaxrank.oltr.simulate_grid`` on ``jaxrank.lanes``), checkpointed so that ``--resume`` continues a
killed run with identical results. Per-row settings: ``--set params=row.key=value,...``.

The protocol defaults to the paper's, as its authors' script ran it
(github.com/HarrieO/OnlineLearningToRank ``scripts/CIKM2018.py``); each difference from the simpler
protocol this library used before is an option:

* ``test_queries="relevant"``: offline NDCG over the test queries with at least one relevant document
  (the authors' ``purge_test_set``); ``"all"`` counts the others as 0 (about 28% of MQ2008's).
* ``stop_rule="every_position"``: the authors' simulator draws the stop coin at every position,
  clicked or not; ``"after_click"`` is the cascade model as published (``jaxrank.clicks.cascade_clicks``).
* ``comparisons="probabilistic"``: DBGD interleaves and MGD multileaves probabilistically (§4.3);
  ``"team_draft"`` is far cheaper on CPU.
* ``outcome_samples=10000``: the authors' code estimates each probabilistic outcome from 10,000 sampled
  assignments (``multileaving/ProbabilisticMultileave.py``), under which an exact tie is a win almost
  half the time; 0 computes the outcomes exactly (``jaxrank.clicks.lists.sampled_outcome``).
* ``learning_rate_decay=0.9999977``: the authors' script decays every row's η after each update
  (the paper does not say so); 1 keeps η constant.
* 3-grade click and stop probabilities for MQ2007/MQ2008 (the authors' ``utils/clicks.py``
  ``short_models``, ``jaxrank.clicks.cascade_model(name, 3)``); 125 runs = 25 per fold × 5 folds.

The earlier protocol is ``--set test_queries=all,stop_rule=after_click,comparisons=team_draft``.

Data: a LETOR folder (``Fold1..Fold5``, default MQ2008), a single SVMlight file or a folder holding
one (e.g. the MSLR-WEB subset: its queries are split into five parts rotated as LETOR folds,
features normalised per query), or ``synthetic``; ``auto`` uses MQ2008 when present and synthetic
data otherwise, saying so."""

import dataclasses
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments.common import budget, letor_datasets
from experiments.analysis import oltr as analysis
from experiments.common.params import parse
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data, lanes, oltr
from jaxrank.clicks import STOP_RULES, cascade_model
from jaxrank.metrics.statistics import mean_ci
from jaxrank.utils.checks import check_choice, check_int, check_number

# The paper's rows (Tables 3–4): row -> (ranker of oltr.RANKERS, its settings in this study).
ROWS = {
    "dbgd": ("dbgd", {}),
    "dbgd_neural": ("dbgd", {"model": "neural"}),
    "mgd": ("mgd", {}),
    # The authors' code shows the exploitative list worst first (algorithms/baselines/pairwise.py ranks
    # the raw scores ascending); their Table 4 Pairwise numbers come from that display.
    "pairwise": ("pairwise", {"exploit_order": "ascending"}),
    "pdgd": ("pdgd", {}),
    "pdgd_neural": ("pdgd", {"model": "neural"}),
}
LEARNERS = tuple(ROWS)
TEST_QUERIES = ("relevant", "all")
COMPARISONS = ("probabilistic", "team_draft")
_COMPARISON_OPTION = {"dbgd": "interleaving", "mgd": "multileaving"}


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder (MQ2008), an SVMlight file/folder (MSLR-WEB_Fold1_subset), synthetic, auto
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    click_models: tuple[str, ...] = ("perfect", "navigational", "informational")
    num_grades: int = 0  # grades of the click models; 0: the smallest table (2, 3, 5) covering the data's labels
    learners: tuple[str, ...] = LEARNERS  # rows of ROWS
    # Per-row settings "row.key=value" over the rows' own (hyperparameters and options of oltr.RANKERS),
    # e.g. --set params=pdgd.learning_rate=0.05,mgd.num_candidates=9,pdgd_neural.hidden_units=32
    params: tuple[str, ...] = ()
    num_runs: int = 25  # per fold: 125 over the five folds, as the paper
    num_impressions: int = 10_000
    num_checkpoints: int = 16  # log-spaced offline evaluations (plus impression 0)
    list_size: int = 10  # displayed documents, the same for every ranker (the protocol's k)
    discount: float = oltr.ONLINE_DISCOUNT
    test_queries: str = "relevant"  # "relevant" (the authors') or "all" (no-relevant queries count 0)
    stop_rule: str = "every_position"  # the authors' simulator; "after_click" is the published cascade model
    comparisons: str = "probabilistic"  # DBGD / MGD comparisons: "probabilistic" (the paper) or "team_draft"
    outcome_samples: int = 10_000  # probabilistic outcomes estimated from N samples, as the authors' code; 0: exact
    learning_rate_decay: float = 0.9999977  # the authors' script, every row; 1 keeps η constant
    seed: int = 0


def ranker_settings(config: Config) -> dict[str, tuple[str, dict, dict]]:
    """``{row: (ranker, options, hparams)}``, every setting checked (ValueError naming it) before any work."""
    unknown = [row for row in config.learners if row not in ROWS]
    if unknown:
        raise ValueError(f"learners: unknown row {unknown[0]!r}; rows: {', '.join(ROWS)}.")
    overrides = parse(config.params)
    stray = sorted(set(overrides) - set(config.learners))
    if stray:
        raise ValueError(f"params set {', '.join(stray)}, which this run does not run; rows: "
                         f"{', '.join(config.learners)}.")
    out = {}
    for row in config.learners:
        name, own = ROWS[row]
        if "list_size" in overrides.get(row, {}):
            raise ValueError(f"params item {row}.list_size: list_size is the protocol's, the same for every ranker; "
                             "use --set list_size=... instead.")
        module = oltr.RANKERS[name]
        protocol = {"list_size": config.list_size, "learning_rate_decay": config.learning_rate_decay}
        if name in _COMPARISON_OPTION:
            protocol[_COMPARISON_OPTION[name]] = config.comparisons
            protocol["outcome_samples"] = config.outcome_samples
        protocol = {k: v for k, v in protocol.items() if k in module.OPTIONS or k in module.HPARAMS}
        settings = {**protocol, **own, **overrides.get(row, {})}
        if settings.get(_COMPARISON_OPTION.get(name)) == "team_draft" and "outcome_samples" not in overrides.get(row, {}):
            settings.pop("outcome_samples")  # team draft has no sampled outcome
        options, hparams = oltr.RANKERS.split(name, settings)
        oltr.RANKERS.build(name, **options).init(jax.random.key(0), 1, **hparams)  # range checks, on host
        out[row] = (name, options, hparams)
    return out


def relevant_queries(queries):
    """The queries with at least one relevant document (label > 0), as the authors' ``purge_test_set``."""
    best = np.maximum.reduceat(np.asarray(queries.labels), np.asarray(queries.offsets[:-1]))
    keep = np.flatnonzero(best > 0)
    if keep.size == 0:
        raise ValueError("test_queries=relevant: no test query has a relevant document; use test_queries=all.")
    return data.take_queries(queries, keep)


def _check(config: Config) -> dict[str, tuple[dict, dict]]:
    check_int("num_runs", config.num_runs, minimum=1)
    check_int("num_impressions", config.num_impressions, minimum=1)
    check_int("num_checkpoints", config.num_checkpoints, minimum=1)
    check_int("list_size", config.list_size, minimum=1, fix="show at least one document (10 in the paper)")
    check_number("discount", config.discount, low=0.0, high=1.0, high_inclusive=True)
    check_number("learning_rate_decay", config.learning_rate_decay, low=0.0, high=1.0, low_inclusive=False,
                 high_inclusive=True, fix="use a factor in (0, 1], 1 for a constant rate")
    check_choice("test_queries", config.test_queries, TEST_QUERIES)
    check_choice("stop_rule", config.stop_rule, STOP_RULES)
    check_choice("comparisons", config.comparisons, COMPARISONS)
    check_int("outcome_samples", config.outcome_samples, minimum=0,
              fix="use 10000 (the authors' code) or 0 for exact probabilistic outcomes")
    if not config.folds or any(f not in (1, 2, 3, 4, 5) for f in config.folds):
        raise ValueError(f"folds must be a non-empty subset of 1..5; got {config.folds}.")
    for field in ("folds", "learners", "click_models"):
        values = getattr(config, field)
        if not values:
            raise ValueError(f"{field} must name at least one entry.")
        if len(set(values)) != len(values):
            raise ValueError(f"{field}={','.join(map(str, values))} names an entry twice; its lanes would repeat "
                             "others exactly (name each once).")
    for name in config.click_models:
        cascade_model(name, config.num_grades or 3)
    settings = ranker_settings(config)
    _check_budget(config, settings)
    return settings


# Impressions per second of each row on a 2-core CPU (MQ2008, 375 lanes; BENCHMARKS.md, "oltr"), for
# the estimate announced before a run; rows not measured there get the slowest measured rate (MGD's).
_IMPRESSIONS_PER_S = {"dbgd": 54_215, "mgd": 5_349, "pdgd": 69_222}


def _check_budget(config: Config, settings: dict) -> None:
    """Refuses sizes that overflow the int32 counters or cannot fit in memory, before loading data.

    A lane (fold x click model x run) of one row holds its key, its offline/online curves and
    displayed-list record over the checkpoints, and per impression the displayed list (``k`` i32
    documents, ``k`` f32 clicks); a PDGD row also its ``[k, k]`` swap ratios (three f32 matrices
    per lane) and the static triple index ``i < r <= j`` (~k^3/6, three i32), built once per row.
    Rows run one after another, so one row's arrays count. ``list_size`` is checked with one run per
    lane (the largest that fits then), ``num_runs`` with the list size given.
    """
    budget.check_int32("num_impressions", config.num_impressions, what="the impression counter")
    pdgd = any(name == "pdgd" for name, _, _ in settings.values())
    lanes_per_run = len(config.folds) * len(config.click_models)
    curve_points = min(config.num_checkpoints, config.num_impressions) + 1

    def arrays(num_runs: int, k: int) -> dict:
        lanes_per_row = lanes_per_run * num_runs
        return {"keys": lanes_per_row * 8, "curves": lanes_per_row * 3 * 4 * curve_points,
                "displayed lists": lanes_per_row * 8 * k,
                "PDGD swap ratios": lanes_per_row * 3 * 4 * k * k if pdgd else 0,
                "PDGD triple index": 3 * 4 * k * (k - 1) * (k + 1) // 6 if pdgd else 0}

    available = budget.available_bytes()
    need_one_run = sum(arrays(1, config.list_size).values())
    if need_one_run > available:  # cubic in k: the largest list size that fits one run, by bisection
        low, high = 0, config.list_size
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if sum(arrays(1, mid).values()) <= available else (low, mid - 1)
        budget.check_count("list_size", config.list_size, largest=low,
                           why=f"one run per lane would allocate {budget.format_bytes(need_one_run)} but "
                               f"{budget.format_bytes(available)} is available")
    fixed = arrays(0, config.list_size)["PDGD triple index"]
    budget.check_memory(arrays(config.num_runs, config.list_size), name="num_runs", value=config.num_runs,
                        per_unit=(need_one_run - fixed), available=available)
    per_row = lanes_per_run * config.num_runs * config.num_impressions
    seconds = sum(per_row / _IMPRESSIONS_PER_S.get(row, min(_IMPRESSIONS_PER_S.values())) for row in settings)
    budget.announce("oltr", work=per_row * len(settings), rate=per_row * len(settings) / seconds,
                    unit="impressions", note=f"{len(settings)} rows x {lanes_per_run * config.num_runs:,} lanes x "
                                             f"{config.num_impressions:,} impressions, each row at its measured rate")


def load_folds(config: Config):
    """``(name, source, {fold: (train, test)} ragged)``."""
    ds = letor_datasets.resolve(config.dataset, "oltr", single_file=True)
    return ds.name, ds.source, {k: letor_datasets.fold(ds, k, config.seed)[::2] for k in config.folds}


def protocol_folds(config: Config, folds: dict) -> dict:
    """``folds`` with each test part kept whole (``test_queries="all"``) or cut to its queries with a
    relevant document (``"relevant"``)."""
    if config.test_queries == "all":
        return folds
    return {k: (train, relevant_queries(test)) for k, (train, test) in folds.items()}


@register("oltr", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """The PDGD paper's rows: learning curves and final offline/online NDCG@10 (Tables 3–4, Fig. 2).

    Each row's lanes are one ``oltr.simulate_grid``, checkpointed under the run directory after
    every stretch between two offline evaluations: ``--resume`` continues with identical results.
    """
    ranker_config = _check(config)
    name, source, folds = load_folds(config)
    num_test = {k: int(test.num_queries) for k, (_, test) in folds.items()}
    folds = protocol_folds(config, folds)
    grades = config.num_grades
    if not grades:  # the smallest of Lerot's cascade tables (2, 3 or 5 grades) that covers the data's labels
        top = int(max(max(tr.labels.max(), te.labels.max()) for tr, te in folds.values()))
        grades = next((g for g in (2, 3, 5) if g > top), None)
        if grades is None:
            raise ValueError(f"the data's labels reach {top}; the cascade click models have tables for 2, 3 or 5 "
                             "grades (labels up to 4): pass data with such grades.")
    models = [cascade_model(m, grades) for m in config.click_models]
    model_stack = jax.tree.map(lambda *x: jnp.stack(x), *models)
    train, test, num_docs = oltr.stack_folds(folds, config.folds)
    checkpoints = oltr.log_checkpoints(config.num_impressions, config.num_checkpoints)
    keys = oltr.lane_keys(config.seed, config.folds, len(models), config.num_runs)
    lanes_per_learner = keys.size
    print(f"[oltr] {name}: {len(config.folds)} folds, train queries {[int(n) for n in train.num_queries]}, "
          f"L = {num_docs}, D = {train.features.shape[-1]}, {grades} grades; {lanes_per_learner} lanes x "
          f"{config.num_impressions:,} impressions per learner", flush=True)
    results, arrays, timing = {}, {"checkpoints": np.asarray(checkpoints)}, {}
    wall = time.perf_counter()
    for learner, (ranker_name, options, hparams) in ranker_config.items():
        ranker = oltr.RANKERS.build(ranker_name, **options)
        saved = lanes.Checkpoint(checkpoint_dir(run_dir), learner, {
            "learner": learner, "ranker": ranker_name, "options": options, "hparams": hparams,
            "checkpoints": list(checkpoints), "discount": config.discount, "stop_rule": config.stop_rule,
            "test_queries": config.test_queries})
        # A row resumed from its checkpoints did part of its work in an earlier process: no throughput.
        resumed = any(Path(checkpoint_dir(run_dir)).glob(f"{learner}-*.npz"))
        start = time.perf_counter()
        out = oltr.simulate_grid(keys, ranker, train, test, model_stack, checkpoints=checkpoints, hparams=hparams,
                                 discount=config.discount, stop_rule=config.stop_rule, checkpoint=saved,
                                 label=f"oltr {learner}")
        run_s = time.perf_counter() - start
        offline, online = np.asarray(out.offline), np.asarray(out.online)  # [F, M, R, C]
        arrays[f"{learner}__offline"], arrays[f"{learner}__online"] = offline, online
        arrays[f"{learner}__display"] = np.asarray(out.display)
        per_model = {}
        for m, model in enumerate(config.click_models):
            off, on = offline[:, m], online[:, m]  # [F, R, C]
            off_mean, off_ci = mean_ci(off, (0, 1))
            on_mean, on_ci = mean_ci(on[..., -1], (0, 1))
            per_model[model] = {
                "offline_mean": off_mean.round(5).tolist(),
                "offline_ci95": off_ci.round(5).tolist(),
                "final_offline": round(float(off_mean[-1]), 4),
                "final_offline_ci95": round(float(off_ci[-1]), 4),
                "final_online": round(float(on_mean), 2),
                "final_online_ci95": round(float(on_ci), 2),
                "final_offline_std": round(float(off[..., -1].std(ddof=1)) if off[..., -1].size > 1 else 0.0, 4),
                "final_online_std": round(float(on[..., -1].std(ddof=1)) if on[..., -1].size > 1 else 0.0, 2),
                "num_runs": int(off[..., -1].size),
            }
        impressions = lanes_per_learner * config.num_impressions
        timing[learner] = ({"wall_s": round(run_s, 2), "resumed": True} if resumed else
                           {"wall_s": round(run_s, 2), "impressions_per_s": round(impressions / run_s)})
        results[learner] = per_model
        print(f"[oltr] {learner}: offline " + " ".join(f"{m} {v['final_offline']:.4f}" for m, v in per_model.items())
              + " | online " + " ".join(f"{v['final_online']:.1f}" for v in per_model.values())
              + (f" (resumed, {run_s:.1f} s)" if resumed else
                 f" ({run_s:.1f} s with compilation, {impressions / run_s:,.0f} impressions/s)"), flush=True)
    total_s = time.perf_counter() - wall
    data.write_npz(Path(run_dir) / "arrays.npz", **arrays)
    ordering = {}  # compared on the unrounded means
    finals = {l: {k: arrays[f"{l}__{k}"][..., -1].mean(axis=(0, 2)) for k in ("offline", "online")} for l in results}
    others = [l for l in results if l != "pdgd"]  # the paper's claim: PDGD (linear) above every other row
    if "pdgd" in results and others:
        for m, model in enumerate(config.click_models):
            ordering[model] = {k: bool(all(finals["pdgd"][k][m] > finals[o][k][m] for o in others))
                               for k in ("offline", "online")}
    return {"dataset": name, "source": source, "folds": list(config.folds), "params": list(config.params),
            "num_runs": config.num_runs,
            "num_impressions": config.num_impressions, "num_grades": grades,
            "protocol": {"test_queries": config.test_queries, "stop_rule": config.stop_rule,
                         "comparisons": config.comparisons, "outcome_samples": config.outcome_samples,
                         "learning_rate_decay": config.learning_rate_decay,
                         "test_queries_kept": {str(k): [int(folds[k][1].num_queries), num_test[k]] for k in folds}},
            "settings": {l: {"ranker": r, "options": o, "hparams": h} for l, (r, o, h) in ranker_config.items()},
            "checkpoints": list(checkpoints), "click_models": list(config.click_models), "learners": results,
            "pdgd_best": ordering, "paper": analysis.PAPER,
            "timings": {"learners": timing, "total_s": round(total_s, 1)}}
