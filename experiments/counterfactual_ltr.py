"""Counterfactual learning to rank from logged clicks: test NDCG@10 against the size of the click log,
under the protocol of the paper whose claims are tested (``protocol``).

* ``joachims2017`` (Joachims, Swaminathan & Schnabel, WSDM 2017, §6): a logging ranker (RankSVM on
  ``logging_fraction`` = 1% of the training queries) shows its top ``K = 10`` deterministically;
  position-based users examine rank ``k`` with ``(1/k)^η`` (or ULTRA's eye-tracking table to the power
  ``η``) and click an examined document of grade ``g`` with ``ε− + (ε+ − ε−)(2^g − 1)/(2^G_max − 1)``;
  the x-axis counts clicks (``click_budgets``), one part per ``η``. Rows: ``naive``, ``ips`` (true
  propensities ``θ_k/θ_1``), ``ips_estimated`` (from ``propensity_sessions`` swap-intervention
  sessions, ``jaxrank.counterfactual.randomization``), ``ips_clipped`` (τ = ``clip``), ``full_info``
  (the true click probabilities of the same candidates). ``pairs="shown"`` ranks each click against
  the other shown documents, ``"all"`` against every candidate of the query, as the paper.
* ``oosterhuis2023`` (Oosterhuis, TOIS 2023, §7; HarrieO/2022-doubly-robust-LTR ``run.py``): the same
  kind of logging ranker shown as a Plackett–Luce policy (``softmax(scores / logging_temperature)``)
  over the top ``K = 5``; trust-bias users (``user_models.trust_bias("oosterhuis")``, relevance
  ``g / G_max``); the x-axis counts sessions (``session_budgets``), drawn over the training and
  validation queries together (the validation clicks choose the direct method's parameters); IPS, DM
  and DR share ``τ = min(10/√N, 1)`` (``N`` sessions). Rows: ``naive``, ``ips``, ``dm`` (the direct
  method alone), ``dr``, ``dr_perfect_dm`` (DR whose regression is the true relevance: a diagnostic of
  how much a better DM could give) and ``full_info``. Every fold of ``folds`` is a part.

Every row is the same learner (``jaxrank.counterfactual.COUNTERFACTUAL_LEARNERS``: a linear ranker
fitted by L-BFGS to the pairwise Huberised-hinge objective on the row's relevance targets), trained
``num_steps`` iterations; the statement of optimality reported per row is the largest, over seeds and
budgets, relative gradient norm ``‖∇J(w)‖/‖∇J(0)‖`` and share of the objective's decrease made by the
last ``STEPS_PER_CHUNK`` iterations (``base.Optimality``). The
skyline is the same learner on every training query's true relevance, the logging ranker's NDCG the
floor. Each part's seeds are the lanes of one ``jaxrank.lanes.run_lanes`` program (seed ``s`` draws
from ``fold_in(key, s)``), checkpointed, so ``--resume`` continues a killed run with identical files.
Seed, budget and row per-seed NDCG go to ``results.json``; ``experiments.analysis.counterfactual_ltr``
turns them into paired differences and verdicts.

Data: a LETOR folder (default MQ2008), one SVMlight file split into five parts, or synthetic queries
when no data is found (``dataset=auto``), saying so.
"""

import dataclasses
import functools
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from experiments.analysis import counterfactual_ltr as analysis
from experiments.common import budget, letor_datasets
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data, lanes, metrics
from jaxrank.counterfactual import (COUNTERFACTUAL_LEARNERS, direct_method, logging_policy, randomization,
                                    simulation, user_models)
from jaxrank.counterfactual.click_log import click_log
from jaxrank.counterfactual.learners import base
from jaxrank.utils.checks import check_choice, check_int, check_number

PROTOCOLS = ("joachims2017", "oosterhuis2023")
ROWS = {"joachims2017": ("naive", "ips", "ips_estimated", "ips_clipped", "full_info"),
        "oosterhuis2023": ("naive", "ips", "dm", "dr", "dr_perfect_dm", "full_info")}
