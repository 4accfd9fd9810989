"""Click models fitted to simulated and real session logs: the ten models of ``jaxrank.click_models``
compared by test log-likelihood and perplexity (Chuklin, Markov, de Rijke, *Click Models for Web
Search*, 2015, ch. 5; Grotov et al., CLEF 2015; CLAX, Hager et al., 2025), with 95% CIs over seeds.

Simulated logs: the queries of a LETOR collection (MQ2008 by default, the MSLR-WEB subset, any
SVMlight file, or synthetic) are shown by a production ranker (scores = label + ``ranker_noise`` ·
N(0, 1) per document, fixed per seed, shown as a Plackett–Luce draw at ``temperature``, top
``num_positions``) and clicked by each of jaxrank's simulators: the cascade users of
``jaxrank.clicks.cascade_model`` (perfect, navigational, informational) and a position-based
user (``pbm``: examination ``(1/rank)^pbm_eta``, attraction ``ε− + (ε+ − ε−)(2^g − 1)/(2^{G−1} − 1)``
with ``pbm_attraction = (ε−, ε+)``; the PBM of Ai et al., SIGIR 2018, as ULTRA's
``pbm_0.1_1.0_4_1.0.json``). Each seed draws its ranker noise and its ``num_sessions`` sessions;
the first ``1 - test_fraction`` of them train, the rest test (sessions are i.i.d.).

Per model: test log-likelihood (PyClick's per-session mean), perplexity (unconditional) and
conditional perplexity with their per-rank values, relevance prediction (NDCG@10 of each query's
documents ordered by the fitted relevance against the editorial labels, over the queries the
training sessions show that have a relevant document, next to the production ranker's), the
recovered position bias (PBM's ``ε_r``, UBM's ``γ_{r,r+1}`` with no click above, both relative to
rank 1) next to the simulator's marginal examination ``P(E_r)``, and wall times. ``log=PATH`` fits a
Yandex-format click log instead (``jaxrank.data.read_yandex``; each seed a random train/test split;
no labels, so no relevance or position-bias truth).

Every (simulator, seed) is a lane (``jaxrank.click_models.study.fit_lanes``, per-lane logs): one
compiled program per model and estimator, checkpointed, so ``--resume`` continues a killed run.
Estimators: ``em`` (PyClick's EM / counting, 50 iterations) and ``gradient`` (Adam on the same
likelihood, ``jaxrank.click_models.fit_gradient``). ``conventions=pyclick`` scores the conditional
metrics as PyClick does (its CM rule; ``jaxrank.click_models.metrics``), ``jaxrank`` (default) by each
model's own conditional probabilities.
"""

import dataclasses
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments.analysis import click_models as analysis
from experiments.common import budget, letor_datasets
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data, lanes
from jaxrank.click_models import CLICK_MODELS, generate_logs, generate_sessions, metrics, probabilities, study
from jaxrank.click_models import em as em_lib
from jaxrank.click_models import gradient
from jaxrank.click_models.examination import cascade_examination
from jaxrank.clicks import CASCADE_GRADES, cascade_model, make_position_based_model
from jaxrank.data.sessions import take_sessions
from jaxrank.metrics import ndcg
from jaxrank.metrics.statistics import mean_ci
from jaxrank.utils.checks import check_choice, check_int, check_number

