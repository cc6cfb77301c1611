"""PPO's pure pieces: generalised advantage estimation and the clipped-surrogate loss. All jittable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from hurtle.nn.distributions import Distribution
from hurtle.physics.dataclass import pytree_dataclass


def gae(
    rewards: jax.Array,
    values: jax.Array,
    bootstrap_values: jax.Array,
    terminations: jax.Array,
    truncations: jax.Array,
    discount: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimates and value targets over a time-major `[T, B]` rollout.

    values[t] = V(s_t); bootstrap_values[t] = V of the observation step t reached (`info["final_obs"]`
    under auto-reset: the real next state even where the episode ended). A termination bootstraps with
    zero, a truncation with `bootstrap_values[t]`; neither lets advantages flow back across the boundary.
    Returns (advantages, value_targets = advantages + values), both `[T, B]`.
    """
    dtype = values.dtype
    not_term = 1.0 - terminations.astype(dtype)
    cont = not_term * (1.0 - truncations.astype(dtype))  # the episode goes on into step t + 1
    deltas = rewards.astype(dtype) + discount * not_term * bootstrap_values - values
    decay = jnp.asarray(discount * lam, dtype) * cont

    def backward(next_adv, x):
        delta, d = x
        adv = delta + d * next_adv
        return adv, adv

    _, advantages = lax.scan(backward, jnp.zeros_like(values[0]), (deltas, decay), reverse=True)
    return advantages, advantages + values


def clipped_surrogate(
    log_prob: jax.Array, old_log_prob: jax.Array, advantages: jax.Array, clip_epsilon: float
) -> tuple[jax.Array, jax.Array]:
    """The PPO policy loss `-mean(min(r A, clip(r, 1 - eps, 1 + eps) A))` and the ratios `r`."""
    ratio = jnp.exp(log_prob - old_log_prob)
    clipped = jnp.clip(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    return -jnp.mean(jnp.minimum(ratio * advantages, clipped * advantages)), ratio


def loss_terms(
    log_prob: jax.Array,
    old_log_prob: jax.Array,
    advantages: jax.Array,
    values: jax.Array,
    value_targets: jax.Array,
    entropy: jax.Array,
    clip_epsilon: float,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO's total loss from per-sample quantities (any common shape), and its metrics.

    total = policy_loss + value_cost * 0.5 * mean((V - target)^2) - entropy_cost * mean(entropy).
    """
    policy_loss, ratio = clipped_surrogate(log_prob, old_log_prob, advantages, clip_epsilon)
    value_loss = 0.5 * jnp.mean(jnp.square(values - value_targets))
    mean_entropy = jnp.mean(entropy)
    total = policy_loss + value_cost * value_loss - entropy_cost * mean_entropy
    log_ratio = log_prob - old_log_prob
    metrics = {
        "loss/total": total,
        "loss/policy": policy_loss,
        "loss/value": value_loss,
        "loss/entropy": mean_entropy,
        # the low-variance estimator (r - 1) - log r of KL(old || new)
        "loss/approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
        "loss/clip_fraction": jnp.mean((jnp.abs(ratio - 1.0) > clip_epsilon).astype(ratio.dtype)),
    }
    return total, metrics


@pytree_dataclass
class Batch:
    """Transitions for one update, any leading shape: obs `[..., d]`, the rest `[...]` (raw_action `[..., n]`).

    raw_action: what the distribution sampled (pre-tanh for a box); log_prob: under the behaviour policy.
    """

    obs: jax.Array
    raw_action: jax.Array
    log_prob: jax.Array
    advantages: jax.Array
    value_targets: jax.Array
    value_obs: jax.Array | None = None
    """The value network's input where it differs from `obs` (an asymmetric critic's privileged observation)."""


def standardize(x: jax.Array, eps: float = 1e-8) -> jax.Array:
    """`(x - mean) / (std + eps)` over all elements."""
    return (x - jnp.mean(x)) / (jnp.std(x) + eps)


def ppo_loss(
    params: dict[str, Any],
    batch: Batch,
    key: jax.Array,
    *,
    policy_apply: Callable[[Any, jax.Array], jax.Array],
    value_apply: Callable[[Any, jax.Array], jax.Array],
    distribution: Distribution,
    clip_epsilon: float,
    value_cost: float,
    entropy_cost: float,
    normalize_advantages: bool = True,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO's loss on a minibatch: `params` is `{"policy": ..., "value": ...}`; returns (loss, metrics).

    `batch.obs` (and `batch.value_obs`) are already normalised (the normaliser is not learned by gradient). `key` feeds the
    entropy estimate of distributions without a closed form.
    """
    dist_params = policy_apply(params["policy"], batch.obs)
    log_prob = distribution.log_prob(dist_params, batch.raw_action)
    entropy = distribution.entropy(dist_params, key)
    values = value_apply(params["value"], batch.obs if batch.value_obs is None else batch.value_obs)
    advantages = standardize(batch.advantages) if normalize_advantages else batch.advantages
    return loss_terms(
        log_prob,
        batch.log_prob,
        lax.stop_gradient(advantages),
        values,
        lax.stop_gradient(batch.value_targets),
        entropy,
        clip_epsilon,
        value_cost,
        entropy_cost,
    )
