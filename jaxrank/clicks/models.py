"""Click simulators: the cascade user of online LTR evaluation and the position-based user.

Cascade model (Craswell et al., WSDM 2008, with the click/stop parametrisation of Hofmann,
Whiteson, de Rijke, CIKM 2011 / Hofmann et al. 2013 and Schuth et al.): the user scans
the list from the top; at a document of grade ``g`` they click with ``P(click | g)``; after a
click they stop with ``P(stop | g)``; they never stop without a click. The perfect /
navigational / informational parameters for 2, 3 and 5 grades are Lerot's (``config-sigir2014-PI.yml``,
lerot-3 ``meta.yml``).

Position-based model (Richardson et al. 2007; Chuklin, Markov, de Rijke 2015 §3.4): position
``r`` is examined with ``P(E_r)``, a document of grade ``g`` attracts with ``P(A | g)``, and a
click happens iff both, independently of every other position.

Every ``*_clicks(key, ranked_labels, where, model) -> bool [L]`` handles ONE ranked list of
``L`` positions; ``jax.vmap`` it for a batch. Models are NamedTuples of arrays, so they can be
passed through ``jit`` and vmapped over (e.g. several click models at once).
"""

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Array, PRNGKey


class CascadeModel(NamedTuple):
    click_prob: Array  # [G] f32, P(click | grade)
    stop_prob: Array  # [G] f32, P(stop | click, grade)


class PositionBasedModel(NamedTuple):
    examination: Array  # [L] f32, P(position r is examined)
    click_prob: Array  # [G] f32, P(click | examined, grade) (attractiveness)


# A simulated user (distinct from the fitted click models of ``jaxrank.click_models``).
ClickSimulator = Union[CascadeModel, PositionBasedModel]

# Lerot's parameters (config-sigir2014-PI.yml, lerot-3 meta.yml):
# name -> num_grades -> (P(click | g), P(stop | g)).
_CASCADE_TABLE = {
    "perfect": {
        2: ((0.0, 1.0), (0.0, 0.0)),
        3: ((0.0, 0.5, 1.0), (0.0, 0.0, 0.0)),
        5: ((0.0, 0.2, 0.4, 0.8, 1.0), (0.0, 0.0, 0.0, 0.0, 0.0)),
    },
    "navigational": {
        2: ((0.05, 0.95), (0.2, 0.9)),
        3: ((0.05, 0.5, 0.95), (0.2, 0.5, 0.9)),
        5: ((0.05, 0.3, 0.5, 0.7, 0.95), (0.2, 0.3, 0.5, 0.7, 0.9)),
    },
    "informational": {
        2: ((0.4, 0.9), (0.1, 0.5)),
        3: ((0.4, 0.7, 0.9), (0.1, 0.3, 0.5)),
        5: ((0.4, 0.6, 0.7, 0.8, 0.9), (0.1, 0.2, 0.3, 0.4, 0.5)),
    },
}
CASCADE_MODELS = tuple(_CASCADE_TABLE) + ("random",)
CASCADE_GRADES = (2, 3, 5)


def check_click_simulator(model: ClickSimulator) -> None:
    """Raises ``ValueError`` unless every probability of ``model`` is a number in [0, 1].

    Checks each field (``click_prob``, ``stop_prob``, ``examination``) that is a concrete array;
    traced leaves (a model built inside ``jit``/``vmap``) cannot be checked and are skipped.
    Probability vectors must be 1-D and non-empty, and a cascade model's two vectors must
    have the same length ``G``.
    """
    for name, value in zip(model._fields, model):
        if isinstance(value, jax.core.Tracer):
            continue
        values = np.asarray(value, dtype=np.float64)
        if values.ndim != 1 or values.size == 0:
            raise ValueError(f"{type(model).__name__}.{name} must be a non-empty 1-D vector; got shape {values.shape}.")
        bad = np.flatnonzero(~((values >= 0.0) & (values <= 1.0)))  # NaN fails both comparisons
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"{type(model).__name__}.{name}[{i}] = {float(values[i]):.6g} is not a probability in [0, 1] "
                f"({bad.size} bad entr{'y' if bad.size == 1 else 'ies'})."
            )
    if isinstance(model, CascadeModel) and jnp.shape(model.click_prob) != jnp.shape(model.stop_prob):
        raise ValueError(
            f"CascadeModel.click_prob and stop_prob must both be [G]; got {jnp.shape(model.click_prob)} "
            f"and {jnp.shape(model.stop_prob)}."
        )


def make_cascade_model(click_prob, stop_prob) -> CascadeModel:
    """A validated cascade model from ``[G]`` click and stop probabilities (grade ``g`` at index ``g``)."""
    model = CascadeModel(jnp.asarray(click_prob, jnp.float32), jnp.asarray(stop_prob, jnp.float32))
    check_click_simulator(model)
    return model


