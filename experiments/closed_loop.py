"""Close the loop: a click model fitted to a log is the user of online learning to rank.

For each known cascade user (``jaxrank.clicks.cascade_model``: navigational, informational; the
published rule, no stop without a click, which is a DBN with ``γ = 1``):

1. a click log on the training queries of one fold (MQ2008 by default): ``num_sessions`` sessions,
   each a uniformly drawn query shown by a production ranker (scores = label + ``ranker_noise`` ·
   N(0, 1) per document, fixed per seed, top ``num_positions`` of a Plackett–Luce draw at
   ``temperature``; the logging of the ``click_models`` experiment), clicked by the true user
   (``jaxrank.click_models.generate_sessions``);
2. DBNs fitted to it by gradient (``jaxrank.click_models.fit_gradient``), one per entry of
   ``parametrizations``: attraction and satisfaction linear functions of the query–document
   features (``linear``: ``parametrization.features``, which predicts documents the log never showed,
   as the learner will show them) or CLAX's MLP of them (``mlp``), or per-pair tables (``tables``:
   unlogged pairs stay at the start, 0.5); ``γ`` a table;
3. PDGD (Oosterhuis & de Rijke, CIKM 2018; ``jaxrank.oltr``) learning from (a) the true user and
   (b) the fitted user (``jaxrank.clicks.fitted_user``): the same run keys, so run ``r`` of both
   starts from the same key (paired); offline NDCG@10 on the fold's test queries at log-spaced
   checkpoints.

The comparison is the paired difference (fitted − true) of each run's offline NDCG per checkpoint,
with its 95% Student t interval over the runs (``jaxrank.metrics.statistics``). The claim "a fitted
user drives PDGD as the true user does" holds when the paired difference's 95% interval contains 0
both at the last checkpoint and for the mean over the checkpoints (the area under the log-spaced
learning curve), and fails when either lies off 0. The fit is also reported: the held-out
log-likelihood per session of the fitted DBN next to the true user's (the true user as a DBN) on a
second log from the same logger, and the mean fitted ``α``, ``σ`` per grade next to the true ones.

Every run of every user is a lane (``oltr.simulate_grid`` on ``jaxrank.lanes``): one compiled program
per kind of user, checkpointed after every stretch between two evaluations, so ``--resume`` continues
a killed run with identical results (the logs and fits are recomputed from the seed, bit for bit).

Default: fold 1, 2 users, 100,000 sessions per log, linear and table DBNs, 16 paired runs of
10,000 impressions (a few minutes on 2 CPU cores). Larger: ``--set num_runs=125 --set
num_sessions=1000000 --set parametrizations=linear,mlp,tables`` (or ``fold=2`` ... for the other
folds, one fold a run).
"""

import dataclasses
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments.analysis import closed_loop as analysis
from experiments.common import letor_datasets
from experiments.common.registry import checkpoint_dir, register
from experiments.oltr import relevant_queries
from jaxrank import data, lanes, oltr
from jaxrank.click_models import CLICK_MODELS, fit_gradient, generate_sessions, metrics, parametrization
from jaxrank.click_models.dbn import DBNParams
from jaxrank.clicks import cascade_model, fitted_user
from jaxrank.metrics import statistics
from jaxrank.utils.checks import check_choice, check_distinct_choices, check_int, check_number

