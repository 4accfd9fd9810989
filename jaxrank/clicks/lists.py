"""The two list builders behind every interleaved or multileaved comparison of ``n >= 2`` rankers.

* Team draft (Radlinski, Kurup, Joachims, CIKM 2008, Algorithm 1; Schuth et al., CIKM 2014,
  Algorithm 1 for ``n`` rankers): at each position a picker appends its highest-ranked document
  not yet shown, which joins its team.
* Probabilistic (Hofmann, Whiteson, de Rijke, CIKM 2011, §4; Schuth et al., SIGIR 2015,
  Algorithm 1): each ranker is a softmax ``P_j(d) ∝ rank_j(d)^-τ`` over the documents not yet
  shown; at each position the picker samples a document from its softmax, and the list records
  the posterior ``P(a_l = j | L) = P_j(l_l|·) / Σ_k P_k(l_l|·)`` of every ranker.

Who picks where is decided by the caller's draws before the list is built (``alternating_pickers``
for two rankers, ``round_pickers`` for ``n``), so ``team_draft_list`` and ``probabilistic_list``
hold the algorithms once. They read the rankings through a ``QueryRankings`` (the ``n`` rankers'
rankings of one query, with the documents shown so far): ``DocumentRankings`` holds ``[n, N]``
ranks of one padded query (``jaxrank.clicks.interleave`` and ``.multileave``), and
``jaxrank.envs.estimate.TableRankings`` reads precomputed rank tables of a whole collection in
``O(L^2)`` per list, whatever the query's length.

A list has ``min(L, #real documents)`` shown positions at the front; the rest have
``shown = False``, ``docs = -1`` and team ``-1`` (posterior ``1/n``).
"""

from typing import NamedTuple, Optional, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxrank.types import Array

# f32 softmax weights r^-τ: every weight is floored at exp(-_LOG_WEIGHT_FLOOR) so real documents
# stay drawable, and a concrete τ must keep ln(best remaining weight) >= -_MAX_LOG_WEIGHT_RANGE,
# so the floor is at most exp(-40) of the top remaining weight (a relative change <= N e^-40).
_LOG_WEIGHT_FLOOR = 80.0
_MAX_LOG_WEIGHT_RANGE = 40.0


def check_list_options(list_size, tau=None) -> None:
    """``list_size`` a static int >= 1 and a concrete ``tau`` a positive scalar (Python-level)."""
    if isinstance(list_size, bool) or not isinstance(list_size, (int, np.integer)) or list_size < 1:
        raise ValueError(f"list_size must be an int >= 1 (static); got {list_size!r}.")
    if tau is not None and not isinstance(tau, jax.core.Tracer):
        tau_value = np.asarray(tau, dtype=np.float64)
        if tau_value.ndim != 0 or not tau_value > 0.0:
            raise ValueError(f"tau must be a positive scalar; got {tau!r}.")


def check_tau_range(tau, list_size: int) -> None:
    """The best remaining rank is always <= L; its f32 weight ``L^-τ`` must stay far above the floor."""
    if isinstance(tau, jax.core.Tracer):
        return
    limit = _MAX_LOG_WEIGHT_RANGE / np.log(max(list_size, 2))
    if float(tau) > limit:
        raise ValueError(
            f"tau = {float(tau)} is too large for float32 weights with list_size={list_size}: "
            f"need tau * ln(list_size) <= {_MAX_LOG_WEIGHT_RANGE:g}, i.e. tau <= {limit:.1f}."
        )


def ranking(scores: Array, where: Array) -> tuple[Array, Array]:
    """``(order [N], ranks [N])``: real documents by descending score (ties by index), masked last.

    ``order[r]`` is the document at 0-based rank ``r``; ``ranks[d]`` is document ``d``'s 1-based
    rank. Masked documents get the ranks after all real ones, so a ``-inf`` score cannot push a
    real document behind padding.
    """
    order = jnp.lexsort((-scores, ~where)).astype(jnp.int32)  # last key is the primary one
    num_docs = scores.shape[-1]
    ranks = jnp.zeros(num_docs, jnp.int32).at[order].set(jnp.arange(1, num_docs + 1, dtype=jnp.int32))
    return order, ranks


