"""The one Plackett–Luce top-k sampler: its law against eq. 2 of Oosterhuis & de Rijke (2018),
the temperature, and the padding convention (``docs = -1`` behind the shown positions)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.clicks import plackett_luce_top_k, top_k_list
from tests.reference import oltr as ref


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sampled_top_two_has_the_plackett_luce_law(temperature):
    """Frequencies of the displayed top 2 of 3 real documents (a 4th, masked, never shows) match
    ``Π_r e^{f/τ} / Σ_remaining e^{f/τ}``."""
    scores = jnp.asarray([1.0, 0.0, 9.0, -0.5])
    where = jnp.asarray([True, True, False, True])
    keys = jax.random.split(jax.random.key(0), 40_000)
    docs, shown = jax.vmap(lambda k: plackett_luce_top_k(k, scores, where, 2, temperature=temperature))(keys)
    docs = np.asarray(docs)
    assert np.asarray(shown).all()
    real = [0, 1, 3]
    tempered = np.asarray(scores, np.float64)[real] / temperature
    for a, b in itertools.permutations(range(3), 2):
        freq = np.mean((docs[:, 0] == real[a]) & (docs[:, 1] == real[b]))
        exact = ref.pl_probability([a, b] + [d for d in range(3) if d not in (a, b)], tempered, range(2))
        assert abs(freq - exact) < 0.01, (a, b, freq, exact)


def test_zero_temperature_is_the_ranking_by_score():
    """τ = 0: descending score over the real documents, ties by the lower index (a stable NumPy sort)."""
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 3, size=(5, 7)).astype(np.float32)  # many ties
    where = rng.random((5, 7)) < 0.8
    docs, shown = jax.vmap(lambda s, w: plackett_luce_top_k(jax.random.key(1), s, w, 4, temperature=0.0))(
        jnp.asarray(scores), jnp.asarray(where))
    for q in range(5):
        real = np.flatnonzero(where[q])
        expected = real[np.argsort(-scores[q, real], kind="stable")][:4]
        n = len(expected)
        np.testing.assert_array_equal(np.asarray(docs[q, :n]), expected)
        np.testing.assert_array_equal(np.asarray(docs[q, n:]), -1)
        np.testing.assert_array_equal(np.asarray(shown[q]), np.arange(4) < n)


def test_short_lists_pad_with_minus_one_and_minus_inf_scores_stay_real():
    """``k`` beyond ``L`` and beyond the real documents: the real ones first (a real ``-inf`` score
    included, above padding), then ``docs = -1``, ``shown = False``."""
    scores = jnp.asarray([0.5, -jnp.inf, 2.0, 7.0])
    where = jnp.asarray([True, True, True, False])
    docs, shown = top_k_list(scores, where, 6)
    np.testing.assert_array_equal(np.asarray(docs), [2, 0, 1, -1, -1, -1])
    np.testing.assert_array_equal(np.asarray(shown), [True, True, True, False, False, False])
    assert docs.dtype == jnp.int32


def test_leading_batch_axes_match_one_list_at_a_time():
    """``[..., L]`` inputs: each row is the list of that row alone (same Gumbel draws, row by row)."""
    key = jax.random.key(5)
    scores = jax.random.normal(jax.random.key(6), (2, 3, 5))
    where = jnp.arange(5) < jnp.asarray([[5], [3], [1]])
    docs, shown = plackett_luce_top_k(key, scores, jnp.broadcast_to(where, (2, 3, 5)), 4)
    noisy = scores + jax.random.gumbel(key, scores.shape)
    for i, j in itertools.product(range(2), range(3)):
        one_docs, one_shown = top_k_list(noisy[i, j], where[j], 4)
        np.testing.assert_array_equal(np.asarray(docs[i, j]), np.asarray(one_docs))
        np.testing.assert_array_equal(np.asarray(shown[i, j]), np.asarray(one_shown))
