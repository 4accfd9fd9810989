"""The logging (production) policy of the semi-synthetic protocol: a weak ranker whose top-k is shown.

Joachims, Swaminathan & Schnabel (WSDM 2017, §6) log clicks on the rankings of a "production ranker",
a RankSVM trained on **1%** of the training queries with their true labels (so are ULTRA's
``example/Yahoo/offline_exp_pipeline.sh``, ``sample_libsvm_data.py ... 0.01``, and Oosterhuis's
``pretrained_model.txt``, ``percentage_of_data: 0.01``). ``train_logging_ranker`` fits jaxrank's primal
RankSVM (``jaxrank.solvers.ranksvm``) on such a sample, drawn with an explicit key among the queries
that hold at least one preference pair.

The policy shows the first ``K`` documents of the ranking by score, deterministically, or stochastically
as a Plackett–Luce draw from ``softmax(scores / temperature)`` (Gumbel-max trick), the stochastic
logging policy of Oosterhuis & de Rijke (SIGIR 2020, §5) and Oosterhuis (TOIS 2023).
``ragged_shown_documents`` gives every query's deterministic top ``K`` of a ragged collection
(flat ``[N]`` scores, ``[Q + 1]`` offsets) with one sort, so a WEB30K-sized set is never padded;
``blocked_shown_documents`` gives the same lists from ``lax.top_k`` over the power-of-two blocks of a
``propensity_svm.RaggedLayout`` (no sort of ``N``: several times faster on CPU).
``placement_probabilities`` gives ``P(document d at rank k)`` under either: exact for the deterministic
policy, a Monte-Carlo average of ``num_samples`` Gumbel draws for the stochastic one (what Oosterhuis's
``prob_per_rank_query`` does, HarrieO/2022-doubly-robust-LTR ``utils/estimators.py``).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.click_models.generate import fixed_lists
from jaxrank.clicks.plackett_luce import plackett_luce_top_k
from jaxrank.data.ragged import as_ragged, take_queries
from jaxrank.solvers.pairwise import make_pairs
from jaxrank.solvers.ranksvm import RankSVMInfo, ranksvm
from jaxrank.types import Array, PRNGKey
from jaxrank.utils.checks import check_number


def train_logging_ranker(key: PRNGKey, queries, *, fraction=0.01, lam=1e-3) -> tuple[Array, RankSVMInfo, np.ndarray]:
    """RankSVM on a random ``fraction`` of ``queries`` (host-side; the sample is drawn with ``key``).

    Args:
      key: PRNG key of the query sample.
      queries: the training queries (``RaggedQueries`` or ``QueryBatch``) with true labels.
      fraction: share of the queries with a preference pair to train on (at least one query).
      lam: the RankSVM's ``λ`` (``jaxrank.solvers.ranksvm``).

    Returns:
      ``(w [D], info, chosen [n] i64)``: the weights, the solver's report and the indices of the chosen queries.
    """
    check_number("fraction", fraction, low=0.0, high=1.0, high_inclusive=True)
    ragged = as_ragged(queries)
    starts, lengths = ragged.offsets[:-1], ragged.lengths
    # a query has a preference pair iff its labels are not all equal
    lo = np.minimum.reduceat(ragged.labels, starts) if ragged.num_queries else np.zeros(0)
    hi = np.maximum.reduceat(ragged.labels, starts) if ragged.num_queries else np.zeros(0)
    usable = np.flatnonzero((hi > lo) & (lengths > 1))
    if usable.size == 0:
        raise ValueError("no query has two documents of different grades: the logging ranker has nothing to learn.")
    count = max(1, int(round(fraction * usable.size)))
    chosen = np.sort(usable[np.asarray(jax.random.permutation(key, usable.size))[:count]])
    w, info = jax.jit(ranksvm)(make_pairs(take_queries(ragged, chosen)), jnp.float32(lam))
    return w, info, chosen


def shown_documents(key: PRNGKey, scores: Array, mask: Array, temperature, num_positions: int) -> tuple[Array, Array]:
    """One displayed top-``K`` list of one query: ``(docs [K] i32, shown [K] bool)``.

    Documents sorted by ``scores [L] + temperature · Gumbel`` (masked ones last, ties by index:
    ``lax.top_k`` keeps the lower index first); ``docs`` is 0 where nothing is shown (lists shorter than ``K``).
    """
    docs, shown = plackett_luce_top_k(key, scores, mask, num_positions, temperature=temperature)
    return jnp.maximum(docs, 0), shown


def deterministic_lists(scores: Array, mask: Array, num_positions: int) -> tuple[Array, Array]:
    """``(docs [Q, K] i32, shown [Q, K] bool)``: every query's ``shown_documents`` at temperature 0
    (descending ``scores [Q, L]``, ties by the lower index), drawing nothing."""
    return fixed_lists(mask, num_positions, scores=scores)


@functools.partial(jax.jit, static_argnames=("num_positions",))
def ragged_shown_documents(scores: Array, offsets: Array, num_positions: int) -> tuple[Array, Array]:
    """Every query's deterministic top ``K`` in a ragged collection: ``(rows [Q, K] i32, shown [Q, K] bool)``.

    The same lists as ``shown_documents`` with temperature 0 query by query (descending score, ties by
    the lower index), from one lexicographic sort by (query, −score) of the ``N`` documents.

    Args:
      scores: ``[N]`` logging scores of the flat documents.
      offsets: ``[Q + 1]`` query offsets (query ``q`` owns rows ``offsets[q]:offsets[q + 1]``).
      num_positions: ``K``.

    Returns:
      ``rows``: the flat row of the document shown at each rank (where nothing is shown, the query's
      first row, or the last row of the collection for an empty query after it); ``shown``: rank ``k``
      holds a document (the query has more than ``k`` documents).
    """
    offsets = jnp.asarray(offsets, jnp.int32)
    starts, lengths = offsets[:-1], offsets[1:] - offsets[:-1]
    query_of = jnp.searchsorted(offsets, jnp.arange(scores.shape[0], dtype=jnp.int32), side="right") - 1
    order = jnp.lexsort((0.0 - scores, query_of)).astype(jnp.int32)  # stable: equal scores keep the lower row first
    position = starts[:, None] + jnp.arange(num_positions, dtype=jnp.int32)  # [Q, K] slots of the sorted order
    shown = jnp.arange(num_positions) < lengths[:, None]
    fill = jnp.minimum(starts, max(scores.shape[0] - 1, 0))[:, None]  # a row inside the collection
    rows = order[jnp.where(shown, position, fill)]
    return jnp.where(shown, rows, fill), shown


def blocked_shown_documents(scores: Array, layout, num_positions: int) -> tuple[Array, Array]:
    """``ragged_shown_documents`` over the blocks of ``layout`` (``propensity_svm.ragged_layout`` of every
    document: a query's candidates must be all its documents, in row order).

    Args:
      scores: ``[N]``.
      layout: ``RaggedLayout`` (its slots hold each query's rows in increasing order, ``N`` past the end).
      num_positions: ``K``.

    Returns:
      ``(rows [Q, K] i32, shown [Q, K] bool)`` for every query of ``layout`` (a query without documents
      shows none, its rows 0).
    """
    num_docs = scores.shape[0]
    num_queries = layout.counts.shape[0]
    rows = jnp.zeros((num_queries, num_positions), jnp.int32)
    shown = jnp.zeros((num_queries, num_positions), bool)
    padded = jnp.concatenate([scores, jnp.zeros(1, scores.dtype)])
    for slots, queries in zip(layout.slots, layout.queries):  # a few static block shapes
        width = max(slots.shape[1], num_positions)
        slots = jnp.pad(slots, ((0, 0), (0, width - slots.shape[1])), constant_values=num_docs)
        real = slots < num_docs
        # top_k keeps the lower slot (the lower row) first among equal scores: ties as ragged_shown_documents
        order = jax.lax.top_k(jnp.where(real, padded[slots], -jnp.inf), num_positions)[1]
        block_shown = jnp.take_along_axis(real, order, axis=1)
        block_rows = jnp.take_along_axis(slots, order, axis=1)
        rows = rows.at[queries].set(jnp.where(block_shown, block_rows, slots[:, :1]))
        shown = shown.at[queries].set(block_shown)
    return rows, shown


def ranks_of(docs: Array, shown: Array, num_docs: int) -> Array:
    """``[L]`` i32 rank (0-based) of each document in a displayed list, ``-1`` when not shown."""
    return jnp.full(num_docs, -1, jnp.int32).at[jnp.where(shown, docs, num_docs)].set(
        jnp.arange(docs.shape[-1], dtype=jnp.int32), mode="drop")


@functools.partial(jax.jit, static_argnames=("num_positions", "num_samples"))
def placement_probabilities(key: PRNGKey, scores: Array, mask: Array, temperature, *, num_positions: int,
                            num_samples: int = 1000) -> Array:
    """``[..., L, K]`` ``P(document d shown at rank k)`` under the logging policy.

    ``temperature = 0`` (deterministic top-``K``) gives the exact one-hot placement; otherwise the average of
    ``num_samples`` Plackett–Luce draws (sample ``i`` of list ``b`` uses ``fold_in(fold_in(key, b), i)``).

    Args:
      key: PRNG key.
      scores, mask: ``[..., L]`` logging scores and real documents.
      temperature: ``[]`` Plackett–Luce temperature (0: deterministic).
      num_positions: ``K``.
      num_samples: Monte-Carlo draws per list.
    """
    batch = scores.shape[:-1]
    flat_scores, flat_mask = scores.reshape(-1, scores.shape[-1]), mask.reshape(-1, mask.shape[-1])
    num_docs = scores.shape[-1]

    def one_list(b, s, m):
        def draw(i):
            docs, shown = shown_documents(jax.random.fold_in(jax.random.fold_in(key, b), i), s, m, temperature,
                                          num_positions)
            ranks = ranks_of(docs, shown, num_docs)
            return jax.nn.one_hot(ranks, num_positions, dtype=jnp.float32)  # -1 gives a zero row

        # a scalar predicate: only the branch taken runs (the deterministic policy needs one draw)
        return jax.lax.cond(
            temperature > 0,
            lambda: jax.lax.map(draw, jnp.arange(num_samples), batch_size=min(num_samples, 256)).mean(0),
            lambda: draw(0))

    out = jax.vmap(one_list)(jnp.arange(flat_scores.shape[0]), flat_scores, flat_mask)
    return out.reshape(batch + (num_docs, num_positions))
