"""Pairwise squared-hinge RankSVM data term (Laporte et al., TNNLS 2014, §III-A eq. 5; Proposition 1).

The pair operator ``(A w)_p = wᵀ(x_i − x_j)`` runs over the preference pairs ``p = (i, j)``,
``l_i > l_j``, of every query (``jaxrank.pairs``), in one of two forms:

* ``PairRows``: the explicit difference rows ``[P, D]``. A product is one BLAS pass, and on a small
  collection the rows stay in cache (MQ2008 Fold1: 52,325 pairs × 46 features, a float64 gradient
  in about 1 ms); ``[P, D]`` grows with the pairs times the features, so only for small sets.
* ``IndexedPairs``: the documents ``[N, D]`` and each pair's two document indices. A product is
  ``s = X w``, two gathers ``s_i − s_j`` and, for the adjoint, two segment sums back to the
  documents then ``Xᵀ``: ``O(N D + P)`` time and memory, the form for LETOR 3.0 and MSLR
  (TD2004's 1.08M pairs, an MSLR-WEB10K fold's 34M).

``make_pairs`` picks the rows when they take at most ``ROWS_LIMIT_BYTES``. Padding pairs
(``valid = False``) let folds of different sizes share one compiled program.

Scaling (our choice; eq. 5 is the plain sum): ``L̄(w) = (1 / N_p) Σ_p max(0, 1 − wᵀ(x_i − x_j))²``
with ``N_p`` the number of preference pairs, so λ grids need no rescaling between datasets. All pairs keep
``y_p = +1`` (flipping half of them changes nothing without a bias).
"""

from typing import Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.data.ragged import Queries, as_ragged
from jaxrank.pairs import IndexedPairs, PairOperator, PairRows, preference_pairs

ROWS_LIMIT_BYTES = 1 << 28  # explicit difference rows up to 256 MB, pair indices beyond
GRAM_CHUNK = 1 << 15  # pairs per block when accumulating the pair Laplacian


def make_pairs(queries: Queries, *, form: str = "auto", dtype=None, num_pairs: Optional[int] = None,
               num_documents: Optional[int] = None) -> PairOperator:
    """Every preference pair of every query, built once on the host.

    Args:
      queries: ``RaggedQueries`` or ``QueryBatch``.
      form: ``"rows"`` (``PairRows``), ``"index"`` (``IndexedPairs``) or ``"auto"`` (rows when
        ``P·D`` values take at most 256 MB).
      dtype: feature dtype (default float32; enable x64 for float64).
      num_pairs: pad the pair axis to this size ``P`` with invalid pairs (e.g. the largest fold's).
      num_documents: pad the documents to ``N`` (index form; zero rows).
    """
    queries = as_ragged(queries)
    dtype = jnp.dtype(jnp.float32 if dtype is None else dtype)
    index = preference_pairs(queries)
    count = index.num_pairs
    size = count if num_pairs is None else int(num_pairs)
    if size < count:
        raise ValueError(f"num_pairs={num_pairs} is smaller than the collection's {count} preference pairs; "
                         "pass at least that many (or None).")
    if form == "auto":
        form = "rows" if size * queries.num_features * dtype.itemsize <= ROWS_LIMIT_BYTES else "index"
    valid = jnp.asarray(np.arange(size) < count)
    num = jnp.asarray(max(count, 1), dtype)
    if form == "rows":
        x = queries.features.astype(dtype)  # subtract in the solver's dtype
        diffs = np.zeros((size, queries.num_features), dtype)
        diffs[:count] = x[index.first] - x[index.second]
        return PairRows(jax.device_put(diffs), valid, num)
    if form != "index":
        raise ValueError(f"form must be 'rows', 'index' or 'auto'; got {form!r}.")
    docs = queries.num_documents if num_documents is None else int(num_documents)
    if docs < queries.num_documents:
        raise ValueError(f"num_documents={num_documents} is smaller than the collection's {queries.num_documents}.")
    features = np.zeros((docs, queries.num_features), dtype)
    features[: queries.num_documents] = queries.features
    mode = "edge" if count else "constant"  # padding repeats the last pair: ``first`` stays sorted
    first, second = (np.pad(a, (0, size - count), mode=mode) for a in (index.first, index.second))
    return IndexedPairs(jax.device_put(features), jax.device_put(first), jax.device_put(second), valid, num)


