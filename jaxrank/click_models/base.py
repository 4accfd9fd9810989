"""What every click model of ``jaxrank.click_models`` shares: the ``ClickModel`` contract, log-space
arithmetic, the expected-sufficient-statistics M-step and the per-pair / per-rank sums.

Parameters are probabilities stored as **logits** in a NamedTuple per model (``log p =
log_sigmoid(x)``, ``log(1 - p) = log_sigmoid(-x)``, both stable), so a gradient method can later use
them unconstrained (as CLAX does) and EM writes them back with ``logit``. Every probability the models
compute is carried as a log-probability; ``log(1 - p)`` of a computed ``log p`` goes through
``log1mexp``.

Fitting (Chuklin, Markov, de Rijke, *Click Models for Web Search*, 2015, ch. 4, and PyClick's
``Inference.py``/``Param.py``): each parameter ``θ`` is a Bernoulli probability; the E-step gives,
for every parameter, the expected number of "outcome 1" events (``numerator``) and of trials
(``denominator``) given the observed clicks and the current ``params``, as a ``Statistics`` of two
params-shaped pytrees: a model's ``statistics(params, log)`` plus, for a model that has them, its
parameter-free ``counts(params, log)`` (``jaxrank.click_models.em.expected_statistics`` adds them).
``maximize`` turns them into ``θ = min((a + numerator) / (b + denominator), cap)`` with PyClick's
pseudo-counts ``(a, b) = (1, 2)``
(every parameter starts each iteration at numerator 1, denominator 2) and cap ``1 - 10⁻⁶``
(``ParamEM.PROB_MIN``). For a model fitted by counting (maximum likelihood under a simplifying
assumption, ch. 4) the statistics do not depend on ``params`` and one M-step is the estimate.
"""

import math
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Array
from jaxrank.utils.checks import check_int

PROB_CAP = 1.0 - 1e-6  # PyClick's ParamEM: probabilities are capped at 1 - PROB_MIN
PRIOR = (1.0, 2.0)  # PyClick's Param: numerator 1, denominator 2 before any session (a start of 0.5)
DEFAULT_CHUNK_SIZE = 16384  # sessions per E-step chunk: bounded scratch memory (jaxrank.click_models.em)
# Every model's HPARAMS (PyClick's EMInference conventions): the starting probability, the M-step's
# pseudo-counts (a, b) and the cap of every probability, f32 leaves of the fit's state.
EM_HPARAMS = {"init": 0.5, "prior_a": PRIOR[0], "prior_b": PRIOR[1], "cap": PROB_CAP}
EM_OPTIONS = {"chunk_size": DEFAULT_CHUNK_SIZE}
_LOG2 = math.log(2.0)


