"""SAC's pure pieces (Haarnoja et al. 2018, with the learned temperature of their second paper): the twin
critics' soft Bellman loss, the actor loss, the temperature loss and the Polyak update. All jittable.

The networks enter as functions: `q_apply(q_params, obs, action) -> [2, B]` (the twin critics' values),
`policy_apply(policy_params, obs) -> distribution parameters`, and a `Distribution` (`hurtle.nn`) whose
`sample` is reparameterised, `log_prob` is of the squashed action and `postprocess` gives the environment's
action. A transition's `terminal` is a termination (no bootstrap); a truncation (the time limit) stores the
observation the step really reached as `next_obs` and bootstraps from it like any other step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from hurtle.nn.distributions import Distribution
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class Transition:
    """One stored step: `obs` (raw), `action` (the environment's), `reward` (raw), `next_obs` (raw, the state
    the step reached even where the episode ended), `terminal` (1.0 where the episode terminated)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    terminal: jax.Array


def _act(policy_apply, distribution, policy_params, obs, key):
    """A reparameterised action of the policy at `obs` and its log-probability."""
    dist_params = policy_apply(policy_params, obs)
    raw = distribution.sample(dist_params, key)
    return distribution.postprocess(raw), distribution.log_prob(dist_params, raw)


def critic_loss(
    q_params: Any,
    target_q_params: Any,
    policy_params: Any,
    alpha: jax.Array,
    batch: Transition,
    key: jax.Array,
    *,
    q_apply: Callable[[Any, jax.Array, jax.Array], jax.Array],
    policy_apply: Callable[[Any, jax.Array], jax.Array],
    distribution: Distribution,
    discount: float,
    reward_scaling: float,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """`0.5 * mean over both critics and the batch of (Q_i(s, a) - y)^2`, with the soft target
    `y = scale * r + discount * (1 - terminal) * (min_i Q'_i(s', a') - alpha * log pi(a'|s'))`, a' ~ pi(s'),
    held constant (no gradient through y)."""
    next_action, next_log_prob = _act(policy_apply, distribution, policy_params, batch.next_obs, key)
    next_q = jnp.min(q_apply(target_q_params, batch.next_obs, next_action), axis=0)
    next_v = next_q - alpha * next_log_prob
    dtype = next_v.dtype
    target = batch.reward.astype(dtype) * jnp.asarray(reward_scaling, dtype)
    target = target + jnp.asarray(discount, dtype) * (1.0 - batch.terminal.astype(dtype)) * next_v
    target = jax.lax.stop_gradient(target)
    q = q_apply(q_params, batch.obs, batch.action)
    loss = 0.5 * jnp.mean(jnp.square(q - target[None]))
    return loss, {"critic_loss": loss, "q": jnp.mean(q), "target_q": jnp.mean(target)}


def actor_loss(
    policy_params: Any,
    q_params: Any,
    alpha: jax.Array,
    obs: jax.Array,
    key: jax.Array,
    *,
    q_apply: Callable[[Any, jax.Array, jax.Array], jax.Array],
    policy_apply: Callable[[Any, jax.Array], jax.Array],
    distribution: Distribution,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """`mean(alpha * log pi(a|s) - min_i Q_i(s, a))`, a ~ pi(s) reparameterised (the gradient flows into the
    policy through a; `q_params` and `alpha` are held)."""
    action, log_prob = _act(policy_apply, distribution, policy_params, obs, key)
    q = jnp.min(q_apply(q_params, obs, action), axis=0)
    loss = jnp.mean(alpha * log_prob - q)
    return loss, {"actor_loss": loss, "entropy": -jnp.mean(log_prob)}


def alpha_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> tuple[jax.Array, dict]:
    """`mean(alpha * (-log pi - target_entropy))` with the log-probabilities held: alpha grows while the
    policy's entropy is under the target and shrinks while it is over."""
    alpha = jnp.exp(log_alpha)
    loss = jnp.mean(alpha * jax.lax.stop_gradient(-log_prob - target_entropy))
    return loss, {"alpha_loss": loss, "alpha": alpha}


def polyak(target: Any, online: Any, tau: float) -> Any:
    """`tau * online + (1 - tau) * target`, leaf by leaf."""
    return jax.tree.map(lambda t, o: (tau * o + (1.0 - tau) * t).astype(t.dtype), target, online)


__all__ = ["Transition", "actor_loss", "alpha_loss", "critic_loss", "polyak"]
