"""PyClick (Chuklin, Markov, de Rijke; github.com/markovi/PyClick, GPL-3) run as a reference beside
jaxrank's click models: imported from a checkout given by path (``--pyclick`` of the benchmarks, or
``PYCLICK_PATH``), never copied. Its code runs as published, under Python 3; this module only reads
logs into its ``SearchSession`` objects, builds its ten models, times and evaluates them.

``defects(pyclick, last_click_rank=..., tail_clicks=...)`` switches off, for the duration of a
``with`` block, the two defects of its DBN and CCM EM updates (re-measured in BENCHMARKS.md):

* ``last_click_rank``: ``SearchSession.get_last_click_rank()`` returns ``len(web_results)`` for a
  session without clicks, so ``DBNAttrEM``/``CCMAttrEM`` (``rank >= last_click_rank``) add nothing to
  the attractiveness numerator of such a session's skipped positions, and the continuation factor
  ``factor(x, y, z=0)`` (``last_click_rank >= rank + 1``: "clicks below, so no stop") gives
  stopping probability 0 at every rank of it. Fixed: ``-1`` (no click at any rank).
* ``tail_clicks``: ``DBN._get_tail_clicks``/``CCM._get_tail_clicks(session, start_rank, params)``
  enumerate the results from ``start_rank`` but read ``session_params[rank]`` with ``rank`` counted
  from 0, so the tail below ``start_rank`` uses the parameters of the top positions. Fixed: the
  parameters of position ``start_rank + rank``.
"""

import contextlib
import gzip
import importlib
import math
import os
import sys
import time

MODEL_NAMES = ("GCTR", "RCTR", "DCTR", "PBM", "UBM", "CM", "DCM", "DBN", "SDBN", "CCM")
EM_MODELS = ("PBM", "UBM", "DBN", "CCM")  # PyClick's EMInference; the others are one MLE pass


def load(path=None):
    """The ``pyclick`` package of the checkout at ``path`` (default ``$PYCLICK_PATH``), as a namespace of
    the modules used here."""
    path = path or os.environ.get("PYCLICK_PATH")
    if not path or not os.path.isdir(os.path.join(path, "pyclick")):
        raise SystemExit(f"no PyClick checkout at {path!r}: pass --pyclick DIR (the folder holding pyclick/) "
                         "or set PYCLICK_PATH.")
    if path not in sys.path:
        sys.path.insert(0, path)
    names = ("click_models.CTR", "click_models.PBM", "click_models.UBM", "click_models.CM", "click_models.DCM",
             "click_models.DBN", "click_models.SDBN", "click_models.CCM", "click_models.Inference",
             "click_models.Evaluation", "search_session.SearchSession", "search_session.SearchResult")
    mods = {n.split(".")[-1]: importlib.import_module("pyclick." + n) for n in names}
    return type("PyClick", (), mods)