SIMULATORS = ("perfect", "navigational", "informational", "pbm")
MODELS = tuple(CLICK_MODELS)
ESTIMATORS = study.ESTIMATORS
LOG_SIMULATOR = "log"  # the row name of a real log's results


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # LETOR folder (MQ2008), an SVMlight file/folder (MSLR-WEB_Fold1_subset), synthetic, auto
    log: str = ""  # a Yandex WSCD-format click log (a path): fitted instead of simulated logs
    train_log: str = ""  # PyClick's protocol: fit every session of this click log (any read_click_log format)
    test_log: str = ""  # ... and score the sessions of this one whose query the training log holds
    unseen: str = "prior"  # test pairs the training log never showed: "prior" (PyClick's 0.5) or "global"
    conventions: str = "jaxrank"  # conditional LL / perplexity: each model's own, or "pyclick" (its CM rule)
    simulators: tuple[str, ...] = SIMULATORS
    models: tuple[str, ...] = MODELS
    estimators: tuple[str, ...] = ("em",)  # add "gradient" for Adam fits of the same models
    num_sessions: int = 10_000  # per seed (train + test); a real log: its first num_sessions (0: all)
    test_fraction: float = 0.25
    num_seeds: int = 3
    num_positions: int = 10
    num_iterations: int = 50  # EM (PyClick's 50)
    num_epochs: int = 50  # gradient (CLAX's Trainer)
    batch_size: int = 1024  # gradient: sessions per Adam step
    learning_rate: float = 0.05  # gradient
    gradient_prior: tuple[float, ...] = (1.0, 2.0)  # gradient: Beta pseudo-counts (a, b) per probability, EM's; () none
    validation: float = 0.0  # gradient: share of the training sessions held out to pick the best epoch
    temperature: float = 1.0  # Plackett-Luce temperature of the displayed rankings
    ranker_noise: float = 1.0  # production ranker: label + ranker_noise * N(0, 1)
    pbm_eta: float = 1.0  # the pbm simulator's examination (1 / rank)^eta
    pbm_attraction: tuple[float, ...] = (0.1, 1.0)  # the pbm simulator's (eps-, eps+)
    seed: int = 0


def _check(config: Config) -> None:
    for field, values, choices in (("simulators", config.simulators, SIMULATORS), ("models", config.models, MODELS),
                                   ("estimators", config.estimators, ESTIMATORS)):
        if not values:
            raise ValueError(f"{field} must name at least one of {', '.join(choices)}.")
        for value in values:
            check_choice(field, value, choices)
        if len(set(values)) != len(values):
            raise ValueError(f"{field}={','.join(values)} names an entry twice.")
    if bool(config.train_log) != bool(config.test_log):
        raise ValueError(f"train_log={config.train_log!r} and test_log={config.test_log!r}: give both or neither.")
    if config.train_log and config.log:
        raise ValueError("log= (random splits of one log) and train_log=/test_log= (two logs) exclude each other.")
    check_choice("unseen", config.unseen, study.UNSEEN_RULES)
    check_choice("conventions", config.conventions, metrics.CONVENTIONS)
    check_int("num_sessions", config.num_sessions, minimum=0 if config.log or config.train_log else 2)
    check_int("num_seeds", config.num_seeds, minimum=1)
    check_int("num_positions", config.num_positions, minimum=1)
    check_int("num_iterations", config.num_iterations, minimum=1)
    check_int("num_epochs", config.num_epochs, minimum=1)
    check_int("batch_size", config.batch_size, minimum=1)
    check_number("test_fraction", config.test_fraction, low=0.0, high=1.0, fix="a share of the sessions held out")
    budget.check_learning_rate("learning_rate", config.learning_rate)
    gradient.check_options(num_epochs=1, batch_size=None, optimizer="adam", schedule="constant",
                           prior=config.gradient_prior or None, validation=config.validation)
    check_number("temperature", config.temperature, low=0.0, low_inclusive=True)
    check_number("ranker_noise", config.ranker_noise, low=0.0, low_inclusive=True)
    check_number("pbm_eta", config.pbm_eta, low=0.0, low_inclusive=True)
    if len(config.pbm_attraction) != 2 or not 0.0 <= config.pbm_attraction[0] <= config.pbm_attraction[1] <= 1.0:
        raise ValueError(f"pbm_attraction must be two probabilities eps- <= eps+; got {config.pbm_attraction}.")


# Bytes a run holds per session of one lane: the train and test logs (pair, doc i32; clicks, mask bool;
# query i32), once on the host and once on the device.
_LOG_BYTES_PER_POSITION, _LOG_BYTES_PER_SESSION, _LOG_COPIES = 10, 4, 2
_ESTEP_FLOATS = 40  # f32 [chunk, K] temporaries of one E-step chunk (DBN's, the largest; benchmarks/click_models.py)
_RATE = 2e6  # session-iterations/s: EM on 2 CPU cores (DBN 3.6e6, CCM about 1e6; benchmarks/click_models.py)
_YANDEX_BYTES_PER_SESSION = 40  # the shortest WSCD query line: a real log holds at most file bytes / 40 sessions


def _num_lanes(config: Config) -> int:
    return config.num_seeds * (1 if config.log or config.train_log else len(config.simulators))


