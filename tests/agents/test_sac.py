"""SAC's pure pieces against hand computations (float64), the replay ring buffer, and what env_step stores."""

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.agents import replay
from hurtle.agents.sac import losses


class FakeDistribution:
    """A deterministic stand-in: the raw action is the network output, log pi = -0.5 |u|^2, action = tanh(u)."""

    def sample(self, params, key):
        return params

    def log_prob(self, params, raw):
        return -0.5 * jnp.sum(raw * raw, axis=-1)

    def postprocess(self, raw):
        return jnp.tanh(raw)


RNG = np.random.default_rng(0)
OBS, NEXT = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
ACTION, REWARD = RNG.normal(size=(3, 1)), np.array([0.5, -1.0, 2.0])
TERMINAL = np.array([0.0, 1.0, 0.0])  # the second terminated; the third may be a truncation: it bootstraps
Q = (RNG.normal(size=(2, 2)), RNG.normal(size=(2, 1)))  # per critic i: obs weights Q[0][:, i], action Q[1][i]
TARGET_Q = (RNG.normal(size=(2, 2)), RNG.normal(size=(2, 1)))
POLICY = RNG.normal(size=(2, 1))


def q_apply(params, obs, action):
    w, v = params
    return jnp.stack([obs @ w[:, i] + action @ v[i] for i in range(2)])


def policy_apply(params, obs):
    return obs @ params


NETS = dict(q_apply=q_apply, policy_apply=policy_apply, distribution=FakeDistribution())


def _q_np(params, obs, action):
    w, v = params
    return np.stack([obs @ w[:, i] + action @ v[i] for i in range(2)])


def test_critic_loss_by_hand():
    alpha, discount, scale = 0.3, 0.9, 2.0
    batch = losses.Transition(*(jnp.asarray(x) for x in (OBS, ACTION, REWARD, NEXT, TERMINAL)))
    loss, metrics = losses.critic_loss(
        Q, TARGET_Q, POLICY, alpha, batch, jax.random.key(0), discount=discount, reward_scaling=scale, **NETS
    )
    u = NEXT @ POLICY
    next_q = _q_np(TARGET_Q, NEXT, np.tanh(u)).min(axis=0)
    next_v = next_q - alpha * (-0.5 * (u**2).sum(-1))
    target = scale * REWARD + discount * (1 - TERMINAL) * next_v
    expected = 0.5 * np.mean((_q_np(Q, OBS, ACTION) - target) ** 2)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-12)
    np.testing.assert_allclose(float(metrics["target_q"]), target.mean(), rtol=1e-12)
    # the target is held: the gradient w.r.t. the critics is (q - y) * dq/dparams only
    grad = jax.grad(lambda p: losses.critic_loss(p, TARGET_Q, POLICY, alpha, batch, jax.random.key(0),
                                                 discount=discount, reward_scaling=scale, **NETS)[0])(Q)  # fmt: skip
    err = _q_np(Q, OBS, ACTION) - target  # [2, B]
    expected_w = np.stack([OBS.T @ err[i] for i in range(2)], axis=1) / err.size
    np.testing.assert_allclose(np.asarray(grad[0]), expected_w, rtol=1e-10)


def test_actor_loss_by_hand():
    alpha = 0.7
    loss, metrics = losses.actor_loss(POLICY, Q, alpha, jnp.asarray(OBS), jax.random.key(0), **NETS)
    u = OBS @ POLICY
    log_prob = -0.5 * (u**2).sum(-1)
    q = _q_np(Q, OBS, np.tanh(u)).min(axis=0)
    np.testing.assert_allclose(float(loss), np.mean(alpha * log_prob - q), rtol=1e-12)
    np.testing.assert_allclose(float(metrics["entropy"]), -log_prob.mean(), rtol=1e-12)
    # the gradient flows through the action (reparameterised) into the policy: compare with finite differences
    grad = jax.grad(lambda p: losses.actor_loss(p, Q, alpha, jnp.asarray(OBS), jax.random.key(0), **NETS)[0])(POLICY)

    def f(p):
        u = OBS @ p
        return np.mean(alpha * -0.5 * (u**2).sum(-1) - _q_np(Q, OBS, np.tanh(u)).min(axis=0))

    h = 1e-6
    fd = np.array([[(f(POLICY + h * e) - f(POLICY - h * e)) / (2 * h)] for e in np.eye(2)[:, :, None]]).reshape(2, 1)
    np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-6)


