"""MuJoCo C host environments: a transition equals the JAX task's from the same state (float64), resets and
time limits follow the JAX training stack's semantics, and tasks reading fields MuJoCo C lacks are refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.envs import registry
from hurtle.envs.physics_env import PhysicsEnv
from hurtle.hostenvs import MujocoEnv

# contacts and cfrc_ext (ant), a constraint force and sites (inverted_double_pendulum), before/after (hopper)
TASKS = ("hopper", "ant", "inverted_double_pendulum")
STEPS = 6


@pytest.mark.parametrize("name", TASKS)
def test_transitions_equal_the_jax_task(name):
    n = 3
    env = MujocoEnv(name, n, nthread=1)
    task = env.task
    obs0 = env.reset(seed=1)
    qpos, qvel = env.batch.bind("qpos").copy(), env.batch.bind("qvel").copy()
    states = jax.vmap(task.reset_to)(jnp.asarray(qpos), jnp.asarray(qvel))
    np.testing.assert_allclose(obs0, states.obs, rtol=1e-9, atol=1e-9)
    step = jax.jit(jax.vmap(task.step))
    rng = np.random.default_rng(0)
    low, high = task.action_space.low, task.action_space.high
    alive = np.ones(n, bool)
    for t in range(STEPS):
        action = rng.uniform(low, high, (n, *task.action_space.shape))
        host = env.step(action)
        states = step(states, jnp.asarray(action))
        # compare environments whose episode has not ended (an ended one restarts on the host)
        rows = alive
        np.testing.assert_allclose(
            host.final_obs[rows], np.asarray(states.obs)[rows], rtol=1e-7, atol=1e-7, err_msg=f"{name} step {t}"
        )
        np.testing.assert_allclose(host.reward[rows], np.asarray(states.reward)[rows], rtol=1e-7, atol=1e-7)
        np.testing.assert_array_equal(host.terminated[rows], np.asarray(states.done)[rows])
        for key, value in host.metrics.items():
            if key.startswith("reward/"):
                np.testing.assert_allclose(value[rows], np.asarray(states.metrics[key])[rows], rtol=1e-7, atol=1e-7)
        alive &= ~host.ended
    assert alive.any(), f"{name}: every episode ended within {STEPS} steps; the comparison saw too little"


def test_time_limit_autoreset_and_episode_metrics():
    env = MujocoEnv("inverted_pendulum", 4, episode_length=5, nthread=1)
    obs = env.reset(seed=0)
    again = MujocoEnv("inverted_pendulum", 4, episode_length=5, nthread=2)
    np.testing.assert_array_equal(again.reset(seed=0), obs)  # the reset distribution follows the seed
    zero = np.zeros((4, 1))
    total = np.zeros(4)
    for t in range(5):
        s = env.step(zero)
        total += s.reward
        np.testing.assert_array_equal(s.metrics["episode/length"], np.full(4, t + 1))
    # the fifth step reaches the limit: truncated (not terminated), the new episode's first observation in obs
    assert s.truncated.all() and not s.terminated.any()
    np.testing.assert_allclose(s.metrics["episode/return"], total)
    assert not np.allclose(s.obs, s.final_obs)
    np.testing.assert_allclose(np.abs(s.obs), np.abs(s.obs).clip(max=0.011))  # reset noise is within 0.01
    s = env.step(zero)
    np.testing.assert_array_equal(s.metrics["episode/length"], np.ones(4))


def test_nonfinite_state_ends_that_environment():
    env = MujocoEnv("inverted_pendulum", 3, nthread=1)
    env.reset(seed=0)
    env.batch.bind("qvel")[1] = np.nan
    s = env.step(np.zeros((3, 1)))
    np.testing.assert_array_equal(s.metrics["nan_resets"], [0, 1, 0])
    assert s.terminated[1] and s.reward[1] == 0 and np.all(s.final_obs[1] == 0)
    assert np.isfinite(s.obs).all()
    s = env.step(np.zeros((3, 1)))
    assert np.isfinite(s.obs).all() and s.metrics["nan_resets"].sum() == 0


def test_refuses_what_it_cannot_step():
    with pytest.raises(TypeError, match="cartpole: MuJoCo C steps physics tasks"):
        MujocoEnv("cartpole", 2)

    hopper = registry.make("hopper").unwrapped

    class ReadsContacts(type(hopper)):
        def observation(self, data):
            return jnp.concatenate([data.qpos, data.contact.dist])

    with pytest.raises(NotImplementedError, match=r"ReadsContacts: the task reads Data.contact"):
        MujocoEnv(ReadsContacts(xml=hopper.xml), 2)
    env = MujocoEnv("hopper", 2, nthread=1)
    env.reset(0)
    with pytest.raises(ValueError, match=r"hopper: action has shape \(3,\), expected \(2, 3\)"):
        env.step(np.zeros(3))
    assert isinstance(env.task, PhysicsEnv)


def test_a_target_task_is_replayed_whole():
    """ur5e_reach on MuJoCo C: its actions change the servos' targets (`control`), the reset places a target
    (`begin`) and every step here reaches and moves it (`advance`, a 10 m hit radius), with the hit bonus and the
    task's counters: each step equals the JAX task's from the same reset key."""
    from hurtle.envs.manipulation.ur5e import UR5eReach

    class EveryStepHits(UR5eReach):
        hit_radius = 10.0

    n, seed = 2, 3
    task = EveryStepHits(xml=registry.make("ur5e_reach").unwrapped.xml)
    env = MujocoEnv(task, n, nthread=1)
    obs0 = env.reset(seed=seed)
    # the host draws each environment's reset key as below (a split per restart)
    keys = jax.vmap(jax.random.split, out_axes=1)(jax.random.split(jax.random.PRNGKey(seed), n))[1]
    states = jax.vmap(task.reset)(keys)
    np.testing.assert_allclose(obs0, states.obs, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(env.batch.bind("mocap_pos"), states.physics.mocap_pos, rtol=0, atol=0)
    step = jax.jit(jax.vmap(task.step))
    rng = np.random.default_rng(0)
    for t in range(4):
        action = rng.uniform(-1, 1, (n, 6))
        host = env.step(action)
        states = step(states, jnp.asarray(action))
        np.testing.assert_allclose(host.final_obs, states.obs, rtol=1e-7, atol=1e-7, err_msg=f"step {t}")
        np.testing.assert_allclose(host.reward, states.reward, rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(env.batch.bind("ctrl"), states.physics.ctrl, rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(env.batch.bind("mocap_pos"), states.physics.mocap_pos)
        np.testing.assert_array_equal(host.metrics["targets/reached"], np.full(n, t + 1.0))
        np.testing.assert_array_equal(host.metrics["reward/hit"], np.full(n, task.hit_bonus))
    assert not host.ended.any()