def score_ranks(scores: Array, where: Array) -> Array:
    """``[N]`` i32 1-based ranks of ``scores [N]`` as every interleaver ranks them.

    Real documents by descending score, ties by index; masked documents after all real ones.
    Precompute these once per (query, ranker) and call the ``*_from_ranks`` interleavers and
    multileavers to skip the per-comparison sort.
    """
    return ranking(jnp.asarray(scores), jnp.asarray(where, bool))[1]


def alternating_pickers(coins: Array) -> Array:
    """``[L]`` i32 picker (0 or 1) of two-ranker team draft from one uniform per position.

    Radlinski et al. 2008, Algorithm 1: the smaller team picks, a fair coin when the teams are
    equal. Every shown position adds one member, so the teams are equal exactly before the even
    positions: position ``2m`` goes to ranker 1 when ``coins[2m] < 0.5`` and position ``2m + 1``
    to the other ranker (``coins`` at odd positions are drawn and unused).
    """
    list_size = coins.shape[-1]
    second = coins[::2] < 0.5
    return jnp.stack([second, ~second], -1).reshape(-1)[:list_size].astype(jnp.int32)


def round_pickers(order_u: Array, list_size: int) -> Array:
    """``[L]`` i32 pickers of ``n`` rankers in rounds: round ``r`` in ascending ``order_u[r]`` order.

    ``order_u [R, n]`` uniforms, ties by ranker index (Schuth et al. 2014, Algorithm 1: the not yet
    picked rankers of a round are exactly the smallest teams).
    """
    return jnp.argsort(order_u, axis=-1, stable=True).reshape(-1)[:list_size].astype(jnp.int32)


def sample_index(u: Array, weights: Array) -> Array:
    """Inverse-CDF draw ∝ ``weights [N]`` (>= 0) with one uniform ``u``; only ``weights > 0`` can be drawn."""
    cumulative = jnp.cumsum(weights)
    possible = weights > 0.0
    hit = (cumulative > u * cumulative[-1]) & possible
    # Rounding can leave u * total at the very top; fall back to the last possible document.
    last = weights.shape[-1] - 1 - jnp.argmax(possible[::-1])
    return jnp.where(jnp.any(hit), jnp.argmax(hit), last).astype(jnp.int32)


def softmax_weights(ranks: Array, where: Array, tau) -> Array:
    """``[..., N]`` f32 unnormalised softmax weights ``rank^-τ`` of the real documents (0 on padding)."""
    log_w = -jnp.asarray(tau, jnp.float32) * jnp.log(jnp.asarray(ranks, jnp.float32))
    return jnp.where(where, jnp.exp(jnp.maximum(log_w, -_LOG_WEIGHT_FLOOR)), 0.0)


class QueryRankings(Protocol):
    """The ``n`` rankers' rankings of one query, with the documents shown so far (``state``)."""

    num_docs: Array  # [] i32 real documents of the query: the first min(L, num_docs) positions are shown

    def start(self, list_size: int): ...  # state before the first position

    def best(self, state, ranker: Array) -> Array: ...  # [] i32 ranker's highest-ranked document not shown

    def draw(self, state, ranker: Array, u: Array) -> Array: ...  # [] i32 a document from ranker's softmax

    def chances(self, state, doc: Array) -> tuple[Array, Array]: ...  # ([n] weight of doc, [n] remaining total)

    def take(self, state, doc: Array, shown: Array): ...  # state after showing doc (a no-op when not shown)


