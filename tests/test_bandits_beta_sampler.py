"""The one Beta sampler of the Thompson-sampling bandits (``jaxrank.utils.beta.beta_sample``: D-TS,
MergeDTS, Self-Sparring, Sparring-TS) against scipy's Beta law, and its uniforms."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.utils import beta


def test_beta_sampler_has_the_beta_law():
    from scipy import stats

    # integer shapes <= 4 (sums of exponentials), larger or fractional ones (Marsaglia-Tsang)
    a = jnp.asarray([1.0, 1.0, 3.0, 40.0, 2000.0, 7.0, 1.0, 300.0, 2.5, 4.0])
    b = jnp.asarray([1.0, 5.0, 2.0, 60.0, 1000.0, 1.0, 1.0, 300.0, 1.5, 4.5])
    draw = jax.jit(jax.vmap(lambda k: beta.beta_sample(jax.random.fold_in(k, 1), beta.uniforms(k, 80), a, b)))
    samples = np.asarray(draw(jax.random.split(jax.random.key(0), 4000)))
    for col in range(a.shape[0]):
        p = stats.kstest(samples[:, col], stats.beta(float(a[col]), float(b[col])).cdf).pvalue
        assert p > 1e-3, (col, p)


def test_uniforms_are_uniform_and_keyed():
    u = np.asarray(beta.uniforms(jax.random.key(0), 10001))
    assert u.shape == (10001,) and 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and len(np.unique(u)) > 9900
    assert not np.array_equal(u[:10], np.asarray(beta.uniforms(jax.random.key(1), 10)))
