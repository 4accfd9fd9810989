"""Online learning to rank from simulated clicks: DBGD, MGD and PDGD under the protocol of
Oosterhuis & de Rijke (CIKM 2018, §6): runs × folds × click models (perfect, navigational,
informational cascade users), 10,000 impressions per run, offline NDCG@10 on the test fold at
log-spaced checkpoints and the discounted cumulative NDCG@10 (γ = 0.9995) of the displayed lists.

Every (fold, click model, run) of one learner is a lane of ONE compiled program
(``jaxrank.oltr.simulate_grid``). Data: a LETOR folder (``Fold1..Fold5``, default MQ2008), a single
SVMlight file or a folder holding one (e.g. the MSLR-WEB subset: its queries are split into five
parts rotated as LETOR folds, features normalised per query), or ``synthetic``; ``auto`` uses MQ2008
when present and synthetic data otherwise, saying so."""

import dataclasses
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments import letor_datasets
from experiments.analysis import oltr as analysis
from experiments.registry import register
from jaxrank import data, oltr
from jaxrank.clicks import cascade_model
from jaxrank.utils.checks import check_choice, check_int, check_number

LEARNERS = ("dbgd", "mgd", "pdgd")
COMPARISONS = ("team_draft", "probabilistic")


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder (MQ2008), an SVMlight file/folder (MSLR-WEB_Fold1_subset), synthetic, auto
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    click_models: tuple[str, ...] = ("perfect", "navigational", "informational")
    num_grades: int = 0  # grades of the click models; 0: from the data (3 for MQ2008, 5 for MSLR)
    learners: tuple[str, ...] = LEARNERS
    num_runs: int = 25
    num_impressions: int = 10_000
    num_checkpoints: int = 16  # log-spaced offline evaluations (plus impression 0)
    list_size: int = 10
    comparison: str = "team_draft"  # DBGD interleaving / MGD multileaving (the paper: probabilistic, see README)
    dbgd_learning_rate: float = 0.01  # η, δ of DBGD/MGD and PDGD's η: the authors' defaults
    dbgd_delta: float = 1.0
    mgd_learning_rate: float = 0.01
    mgd_delta: float = 1.0
    mgd_candidates: int = 49
    pdgd_learning_rate: float = 0.1
    learning_rate_decay: float = 0.9999977  # per update, the authors' scripts/CIKM2018.py
    tau: float = 3.0
    discount: float = oltr.ONLINE_DISCOUNT
    seed: int = 0


def make_ranker(name: str, config: Config) -> oltr.OnlineRanker:
    """The learner ``name`` with the config's hyperparameters (raises ValueError on bad ones)."""
    check_choice("learner", name, LEARNERS)
    common = dict(learning_rate_decay=config.learning_rate_decay, list_size=config.list_size)
    if name == "dbgd":
        return oltr.dbgd(config.dbgd_learning_rate, config.dbgd_delta, interleaving=config.comparison,
                         tau=config.tau, **common)
    if name == "mgd":
        return oltr.mgd(config.mgd_learning_rate, config.mgd_delta, num_candidates=config.mgd_candidates,
                        multileaving=config.comparison, tau=config.tau, **common)
    return oltr.pdgd(config.pdgd_learning_rate, **common)


def _check(config: Config) -> None:
    check_int("num_runs", config.num_runs, minimum=1)
    check_int("num_impressions", config.num_impressions, minimum=1)
    check_int("num_checkpoints", config.num_checkpoints, minimum=1)
    check_int("list_size", config.list_size, minimum=1, fix="show at least one document (10 in the paper)")
    check_choice("comparison", config.comparison, COMPARISONS)
    check_number("discount", config.discount, low=0.0, high=1.0, high_inclusive=True)
    if not config.folds or any(f not in (1, 2, 3, 4, 5) for f in config.folds):
        raise ValueError(f"folds must be a non-empty subset of 1..5; got {config.folds}.")
    if not config.learners or not config.click_models:
        raise ValueError("learners and click_models must each name at least one entry.")
    for name in config.learners:
        make_ranker(name, config)
    for name in config.click_models:
        cascade_model(name, config.num_grades or 3)