class DocumentRankings(NamedTuple):
    """``QueryRankings`` of one padded query in document space; the state is ``taken [N]`` bool.

    ``ranks`` may be ``jaxrank.oltr.base.top_ranks`` (exact for each ranker's top ``L``): team
    draft never reaches deeper, since at most ``L - 1`` documents are shown before a pick.
    """

    ranks: Array  # [n, N] i32 1-based ranks (score_ranks); padding ranked after every real document
    where: Array  # [N] bool real documents
    weights: Optional[Array] = None  # [n, N] f32 softmax_weights (probabilistic lists only)

    @property
    def num_docs(self) -> Array:
        return jnp.sum(self.where, dtype=jnp.int32)

    def start(self, list_size: int) -> Array:
        del list_size
        return ~self.where

    def best(self, taken: Array, ranker: Array) -> Array:
        unranked = self.where.shape[-1] + 1
        return jnp.argmin(jnp.where(taken, unranked, self.ranks[ranker])).astype(jnp.int32)

    def draw(self, taken: Array, ranker: Array, u: Array) -> Array:
        return sample_index(u, jnp.where(taken, 0.0, self.weights[ranker]))

    def chances(self, taken: Array, doc: Array) -> tuple[Array, Array]:
        return self.weights[:, doc], jnp.sum(jnp.where(taken, 0.0, self.weights), axis=-1)

    def take(self, taken: Array, doc: Array, shown: Array) -> Array:
        return taken.at[doc].set(taken[doc] | shown)


def team_draft_list(pickers: Array, rankings: QueryRankings, list_size: int) -> tuple[Array, Array, Array]:
    """Team-draft list: position ``l`` gets ``pickers[l]``'s highest-ranked document not yet shown.

    Args:
      pickers: ``[L]`` i32 ranker at each position (``alternating_pickers`` or ``round_pickers``).
      rankings: ``QueryRankings`` of the query.
      list_size: ``L`` (static).

    Returns:
      ``(docs, shown, team)``: ``docs [L]`` i32 (-1 where not shown), ``shown [L]`` bool and
      ``team [L]`` i32, the ranker that contributed the position (-1 where not shown).
    """
    num_docs = rankings.num_docs

    def position(state, x):
        slot, picker = x
        shown = slot < num_docs
        doc = rankings.best(state, picker)
        return rankings.take(state, doc, shown), (jnp.where(shown, doc, -1), shown, jnp.where(shown, picker, -1))

    xs = (jnp.arange(list_size), pickers)
    _, (docs, shown, team) = jax.lax.scan(position, rankings.start(list_size), xs)
    return docs, shown, team.astype(jnp.int32)


def probabilistic_list(pickers: Array, pick_u: Array, rankings: QueryRankings,
                       list_size: int) -> tuple[Array, Array, Array]:
    """Probabilistic list: position ``l``'s picker samples from its softmax over the remaining documents.

    Args:
      pickers: ``[L]`` i32 ranker sampling each position.
      pick_u: ``[L]`` f32 uniform of each position's draw.
      rankings: ``QueryRankings`` of the query.
      list_size: ``L`` (static).

    Returns:
      ``(docs, shown, posterior)``: ``docs [L]`` i32 (-1 where not shown), ``shown [L]`` bool and
      ``posterior [L, n]`` f32, ``P_j(l_l|·) / Σ_k P_k(l_l|·)`` (rows sum to 1; ``1/n`` where not shown).
    """
    num_docs = rankings.num_docs

    def position(state, x):
        slot, picker, u = x
        shown = slot < num_docs
        doc = rankings.draw(state, picker, u)
        weight, total = rankings.chances(state, doc)
        # P_j(doc | remaining) = w_j(doc) / Z_j; every Z_j > 0 while a real document remains (Z_j is
        # floored only for the unshown positions, whose posterior is replaced by 1/n).
        total = jnp.maximum(total, jnp.finfo(jnp.float32).tiny)
        norm = jnp.sum(weight / total)
        posterior = jnp.where(shown, weight / (total * norm), 1.0 / weight.shape[-1])
        return rankings.take(state, doc, shown), (jnp.where(shown, doc, -1), shown, posterior)

    xs = (jnp.arange(list_size), pickers, pick_u)
    _, (docs, shown, posterior) = jax.lax.scan(position, rankings.start(list_size), xs)
    return docs, shown, posterior


