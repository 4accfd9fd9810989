"""The ``jaxrank.types.Bandit`` contract, checked for every algorithm of ``jaxrank.bandits.ALGORITHMS``:
each module declares ``HPARAMS`` / ``OPTIONS`` and ``make``; ``step`` keeps the state's structure,
shapes and dtypes, traces once for any state values, keys and hyperparameter values; and the sweep
compiles one program for every matrix and setting."""

import math
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import bandits, envs
from jaxrank.bandits import sweep as sweep_lib
from jaxrank.types import Bandit, StepInfo

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
    "sparring": {"alpha": [0.3, 0.6]},
    "self_sparring": {"eta": [0.5, 1.0]},
    "rex3": {"horizon": [200.0, 400.0]},
}


def _pref():
    return np.asarray(envs.condorcet_matrix(jax.random.key(3), K))


def test_every_registered_bandit_has_a_contract_entry():
    assert set(HPARAMS) == set(bandits.ALGORITHMS)
    with pytest.raises(ValueError, match="unknown bandit 'ucb'; registered: rcs, rucb"):
        bandits.ALGORITHMS["ucb"]  # noqa: B018


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_module_declares_hparams_options_and_make(name):
    module = bandits.ALGORITHMS[name]
    algo = bandits.ALGORITHMS.build(name)
    assert isinstance(algo, Bandit) and algo == module.make()  # equal options, the same (hashable) bandit
    for key, default in module.HPARAMS.items():
        assert isinstance(default, float) and math.isfinite(default), (key, default)
    assert set(HPARAMS[name]) <= set(module.HPARAMS)
    for option, default in module.OPTIONS.items():
        assert bandits.ALGORITHMS.build(name, **{option: default}) == algo


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_step_keeps_the_state_and_traces_once(name):
    algo = bandits.ALGORITHMS.build(name)
    env = envs.PrefMatrixEnv(jnp.asarray(_pref(), jnp.float32))
    first = {k: v[0] for k, v in HPARAMS[name].items()}
    state = algo.init(jax.random.key(0), K, **first)
    traces = []

    def counted_step(k, s):
        traces.append(1)
        return algo.step(k, s, env)

    step = jax.jit(counted_step)
    new, info = step(jax.random.key(1), state)
    chex.assert_trees_all_equal_shapes_and_dtypes(state, new)
    assert isinstance(info, StepInfo)
    assert info.first.dtype == jnp.int32 and info.second.dtype == jnp.int32 and info.first_won.dtype == bool
    assert 0 <= int(info.first) < K and 0 <= int(info.second) < K
    for t in range(2, 6):  # other states and keys: no retrace
        new, _ = step(jax.random.key(t), new)
    other = algo.init(jax.random.key(9), K, **{k: v[1] for k, v in HPARAMS[name].items()})
    step(jax.random.key(7), other)  # other hyperparameter values live in the state: no retrace
    assert len(traces) == 1
    guess = jax.jit(algo.best_arm)(jax.random.key(0), new)
    assert guess.dtype == jnp.int32 and guess.shape == () and 0 <= int(guess) < K


def _counting(name: str, traces: list):
    """Algorithm module ``name`` whose step counts its traces (the same object for every ``make()``)."""
    module = bandits.ALGORITHMS[name]
    algo = module.make()

    def step(key, state, env):
        traces.append(1)
        return algo.step(key, state, env)

    counted = Bandit(algo.init, step, algo.best_arm)
    return types.SimpleNamespace(__name__=name, HPARAMS=module.HPARAMS, OPTIONS=module.OPTIONS,
                                 make=lambda **options: counted)


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_sweep_compiles_one_program_for_all_matrices_settings_and_calls(name):
    """Two matrices x two settings x runs in one program, run in several calls (5 checkpoints of 4
    segments: 32 segments, two calls of 16): the step is traced exactly once."""
    traces = []
    counted = _counting(name, traces)
    prefs = np.stack([_pref(), _pref()])
    first = bandits.run_sweep(jax.random.key(0), counted, prefs, num_runs=2, num_steps=100, hparams=HPARAMS[name],
                          checkpoints=[20, 40, 60, 80, 100], chunk_size=5)
    assert len(traces) == 1
    assert first.regret.shape == (2, 2, 2, 5)
    np.testing.assert_array_equal(first.regret[0], first.regret[1])  # the same matrix twice, the same keys


