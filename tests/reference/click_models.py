"""Slow, obviously-correct click models fitted to session logs (test reference only).

Written from the models' generative definitions (Chuklin, Markov, de Rijke, *Click Models for Web
Search*, 2015, ch. 3; parameter estimation, ch. 4) with Python loops and float64 numpy; no code is
shared with ``jaxrank``. Nothing here is clever: every probability is a sum over all assignments of
the hidden variables.

A session is ``(pairs, clicks)``: the pair ids shown at positions ``0 .. n-1`` and the 0/1 clicks.
A model is a function ``factors(pairs, clicks, hidden)`` that, for one assignment ``hidden`` of the
hidden variables (``(E_r, A_r, S_r)`` per position: examined, attracted, satisfied), returns the
Bernoulli factors ``[(parameter key, outcome), ...]`` whose product is ``P(hidden, clicks)``, or
``None`` when the assignment contradicts the clicks or a deterministic rule of the model. Parameters
are a dict ``{key: probability}``.

* ``pattern_probability``: ``P(C = clicks)`` by summing over all ``8^n`` assignments;
* ``em``: EM where each iteration computes the exact posterior of every assignment of every session,
  adds ``posterior × outcome`` and ``posterior`` to each factor's key, and sets
  ``θ = min((1 + numerator) / (2 + denominator), cap)`` (PyClick's pseudo-counts and cap);
* ``counting``: the closed-form estimates of the counting models (ch. 4: CTR models, CM, simplified
  DCM and SDBN), one loop over sessions.

Keys: ``("ctr",)``, ``("ctr", r)``, ``("ctr", pair)`` (GCTR/RCTR/DCTR, told apart by the model),
``("attr", pair)``, ``("sat", pair)``, ``("exam", r)`` (PBM), ``("gamma", r, d)`` (UBM, ``d`` the
distance to the last click above, ``r + 1`` without one), ``("lambda", r)`` (DCM), ``("cont",)``
(DBN), ``("tau1",)``, ``("tau2",)``, ``("tau3",)`` (CCM). Positions count from 0.
"""

import itertools
from collections import defaultdict

import numpy as np

__all__ = ["MODELS", "assignments", "pattern_probability", "pattern_table", "conditional_and_unconditional", "em",
           "em_iteration_by_depth", "counting", "log_likelihood", "perplexity"]


def _no_hidden(key_fn):
    """CTR models: every shown position is clicked with its own probability, nothing hidden."""

    def factors(pairs, clicks, hidden):
        if any(any(h) for h in hidden):
            return None  # one assignment only: all hidden variables 0
        return [(key_fn(r, pairs[r]), clicks[r]) for r in range(len(pairs))]

    return factors


def _independent(exam_key):
    """PBM and UBM: E_r and A_r independent per position given the clicks above; C_r = E_r A_r."""

    def factors(pairs, clicks, hidden):
        out, previous = [], -1
        for r, (e, a, s) in enumerate(hidden):
            if s or clicks[r] != (e and a):
                return None
            out += [(exam_key(r, r - previous), e), (("attr", pairs[r]), a)]
            if clicks[r]:
                previous = r
        return out

    return factors


def _cascade(after_skip, after_click, satisfaction_key):
    """The cascade family. ``after_skip(r)`` / ``after_click(r, s)`` give the key of the continuation
    factor (``None``: the user always goes on, ``"stop"``: never); ``satisfaction_key(pair)`` the key of
    ``S_r`` after a click (``None``: no satisfaction variable)."""

    def factors(pairs, clicks, hidden):
        n = len(pairs)
        out = []
        if not hidden[0][0]:
            return None  # the first position is always examined
        for r, (e, a, s) in enumerate(hidden):
            c = e and a
            if clicks[r] != c:
                return None
            out.append((("attr", pairs[r]), a))
            if c and satisfaction_key is not None:
                out.append((satisfaction_key(pairs[r]), s))
            elif s:
                return None  # no satisfaction without a click (or in a model without it)
            if r == n - 1:
                break
            e_next = hidden[r + 1][0]
            if not e:
                if e_next:
                    return None  # an unexamined position ends the scan
                continue
            key = after_click(r, s) if c else after_skip(r)
            if key is None:
                if not e_next:
                    return None
            elif key == "stop":
                if e_next:
                    return None
            else:
                out.append((key, e_next))
        return out

    return factors