def click_difference_law(up: Array, down: Array, clicked: Array) -> tuple[Array, Array]:
    """``(P(o > 0), P(o < 0))`` for ``o = Σ_l click_l · x_l`` with independent ``x_l``.

    ``x_l = +1`` w.p. ``up[l]``, ``-1`` w.p. ``down[l]`` and ``0`` otherwise: the click difference
    of two rankers when each position's ranker is drawn from its posterior (Hofmann et al. 2011;
    Schuth et al. 2015, Algorithm 2, which samples it). A DP over ``o ∈ [-L, L]`` updated at the
    clicked positions only: ``O(L²)`` instead of enumerating assignments.

    Args:
      up, down: ``[L]`` f32 in ``[0, 1]`` with ``up + down <= 1``.
      clicked: ``[L]`` bool.

    Returns:
      two ``[]`` f32 probabilities.
    """
    num_positions = up.shape[-1]
    # Index m holds P(o = m - L); L shifts from the centre never reach the ends, so roll cannot wrap.
    start = jnp.zeros(2 * num_positions + 1, jnp.float32).at[num_positions].set(1.0)

    def position(dist, x):
        p_up, p_down, click = x
        moved = p_up * jnp.roll(dist, 1) + p_down * jnp.roll(dist, -1) + (1.0 - p_up - p_down) * dist
        return jnp.where(click, moved, dist), None

    dist, _ = jax.lax.scan(position, start, (up, down, clicked))
    diff = jnp.arange(-num_positions, num_positions + 1)
    return jnp.sum(jnp.where(diff > 0, dist, 0.0)), jnp.sum(jnp.where(diff < 0, dist, 0.0))


def click_difference_outcome(up: Array, down: Array, clicked: Array) -> Array:
    """``[]`` f32 ``P(o > 0) − P(o < 0)`` in ``[-1, 1]`` (``click_difference_law``'s two terms)."""
    win, loss = click_difference_law(up, down, clicked)
    return win - loss


def sampled_outcome(key, win: Array, loss: Array, num_samples: int) -> Array:
    """The Monte-Carlo estimate ``(N⁺ − N⁻) / N`` of ``P(o > 0) − P(o < 0)`` from ``N`` sampled assignments.

    Schuth et al. (SIGIR 2015, Algorithm 2) and the PDGD authors' code
    (github.com/HarrieO/OnlineLearningToRank ``multileaving/ProbabilisticMultileave.py``,
    ``preferences_of_list``, 10,000 samples) estimate the outcome by sampling; each sample's sign is
    +1, -1 or 0 with probabilities ``win``, ``loss`` and the rest, so the estimate has exactly the law
    of ``N⁺ ~ Bin(N, win)``, ``N⁻ | N⁺ ~ Bin(N − N⁺, loss / (1 − win))``, drawn here in two binomials.
    An exact tie (``win = loss > 0``) then comes out positive almost half the time.

    Args:
      key: PRNG key.
      win, loss: ``[...]`` f32 from ``click_difference_law``.
      num_samples: ``N >= 1``.

    Returns:
      ``[...]`` f32 in ``[-1, 1]``.
    """
    key_win, key_loss = jax.random.split(key)
    n = jnp.float32(num_samples)
    wins = jax.random.binomial(key_win, n, jnp.clip(win, 0.0, 1.0), shape=jnp.shape(win))
    rest = jnp.where(win < 1.0, jnp.clip(loss / jnp.maximum(1.0 - win, 1e-30), 0.0, 1.0), 0.0)
    losses = jax.random.binomial(key_loss, n - wins, rest, shape=jnp.shape(win))
    return (wins - losses) / n


def team_credit(team: Array, clicks: Array, shown: Array, num_rankers: int) -> Array:
    """``[n]`` f32 clicks on each ranker's team (``team [L]`` in ``0..n-1``, -1 for no team).

    Team-draft credit (Radlinski et al. 2008; Schuth et al. 2014): sums to the number of shown clicks.
    """
    clicked = jnp.asarray(clicks, bool) & jnp.asarray(shown, bool)
    on_team = jnp.asarray(team)[:, None] == jnp.arange(num_rankers)[None, :]  # [L, n]
    return jnp.sum(on_team & clicked[:, None], axis=0).astype(jnp.float32)
