"""The marginal examination probability of each rank under a simulated user, averaged over a log's
sessions: the position bias a fitted click model's examination parameters should recover.

Cascade users (``jaxrank.clicks.CascadeModel``; Craswell et al., WSDM 2008; the dependent click
chain of Guo et al., WSDM 2009, with grade-dependent click and stop probabilities): rank ``r`` is
examined iff no rank above it was clicked and then stopped at, so
``P(E_r) = Π_{i<r} (1 - P(C | g_i) P(S | C, g_i))`` for the grades ``g_i`` shown above ``r``. A
position-based user examines rank ``r`` with its fixed ``ε_r`` whatever is shown.
"""

import numpy as np

from jaxrank.clicks.models import CascadeModel


def cascade_examination(model: CascadeModel, grades, mask) -> np.ndarray:
    """``[K]`` float64 mean of ``P(E_r)`` over the sessions that show rank ``r`` (NaN where none does).

    Args:
      model: the cascade user (``click_prob``, ``stop_prob`` ``[G]``).
      grades: ``[S, K]`` int grade of the document shown at each rank, in ``[0, G)``.
      mask: ``[S, K]`` bool, the shown ranks (a prefix of each row).
    """
    grades, shown = np.asarray(grades), np.asarray(mask, bool)
    num_grades = np.shape(model.click_prob)[0]
    if grades.shape != shown.shape or grades.ndim != 2:
        raise ValueError(f"grades and mask must both be [S, K]; got {grades.shape} and {shown.shape}.")
    if shown.any() and not 0 <= grades[shown].min() <= grades[shown].max() < num_grades:
        raise ValueError(f"grades must lie in [0, {num_grades}) on the shown ranks; got "
                         f"[{grades[shown].min()}, {grades[shown].max()}].")
    stop = (np.asarray(model.click_prob, np.float64) * np.asarray(model.stop_prob, np.float64))[np.where(shown, grades,
                                                                                                         0)]
    go_on = np.where(shown, 1.0 - stop, 1.0)
    exam = np.concatenate([np.ones((go_on.shape[0], 1)), np.cumprod(go_on, axis=1)[:, :-1]], axis=1)
    count = shown.sum(0)
    return np.where(count > 0, (exam * shown).sum(0) / np.maximum(count, 1), np.nan)