class ClickModel(NamedTuple):
    """A click model fitted to session logs, built by its module's ``make()`` (``CLICK_MODELS``).

    * ``init_params(num_pairs, num_positions, *, prob=0.5, dtype=f32) -> params``: every probability ``prob``;
    * ``conditional_log_probs(params, log) -> [S, K]``: ``log P(C_r = c_r | C_<r = c_<r)`` of the
      observed clicks (0 on padding);
    * ``click_log_probs(params, log) -> [S, K]``: unconditional ``log P(C_r = 1)`` (−inf on padding);
      ``click_probs`` its exponential;
    * ``relevance(params, pairs [...]) -> [...]``: the model's relevance estimate of each pair (a
      probability, see each module);
    * ``sample(key, params, pairs [K], mask [K]) -> [K] bool``: the clicks of one simulated session
      (``vmap`` for many);
    * ``statistics(params, log) -> Statistics``: expected sufficient statistics (the E-step, or the
      counts of a counting model);
    * ``fitting``: ``"em"`` or ``"counting"``;
    * ``counts``: ``None``, or ``counts(params, log) -> Statistics``, the part of the E-step's statistics
      that does not depend on the parameters' values (impressions, clicks: ``params`` only gives shapes),
      which ``fit_em`` then counts once; ``statistics`` is the rest, and the E-step is their sum;
    * ``session_log_probs``: ``None``, or ``session_log_probs(params, log) -> [S]``: ``log P(C)`` of each
      session in a closed form cheaper than summing ``conditional_log_probs`` over positions (the
      same value: the chain rule); ``session_log_likelihood`` picks whichever the model has;
    * ``chunk_size``: sessions per E-step chunk of its EM fit (the ``OPTIONS`` of every model; ``None``:
      every session at once; see ``jaxrank.click_models.em``).

    Its fit keeps the contract of every family (``jaxrank.registry``): ``init(key, num_pairs,
    num_positions, **HPARAMS) -> EMState`` (the hyperparameters as f32 leaves, so a grid of priors is
    lanes of one program) and ``step(state, log) -> (EMState, EMInfo)``, one EM iteration
    (``jaxrank.click_models.em``).
    """

    name: str
    init_params: Callable[..., Any]
    conditional_log_probs: Callable[..., Array]
    click_log_probs: Callable[..., Array]
    click_probs: Callable[..., Array]
    relevance: Callable[..., Array]
    sample: Callable[..., Array]
    statistics: Callable[..., "Statistics"]
    fitting: str
    counts: Optional[Callable[..., "Statistics"]] = None
    session_log_probs: Optional[Callable[..., Array]] = None
    chunk_size: Optional[int] = None

    def init(self, key, num_pairs: int, num_positions: int, **hparams):
        """The EM state of a fit from every probability at ``init`` (``jaxrank.click_models.em.init``)."""
        from jaxrank.click_models import em

        return em.init(self, key, num_pairs, num_positions, **hparams)

    def step(self, state, log):
        """One EM iteration: ``(state, EMInfo)`` (``jaxrank.click_models.em.em_step``)."""
        from jaxrank.click_models import em

        return em.em_step(self, state, log)


def session_log_likelihood(model: ClickModel, params, log) -> Array:
    """``[S]`` ``log P(C) = Σ_r log P(C_r = c_r | C_<r)`` of each session (``model.session_log_probs``
    where the model has one)."""
    if model.session_log_probs is not None:
        return model.session_log_probs(params, log)
    return jnp.sum(model.conditional_log_probs(params, log), axis=-1)


class Statistics(NamedTuple):
    """Expected sufficient statistics of a Bernoulli parameter pytree (both fields shaped like it)."""

    numerator: Any  # expected number of events with outcome 1
    denominator: Any  # expected number of events


def log1mexp(x: Array) -> Array:
    """``log(1 - exp(x))`` for ``x <= 0``, stable everywhere (Mächler 2012: ``log(-expm1(x))`` above
    ``-log 2``, ``log1p(-exp(x))`` below). ``x = 0`` gives ``-inf``, ``x = -inf`` gives 0; each branch
    sees a safe input, so gradients stay finite where the value is."""
    x = jnp.minimum(x, 0.0)
    near_zero = x > -_LOG2
    return jnp.where(near_zero, jnp.log(-jnp.expm1(jnp.where(near_zero, x, -1.0))),
                     jnp.log1p(-jnp.exp(jnp.where(near_zero, -1.0, x))))


def logit(p: Array) -> Array:
    """``log p - log(1 - p)``: the stored form of a probability."""
    p = jnp.asarray(p)
    return jnp.log(p) - jnp.log1p(-p)


def log_probs(logits: Array) -> tuple[Array, Array]:
    """``(log p, log(1 - p))`` of stored logits."""
    return jax.nn.log_sigmoid(logits), jax.nn.log_sigmoid(-logits)


def probabilities(params):
    """The params pytree with every logit turned into its probability."""
    return jax.tree.map(jax.nn.sigmoid, params)


def from_probabilities(params):
    """A params pytree of logits from one of probabilities (``probabilities``' inverse)."""
    return jax.tree.map(logit, params)


def filled(shape, prob, dtype) -> Array:
    """``[shape]`` logits of the probability ``prob`` (a number or a traced scalar)."""
    return jnp.full(shape, logit(jnp.asarray(prob, dtype)), dtype)