def _open_text(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rt", encoding="ascii") if magic == b"\x1f\x8b" else open(path, encoding="ascii")


def read_sessions(pc, path):
    """PyClick ``SearchSession``s of a log in PyClick's session text (``QUERY<TAB>DOC,...,DOC : CLICKED,
    ...``, sessions separated by ``;`` or line ends; gzip or plain), as ``jaxrank.data.read_click_log``
    reads it: the first ``10`` documents; clicks on documents the page does not show are ignored."""
    sessions = []
    with _open_text(path) as f:
        for line in f:
            for text in line.split(";"):
                text = text.strip()
                if not text:
                    continue
                query, rest = text.split("\t", 1)
                docs, _, clicked = rest.partition(":")
                docs = [d.strip() for d in docs.split(",") if d.strip()][:10]
                clicked = {c.strip() for c in clicked.split(",") if c.strip()}
                session = pc.SearchSession.SearchSession(query.strip())
                seen = set()
                for d in docs:
                    session.web_results.append(pc.SearchResult.SearchResult(d, int(d in clicked and d not in seen)))
                    seen.add(d)
                sessions.append(session)
    return sessions


def build(pc, name: str, iterations: int = 50):
    """PyClick's model ``name`` (``MODEL_NAMES``) with ``iterations`` EM iterations where it uses EM."""
    module = pc.CTR if name.endswith("CTR") else getattr(pc, name)
    model = getattr(module, name)()
    if name in EM_MODELS:
        model._inference = pc.Inference.EMInference(iterations)
    return model


def filter_to_train_queries(train, test):
    """PyClick's protocol (``Utils.filter_sessions``): the test sessions of queries seen in training."""
    queries = {s.query for s in train}
    return [s for s in test if s.query in queries]


def train_seconds(pc, name: str, sessions, iterations: int) -> float:
    """Wall seconds of ``model.train(sessions)`` with ``iterations`` EM iterations (one pass for MLE)."""
    model = build(pc, name, iterations)
    start = time.perf_counter()
    model.train(sessions)
    return time.perf_counter() - start


def evaluate(pc, model, sessions) -> dict:
    """PyClick's ``LogLikelihood``, ``Perplexity`` and ``PerplexityCond`` of ``model`` on ``sessions``."""
    ev = pc.Evaluation
    perplexity, per_rank = ev.Perplexity().evaluate(model, sessions)
    try:
        conditional = ev.PerplexityCond().evaluate(model, sessions)[0]
    except ValueError:  # a conditional probability of 0 (math domain error)
        conditional = math.nan
    return {"log_likelihood": ev.LogLikelihood().evaluate(model, sessions), "perplexity": perplexity,
            "perplexity_per_rank": per_rank, "conditional_perplexity": conditional}


class _LogZero:
    """``math`` for PyClick's DBN/CCM modules with ``log(0) = -inf`` (``exp(-inf) = 0``)."""

    def __getattr__(self, name):
        return getattr(math, name)

    @staticmethod
    def log(x, *base):
        return -math.inf if x == 0 else math.log(x, *base)


def _last_click_rank_fixed(self):
    clicks = self.get_clicks()
    ranks = [r for r, c in enumerate(clicks) if c]
    return ranks[-1] if ranks else -1


def _tail_clicks_fixed(names):
    """``_get_tail_clicks`` of DBN (``names = (attr, sat, cont)``) or CCM reading position
    ``start_rank + rank``'s parameters; otherwise PyClick's own arithmetic."""

    def dbn(cls, search_session, start_rank, session_params):
        exam, click_probs, exam_probs = 1.0, [], [1.0]
        for offset, result in enumerate(search_session.web_results[start_rank:]):
            p = session_params[start_rank + offset]
            attr, sat, cont = (p[getattr(cls.param_names, n)].value() for n in ("attr", "sat", "cont"))
            if result.click:
                click_prob, exam = attr * exam, cont * (1 - sat)
            else:
                click_prob = 1 - attr * exam
                exam *= cont * (1 - attr) / click_prob
            click_probs.append(click_prob)
            exam_probs.append(exam)
        return click_probs, exam_probs

    def ccm(cls, search_session, start_rank, session_params):
        exam, click_probs, exam_probs = 1.0, [], [1.0]
        for offset, result in enumerate(search_session.web_results[start_rank:]):
            p = session_params[start_rank + offset]
            attr, tau_1, tau_2, tau_3 = (p[getattr(cls.param_names, n)].value() for n in names)
            if result.click:
                click_prob, exam = attr * exam, tau_2 * (1 - attr) + tau_3 * attr
            else:
                click_prob = 1 - attr * exam
                exam *= tau_1 * (1 - attr) / click_prob
            click_probs.append(click_prob)
            exam_probs.append(exam)
        return click_probs, exam_probs

    return classmethod(dbn if len(names) == 3 else ccm)


@contextlib.contextmanager
def defects(pc, *, last_click_rank: bool = True, tail_clicks: bool = True):
    """Within the block, PyClick with each defect kept (``True``, as published) or fixed (``False``)."""
    session_cls, dbn, ccm = pc.SearchSession.SearchSession, pc.DBN.DBN, pc.CCM.CCM
    saved = (session_cls.get_last_click_rank, dbn.__dict__["_get_tail_clicks"], ccm.__dict__["_get_tail_clicks"])
    try:
        if not last_click_rank:
            session_cls.get_last_click_rank = _last_click_rank_fixed
            pc.DBN.math = pc.CCM.math = _LogZero()
        if not tail_clicks:
            dbn._get_tail_clicks = _tail_clicks_fixed(("attr", "sat", "cont"))
            ccm._get_tail_clicks = _tail_clicks_fixed(("attr", "cont_noclick", "cont_click_nonrel", "cont_click_rel"))
        yield
    finally:
        session_cls.get_last_click_rank, dbn._get_tail_clicks, ccm._get_tail_clicks = saved
        pc.DBN.math = pc.CCM.math = math
