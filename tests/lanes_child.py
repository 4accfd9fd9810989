"""Runs every study of jaxrank at a tiny size on a mesh of N host devices (or across the processes
of ``jax.distributed``) and saves each study's results: ``tests/test_lanes.py`` checks that they are
bit-identical whatever the mesh.

``python -m tests.lanes_child OUT.npz [COORDINATOR NUM_PROCESSES PROCESS_ID]``; the device count
comes from ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set by the caller, and the mesh
spans every device (of every process).
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank import lanes


def _toy_init(key, hparams, data, lane_data):
    return (key, jnp.zeros(3, jnp.float32) + lane_data)


def _toy_advance(carry, chunk, data, lane_data):
    key, x = carry
    step = jax.random.uniform(jax.random.fold_in(key, chunk), (3,))
    return key, x * data + step


def _toy_result(carry, data, lane_data):
    return carry[1]


TOY = lanes.Study(_toy_init, _toy_advance, _toy_result)
TOY_LANES = 5  # not a multiple of 2 or 4: the runner pads


def toy(mesh=None, chunks_per_call=2, **kwargs):
    """A random walk per lane: the runner's own study, ``[TOY_LANES, 3]``."""
    keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(7), i))(jnp.arange(TOY_LANES))
    return lanes.run_lanes(TOY, keys, data=jnp.float32(0.5), lane_data=np.arange(TOY_LANES, dtype=np.float32),
                           chunks=np.arange(6, dtype=np.uint32), chunks_per_call=chunks_per_call, mesh=mesh, **kwargs)


def oltr_grid(mesh=None):
    """An OLTR grid (``jaxrank.oltr.simulate_grid``): PDGD over 2 folds x 3 click models x 3 runs of
    tiny synthetic queries."""
    from jaxrank import data, oltr
    from jaxrank.clicks import cascade_model

    folds = {k: tuple(data.as_ragged(data.synthetic_queries(jax.random.key(10 * k + p), num_queries=6, list_size=12,
                                                            num_features=5)) for p in (0, 1)) for k in (1, 2)}
    train, test, _ = oltr.stack_folds(folds, (1, 2))
    names = ("perfect", "navigational", "informational")
    models = jax.tree.map(lambda *x: jnp.stack(x), *[cascade_model(m, 3) for m in names])
    keys = oltr.lane_keys(0, (1, 2), 3, 3)  # 18 lanes: padded to 20 on 4 devices
    return [oltr.simulate_grid(keys, oltr.RANKERS.build(name, **options), train, test, models, checkpoints=(0, 4, 12),
                               mesh=mesh)
            for name, options in (("pdgd", {}),)]


def _learner_queries():
    from jaxrank.data import synthetic_queries

    return synthetic_queries(jax.random.key(3), num_queries=12, list_size=8, num_features=4)


def online_passes(mesh=None, **kwargs):
    """SOLAR-II's online passes, 3 permutations as lanes (``online_pass.pass_study``)."""
    from jaxrank.learners import LEARNERS
    from jaxrank.learners.online import online_pass, streams

    batch, learner = _learner_queries(), LEARNERS.build("solar_second_order")
    keys = online_pass.permutation_keys(jax.random.key(1), 3)
    return online_pass.online_passes(keys, learner, streams.documents(batch), streams.instance_stream(batch),
                                     hparams={"gamma": 1.0}, mesh=mesh, **kwargs)


def batch_folds(mesh=None, **kwargs):
    """SOLAR-I's batch protocol, 3 folds as lanes over a grid of 2 C values (``batch_protocol.batch_study``)."""
    from jaxrank.learners import LEARNERS
    from jaxrank.learners.online import batch_protocol

    batch = _learner_queries()
    folds = [jax.tree.map(lambda x, a=a, b=b: x[a:b], batch) for a, b in ((0, 6), (3, 8), (5, 12))]  # unequal folds
    return batch_protocol.batch_protocol(jax.random.key(2), LEARNERS.build("solar_first_order"), {"c": [0.01, 1.0]},
                                         folds, folds, folds, mesh=mesh, **kwargs)


