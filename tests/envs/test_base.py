"""The registry, the spaces and the contract's static parts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import hurtle.envs as envs
from hurtle.envs import Box, Discrete, wrappers
from hurtle.envs.classic import Pendulum
from tests.envs.conftest import CLASSIC

DEFAULT_LIMITS = {"cartpole": 500, "pendulum": 200, "acrobot": 500, "mountain_car_continuous": 999}
SIZES = {"cartpole": (4, 2), "pendulum": (3, 1), "acrobot": (6, 3), "mountain_car_continuous": (2, 1)}


@pytest.mark.parametrize("name", CLASSIC)
def test_make_returns_the_task_in_its_time_limit(name):
    env = envs.make(name)
    assert isinstance(env, wrappers.EpisodeWrapper) and not isinstance(env.env, wrappers.Wrapper)
    assert env.episode_length == DEFAULT_LIMITS[name]
    assert (env.observation_size, env.action_size) == SIZES[name]
    assert envs.make(name, episode_length=7).episode_length == 7


def test_names_and_unknown_names():
    assert set(CLASSIC) <= set(envs.names())
    with pytest.raises(ValueError, match="unknown environment 'nope'; known: ") as e:
        envs.make("nope")
    assert str(e.value).split("known: ")[1] == ", ".join(sorted(envs.names()))


def test_register_and_unregister():
    envs.register("test_pendulum_g5", lambda: Pendulum(g=5.0), episode_length=10)
    try:
        with pytest.raises(ValueError, match="already registered"):
            envs.register("test_pendulum_g5", "hurtle.envs.classic:Pendulum")
        env = envs.make("test_pendulum_g5")
        assert "test_pendulum_g5" in envs.names() and env.episode_length == 10 and env.unwrapped.g == 5.0
    finally:
        envs.unregister("test_pendulum_g5")
    assert "test_pendulum_g5" not in envs.names()


def test_make_passes_task_arguments():
    assert envs.make("mountain_car_continuous", goal_velocity=0.01).unwrapped.goal_velocity == 0.01
    assert envs.make("cartpole", action_repeat=2).env.repeat == 2


def test_box():
    box = Box([-1.0, -np.inf, 0.0], [1.0, np.inf, np.inf], dtype=np.float32)
    assert box.shape == (3,) and box.size == 3 and box == Box([-1, -np.inf, 0], [1, np.inf, np.inf], (3,), np.float32)
    samples = np.asarray(jax.jit(jax.vmap(box.sample))(jax.random.split(jax.random.key(0), 1000)))
    assert samples.dtype == np.float32 and np.all(np.isfinite(samples))
    assert all(box.contains(s) for s in samples) and samples[:, 1].min() < 0 < samples[:, 1].max()
    assert not box.contains(np.array([2.0, 0.0, 0.0])) and not box.contains(np.zeros(2))
    with pytest.raises(ValueError, match="exceeds"):
        Box(1.0, 0.0, (1,))


def test_discrete():
    space = Discrete(3)
    values = np.asarray(jax.jit(jax.vmap(space.sample))(jax.random.split(jax.random.key(0), 300)))
    assert set(values.tolist()) == {0, 1, 2} and space.size == 3 and space.shape == ()
    assert space.contains(np.int64(2)) and not space.contains(3) and not space.contains(1.0)
    with pytest.raises(ValueError, match=r"integer scalar in \[0, 3\)"):
        space.check(jnp.zeros(2, jnp.int32), "test")


def test_wrappers_reach_the_task():
    env = wrappers.ClipAction(envs.make("pendulum"))
    assert env.unwrapped is env.env.env and env.g == 10.0, "task attributes through the wrappers"
    assert "Pendulum" in repr(env)
    with pytest.raises(TypeError, match="no physics model"):
        env.with_model(None)
    with pytest.raises(NotImplementedError, match="reset_to"):
        wrappers.AutoReset(_NoResetTo()).reset_to()


class _NoResetTo(envs.Env):
    observation_space = Box(0.0, 1.0, (1,))
    action_space = Discrete(2)

    def reset(self, key):
        return envs.State.first(jnp.zeros(1), jnp.float64)

    def step(self, state, action):
        return state
