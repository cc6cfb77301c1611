"""V-trace against a hand-written reference: the sums of Espeholt et al.'s eq. 1 written out (no recursion),
with per-step discounts and episode ends, in float64, within 1e-10; and the actor-critic loss by hand."""

import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.agents.impala.losses import actor_critic_loss, vtrace


def reference(values, next_values, rewards, discounts, log_rhos, ended, lam, clip_rho, clip_pg_rho):
    """v_s = V(x_s) + sum_{t=s}^{end} (prod_{i=s}^{t-1} gamma_i c_i) delta_t, the sum stopping at the
    episode's (or the trajectory's) end; written as the paper's sum, one (s, t) pair at a time."""
    T = len(values)
    rho = np.exp(log_rhos)
    rho_bar, c = np.minimum(clip_rho, rho), lam * np.minimum(1.0, rho)
    delta = rho_bar * (rewards + discounts * next_values - values)
    vs = np.zeros(T)
    for s in range(T):
        total, weight = 0.0, 1.0
        for t in range(s, T):
            total += weight * delta[t]
            if ended[t]:
                break
            weight *= discounts[t] * c[t]
        vs[s] = values[s] + total
    adv = np.zeros(T)
    for s in range(T):
        boot = next_values[s] if (ended[s] or s == T - 1) else vs[s + 1]
        adv[s] = min(clip_pg_rho, rho[s]) * (rewards[s] + discounts[s] * boot - values[s])
    return vs, adv


@pytest.mark.parametrize("lam, clip_rho, clip_pg_rho", [(1.0, 1.0, 1.0), (0.9, 2.0, 0.5), (1.0, 1e9, 1e9)])
def test_vtrace_matches_the_written_out_sums(lam, clip_rho, clip_pg_rho):
    rng = np.random.default_rng(0)
    T, B = 9, 4
    values, next_values = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    rewards, log_rhos = rng.normal(size=(T, B)), rng.normal(scale=0.7, size=(T, B))
    terminated = rng.random((T, B)) < 0.15
    truncated = (rng.random((T, B)) < 0.15) & ~terminated
    ended = terminated | truncated
    discounts = 0.97 * (1.0 - terminated)
    vs, adv = vtrace(*map(jnp.asarray, (values, next_values, rewards, discounts, log_rhos, ended)),
                     lam=lam, clip_rho=clip_rho, clip_pg_rho=clip_pg_rho)  # fmt: skip
    for b in range(B):
        ref_vs, ref_adv = reference(values[:, b], next_values[:, b], rewards[:, b], discounts[:, b], log_rhos[:, b],
                                    ended[:, b], lam, clip_rho, clip_pg_rho)  # fmt: skip
        np.testing.assert_allclose(vs[:, b], ref_vs, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(adv[:, b], ref_adv, rtol=1e-10, atol=1e-10)


def test_on_policy_without_clipping_vtrace_is_the_lambda_return():
    """With pi = mu (rho = 1) and lam = 1, v_s is the discounted return bootstrapped at the end (n-step TD)."""
    rng = np.random.default_rng(1)
    T = 6
    values, rewards = rng.normal(size=(2, T))
    next_values = np.append(values[1:], rng.normal())  # V(x_{t+1}) along one episode, then the bootstrap
    discounts = np.full(T, 0.9)
    vs, _ = vtrace(*map(jnp.asarray, (values, next_values, rewards, discounts, np.zeros(T), np.zeros(T, bool))))
    ret = next_values[-1]
    expected = np.zeros(T)
    for t in reversed(range(T)):
        ret = rewards[t] + 0.9 * ret
        expected[t] = ret
    np.testing.assert_allclose(vs, expected, rtol=1e-12)


def test_actor_critic_loss_by_hand():
    log_prob = jnp.array([-1.0, -0.5])
    values, targets = jnp.array([1.0, 2.0]), jnp.array([1.5, 1.0])
    adv, entropy = jnp.array([2.0, -1.0]), jnp.array([0.3, 0.5])
    total, m = actor_critic_loss(log_prob, values, targets, adv, entropy, value_cost=0.5, entropy_cost=0.01)
    policy = -(2.0 * -1.0 + -1.0 * -0.5) / 2  # 0.75
    value = 0.5 * (0.25 + 1.0) / 2  # 0.3125
    assert float(m["loss/policy"]) == pytest.approx(policy)
    assert float(m["loss/value"]) == pytest.approx(value)
    assert float(total) == pytest.approx(policy + 0.5 * value - 0.01 * 0.4)