def maximize(stats: Statistics, params, *, prior=PRIOR, cap=PROB_CAP):
    """The M-step: ``θ = min((a + numerator) / (b + denominator), cap)`` per parameter, as logits.

    A parameter without data and a zero pseudo-denominator keeps its value in ``params``.

    Args:
      stats: ``Statistics`` shaped like ``params``.
      params: the current parameters (logits), for shape, dtype and the no-data case.
      prior: ``(a, b)`` pseudo-counts; PyClick's ``(1, 2)``.
      cap: upper bound of every probability.
    """
    a, b = prior

    def one(num, den, old):
        total = b + den
        p = jnp.minimum((a + num) / jnp.where(total > 0, total, 1.0), cap)
        return jnp.where(total > 0, logit(p), old).astype(old.dtype)

    return jax.tree.map(one, stats.numerator, stats.denominator, params)


def rank_table(table: Array, num_positions: int) -> Array:
    """The first ``K`` entries of a per-rank table of ``K' >= K`` (a model may be initialised for longer
    lists than a log holds)."""
    if table.shape[0] < num_positions:
        raise ValueError(f"the parameters cover {table.shape[0]} positions but the log has {num_positions}; "
                         f"init the model with num_positions >= {num_positions}.")
    return table[:num_positions]


def spread(x, shape) -> Array:
    """``x`` (a number, ``[]`` or ``[K]`` per-rank values) repeated to ``shape [..., K]``.

    The values of ``jnp.broadcast_to``, taken by a gather, so that the gradient (a scatter-add in
    the sessions' order) has the same bits whatever the shapes around it: vmapped lanes then give
    the same gradient fits on any number of devices (``jaxrank.lanes``); a broadcast's gradient is a
    ``jnp.sum`` that XLA vectorises by shape (see ``rank_sum``)."""
    shape = tuple(shape)
    if not isinstance(x, jax.Array) or x.shape == shape:
        return jnp.broadcast_to(x, shape)
    if x.ndim == 0:
        return x.reshape(1)[jnp.zeros(shape, jnp.int32)]
    return x[jnp.broadcast_to(jnp.arange(shape[-1]), shape)]


def gather_rows(tables, pair: Array) -> tuple:
    """``tables`` (``m`` arrays ``[P]``) at ``pair [...]``, by one gather of ``[P, m]`` rows (one index
    computation and one visit of each position for all ``m``, not ``m`` gathers)."""
    rows = jnp.stack(tables, axis=-1)[pair]
    return tuple(rows[..., i] for i in range(len(tables)))


def pair_sum(values: Array, pair: Array, mask: Array, num_pairs: int) -> Array:
    """``[P]`` sums of ``values [S, K]`` over the positions showing each pair (the M-step's segment sum)."""
    return jax.ops.segment_sum(jnp.where(mask, values, 0).ravel(), pair.ravel(), num_segments=num_pairs)


def rank_sum(values: Array, mask: Array, num_positions: int) -> Array:
    """``[K']`` sums of ``values [S, K]`` per position, zero-padded to a table of ``K' >= K``.

    One segment sum of the ``[K]`` rows (every session into one segment): its order of addition is the
    sessions' order whatever the shapes around it, so vmapped lanes give the same bits on any number of
    devices (``jaxrank.lanes``), which a ``jnp.sum`` does not guarantee (XLA vectorises it by shape)."""
    rows = jnp.where(mask, values, 0)
    sums = jax.ops.segment_sum(rows, jnp.zeros(rows.shape[0], jnp.int32), num_segments=1)[0]
    return jnp.pad(sums, (0, num_positions - sums.shape[0]))


def total(values: Array, mask: Array) -> Array:
    """``[]`` sum of ``values [A, B]`` where ``mask`` (either layout, ``[S, K]`` or ``[K, S]``), in an order
    fixed by the shape alone (``rank_sum``'s reason): the ``A`` rows are added as vectors (one segment
    sum), then their ``B`` sums in 64 interleaved running sums (no chain of dependent adds), then those."""
    rows = jnp.where(mask, values, 0)
    columns = jax.ops.segment_sum(rows, jnp.zeros(rows.shape[0], jnp.int32), num_segments=1)[0]
    lanes = jax.ops.segment_sum(columns, jnp.arange(columns.shape[0]) % 64, num_segments=64)
    return jax.ops.segment_sum(lanes, jnp.zeros(64, jnp.int32), num_segments=1)[0]


def observed(log_click: Array, clicks: Array, mask: Array) -> Array:
    """``log P(C_r = c_r | ·)`` from ``log P(C_r = 1 | ·)``: 0 (probability 1) on padding."""
    return jnp.where(mask, jnp.where(clicks, log_click, log1mexp(log_click)), 0.0)


