"""A click model fitted to a log as the simulated user of every simulator.

A click model of ``jaxrank.click_models`` of the DBN family, fitted to a session log (tables per
query–document pair, or functions of the pairs' features via ``jaxrank.click_models.parametrization``,
which also predicts pairs the log never showed), becomes a ``FittedUser``: the per-document
probabilities of its chain. Every simulator that takes a ``jaxrank.clicks.ClickSimulator`` takes a
``FittedUser`` too, through one call, ``user_clicks``: online LTR (``jaxrank.oltr.simulate``),
interleaved comparisons and the preference-matrix estimate (``jaxrank.envs``), counterfactual click
logs (``jaxrank.counterfactual.simulation``).

The DBN (Chapelle & Zhang, WWW 2009; Chuklin, Markov, de Rijke, *Click Models for Web Search*, 2015,
ch. 3, "Dynamic Bayesian network model"): the user examines position 0; an examined document ``d``
attracts, and is clicked, with ``α_d``; a clicked document satisfies with ``σ_d`` and a satisfied
user stops; any other user examines the next position with ``γ``. So at the positions ``r`` of a list

    P(E_0 = 1) = 1,   P(C_r = 1) = P(E_r = 1) α_r,   P(E_{r+1} = 1) = P(E_r = 1) γ (1 − α_r σ_r).

SDBN is the DBN with ``γ = 1``; the cascade model (CM) also has ``σ = 1``; and the cascade users of
``jaxrank.clicks.cascade_clicks`` (``stop_rule="after_click"``) are DBNs with ``α = P(click | g)``,
``σ = P(stop | click, g)``, ``γ = 1``.

Document ids. A ``ClickSimulator`` reads each shown document's grade; a ``FittedUser`` reads its id,
a row of its ``[N]`` tables: document ``d`` of padded query ``q`` of a ``[Q, L]`` query set is
``q·L + d`` (the pair id of ``jaxrank.click_models.generate_sessions``), of fold ``f`` of ``F``
stacked folds ``(f·Q + q)·L + d`` (``jaxrank.oltr``), and of a ``RaggedQueries`` its flat row
``offsets[q] + d``.
"""

from typing import NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.clicks.models import (STOP_RULES, AffineClickModel, CascadeModel, cascade_clicks,
                                   check_click_simulator, position_based_clicks)
from jaxrank.types import Array, PRNGKey

# The DBN-family models of jaxrank.click_models a FittedUser represents exactly: model name ->
# (has satisfaction σ, has continuation γ); a missing σ is 1 (the cascade model), a missing γ is 1.
DBN_FAMILY = {"dbn": (True, True), "sdbn": (True, False), "cm": (False, False)}


class FittedUser(NamedTuple):
    """A DBN-family user: per-document attraction and satisfaction, one continuation."""

    attraction: Array  # [N] f32, α_d = P(click | examined) of document id d
    satisfaction: Array  # [N] f32, σ_d = P(stop satisfied | click)
    continuation: Array  # [] f32, γ = P(examine the next position | not satisfied)

    @property
    def num_documents(self) -> int:
        return self.attraction.shape[-1]


# Any simulated user: grade-keyed (a ClickSimulator) or document-keyed (a FittedUser).
SimulatedUser = Union[CascadeModel, AffineClickModel, FittedUser]


