"""Pair samplers for SPD and LCRA (Tsivtsivadze, Hofmann, Heskes 2012, §2.1; SPEC §2.1).

The paper draws two training documents uniformly at random until they share a query and have
different labels: the accepted ordered pair ``(a, b)`` is then uniform over the *ordered* valid
pairs ``P``. Rejection has no fixed cost, so the samplers here draw the same distribution in two
exact, fixed-cost stages over a padded ``QueryBatch``:

* ``"exact"`` (default): document ``a`` with probability ``n_a / |P|``, where ``n_a`` is its number
  of valid partners, then ``b`` uniformly among those partners. ``P(a, b) = n_a/|P| · 1/n_a = 1/|P|``,
  which is the rejection sampler's law; marginally the query is drawn ∝ its number of valid
  ordered pairs and the pair is uniform inside it.
* ``"sofia_rank"``: sofia-ml's ``StochasticRankLoop`` (Sculley 2009): ``a`` uniform over all labeled
  documents, ``b`` uniform among the documents of its query with another label. When ``a`` has no
  partner sofia-ml skips the iteration (its step counter still advances): the draw comes back with
  ``valid=False`` and the learners leave the weights untouched for that step.

Unlabeled pairs ``P̂`` (same query, ``a ≠ b``, labels ignored) use the exact two-stage draw over the
``unlabeled`` documents. Each stage is one ``searchsorted`` on a cumulative weight table built once
per training set, so a step costs ``O(log(Q·L) + L)`` whatever the number of pairs.

Label of a pair: the graded difference ``y = l_a − l_b`` (the paper's); the learners take its sign
for the hinge loss unless asked for the graded label (SPEC §6 item 4).
"""

import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxrank.learners.online.pairs import query_pairs
from jaxrank.types import QueryBatch

SAMPLERS = ("exact", "sofia_rank")


class PairSource(NamedTuple):
    """A training set ready for pair sampling; shapes use ``Q`` queries and ``L`` padded docs."""

    features: jax.Array  # [Q, L, D] f32
    labels: jax.Array  # [Q, L] f32 graded relevance (only read where labeled)
    labeled: jax.Array  # [Q, L] bool, documents whose labels may be used (pairs in P)
    unlabeled: jax.Array  # [Q, L] bool, documents usable only in unlabeled pairs P̂
    labeled_cdf: jax.Array  # [Q·L] i32, cumulative first-stage weights of labeled docs
    unlabeled_cdf: jax.Array  # [Q·L] i32, cumulative first-stage weights of unlabeled docs


class PairBatch(NamedTuple):
    """One step's pairs: ``k`` labeled and ``l`` unlabeled difference vectors."""

    p: jax.Array  # [k, D] f32, x_a − x_b
    y: jax.Array  # [k] f32, graded l_a − l_b (0 where not valid)
    valid: jax.Array  # [k] bool, False only for a skipped sofia_rank draw
    p_hat: jax.Array  # [l, D] f32, x_a − x_b of unlabeled pairs
    valid_hat: jax.Array  # [l] bool, False when the set has no unlabeled pair


def labeled_partners(labels: jax.Array, labeled: jax.Array) -> jax.Array:
    """``[..., L, L]`` bool: ``b`` is a valid partner of ``a`` (both labeled, labels differ)."""
    differ = labels[..., :, None] != labels[..., None, :]
    return labeled[..., :, None] & labeled[..., None, :] & differ


def unlabeled_partners(unlabeled: jax.Array) -> jax.Array:
    """``[..., L, L]`` bool: ``a ≠ b`` are unlabeled documents of the same query."""
    eye = jnp.eye(unlabeled.shape[-1], dtype=bool)
    return unlabeled[..., :, None] & unlabeled[..., None, :] & ~eye


def num_ordered_pairs(batch: QueryBatch) -> jax.Array:
    """``[Q]`` i32 number of ordered valid pairs ``(a, b)`` per query (twice the ``i < j`` slots of
    ``online.pairs.query_pairs``); padding is masked out."""
    valid = jax.vmap(query_pairs)(batch).valid
    return 2 * valid.sum(-1).astype(jnp.int32)