def _split_parts(queries, seed: int):
    """Five query parts of a single file (shuffled with ``seed``), rotated as LETOR folds."""
    order = np.asarray(jax.random.permutation(jax.random.key(seed), queries.num_queries))
    parts = [data.take_queries(queries, np.sort(p)) for p in np.array_split(order, 5)]
    return lambda k: (data.concat_queries([parts[(k - 1 + i) % 5] for i in range(3)]), parts[(k + 2) % 5],
                      parts[(k + 3) % 5])


def load_folds(config: Config):
    """``(name, source, {fold: (train, test)} ragged)``."""
    if config.dataset not in ("auto", "synthetic"):
        path = data.resolve(config.dataset)
        if not (path / "Fold1").is_dir():
            files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file()
                                                            and p.suffix in (".txt", ".gz"))
            if len(files) != 1:
                raise FileNotFoundError(f"{path}: expected a LETOR folder with Fold1..Fold5 or one SVMlight file.")
            queries = data.load_queries(files[0], normalize=True)
            if queries.num_queries < 5:  # each of the five parts is one fold's test queries
                raise ValueError(f"{files[0]} holds {queries.num_queries} queries; splitting one file into 5 folds needs "
                                 "at least 5: pass a larger file, or a LETOR folder with Fold1..Fold5.")
            fold = _split_parts(queries, config.seed)
            return path.name, str(files[0]), {k: fold(k)[::2] for k in config.folds}
    ds = letor_datasets.resolve(config.dataset, "oltr")
    return ds.name, ds.source, {k: letor_datasets.fold(ds, k, config.seed)[::2] for k in config.folds}


def stack_folds(folds: dict, fold_ids) -> tuple:
    """``(train, test, N)``: the folds ``fold_ids`` of ``{fold: (train, test)}`` padded to one list
    size ``N`` (a bucket size) and stacked ``[F, ...]`` as ``oltr.stack_queries`` expects."""
    num_docs = data.bucket_size(int(max(np.diff(q.offsets).max() for pair in folds.values() for q in pair)))

    def stack(part):
        return oltr.stack_queries([oltr.click_queries(data.pad_queries(folds[k][part], num_docs)) for k in fold_ids])

    return stack(0), stack(1), num_docs


def lane_keys(seed: int, fold_ids, num_models: int, num_runs: int) -> jax.Array:
    """``[F, M, R]`` keys: lane (fold f, click model m, run r) uses ``fold_in(fold_in(fold_in(key(seed), f), m), r)``."""
    root = jax.random.key(seed)
    runs, models = jnp.arange(num_runs), jnp.arange(num_models)
    one = lambda f, m, r: jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(root, f), m), r)  # noqa: E731
    return jax.vmap(lambda f: jax.vmap(lambda m: jax.vmap(lambda r: one(f, m, r))(runs))(models))(
        jnp.asarray(fold_ids))


def timed_grid(ranker, keys, train, test, models, *, checkpoints, discount=oltr.ONLINE_DISCOUNT) -> tuple:
    """``oltr.simulate_grid`` compiled once and run: ``(output, compile seconds, run seconds)``."""
    program = jax.jit(lambda k, tr, te, cm: oltr.simulate_grid(ranker, k, tr, te, cm, checkpoints=checkpoints,
                                                               discount=discount))
    start = time.perf_counter()
    compiled = program.lower(keys, train, test, models).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(keys, train, test, models))
    return out, compile_s, time.perf_counter() - start


def _ci95(values: np.ndarray, axis) -> np.ndarray:
    n = np.prod([values.shape[a] for a in axis])
    return 1.96 * values.std(axis=axis, ddof=1) / math.sqrt(n) if n > 1 else np.zeros(values.shape[-1:])