USERS = ("navigational", "informational")
PARAMETRIZATIONS = {"linear": (), "mlp": (16, 16), "tables": None}  # hidden widths; None: per-pair tables
NUM_GRADES = 3  # MQ2008's grades 0..2: Lerot's 3-grade cascade tables
_TRUE_GAMMA_LOGIT = 30.0  # γ = 1 in float32: the cascade user as a DBN


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder (MQ2008), an SVMlight file/folder, synthetic, auto
    fold: int = 1
    click_models: tuple[str, ...] = USERS  # the true cascade users (3-grade tables)
    num_sessions: int = 100_000  # sessions of each log (the fit's and the held-out one)
    num_positions: int = 10  # shown per session
    temperature: float = 1.0  # Plackett-Luce temperature of the logged rankings
    ranker_noise: float = 1.0  # production ranker: label + ranker_noise * N(0, 1)
    # The fitted DBNs, each a user: α, σ linear in the features, CLAX's MLP ("mlp", 16x16 ELU), per-pair "tables"
    parametrizations: tuple[str, ...] = ("linear", "tables")
    num_epochs: int = 20  # gradient fit (Adam)
    batch_size: int = 1024
    learning_rate: float = 0.05
    num_runs: int = 16  # paired PDGD runs per user
    num_impressions: int = 10_000
    num_checkpoints: int = 16  # log-spaced offline evaluations (plus impression 0)
    list_size: int = 10
    learning_rate_pdgd: float = 0.1  # PDGD's η (the authors' default)
    test_queries: str = "relevant"  # "relevant" (the PDGD authors') or "all"
    seed: int = 0


def _check(config: Config) -> None:
    check_int("fold", config.fold, minimum=1)
    if config.fold > 5:
        raise ValueError(f"fold must be in 1..5; got {config.fold}.")
    check_distinct_choices("click_models", config.click_models, USERS)
    check_int("num_sessions", config.num_sessions, minimum=1)
    check_int("num_positions", config.num_positions, minimum=1)
    check_number("temperature", config.temperature, low=0.0, low_inclusive=True)
    check_number("ranker_noise", config.ranker_noise, low=0.0, low_inclusive=True)
    check_distinct_choices("parametrizations", config.parametrizations, PARAMETRIZATIONS)
    check_int("num_epochs", config.num_epochs, minimum=1)
    check_int("batch_size", config.batch_size, minimum=1)
    check_number("learning_rate", config.learning_rate, low=0.0)
    check_int("num_runs", config.num_runs, minimum=2, fix="a paired interval needs at least 2 runs")
    check_int("num_impressions", config.num_impressions, minimum=1)
    check_int("num_checkpoints", config.num_checkpoints, minimum=1)
    check_int("list_size", config.list_size, minimum=1)
    check_number("learning_rate_pdgd", config.learning_rate_pdgd, low=0.0)
    check_choice("test_queries", config.test_queries, ("relevant", "all"))


def _logit(p) -> np.ndarray:
    p = np.asarray(p, np.float64)
    return np.log(p) - np.log1p(-p)


def _logs(config: Config, key, queries, name: str) -> list:
    """The fit's log and a held-out log of the true user ``name`` on the one-fold ``ClickQueries`` ``queries``."""
    key_ranker, key_log, key_held = jax.random.split(key, 3)
    scores = queries.labels + config.ranker_noise * jax.random.normal(key_ranker, queries.labels.shape)
    return [generate_sessions(k, queries, config.num_sessions, cascade_model(name, NUM_GRADES), scores=scores,
                              temperature=config.temperature, num_positions=config.num_positions)
            for k in (key_log, key_held)]


