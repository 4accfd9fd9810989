"""Pairwise online learning to rank with ε-greedy list mixing (Hofmann, Whiteson & de Rijke, "Balancing
exploration and exploitation in listwise and pairwise online learning to rank for information retrieval",
Information Retrieval 16(1), 2013), linear model: the "Pairwise (linear)" baseline of Oosterhuis & de Rijke
(CIKM 2018, Tables 3–4) as the authors' code runs it (github.com/HarrieO/OnlineLearningToRank
``algorithms/baselines/pairwise.py``, class ``Pairwise``, which every detail below follows).

Per impression:

1. Display (ε-greedy mixing): an exploitative list (the documents by the current scores ``w·x``) and an
   exploratory one (a uniformly random permutation). Position by position, with probability ε the next
   document of the exploratory list not shown yet, else the next one of the exploitative list
   (``_create_train_ranking``; ``epsilon_greedy_display`` with explicit draws). Only the first ``k``
   entries of either list can be reached (each entry passed over is already shown), so both come from
   ``lax.top_k``; the random permutation is the Gumbel-top-k of zeros.
2. Pairs from the clicks under the click-skip-above assumption: a clicked document is preferred over
   every unclicked document above the last click and over the first unclicked one after it
   (``_update_to_clicks``, the same rule as PDGD's, ``jaxrank.oltr.pdgd.inferred_pairs``).
3. Step: ``w ← w + η Σ_{d_a ≻ d_b} (x_a − x_b)`` over all inferred pairs, one step per impression with
   a pair: every pair counts (no margin test on the current scores, no normalisation by the number
   of pairs; the code's ``update_to_documents`` with weight ``#negatives`` on each clicked and
   ``−#clicked`` on each negative document), then ``η ← η · learning_rate_decay``
   (``models/linearmodel.py``).

Defaults. ``ε = 0.8`` (the PDGD paper, §4.3, and the authors' ``scripts/CIKM2018.py``), the probability
of an exploratory document. ``η = 0.1``, the authors' code: ``Pairwise`` subclasses ``PDGD`` and
``scripts/CIKM2018.py`` sets only ε and the decay, so the runs behind Tables 3–4 used PDGD's default
η = 0.1, not the η = 0.01 the PDGD paper prints (§4.3). That script also decays η by 0.9999977 per update.

Exploitative order (static option ``exploit_order``). ``"descending"`` (default) puts the current
ranker's best documents first, as Hofmann et al. describe exploitation. The authors' code builds that
list with ``utils/rankings.py`` ``rank_query`` on the raw scores, which sorts ascending (their test
rankings negate the scores first, ``PDGD.get_test_rankings``): its exploitative documents come worst
first. ``exploit_order="ascending"`` reproduces that code and the online numbers of Table 4 (MQ2008
Fold 1, perfect clicks, 10 runs: about 603 against the table's 616.6 over five folds, where
``"descending"`` gives about 725). The offline ranker (``params``/``score``) and the update rule are the
same under both.

Ties in the exploitative list go by document index (``lax.top_k``, as DBGD/MGD here) where the authors
break them at random; this only matters while ``w = 0`` or for documents with equal features.

Random draws of one impression: ``key_coin, key_explore = jax.random.split(key)``; position ``i``
explores when ``jax.random.uniform(key_coin, (k,))[i] < ε``; the exploratory list is the descending
order of ``jax.random.gumbel(key_explore, (L,))`` over the real documents.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.oltr.base import check_features, check_list_size, check_rates, params, step_towards
from jaxrank.oltr.scorers import linear_apply as score
from jaxrank.oltr.pdgd import inferred_pairs
from jaxrank.registry import hparams_with_defaults
from jaxrank.types import Array, Ranker, RankerInfo
from jaxrank.utils.checks import check_choice, check_int, check_number

EXPLOIT_ORDERS = ("descending", "ascending")


class PairwiseState(NamedTuple):
    w: jax.Array  # [D] f32, linear scoring function
    learning_rate: jax.Array  # [] f32, η (decayed after every update with a pair)
    learning_rate_decay: jax.Array  # [] f32
    epsilon: jax.Array  # [] f32, ε, probability that a position takes the exploratory list's next document
    t: jax.Array  # [] i32, impressions seen


def _mix(explore: Array, exploit_docs: Array, explore_docs: Array) -> Array:
    """``[k]`` i32: position ``i`` takes the first document of ``explore_docs`` (when ``explore[i]``) or
    of ``exploit_docs`` not shown above it. The ``[m]`` lists hold the real documents first; the result is
    meaningful at the positions ``i < min(k, #real)`` (``m >= min(k, #real)``)."""
    def position(taken, use_explore):
        taken_exploit, taken_explore = taken
        # At position i the first entry not shown yet is among a list's first i + 1 (each one passed is shown).
        doc = jnp.where(use_explore, explore_docs[jnp.argmax(~taken_explore)],
                        exploit_docs[jnp.argmax(~taken_exploit)])
        return (taken_exploit | (exploit_docs == doc), taken_explore | (explore_docs == doc)), doc

    none = jnp.zeros(exploit_docs.shape, bool)
    # k is small and static: unrolled, no loop overhead per impression.
    return jax.lax.scan(position, (none, none), explore, unroll=True)[1]


def epsilon_greedy_display(scores: Array, where: Array, explore: Array, priorities: Array, *,
                           exploit_order: str = "descending") -> tuple[Array, Array]:
    """``(docs [k] i32, shown [k] bool)``: the ε-greedy mix of the exploitative list (``scores`` in
    ``exploit_order``, ties by index) and the exploratory list (``priorities`` descending) of the real
    documents; ``docs = -1`` past the ``#real`` documents.

    Args:
      scores: ``[L]`` the current scores ``w·x``.
      where: ``[L]`` bool, real documents.
      explore: ``[k]`` bool, the positions that take the exploratory list's next document.
      priorities: ``[L]`` the exploratory list's sort keys (i.i.d. Gumbel: a uniformly random order).
      exploit_order: ``"descending"`` (best first) or ``"ascending"`` (the authors' code).
    """
    where = jnp.asarray(where, bool)
    m = min(explore.shape[0], where.shape[0])  # no list is read past its first k entries
    exploit_key = scores if exploit_order == "descending" else -scores
    _, exploit_docs = jax.lax.top_k(jnp.where(where, exploit_key, -jnp.inf), m)
    _, explore_docs = jax.lax.top_k(jnp.where(where, priorities, -jnp.inf), m)
    docs = _mix(jnp.asarray(explore, bool), exploit_docs, explore_docs)
    shown = jnp.arange(explore.shape[0]) < jnp.sum(where)
    return jnp.where(shown, docs, -1).astype(jnp.int32), shown


def pairwise_gradient(features: Array, docs: Array, shown: Array, clicks: Array) -> Array:
    """``[D]`` f32 ``Σ_{d_a ≻ d_b} (x_a − x_b)`` over the pairs ``inferred_pairs(clicks, shown)``."""
    pairs = inferred_pairs(clicks, shown).astype(jnp.float32)  # [a, b]: position a ≻ position b
    per_position = jnp.sum(pairs, axis=1) - jnp.sum(pairs, axis=0)  # #negatives if clicked, −#clicked if negative
    return jnp.where(shown, per_position, 0.0) @ jnp.asarray(features, jnp.float32)[jnp.maximum(docs, 0)]


HPARAMS = {
    # η: the authors' code (Pairwise inherits PDGD's default in algorithms/PDGD/pdgd.py; scripts/CIKM2018.py
    # does not set it), which produced the PDGD paper's Tables 3–4; the paper prints 0.01.
    "learning_rate": 0.1,
    # Factor applied to η after each update with a pair; 1 keeps η constant (models/linearmodel.py of the authors'
    # code; their scripts/CIKM2018.py runs 0.9999977).
    "learning_rate_decay": 1.0,
    # ε, probability of an exploratory document at each position (PDGD paper §4.3; scripts/CIKM2018.py).
    "epsilon": 0.8,
}

OPTIONS = {
    "list_size": 10,  # k, the displayed list length (10 in the PDGD paper)
    "exploit_order": "descending",  # "descending" (best first) or "ascending" (the authors' code, worst first)
}


def init(key, num_features: int, **hparams) -> PairwiseState:
    """``w = 0`` with ``HPARAMS`` (overridden by ``hparams``) as f32 leaves.

    Raises:
      ValueError: for an unknown name, a static option, or a value out of range (when concrete).
    """
    del key  # w starts at zero
    hparams = hparams_with_defaults("ranker 'pairwise'", HPARAMS, OPTIONS, hparams)
    check_int("num_features", num_features, minimum=1)
    check_rates(hparams["learning_rate"], hparams["learning_rate_decay"])
    check_number("epsilon", hparams["epsilon"], low=0.0, high=1.0, low_inclusive=True, high_inclusive=True,
                 fix="use a probability, 0.8 in the PDGD paper")
    f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
    return PairwiseState(jnp.zeros(num_features, jnp.float32), f32(hparams["learning_rate"]),
                         f32(hparams["learning_rate_decay"]), f32(hparams["epsilon"]), jnp.zeros((), jnp.int32))


def rank(key, state: PairwiseState, features, where, *, list_size: int, exploit_order: str):
    """The ε-greedy mix of the exploitative and a random list: ``(docs [k], shown [k], ())``."""
    check_features(features, where)
    where = jnp.asarray(where, bool)
    key_coin, key_explore = jax.random.split(key)
    explore = jax.random.uniform(key_coin, (list_size,)) < state.epsilon
    priorities = jax.random.gumbel(key_explore, where.shape)
    docs, shown = epsilon_greedy_display(score(state.w, features), where, explore, priorities,
                                         exploit_order=exploit_order)
    return docs, shown, ()


def update(state: PairwiseState, features, where, docs, shown, clicks, aux):
    """``w ← w + η Σ_{d_a ≻ d_b} (x_a − x_b)``: ``(state, RankerInfo)``; updated when the clicks give a pair."""
    del where, aux
    any_pair = jnp.any(inferred_pairs(clicks, shown))
    state = step_towards(state, pairwise_gradient(features, docs, shown, clicks), any_pair)
    return state, RankerInfo(updated=any_pair)


def make(*, list_size: int = OPTIONS["list_size"], exploit_order: str = OPTIONS["exploit_order"]) -> Ranker:
    """Pairwise as a ``jaxrank.types.Ranker`` with the static options bound.

    Args:
      list_size: ``k``, the displayed list length.
      exploit_order: ``"descending"`` (best first, Hofmann et al.) or ``"ascending"`` (worst first, as the
        authors' code of the PDGD paper displays its exploitative documents).
    """
    check_list_size(list_size)
    check_choice("exploit_order", exploit_order, EXPLOIT_ORDERS)
    return Ranker(init, functools.partial(rank, list_size=list_size, exploit_order=exploit_order), update,
                  params, score)
