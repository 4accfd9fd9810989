"""How often a random subset of K rankers has a Condorcet winner vs a total ordering (Zoghi et al.,
WSDM 2014, Fig. 1 / RQ1: on MSLR the Condorcet probability stays above 0.91 for every K).

For each K = min_arms..n (step ``arm_step``) draw ``num_subsets`` uniform K-subsets of the n
rankers (exact enumeration when C(n, K) <= num_subsets). Within a subset, ``i`` beats ``j`` when
``P[i, j] > 1/2``; the subset has a Condorcet winner when one arm beats all K-1 others, and is a
total ordering when the beats relation is a strict linear order (transitive, no ties), i.e. the
within-subset Copeland scores are exactly 0..K-1.
"""

import dataclasses
import itertools
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from experiments.analysis import condorcet_probability as analysis
from experiments.common.matrices import MATRIX_DIR, PAPER_MATRIX
from experiments.common.registry import register
from jaxrank import data, envs


@dataclasses.dataclass(frozen=True)
class Config:
    matrix: str = "paper"  # "paper" (MSLR-Perfect under JAXRANK_DATA, else the embedded arXiv matrix), a name or a path
    num_subsets: int = 10_000
    min_arms: int = 2
    max_arms: int = 0  # 0: the matrix size n
    arm_step: int = 1
    seed: int = 0


def _load(config: Config):
    if config.matrix == "paper":
        path = data.data_dir() / MATRIX_DIR / PAPER_MATRIX
        if not path.is_file():
            path = data.preference.EMBEDDED_DEFAULT
            print(f"[condorcet_probability] {data.data_dir() / MATRIX_DIR / PAPER_MATRIX} not found; using the embedded "
                  f"arXiv 6-ranker matrix ({path.name}). Point JAXRANK_DATA at the shared data for the paper's MSLR setting.",
                  flush=True)
    else:
        path = data.resolve(config.matrix) if Path(config.matrix).exists() else data.resolve(f"{MATRIX_DIR}/{config.matrix}")
    return str(path), envs.check_preference_matrix(data.load_preference_matrix(path), name=Path(path).name)


@jax.jit
def subset_properties(in_subset, beats, num_arms):
    """``(has_condorcet [S], total_order [S])`` bools for subsets given as masks ``[S, n]``.

    ``beats [n, n]`` f32 is ``P > 1/2``; ``num_arms`` is K (traced, so every K shares one program).
    """
    member = in_subset.astype(jnp.float32)
    score = member @ beats.T  # [S, n] wins of each arm inside its subset
    score = jnp.where(in_subset, score, -1.0)
    has_condorcet = jnp.any(score == num_arms - 1, axis=1)
    ranked = -jnp.sort(-score, axis=1)  # descending; members first
    position = jnp.arange(score.shape[1])
    expected = (num_arms - 1 - position).astype(jnp.float32)
    total_order = jnp.all(jnp.where(position < num_arms, ranked == expected, True), axis=1)
    return has_condorcet, total_order


def _subsets(key, n: int, k: int, num_subsets: int):
    """``(masks [S, n] bool, weights [S] f32, exact)``: all K-subsets when few, else uniform draws."""
    if math.comb(n, k) <= num_subsets:
        masks = np.zeros((num_subsets, n), bool)
        combos = list(itertools.combinations(range(n), k))
        for row, c in enumerate(combos):
            masks[row, list(c)] = True
        weights = (np.arange(num_subsets) < len(combos)).astype(np.float32)
        return jnp.asarray(masks), jnp.asarray(weights), True
    # A uniform K-subset: the K smallest of n i.i.d. uniforms (a random permutation's first K).
    u = jax.random.uniform(key, (num_subsets, n))
    rank = jnp.argsort(jnp.argsort(u, axis=1), axis=1)
    return rank < k, jnp.ones(num_subsets, jnp.float32), False


@register("condorcet_probability", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Probability that K random rankers have a Condorcet winner / a total ordering (paper Fig. 1)."""
    path, pref = _load(config)
    n = pref.shape[0]
    max_arms = n if config.max_arms <= 0 else min(config.max_arms, n)
    if not 2 <= config.min_arms <= max_arms or config.arm_step < 1 or config.num_subsets < 1:
        raise ValueError(f"need 2 <= min_arms <= max_arms <= n = {n}, arm_step >= 1 and num_subsets >= 1; got "
                         f"min_arms={config.min_arms}, max_arms={config.max_arms}, arm_step={config.arm_step}, "
                         f"num_subsets={config.num_subsets}.")
    arm_counts = list(range(config.min_arms, max_arms + 1, config.arm_step))
    beats = jnp.asarray(pref > 0.5, jnp.float32)
    root = jax.random.key(config.seed)
    condorcet, total, exact = [], [], []
    for k in arm_counts:
        masks, weights, is_exact = _subsets(jax.random.fold_in(root, k), n, k, config.num_subsets)
        has_winner, ordered = subset_properties(masks, beats, jnp.asarray(k, jnp.float32))
        condorcet.append(float(jnp.sum(weights * has_winner) / jnp.sum(weights)))
        total.append(float(jnp.sum(weights * ordered) / jnp.sum(weights)))
        exact.append(is_exact)
    data.write_npz(run_dir / "arrays.npz", arm_counts=np.asarray(arm_counts), condorcet=np.asarray(condorcet),
                   total_order=np.asarray(total), exact=np.asarray(exact))
    worst = int(np.argmin(condorcet))
    print(f"[condorcet_probability] {Path(path).name} (n = {n}): min P(Condorcet winner) = {condorcet[worst]:.4f} "
          f"at K = {arm_counts[worst]}", flush=True)
    return {"matrix": path, "num_rankers": n, "num_subsets": config.num_subsets, "arm_counts": arm_counts,
            "condorcet": condorcet, "total_order": total, "exact": exact,
            "min_condorcet": {"probability": condorcet[worst], "num_arms": arm_counts[worst]},
            "full_set_has_condorcet_winner": envs.condorcet_winner(pref) is not None}