LEARNER_OF = {"naive": "naive", "ips": "ips", "ips_estimated": "ips", "ips_clipped": "ips", "dm": "dm", "dr": "dr",
              "dr_perfect_dm": "dr", "full_info": "full_info"}
POSITIONS = {"joachims2017": 10, "oosterhuis2023": 5}
PAIRS = ("shown", "all")
EXAMINATION = ("inverse_rank", "eye_tracking")
STEPS_PER_CHUNK = 10  # L-BFGS iterations between checkpoints
# fits x L-BFGS iterations per second on one MQ2008 fold, the simulation, the direct method and the
# compile included: 4.2 (oosterhuis2023, 120 fits x 30 iterations in 855 s) and 6.2 (joachims2017,
# 120 fits x 50 iterations in 971 s), measured on a 2-core CPU shared with other jobs
_RATE = 5.0
MAX_BUDGET = 2**31 - 1  # the simulation's int32 click and session counters


@dataclasses.dataclass(frozen=True)
class Config:
    protocol: str = "joachims2017"  # or "oosterhuis2023" (module docstring)
    dataset: str = "auto"  # LETOR folder (MQ2008), one SVMlight file, "synthetic", or "auto"
    folds: tuple[int, ...] = (1,)
    etas: tuple[float, ...] = (0.5, 1.0, 2.0)  # joachims2017: one part per η
    examination: str = "inverse_rank"  # joachims2017: (1/k)^η, or ULTRA's eye_tracking table^η
    click_budgets: tuple[int, ...] = (100, 1_000, 10_000, 100_000, 1_000_000)  # joachims2017's x-axis
    session_budgets: tuple[int, ...] = (100, 1_000, 10_000, 100_000, 1_000_000)  # oosterhuis2023's x-axis
    num_seeds: int = 8
    num_positions: int = 0  # K shown; 0: the protocol's (10 for joachims2017, 5 for oosterhuis2023)
    logging_fraction: float = 0.01
    logging_temperature: float = 1.0  # oosterhuis2023: Plackett–Luce over logging scores / temperature
    eps_minus: float = 0.1  # joachims2017's click noise
    eps_plus: float = 1.0
    learners: tuple[str, ...] = ("default",)  # rows; "default": every row of the protocol
    pairs: str = "shown"  # joachims2017: each click against the other shown documents, or "all" candidates
    lam: float = 1e-3  # λ of every row's objective
    clip: float = 0.1  # τ of joachims2017's ips_clipped, on propensities relative to rank 1
    num_steps: int = 60  # L-BFGS iterations of every row
    dm_model: str = "linear"  # oosterhuis2023's direct method: "linear" (with intercept) or "mlp" ([32, 32])
    dm_steps: int = 500  # Adam steps of the direct method (validation loss checked every 25)
    learning_rate: float = 0.01  # the direct method's Adam step size
    propensity_sessions: int = 100_000  # joachims2017: swap-intervention sessions per seed for ips_estimated
    chunk_size: int = 16_384  # sessions per simulation step
    seed: int = 0


class _Lists(NamedTuple):
    labels: jax.Array  # [Q, L]
    mask: jax.Array  # [Q, L]


class _Spec(NamedTuple):
    """The static shape of one part's lanes (hashable: the lane runner's programs are keyed on it)."""

    protocol: str
    rows: tuple
    num_positions: int
    budgets: tuple
    budget_unit: str
    temperature: float
    chunk_size: int
    num_train: int  # oosterhuis2023: the first num_train queries train, the rest validate
    dm_model: str
    dm_steps: int
    propensity_sessions: int
    widths: tuple  # the document widths of the training blocks


class _Carry(NamedTuple):
    states: base.LearnerState  # leaves [C, M, ...]
    infos: base.StepInfo  # [C, M] the latest step's
    start: base.StepInfo  # [C, M] J and ‖∇J‖ at w = 0 (the first step's)
    chunk_start: jax.Array  # [C, M] J at the start of the latest chunk of steps
    targets: tuple  # per block of training queries [C, M, Q_b, L_b]
    weights: tuple  # per block [C, Q_b] each query's share of the training sessions
    logged: jax.Array  # [C, 2] clicks and sessions logged (training and validation)
    tau: jax.Array  # [C] the shared clipping threshold (oosterhuis2023), or the ips_clipped τ
    dm_vali: jax.Array  # [C] the direct method's best validation loss (0 without one)
    theta_hat: jax.Array  # [K] estimated propensities (joachims2017), else the true ones


