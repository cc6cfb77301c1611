"""GAE against a plain Python loop; the PPO loss against hand-computed numbers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.agents.ppo import losses
from hurtle.nn.distributions import Categorical


def _gae_loop(r, v, vb, term, trunc, gamma, lam):
    """The textbook recursion, one environment and one step at a time, in float64."""
    T, B = r.shape
    adv = np.zeros((T, B))
    for b in range(B):
        next_adv = 0.0
        for t in reversed(range(T)):
            boot = 0.0 if term[t, b] else vb[t, b]
            delta = r[t, b] + gamma * boot - v[t, b]
            ended = term[t, b] or trunc[t, b]
            next_adv = delta + (0.0 if ended else gamma * lam * next_adv)
            adv[t, b] = next_adv
    return adv


def test_gae_matches_python_loop_with_terminations_and_truncations():
    rng = np.random.default_rng(0)
    T, B = 17, 5
    r, v, vb = (rng.normal(size=(T, B)) for _ in range(3))
    term = rng.random((T, B)) < 0.15
    trunc = (rng.random((T, B)) < 0.15) & ~term
    assert term[:-1].any() and trunc[:-1].any()  # both kinds of end happen mid-rollout
    adv, targets = jax.jit(losses.gae, static_argnums=(5, 6))(
        jnp.asarray(r), jnp.asarray(v), jnp.asarray(vb), jnp.asarray(term), jnp.asarray(trunc), 0.97, 0.9
    )
    expected = _gae_loop(r, v, vb, term, trunc, 0.97, 0.9)
    np.testing.assert_allclose(np.asarray(adv), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(targets), expected + v, rtol=1e-12, atol=1e-12)


def test_gae_boundaries_by_hand():
    # one env, 3 steps: truncation at t=0 (bootstrap 10), termination at t=1, continuing at t=2
    r = jnp.asarray([[1.0], [2.0], [3.0]])
    v = jnp.asarray([[0.5], [0.25], [1.0]])
    vb = jnp.asarray([[10.0], [99.0], [4.0]])
    term = jnp.asarray([[False], [True], [False]])
    trunc = jnp.asarray([[True], [False], [False]])
    adv, _ = losses.gae(r, v, vb, term, trunc, 0.5, 0.5)
    # t=2: 3 + 0.5*4 - 1 = 4; t=1: 2 - 0.25 (no bootstrap, no carry) = 1.75; t=0: 1 + 0.5*10 - 0.5 = 5.5
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [5.5, 1.75, 4.0])


def test_loss_terms_by_hand():
    old = np.zeros(4)
    # ratios: e^0.5 (clipped above for A>0), e^-0.5 (clipped below for A<0), 1.1 (inside), e^-0.5 with A>0
    log_prob = np.array([0.5, -0.5, np.log(1.1), -0.5])
    adv = np.array([2.0, -1.0, 3.0, 1.0])
    values, targets = np.array([1.0, 2.0, 0.0, -1.0]), np.array([0.0, 2.0, 2.0, -1.0])
    entropy = np.array([1.0, 2.0, 3.0, 4.0])
    eps = 0.2
    # per-sample min(r A, clip(r) A):
    #   1.2 * 2 = 2.4;   min(-e^-0.5, -0.8) = -0.8;   1.1 * 3 = 3.3;   min(e^-0.5, 0.8) = e^-0.5
    surrogate = [2.4, -0.8, 3.3, np.exp(-0.5)]
    policy_loss = -np.mean(surrogate)
    value_loss = 0.5 * np.mean([1.0, 0.0, 4.0, 0.0])  # = 0.625
    total = policy_loss + 0.5 * value_loss - 0.01 * 2.5
    loss, metrics = losses.loss_terms(
        *(jnp.asarray(x) for x in (log_prob, old, adv, values, targets, entropy)), eps, 0.5, 0.01
    )
    np.testing.assert_allclose(float(metrics["loss/policy"]), policy_loss, rtol=1e-12)
    np.testing.assert_allclose(float(metrics["loss/value"]), 0.625, rtol=1e-12)
    np.testing.assert_allclose(float(metrics["loss/entropy"]), 2.5, rtol=1e-12)
    np.testing.assert_allclose(float(loss), total, rtol=1e-12)
    # ratios outside [0.8, 1.2]: e^0.5, e^-0.5, e^-0.5 (1.1 is inside)
    np.testing.assert_allclose(float(metrics["loss/clip_fraction"]), 0.75)


def test_clipped_side_has_no_policy_gradient():
    # a ratio above 1 + eps with positive advantage is clipped: no gradient through the surrogate
    grad = jax.grad(lambda lp: losses.clipped_surrogate(lp, jnp.zeros(1), jnp.ones(1), 0.2)[0])(jnp.asarray([0.5]))
    assert float(grad[0]) == 0.0
    grad = jax.grad(lambda lp: losses.clipped_surrogate(lp, jnp.zeros(1), jnp.ones(1), 0.2)[0])(jnp.asarray([0.05]))
    np.testing.assert_allclose(float(grad[0]), -np.exp(0.05))


def test_ppo_loss_composes_networks_and_distribution():
    # a "policy" whose logits are the observation, a "value" that scales the observation's first entry
    obs = jnp.asarray([[0.0, 1.0], [2.0, 0.0], [0.5, 0.5]])
    batch = losses.Batch(
        obs=obs,
        raw_action=jnp.asarray([1, 0, 1], jnp.int32),
        log_prob=jnp.asarray([-0.2, -0.3, -0.7]),
        advantages=jnp.asarray([1.0, -2.0, 0.5]),
        value_targets=jnp.asarray([0.0, 1.0, 2.0]),
    )
    params = {"policy": jnp.asarray(1.0), "value": jnp.asarray(3.0)}
    kwargs = dict(
        policy_apply=lambda p, o: p * o,
        value_apply=lambda p, o: p * o[:, 0],
        distribution=Categorical(2),
        clip_epsilon=0.2,
        value_cost=0.5,
        entropy_cost=0.01,
    )
    loss, metrics = jax.jit(lambda p, b, k: losses.ppo_loss(p, b, k, normalize_advantages=False, **kwargs))(
        params, batch, jax.random.key(0)
    )
    log_p = np.log(np.exp(np.asarray(obs)) / np.exp(np.asarray(obs)).sum(1, keepdims=True))
    expected, _ = losses.loss_terms(
        jnp.asarray(log_p[np.arange(3), [1, 0, 1]]),
        batch.log_prob,
        batch.advantages,
        3.0 * obs[:, 0],
        batch.value_targets,
        jnp.asarray(-(np.exp(log_p) * log_p).sum(1)),
        0.2,
        0.5,
        0.01,
    )
    np.testing.assert_allclose(float(loss), float(expected), rtol=1e-12)
    grads = jax.grad(lambda p: losses.ppo_loss(p, batch, jax.random.key(0), **kwargs)[0])(params)
    assert all(np.isfinite(float(g)) and float(g) != 0.0 for g in jax.tree.leaves(grads))
    assert set(metrics) >= {"loss/total", "loss/policy", "loss/value", "loss/entropy", "loss/approx_kl"}


@pytest.mark.parametrize("x", [np.arange(5.0), np.array([3.0, -1.0, 2.0, 2.0])])
def test_standardize(x):
    out = np.asarray(losses.standardize(jnp.asarray(x)))
    np.testing.assert_allclose([out.mean(), out.std()], [0.0, 1.0], atol=1e-7)
