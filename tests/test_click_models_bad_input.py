"""Bad input to the click models gets a one-line ``ValueError`` that names the value (or a documented
truncation): ids beyond the parameter tables, logs without sessions, empty sessions, more positions
than a table or a header holds. (Malformed lines of the TSV and Yandex readers, and the Yandex
reader's truncation of long pages and dropping of empty ones: ``tests/test_data_sessions.py``.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank.click_models import (CLICK_MODELS, conditional_perplexity, fit_em, fit_gradient, generate_sessions,
                                  log_likelihood, perplexity, study)
from jaxrank.data import read_sessions_tsv, session_log, take_sessions
from jaxrank.types import QueryBatch


def _log(num_pairs=6):
    return session_log([0, 0, 1], [[0, 1, 2], [3, 4, 0], [5, 1, 0]], [[0, 1, 2], [3, 4, 0], [5, 1, 0]],
                       [[0, 1, 0], [1, 0, 0], [0, 0, 0]], [[1, 1, 1], [1, 1, 0], [1, 0, 0]], num_pairs=num_pairs)


@pytest.mark.parametrize("fit", ["em", "gradient", "lanes"])
def test_a_pair_id_beyond_num_pairs_is_named(fit):
    model, log = CLICK_MODELS.build("dbn"), _log()
    fits = {"em": lambda log, **kw: fit_em(log, model, num_iterations=2, **kw),
            "gradient": lambda log, **kw: fit_gradient(jax.random.key(0), log, model, num_epochs=1, **kw),
            "lanes": lambda log, **kw: study.fit_lanes(jax.random.split(jax.random.key(0), 1), "em", model, log=log,
                                                       num_steps=2, **kw)}
    with pytest.raises(ValueError, match=r"pair id 5 of the log is outside \[0, num_pairs = 4\); pass num_pairs > 5"):
        fits[fit](log, num_pairs=4)
    negative = log._replace(pair=np.where(log.mask, log.pair - 1, 0))  # a log built without session_log's checks
    with pytest.raises(ValueError, match=r"pair id -1 of the log is outside \[0, num_pairs = 6\)"):
        fits[fit](negative)


def test_a_log_without_sessions_is_refused():
    empty = take_sessions(_log(), slice(0, 0))
    for fit in (lambda: fit_em(empty, CLICK_MODELS.build("pbm")),
                lambda: fit_gradient(jax.random.key(0), empty, CLICK_MODELS.build("pbm"))):
        with pytest.raises(ValueError, match="the log has 0 sessions of 3 positions; a fit needs at least one"):
            fit()


def test_metrics_refuse_ids_beyond_the_fitted_tables():
    model = CLICK_MODELS.build("pbm")
    small = fit_em(take_sessions(_log(), slice(0, 2)), model, num_iterations=2, num_pairs=5)  # pairs 0..4
    for metric in (log_likelihood, perplexity, conditional_perplexity):
        with pytest.raises(ValueError, match=r"pair id 5 of the log is outside \[0, num_pairs = 5\)"):
            metric(model, small, _log())
    assert np.isfinite(float(log_likelihood(model, small, take_sessions(_log(), slice(0, 2)))))


def test_more_positions_than_the_tables_hold_are_named():
    model = CLICK_MODELS.build("pbm")
    params = fit_em(_log(), model, num_iterations=2)  # tables for K = 3
    wide = _log()._replace(**{f: np.pad(getattr(_log(), f), ((0, 0), (0, 1))) for f in ("pair", "doc", "clicks",
                                                                                          "mask")})
    with pytest.raises(ValueError, match="cover 3 positions but the log has 4; init the model with num_positions >= 4"):
        model.conditional_log_probs(params, wide)


def test_generate_refuses_pair_tables_smaller_than_the_queries():
    model = CLICK_MODELS.build("dbn")
    queries = QueryBatch(jnp.zeros((2, 4, 1)), jnp.zeros((2, 4)), jnp.ones((2, 4), bool), np.arange(2))
    with pytest.raises(ValueError, match=r"params.attraction has 6 pairs but the queries hold Q·L = 8"):
        generate_sessions(jax.random.key(0), queries, 5, model, params=model.init_params(6, 4))


def test_an_empty_session_line_names_file_and_line(tmp_path):
    path = tmp_path / "sessions.tsv"
    path.write_text("# jaxrank sessions: num_queries=1 num_pairs=2 num_positions=2\n0\t1\t0\t1\n0\t\t\t\n")
    with pytest.raises(ValueError, match="sessions.tsv:3: an empty session"):
        read_sessions_tsv(path)
    with pytest.raises(ValueError, match="session 1: mask .* is not a non-empty prefix"):
        session_log([0, 0], [[0, 1], [0, 0]], [[0, 1], [0, 0]], [[0, 0], [0, 0]], [[1, 1], [0, 0]])