MODELS = {
    "gctr": _no_hidden(lambda r, pair: ("ctr",)),
    "rctr": _no_hidden(lambda r, pair: ("ctr", r)),
    "dctr": _no_hidden(lambda r, pair: ("ctr", pair)),
    "pbm": _independent(lambda r, d: ("exam", r)),
    "ubm": _independent(lambda r, d: ("gamma", r, d)),
    "cm": _cascade(lambda r: None, lambda r, s: "stop", None),
    "dcm": _cascade(lambda r: None, lambda r, s: ("lambda", r), None),
    "sdbn": _cascade(lambda r: None, lambda r, s: "stop" if s else None, lambda pair: ("sat", pair)),
    "dbn": _cascade(lambda r: ("cont",), lambda r, s: "stop" if s else ("cont",), lambda pair: ("sat", pair)),
    # CCM: one relevance α for attraction and satisfaction.
    "ccm": _cascade(lambda r: ("tau1",), lambda r, s: ("tau3",) if s else ("tau2",), lambda pair: ("attr", pair)),
}


def assignments(n):
    """Every assignment of ``(E_r, A_r, S_r)`` to ``n`` positions."""
    return itertools.product(itertools.product((0, 1), repeat=3), repeat=n)


def _weight(factor_list, params):
    w = 1.0
    for key, outcome in factor_list:
        w *= params[key] if outcome else 1.0 - params[key]
    return w


def pattern_probability(model, params, pairs, clicks):
    """``P(C = clicks)`` of one session: the sum over every assignment of the hidden variables."""
    total = 0.0
    for hidden in assignments(len(pairs)):
        f = MODELS[model](list(pairs), [int(c) for c in clicks], hidden)
        if f is not None:
            total += _weight(f, params)
    return total


def pattern_table(model, params, pairs):
    """``{clicks tuple: probability}`` over all ``2^n`` click patterns of one shown list."""
    return {c: pattern_probability(model, params, pairs, c) for c in itertools.product((0, 1), repeat=len(pairs))}


def conditional_and_unconditional(model, params, pairs, clicks):
    """``(P(C_r = c_r | C_<r = c_<r), P(C_r = 1))`` for every position, from the pattern table
    (the conditional is ``nan`` where the clicks above have probability 0)."""
    table = pattern_table(model, params, pairs)
    n = len(pairs)

    def prefix(p):
        return sum(v for c, v in table.items() if c[:len(p)] == tuple(p))

    clicks = [int(c) for c in clicks]
    cond = [prefix(clicks[:r + 1]) / prefix(clicks[:r]) if prefix(clicks[:r]) > 0 else np.nan for r in range(n)]
    uncond = [sum(v for c, v in table.items() if c[r] == 1) for r in range(n)]
    return np.array(cond), np.array(uncond)


def em(model, sessions, *, num_iterations=50, init=0.5, cap=1.0 - 1e-6):
    """EM from every parameter at ``init``; returns ``{key: probability}`` for every key the sessions touch.

    Args:
      sessions: a list of ``(pairs, clicks)``.
    """
    # Which assignments are possible, and their factors, depend only on the session: find them once.
    grouped = defaultdict(int)
    for pairs, clicks in sessions:
        grouped[(tuple(int(p) for p in pairs), tuple(int(c) for c in clicks))] += 1
    feasible = []
    for (pairs, clicks), count in grouped.items():
        options = [f for f in (MODELS[model](list(pairs), list(clicks), h) for h in assignments(len(pairs)))
                   if f is not None]
        feasible.append((count, options))
    params = {key: init for _, options in feasible for f in options for key, _ in f}
    for _ in range(num_iterations):
        numerator, denominator = defaultdict(float), defaultdict(float)
        for count, options in feasible:
            weights = np.array([_weight(f, params) for f in options])
            posterior = weights / weights.sum()
            for p, f in zip(posterior, options):
                for key, outcome in f:
                    numerator[key] += count * p * outcome
                    denominator[key] += count * p
        params = {key: min((1.0 + numerator[key]) / (2.0 + denominator[key]), cap) for key in params}
    return params


