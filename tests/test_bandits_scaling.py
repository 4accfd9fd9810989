"""Every registered bandit compiles to a program whose size does not depend on the number of arms:
the traced step (and report rule) has the same equations and the same captured constants at
K = 40 and K = 136 (and no more at K = 10), so nothing is unrolled over arms or pairs, and compile
time stays flat in K."""

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import bandits, envs
from jaxrank.utils import prng, random_choice
from jaxrank.utils.choice import first_passing

HPARAMS = {"savage": {"horizon": 1000.0}, "interleaved_filter": {"horizon": 1000.0},
           "beat_the_mean": {"horizon": 1000.0}}


def _subjaxprs(params):
    for value in params.values():
        for sub in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(sub, jax.extend.core.ClosedJaxpr):
                yield sub.jaxpr, sub.consts
            elif isinstance(sub, jax.extend.core.Jaxpr):
                yield sub, ()


def _size(jaxpr, consts=()) -> tuple[int, int]:
    """(equations, elements of captured constants), nested jaxprs (loops, conds, calls) included."""
    equations, constants = 0, sum(int(np.size(c)) for c in consts)
    for eqn in jaxpr.eqns:
        equations += 1
        constants += sum(int(np.size(v.val)) for v in eqn.invars if isinstance(v, jax.extend.core.Literal))
        for sub, sub_consts in _subjaxprs(eqn.params):
            e, c = _size(sub, sub_consts)
            equations, constants = equations + e, constants + c
    return equations, constants


def _traced(algo, name, num_arms):
    env = envs.PrefMatrixEnv(jnp.full((num_arms, num_arms), 0.5, jnp.float32))
    state = algo.init(jax.random.key(0), num_arms, **HPARAMS.get(name, {}))
    step = jax.make_jaxpr(algo.step)(jax.random.key(1), state, env)
    report = jax.make_jaxpr(algo.best_arm)(jax.random.key(1), state)
    return _size(step.jaxpr, step.consts), _size(report.jaxpr, report.consts)


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_traced_step_does_not_grow_with_the_number_of_arms(name):
    """Equal beyond 32 arms; at K = 10 (plain cumsums instead of blocked searches) no larger."""
    algo = bandits.ALGORITHMS.build(name)
    small, medium, large = (_traced(algo, name, k) for k in (10, 40, 136))
    assert medium == large, f"{name}: (equations, constants) of (step, best_arm) at K=40 {medium}, K=136 {large}"
    for part in range(2):
        assert small[part][0] <= large[part][0] and small[part][1] <= large[part][1], (name, small, large)


def test_unrolled_threefry_draws_equal_jax_random():
    keys = jax.random.split(jax.random.key(7), 16)
    for shape in ((), (1,), (4,), (5,), (3, 7)):
        want = jax.vmap(lambda k: jax.random.uniform(jax.random.fold_in(k, 12345), shape))(keys)
        got = jax.jit(jax.vmap(lambda k: prng.uniform(prng.fold_in(k, 12345), shape)))(keys)
        np.testing.assert_array_equal(got, want)
    rbg = jax.random.key(0, impl="rbg")  # other key implementations fall back to jax.random
    np.testing.assert_array_equal(prng.uniform(prng.fold_in(rbg, 3), (4,)),
                                  jax.random.uniform(jax.random.fold_in(rbg, 3), (4,)))


@pytest.mark.parametrize("num_arms", [5, 33, 136])
def test_blocked_choice_equals_the_plain_running_sum(num_arms):
    rng = np.random.default_rng(num_arms)

    def plain(u, where):
        count = jnp.sum(where)
        rank = jnp.minimum(jnp.floor(u * count), jnp.maximum(count - 1, 0))
        return jnp.argmax(jnp.cumsum(where) > rank).astype(jnp.int32)

    for density in (0.0, 0.05, 0.5, 1.0):
        where = jnp.asarray(rng.random((200, num_arms)) < density)
        u = jnp.asarray(rng.random(200), jnp.float32)
        np.testing.assert_array_equal(jax.vmap(random_choice)(u, where), jax.vmap(plain)(u, where))
    x = rng.random((200, num_arms)).astype(np.float32)
    r = (rng.random(200) * x.sum(1)).astype(np.float32)
    want = [np.argmax(np.cumsum(xi, dtype=np.float64) > ri) for xi, ri in zip(x, r)]
    assert np.mean(np.asarray(jax.vmap(first_passing)(x, r)) == want) > 0.99  # float rounding at the edges only
