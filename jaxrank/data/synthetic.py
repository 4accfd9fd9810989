"""Seeded synthetic learning-to-rank data for property tests and runs with no data."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import PRNGKey, QueryBatch


def synthetic_queries(
    key: PRNGKey,
    *,
    num_queries: int = 32,
    list_size: int = 16,
    num_features: int = 8,
    num_informative: int = 3,
    num_grades: int = 3,
    min_docs: int = 2,
    noise: float = 0.5,
) -> QueryBatch:
    """Queries whose graded labels depend on the first ``num_informative`` features.

    Features are uniform in [0, 1] (as after per-query normalisation). A latent relevance
    ``x[:num_informative] @ w + noise * N(0, 1)`` with positive ``w`` is standardised over the
    collection and cut at thresholds that make most documents non-relevant, as in LETOR.

    Returns:
      ``QueryBatch`` with ``features [Q, L, D]``, ``labels [Q, L]`` in ``{0..num_grades-1}``,
      ``mask [Q, L]`` with between ``min_docs`` and ``L`` real documents per query, ``qid [Q]``.
    """
    if not 1 <= min_docs <= list_size:
        raise ValueError(f"need 1 <= min_docs <= list_size; got min_docs={min_docs}, list_size={list_size}.")
    if not 0 <= num_informative <= num_features or num_grades < 2:
        raise ValueError(
            f"need 0 <= num_informative <= num_features and num_grades >= 2; got num_informative="
            f"{num_informative}, num_features={num_features}, num_grades={num_grades}."
        )
    key_len, key_x, key_w, key_noise = jax.random.split(key, 4)
    lengths = jax.random.randint(key_len, (num_queries,), min_docs, list_size + 1)
    mask = jnp.arange(list_size) < lengths[:, None]
    features = jax.random.uniform(key_x, (num_queries, list_size, num_features))
    weights = jnp.where(jnp.arange(num_features) < num_informative,
                        jax.random.uniform(key_w, (num_features,), minval=0.5, maxval=1.5), 0.0)
    latent = features @ weights + noise * jax.random.normal(key_noise, (num_queries, list_size))
    mean = jnp.mean(latent, where=mask)
    std = jnp.std(latent, where=mask)
    z = (latent - mean) / jnp.maximum(std, 1e-6)
    thresholds = jnp.linspace(0.5, 2.0, num_grades - 1)  # about 70% of documents get grade 0
    labels = jnp.sum(z[..., None] > thresholds, axis=-1).astype(jnp.float32)
    return QueryBatch(
        features=jnp.where(mask[..., None], features, 0.0),
        labels=jnp.where(mask, labels, 0.0),
        mask=mask,
        qid=np.arange(num_queries, dtype=np.int64),
    )