def _num_sessions(config: Config) -> int:
    if config.train_log:
        paths = [Path(p).expanduser() for p in (config.train_log, config.test_log)]
        return sum(p.stat().st_size // _YANDEX_BYTES_PER_SESSION for p in paths if p.is_file())
    if config.log and not config.num_sessions:
        path = Path(config.log).expanduser()
        return path.stat().st_size // _YANDEX_BYTES_PER_SESSION if path.is_file() else 0
    return config.num_sessions


def memory(config: Config) -> dict:
    """``{what: bytes}`` of the arrays a run holds at once (every lane of one model's fit)."""
    lanes_, sessions, k = _num_lanes(config), _num_sessions(config), config.num_positions
    chunk = min(sessions, em_lib.DEFAULT_CHUNK_SIZE)
    out = {"session logs": float(lanes_) * sessions * (_LOG_BYTES_PER_POSITION * k + _LOG_BYTES_PER_SESSION)
           * _LOG_COPIES,
           "E-step scratch": float(lanes_) * chunk * k * 4 * _ESTEP_FLOATS}
    if "ubm" in config.models:  # UBM's [K, K] examination: params and two statistics per lane
        out["UBM tables"] = float(lanes_) * k * k * 4 * 3
    out["step table"] = 4.0 * max(config.num_iterations, config.num_epochs)  # the lanes' chunks, i32 per step
    return out


_SIZES = ("num_sessions", "num_seeds", "num_positions", "num_iterations", "num_epochs")


def _blamed(config: Config, fields) -> str:
    """The field of ``fields`` set furthest above its default (the first when none is)."""
    defaults = Config()
    ratio = lambda f: getattr(config, f) / max(getattr(defaults, f), 1)  # noqa: E731
    return max(fields, key=ratio) if max(map(ratio, fields)) > 1 else fields[0]


def check_budget(config: Config, available=None) -> float:
    """Refuses a config whose integers overflow int32 or whose arrays do not fit in memory, with one
    line naming the value and the largest that fits; prints and returns the time estimate (s)."""
    for name in ("num_iterations", "num_epochs"):
        budget.check_int32(name, getattr(config, name))
    available = budget.available_bytes() if available is None else available
    need = memory(config)
    if sum(need.values()) > available:
        blamed = _blamed(config, _SIZES)
        low, high = 0, getattr(config, blamed)
        while low < high:  # the largest value of `blamed` whose arrays fit
            mid = (low + high + 1) // 2
            fits = sum(memory(dataclasses.replace(config, **{blamed: mid})).values()) <= available
            low, high = (mid, high) if fits else (low, mid - 1)
        parts = ", ".join(f"{k} {budget.format_bytes(v)}" for k, v in sorted(need.items(), key=lambda kv: -kv[1]))
        budget.check_count(blamed, getattr(config, blamed), largest=low,
                           why=f"the run would hold {budget.format_bytes(sum(need.values()))} ({parts}) but "
                               f"{budget.format_bytes(available)} is available")
    sessions = _num_sessions(config)
    if _blamed(config, ("num_sessions", "num_positions")) == "num_positions":
        budget.check_int32("num_positions", config.num_positions, factor=max(sessions, 1),
                           what="sessions x positions")
    else:
        budget.check_int32("num_sessions", sessions, factor=config.num_positions, what="sessions x positions")
    budget.check_int32("num_seeds", config.num_seeds, factor=_num_lanes(config) // config.num_seeds,
                       what="lanes (simulators x seeds)")
    train = sessions * (1.0 - config.test_fraction)
    steps = sum(config.num_iterations if e == "em" else config.num_epochs for e in config.estimators)
    work = _num_lanes(config) * len(config.models) * steps * train
    return budget.announce("click_models", work=work, rate=_RATE, unit="session-iterations",
                           note=f"{_num_lanes(config)} lanes x {len(config.models)} models")


def load_queries(config: Config):
    """``(name, source, QueryBatch)``: every query of the collection, padded."""
    if config.dataset in ("auto", "synthetic") or (data.resolve(config.dataset) / "Fold1").is_dir():
        ds = letor_datasets.resolve(config.dataset, "click_models")
        queries = letor_datasets.all_queries(ds, config.seed)
        name, source = ds.name, ds.source
    else:
        path = data.resolve(config.dataset)
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.suffix in (".txt", ".gz"))
        if len(files) != 1:
            raise FileNotFoundError(f"{path}: expected a LETOR folder with Fold1..Fold5 or one SVMlight file.")
        queries = data.load_queries(files[0])
        name, source = path.name, str(files[0])
    return name, source, data.pad_queries(queries)


