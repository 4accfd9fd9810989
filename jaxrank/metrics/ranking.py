"""Ranking metrics over the last axis: DCG, NDCG, AP, precision, ERR.

Every metric has the signature ``metric(scores, labels, *, where=None, topn=None, key=None,
reduce_fn=jnp.mean)`` over ``[..., L]`` arrays (rax semantics): the last axis is one list, leading
axes are batch; ``where`` marks real documents, masked ones sort last and add nothing; lists that
are fully masked are left out of the reduction; ``reduce_fn=None`` returns per-list values ``[...]``.

Score ties are broken by position (the earlier document ranks first) unless a PRNG ``key`` is
given, in which case they are broken by seeded uniform noise (our choice; no paper fixes it): one
key draws ``uniform(key, scores.shape)``; an array of keys, one per list (shape ``scores.shape[:-1]``, or a
shape that broadcasts to it), draws ``uniform(key_q, (L,))`` for list ``q``, so a list's tie-breaks do
not depend on the other lists in the call. Reported numbers should pass a key: single-feature
rankers tie a lot.

Conventions (SOLAR paper, Wang et al., ACL 2015, eq. 1–2; Järvelin & Kekäläinen 2002; Chapelle et al.
2009 for ERR; AP with the LETOR relevance rule):
  DCG@k = sum_{r<=k} (2^l - 1) / log2(1 + r); NDCG = DCG / IDCG, 0 when IDCG = 0;
  AP = (1/m) sum_{r: rel} Prec@r with rel = l > 0; P@k = #rel in top k / min(k, n).
``letor_compat=True`` follows the LETOR ``Eval-Score-4.0.pl`` script instead: gain
table {0: 0, 1: 1, 2: 3}, ranks 1 and 2 undiscounted and ``1/log2(r)`` after, ties kept in input
order, NDCG@k = 0 for a query with fewer than k documents, P@k divided by k, relevant = l in {1, 2}.

Label range. Labels are relevance grades: small non-negative integers (0-4 for MSLR-WEB and Yahoo!
LTR, 0-2 for LETOR 4.0, 0-1 for the .Gov sets). The gain ``2^l - 1`` is computed in float32: it
is ``inf`` from ``l = 128`` on, and a DCG that adds several gains of labels near 127 overflows too,
so DCG becomes ``inf`` and NDCG ``NaN`` without any error. Labels that large are scores, not grades:
rescale them to small integers first (``jaxrank.data.parse_svmlight`` rejects labels >= 128 at load).
"""

from typing import Callable, Optional

import jax
import jax.numpy as jnp

from jaxrank.types import Array, PRNGKey

ReduceFn = Optional[Callable[..., Array]]


def _check(scores, labels, where, topn):
    if jnp.shape(scores) != jnp.shape(labels):
        raise ValueError(
            f"scores and labels must have the same shape [..., L]; got {jnp.shape(scores)} "
            f"and {jnp.shape(labels)}."
        )
    if where is not None and jnp.shape(where) != jnp.shape(scores):
        raise ValueError(f"where must have the shape of scores {jnp.shape(scores)}; got {jnp.shape(where)}.")
    if topn is not None and (not isinstance(topn, int) or topn < 1):
        raise ValueError(f"topn must be a positive int or None; got {topn!r}.")


def _is_single_key(key) -> bool:
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key.ndim == 0
    return key.ndim == 1  # a raw uint32 key of shape [2]


def tie_noise(key, shape) -> Array:
    """``shape`` uniform noise: from one key, or from one key per list (see the module docstring)."""
    if _is_single_key(key):
        return jax.random.uniform(key, shape)
    flat = key.reshape(-1) if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else key.reshape(-1, 2)
    noise = jax.vmap(lambda k: jax.random.uniform(k, shape[-1:]))(flat)
    batch = key.shape if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else key.shape[:-1]
    return jnp.broadcast_to(noise.reshape(batch + shape[-1:]), shape)


def _ranked(scores, labels, where, key, topn):
    """Labels and mask of the top ``k = min(topn, L)`` ranks by descending score: ``[..., k]`` each.

    Masked documents sort last. Without a key, ties keep list order: ``lax.top_k`` guarantees
    that (lower index first) and is much faster than a full sort when ``k < L``.
    """
    list_size = scores.shape[-1]
    k = list_size if topn is None else min(topn, list_size)
    if key is None and k < list_size:
        _, order = jax.lax.top_k(jnp.where(where, scores, -jnp.inf), k)
    else:
        primary = jnp.where(where, -scores, jnp.inf)
        if key is None:
            order = jnp.argsort(primary, axis=-1, stable=True)
        else:
            order = jnp.lexsort((tie_noise(key, jnp.shape(scores)), primary), axis=-1)
        order = order[..., :k]
    return (jnp.take_along_axis(labels, order, axis=-1), jnp.take_along_axis(where, order, axis=-1))


