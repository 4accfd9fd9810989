"""Click simulators: the cascade user of online LTR evaluation and the position-based family.

Cascade model (Craswell et al., WSDM 2008, with the click/stop parametrisation of Hofmann,
Whiteson, de Rijke, CIKM 2011 / Hofmann et al. 2013 and Schuth et al.): the user scans
the list from the top; at a document of grade ``g`` they click with ``P(click | g)``; after a
click they stop with ``P(stop | g)``; they never stop without a click. The perfect /
navigational / informational parameters for 2, 3 and 5 grades are Lerot's (``config-sigir2014-PI.yml``,
lerot-3 ``meta.yml``).

Position-based family, **affine in relevance** (Vardasbi, Oosterhuis & de Rijke, CIKM 2020, "affine
corrections"; Oosterhuis, TOIS 2023, §3): a document of grade ``g`` at rank ``k`` (0-based) is clicked
with

    P(C_k = 1 | g) = alpha[k] · relevance[g] + beta[k],

independently of every other position (``AffineClickModel``). The position-based model (Richardson
et al. 2007; Chuklin, Markov, de Rijke 2015 §3.4: position ``k`` examined with ``θ_k``, grade ``g``
attracts with ``P(A | g)``, a click iff both) is ``alpha = θ``, ``beta = 0``, ``relevance = P(A | g)``
(``make_position_based_model``); trust bias (Agarwal et al., WWW 2019: an examined document is
clicked with ``ε+_k`` if relevant, ``ε−_k`` if not) is ``alpha = θ(ε+ − ε−)``, ``beta = θ ε−`` with
``relevance = P(relevant | g)``. The semi-synthetic users of ULTRA and Oosterhuis (TOIS 2023) are
built in ``jaxrank.counterfactual.user_models``.

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


class AffineClickModel(NamedTuple):
    """``P(C = 1 | grade g at rank k) = alpha[k] · relevance[g] + beta[k]`` (this module's docstring)."""

    alpha: Array  # [K] f32 the rank's weight on relevance (θ_k for the position-based model)
    beta: Array  # [K] f32 the rank's click probability without relevance (0 for the position-based model)
    relevance: Array  # [G] f32 P(relevant | grade) (P(A | g) for the position-based model)

    @property
    def num_positions(self) -> int:
        return self.alpha.shape[-1]


# A simulated user (distinct from the fitted click models of ``jaxrank.click_models``).
ClickSimulator = Union[CascadeModel, AffineClickModel]

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

    Checks each field that is a concrete array; traced leaves (a model built inside ``jit``/``vmap``)
    cannot be checked and are skipped. Vectors must be 1-D and non-empty, a cascade model's two
    vectors must have the same length ``G``, and an ``AffineClickModel`` needs ``alpha >= 0`` and every
    ``alpha_k · relevance_g + beta_k`` in [0, 1] (``check_affine_model``).
    """
    if isinstance(model, AffineClickModel):
        check_affine_model(model)
        return
    for name, value in zip(model._fields, model):
        _check_probabilities(f"{type(model).__name__}.{name}", value)
    if isinstance(model, CascadeModel) and jnp.shape(model.click_prob) != jnp.shape(model.stop_prob):
        raise ValueError(
            f"CascadeModel.click_prob and stop_prob must both be [G]; got {jnp.shape(model.click_prob)} "
            f"and {jnp.shape(model.stop_prob)}."
        )


def _check_probabilities(name: str, value) -> None:
    """Raises ``ValueError`` naming ``name`` unless ``value`` is a non-empty 1-D vector of numbers in [0, 1]
    (skipped for a traced value)."""
    if isinstance(value, jax.core.Tracer):
        return
    values = np.asarray(value, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector; got shape {values.shape}.")
    bad = np.flatnonzero(~((values >= 0.0) & (values <= 1.0)))  # NaN fails both comparisons
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}] = {float(values[i]):.6g} is not a probability in [0, 1] "
                         f"({bad.size} bad entr{'y' if bad.size == 1 else 'ies'}).")


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


def check_affine_model(model: AffineClickModel) -> None:
    """Raises ``ValueError`` unless ``alpha [K]``, ``beta [K]``, ``relevance [G]`` are finite, ``alpha >= 0`` and
    every click probability ``alpha_k · r + beta_k`` (``r`` in ``relevance``) is in [0, 1] (concrete leaves only)."""
    if any(isinstance(x, jax.core.Tracer) for x in model):
        return
    alpha, beta, rel = (np.asarray(x, np.float64) for x in model)
    if alpha.ndim != 1 or alpha.size == 0 or alpha.shape != beta.shape or rel.ndim != 1 or rel.size == 0:
        raise ValueError(f"AffineClickModel needs alpha, beta [K] and relevance [G]; got {alpha.shape}, {beta.shape}, "
                         f"{rel.shape}.")
    probs = alpha[:, None] * rel[None, :] + beta[:, None]
    if (alpha < 0).any() or not ((probs >= 0) & (probs <= 1 + 1e-6)).all():  # NaN fails both comparisons
        raise ValueError("AffineClickModel: alpha must be >= 0 and every alpha_k * relevance_g + beta_k a probability; "
                         f"got alpha {alpha.round(4).tolist()}, beta {beta.round(4).tolist()}, "
                         f"relevance {rel.round(4).tolist()}.")


def make_affine_click_model(alpha, beta, relevance) -> AffineClickModel:
    """A validated ``AffineClickModel`` from ``alpha [K]``, ``beta [K]`` and ``relevance [G]``."""
    model = AffineClickModel(*(jnp.asarray(x, jnp.float32) for x in (alpha, beta, relevance)))
    check_affine_model(model)
    return model


def make_position_based_model(examination, click_prob) -> AffineClickModel:
    """The position-based model: ``alpha = examination [K]``, ``beta = 0``, ``relevance = click_prob [G]``
    (attraction ``P(A | g)``), both vectors of probabilities."""
    _check_probabilities("examination", examination)
    _check_probabilities("click_prob", click_prob)
    examination = jnp.asarray(examination, jnp.float32)
    return make_affine_click_model(examination, jnp.zeros_like(examination), click_prob)


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


def click_probabilities(ranked_labels: Array, where: Array, model: AffineClickModel) -> Array:
    """``[..., L]`` ``P(C_k = 1) = alpha[k] · relevance[g_k] + beta[k]`` of the shown documents' grades
    ``ranked_labels [..., L]`` (rounded, clipped to ``[0, G-1]``), 0 where ``where`` is False."""
    num_positions = jnp.shape(ranked_labels)[-1]
    if model.alpha.shape[-1] < num_positions:
        raise ValueError(f"AffineClickModel covers {model.alpha.shape[-1]} positions; the list has {num_positions}.")
    grades = _grades(ranked_labels, model.relevance.shape[-1])
    return jnp.where(where, model.alpha[:num_positions] * model.relevance[grades] + model.beta[:num_positions], 0.0)


def position_based_clicks(key: PRNGKey, ranked_labels: Array, where: Array, model: AffineClickModel) -> Array:
    """Simulated clicks of the position-based family on one ranked list.

    A real position ``k`` is clicked with ``alpha[k] · relevance[g] + beta[k]``, independently of the
    others: one uniform per position, ``u_k < P(C_k = 1)`` (``u`` in [0, 1): probability 0 never fires,
    1 always does). Grades are rounded and clipped to ``[0, G-1]``.

    Args:
      key: PRNG key.
      ranked_labels: ``[L]`` grades in display order.
      where: ``[L]`` bool, True for real positions.
      model: ``AffineClickModel``; ``alpha`` and ``beta`` need at least ``L`` entries (the first ``L`` are used).

    Returns:
      ``[L]`` bool clicks.
    """
    _check_list(ranked_labels, where)
    return jax.random.uniform(key, jnp.shape(ranked_labels)) < click_probabilities(ranked_labels, where, model)