def num_grades(queries) -> int:
    """The click simulators' grades: the smallest table size (2, 3 or 5) that holds the labels."""
    top = int(np.asarray(queries.labels).max()) + 1
    return min([g for g in CASCADE_GRADES if g >= top], default=5)


def simulator(config: Config, name: str, grades: int):
    if name != "pbm":
        return cascade_model(name, grades)
    low, high = config.pbm_attraction
    gain = (2.0 ** np.arange(grades) - 1.0) / (2.0 ** (grades - 1) - 1.0)
    exam = (1.0 / np.arange(1, config.num_positions + 1)) ** config.pbm_eta
    return make_position_based_model(exam, low + (high - low) * gain)


def production_scores(config: Config, queries, seed: int):
    """``[Q, L]`` the production ranker of seed ``seed``: label + noise."""
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), seed), 0)
    return queries.labels + config.ranker_noise * jax.random.normal(key, queries.labels.shape)


def _session_key(config: Config, name: str, seed):
    return jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), seed), 1 + SIMULATORS.index(name))


def _generate(config: Config, queries, name: str, grades: int, key, scores):
    return generate_sessions(key, queries, config.num_sessions, simulator(config, name, grades), scores=scores,
                             temperature=config.temperature, num_positions=config.num_positions)


def simulate(config: Config, queries, name: str, seed: int, grades: int):
    """``(train, test)`` logs of simulator ``name`` and seed ``seed`` (one lane of ``simulate_seeds``)."""
    log = _generate(config, queries, name, grades, _session_key(config, name, seed),
                    production_scores(config, queries, seed))
    return split(config, jax.tree.map(np.asarray, log))


def simulate_seeds(config: Config, queries, name: str, grades: int) -> list:
    """``[(train, test)]`` of every seed of simulator ``name``, generated as one program vmapped over
    the seeds (each lane's bytes are ``simulate``'s)."""
    seeds = range(config.num_seeds)
    keys = jnp.stack([_session_key(config, name, s) for s in seeds])
    scores = jnp.stack([production_scores(config, queries, s) for s in seeds])
    logs = jax.tree.map(np.asarray, generate_logs(keys, queries, config.num_sessions, simulator(config, name, grades),
                                                  scores=scores, temperature=config.temperature,
                                                  num_positions=config.num_positions))
    return [split(config, jax.tree.map(lambda x, s=s: x[s], logs)) for s in range(config.num_seeds)]


def num_train(config: Config, num_sessions: int) -> int:
    """Training sessions of a log of ``num_sessions``: the first ``1 - test_fraction``."""
    train = int(round(num_sessions * (1.0 - config.test_fraction)))
    if not 0 < train < num_sessions:
        raise ValueError(f"num_sessions={num_sessions} with test_fraction={config.test_fraction} leaves "
                         f"{train} training sessions; both parts need at least one.")
    return train


def split(config: Config, log):
    num_train_ = num_train(config, log.pair.shape[0])
    return take_sessions(log, slice(0, num_train_)), take_sessions(log, slice(num_train_, None))


def true_examination(config: Config, name: str, grades: int, labels, log) -> np.ndarray:
    """``[K]`` the simulator's marginal ``P(E_r)`` averaged over ``log``'s sessions (float64)."""
    k = config.num_positions
    if name == "pbm":
        return (1.0 / np.arange(1, k + 1)) ** config.pbm_eta
    grade = np.clip(np.round(labels[np.asarray(log.query)[:, None], np.asarray(log.doc)]), 0, grades - 1).astype(int)
    return cascade_examination(cascade_model(name, grades), grade, log.mask)