def _positions(num_ranks: int):
    """1-based ranks ``[k]``."""
    return jnp.arange(1, num_ranks + 1, dtype=jnp.float32)


def _gain(labels, letor_compat: bool):
    if letor_compat:  # the script's lookup table: grades above 2 get no gain
        return jnp.where(labels == 1, 1.0, jnp.where(labels == 2, 3.0, 0.0))
    return jnp.exp2(labels) - 1.0


def _discount(pos, letor_compat: bool):
    if letor_compat:  # ranks 1 and 2 share the undiscounted weight
        return jnp.where(pos <= 2, 1.0, 1.0 / jnp.log2(jnp.maximum(pos, 2.0)))
    return 1.0 / jnp.log2(1.0 + pos)


def _relevant(labels, letor_compat: bool):
    return (labels == 1) | (labels == 2) if letor_compat else labels > 0


def _reduce(per_list, where, reduce_fn: ReduceFn):
    if reduce_fn is None:
        return per_list
    return reduce_fn(per_list, where=jnp.any(where, axis=-1))


def _prepare(scores, labels, where, topn):
    _check(scores, labels, where, topn)
    scores = jnp.asarray(scores, jnp.float32)
    labels = jnp.asarray(labels, jnp.float32)
    where = jnp.ones(scores.shape, bool) if where is None else jnp.asarray(where, bool)
    return scores, labels, where


def _dcg_per_list(scores, labels, where, topn, key, letor_compat):
    ranked_labels, ranked_where = _ranked(scores, labels, where, key, topn)
    return _dcg_in_order(ranked_labels, ranked_where, letor_compat)


def _dcg_in_order(ranked_labels, ranked_where, letor_compat):
    gain = jnp.where(ranked_where, _gain(ranked_labels, letor_compat), 0.0)
    return jnp.sum(gain * _discount(_positions(gain.shape[-1]), letor_compat), axis=-1)


def ranked_dcg(ranked_labels: Array, *, where: Optional[Array] = None, letor_compat: bool = False) -> Array:
    """``[...]`` DCG of lists already in rank order (a displayed list), without sorting.

    Args:
      ranked_labels: ``[..., k]`` graded relevance of ranks ``1..k``.
      where: ``[..., k]`` bool, True for ranks that hold a document (default all).
      letor_compat: as :func:`dcg`.
    """
    ranked_labels = jnp.asarray(ranked_labels, jnp.float32)
    where = jnp.ones(ranked_labels.shape, bool) if where is None else jnp.asarray(where, bool)
    return _dcg_in_order(ranked_labels, where, letor_compat)


def dcg(
    scores: Array,
    labels: Array,
    *,
    where: Optional[Array] = None,
    topn: Optional[int] = None,
    key: Optional[PRNGKey] = None,
    letor_compat: bool = False,
    reduce_fn: ReduceFn = jnp.mean,
) -> Array:
    """Discounted cumulative gain at ``topn``.

    Args:
      scores: ``[..., L]`` predicted scores, higher ranks first.
      labels: ``[..., L]`` graded relevance.
      where: ``[..., L]`` bool, True for real documents (default all).
      topn: cutoff ``k`` (default the whole list).
      key: PRNG key, or keys ``[...]`` one per list, for random tie-breaking (default: ties keep
        list order).
      letor_compat: use the gain and discount of LETOR's ``Eval-Score-4.0.pl``.
      reduce_fn: reduction over lists (default mean); None returns ``[...]``.

    Returns:
      The reduced scalar, or per-list values ``[...]``.
    """
    scores, labels, where = _prepare(scores, labels, where, topn)
    key = None if letor_compat else key
    return _reduce(_dcg_per_list(scores, labels, where, topn, key, letor_compat), where, reduce_fn)


def ndcg(
    scores: Array,
    labels: Array,
    *,
    where: Optional[Array] = None,
    topn: Optional[int] = None,
    key: Optional[PRNGKey] = None,
    letor_compat: bool = False,
    reduce_fn: ReduceFn = jnp.mean,
) -> Array:
    """Normalised DCG: DCG@k / ideal DCG@k, 0 for a list with no relevant document.

    Arguments as :func:`dcg`. With ``letor_compat`` a list with fewer than ``topn``
    documents also scores 0 (the script leaves it undefined and averages it as 0).
    """
    scores, labels, where = _prepare(scores, labels, where, topn)
    key = None if letor_compat else key
    actual = _dcg_per_list(scores, labels, where, topn, key, letor_compat)
    # The ideal list sorts by gain (the LETOR table gives grades above 2 no gain).
    ideal = _dcg_per_list(_gain(labels, letor_compat), labels, where, topn, None, letor_compat)
    per_list = jnp.where(ideal > 0, actual / jnp.where(ideal > 0, ideal, 1.0), 0.0)
    if letor_compat and topn is not None:
        per_list = jnp.where(jnp.sum(where, axis=-1) < topn, 0.0, per_list)
    return _reduce(per_list, where, reduce_fn)


