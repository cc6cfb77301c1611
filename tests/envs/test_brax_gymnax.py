"""from_brax and from_gymnax on small stand-ins that follow Brax's, Playground's and gymnax's interfaces,
so the conversion logic runs without those packages (which need other JAX versions)."""

import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle.envs import Box, Discrete, from_brax, from_gymnax, wrappers
from hurtle.envs.adapters.brax import BraxEnv
from hurtle.envs.adapters.gymnax import GymnaxEnv
from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class BraxState:
    """The fields of `brax.envs.base.State`."""

    pipeline_state: jax.Array
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    metrics: dict
    info: dict


@pytree_dataclass
class PlaygroundState:
    """The fields of `mujoco_playground.State` (`data` in place of `pipeline_state`)."""

    data: jax.Array
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    metrics: dict
    info: dict


class PointMass:
    """A Brax-style task: a point pushed along a line; it ends beyond |x| = 1, or after `limit` steps as
    Brax's EpisodeWrapper reports it (done and `info["truncation"]`). `info` is mutated as Brax envs do."""

    observation_size = 2
    action_size = 1

    def __init__(self, state_type=BraxState, limit=None):
        self.state_type, self.limit = state_type, limit
        self.physics_field = "pipeline_state" if state_type is BraxState else "data"

    def _state(self, q, reward, done, metrics, info):
        fields = dict(obs=q, reward=reward, done=done, metrics=metrics, info=info)
        return self.state_type(**{self.physics_field: q}, **fields)

    def reset(self, rng):
        assert rng.dtype == jnp.uint32, "Brax receives a raw uint32 key"
        q = jax.random.uniform(rng, (2,), minval=-0.1, maxval=0.1)
        info = {"steps": jnp.zeros(())} | ({} if self.limit is None else {"truncation": jnp.zeros(())})
        return self._state(q, jnp.zeros(()), jnp.zeros(()), {"speed": jnp.zeros(())}, info)

    def step(self, state, action):
        q = getattr(state, self.physics_field)
        q = jnp.stack([q[0] + 0.1 * q[1], q[1] + action[0]])
        info = state.info
        info.update(steps=info["steps"] + 1)
        done = (jnp.abs(q[0]) > 1).astype(q.dtype)
        if self.limit is not None:
            info["truncation"] = jnp.where((info["steps"] >= self.limit) & (done == 0), 1.0, 0.0)
            done = jnp.maximum(done, info["truncation"])
        return self._state(q, -jnp.abs(q[0]), done, {**state.metrics, "speed": jnp.abs(q[1])}, info)


class Asymmetric(PointMass):
    """PointMass with Playground's asymmetric observations: `state` (the position) and `privileged_state` (both
    coordinates and the step count), `observation_size` a dict of shapes as Playground's `MjxEnv` gives it."""

    observation_size = {"state": (1,), "privileged_state": (3,)}

    def _state(self, q, reward, done, metrics, info):
        obs = {"state": q[:1], "privileged_state": jnp.concatenate([q, info["steps"][None]])}
        return self.state_type(**{self.physics_field: q}, obs=obs, reward=reward, done=done, metrics=metrics, info=info)


def test_playground_dict_observations_become_obs_and_privileged_obs():
    env = wrappers.AutoReset(BraxEnv(Asymmetric(PlaygroundState, limit=2)))
    assert env.observation_space.shape == (1,) and env.privileged_observation_space.shape == (3,)
    state = env.reset(jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(state.privileged_obs), [*np.asarray(state.physics), 0.0])
    state = env.step(state, jnp.ones(1))
    np.testing.assert_array_equal(np.asarray(state.obs), np.asarray(state.physics)[:1])
    np.testing.assert_array_equal(np.asarray(state.privileged_obs), [*np.asarray(state.physics), 1.0])
    state = env.step(state, jnp.ones(1))  # the time limit: a fresh episode, the one that ended in final_*
    assert state.truncation and float(state.privileged_obs[2]) == 0.0
    assert float(state.info["final_privileged_obs"][2]) == 2.0


def test_brax_observations_must_be_flat():
    odd = type("Odd", (PointMass,), {"observation_size": {"pixels": (8, 8)}})
    with pytest.raises(NotImplementedError, match="only flat observations"):
        BraxEnv(odd())


@pytest.fixture
def fake_module(monkeypatch):
    """Make `import <name>` succeed with an empty module."""
    return lambda name: monkeypatch.setitem(sys.modules, name, types.ModuleType(name))