def pair_source(
    batch: QueryBatch,
    labeled: Optional[jax.Array] = None,
    unlabeled: Optional[jax.Array] = None,
    *,
    sampler: str = "exact",
) -> PairSource:
    """Builds the sampling tables of a training set. Jittable and vmappable over the masks.

    Args:
      batch: ``features [Q, L, D]``, ``labels [Q, L]``, ``mask [Q, L]``.
      labeled: ``[Q, L]`` bool, documents whose labels may be used; default ``batch.mask``.
      unlabeled: ``[Q, L]`` bool, documents for ``P̂``; default none.
      sampler: ``"exact"`` or ``"sofia_rank"`` (static), see the module docstring.

    Returns:
      A ``PairSource``. Call ``check_pairs`` on it outside ``jit`` to reject a set with no pair.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}; got {sampler!r}.")
    mask = jnp.asarray(batch.mask, bool)
    labeled = mask if labeled is None else jnp.asarray(labeled, bool) & mask
    unlabeled = jnp.zeros_like(mask) if unlabeled is None else jnp.asarray(unlabeled, bool) & mask
    n_lab = labeled_partners(batch.labels, labeled).sum(-1).astype(jnp.int32)  # [Q, L]
    if sampler == "sofia_rank":
        n_lab = labeled.astype(jnp.int32)  # a uniform over labeled docs, partner or not
    n_unl = jnp.where(unlabeled, unlabeled.sum(-1, keepdims=True) - 1, 0).astype(jnp.int32)
    return PairSource(
        features=batch.features,
        labels=batch.labels,
        labeled=labeled,
        unlabeled=unlabeled,
        labeled_cdf=jnp.cumsum(n_lab.reshape(-1)),
        unlabeled_cdf=jnp.cumsum(n_unl.reshape(-1)),
    )


def check_pairs(source: PairSource, *, need_unlabeled: bool = False) -> None:
    """Raises ValueError when the (concrete) source has no valid labeled pair."""
    num_pairs = labeled_partners(source.labels, source.labeled).sum(axis=(-3, -2, -1))
    if int(jnp.min(num_pairs)) == 0:
        raise ValueError(
            "the training set has no valid pair: no query has two labeled documents with different "
            "labels; give queries with at least two distinct grades (or keep more labels)."
        )
    if need_unlabeled and int(source.unlabeled_cdf[..., -1].min()) == 0:
        raise ValueError(
            "co-regularization needs unlabeled pairs but no query has two unlabeled documents; "
            "pass an unlabeled mask or set mu = 0."
        )


def _searchsorted(cdf: jax.Array, u: jax.Array) -> jax.Array:
    # first index with cdf > u: the u-th unit of weight belongs to it
    return jnp.searchsorted(cdf, u, side="right", method="scan_unrolled").astype(jnp.int32)


def _draw_index(key, cdf, partners_fn, list_size: int):
    """One ordered pair ``(q, a, b, valid)``: ``a`` from ``cdf``, ``b`` uniform over ``partners_fn(q, a)``."""
    key_a, key_b = jax.random.split(key)
    total = cdf[-1]
    idx = _searchsorted(cdf, jax.random.randint(key_a, (), 0, jnp.maximum(total, 1)))
    idx = jnp.minimum(idx, cdf.shape[0] - 1)
    q, a = idx // list_size, idx % list_size
    row = partners_fn(q, a)  # [L] valid partners of a
    n = row.sum()
    r = jax.random.randint(key_b, (), 0, jnp.maximum(n, 1))
    b = jnp.minimum(_searchsorted(jnp.cumsum(row.astype(jnp.int32)), r), list_size - 1)
    return q, a, b, (total > 0) & (n > 0)


def _partners_fn(source: PairSource, unlabeled: bool):
    """``row(q, a) -> [L]`` bool partners of document ``a`` of query ``q`` (one row, not ``[L, L]``)."""
    if unlabeled:
        docs = jnp.arange(source.features.shape[-2])
        return lambda q, a: source.unlabeled[q] & source.unlabeled[q, a] & (docs != a)
    return lambda q, a: source.labeled[q] & source.labeled[q, a] & (source.labels[q] != source.labels[q, a])


def sample_pair_indices(key, source: PairSource, num_draws: int, *, unlabeled: bool = False):
    """``(q, a, b, valid)``, each ``[num_draws]``, of i.i.d. draws from ``P`` (or ``P̂``)."""
    cdf = source.unlabeled_cdf if unlabeled else source.labeled_cdf
    one = functools.partial(_draw_index, cdf=cdf, partners_fn=_partners_fn(source, unlabeled),
                            list_size=source.features.shape[-2])
    return jax.vmap(one)(jax.random.split(key, num_draws))


def sample_pairs(key, source: PairSource, num_labeled: int = 1, num_unlabeled: int = 0) -> PairBatch:
    """Draws ``k = num_labeled`` pairs from ``P`` and ``l = num_unlabeled`` from ``P̂`` (i.i.d.).

    Args:
      key: PRNG key for this step.
      source: from ``pair_source``.
      num_labeled, num_unlabeled: static batch sizes ``k`` and ``l``.

    Returns:
      ``PairBatch`` with ``p [k, D]``, ``y [k]``, ``valid [k]``, ``p_hat [l, D]``, ``valid_hat [l]``.
    """
    key_lab, key_unl = jax.random.split(key)
    dtype = source.features.dtype

    def gather(q, a, b, valid):
        p = source.features[q, a] - source.features[q, b]  # [n, D]: two rows, never a whole query
        p = jnp.where(valid[:, None], p, 0.0).astype(dtype)
        y = jnp.where(valid, source.labels[q, a] - source.labels[q, b], 0.0).astype(dtype)
        return p, y

    q, a, b, valid = sample_pair_indices(key_lab, source, num_labeled)
    p, y = gather(q, a, b, valid)
    q, a, b, valid_hat = sample_pair_indices(key_unl, source, num_unlabeled, unlabeled=True)
    p_hat, _ = gather(q, a, b, valid_hat)
    return PairBatch(p=p, y=y, valid=valid, p_hat=p_hat, valid_hat=valid_hat)