def lcra_cross_validation(mesh=None, **kwargs):
    """LCRA-1-1's cross-validation, 2 splits × 3 folds as lanes (``semi_supervised.cv_study``)."""
    from jaxrank.learners.pairwise import semi_supervised

    method = semi_supervised.METHODS["lcra_1_1"]
    return semi_supervised.cross_validate(semi_supervised.split_keys(jax.random.key(4), 2),
                                          semi_supervised.method_learner(method), method, _learner_queries(),
                                          semi_supervised.make_grid(method, (0.01, 0.1), (0.1,)), num_steps=600,
                                          num_folds=3, label_fraction=0.4, mesh=mesh, **kwargs)


def bandit_sweep(mesh=None):
    """An RCS sweep (``jaxrank.bandits.run_sweep``): 2 matrices x 2 alphas x 3 runs as lanes."""
    from jaxrank import bandits, envs

    prefs = np.stack([np.asarray(envs.condorcet_matrix(jax.random.key(k), 6)) for k in (0, 1)])
    return [bandits.run_sweep(jax.random.key(5), name, prefs, num_runs=3, num_steps=300, hparams={"alpha": [0.51, 0.8]},
                              chunk_size=40, mesh=mesh) for name in ("rcs",)]


def preference_estimate(mesh=None):
    """The interleaved-comparison estimate (``jaxrank.envs.estimate.estimate_wins``): 4 rankers, the 6
    pairs as lanes, team-draft interleaving."""
    from jaxrank import data, envs
    from jaxrank.clicks import cascade_model
    from jaxrank.envs.estimate import estimate_wins

    queries = data.as_ragged(data.synthetic_queries(jax.random.key(6), num_queries=10, list_size=12, num_features=5))
    rankers = envs.single_feature_rankers([1, 2, 3, 4], 5)
    return [estimate_wins(jax.random.key(7), queries, rankers, cascade_model("navigational", 3), method, 60,
                          chunk_size=60, comparisons_per_call=120, mesh=mesh, verbose=False).wins
            for method in ("team_draft",)]


def click_model_fits(mesh=None, **kwargs):
    """Click-model fits (``jaxrank.click_models.study.fit_lanes``): EM of DBN from 5 starting
    probabilities on one log, and Adam on PBM in minibatches of 64 with 3 learning rates x 2 priors, the
    epoch picked on a validation split."""
    from jaxrank.click_models import CLICK_MODELS, generate_sessions, study
    from jaxrank.clicks import cascade_model
    from jaxrank.types import QueryBatch

    labels = jnp.asarray(np.random.default_rng(8).integers(0, 3, (4, 6)), jnp.float32)
    queries = QueryBatch(jnp.zeros((4, 6, 1)), labels, jnp.ones((4, 6), bool), np.arange(4))
    log = generate_sessions(jax.random.key(8), queries, 300, cascade_model("informational", 3), temperature=1.0,
                            num_positions=5)
    keys = jax.random.split(jax.random.key(9), 6)
    em = study.fit_lanes(keys[:5], "em", CLICK_MODELS.build("dbn"), log=log,
                         hparams={"init": [0.2, 0.35, 0.5, 0.65, 0.8]}, num_steps=12, steps_per_chunk=4, mesh=mesh,
                         **kwargs)
    grad = study.fit_lanes(keys, "gradient", CLICK_MODELS.build("pbm"), log=log,
                           hparams={"learning_rate": [0.01, 0.05, 0.1] * 2, "prior_a": [0.0] * 3 + [1.0] * 3,
                                    "prior_b": [0.0] * 3 + [2.0] * 3}, num_steps=4, steps_per_chunk=2,
                           batch_size=64, validation=0.2, mesh=mesh, **kwargs)
    return {"em": em, "gradient": grad}


STUDIES = {"toy": toy, "bandit_sweep": bandit_sweep, "oltr": oltr_grid, "online_passes": online_passes,
           "batch_folds": batch_folds, "lcra_cross_validation": lcra_cross_validation,
           "preference_estimate": preference_estimate, "click_model_fits": click_model_fits}


def run_all(mesh) -> dict:
    return {f"{name}/{i}": np.asarray(leaf) for name, fn in STUDIES.items()
            for i, leaf in enumerate(jax.tree.leaves(fn(mesh=mesh)))}


def main(argv):
    out = argv[1]
    if len(argv) > 2:
        jax.distributed.initialize(argv[2], int(argv[3]), int(argv[4]))
    results = run_all(lanes.lane_mesh())
    if jax.process_index() == 0:
        np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv)