def check_fitted_user(user: FittedUser) -> None:
    """Raises ``ValueError`` unless ``attraction`` and ``satisfaction`` are ``[N]`` (``N >= 1``, the same)
    and ``continuation`` is ``[]``, every entry a probability in [0, 1] (NaN fails). Traced leaves
    are not checked."""
    shapes = {name: jnp.shape(value) for name, value in zip(user._fields, user)}
    if (len(shapes["attraction"]) != 1 or shapes["attraction"][0] == 0 or shapes["satisfaction"] != shapes["attraction"]
            or shapes["continuation"] != ()):
        raise ValueError(f"a FittedUser needs attraction and satisfaction [N] (N >= 1) and continuation []; got "
                         f"{shapes['attraction']}, {shapes['satisfaction']} and {shapes['continuation']}.")
    for name, value in zip(user._fields, user):
        if isinstance(value, jax.core.Tracer):
            continue
        values = np.atleast_1d(np.asarray(value, np.float64))
        bad = np.flatnonzero(~((values >= 0.0) & (values <= 1.0)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"FittedUser.{name}[{i}] = {float(values[i]):.6g} is not a probability in [0, 1] "
                             f"({bad.size} bad entr{'y' if bad.size == 1 else 'ies'}).")


def make_fitted_user(attraction, satisfaction, continuation=1.0) -> FittedUser:
    """A validated ``FittedUser`` from probabilities: ``[N]`` attraction and satisfaction, ``[]`` continuation."""
    user = FittedUser(jnp.asarray(attraction, jnp.float32), jnp.asarray(satisfaction, jnp.float32),
                      jnp.asarray(continuation, jnp.float32))
    check_fitted_user(user)
    return user


def fitted_user(model, params, *, pairs: Optional[Array] = None) -> FittedUser:
    """The user of a fitted DBN, SDBN or CM (``jaxrank.click_models``), its logits turned into probabilities.

    Args:
      model: the ``ClickModel`` (``CLICK_MODELS.build("dbn")``, ``"sdbn"`` or ``"cm"``).
      params: its fitted logit NamedTuple (``fit_em``, ``fit_gradient``). A ``features(...)``
        parametrization's params hold every pair of the ``features`` they were computed on, so fit
        with the features of every document the simulation may show (pairs never logged included);
        for other documents compute ``parametrization.apply(parametrization, model, trainable, features)``.
      pairs: ``[...]`` i32 pair id of each simulated document, flattened in the simulator's order
        (module docstring); default every pair ``0 .. P-1`` in order.

    Returns:
      ``FittedUser`` with ``[N]`` tables (``N = pairs.size``, or ``P``).

    Raises:
      ValueError: for a model outside the DBN family, or a pair id outside ``[0, P)``.
    """
    name = getattr(model, "name", None)
    if name not in DBN_FAMILY:
        raise ValueError(f"fitted_user takes a DBN-family click model ({', '.join(DBN_FAMILY)}); got {name!r} "
                         "(its clicks are not a DBN chain of per-document probabilities).")
    has_sat, has_cont = DBN_FAMILY[name]
    prob = lambda x: jax.nn.sigmoid(jnp.asarray(x, jnp.float32))  # noqa: E731
    attraction = prob(params.attraction)
    satisfaction = prob(params.satisfaction) if has_sat else jnp.ones_like(attraction)
    continuation = prob(params.continuation) if has_cont else jnp.ones((), jnp.float32)
    if pairs is not None:
        pairs = np.asarray(pairs).reshape(-1)
        size = attraction.shape[0]
        if pairs.size and (pairs.min() < 0 or pairs.max() >= size):
            bad = int(pairs[(pairs < 0) | (pairs >= size)][0])
            raise ValueError(f"pair id {bad} is outside the fitted tables [0, {size}).")
        attraction, satisfaction = attraction[pairs], satisfaction[pairs]
    return make_fitted_user(attraction, satisfaction, continuation)


def _check_list(ranked_ids, where) -> None:
    if len(jnp.shape(ranked_ids)) != 1 or jnp.shape(ranked_ids) != jnp.shape(where):
        raise ValueError(f"ranked_ids and where must both be [K] (one list; vmap for a batch); got "
                         f"{jnp.shape(ranked_ids)} and {jnp.shape(where)}.")


def _ranked(user: FittedUser, ranked_ids: Array, where: Array) -> tuple[Array, Array, Array]:
    """``(α [K], P(stop | click) [K], P(stop | no click) [])`` at the shown positions (α 0 elsewhere)."""
    ids = jnp.clip(ranked_ids, 0, user.num_documents - 1)
    attraction = jnp.where(where, user.attraction[ids], 0.0)
    gamma = user.continuation
    sat = user.satisfaction[ids]
    # Stopping after a click is "satisfied, or not going on": σ + (1 − σ)(1 − γ), which is σ itself
    # (bit for bit) at γ = 1, so a cascade user's tables reproduce cascade_clicks exactly.
    return attraction, sat + (1.0 - sat) * (1.0 - gamma), 1.0 - gamma


def fitted_clicks(key: PRNGKey, ranked_ids: Array, where: Array, user: FittedUser) -> Array:
    """Simulated DBN clicks on one ranked list (the chain of this module's docstring).

    Draws the same ``2K`` uniforms as ``jaxrank.clicks.cascade_clicks`` (attraction, stop) and
    stops at the first position whose stop coin fires; masked positions are never clicked and
    never stop the user.

    Args:
      key: PRNG key.
      ranked_ids: ``[K]`` i32 document ids in display order (module docstring; clipped into the tables).
      where: ``[K]`` bool, True for shown positions.
      user: ``FittedUser``.

    Returns:
      ``[K]`` bool clicks.
    """
    _check_list(ranked_ids, where)
    attraction, stop_click, stop_skip = _ranked(user, ranked_ids, where)
    u_click, u_stop = jax.random.uniform(key, (2,) + jnp.shape(ranked_ids))
    attracted = where & (u_click < attraction)  # u < p with u in [0, 1): p = 0 never fires, p = 1 always
    stops = where & (u_stop < jnp.where(attracted, stop_click, stop_skip))
    stops_before = jnp.cumsum(stops.astype(jnp.int32)) - stops.astype(jnp.int32)
    return attracted & (stops_before == 0)


def fitted_click_probs(ranked_ids: Array, where: Array, user: FittedUser) -> Array:
    """``[K]`` f32 ``P(C_r = 1)`` of each position of one ranked list under the DBN chain (0 where not shown).

    ``P(E_r = 1)`` is the exclusive cumulative product of ``1 − α_i σ'_i − (1 − α_i)(1 − γ)``, the
    chance of going on past position ``i`` (``σ'`` the stop after a click, ``fitted_clicks``); masked
    positions pass the user on.
    """
    _check_list(ranked_ids, where)
    attraction, stop_click, stop_skip = _ranked(user, ranked_ids, where)
    going_on = jnp.where(where, 1.0 - attraction * stop_click - (1.0 - attraction) * stop_skip, 1.0)
    examined = jnp.cumprod(jnp.concatenate([jnp.ones((1,), going_on.dtype), going_on[:-1]]))
    return examined * attraction


def check_user(user: SimulatedUser, num_documents: Optional[int] = None) -> None:
    """``check_click_simulator`` for a ``ClickSimulator``; for a ``FittedUser`` ``check_fitted_user`` and,
    given ``num_documents`` (the simulator's document ids), tables of exactly that size."""
    if isinstance(user, FittedUser):
        check_fitted_user(user)
        if num_documents is not None and user.num_documents != num_documents:
            raise ValueError(f"the FittedUser has {user.num_documents} documents but the simulator's queries number "
                             f"theirs 0..{num_documents - 1} (module docstring of jaxrank.clicks.fitted); build it "
                             f"with pairs= laid out as those queries.")
    elif isinstance(user, (CascadeModel, AffineClickModel)):
        check_click_simulator(user)
    else:
        raise ValueError(f"a simulated user is a CascadeModel, a AffineClickModel or a FittedUser; got "
                         f"{type(user).__name__}.")


def user_clicks(key: PRNGKey, user: SimulatedUser, ranked_labels: Array, ranked_ids: Array, where: Array, *,
                stop_rule: str = "after_click") -> Array:
    """``[K]`` bool clicks of any simulated user on one ranked list: the one call every simulator makes.

    A ``CascadeModel`` (with ``stop_rule``) or ``AffineClickModel`` clicks on the grades
    ``ranked_labels``, a ``FittedUser`` on the document ids ``ranked_ids`` (module docstring); each
    draws exactly what its own function draws from ``key``.

    Raises:
      ValueError: for another type, or a ``FittedUser`` with ``stop_rule="every_position"`` (a rule
        of the cascade users; a fitted user stops as its chain does).
    """
    if isinstance(user, FittedUser):
        if stop_rule != "after_click":
            raise ValueError(f"stop_rule={stop_rule!r} is a rule of the cascade users ({', '.join(STOP_RULES)}); a "
                             "FittedUser stops as its DBN chain does: use stop_rule='after_click'.")
        return fitted_clicks(key, ranked_ids, where, user)
    if isinstance(user, CascadeModel):
        return cascade_clicks(key, ranked_labels, where, user, stop_rule=stop_rule)
    if isinstance(user, AffineClickModel):
        return position_based_clicks(key, ranked_labels, where, user)
    raise ValueError(f"a simulated user is a CascadeModel, a AffineClickModel or a FittedUser; got "
                     f"{type(user).__name__}.")