def average_precision(
    scores: Array,
    labels: Array,
    *,
    where: Optional[Array] = None,
    topn: Optional[int] = None,
    key: Optional[PRNGKey] = None,
    letor_compat: bool = False,
    reduce_fn: ReduceFn = jnp.mean,
) -> Array:
    """Average precision; the default mean over lists is MAP.

    ``AP = (1/m) sum_{r <= topn, rel_r} Prec@r`` with ``m`` the number of relevant documents in
    the list (0 when ``m = 0``). Relevant means ``label > 0`` (``label in {1, 2}`` with
    ``letor_compat``). Other arguments as :func:`dcg`.
    """
    scores, labels, where = _prepare(scores, labels, where, topn)
    key = None if letor_compat else key
    ranked_labels, ranked_where = _ranked(scores, labels, where, key, topn)
    rel = (_relevant(ranked_labels, letor_compat) & ranked_where).astype(jnp.float32)
    precision_at_r = jnp.cumsum(rel, axis=-1) / _positions(rel.shape[-1])
    num_rel = jnp.sum(_relevant(labels, letor_compat) & where, axis=-1).astype(jnp.float32)
    hits = jnp.sum(precision_at_r * rel, axis=-1)
    return _reduce(jnp.where(num_rel > 0, hits / jnp.maximum(num_rel, 1.0), 0.0), where, reduce_fn)


def precision(
    scores: Array,
    labels: Array,
    *,
    where: Optional[Array] = None,
    topn: Optional[int] = None,
    key: Optional[PRNGKey] = None,
    letor_compat: bool = False,
    reduce_fn: ReduceFn = jnp.mean,
) -> Array:
    """Precision at ``topn``: relevant documents in the top ``k`` over ``min(k, n)``.

    ``n`` is the number of real documents. With ``letor_compat`` the denominator is ``k``
    (missing positions count as non-relevant). Other arguments as :func:`dcg`.
    """
    scores, labels, where = _prepare(scores, labels, where, topn)
    key = None if letor_compat else key
    ranked_labels, ranked_where = _ranked(scores, labels, where, key, topn)
    hits = jnp.sum(_relevant(ranked_labels, letor_compat) & ranked_where, axis=-1)
    num_docs = jnp.sum(where, axis=-1)
    cutoff = num_docs if topn is None else (jnp.full_like(num_docs, topn) if letor_compat else jnp.minimum(num_docs, topn))
    return _reduce(hits / jnp.maximum(cutoff, 1), where, reduce_fn)


def err(
    scores: Array,
    labels: Array,
    *,
    where: Optional[Array] = None,
    topn: Optional[int] = None,
    key: Optional[PRNGKey] = None,
    max_grade: Optional[float] = None,
    reduce_fn: ReduceFn = jnp.mean,
) -> Array:
    """Expected reciprocal rank (Chapelle et al. 2009, eq. 4).

    ``ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i)`` with ``R = (2^l - 1) / 2^max_grade``.

    Args:
      max_grade: required keyword, the top grade of the collection's grade scale (4 for
        MSLR-WEB and Yahoo! LTR, 2 for LETOR 4.0 and OHSUMED, 1 for the .Gov sets), a property of
        the data set, so a list's ERR never depends on the other lists of the call. Labels must
        lie in ``[0, max_grade]``.
      Others as :func:`dcg`.

    Raises:
      ValueError: when ``max_grade`` is not given.
    """
    if max_grade is None:
        # Taking the largest label of the call would make one list's ERR depend on its batch.
        raise ValueError(
            "err() needs max_grade=, the top grade of the collection's grade scale (e.g. max_grade=4 for "
            "MSLR-WEB and Yahoo! LTR, max_grade=2 for LETOR 4.0 / OHSUMED, max_grade=1 for the .Gov sets)."
        )
    scores, labels, where = _prepare(scores, labels, where, topn)
    ranked_labels, ranked_where = _ranked(scores, labels, where, key, topn)
    stop = jnp.where(ranked_where, (jnp.exp2(ranked_labels) - 1.0) / jnp.exp2(max_grade), 0.0)
    # Probability the user reaches rank r: product of (1 - R_i) over the ranks above it.
    reach = jnp.cumprod(1.0 - stop, axis=-1)
    reach = jnp.concatenate([jnp.ones_like(reach[..., :1]), reach[..., :-1]], axis=-1)
    per_list = jnp.sum(reach * stop / _positions(stop.shape[-1]), axis=-1)
    return _reduce(per_list, where, reduce_fn)