def stack_pairs(collections: Sequence[Queries], *, form: str = "auto", dtype=None) -> PairOperator:
    """Training sets of ``F`` folds as one ``PairOperator`` with leaves ``[F, ...]`` (padded to the largest)."""
    collections = [as_ragged(c) for c in collections]
    counts = [preference_pairs(c).num_pairs for c in collections]
    num_features = collections[0].num_features
    if form == "auto":
        form = "rows" if max(counts) * num_features * jnp.dtype(dtype or jnp.float32).itemsize <= ROWS_LIMIT_BYTES \
            else "index"
    docs = max(c.num_documents for c in collections)
    parts = [make_pairs(c, form=form, dtype=dtype, num_pairs=max(counts), num_documents=docs) for c in collections]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *parts)


def pair_margins(w: jax.Array, pairs: PairOperator) -> jax.Array:
    """Margins ``wᵀ(x_i − x_j)`` of the pairs: ``[P]``."""
    if isinstance(pairs, PairRows):
        return pairs.diffs @ w
    scores = pairs.features @ w
    return scores[pairs.first] - scores[pairs.second]


def margin_residuals(margins: jax.Array, pairs: PairOperator) -> jax.Array:
    """``r = max(0, 1 − margin)`` on the preference pairs, 0 on padding (``margins`` from ``pair_margins``)."""
    return jnp.where(pairs.valid, jnp.maximum(1.0 - margins, 0.0), 0.0)


def _residuals(w: jax.Array, pairs: PairOperator) -> jax.Array:
    return margin_residuals(pair_margins(w, pairs), pairs)


def squared_hinge_loss(w: jax.Array, pairs: PairOperator) -> jax.Array:
    """``L̄(w) = Σ_p max(0, 1 − wᵀx_p)² / N_p`` (Laporte et al. 2014, eq. 5, divided by N_p)."""
    r = _residuals(w, pairs)
    return jnp.sum(r * r) / pairs.num_pairs


def pair_adjoint(r: jax.Array, pairs: PairOperator) -> jax.Array:
    """``Aᵀ r = Σ_p r_p (x_i − x_j)`` ``[D]`` for pair weights ``r [P]``."""
    if isinstance(pairs, PairRows):
        return r @ pairs.diffs
    num_docs = pairs.features.shape[0]
    per_doc = (jax.ops.segment_sum(r, pairs.first, num_docs, indices_are_sorted=True)
               - jax.ops.segment_sum(r, pairs.second, num_docs))
    return per_doc @ pairs.features


def squared_hinge_grad(w: jax.Array, pairs: PairOperator) -> jax.Array:
    """Closed form ``∇L̄(w) = −2 Aᵀ r / N_p``, ``r = (1 − A w)₊`` (Laporte et al. 2014, Proposition 1)."""
    return grad_at_margins(pair_margins(w, pairs), pairs)


def grad_at_margins(margins: jax.Array, pairs: PairOperator) -> jax.Array:
    """``∇L̄`` at the point whose pair margins are ``margins`` (one adjoint pass, no forward pass).

    Margins are linear in ``w``, so a solver that keeps the margins of its iterates gets those of
    any extrapolated point ``v = w + β (w − w')`` as ``m + β (m − m')`` without touching the pairs.
    """
    return -2.0 * pair_adjoint(margin_residuals(margins, pairs), pairs) / pairs.num_pairs


def squared_hinge_value_and_grad(w: jax.Array, pairs: PairOperator) -> tuple[jax.Array, jax.Array]:
    r = _residuals(w, pairs)
    return jnp.sum(r * r) / pairs.num_pairs, -2.0 * pair_adjoint(r, pairs) / pairs.num_pairs