@register("oltr", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """DBGD vs MGD vs PDGD learning curves and final offline/online NDCG@10 (PDGD paper, §6-7)."""
    _check(config)
    name, source, folds = load_folds(config)
    grades = config.num_grades or int(max(max(tr.labels.max(), te.labels.max()) for tr, te in folds.values())) + 1
    grades = {2: 2, 3: 3}.get(grades, 5)
    models = [cascade_model(m, grades) for m in config.click_models]
    model_stack = jax.tree.map(lambda *x: jnp.stack(x), *models)
    train, test, num_docs = stack_folds(folds, config.folds)
    checkpoints = oltr.log_checkpoints(config.num_impressions, config.num_checkpoints)
    keys = lane_keys(config.seed, config.folds, len(models), config.num_runs)
    lanes = len(config.folds) * len(models) * config.num_runs
    print(f"[oltr] {name}: {len(config.folds)} folds, train queries {[int(n) for n in train.num_queries]}, "
          f"N = {num_docs}, D = {train.features.shape[-1]}, {grades} grades; {lanes} lanes x "
          f"{config.num_impressions:,} impressions per learner", flush=True)
    results, arrays, timing = {}, {"checkpoints": np.asarray(checkpoints)}, {}
    wall = time.perf_counter()
    for learner in config.learners:
        ranker = make_ranker(learner, config)
        out, compile_s, run_s = timed_grid(ranker, keys, train, test, model_stack, checkpoints=checkpoints,
                                           discount=config.discount)
        offline, online = np.asarray(out.offline), np.asarray(out.online)  # [F, M, R, C]
        arrays[f"{learner}__offline"], arrays[f"{learner}__online"] = offline, online
        arrays[f"{learner}__display"] = np.asarray(out.display)
        per_model = {}
        for m, model in enumerate(config.click_models):
            off, on = offline[:, m], online[:, m]  # [F, R, C]
            per_model[model] = {
                "offline_mean": off.mean((0, 1)).round(5).tolist(),
                "offline_ci95": _ci95(off, (0, 1)).round(5).tolist(),
                "final_offline": round(float(off[..., -1].mean()), 4),
                "final_offline_ci95": round(float(_ci95(off[..., -1:], (0, 1))[0]), 4),
                "final_online": round(float(on[..., -1].mean()), 2),
                "final_online_ci95": round(float(_ci95(on[..., -1:], (0, 1))[0]), 2),
            }
        impressions = lanes * config.num_impressions
        timing[learner] = {"compile_s": round(compile_s, 2), "run_s": round(run_s, 2),
                           "impressions_per_s": round(impressions / run_s)}
        results[learner] = per_model
        print(f"[oltr] {learner}: offline " + " ".join(f"{m} {v['final_offline']:.4f}" for m, v in per_model.items())
              + " | online " + " ".join(f"{v['final_online']:.1f}" for v in per_model.values())
              + f" ({run_s:.1f} s + {compile_s:.1f} s compile, {impressions / run_s:,.0f} impressions/s)", flush=True)
    total_s = time.perf_counter() - wall
    data.write_npz(Path(run_dir) / "arrays.npz", **arrays)
    ordering = {}  # compared on the unrounded means
    finals = {l: {k: arrays[f"{l}__{k}"][..., -1].mean(axis=(0, 2)) for k in ("offline", "online")} for l in results}
    others = [l for l in results if l != "pdgd"]
    if "pdgd" in results and others:
        for m, model in enumerate(config.click_models):
            ordering[model] = {k: bool(all(finals["pdgd"][k][m] > finals[o][k][m] for o in others))
                               for k in ("offline", "online")}
    return {"dataset": name, "source": source, "folds": list(config.folds), "num_runs": config.num_runs,
            "num_impressions": config.num_impressions, "num_grades": grades, "comparison": config.comparison,
            "checkpoints": list(checkpoints), "click_models": list(config.click_models), "learners": results,
            "pdgd_best": ordering, "paper": analysis.PAPER,
            "timings": {"learners": timing, "total_s": round(total_s, 1)}}