def _fit_user(config: Config, key, queries, name: str, logs: list, kind_name: str) -> tuple:
    """``(FittedUser, fit summary, seconds)``: a DBN (``kind_name`` parametrization) fitted to ``logs[0]``."""
    num_queries, num_docs, num_features = queries.features.shape
    features = queries.features.reshape(num_queries * num_docs, num_features)  # row q·L + d: the log's pair id
    model = CLICK_MODELS.build("dbn")
    hidden = PARAMETRIZATIONS[kind_name]
    kind = (parametrization.tables() if hidden is None else
            parametrization.features(("attraction", "satisfaction"), hidden=hidden))
    start = time.perf_counter()
    params = fit_gradient(key, logs[0], model, parametrization=kind,
                          features=None if hidden is None else features, num_epochs=config.num_epochs,
                          batch_size=config.batch_size, learning_rate=config.learning_rate, dtype=jnp.float32)
    params = jax.block_until_ready(params)
    fit_s = time.perf_counter() - start
    grades = np.clip(np.round(np.asarray(queries.labels)), 0, NUM_GRADES - 1).astype(int).reshape(-1)
    click, stop = (np.asarray(v, np.float64) for v in cascade_model(name, NUM_GRADES))
    truth = DBNParams(jnp.asarray(_logit(click[grades]), jnp.float32), jnp.asarray(_logit(stop[grades]), jnp.float32),
                      jnp.asarray(_TRUE_GAMMA_LOGIT, jnp.float32))
    user = fitted_user(model, params)  # document q·L + d of fold 0: oltr's id (f·Q + q)·L + d
    real = np.asarray(queries.mask).reshape(-1)
    shown = np.zeros(real.size, bool)
    shown[np.asarray(logs[0].pair)[np.asarray(logs[0].mask)]] = True
    alpha, sigma = np.asarray(user.attraction, np.float64), np.asarray(user.satisfaction, np.float64)
    per_grade = {str(g): {"documents": int(np.sum(real & (grades == g))),
                          "true_attraction": round(float(click[g]), 4), "true_satisfaction": round(float(stop[g]), 4),
                          "attraction": round(float(alpha[real & (grades == g)].mean()), 4),
                          "satisfaction": round(float(sigma[real & (grades == g)].mean()), 4)}
                 for g in range(NUM_GRADES) if np.any(real & (grades == g))}
    summary = {
        "held_out_log_likelihood": round(float(metrics.log_likelihood(model, params, logs[1])), 5),
        "true_log_likelihood": round(float(metrics.log_likelihood(model, truth, logs[1])), 5),
        "continuation": round(float(user.continuation), 4),
        "per_grade": per_grade,
        "documents_logged": int(np.sum(shown & real)),
        "documents": int(real.sum()),
        "clicks_per_session": round(float(np.asarray(logs[0].clicks).sum() / config.num_sessions), 4),
    }
    return user, summary, fit_s


def _paired(fitted: np.ndarray, true: np.ndarray) -> dict:
    """Paired comparison over runs (axis 0) of ``[R, C]`` offline curves."""
    diff = fitted - true
    mean, half = statistics.mean_ci(diff, 0)
    area_mean, area_half = statistics.mean_ci(diff.mean(axis=1), 0)
    final = statistics.paired_t_test(fitted[:, -1], true[:, -1])
    return {"diff_mean": mean.round(5).tolist(), "diff_ci95": half.round(5).tolist(),
            "covers_zero": int(np.sum(np.abs(mean) <= half)),
            "final_diff": round(float(mean[-1]), 5), "final_diff_ci95": round(float(half[-1]), 5),
            "final_p_value": None if np.isnan(final.p_value) else round(float(final.p_value), 4),
            "area_diff": round(float(area_mean), 5), "area_diff_ci95": round(float(area_half), 5)}


def _curve(offline: np.ndarray) -> dict:
    mean, half = statistics.mean_ci(offline, 0)
    return {"offline_mean": mean.round(5).tolist(), "offline_ci95": half.round(5).tolist(),
            "final_offline": round(float(mean[-1]), 4), "final_offline_ci95": round(float(half[-1]), 4)}