def rows_of(config: Config) -> tuple[str, ...]:
    return ROWS[config.protocol] if tuple(config.learners) == ("default",) else tuple(config.learners)


def positions_of(config: Config) -> int:
    return config.num_positions or POSITIONS[config.protocol]


def budgets_of(config: Config) -> tuple[int, ...]:
    return tuple(config.click_budgets if config.protocol == "joachims2017" else config.session_budgets)


def _check_finite(name: str, value, *, low: float, inclusive: bool) -> None:
    number = float(value)
    if not math.isfinite(number) or number < low or (number == low and not inclusive):
        raise ValueError(f"{name}={value!r} must be a finite number {'>=' if inclusive else '>'} {low:g}.")


def _check(config: Config) -> None:
    """One-line errors for every setting before any work (sizes against memory and int32 counters)."""
    check_choice("protocol", config.protocol, PROTOCOLS)
    check_choice("examination", config.examination, EXAMINATION)
    check_choice("pairs", config.pairs, PAIRS)
    check_choice("dm_model", config.dm_model, direct_method.MODELS)
    rows = tuple(config.learners)
    if not rows:
        raise ValueError(f"learners is empty; give some of {', '.join(ROWS[config.protocol])} (or 'default').")
    if len(set(rows)) != len(rows):
        raise ValueError(f"learners={','.join(rows)} names a row twice; give each once.")
    if rows != ("default",):
        for row in rows:
            check_choice(f"learners (protocol {config.protocol})", row, ROWS[config.protocol])
    check_int("num_seeds", config.num_seeds, minimum=1)
    check_int("num_positions", config.num_positions, minimum=0)
    if config.num_positions == 1:
        raise ValueError("num_positions=1 shows one document: nothing to correct; use >= 2 (0: the protocol's).")
    check_int("num_steps", config.num_steps, minimum=1)
    check_int("dm_steps", config.dm_steps, minimum=25)
    check_int("propensity_sessions", config.propensity_sessions, minimum=1)
    check_int("chunk_size", config.chunk_size, minimum=1)
    for name in ("lam", "clip"):
        _check_finite(name, getattr(config, name), low=0.0, inclusive=True)
    _check_finite("learning_rate", config.learning_rate, low=0.0, inclusive=False)
    _check_finite("logging_temperature", config.logging_temperature, low=0.0, inclusive=False)
    check_number("logging_fraction", config.logging_fraction, low=0.0, high=1.0, high_inclusive=True)
    for name in ("eps_minus", "eps_plus"):
        check_number(name, getattr(config, name), low=0.0, high=1.0, low_inclusive=True, high_inclusive=True)
    if config.eps_minus > config.eps_plus:
        raise ValueError(f"eps_minus={config.eps_minus:g} > eps_plus={config.eps_plus:g}: a relevant document would "
                         "be clicked less than a non-relevant one; swap them.")
    if not config.etas or not config.folds:
        raise ValueError(f"etas and folds must be non-empty; got {config.etas} and {config.folds}.")
    for eta in config.etas:
        _check_finite("etas", eta, low=0.0, inclusive=True)
    name = "click_budgets" if config.protocol == "joachims2017" else "session_budgets"
    budgets = budgets_of(config)
    largest = MAX_BUDGET - config.chunk_size * positions_of(config)
    if not budgets or any(int(b) < 1 for b in budgets) or any(b >= c for b, c in zip(budgets, budgets[1:])):
        raise ValueError(f"{name} must be increasing positive counts; got {budgets}.")
    if budgets[-1] > largest:
        raise ValueError(f"{name}: {budgets[-1]} exceeds the largest the int32 counters allow, {largest}.")
    if config.num_steps > MAX_BUDGET:
        raise ValueError(f"num_steps={config.num_steps} exceeds the int32 step counter; the largest is {MAX_BUDGET} "
                         "(L-BFGS needs tens).")