def _relevance_ndcg(relevance, labels, mask, train_query, num_queries) -> np.ndarray:
    """``[N]`` NDCG@10 of each lane's fitted relevance ``[N, Q, L]`` over the queries its training
    sessions show that have a relevant document."""
    lanes_ = relevance.shape[0]
    seen = np.zeros((lanes_, num_queries), bool)
    seen[np.arange(lanes_)[:, None], np.asarray(train_query)] = True
    seen &= np.asarray(labels).max(1) > 0
    shape = np.shape(relevance)
    per_query = np.asarray(ndcg(jnp.asarray(relevance), jnp.broadcast_to(labels, shape),
                                where=jnp.broadcast_to(mask, shape), topn=10, reduce_fn=None))
    return np.where(seen, per_query, 0.0).sum(1) / np.maximum(seen.sum(1), 1)


def _ndcg_of(scores, labels, mask, train_query, num_queries):
    seen = np.zeros(num_queries, bool)
    seen[np.asarray(train_query)] = True
    seen &= np.asarray(labels).max(1) > 0
    per_query = np.asarray(ndcg(jnp.asarray(scores), labels, where=mask, topn=10, reduce_fn=None))
    return float(per_query[seen].mean()) if seen.any() else float("nan")


def _summary(values: np.ndarray, rows: list[str], num_seeds: int) -> dict:
    """``{row: [mean, 95% CI half-width]}`` of lane values ``[R·num_seeds]`` (rows major)."""
    values = np.asarray(values, np.float64).reshape(len(rows), num_seeds, *np.shape(values)[1:])
    mean, half = mean_ci(values, axis=1)

    def plain(x):  # JSON: NaN (a rank no test session shows) as null
        x = np.round(x, 6)
        return None if np.ndim(x) == 0 and np.isnan(x) else (float(x) if np.ndim(x) == 0 else
                                                           [None if np.isnan(v) else float(v) for v in x])

    return {row: [plain(mean[i]), plain(half[i])] for i, row in enumerate(rows)}


def _real_log(config: Config):
    path = Path(config.log).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"log={config.log}: no such file (a Yandex WSCD-format click log).")
    log, ids = data.read_yandex(path, num_positions=config.num_positions, max_sessions=config.num_sessions or None)
    print(f"[click_models] {path}: {log.pair.shape[0]:,} sessions, {int(log.num_queries):,} queries, "
          f"{int(log.num_pairs):,} pairs ({ids.num_truncated} pages cut to {config.num_positions}, {ids.num_empty} "
          f"empty dropped, {ids.num_ignored_clicks} clicks ignored)", flush=True)
    return path, log


def _train_test_logs(config: Config):
    """PyClick's protocol: ``(train, test, summary)``, every session of ``train_log`` (its first
    ``num_sessions`` if set) and the sessions of ``test_log`` whose query the training log holds, read
    into the training log's ids (``jaxrank.data.read_click_log``); pairs the training log never
    showed get ids from ``info.known_pairs`` on and are counted."""
    paths = [Path(p).expanduser() for p in (config.train_log, config.test_log)]
    for name, path in zip(("train_log", "test_log"), paths):
        if not path.is_file():
            raise FileNotFoundError(f"{name}={path}: no such file (a click log).")
    train, vocab, _ = data.read_click_log(paths[0], num_positions=config.num_positions,
                                          max_sessions=config.num_sessions or None)
    test, vocab, info = data.read_click_log(paths[1], vocabulary=vocab, num_positions=config.num_positions)
    kept = np.flatnonzero(np.asarray(test.query) < info.known_queries)
    if kept.size == 0:
        raise ValueError(f"test_log={paths[1]}: none of its {info.num_sessions:,} sessions has a query of "
                         f"train_log={paths[0]}.")
    test = take_sessions(test, kept)
    unseen = np.asarray(test.mask) & (np.asarray(test.pair) >= info.known_pairs)
    sizes = dict(num_pairs=np.asarray(vocab.num_pairs, np.int32), num_queries=np.asarray(vocab.num_queries, np.int32))
    summary = {"train_log": str(paths[0]), "test_log": str(paths[1]), "num_sessions": int(train.pair.shape[0]),
               "num_queries": info.known_queries, "num_pairs": info.known_pairs,
               "test": {"sessions": int(kept.size), "sessions_of_unseen_queries": info.sessions_new_query,
                        "unseen_pairs": int(np.unique(np.asarray(test.pair)[unseen]).size),
                        "positions_of_unseen_pairs": int(unseen.sum()), "unseen_rule": config.unseen}}
    print(f"[click_models] train {paths[0]}: {summary['num_sessions']:,} sessions; test {paths[1]}: "
          f"{kept.size:,} sessions kept, {info.sessions_new_query:,} of unseen queries dropped, "
          f"{summary['test']['unseen_pairs']:,} unseen pairs ({config.unseen} rule)", flush=True)
    return train._replace(**sizes), test._replace(**sizes), summary


