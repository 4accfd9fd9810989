"""Preference-matrix text files: a dense ``K x K`` matrix, optionally after a line holding ``K``."""

from pathlib import Path

import numpy as np

from jaxrank.data import locations

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded"
EMBEDDED_DEFAULT = EMBEDDED_DIR / "ArXiv_6_rankers.txt"


def load_preference_matrix(name_or_path) -> np.ndarray:
    """Reads ``P [K, K]`` (float64) from a path or a name under ``JAXRANK_DATA``.

    A first line with a single integer equal to the number of rows that follow (the
    ``MSLR_Informational_5_Condorcet.txt`` layout) is read as the size header.
    Validation (square, ``P + P^T = 1``, ...) is ``jaxrank.envs.check_preference_matrix``.
    """
    path = locations.resolve(name_or_path)
    rows = [line.split() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    if not rows:
        raise ValueError(f"{path}: file is empty.")
    if len(rows[0]) == 1 and len(rows) > 1 and len(rows[1]) > 1:
        header, rows = rows[0][0], rows[1:]
        if not header.isdigit() or int(header) != len(rows):
            raise ValueError(f"{path}, line 1: size header {header!r} does not match the {len(rows)} matrix rows.")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ValueError(f"{path}: rows have different lengths {sorted(widths)}; expected a dense K x K matrix.")
    try:
        return np.asarray(rows, dtype=np.float64)
    except ValueError as e:
        raise ValueError(f"{path}: non-numeric entry ({e}).") from None
