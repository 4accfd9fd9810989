"""The ``jaxrank.types.Bandit`` contract, checked for every algorithm of ``jaxrank.bandits.ALGORITHMS``:
``step`` keeps the state's structure, shapes and dtypes, traces once for any state values, keys and
hyperparameter values, and the driver compiles one program for every matrix and setting."""

import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import bandits, envs
from jaxrank.types import StepInfo

K = 5
HPARAMS = {  # two settings of each algorithm's own hyperparameters (defaults where it has none to vary)
    "rcs": {"alpha": [0.3, 0.6]},
    "rucb": {"alpha": [0.3, 0.6]},
    "savage": {"horizon": [200.0, 400.0]},
    "dts": {"alpha": [0.3, 0.6]},
    "rmed": {"kweight": [0.1, 0.3]},
    "interleaved_filter": {"horizon": [200.0, 400.0]},
    "beat_the_mean": {"horizon": [200.0, 400.0]},
    "merge_rucb": {"alpha": [0.6, 1.01]},
    "merge_dts": {"alpha": [0.6, 1.01]},
    "ccb": {"alpha": [0.6, 1.01]},
    "scb": {"epsilon": [0.0, 0.5]},
}


def _pref():
    return np.asarray(envs.condorcet_matrix(jax.random.key(3), K))


def test_every_registered_bandit_has_a_contract_entry():
    assert set(HPARAMS) == set(bandits.ALGORITHMS)
    with pytest.raises(ValueError, match="unknown bandit 'ucb'; registered: rcs, rucb"):
        bandits.algorithm("ucb")


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_step_keeps_the_state_and_traces_once(name):
    algo = bandits.algorithm(name)
    env = envs.PrefMatrixEnv(jnp.asarray(_pref(), jnp.float32))
    first = {k: v[0] for k, v in HPARAMS[name].items()}
    state = algo.init(jax.random.key(0), K, **first)
    traces = []

    def counted_step(s, k):
        traces.append(1)
        return algo.step(s, k, env)

    step = jax.jit(counted_step)
    new, info = step(state, jax.random.key(1))
    chex.assert_trees_all_equal_shapes_and_dtypes(state, new)
    assert isinstance(info, StepInfo)
    assert info.first.dtype == jnp.int32 and info.second.dtype == jnp.int32 and info.first_won.dtype == bool
    assert 0 <= int(info.first) < K and 0 <= int(info.second) < K
    for t in range(2, 6):  # other states and keys: no retrace
        new, _ = step(new, jax.random.key(t))
    other = algo.init(jax.random.key(9), K, **{k: v[1] for k, v in HPARAMS[name].items()})
    step(other, jax.random.key(7))  # other hyperparameter values live in the state: no retrace
    assert len(traces) == 1
    guess = jax.jit(algo.best_arm)(new, jax.random.key(0))
    assert guess.dtype == jnp.int32 and guess.shape == () and 0 <= int(guess) < K


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_simulate_compiles_one_program_for_all_matrices_settings_and_calls(name):
    """Two matrices x two settings x runs in one program, and a second simulation with other
    hyperparameter values, matrices and seed reuses it: the step is traced exactly once."""
    algo = bandits.algorithm(name)
    traces = []

    def step(state, key, env):
        traces.append(1)
        return algo.step(state, key, env)

    counted = types.ModuleType(algo.__name__)  # a module, as the driver expects (hashable, cached by identity)
    counted.init, counted.step, counted.best_arm = algo.init, step, algo.best_arm
    prefs = np.stack([_pref(), _pref()])
    first = bandits.simulate(counted, jax.random.key(0), prefs, num_runs=2, num_steps=60, hparams=HPARAMS[name],
                             checkpoints=[20, 60])
    again = {k: [2 * x for x in v] for k, v in HPARAMS[name].items()}
    bandits.simulate(counted, jax.random.key(1), prefs[::-1], num_runs=2, num_steps=60, hparams=again,
                     checkpoints=[20, 60])
    assert len(traces) == 1
    assert first.regret.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(first.regret[0], first.regret[1])  # the same matrix twice, the same keys


@pytest.mark.parametrize("name", sorted(n for n, a in bandits.ALGORITHMS.items() if not getattr(a, "SPLIT_CPU_KERNELS", True)))
def test_unsplit_cpu_kernels_change_no_result(name):
    """``SPLIT_CPU_KERNELS = False`` compiles the run without XLA:CPU's kernel splitting (and only on
    CPU); the results are the same bits as with it."""
    from jaxrank.bandits import driver

    algo = bandits.algorithm(name)
    mesh = bandits.lane_mesh()
    assert driver._compiler_options(algo, mesh) == {"xla_disable_hlo_passes": "cpu-parallel-task-assigner"}
    split = types.ModuleType(algo.__name__)  # the same functions, without the declaration
    split.init, split.step, split.best_arm = algo.init, algo.step, algo.best_arm
    assert driver._compiler_options(split, mesh) is None and driver._compiler_options(bandits.rucb, mesh) is None
    run = lambda a: bandits.simulate(a, jax.random.key(0), _pref(), num_runs=3, num_steps=200,  # noqa: E731
                                     hparams={k: v[:1] for k, v in HPARAMS[name].items()}, checkpoints=[50, 200])
    one, two = run(algo), run(split)
    np.testing.assert_array_equal(one.regret, two.regret)
    np.testing.assert_array_equal(one.correct, two.correct)


def test_simulate_rejects_bad_arguments_by_name():
    pref = _pref()
    run = lambda **kw: bandits.simulate(bandits.rcs, **{"key": jax.random.key(0), "prefs": pref, "num_runs": 1,  # noqa: E731
                                                         "num_steps": 10, **kw})
    with pytest.raises(ValueError, match=r"num_steps must be an int; got 2\.5 \(float\)"):
        run(num_steps=2.5)
    with pytest.raises(ValueError, match=r"key must be a PRNG key such as jax.random.key\(0\); got 0"):
        run(key=0)
    with pytest.raises(ValueError, match="has no hyperparameter 'alhpa'; it takes alpha, lerot"):
        run(hparams={"alhpa": [0.5]})
    with pytest.raises(ValueError, match="num_runs must be an int >= 1; got 0"):
        run(num_runs=0)