def shown_log_probs(log_click: Array, mask: Array) -> Array:
    """``log P(C_r = 1)`` with −inf on padding."""
    return jnp.where(mask, log_click, -jnp.inf)


def clicks_before(clicks: Array) -> Array:
    """``[..., K]`` i32 number of clicks above each position."""
    c = clicks.astype(jnp.int32)
    return jnp.cumsum(c, axis=-1) - c


def last_click(clicks: Array, mask: Array) -> Array:
    """``[...]`` i32 position of the last click; the session length when there is none (PyClick's
    ``get_last_click_rank``: a session without clicks counts as examined to the end)."""
    k = clicks.shape[-1]
    ranks = jnp.arange(k)
    last = jnp.max(jnp.where(clicks, ranks, -1), axis=-1)
    return jnp.where(last >= 0, last, jnp.sum(mask, axis=-1))


def previous_click(clicks: Array) -> Array:
    """``[..., K]`` i32 position of the last click above each position, ``-1`` if none."""
    k = clicks.shape[-1]
    at = jnp.where(clicks, jnp.arange(k), -1)
    before = jax.lax.cummax(at, axis=at.ndim - 1)
    return jnp.concatenate([jnp.full(at.shape[:-1] + (1,), -1, at.dtype), before[..., :-1]], axis=-1)


@jax.jit
def _id_range(pair, mask):
    """``(smallest, largest)`` pair id over the shown positions (one fused pass, no copy of the log)."""
    return jnp.min(jnp.where(mask, pair, 0)), jnp.max(jnp.where(mask, pair, 0))


def check_fit_log(log, num_pairs: int) -> None:
    """Raises ``ValueError`` for a log a fit cannot use: not ``[S, K]`` with ``S, K >= 1``, or a shown pair
    id outside ``[0, num_pairs)`` (a gather would clamp it and a segment sum drop it, silently).
    A row with no shown position (``jaxrank.data.session_log`` rejects them; chunked fits pad with
    them) adds nothing to a fit or a metric. Traced logs (a fit inside ``jit`` or ``vmap``) pass
    unchecked."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in (log.pair, log.mask)):
        return
    shape = np.shape(log.mask)
    if len(shape) != 2 or np.shape(log.pair) != shape or np.shape(log.clicks) != shape:
        raise ValueError(f"a fit needs a SessionLog with pair, clicks and mask [S, K]; got shapes "
                         f"{np.shape(log.pair)}, {np.shape(log.clicks)}, {shape}.")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"the log has {shape[0]} sessions of {shape[1]} positions; a fit needs at least one session "
                         "with one shown position.")
    with jax.ensure_compile_time_eval():  # concrete even when the fit is called inside a trace (vmap over keys)
        low, high = (int(v) for v in _id_range(log.pair, log.mask))
    if low < 0 or high >= num_pairs:
        bad = low if low < 0 else high
        raise ValueError(f"pair id {bad} of the log is outside [0, num_pairs = {num_pairs}); pass num_pairs > "
                         f"{max(high, 0)} or renumber the pairs (jaxrank.data.session_log checks its ids).")


def checked_num_pairs(log, num_pairs, fit: str) -> int:
    """``num_pairs`` (default ``int(log.num_pairs)``), checked with ``check_fit_log`` before a fit named ``fit``."""
    if num_pairs is None:
        try:
            num_pairs = int(log.num_pairs)
        except (jax.errors.ConcretizationTypeError, TypeError):
            raise ValueError(f"log.num_pairs is traced ({fit} inside jit or vmap); pass num_pairs= as an int.") \
                from None
    check_int("num_pairs", num_pairs, minimum=0)
    check_fit_log(log, num_pairs)
    return num_pairs


def check_sizes(num_pairs, num_positions) -> None:
    """Raises ``ValueError`` unless both sizes are ints, ``num_pairs >= 0`` and ``num_positions >= 1``."""
    for name, value, low in (("num_pairs", num_pairs, 0), ("num_positions", num_positions, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an int >= {low} (a static size, read outside jit: int(log.{name}) "
                             f"or log.num_positions); got {value!r}.")
