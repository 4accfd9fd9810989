"""Independent Self-Sparring (Sui, Zhuang, Burdick, Yue, UAI 2017, "Multi-dueling Bandits with
Dependent Arms", Algorithm 1) with ``m = 2`` arms per step.

One Beta posterior per arm, ``Beta(S_i + 1, F_i + 1)`` (``S = F = 0`` at the start: a uniform prior).
Each step, for ``j = 1, 2``: draw ``θ_i ~ Beta(S_i + 1, F_i + 1)`` for every arm independently and
select ``i_j = argmax_i θ_i`` (ties uniform, a null event for continuous draws). The two selections
are independent Thompson draws, so they may coincide. The pair duels, giving the feedback
``r_12 = 1[i_1 beats i_2]`` and ``r_21 = 1 - r_12``, and the update loop over ``j, k`` adds
``η r_jk`` to ``S_{i_j}`` and ``η (1 - r_jk)`` to ``F_{i_j}``: the winner gains ``η`` in ``S``, the
loser ``η`` in ``F``.

A self-duel (``i_1 = i_2 = a``) is played like any other (a fair coin against a preference matrix)
and the same loop applies both entries to ``a``, so ``S_a`` and ``F_a`` each gain ``η`` whatever the
coin says: the posterior mean moves towards 1/2 and its variance shrinks. The paper's update reads
this way, and so does the MergeDTS authors' ``self_sparring.py`` (``w[winner] += 1; l[loser] += 1``
with ``winner == loser``).

``η`` is the paper's learning rate (Algorithm 1's input; ``η = 1`` is plain Beta-Bernoulli
Thompson sampling). The MergeDTS authors' code also parses ``δ = 3.0`` and ``α = 0.51`` but uses
neither; this module has no such settings.

Report rule (ours; the paper reports no arm): the highest posterior mean
``(S_i + 1) / (S_i + F_i + 2)``, ties uniform. The MergeDTS code reports the first arm whose
posterior mean exceeds 1/2, which depends on the arms' order.

Beta draws: ``jaxrank.utils.beta.beta_sample`` (ratios of gammas: sums of exponentials for
integer shapes up to 4, Marsaglia-Tsang otherwise; exact in law), fed by the step's one uniform draw.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxrank.bandits.base import duel, split_step_key
from jaxrank.types import Bandit, StepInfo
from jaxrank.utils import prng, random_argmax
from jaxrank.utils.beta import beta_sample, uniforms
from jaxrank.utils.checks import check_int, check_number


HPARAMS = {
    # Learning rate η of Independent Self-Sparring (Sui et al., UAI 2017, Algorithm 1's input); η = 1
    # adds whole wins and losses, as the MergeDTS authors' self_sparring.py does.
    "eta": 1.0,
}
OPTIONS = {}


class SelfSparringState(NamedTuple):
    successes: jax.Array  # [K] f32, S_i: η per duel arm i won
    failures: jax.Array  # [K] f32, F_i: η per duel arm i lost
    t: jax.Array  # [] i32, duels so far
    eta: jax.Array  # [] f32, learning rate η


def init(key, num_arms: int, *, eta=HPARAMS["eta"]) -> SelfSparringState:
    """Uniform priors ``Beta(1, 1)`` for ``K = num_arms`` arms; ``eta > 0``."""
    del key
    check_number("eta", eta, low=0)
    check_int("num_arms", num_arms, minimum=2)
    return SelfSparringState(
        successes=jnp.zeros(num_arms, jnp.float32),
        failures=jnp.zeros(num_arms, jnp.float32),
        t=jnp.zeros((), jnp.int32),
        eta=jnp.asarray(eta, jnp.float32),
    )


def posterior_mean(state: SelfSparringState) -> jax.Array:
    """``[K]`` ``(S_i + 1) / (S_i + F_i + 2)``, the mean of each arm's Beta posterior."""
    return (state.successes + 1.0) / (state.successes + state.failures + 2.0)


def step(key, state: SelfSparringState, env):
    """One step of Independent Self-Sparring (Sui et al., UAI 2017, Algorithm 1, ``m = 2``).

    Two independent Thompson draws ``θ⁽ʲ⁾_i ~ Beta(S_i + 1, F_i + 1)`` (``j = 1, 2``, all ``i``) pick
    ``first = argmax θ⁽¹⁾`` and ``second = argmax θ⁽²⁾``; they duel; the winner's ``S`` and the
    loser's ``F`` gain ``η`` (both for the same arm after a self-duel).

    Args:
      key: this step's PRNG key.
      state: the ``SelfSparringState`` of the ``K`` arms.
      env: the ``DuelEnv`` that plays the duel.

    Returns:
      ``(state, StepInfo)``: the new state (same tree, shapes and dtypes) and the duel played,
      ``StepInfo(first, second, first_won)``, all ``[]`` (i32, i32, bool).
    """
    num_arms = state.successes.shape[0]
    # 8 uniforms per Beta draw (beta_sample), 2K draws, then two tie-breaks and the duel.
    key_draws, key_redraw, key_env = split_step_key(key, 3)
    u = uniforms(key_draws, 16 * num_arms + 3)
    u_first, u_second, u_duel = u[-3], u[-2], u[-1]
    a = jnp.tile(state.successes + 1.0, 2)
    b = jnp.tile(state.failures + 1.0, 2)
    theta = beta_sample(key_redraw, u[: 16 * num_arms], a, b).reshape(2, num_arms)
    first = random_argmax(u_first, theta[0])
    second = random_argmax(u_second, theta[1])

    first_won = duel(key_env, env, u_duel, first, second)
    winner = jnp.where(first_won, first, second)
    loser = jnp.where(first_won, second, first)
    new_state = state._replace(
        successes=state.successes.at[winner].add(state.eta),
        failures=state.failures.at[loser].add(state.eta),
        t=state.t + 1,
    )
    return new_state, StepInfo(first, second, first_won)


def best_arm(key, state: SelfSparringState) -> jax.Array:
    """The arm of highest posterior mean ``(S_i + 1) / (S_i + F_i + 2)``, ties uniform."""
    return random_argmax(prng.uniform(key), posterior_mean(state))


_BANDIT = Bandit(init, step, best_arm)


def make() -> Bandit:
    """The algorithm as a ``Bandit`` (it has no static options)."""
    return _BANDIT