def test_from_brax_needs_brax(monkeypatch, fake_module):
    monkeypatch.setitem(sys.modules, "brax", None)
    with pytest.raises(ImportError, match=r"hurtle\[brax\]"):
        from_brax(PointMass())
    fake_module("brax")
    assert isinstance(from_brax(PointMass()), BraxEnv)


@pytest.mark.parametrize("state_type", [BraxState, PlaygroundState], ids=["brax", "playground"])
def test_brax_env_converts_states(state_type):
    env = BraxEnv(PointMass(state_type))
    assert env.observation_space == Box(-np.inf, np.inf, (2,)) and env.action_space == Box(-1.0, 1.0, (1,))
    state = jax.jit(env.reset)(jax.random.key(0))
    assert state.physics.shape == (2,) and state.done.dtype == jnp.bool_ and state.info["steps"] == 0
    step = jax.jit(env.step)
    for _ in range(40):
        state = step(state, jnp.ones(1))
        if state.done:
            break
    assert state.done and not state.truncation and float(state.metrics["speed"]) > 1
    np.testing.assert_array_equal(np.asarray(state.physics), np.asarray(state.obs))


def test_brax_time_limit_becomes_truncation():
    env = wrappers.AutoReset(BraxEnv(PointMass(limit=3)))
    state = env.reset(jax.random.key(1))
    for _ in range(3):
        assert not state.truncation
        state = env.step(state, jnp.zeros(1))
    assert state.truncation and not state.done, "Brax's done=1 with info['truncation'] is a truncation"
    assert float(state.info["steps"]) == 0, "auto-reset restarted the Brax counter"


class Gridworld:
    """A gymnax-style environment: a walker on 0..5 with noisy moves; terminal at 5."""

    default_params = {"noise": 0.0}

    def action_space(self, params):
        return types.SimpleNamespace(num_categories=2)

    def observation_space(self, params):
        return types.SimpleNamespace(low=0.0, high=5.0, shape=(1,), dtype=jnp.float32)

    def reset_env(self, key, params):
        assert key.dtype == jnp.uint32
        return jnp.zeros(1, jnp.float32), {"pos": jnp.zeros((), jnp.float32)}

    def get_obs(self, state):
        return state["pos"][None]

    def step_env(self, key, state, action, params):
        move = jnp.where(action == 1, 1.0, -1.0) + params["noise"] * jax.random.normal(key, (), jnp.float32)
        pos = jnp.clip(state["pos"] + move, 0.0, 5.0)
        done = pos >= 5.0
        return pos[None], {"pos": pos}, jnp.where(done, 1.0, 0.0), done, {"discount": 1.0 - done.astype(jnp.float32)}


def test_from_gymnax_needs_gymnax(monkeypatch, fake_module):
    monkeypatch.setitem(sys.modules, "gymnax", None)
    with pytest.raises(ImportError, match=r"hurtle\[gymnax\]"):
        from_gymnax(Gridworld())
    fake_module("gymnax")
    assert isinstance(from_gymnax(Gridworld(), {"noise": 0.0}), GymnaxEnv)


def test_gymnax_env_steps_without_auto_reset():
    env = GymnaxEnv(Gridworld())
    assert env.action_space == Discrete(2) and env.observation_space.high[0] == 5.0
    state = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    for _ in range(5):
        state = step(state, jnp.int32(1))
    assert state.done and float(state.reward) == 1.0 and float(state.obs[0]) == 5.0, "the terminal transition"
    assert state.obs.dtype == env.observation_space.dtype
    start = env.reset_to({"pos": jnp.asarray(3.0, jnp.float32)})
    assert float(start.obs[0]) == 3.0


def test_gymnax_keys_are_split_every_step():
    env = GymnaxEnv(Gridworld(), {"noise": 0.1})
    state = env.reset(jax.random.key(0))
    moves = []
    for _ in range(3):
        new = env.step(state, jnp.int32(1))
        moves.append(float(new.obs[0] - state.obs[0]))
        state = new
    assert len(set(moves)) == 3
    batch = wrappers.VmapWrapper(wrappers.AutoReset(env), 3)
    state = jax.jit(batch.step)(batch.reset(jax.random.key(1)), jnp.ones(3, jnp.int32))
    assert state.obs.shape == (3, 1)