@register("closed_loop", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """PDGD driven by a DBN fitted to a cascade user's log against the true user: paired learning curves."""
    _check(config)
    ds = letor_datasets.resolve(config.dataset, "closed_loop", single_file=True)
    train, _, test = letor_datasets.fold(ds, config.fold, config.seed)
    if config.test_queries == "relevant":
        test = relevant_queries(test)
    top = int(max(np.max(train.labels), np.max(test.labels)))
    if top >= NUM_GRADES:
        raise ValueError(f"the data's labels reach {top}; the cascade users here have {NUM_GRADES} grades (0..2), as "
                         "MQ2008's.")
    train, test, num_docs = oltr.stack_folds({config.fold: (train, test)}, [config.fold])
    one_fold = jax.tree.map(lambda x: x[0], train)
    root = jax.random.key(config.seed)
    print(f"[closed_loop] {ds.name} fold {config.fold}: {int(train.num_queries[0])} train / "
          f"{int(test.num_queries[0])} test queries, L = {num_docs}, D = {train.features.shape[-1]}", flush=True)

    users, fits, timing = [], {}, {}
    for m, name in enumerate(config.click_models):
        key_user = jax.random.fold_in(jax.random.fold_in(root, 1), m)
        logs = _logs(config, key_user, one_fold, name)
        fits[name] = {}
        for kind in config.parametrizations:
            user, fits[name][kind], fit_s = _fit_user(config, jax.random.fold_in(key_user, 1), one_fold, name, logs,
                                                      kind)
            users.append(user)
            timing[f"fit_{name}_{kind}_s"] = round(fit_s, 2)
            f = fits[name][kind]
            print(f"[closed_loop] {name}: DBN ({kind}) held-out LL {f['held_out_log_likelihood']:.4f} (true user "
                  f"{f['true_log_likelihood']:.4f}), γ {f['continuation']:.3f}, fitted in {fit_s:.1f} s", flush=True)

    stack = lambda items: jax.tree.map(lambda *x: jnp.stack(x), *items)  # noqa: E731
    num_models, num_kinds = len(config.click_models), len(config.parametrizations)
    checkpoints = oltr.log_checkpoints(config.num_impressions, config.num_checkpoints)
    keys = oltr.lane_keys(config.seed, [config.fold], num_models, config.num_runs)  # [1, M, R]
    # Fitted user (m, p) runs with the true user m's keys: run r of both is a pair.
    groups = {"true": (stack([cascade_model(n, NUM_GRADES) for n in config.click_models]), keys),
              "fitted": (stack(users), jnp.repeat(keys, num_kinds, axis=1))}
    ranker = oltr.RANKERS.build("pdgd", list_size=config.list_size)
    hparams = {"learning_rate": config.learning_rate_pdgd}
    offline, arrays = {}, {"checkpoints": np.asarray(checkpoints)}
    for group, (click_models, group_keys) in groups.items():
        saved = lanes.Checkpoint(checkpoint_dir(run_dir), group, {
            "user": group, "click_models": list(config.click_models), "checkpoints": list(checkpoints),
            "parametrizations": list(config.parametrizations), "num_sessions": config.num_sessions})
        start = time.perf_counter()
        out = oltr.simulate_grid(group_keys, ranker, train, test, click_models, checkpoints=checkpoints,
                                 hparams=hparams, stop_rule="after_click", checkpoint=saved,
                                 label=f"closed_loop {group}")
        timing[f"pdgd_{group}_s"] = round(time.perf_counter() - start, 2)
        offline[group] = np.asarray(out.offline)[0]  # [M, R, C] true, [M·P, R, C] fitted
        arrays[f"{group}__offline"] = offline[group]
        arrays[f"{group}__online"] = np.asarray(out.online)[0]
    data.write_npz(Path(run_dir) / "arrays.npz", **arrays)

    results = {}
    for m, name in enumerate(config.click_models):
        true = offline["true"][m]
        fitted = {kind: offline["fitted"][m * num_kinds + p] for p, kind in enumerate(config.parametrizations)}
        results[name] = {"true": _curve(true), "fitted": {k: _curve(v) for k, v in fitted.items()},
                         "paired": {k: _paired(v, true) for k, v in fitted.items()}, "fit": fits[name]}
        for kind in config.parametrizations:
            p = results[name]["paired"][kind]
            print(f"[closed_loop] {name}: final offline NDCG@10 true {results[name]['true']['final_offline']:.4f}, "
                  f"fitted ({kind}) {results[name]['fitted'][kind]['final_offline']:.4f}, paired diff "
                  f"{p['final_diff']:+.4f} ± {p['final_diff_ci95']:.4f}", flush=True)
    return {"dataset": ds.name, "source": ds.source, "fold": config.fold, "click_models": list(config.click_models),
            "parametrizations": list(config.parametrizations), "num_sessions": config.num_sessions,
            "num_epochs": config.num_epochs, "num_runs": config.num_runs, "num_impressions": config.num_impressions,
            "checkpoints": list(checkpoints), "test_queries": config.test_queries, "users": results,
            "timings": timing}
