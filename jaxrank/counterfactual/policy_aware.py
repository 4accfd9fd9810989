"""The policy-aware propensity for top-k rankings (Oosterhuis & de Rijke, SIGIR 2020).

When only the top ``K`` of a ranking is shown, a document below ``K`` is never examined, and the
per-rank IPS estimator of Joachims et al. (2017) ("policy-oblivious": ``c_d / θ_{rank(d)}``) cannot
correct for it: documents the logger never shows get no click and no credit. With a **stochastic**
logging policy ``π`` (e.g. Plackett–Luce, ``jaxrank.counterfactual.logging_policy``), the
policy-aware estimator divides each click by the document's examination probability *over the
policy's randomness*,

    ρ_d = E_{y∼π}[θ_{rank(d | y)}] = Σ_k P_π(d at rank k) θ_k          (θ_k = 0 for k ≥ K),

(the paper's §4, "policy-aware propensity"; HarrieO/2020topkunbiasedltr computes the per-rank
placement probabilities by sampling), which is unbiased for every document with ``ρ_d > 0``, i.e.
every document the policy can place in the top ``K``. Plug ``ρ`` into the losses of
``jaxrank.counterfactual.ips_losses`` as ``propensities`` with the document's clicks summed over ranks.
Under trust bias the same expectation of ``alpha`` is the doubly robust estimator's expected
treatment (``jaxrank.counterfactual.doubly_robust``).
"""

import jax.numpy as jnp

from jaxrank.counterfactual.simulation import ClickCounts
from jaxrank.types import Array


def expected_examination(placement: Array, examination: Array) -> Array:
    """``[..., L]`` ``ρ_d = Σ_k placement[d, k] · examination[k]``.

    Args:
      placement: ``[..., L, K]`` ``P(d at rank k)`` (``jaxrank.counterfactual.logging_policy.placement_probabilities``,
        or ``display_frequencies`` of a log).
      examination: ``[K']`` (``K' >= K``) examination probability (or ``alpha``) per rank.
    """
    num_positions = placement.shape[-1]
    if examination.shape[-1] < num_positions:
        raise ValueError(f"examination covers {examination.shape[-1]} ranks; the placement has {num_positions}.")
    return placement @ examination[:num_positions]


def rank_ips_rates(counts: ClickCounts, examination: Array, *, clip=None) -> Array:
    """``[..., Q, L]`` the policy-oblivious (per-rank) IPS click rate ``Σ_k clicks[d, k] / max(θ_k, τ)`` per
    session (Joachims et al. 2017; biased for documents a top-k policy may leave out)."""
    theta = examination[: counts.clicks.shape[-1]]
    if clip is not None:
        theta = jnp.maximum(theta, clip)
    return jnp.sum(counts.clicks / theta, axis=-1) / jnp.maximum(counts.sessions[..., :, None], 1.0)