@register("click_models", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Every model x estimator fitted to every (simulator, seed) log; test metrics with 95% CIs over seeds."""
    _check(config)
    check_budget(config)
    real = bool(config.log) or bool(config.train_log)
    known_pairs = None
    if config.train_log:
        one_train, one_test, dataset = _train_test_logs(config)
        rows, queries, grades, labels = [LOG_SIMULATOR], None, None, None
        known_pairs = dataset["num_pairs"]
        stack = lambda log: jax.tree.map(lambda x: np.stack([x] * config.num_seeds), log)  # noqa: E731
        train, test = stack(one_train), stack(one_test)
    elif real:
        path, whole = _real_log(config)
        rows, queries, grades, labels = [LOG_SIMULATOR], None, None, None
        split_keys = lanes.fold_in_keys(jax.random.key(config.seed), config.num_seeds)
        train, test = study.shuffled_splits(split_keys, whole, num_train(config, whole.pair.shape[0]))
        dataset = {"log": str(path), "num_sessions": int(whole.pair.shape[0]), "num_queries": int(whole.num_queries),
                   "num_pairs": int(whole.num_pairs)}
    else:
        name, source, queries = load_queries(config)
        grades, rows = num_grades(queries), list(config.simulators)
        labels = np.asarray(queries.labels)
        print(f"[click_models] {name}: {queries.labels.shape[0]} queries (L = {queries.labels.shape[1]}), {grades} "
              f"grades; simulators {', '.join(rows)}; {config.num_seeds} seeds x {config.num_sessions:,} sessions",
              flush=True)
        splits = [lane for r in rows for lane in simulate_seeds(config, queries, r, grades)]
        dataset = {"dataset": name, "source": source, "num_queries": int(queries.labels.shape[0]),
                   "list_size": int(queries.labels.shape[1]), "num_grades": grades,
                   "num_pairs": int(splits[0][0].num_pairs)}
    if not real:
        train = jax.tree.map(lambda *x: np.stack(x), *[t for t, _ in splits])
        test = jax.tree.map(lambda *x: np.stack(x), *[t for _, t in splits])
    num_pairs = int(train.num_pairs[0])
    num_lanes = train.pair.shape[0]
    keys = lanes.fold_in_keys(jax.random.key(config.seed + 1), num_lanes)
    if not real:
        pairs = jnp.arange(num_pairs, dtype=jnp.int32).reshape(queries.labels.shape)
        production = np.asarray([_ndcg_of(production_scores(config, queries, s), queries.labels, queries.mask,
                                          splits[i * config.num_seeds + s][0].query, labels.shape[0])
                                 for i in range(len(rows)) for s in range(config.num_seeds)])
    else:
        pairs = None
    table, per_rank, arrays, timings, fitted_bias = {r: {} for r in rows}, {r: {} for r in rows}, {}, {}, {}
    wall = time.perf_counter()
    for model_name in config.models:
        model = CLICK_MODELS.build(model_name)
        for estimator in config.estimators:
            label = f"{model_name}/{estimator}"
            steps = config.num_iterations if estimator == "em" else config.num_epochs
            options = {} if estimator == "em" else dict(batch_size=config.batch_size, validation=config.validation,
                                                        prior=tuple(config.gradient_prior) or None)
            hparams = None if estimator == "em" else {"learning_rate": np.full(num_lanes, config.learning_rate)}
            saved = lanes.Checkpoint(checkpoint_dir(run_dir), label.replace("/", "-"),
                                     {"model": model_name, "estimator": estimator, "steps": steps, **options})
            start = time.perf_counter()
            params = study.fit_lanes(keys, estimator, model, logs=train, hparams=hparams, num_steps=steps,
                                     steps_per_chunk=_chunk(steps), num_pairs=num_pairs, checkpoint=saved, **options)
            fit_s = time.perf_counter() - start
            if known_pairs is not None:
                params = study.fill_unseen_pairs(model, params, known_pairs, config.unseen)
            out = jax.tree.map(np.asarray, study.evaluate_lanes(model, params, test, pairs,
                                                                conventions=config.conventions))
            if not real:
                out["ndcg@10"] = _relevance_ndcg(out.pop("relevance"), labels, queries.mask, train.query, len(labels))
            if estimator == "gradient" and not np.all(np.isfinite(out["log_likelihood"])):
                for broken in Path(saved.folder).glob(f"{saved.name}-*.npz"):
                    broken.unlink()  # resuming it would repeat the failure
                budget.check_finite_result("learning_rate", config.learning_rate,
                                           f"the test log-likelihood of {label}", out["log_likelihood"])
            timings[label] = {"fit_s": round(fit_s, 2), "lanes": num_lanes,
                              "train_sessions_per_lane": int(train.pair.shape[1])}
            for key, values in out.items():
                arrays[f"{model_name}__{estimator}__{key}"] = values
                target = per_rank if key.endswith("per_rank") else table
                for row, value in _summary(values, rows, config.num_seeds).items():
                    target[row].setdefault(label, {})[key.removesuffix("_per_rank")] = value
            if model_name in ("pbm", "ubm"):
                probs = probabilities(params).examination
                curve = probs if model_name == "pbm" else np.diagonal(probs, axis1=1, axis2=2)
                fitted_bias[label] = np.asarray(curve, np.float64) / np.asarray(curve, np.float64)[:, :1]
                arrays[f"{model_name}__{estimator}__position_bias"] = fitted_bias[label]
            ll = table[rows[0]][label]["log_likelihood"][0]
            print(f"[click_models] {label}: fitted {num_lanes} lanes in {fit_s:.1f}s; test LL ({rows[0]}) {ll:.4f}",
                  flush=True)
            fits_work = [num_lanes * train.pair.shape[1] * (config.num_iterations if e == "em" else config.num_epochs)
                         for _ in config.models for e in config.estimators]  # session-iterations of each fit
            done = len(timings)
            if done < len(fits_work):  # the estimate again, at the rate measured so far (compile included)
                rate = sum(fits_work[:done]) / (time.perf_counter() - wall)
                print(f"[click_models] measured {rate:,.0f} session-iterations/s so far: the {len(fits_work) - done} "
                      f"fits left take about {budget.format_seconds(sum(fits_work[done:]) / rate)}.", flush=True)
    summary = {**dataset, "conventions": config.conventions, "simulators": rows, "models": list(config.models),
               "estimators": list(config.estimators),
               "num_seeds": config.num_seeds, "train_sessions": int(train.pair.shape[1]),
               "test_sessions": int(test.pair.shape[1]), "num_positions": config.num_positions,
               "table": table, "per_rank": per_rank}
    if not real:
        summary["production_ndcg@10"] = _summary(production, rows, config.num_seeds)
        arrays["production__ndcg@10"] = production
        truth = np.stack([true_examination(config, r, grades, labels, splits[i * config.num_seeds + s][0])
                          for i, r in enumerate(rows) for s in range(config.num_seeds)])
        arrays["true_position_bias"] = truth
        bias = {"true": _summary(truth / truth[:, :1], rows, config.num_seeds)}
        for label, curve in fitted_bias.items():
            error = np.nanmax(np.abs(curve - truth / truth[:, :1]), axis=1)
            bias[label] = _summary(curve, rows, config.num_seeds)
            bias[f"{label} max error"] = _summary(error, rows, config.num_seeds)
        summary["position_bias"] = {row: {k: v[row] for k, v in bias.items()} for row in rows}
    summary["verdicts"] = [list(v) for v in analysis.verdicts(summary)]
    summary["timings"] = {"fits": timings, "total_s": round(time.perf_counter() - wall, 1)}
    data.write_npz(Path(run_dir) / "arrays.npz", **arrays)
    return summary


def _chunk(steps: int) -> int:
    """Steps per chunk (a checkpoint after each): the largest divisor of ``steps`` at most ``steps / 10``."""
    limit = max(steps // 10, 1)
    divisors = {d for i in range(1, int(steps ** 0.5) + 1) if steps % i == 0 for d in (i, steps // i)}
    return max(d for d in divisors if d <= limit)