@pytest.mark.parametrize("name", sorted(bandits.CPU_COMPILER_OPTIONS))
def test_cpu_compiler_options_change_no_result(name):
    """The sweep compiles RCS and Interleaved Filter without XLA:CPU's kernel splitting (and only on
    CPU); the results are the same bits as with it."""
    mesh = bandits.lane_mesh()
    assert sweep_lib.compiler_options_for(name, mesh) == {"xla_disable_hlo_passes": "cpu-parallel-task-assigner"}
    assert sweep_lib.compiler_options_for("rucb", mesh) is None
    run = lambda **kw: bandits.run_sweep(jax.random.key(0), name, _pref(), num_runs=3, num_steps=200,  # noqa: E731
                                     hparams={k: v[:1] for k, v in HPARAMS[name].items()}, checkpoints=[50, 200], **kw)
    one, two = run(), run(compiler_options={})
    np.testing.assert_array_equal(one.regret, two.regret)
    np.testing.assert_array_equal(one.correct, two.correct)


def test_sweep_rejects_bad_arguments_by_name():
    pref = _pref()
    run = lambda **kw: bandits.run_sweep(**{"key": jax.random.key(0), "algorithm": "rcs", "prefs": pref,  # noqa: E731
                                            "num_runs": 1, "num_steps": 10, **kw})
    with pytest.raises(ValueError, match=r"num_steps must be an int; got 2\.5 \(float\)"):
        run(num_steps=2.5)
    with pytest.raises(ValueError, match=r"key must be a PRNG key such as jax.random.key\(0\); got 0"):
        run(key=0)
    with pytest.raises(ValueError, match="bandit 'rcs' has no hyperparameter 'alhpa'; hyperparameters: alpha"):
        run(hparams={"alhpa": [0.5]})
    with pytest.raises(ValueError, match="num_runs must be an int >= 1; got 0"):
        run(num_runs=0)
    with pytest.raises(ValueError, match="unknown bandit 'rsc'; registered: rcs"):
        bandits.run_sweep(jax.random.key(0), "rsc", pref, num_runs=1, num_steps=10)


def test_a_static_option_passed_as_a_hyperparameter_is_a_clear_error():
    """``lerot`` is bound by ``make``; as a hyperparameter it used to fail inside ``jit``."""
    with pytest.raises(ValueError, match=r"bandit 'rcs': 'lerot' is a static option, not a hyperparameter; "
                                         r"build the algorithm with make\(lerot=\.\.\.\)"):
        bandits.run_sweep(jax.random.key(0), bandits.rcs, _pref(), num_runs=1, num_steps=10, hparams={"lerot": [1.0]})
    with pytest.raises(ValueError, match="bandit 'rcs' has no setting 'kweight'; hyperparameters: alpha; options: lerot"):
        bandits.run_sweep(jax.random.key(0), "rcs", _pref(), num_runs=1, num_steps=10, options={"kweight": 0.3})
    with pytest.raises(ValueError, match=r"lerot is an on/off option of make\(\); got 1\.0; pass True or False"):
        bandits.run_sweep(jax.random.key(0), "rcs", _pref(), num_runs=1, num_steps=10, options={"lerot": 1.0})
    lerot = bandits.run_sweep(jax.random.key(0), "rcs", _pref(), num_runs=2, num_steps=50, options={"lerot": True})
    paper = bandits.run_sweep(jax.random.key(0), "rcs", _pref(), num_runs=2, num_steps=50)
    assert not np.array_equal(lerot.regret, paper.regret)