def cascade_model(name: str, num_grades: int) -> CascadeModel:
    """Lerot's cascade model ``name`` for grades ``0 .. num_grades - 1``.

    Args:
      name: ``"perfect"``, ``"navigational"``, ``"informational"`` or ``"random"``.
      num_grades: ``G`` in {2, 3, 5} (any ``G >= 1`` for ``"random"``: click 0.5, never stop).

    Returns:
      ``CascadeModel`` with ``[G]`` f32 vectors.
    """
    if name == "random":
        if not isinstance(num_grades, (int, np.integer)) or num_grades < 1:
            raise ValueError(f"num_grades must be a positive int; got {num_grades!r}.")
        return make_cascade_model(np.full(num_grades, 0.5), np.zeros(num_grades))
    if name not in _CASCADE_TABLE:
        raise ValueError(f"Unknown cascade click model {name!r}; known: {', '.join(CASCADE_MODELS)}.")
    if num_grades not in _CASCADE_TABLE[name]:
        raise ValueError(
            f"Cascade model {name!r} has no table for num_grades={num_grades!r}; "
            f"defined for {', '.join(map(str, CASCADE_GRADES))} (\"random\" for any)."
        )
    click_prob, stop_prob = _CASCADE_TABLE[name][num_grades]
    return make_cascade_model(click_prob, stop_prob)


def make_position_based_model(examination, click_prob) -> PositionBasedModel:
    """A validated position-based model from ``[L]`` examination and ``[G]`` attraction probabilities."""
    model = PositionBasedModel(jnp.asarray(examination, jnp.float32), jnp.asarray(click_prob, jnp.float32))
    check_click_simulator(model)
    return model


def _grades(ranked_labels: Array, num_grades: int) -> Array:
    """Integer grades clipped to ``[0, G-1]`` (labels are f32 in a QueryBatch)."""
    return jnp.clip(jnp.round(ranked_labels), 0, num_grades - 1).astype(jnp.int32)


def _check_list(ranked_labels, where) -> None:
    if len(jnp.shape(ranked_labels)) != 1 or jnp.shape(ranked_labels) != jnp.shape(where):
        raise ValueError(
            f"ranked_labels and where must both be [L] (one list; vmap for a batch); got "
            f"{jnp.shape(ranked_labels)} and {jnp.shape(where)}."
        )


STOP_RULES = ("after_click", "every_position")


def cascade_clicks(key: PRNGKey, ranked_labels: Array, where: Array, model: CascadeModel, *,
                   stop_rule: str = "after_click") -> Array:
    """Simulated cascade clicks on one ranked list.

    The user scans positions ``0, 1, ...``; at a real position (``where`` True) with grade ``g``
    they click with ``click_prob[g]``; then they stop with ``stop_prob[g]``: only after a click
    (``stop_rule="after_click"``, the model as published, ``P(stop | click, g)``), or at every
    position whether clicked or not (``"every_position"``, what the PDGD authors' simulator does:
    github.com/HarrieO/OnlineLearningToRank ``utils/clicks.py`` ``ClickModel.generate_clicks`` keeps
    the clicks up to and including the first position whose stop coin fires). Masked positions are
    skipped: never clicked, never a reason to stop. Grades are the labels rounded and clipped to
    ``[0, G-1]``, so a label above the model's top grade acts as the top grade.

    All ``2L`` uniforms are drawn at once; the user is still scanning at ``r`` iff no earlier
    position stopped them, an exclusive cumulative sum (no loop over positions).

    Args:
      key: PRNG key.
      ranked_labels: ``[L]`` grades of the shown documents, in display order.
      where: ``[L]`` bool, True for real positions.
      model: ``CascadeModel`` with ``[G]`` vectors.
      stop_rule: ``"after_click"`` or ``"every_position"`` (static).

    Returns:
      ``[L]`` bool clicks.
    """
    _check_list(ranked_labels, where)
    if stop_rule not in STOP_RULES:
        raise ValueError(f"stop_rule={stop_rule!r} is not one of {', '.join(STOP_RULES)}.")
    grades = _grades(ranked_labels, model.click_prob.shape[-1])
    u_click, u_stop = jax.random.uniform(key, (2,) + jnp.shape(ranked_labels))
    # u < p with u in [0, 1): p = 0 never fires and p = 1 always does.
    attracted = where & (u_click < model.click_prob[grades])
    stops = (attracted if stop_rule == "after_click" else where) & (u_stop < model.stop_prob[grades])
    stops_before = jnp.cumsum(stops.astype(jnp.int32)) - stops.astype(jnp.int32)
    return attracted & (stops_before == 0)


def position_based_clicks(key: PRNGKey, ranked_labels: Array, where: Array, model: PositionBasedModel) -> Array:
    """Simulated position-based-model clicks on one ranked list.

    A real position ``r`` is clicked iff it is examined (``examination[r]``) and its document
    attracts (``click_prob[g]``), independently. Grades are rounded and clipped to ``[0, G-1]``.

    Args:
      key: PRNG key.
      ranked_labels: ``[L]`` grades in display order.
      where: ``[L]`` bool, True for real positions.
      model: ``PositionBasedModel``; ``examination`` needs at least ``L`` entries (the first
        ``L`` are used).

    Returns:
      ``[L]`` bool clicks.
    """
    _check_list(ranked_labels, where)
    num_positions = jnp.shape(ranked_labels)[-1]
    if model.examination.shape[-1] < num_positions:
        raise ValueError(
            f"PositionBasedModel.examination has {model.examination.shape[-1]} positions; the list has {num_positions}."
        )
    grades = _grades(ranked_labels, model.click_prob.shape[-1])
    u_exam, u_attract = jax.random.uniform(key, (2,) + jnp.shape(ranked_labels))
    examined = u_exam < model.examination[..., :num_positions]
    return where & examined & (u_attract < model.click_prob[grades])