def test_temperature_loss_by_hand():
    log_prob = jnp.array([-1.0, 0.5, -2.0])
    log_alpha, target = jnp.log(0.2), -1.5
    loss, metrics = losses.alpha_loss(log_alpha, log_prob, target)
    expected = np.mean(0.2 * (-np.asarray(log_prob) - target))
    np.testing.assert_allclose(float(loss), expected, rtol=1e-12)
    # d/dlog_alpha of alpha * c is alpha * c: the loss itself; its sign says which way alpha moves
    grad = jax.grad(lambda a: losses.alpha_loss(a, log_prob, target)[0])(log_alpha)
    np.testing.assert_allclose(float(grad), expected, rtol=1e-12)
    np.testing.assert_allclose(float(metrics["alpha"]), 0.2, rtol=1e-14)


def test_polyak_update():
    target, online = {"a": jnp.array([1.0, 2.0])}, {"a": jnp.array([3.0, -2.0])}
    out = losses.polyak(target, online, 0.25)
    np.testing.assert_allclose(np.asarray(out["a"]), [0.25 * 3 + 0.75 * 1, 0.25 * -2 + 0.75 * 2], rtol=1e-15)


def test_replay_ring_wraps_and_samples_only_what_is_stored():
    example = {"x": jnp.zeros((2,)), "y": jnp.zeros((2, 3))}
    buf = replay.init(example, slots=3)
    assert replay.nbytes(example, 3) == 3 * (2 + 6) * 8
    insert = jax.jit(replay.insert)
    for t in range(2):
        buf = insert(buf, {"x": 10.0 * t + jnp.arange(2.0), "y": jnp.full((2, 3), float(t))})
    assert int(buf.size) == 2 and int(buf.position) == 2
    seen = set(np.asarray(replay.sample(buf, jax.random.key(1), 2000)["x"]).tolist())
    assert seen == {0.0, 1.0, 10.0, 11.0}  # every stored transition reachable, nothing past the fill level
    for t in range(2, 5):
        buf = insert(buf, {"x": 10.0 * t + jnp.arange(2.0), "y": jnp.full((2, 3), float(t))})
    assert int(buf.size) == 3 and int(buf.position) == 5 % 3
    np.testing.assert_array_equal(np.asarray(buf.data["x"])[:, 0], [30.0, 40.0, 20.0])  # t = 0, 1 overwritten
    sample = replay.sample(buf, jax.random.key(2), 3000)
    assert set(np.asarray(sample["x"]).tolist()) == {20.0, 21.0, 30.0, 31.0, 40.0, 41.0}
    # a transition's fields stay together
    np.testing.assert_array_equal(np.asarray(sample["y"])[:, 0], np.floor(np.asarray(sample["x"]) / 10))


def test_replay_too_large_is_refused_naming_the_field():
    import pytest

    with pytest.raises(
        ValueError, match=r"Config.max_replay_size: the replay buffer would take 1,000,000,000,000,000,000 bytes"
    ):
        replay.check_fits(10**18, jax.devices(), "max_replay_size")


def test_env_step_stores_the_truncated_step_and_bootstraps_it():
    """At the time limit the auto-reset state holds the new episode's observation; the buffer must hold the
    observation the step reached (info["final_obs"]) with terminal 0, so the critic bootstraps from it."""
    import dataclasses

    from hurtle.agents.sac import train
    from hurtle.agents.sac.presets import preset

    config = dataclasses.replace(preset("pendulum"), num_envs=2, episode_length=2, min_replay_size=256,
                                 max_replay_size=512, batch_size=256)  # fmt: skip
    env = train.make_training_env(config)
    networks = train.make_networks(config, env)
    state = train.init_state(config, env, networks)
    for k in jax.random.split(jax.random.key(3), 2):
        state, _ = train.env_step(state, k, env=env, networks=networks, config=config)
    data = jax.tree.map(np.asarray, state.buffer.data)
    assert int(state.step) == 4 and np.all(data.terminal[:2] == 0)
    np.testing.assert_array_equal(data.obs[1], data.next_obs[0])  # the episode's own continuation
    # step 2 hit the time limit: the environment was reset, the stored next_obs is the state it reached
    assert not np.allclose(data.next_obs[1], np.asarray(state.env_state.obs))
    np.testing.assert_array_equal(data.next_obs[1], np.asarray(state.env_state.info["final_obs"]))