def pair_gram(pairs: PairOperator, weights: Optional[jax.Array] = None) -> jax.Array:
    """``[D, D]`` ``Aᵀ diag(a) A = Σ_p a_p (x_i − x_j)(x_i − x_j)ᵀ`` (``a`` = 1 on valid pairs by default).

    Index form: ``Xᵀ L X`` with ``L`` the pair graph's weighted Laplacian, ``L X = deg · X −
    Σ_p a_p (e_i x_jᵀ + e_j x_iᵀ)`` accumulated ``GRAM_CHUNK`` pairs at a time, so no ``[P, D]`` array.
    """
    a = pairs.valid.astype(pairs.features.dtype)
    if weights is not None:
        a = jnp.where(pairs.valid, weights, 0).astype(pairs.features.dtype)
    if isinstance(pairs, PairRows):
        return (pairs.diffs * a[:, None]).T @ pairs.diffs
    x = pairs.features
    num_docs, num = x.shape[0], a.shape[0]
    degree = jax.ops.segment_sum(a, pairs.first, num_docs) + jax.ops.segment_sum(a, pairs.second, num_docs)
    chunk = min(GRAM_CHUNK, num)
    blocks = -(-num // chunk)
    pad = blocks * chunk - num
    first, second, a = (jnp.pad(v, (0, pad)) for v in (pairs.first, pairs.second, a))

    def block(b, lx):
        i, j, w = (jax.lax.dynamic_slice_in_dim(v, b * chunk, chunk) for v in (first, second, a))
        lx = lx.at[i].add(-w[:, None] * x[j])
        return lx.at[j].add(-w[:, None] * x[i])

    lx = jax.lax.fori_loop(0, blocks, block, degree[:, None] * x)
    return x.T @ lx


def generalized_hessian(margins: jax.Array, pairs: PairOperator) -> jax.Array:
    """``[D, D]`` generalised Hessian of ``L̄``, ``(2 / N_p) Σ_{p: m_p < 1} z_p z_pᵀ`` at the point whose
    pair margins are ``margins [P]`` (Chapelle & Keerthi, Inf. Retr. 2010, eq. 8; Mangasarian 2002)."""
    return 2.0 * pair_gram(pairs, pairs.valid & (margins < 1.0)) / pairs.num_pairs


# Seed of the power iteration's start vector when a solver estimates its own step size.
POWER_START_SEED = 0


def lipschitz_constant(key: jax.Array, pairs: PairOperator, num_iters: int = 100) -> jax.Array:
    """``2 σ_max(A)² / N_p`` by power iteration on the ``D x D`` Gram ``AᵀA`` (Proposition 1).

    ``key`` draws the start vector (the solvers use ``POWER_START_SEED``, so a solve is
    deterministic). Returns the Rayleigh quotient of the last iterate (a lower estimate of
    ``σ_max²`` that converges to it; on LETOR features 100 iterations agree with ``eigvalsh`` to
    < 1e-6 relative).
    """
    gram = pair_gram(pairs)
    v0 = jax.random.normal(key, (gram.shape[0],), gram.dtype)

    def body(_, v):
        u = gram @ v
        return u / jnp.maximum(jnp.linalg.norm(u), jnp.finfo(gram.dtype).tiny)

    v = jax.lax.fori_loop(0, num_iters, body, v0 / jnp.linalg.norm(v0))
    return 2.0 * (v @ gram @ v) / pairs.num_pairs


def lambda_max(pairs: PairOperator) -> jax.Array:
    """Smallest λ giving ``w = 0`` for ℓ1: ``‖∇L̄(0)‖∞`` (ℓ1 optimality at 0; 1/N_p scaling)."""
    zero = jnp.zeros(pairs.features.shape[-1], pairs.features.dtype)
    return jnp.max(jnp.abs(squared_hinge_grad(zero, pairs)))
