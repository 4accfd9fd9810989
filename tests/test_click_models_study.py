"""Click-model fits as lanes (``jaxrank.click_models.study``): each lane is the fit ``fit_em`` /
``fit_gradient`` gives alone, the lanes give the same parameters on 1, 2 and 4 devices, and a killed
run resumes from its checkpoint with identical results."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank import lanes
from jaxrank.click_models import CLICK_MODELS, fit_em, fit_gradient, study
from tests import lanes_child
from tests.conftest import REPO, child_env, killed_after_checkpoints
from tests.test_click_models_gradient import _log


def _assert_lane(single, lanes_params, i, **tol):
    for a, b in zip(jax.tree.leaves(single), jax.tree.leaves(lanes_params)):
        np.testing.assert_allclose(np.asarray(a), b[i], **tol)


def test_em_lanes_are_the_single_fits():
    model, log = _log("dbn", num_sessions=300)
    inits = [0.3, 0.5, 0.7]
    # 4 chunks in calls of 3: the last call runs one
    fitted = study.fit_lanes(jax.random.split(jax.random.key(0), 3), "em", model, log=log, hparams={"init": inits},
                             num_steps=20, steps_per_chunk=5, chunks_per_call=3)
    for i, init in enumerate(inits):
        _assert_lane(fit_em(log, model, num_iterations=20, init=init), fitted, i, rtol=1e-6, atol=1e-6)
    # One log per lane (stacked), PyClick's settings, E-steps in chunks of 64 (the last one clamped).
    logs = [_log("pbm", num_sessions=200, seed=s)[1] for s in (1, 2)]
    model = CLICK_MODELS.build("pbm")
    per_lane = study.fit_lanes(jax.random.key(0), "em", model,  # one key: as many lanes as logs
                               logs=jax.tree.map(lambda *x: jnp.stack(x), *logs), num_steps=10, chunk_size=64)
    for i, one in enumerate(logs):
        _assert_lane(fit_em(one, model, num_iterations=10, chunk_size=None), per_lane, i, rtol=1e-5, atol=1e-6)


def test_gradient_lanes_are_the_single_fits():
    model, log = _log("ubm", num_sessions=300)
    keys = jax.random.split(jax.random.key(1), 3)
    rates = [0.01, 0.05, 0.1]
    fitted = study.fit_lanes(keys, "gradient", model, log=log, hparams={"learning_rate": rates}, num_steps=6,
                             steps_per_chunk=2, batch_size=64)
    split = study.fit_lanes(jax.random.key(1), "gradient", model, log=log, hparams={"learning_rate": rates},
                            num_steps=6, steps_per_chunk=2, batch_size=64)  # one key, split into the 3 settings
    for a, b in zip(jax.tree.leaves(split), jax.tree.leaves(fitted)):
        np.testing.assert_array_equal(a, b)
    for i, rate in enumerate(rates):
        _assert_lane(fit_gradient(keys[i], log, model, num_epochs=6, batch_size=64, learning_rate=rate), fitted, i,
                     rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("devices", [2, 4])
def test_one_and_more_devices_give_the_same_parameters(tmp_path, devices):
    """The same bytes on 1 device and on 2 or 4 (6 lanes: 3 a device, or 2 a device and 2 padding lanes).
    A one-device program and a partitioned one are optimised differently by XLA (``gradient.adam``)."""
    out = tmp_path / "many.npz"
    code = ("import sys, jax, numpy as np; from tests import lanes_child; "
            f"r = lanes_child.click_model_fits(); assert jax.device_count() == {devices}; "
            "np.savez(sys.argv[1], **{f'{k}/{i}': np.asarray(x) for k, v in r.items() "
            "for i, x in enumerate(jax.tree.leaves(v))})")
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=REPO, env=child_env(devices),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert jax.device_count() == 1
    one = lanes_child.click_model_fits()
    with np.load(out) as many:
        names = [f"{k}/{i}" for k, v in one.items() for i in range(len(jax.tree.leaves(v)))]
        assert sorted(many.files) == sorted(names)
        for k, v in one.items():
            for i, leaf in enumerate(jax.tree.leaves(v)):
                np.testing.assert_array_equal(many[f"{k}/{i}"], leaf, err_msg=f"{k}/{i}", strict=True)


def test_a_killed_fit_resumes_with_identical_parameters(tmp_path, monkeypatch):
    model, log = _log("ccm", num_sessions=200)
    keys = jax.random.split(jax.random.key(2), 2)
    kwargs = dict(log=log, hparams={"learning_rate": [0.02, 0.05]}, num_steps=6, steps_per_chunk=2, batch_size=50)
    full = study.fit_lanes(keys, "gradient", model, **kwargs)
    checkpoint = lanes.Checkpoint(tmp_path, "ccm", {"model": "ccm"})
    with killed_after_checkpoints(monkeypatch, 2):
        study.fit_lanes(keys, "gradient", model, checkpoint=checkpoint, **kwargs)
    resumed = study.fit_lanes(keys, "gradient", model, checkpoint=checkpoint, **kwargs)
    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs, match", [
    (dict(estimator="newton"), "estimator must be one of 'em', 'gradient'; got 'newton'"),
    (dict(log=None), "pass log= .* or logs="),
    (dict(hparams={"learning_rate": [0.1]}), "em lanes have no hyperparameter 'learning_rate'; they take init"),
    (dict(num_steps=10, steps_per_chunk=3), "steps_per_chunk=3 must divide num_steps=10"),
    (dict(num_pairs=5), r"pair id \d+ of the log is outside \[0, num_pairs = 5\)"),
    (dict(keys=jax.random.split(jax.random.key(0), (2, 2))), r"one PRNG key or \[N\] keys; got shape \(2, 2\)"),
])
def test_bad_arguments_are_named(kwargs, match):
    model, log = _log("pbm", num_sessions=20)
    args = {**dict(estimator="em", model=model, keys=jax.random.split(jax.random.key(0), 1), log=log), **kwargs}
    with pytest.raises(ValueError, match=match):
        study.fit_lanes(args.pop("keys"), args.pop("estimator"), args.pop("model"), **args)


def test_one_key_is_split_into_one_lane_count():
    model, log = _log("pbm", num_sessions=20)
    logs = jax.tree.map(lambda x: jnp.stack([x] * 3), log)
    with pytest.raises(ValueError, match=r"logs and hparams give different lane counts \[2, 3\]"):
        study.fit_lanes(jax.random.key(0), "em", model, logs=logs, hparams={"init": [0.2, 0.5]})


def test_unseen_pairs_keep_the_prior_or_take_the_mean_of_the_known_ones():
    """Two lanes of PBM tables over 4 pairs, 2 known: "prior" changes nothing; "global" gives pairs 2, 3
    the mean probability of pairs 0, 1 of their lane (0.2 and 0.6 -> 0.4; 0.5 and 0.9 -> 0.7), and
    leaves the rank table alone."""
    model = CLICK_MODELS.build("pbm")
    logit = lambda p: np.log(p) - np.log1p(-np.asarray(p))  # noqa: E731
    params = model.init_params(4, 3)._replace(
        attraction=logit(np.asarray([[0.2, 0.6, 0.5, 0.5], [0.5, 0.9, 0.5, 0.5]], np.float32)),
        examination=logit(np.asarray([[0.9, 0.5, 0.3]] * 2, np.float32)))
    assert study.fill_unseen_pairs(model, params, 2, "prior") is params
    filled = study.fill_unseen_pairs(model, params, 2, "global")
    np.testing.assert_allclose(1 / (1 + np.exp(-filled.attraction)), [[0.2, 0.6, 0.4, 0.4], [0.5, 0.9, 0.7, 0.7]],
                               rtol=1e-6)
    np.testing.assert_array_equal(filled.examination, params.examination)
    with pytest.raises(ValueError, match="rule must be one of 'prior', 'global'; got 'rank'"):
        study.fill_unseen_pairs(model, params, 2, "rank")