def _check_memory(config: Config, num_queries: int, list_size: int) -> None:
    """Refuses seeds or intervention sessions whose arrays cannot fit in the memory available now."""
    k, c, m = positions_of(config), len(budgets_of(config)), len(rows_of(config))
    cells = num_queries * list_size
    # counts [C + 1, Q, L, K] x2 (clicks, displays), targets and learner work [C, M, Q, L] x4, a simulation chunk
    per_seed = 4 * (2 * (c + 1) * cells * k + 4 * c * m * cells + config.chunk_size * (list_size + 4 * k))
    if config.protocol == "joachims2017":
        per_seed += 16 * config.propensity_sessions * k  # the swap-intervention log [S, K]
    available = budget.available_bytes()
    if per_seed * config.num_seeds > available:
        fits = max(available // per_seed, 0)
        if config.protocol == "joachims2017" and 16 * config.propensity_sessions * k > available // 2:
            most = available // 2 // (16 * k * config.num_seeds)
            raise ValueError(f"propensity_sessions={config.propensity_sessions} needs "
                             f"{16 * config.propensity_sessions * k * config.num_seeds / 2**30:.1f} GiB with "
                             f"{config.num_seeds} seeds; the largest that fits is {most}.")
        raise ValueError(f"num_seeds={config.num_seeds} needs {per_seed * config.num_seeds / 2**30:.1f} GiB "
                         f"({per_seed / 2**20:.0f} MiB a seed); {available / 2**30:.1f} GiB are available: the "
                         f"largest that fits is {fits}.")


def _user(config: Config, eta: float, max_grade: int) -> user_models.AffineClickModel:
    k = positions_of(config)
    if config.protocol == "oosterhuis2023":
        return user_models.trust_bias(k, max_grade, "oosterhuis")
    click = user_models.graded_click_probability(max_grade, config.eps_minus, config.eps_plus)
    theta = (user_models.eye_tracking(k, eta) if config.examination == "eye_tracking"
             else user_models.inverse_rank(k, eta))
    return user_models.position_based(theta, click)


def _relevance(user, labels, mask):
    g = jnp.clip(jnp.round(labels), 0, user.relevance.shape[0] - 1).astype(jnp.int32)
    return jnp.where(mask, user.relevance[g], 0.0)


def _blocks(x, shared, widths, axis: int = 0):
    """``x`` with the query axis at ``axis`` (and the document axis after it) split into the training
    blocks of ``shared["blocks"]`` (widths ``widths``): ``(x[..., queries_b, :L_b], ...)``."""
    out = []
    for queries, width in zip(shared["blocks"]["queries"], widths):
        part = jnp.take(x, queries, axis=axis)
        out.append(part if part.ndim == axis + 1 else jax.lax.slice_in_dim(part, 0, width, axis=axis + 1))
    return tuple(out)


def _ndcg(w, test):
    return metrics.ndcg(test["features"] @ w, test["labels"], where=test["mask"], topn=10)


def _lane_init(key, hparams, shared, lane_data, *, spec: _Spec):
    """Simulates one seed's log, builds every budget's click log, fits the direct method, and sets up
    every row's learner state and targets (``_Carry``)."""
    del lane_data
    key_sim, key_swap, key_dm = jax.random.split(key, 3)
    user = user_models.AffineClickModel(shared["alpha"], shared["beta"], shared["relevance_table"])
    queries = _Lists(shared["labels"], shared["mask"])
    counts = simulation.simulate_click_counts(
        key_sim, queries, user, spec.budgets, scores=shared["scores"], temperature=spec.temperature,
        num_positions=spec.num_positions, chunk_size=spec.chunk_size, budget_unit=spec.budget_unit)
    features, relevance = shared["features"], shared["relevance"]
    q_train = spec.num_train
    theta = shared["alpha"] / shared["alpha"][0]
    if spec.protocol == "joachims2017":
        if "ips_estimated" in spec.rows:
            log, swap_rank = randomization.swap_sessions(key_swap, queries, spec.propensity_sessions, user,
                                                         scores=shared["scores"], num_positions=spec.num_positions)
            estimate = randomization.swap_propensities(log, swap_rank)
            theta_hat = jnp.where(jnp.isfinite(estimate) & (estimate > 1e-3), estimate, 1e-3)
        else:
            theta_hat = theta
    else:
        theta_hat = shared["alpha"]
    def one_budget(clicks, displays, sessions):
        args = (clicks, displays, sessions, features, shared["where"], shared["alpha"], shared["beta"], relevance)
        if spec.protocol == "joachims2017":
            # propensities relative to rank 1 (the user's β is 0)
            true = click_log(*args, propensities=theta)
            estimated = click_log(*args, propensities=theta_hat)
            logs = {"ips_estimated": estimated}
            tau = hparams["clip"]
            dm_vali = jnp.zeros(())
            train = true
        else:
            full = click_log(*args)
            tau = jnp.minimum(10.0 / jnp.sqrt(jnp.maximum(jnp.sum(sessions), 1.0)), 1.0)
            split = [jax.tree.map(lambda x: x[:q_train] if x.ndim else x, full),
                     jax.tree.map(lambda x: x[q_train:] if x.ndim else x, full)]
            train, vali = split
            train_sessions = sessions[:q_train]
            train = train._replace(weights=train_sessions / jnp.maximum(jnp.sum(train_sessions), 1.0))
            logs = {}
            if {"dm", "dr"} & set(spec.rows):
                # the regression sees the real documents only (flat), not the padding
                flat = [jax.tree.map(lambda x: x[shared[f"{n}_rows"], shared[f"{n}_docs"]] if x.ndim > 1 else x, log)
                        for n, log in (("train", train), ("vali", vali))]
                params, info = direct_method.fit(key_dm, *flat, tau, model=spec.dm_model,
                                                 num_steps=spec.dm_steps, learning_rate=hparams["learning_rate"])
                train = train._replace(regression=jnp.where(train.where, direct_method.predict(
                    params, train.features), 0.0))
                dm_vali = jnp.min(jnp.concatenate([info.vali_loss, jnp.full(1, jnp.inf)]))
            else:
                dm_vali = jnp.zeros(())
            logs["dr_perfect_dm"] = train._replace(regression=train.relevance)
        states, targets = [], []
        for row in spec.rows:
            learner = COUNTERFACTUAL_LEARNERS.build(LEARNER_OF[row])
            if spec.protocol == "oosterhuis2023":
                clip = tau if row in ("ips", "dr", "dr_perfect_dm") else 0.0  # one τ for IPS and DR
            else:
                clip = tau if row == "ips_clipped" else 0.0
            state = learner.init(key, features.shape[-1], lam=hparams["lam"], clip=clip)
            states.append(state)
            targets.append(learner.targets(state, logs.get(row, train)))
        stack = lambda xs: jax.tree.map(lambda *x: jnp.stack(x), *xs)  # noqa: E731
        logged = jnp.stack([jnp.sum(clicks), jnp.sum(sessions)])
        return stack(states), jnp.stack(targets), train.weights, logged, jnp.asarray(tau, jnp.float32), dm_vali

    states, targets, weights, logged, tau, dm_vali = jax.vmap(one_budget)(counts.clicks, counts.displays,
                                                                         counts.sessions)
    infos = base.StepInfo(jnp.zeros(targets.shape[:2]), jnp.zeros(targets.shape[:2]))
    return _Carry(states, infos, infos, jnp.zeros(targets.shape[:2]), _blocks(targets, shared, spec.widths, 2), _blocks(weights, shared, spec.widths, 1),
                  logged, tau, dm_vali, theta_hat)


def _lane_advance(carry: _Carry, chunk, shared, lane_data, *, spec: _Spec):
    """``STEPS_PER_CHUNK`` L-BFGS iterations of every row at every budget."""
    del chunk, lane_data, spec
    features, where = shared["blocks"]["features"], shared["blocks"]["where"]

    def step(states, _):
        def row(state, targets, weights):
            return base.fit_step(state, features, where, weights, targets)

        per_budget = jax.vmap(jax.vmap(row, in_axes=(0, 0, None)), in_axes=(0, 0, 0))
        return per_budget(states, carry.targets, carry.weights)

    first = carry.states.count == 0  # [C, M]
    states, infos = jax.lax.scan(step, carry.states, None, length=STEPS_PER_CHUNK)
    at = lambda t: jax.tree.map(lambda x: x[t], infos)  # noqa: E731
    start = jax.tree.map(lambda new, old: jnp.where(first, new, old), at(0), carry.start)
    return carry._replace(states=states, infos=at(-1), start=start, chunk_start=infos.objective[0])


def _lane_result(carry: _Carry, shared, lane_data, *, spec: _Spec):
    del lane_data, spec
    ndcg = jax.vmap(jax.vmap(lambda w: _ndcg(w, shared["test"])))(carry.states.params)
    features, where = shared["blocks"]["features"], shared["blocks"]["where"]

    def final(state, targets, weights):
        value, grad = jax.value_and_grad(base.objective)(state.params, features, where, weights, targets, state.lam)
        return value, jnp.linalg.norm(grad)

    value, grad_norm = jax.vmap(jax.vmap(final, in_axes=(0, 0, None)))(carry.states, carry.targets, carry.weights)
    optimality = base.optimality(carry.start.objective, carry.start.grad_norm, carry.chunk_start, value, grad_norm)
    return {"ndcg": ndcg, "grad_norm": grad_norm, "objective": value, "relative_grad": optimality.relative_grad,
            "last_decrease": optimality.last_decrease,
            "logged": carry.logged, "tau": carry.tau, "dm_vali": carry.dm_vali, "theta_hat": carry.theta_hat}


def _part(config: Config, run_dir, name: str, train_r, vali_r, test_r, eta: float, seed_key) -> dict:
    """One part (a fold, or a fold and ``η``): the logging ranker, the skyline and every seed's rows."""
    protocol = config.protocol
    key_logging, key_lanes = jax.random.split(seed_key)
    w0, _, chosen = logging_policy.train_logging_ranker(key_logging, train_r, fraction=config.logging_fraction,
                                                        lam=1e-3)
    sim_r = train_r if protocol == "joachims2017" else data.concat_queries([train_r, vali_r])
    padded = data.pad_queries(sim_r)
    test = data.pad_queries(test_r)
    num_train = train_r.num_queries
    max_grade = max(int(np.max(sim_r.labels)), 1)
    user = _user(config, eta, max_grade)
    k = positions_of(config)
    scores = padded.features @ w0
    mask = jnp.asarray(padded.mask)
    if protocol == "joachims2017" and config.pairs == "shown":
        docs, shown = logging_policy.deterministic_lists(scores, mask, k)
        rows = jnp.arange(docs.shape[0])[:, None]
        where = jnp.zeros(mask.shape, bool).at[rows, docs].max(shown)
    else:
        where = mask
    relevance = _relevance(user, padded.labels, mask)
    lengths = np.asarray(sim_r.lengths)
    widths = data.bucket_sizes(lengths[:num_train], minimum=8)
    block_queries = [np.flatnonzero(widths == w).astype(np.int32) for w in np.unique(widths)]
    block_widths = [int(w) for w in np.unique(widths)]
    blocks = {"queries": block_queries,
              "features": tuple(padded.features[q][:, :w] for q, w in zip(block_queries, block_widths)),
              "where": tuple(where[q][:, :w] for q, w in zip(block_queries, block_widths))}
    real = np.arange(mask.shape[1])[None, :] < lengths[:, None]
    rows_all, docs_all = np.nonzero(real)
    train_rows = rows_all < num_train
    shared = {"features": padded.features, "labels": padded.labels, "mask": mask, "where": where, "scores": scores,
              "relevance": relevance, "alpha": user.alpha, "beta": user.beta, "relevance_table": user.relevance,
              "blocks": blocks, "train_rows": rows_all[train_rows].astype(np.int32),
              "train_docs": docs_all[train_rows].astype(np.int32),
              "vali_rows": (rows_all[~train_rows] - num_train).astype(np.int32),
              "vali_docs": docs_all[~train_rows].astype(np.int32),
              "test": {"features": test.features, "labels": test.labels, "mask": test.mask}}
    spec = _Spec(protocol, rows_of(config), k, budgets_of(config),
                 "clicks" if protocol == "joachims2017" else "sessions",
                 0.0 if protocol == "joachims2017" else float(config.logging_temperature), config.chunk_size,
                 num_train, config.dm_model, config.dm_steps, config.propensity_sessions, tuple(block_widths))
    study = lanes.Study(functools.partial(_lane_init, spec=spec), functools.partial(_lane_advance, spec=spec),
                        functools.partial(_lane_result, spec=spec))
    keys = lanes.fold_in_keys(key_lanes, config.num_seeds)
    hparams = {"lam": np.full(config.num_seeds, config.lam), "clip": np.full(config.num_seeds, config.clip),
               "learning_rate": np.full(config.num_seeds, config.learning_rate)}
    num_chunks = -(-config.num_steps // STEPS_PER_CHUNK)
    saved = lanes.Checkpoint(checkpoint_dir(run_dir), name, {"config": dataclasses.asdict(config), "part": name})
    out = lanes.run_lanes(study, keys, hparams, data=shared, chunks=np.arange(num_chunks), checkpoint=saved,
                          label=f"counterfactual_ltr {name}", progress=(np.arange(num_chunks) + 1) * STEPS_PER_CHUNK)
    q = num_train
    sky_state, sky_opt = _skyline(jax.random.fold_in(seed_key, 1), padded.features[:q], mask[:q], relevance[:q],
                                  jnp.float32(config.lam), num_steps=num_chunks * STEPS_PER_CHUNK)
    theta = user.alpha / user.alpha[0]
    return {"eta": f"{eta:g}", "logging_queries": len(chosen), "logging_ndcg": round(float(_ndcg(w0, shared["test"])), 6),
            "skyline_ndcg": round(float(_ndcg(sky_state.params, shared["test"])), 6),
            "skyline_relative_grad": _rounded(sky_opt.relative_grad, 8),
            "skyline_last_decrease": _rounded(sky_opt.last_decrease, 10),
            "ndcg": _rounded(out["ndcg"]), "grad_norm_max": _rounded(np.max(out["grad_norm"]), 8),
            # per row, the largest over seeds and budgets (base.Optimality)
            "relative_grad_max": _rounded(np.max(out["relative_grad"], axis=(0, 1)), 8),
            "last_decrease_max": _rounded(np.max(out["last_decrease"], axis=(0, 1)), 10),
            "logged_clicks": _rounded(out["logged"][..., 0].mean(0), 1),
            "logged_sessions": _rounded(out["logged"][..., 1].mean(0), 1), "tau": _rounded(out["tau"][0]),
            "dm_vali_loss": _rounded(out["dm_vali"].mean(0)),
            "propensities": {"true": _rounded(theta), "given_mean": _rounded(out["theta_hat"].mean(0))}}


@functools.partial(jax.jit, static_argnames=("num_steps",))
def _skyline(key, features, where, relevance, lam, *, num_steps: int):
    """``(state, Optimality)``: the same learner on every training query's true relevance, the queries
    weighted equally."""
    learner = COUNTERFACTUAL_LEARNERS.build("full_info")
    num_queries = features.shape[0]
    zeros = jnp.zeros(where.shape, jnp.float32)
    log = base.ClickLog(features, where, zeros, zeros, zeros, zeros, zeros, relevance,
                        jnp.full(num_queries, 1.0 / num_queries))
    key_init, key_steps = jax.random.split(key)
    state, infos = base.train(key_steps, learner, learner.init(key_init, features.shape[-1], lam=lam), log, num_steps)
    value, grad = jax.value_and_grad(base.objective)(state.params, features, where, log.weights, relevance, lam)
    earlier = infos.objective[max(num_steps - STEPS_PER_CHUNK, 0)]
    return state, base.optimality(infos.objective[0], infos.grad_norm[0], earlier, value, jnp.linalg.norm(grad))


def announce(config: Config) -> float:
    """Prints the run's work (fits of a row at a budget x L-BFGS iterations) and its estimated time."""
    parts = len(config.folds) * (len(config.etas) if config.protocol == "joachims2017" else 1)
    fits = parts * config.num_seeds * len(rows_of(config)) * len(budgets_of(config))
    iterations = -(-config.num_steps // STEPS_PER_CHUNK) * STEPS_PER_CHUNK
    return budget.announce("counterfactual_ltr", work=fits * iterations, rate=_RATE, unit="fit-iterations",
                           note=f"{fits} fits ({parts} parts x {config.num_seeds} seeds x {len(rows_of(config))} rows "
                                f"x {len(budgets_of(config))} budgets) x {iterations} L-BFGS iterations, "
                                "on MQ2008-sized folds")


@register("counterfactual_ltr", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Every part's per-seed test NDCG@10 for every row and budget (module docstring)."""
    _check(config)
    announce(config)
    ds = letor_datasets.resolve(config.dataset, "counterfactual_ltr", single_file=True)
    root = jax.random.key(config.seed)
    start = time.perf_counter()
    parts = {}
    for fold in config.folds:
        check_int("folds", fold, minimum=1)
        train_r, vali_r, test_r = letor_datasets.fold(ds, fold, config.seed)
        if fold == config.folds[0]:
            both = train_r.num_queries + (vali_r.num_queries if config.protocol == "oosterhuis2023" else 0)
            longest = int(data.pad_queries(train_r).mask.shape[1])
            _check_memory(config, both, longest)
        etas = config.etas if config.protocol == "joachims2017" else (1.0,)
        for i, eta in enumerate(etas):
            name = f"fold{fold}" + (f"-eta{eta:g}" if config.protocol == "joachims2017" else "")
            key = jax.random.fold_in(jax.random.fold_in(root, fold), i)
            parts[name] = {"fold": fold, **_part(config, run_dir, name, train_r, vali_r, test_r, eta, key)}
            last = np.asarray(parts[name]["ndcg"])[:, -1].mean(0)
            print(f"[counterfactual_ltr] {name}: " + ", ".join(
                f"{row} {v:.4f}" for row, v in zip(rows_of(config), last))
                + f" at {budgets_of(config)[-1]:,} ({time.perf_counter() - start:.0f}s)", flush=True)
    return {
        "protocol": config.protocol,
        "dataset": ds.name,
        "source": ds.source,
        "folds": list(config.folds),
        "budgets": list(budgets_of(config)),
        "budget_unit": "clicks" if config.protocol == "joachims2017" else "sessions",
        "num_seeds": config.num_seeds,
        "num_positions": positions_of(config),
        "learners": list(rows_of(config)),
        "examination": config.examination if config.protocol == "joachims2017" else "trust_bias",
        "parts": parts,
        "settings": {"pairs": config.pairs, "lam": config.lam, "clip": config.clip, "eps_minus": config.eps_minus,
                     "eps_plus": config.eps_plus, "num_steps": config.num_steps, "dm_model": config.dm_model,
                     "dm_steps": config.dm_steps, "lbfgs_iterations": -(-config.num_steps // STEPS_PER_CHUNK) * STEPS_PER_CHUNK, "learning_rate": config.learning_rate,
                     "logging_temperature": config.logging_temperature,
                     "propensity_sessions": config.propensity_sessions},
        "timings": {"seconds": round(time.perf_counter() - start, 1)},
    }


def _rounded(values, digits: int = 6):
    """A JSON value of ``values`` rounded in float64 (float32 values print with spurious digits)."""
    return np.round(np.asarray(values, np.float64), digits).tolist()
