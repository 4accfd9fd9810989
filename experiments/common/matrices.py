"""Which preference matrices the dueling-bandit experiments run on.

``"auto"`` means every ``*.txt`` under ``$JAXRANK_DATA/preference_matrices`` and ``"paper"`` the
paper's ``MSLR-Perfect.txt`` there; when they are absent, the embedded arXiv 6-ranker matrix (MIT
licence) is used and a message says how to point at the MSLR matrices. Matrices larger than ``K`` are cut to
the RCS paper's rankers (feature ids sorted as strings, the first ``K``).
"""

from pathlib import Path
from typing import NamedTuple

import numpy as np

from jaxrank import data, envs

MATRIX_DIR = "preference_matrices"


class Matrix(NamedTuple):
    name: str
    source: str
    pref: np.ndarray  # [K, K]
    rankers: list  # 1-based ids of the arms in the source matrix


PAPER_MATRIX = "MSLR-Perfect.txt"


def _embedded(folder) -> list:
    print(f"[matrices] no preference matrices under {folder}; using the embedded arXiv 6-ranker matrix "
          f"({data.preference.EMBEDDED_DEFAULT.name}). Point JAXRANK_DATA at a folder with "
          f"{MATRIX_DIR}/{PAPER_MATRIX} to run the paper's MSLR setting.", flush=True)
    return [data.preference.EMBEDDED_DEFAULT]


def _sources(names) -> list:
    folder = data.data_dir() / MATRIX_DIR
    if tuple(names) == ("paper",):
        paper = folder / PAPER_MATRIX
        return [paper] if paper.is_file() else _embedded(folder)
    if tuple(names) != ("auto",):
        return [data.resolve(n) if Path(n).exists() else data.resolve(f"{MATRIX_DIR}/{n}") for n in names]
    found = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    return found or _embedded(folder)


def load_matrices(names, num_arms: int) -> list[Matrix]:
    """Loads, validates and cuts each matrix to ``min(K, size)`` arms; skips (and says so) any
    subset without a Condorcet winner, since regret needs one."""
    matrices = []
    for path in _sources(names):
        full = envs.check_preference_matrix(data.load_preference_matrix(path), name=Path(path).name)
        if full.shape[0] > num_arms:
            pref, rankers = envs.select_rankers(full, num_arms)
        else:
            pref, rankers = full, list(range(1, full.shape[0] + 1))
        if envs.condorcet_winner(pref) is None:
            print(f"[matrices] skipping {Path(path).name}: its {pref.shape[0]} rankers have no Condorcet winner.")
            continue
        matrices.append(Matrix(Path(path).stem, str(path), pref, rankers))
    if not matrices:
        raise ValueError(f"none of the matrices {names} has a Condorcet winner at K = {num_arms}.")
    return matrices


def by_size(matrices: list[Matrix]) -> dict[int, list[Matrix]]:
    """Groups matrices by arm count, so each group runs as one compiled program."""
    groups: dict[int, list[Matrix]] = {}
    for m in matrices:
        groups.setdefault(m.pref.shape[0], []).append(m)
    return groups
