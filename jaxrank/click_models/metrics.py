"""Click-model evaluation on sessions: log-likelihood and perplexity, PyClick's definitions
(``Evaluation.py``: ``LogLikelihood``, ``Perplexity``, ``PerplexityCond``; perplexity after Dupret &
Piwowarski, SIGIR 2008; Chuklin, Markov, de Rijke, *Click Models for Web Search*, 2015, ch. 5).

* ``log_likelihood``: for each session the mean over its positions of ``log P(C_r = c_r | C_<r)``
  (natural log), then the mean over sessions.
* ``perplexity``: for each position ``r``, ``2^(-mean_s log2 P(C_r = c_r))`` over the sessions that
  show ``r``, with the model's unconditional click probability; overall, the mean of the per-rank
  values. ``conditional_perplexity`` uses ``P(C_r = c_r | C_<r)`` instead. PyClick divides by all
  sessions at every rank (its logs show 10 results each); dividing by the sessions that show ``r`` is
  the same there and stays a per-rank average when lists are shorter. A rank no session shows gets
  NaN and is left out of the overall mean.

Lower perplexity is better (1 is perfect prediction; 2 is a coin flip). CLAX's log-likelihood is
instead the mean over all shown positions; ``log_likelihood(..., per_session=False)`` gives that.

``conventions`` (``CONVENTIONS``) of the conditional metrics (``log_likelihood``,
``conditional_perplexity``): ``"jaxrank"`` scores each model's own ``P(C_r = c_r | C_<r)``;
``"pyclick"`` scores what PyClick's ``get_conditional_click_probs`` returns, which differs for CM only
(``jaxrank.click_models.cm.pyclick_conditional_log_probs``: the unconditional probability at and above
the first click, ``10⁻⁶`` for any outcome below it). The unconditional perplexity has one rule.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.click_models import cm
from jaxrank.click_models.base import ClickModel, check_fit_log, observed, session_log_likelihood
from jaxrank.click_models.parametrization import pair_fields
from jaxrank.data.sessions import SessionLog
from jaxrank.types import Array
from jaxrank.utils.checks import check_choice

CONVENTIONS = ("jaxrank", "pyclick")
# The models whose conditional probabilities PyClick computes by another rule than the model's.
_PYCLICK_CONDITIONAL = {"cm": cm.pyclick_conditional_log_probs}


class Perplexity(NamedTuple):
    overall: Array  # [] mean of the per-rank perplexities over the ranks some session shows
    per_rank: Array  # [K] perplexity at each position (NaN where no session shows it)


def check_ids(model: ClickModel, params, log: SessionLog) -> None:
    """Raises ``ValueError`` when ``log`` shows a pair id beyond ``params``' pair tables (a gather would
    clamp it to the last pair, silently). Traced logs or params pass unchecked."""
    sizes = [getattr(params, field).shape[0] for field in pair_fields(model)]
    if sizes and not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(params)):
        check_fit_log(log, min(sizes))


def conditional_log_probs(model: ClickModel, params, log: SessionLog, *, conventions: str = "jaxrank") -> Array:
    """``[S, K]`` ``log P(C_r = c_r | C_<r)`` of the observed clicks (0 on padding) under ``conventions``."""
    check_choice("conventions", conventions, CONVENTIONS)
    if conventions == "pyclick" and model.name in _PYCLICK_CONDITIONAL:
        return _PYCLICK_CONDITIONAL[model.name](params, log)
    return model.conditional_log_probs(params, log)


def log_likelihood(model: ClickModel, params, log: SessionLog, *, per_session: bool = True,
                   conventions: str = "jaxrank") -> Array:
    """``[]`` mean conditional log-likelihood of the observed clicks (PyClick's ``LogLikelihood``; with
    ``per_session=False`` the mean over all shown positions, as CLAX); ``conventions`` as the module says."""
    check_ids(model, params, log)
    check_choice("conventions", conventions, CONVENTIONS)
    if conventions == "pyclick" and model.name in _PYCLICK_CONDITIONAL:
        sessions = jnp.sum(_PYCLICK_CONDITIONAL[model.name](params, log), axis=-1)
    else:
        sessions = session_log_likelihood(model, params, log)
    lengths = jnp.sum(log.mask, axis=-1)
    if not per_session:
        return jnp.sum(sessions) / jnp.maximum(jnp.sum(lengths), 1)
    per = sessions / jnp.maximum(lengths, 1)
    return jnp.sum(per) / jnp.maximum(jnp.sum(lengths > 0), 1)


def _perplexity(log_probs: Array, mask: Array) -> Perplexity:
    shown = jnp.sum(mask, axis=0)
    mean_log2 = jnp.sum(jnp.where(mask, log_probs, 0.0), axis=0) / jnp.maximum(shown, 1) / jnp.log(2.0)
    per_rank = jnp.where(shown > 0, 2.0 ** -mean_log2, jnp.nan)
    overall = jnp.sum(jnp.where(shown > 0, per_rank, 0.0)) / jnp.maximum(jnp.sum(shown > 0), 1)
    return Perplexity(overall, per_rank)


def perplexity(model: ClickModel, params, log: SessionLog) -> Perplexity:
    """Perplexity of the unconditional click probabilities (PyClick's ``Perplexity``)."""
    check_ids(model, params, log)
    return _perplexity(observed(model.click_log_probs(params, log), log.clicks, log.mask), log.mask)


def conditional_perplexity(model: ClickModel, params, log: SessionLog, *, conventions: str = "jaxrank") -> Perplexity:
    """Perplexity of the click probabilities given the clicks above (PyClick's ``PerplexityCond``);
    ``conventions`` as the module says."""
    check_ids(model, params, log)
    return _perplexity(conditional_log_probs(model, params, log, conventions=conventions), log.mask)
