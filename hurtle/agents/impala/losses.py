"""IMPALA's pure pieces: V-trace targets (Espeholt et al. 2018, eq. 1 and section 4.2) and the actor-critic
loss on them. Time-major `[T, ...]`, all jittable; nothing here knows about threads or devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def vtrace(
    values: jax.Array,
    next_values: jax.Array,
    rewards: jax.Array,
    discounts: jax.Array,
    log_rhos: jax.Array,
    ended: jax.Array,
    lam: float = 1.0,
    clip_rho: float = 1.0,
    clip_pg_rho: float = 1.0,
) -> tuple[jax.Array, jax.Array]:
    """V-trace value targets `v_s` and policy-gradient advantages over a `[T, ...]` trajectory.

    values[t] = V(x_t); next_values[t] = V of the state step t reached (its final observation where the
    episode ended there); rewards[t]; discounts[t] = gamma, 0 where step t terminated; log_rhos[t] =
    log pi(a_t|x_t) - log mu(a_t|x_t) (target over behaviour policy); ended[t]: the episode ended at step t
    (terminated or truncated), so that no trace crosses into the next episode.

        rho_t = min(clip_rho, e^log_rho), c_t = lam * min(1, e^log_rho)
        delta_t = rho_t (r_t + discounts_t next_values_t - values_t)
        v_s - V(x_s) = delta_s + discounts_s c_s (1 - ended_s) (v_{s+1} - V(x_{s+1}))
        advantage_s = min(clip_pg_rho, e^log_rho) (r_s + discounts_s v'_{s+1} - V(x_s)),

    v'_{s+1} being v_{s+1} within the episode and next_values_s where it ended (or at the trajectory's end).
    Returns (v_s, advantages), both without gradient.
    """
    dtype = values.dtype
    rhos = jnp.exp(log_rhos)
    clipped = jnp.minimum(jnp.asarray(clip_rho, dtype), rhos)
    cs = jnp.asarray(lam, dtype) * jnp.minimum(jnp.ones((), dtype), rhos)
    cont = 1.0 - ended.astype(dtype)
    deltas = clipped * (rewards + discounts * next_values - values)

    def backward(acc, x):
        delta, discount, c, go_on = x
        acc = delta + discount * c * go_on * acc
        return acc, acc

    _, diffs = lax.scan(backward, jnp.zeros_like(values[0]), (deltas, discounts, cs, cont), reverse=True)
    vs = values + diffs
    vs_next = jnp.concatenate([vs[1:], next_values[-1:]])
    vs_next = jnp.where(ended.astype(bool), next_values, vs_next)
    pg_rhos = jnp.minimum(jnp.asarray(clip_pg_rho, dtype), rhos)
    advantages = pg_rhos * (rewards + discounts * vs_next - values)
    return lax.stop_gradient(vs), lax.stop_gradient(advantages)


def actor_critic_loss(
    log_prob: jax.Array,
    values: jax.Array,
    value_targets: jax.Array,
    advantages: jax.Array,
    entropy: jax.Array,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """IMPALA's loss from per-sample quantities: `-mean(advantage log pi) + value_cost * 0.5 *
    mean((v_s - V)^2) - entropy_cost * mean(entropy)`; advantages and targets carry no gradient."""
    policy_loss = -jnp.mean(lax.stop_gradient(advantages) * log_prob)
    value_loss = 0.5 * jnp.mean(jnp.square(lax.stop_gradient(value_targets) - values))
    mean_entropy = jnp.mean(entropy)
    total = policy_loss + value_cost * value_loss - entropy_cost * mean_entropy
    return total, {
        "loss/total": total,
        "loss/policy": policy_loss,
        "loss/value": value_loss,
        "loss/entropy": mean_entropy,
    }


__all__ = ["actor_critic_loss", "vtrace"]
