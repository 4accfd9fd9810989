"""The displayed top ``k`` of a ranking: by score, or sampled from a Plackett–Luce model.

Plackett–Luce (Plackett 1975; Luce 1959; as the stochastic ranker of Oosterhuis & de Rijke, CIKM
2018, eq. 1–2) places documents position by position without replacement,

    P(R | f, D) = Π_{r=1..k} exp(f(R_r) / τ) / Σ_{d ∈ D \\ {R_1..R_{r-1}}} exp(f(d) / τ),

with scores ``f`` and temperature ``τ``. The Gumbel-top-k trick draws it exactly: the ``k`` largest
of ``f(d) + τ g_d`` with i.i.d. standard Gumbel ``g_d`` (Yellott 1977; Kool, van Hoof, Welling,
ICML 2019, §2), one ``top_k`` instead of ``k`` sequential softmax draws. ``τ = 0`` is the
deterministic ranking by score.

One convention for every list in ``jaxrank``: the real documents come first, ``shown [.., k]`` is
True on the ``min(k, #real)`` front positions, and ``docs = -1`` on the positions behind them.
Gather with ``jnp.maximum(docs, 0)`` (or ``jnp.where(shown, docs, 0)``) and mask by ``shown``.
Ties (equal noisy scores) go to the lower document index, as ``lax.top_k`` keeps it first.

Random draws: ``jax.random.gumbel(key, scores.shape, scores.dtype)``.
"""

import jax
import jax.numpy as jnp

from jaxrank.types import Array, PRNGKey


def top_k_list(scores: Array, where: Array, list_size: int) -> tuple[Array, Array]:
    """The top ``k`` real documents by descending score (ties by the lower index).

    Args:
      scores: ``[..., L]`` scores; a real document with score ``-inf`` still ranks above padding.
      where: ``[..., L]`` bool, real documents.
      list_size: ``k``, a static int (may exceed ``L``; the extra positions are not shown).

    Returns:
      ``(docs [..., k] i32, shown [..., k] bool)``: ``docs[r]`` the document at 0-based position
      ``r``, ``-1`` where ``shown`` is False.
    """
    where = jnp.asarray(where, bool)
    scores = jnp.asarray(scores)
    # Clamping keeps a real -inf score above the -inf of padding (a no-op for every finite score).
    lowest = jnp.finfo(scores.dtype).min
    ordered = jnp.where(where, jnp.maximum(scores, lowest), -jnp.inf)
    num_docs = scores.shape[-1]
    k = min(list_size, num_docs)
    docs = jax.lax.top_k(ordered, k)[1]
    shown = jnp.arange(list_size) < jnp.sum(where, axis=-1, keepdims=True)
    pad = [(0, 0)] * (docs.ndim - 1) + [(0, list_size - k)]
    docs = jnp.pad(docs, pad, constant_values=-1)
    return jnp.where(shown, docs, -1).astype(jnp.int32), shown


def plackett_luce_top_k(key: PRNGKey, scores: Array, where: Array, list_size: int, *,
                        temperature=1.0) -> tuple[Array, Array]:
    """The top ``k`` of one Plackett–Luce ranking of the real documents (the module's equation).

    Args:
      key: PRNG key; one Gumbel draw per document.
      scores: ``[..., L]`` f32 scores ``f``.
      where: ``[..., L]`` bool, real documents.
      list_size: ``k``, a static int.
      temperature: ``τ >= 0`` (a scalar, may be traced); 0 gives ``top_k_list(scores, ...)``.

    Returns:
      ``(docs [..., k] i32, shown [..., k] bool)`` as ``top_k_list``.
    """
    scores = jnp.asarray(scores)
    noisy = scores + temperature * jax.random.gumbel(key, scores.shape, scores.dtype)
    return top_k_list(noisy, where, list_size)
