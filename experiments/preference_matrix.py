"""Estimate the preference matrix of the RCS paper's feature rankers by interleaving (Zoghi et al.,
WSDM 2014, §5 and §6.1: 80,000 probabilistic-interleave comparisons per pair, perfect click model).

``dataset="auto"`` uses the MSLR-WEB Fold1 subset under ``JAXRANK_DATA`` (43 queries), else
synthetic queries (with a message). The rankers are the paper's: feature ids sorted as strings,
the first K. The estimate checkpoints between calls: ``--resume`` continues a killed run. When ``preference_matrices/MSLR-Perfect.txt`` is present (estimated by the paper's
authors on the full collection), the same entries are compared: sign agreement of ``P - 1/2``
and mean absolute difference.
"""

import dataclasses

import jax
import numpy as np

from experiments.analysis import preference_matrix as analysis
from experiments.common.registry import checkpoint_dir, register
from jaxrank import data, envs, lanes
from jaxrank.clicks import CASCADE_GRADES, cascade_model
from jaxrank.envs.estimate import estimate_wins
from jaxrank.envs.ranker_duel import paper_feature_ids, single_feature_rankers

MSLR_SUBSET = "MSLR-WEB_Fold1_subset/msn1.fold1.train.5k.txt.gz"
REFERENCE = "preference_matrices/MSLR-Perfect.txt"


@dataclasses.dataclass(frozen=True)
class Config:
    dataset: str = "auto"  # a file name under JAXRANK_DATA or a path, "synthetic", or "auto" (MSLR subset, else synthetic)
    num_arms: int = 10
    click_model: str = "perfect"
    method: str = "probabilistic"  # or "team_draft"
    num_comparisons: int = 80_000
    list_size: int = 10
    tau: float = 3.0
    chunk_size: int = 1 << 16  # comparisons per chunk over all pairs (memory); the counts do not depend on it
    comparisons_per_call: int = 1 << 22  # between two checkpoints (and progress lines)
    reference: str = REFERENCE  # compared when it exists under JAXRANK_DATA (or as a path); "" to skip
    seed: int = 0
    synthetic_queries: int = 64
    synthetic_features: int = 16


def _queries(config: Config):
    name = MSLR_SUBSET if config.dataset == "auto" else config.dataset
    if name != "synthetic":
        try:
            path = data.resolve(name)
        except FileNotFoundError as e:
            if config.dataset != "auto":
                raise
            print(f"[preference_matrix] {e}\n[preference_matrix] using synthetic queries instead.", flush=True)
        else:
            return str(path), data.load_queries(path, layout="ragged")
    source = f"synthetic(queries={config.synthetic_queries}, features={config.synthetic_features}, seed={config.seed})"
    return source, data.as_ragged(data.synthetic_queries(
        jax.random.fold_in(jax.random.key(config.seed), 1), num_queries=config.synthetic_queries, list_size=32,
        num_features=config.synthetic_features, num_grades=5))


def _reference(config: Config, ids):
    if not config.reference:
        return None
    try:
        path = data.resolve(config.reference)
    except FileNotFoundError:
        print(f"[preference_matrix] no reference matrix {config.reference!r} under {data.data_dir()}: no comparison.")
        return None
    full = envs.check_preference_matrix(data.load_preference_matrix(path), name=path.name)
    if max(ids) > full.shape[0]:
        print(f"[preference_matrix] {path.name} has {full.shape[0]} rankers; feature {max(ids)} is not in it.")
        return None
    rows = np.asarray(ids) - 1  # row/column = feature id - 1
    return str(path), full[np.ix_(rows, rows)]


def compare_matrices(est: np.ndarray, ref: np.ndarray) -> dict:
    """Sign agreement of ``P - 1/2`` and absolute differences over the pairs i < j."""
    i, j = np.triu_indices(est.shape[0], 1)
    agree = np.sign(est[i, j] - 0.5) == np.sign(ref[i, j] - 0.5)
    diff = np.abs(est[i, j] - ref[i, j])
    return {"num_pairs": int(i.size), "sign_agreement": float(agree.mean()), "mean_abs_diff": float(diff.mean()),
            "max_abs_diff": float(diff.max()), "disagreeing_pairs": [[int(a), int(b)] for a, b in zip(i[~agree], j[~agree])]}


@register("preference_matrix", Config, report=analysis.report)
def run(config: Config, run_dir) -> dict:
    """Estimate P of the paper's first-K feature rankers by interleaving (80,000 comparisons per pair)."""
    source, queries = _queries(config)
    num_features = queries.num_features
    ids = paper_feature_ids(num_features, config.num_arms)
    top = int(queries.labels.max()) + 1 if queries.num_documents else 2
    num_grades = min([g for g in CASCADE_GRADES if g >= top], default=top)
    model = cascade_model(config.click_model, num_grades)
    print(f"[preference_matrix] {source}: {queries.num_queries} queries ({queries.num_documents} documents), "
          f"features {ids}, {config.method} interleave, {config.click_model} clicks ({num_grades} grades), "
          f"{config.num_comparisons:,} comparisons per pair", flush=True)
    est = estimate_wins(jax.random.key(config.seed), queries, single_feature_rankers(ids, num_features), model,
                        config.method, config.num_comparisons, list_size=config.list_size, tau=config.tau,
                        chunk_size=config.chunk_size, comparisons_per_call=config.comparisons_per_call,
                        checkpoint=lanes.Checkpoint(checkpoint_dir(run_dir), "estimate", {"source": source}))
    winner = envs.condorcet_winner(est.pref)
    total = int(est.counts.sum() // 2)
    results = {
        "source": source, "num_queries": queries.num_queries, "feature_ids": ids, "method": config.method,
        "click_model": config.click_model, "num_grades": num_grades, "num_comparisons": config.num_comparisons,
        "total_comparisons": total, "seconds": round(est.seconds, 2),
        "comparisons_per_second": round(total / est.seconds), "tie_fraction": float(est.ties.sum() / max(est.counts.sum(), 1)),
        "condorcet_winner": None if winner is None else {"arm": winner, "feature_id": ids[winner]},
        "pref": np.round(est.pref, 6).tolist(),
    }
    results["timings"] = {k: results.pop(k) for k in ("seconds", "comparisons_per_second")}
    arrays = {"pref": est.pref, "counts": est.counts, "wins": est.wins, "ties": est.ties, "feature_ids": np.asarray(ids)}
    reference = _reference(config, ids)
    if reference is not None:
        ref_path, ref = reference
        ref_winner = envs.condorcet_winner(ref)
        results["reference"] = {"path": ref_path, **compare_matrices(est.pref, ref),
                                "condorcet_winner": None if ref_winner is None else {"arm": ref_winner, "feature_id": ids[ref_winner]},
                                "pref": np.round(ref, 6).tolist()}
        arrays["reference"] = ref
        print(f"[preference_matrix] vs {ref_path}: sign agreement {results['reference']['sign_agreement']:.3f}, "
              f"mean |diff| {results['reference']['mean_abs_diff']:.4f}", flush=True)
    data.write_npz(run_dir / "arrays.npz", **arrays)
    header = f"# P[i, j] = P(ranker i beats ranker j); ranker i = feature id {' '.join(map(str, ids))} in order\n"
    data.write_text(run_dir / "preference_matrix.txt", header + "\n".join(" ".join(f"{x:.10f}" for x in row) for row in est.pref) + "\n")
    return results
