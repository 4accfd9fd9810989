"""Click models fitted to session logs: the ten models of Chuklin, Markov & de Rijke, *Click Models for
Web Search* (2015) as implemented by PyClick, written as pure functions over parameter pytrees.

Each model is a module with ``HPARAMS`` (its EM fit's starting probability, pseudo-counts and cap,
PyClick's defaults), ``OPTIONS`` (the E-step's chunk size) and ``make(**options) -> ClickModel``; ``CLICK_MODELS``
registers them (a new model is one module plus one line)::

    from jaxrank.click_models import CLICK_MODELS, fit_em, generate_sessions
    model = CLICK_MODELS.build("dbn")                   # options: chunk_size (E-step sessions per chunk)
    params = fit_em(log, model)                         # 50 EM iterations, PyClick's conventions
    state = model.init(key, num_pairs, num_positions, prior_a=1.0, prior_b=2.0)  # HPARAMS: f32 leaves
    state, info = model.step(state, log)                # one EM iteration; info.log_likelihood
    params = fit_gradient(key, log, model)              # or Adam on the same likelihood (CLAX)
    log_lik = model.conditional_log_probs(params, log)  # [S, K]

EM models: PBM, UBM, CCM, DBN; counting (maximum likelihood) models: GCTR, RCTR, DCTR, CM, DCM, SDBN.
``fit_gradient`` fits any of them with optax, its parameters as tables or as functions of the pairs'
features (``parametrization``).
``generate_sessions`` simulates logs (with ``jaxrank.clicks`` simulators or a fitted model's ``sample``);
``metrics`` evaluates a fitted model (log-likelihood, perplexity); ``study`` runs many fits (seeds,
settings, logs) as lanes of ``jaxrank.lanes``.
"""

from jaxrank.click_models import (ccm, chain, cm, dbn, dcm, dctr, examination, gctr, gradient, metrics, parametrization,
                                   pbm, rctr, sdbn, ubm)
from jaxrank.click_models.base import (PRIOR, PROB_CAP, ClickModel, Statistics, from_probabilities, log1mexp, logit,
                                       maximize, probabilities, session_log_likelihood)
from jaxrank.click_models.em import EMInfo, EMState, em_step, expected_statistics, fit_em, run_em
from jaxrank.click_models.generate import generate_logs, generate_sessions
from jaxrank.click_models.gradient import GradientInfo, fit_gradient, gradient_fitter
from jaxrank.click_models.metrics import Perplexity, conditional_perplexity, log_likelihood, perplexity
from jaxrank.click_models import study  # noqa: E402  (after the fitters it runs as lanes)
from jaxrank.registry import Registry

CLICK_MODELS = Registry("click model", {
    "gctr": gctr,
    "rctr": rctr,
    "dctr": dctr,
    "pbm": pbm,
    "cm": cm,
    "ubm": ubm,
    "dcm": dcm,
    "ccm": ccm,
    "dbn": dbn,
    "sdbn": sdbn,
})

__all__ = [
    "CLICK_MODELS",
    "PRIOR",
    "PROB_CAP",
    "ClickModel",
    "EMInfo",
    "EMState",
    "GradientInfo",
    "Perplexity",
    "Statistics",
    "ccm",
    "chain",
    "cm",
    "conditional_perplexity",
    "dbn",
    "dcm",
    "dctr",
    "em_step",
    "examination",
    "expected_statistics",
    "fit_em",
    "fit_gradient",
    "from_probabilities",
    "gctr",
    "generate_logs",
    "generate_sessions",
    "gradient",
    "gradient_fitter",
    "log1mexp",
    "log_likelihood",
    "logit",
    "maximize",
    "metrics",
    "parametrization",
    "pbm",
    "perplexity",
    "probabilities",
    "rctr",
    "run_em",
    "sdbn",
    "session_log_likelihood",
    "study",
    "ubm",
]