def em_iteration_by_depth(model, sessions, params, *, cap=1.0 - 1e-6):
    """One iteration of ``em`` for a cascade-family model (``cm``, ``dcm``, ``sdbn``, ``dbn``, ``ccm``) in time
    linear in the sessions: instead of all ``8^n`` assignments, only what the clicks leave open is
    enumerated, the examination depth ``m`` (positions ``< m`` examined, the first always, every click
    among them) and the satisfaction of each click; an examined position's attraction is its click.
    The attraction of an unexamined position is independent of the clicks, so its factor sums to 1
    and its posterior is its prior ``α``. Needs distinct pairs within a session.

    Args:
      sessions: a list of ``(pairs, clicks)``.
      params: ``{key: probability}`` with every key the sessions touch (e.g. ``em``'s result).

    Returns:
      the next ``{key: probability}`` (PyClick's pseudo-counts and cap, as ``em``).
    """
    numerator, denominator = defaultdict(float), defaultdict(float)
    for pairs, clicks in sessions:
        pairs, clicks = [int(p) for p in pairs], [int(c) for c in clicks]
        n = len(pairs)
        clicked = [r for r in range(n) if clicks[r]]
        options = []
        for m in range(max(clicked, default=0) + 1, n + 1):
            for satisfied in itertools.product((0, 1), repeat=len(clicked)):
                s_of = dict(zip(clicked, satisfied))
                hidden = [(1, clicks[r], s_of.get(r, 0)) if r < m else (0, 0, 0) for r in range(n)]
                f = MODELS[model](pairs, clicks, hidden)
                if f is None:
                    continue
                unexamined = {("attr", pairs[r]) for r in range(m, n)}
                options.append(([(k, o) for k, o in f if k not in unexamined], unexamined))
        weights = np.array([_weight(kept, params) for kept, _ in options])
        for p, (kept, unexamined) in zip(weights / weights.sum(), options):
            for key, outcome in kept:
                numerator[key] += p * outcome
                denominator[key] += p
            for key in unexamined:
                numerator[key] += p * params[key]
                denominator[key] += p
    return {key: min((1.0 + numerator[key]) / (2.0 + denominator[key]), cap) for key in params}


def counting(model, sessions):
    """The counting models' estimates ``(1 + numerator) / (2 + denominator)``: GCTR, RCTR, DCTR (clicks
    over impressions), CM (positions down to the first click), DCM and SDBN (positions down to the
    last click examined; the last click satisfied, every other click continued)."""
    numerator, denominator = defaultdict(float), defaultdict(float)

    def add(key, outcome):
        numerator[key] += outcome
        denominator[key] += 1.0

    for pairs, clicks in sessions:
        n = len(pairs)
        clicked = [r for r in range(n) if clicks[r]]
        first = clicked[0] if clicked else n - 1
        last = clicked[-1] if clicked else n - 1
        for r in range(n):
            c = int(clicks[r])
            if model == "gctr":
                add(("ctr",), c)
            elif model == "rctr":
                add(("ctr", r), c)
            elif model == "dctr":
                add(("ctr", pairs[r]), c)
            elif model == "cm":
                if r <= first:
                    add(("attr", pairs[r]), c)
            elif model in ("dcm", "sdbn"):
                if r <= last:
                    add(("attr", pairs[r]), c)
                if c and model == "dcm":
                    add(("lambda", r), float(r != last))
                if c and model == "sdbn":
                    add(("sat", pairs[r]), float(r == last))
            else:
                raise ValueError(f"{model} is not a counting model")
    return {key: (1.0 + numerator[key]) / (2.0 + denominator[key]) for key in numerator}


def log_likelihood(model, params, sessions):
    """PyClick's ``LogLikelihood``: the mean over sessions of the mean over positions of
    ``log P(C_r = c_r | C_<r)``."""
    total = 0.0
    for pairs, clicks in sessions:
        cond, _ = conditional_and_unconditional(model, params, pairs, clicks)
        total += np.mean(np.log(cond))
    return total / len(sessions)


def perplexity(model, params, sessions, num_positions, *, conditional=False):
    """PyClick's ``Perplexity`` (``PerplexityCond`` with ``conditional``): per rank
    ``2^(-mean log2 P(C_r = c_r))`` over the sessions showing that rank, and their mean."""
    sums, counts = np.zeros(num_positions), np.zeros(num_positions)
    for pairs, clicks in sessions:
        cond, uncond = conditional_and_unconditional(model, params, pairs, clicks)
        for r, c in enumerate(clicks):
            p = cond[r] if conditional else (uncond[r] if c else 1.0 - uncond[r])
            sums[r] += np.log2(p)
            counts[r] += 1
    per_rank = [2.0 ** (-sums[r] / counts[r]) for r in range(num_positions) if counts[r]]
    return float(np.mean(per_rank)), per_rank
