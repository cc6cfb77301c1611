"""Wrapper semantics: time limits and episode statistics, auto-reset, action repeat, clipping, the NaN guard,
batching, `reset_to` through a stack, and the rule that states are rebuilt, never mutated."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle import envs
from hurtle.envs import State, tree_where, wrappers
from tests.envs.conftest import JIT_RESET, JIT_STEP, batch, task

# a cart-pole that terminates on its next step (the pole past 12 degrees and falling)
FALLING = np.array([0.0, 0.0, 0.2094, 1.0])


def assert_close(a, b):
    """Equal up to the rounding of fused multiply-adds, which a jitted and an eager step may place differently."""
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-300)


def run(env, state, actions):
    """Step `env` through `actions` (jitted once per env), returning every state."""
    out = []
    for a in actions:
        state = JIT_STEP(env, state, a)
        out.append(state)
    return out


def test_time_limit_truncates_and_counts():
    env = wrappers.EpisodeWrapper(task("pendulum"), episode_length=5)
    state = env.reset_to([1.0, 0.0])
    bare = task("pendulum").reset_to([1.0, 0.0])
    rewards = []
    for i, s in enumerate(run(env, state, [jnp.ones(1)] * 5), start=1):
        bare = task("pendulum").step(bare, jnp.ones(1))
        rewards.append(float(bare.reward))
        assert bool(s.truncation) == (i == 5) and not s.done
        assert int(s.metrics["episode/length"]) == i
        np.testing.assert_allclose(float(s.metrics["episode/return"]), sum(rewards), rtol=1e-12)


def test_termination_on_the_last_step_is_not_truncation():
    env = wrappers.EpisodeWrapper(task("cartpole"), episode_length=1)
    s = JIT_STEP(env, env.reset_to(FALLING), 1)
    assert s.done and not s.truncation
    assert int(s.metrics["episode/length"]) == 1 and float(s.metrics["episode/return"]) == 1.0


def test_action_repeat_sums_rewards_and_counts_task_steps():
    env = wrappers.EpisodeWrapper(task("pendulum"), episode_length=6, action_repeat=2)
    states = run(env, env.reset_to([1.0, 0.0]), [jnp.ones(1)] * 3)
    bare = task("pendulum").reset_to([1.0, 0.0])
    total = 0.0
    for _ in range(6):
        bare = task("pendulum").step(bare, jnp.ones(1))
        total += float(bare.reward)
    assert_close(states[-1].info["state"], bare.info["state"])
    np.testing.assert_allclose(float(states[-1].metrics["episode/return"]), total, rtol=1e-12)
    assert [int(s.metrics["episode/length"]) for s in states] == [2, 4, 6]
    assert [bool(s.truncation) for s in states] == [False, False, True]


def test_action_repeat_stops_at_termination():
    env = wrappers.ActionRepeat(task("cartpole"), 3)
    once = task("cartpole").step(task("cartpole").reset_to(FALLING), 1)
    s = JIT_STEP(env, env.reset_to(FALLING), 1)
    assert s.done and float(s.reward) == 1.0
    assert_close(s.obs, once.obs)


def test_auto_reset_on_termination():
    env = wrappers.AutoReset(wrappers.EpisodeWrapper(task("cartpole"), 500))
    start = env.reset_to(FALLING, key=jax.random.key(3))
    end = JIT_STEP(env, start, 1)
    terminal = task("cartpole").step(task("cartpole").reset_to(FALLING), 1)
    assert end.done and not end.truncation and float(end.reward) == 1.0
    assert_close(end.info["final_obs"], terminal.obs)
    # the new episode: a fresh reset, its counters at zero, the finished episode's statistics in metrics
    assert np.all(np.abs(np.asarray(end.obs)) <= 0.05)
    np.testing.assert_array_equal(np.asarray(end.info["state"]), np.asarray(end.obs))
    assert int(end.info["episode_steps"]) == 0 and int(end.metrics["episode/length"]) == 1
    following = JIT_STEP(env, end, 0)
    assert not following.done and int(following.metrics["episode/length"]) == 1
    np.testing.assert_array_equal(np.asarray(following.info["final_obs"]), np.asarray(following.obs))


def test_auto_reset_on_truncation_keeps_the_final_observation():
    env = wrappers.AutoReset(wrappers.EpisodeWrapper(task("pendulum"), 3))
    states = run(env, env.reset(jax.random.key(0)), [jnp.zeros(1)] * 4)
    reached = task("pendulum").reset_to(np.asarray(states[1].info["state"]))
    reached = task("pendulum").step(reached, jnp.zeros(1))
    last = states[2]
    assert last.truncation and not last.done and int(last.metrics["episode/length"]) == 3
    assert_close(last.info["final_obs"], reached.obs)
    assert not np.allclose(np.asarray(last.obs), np.asarray(reached.obs))
    assert int(states[3].metrics["episode/length"]) == 1 and not states[3].truncation


def test_auto_resets_draw_fresh_keys():
    env = wrappers.AutoReset(wrappers.EpisodeWrapper(task("pendulum"), 1))
    states = run(env, env.reset(jax.random.key(0)), [jnp.zeros(1)] * 3)
    firsts = np.stack([np.asarray(s.obs) for s in states])
    assert len({tuple(f) for f in firsts}) == 3


class Privileged(wrappers.Wrapper):
    """A task with a privileged observation (the critic's asymmetric input): the pendulum's raw state and its
    episode step, beside the policy's usual observation."""

    @property
    def privileged_observation_space(self):
        return envs.Box(-np.inf, np.inf, (3,), self.env.observation_space.dtype)

    def _add(self, state):
        steps = state.info["episode_steps"].astype(state.obs.dtype)[None]
        return state.replace(privileged_obs=jnp.concatenate([state.info["state"], steps]))

    def start(self, state, key):
        return self._add(state)

    def step(self, state, action):
        return self._add(self.env.step(state, action))


def test_auto_reset_and_nan_guard_carry_the_privileged_observation():
    env = wrappers.AutoReset(wrappers.NanGuard(Privileged(wrappers.EpisodeWrapper(task("pendulum"), 2))))
    assert env.privileged_observation_space.shape == (3,)
    states = run(env, env.reset(jax.random.key(0)), [jnp.zeros(1)] * 2)
    np.testing.assert_array_equal(np.asarray(states[0].privileged_obs)[2], 1.0)
    np.testing.assert_array_equal(
        np.asarray(states[0].info["final_privileged_obs"]), np.asarray(states[0].privileged_obs)
    )
    # the time limit: the fresh episode's privileged observation, and the one the step reached in final_*
    assert states[1].truncation and float(states[1].privileged_obs[2]) == 0.0
    assert float(states[1].info["final_privileged_obs"][2]) == 2.0
    np.testing.assert_array_equal(np.asarray(states[1].privileged_obs)[:2], np.asarray(states[1].info["state"]))
    # a non-finite step: zero privileged observation in final_*, a fresh one after the reset
    broken = env.reset_to([np.nan, 0.0])
    s = JIT_STEP(env, broken, jnp.ones(1))
    assert s.done and np.all(np.asarray(s.info["final_privileged_obs"]) == 0)
    assert np.all(np.isfinite(np.asarray(s.privileged_obs))) and float(s.privileged_obs[2]) == 0.0


def test_nan_guard_terminates_and_auto_reset_restarts():
    env = wrappers.AutoReset(wrappers.NanGuard(wrappers.EpisodeWrapper(task("pendulum"), 200)))
    broken = env.reset_to([np.nan, 0.0])
    s = JIT_STEP(env, broken, jnp.ones(1))
    assert s.done and int(s.metrics["nan_resets"]) == 1 and float(s.reward) == 0.0
    assert np.all(np.isfinite(np.asarray(s.obs))) and np.all(np.asarray(s.info["final_obs"]) == 0)
    assert float(s.metrics["episode/return"]) == 0.0
    s = JIT_STEP(env, s, jnp.ones(1))
    assert not s.done and int(s.metrics["nan_resets"]) == 0 and np.all(np.isfinite(np.asarray(s.obs)))


def test_nan_guard_checks_the_physics_state():
    env = batch("reacher")
    state = JIT_RESET(env, jax.random.key(0))
    # a finite observation over a non-finite velocity in the first environment
    qvel = state.physics.qvel.at[0, 0].set(np.inf)
    s = JIT_STEP(env, state.replace(physics=state.physics.replace(qvel=qvel)), jnp.zeros((4, 2)))
    np.testing.assert_array_equal(np.asarray(s.done), [True, False, False, False])
    np.testing.assert_array_equal(np.asarray(s.metrics["nan_resets"]), [1, 0, 0, 0])
    assert np.all(np.asarray(s.info["final_obs"])[0] == 0) and float(s.metrics["reward/distance"][0]) == 0.0
    assert np.all(np.isfinite(np.asarray(s.physics.qvel))) and np.all(np.isfinite(np.asarray(s.obs)))


def test_clipping():
    env = wrappers.ClipAction(task("mountain_car_continuous"))
    clipped = env.step(env.reset_to([-0.5, 0.0]), jnp.array([5.0]))
    assert float(clipped.reward) == pytest.approx(-0.1)  # the task saw 1.0, not 5.0
    with pytest.raises(TypeError, match="Discrete"):
        wrappers.ClipAction(task("cartpole"))
    env = wrappers.ClipObservation(task("cartpole"), -0.5, 0.5)
    assert env.observation_space.high[0] == 0.5 and env.observation_space.high[1] == 0.5
    s = env.step(env.reset_to([0.0, 3.0, 0.0, -3.0]), 1)
    assert np.all(np.abs(np.asarray(s.obs)) <= 0.5) and float(np.asarray(s.info["state"])[1]) > 0.5


def test_training_stack_reset_to_and_batch():
    env = wrappers.wrap_for_training(wrappers.EpisodeWrapper(task("cartpole"), 500), batch_size=3)
    states = np.array([FALLING, np.zeros(4), [0.01, 0.0, 0.0, 0.0]])
    s = env.reset_to(states, key=jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(s.obs), states)
    assert s.reward.shape == (3,) and set(s.info) >= {"state", "final_obs", "reset_key", "episode_steps"}
    s = JIT_STEP(env, s, jnp.array([1, 1, 0], jnp.int32))
    np.testing.assert_array_equal(np.asarray(s.done), [True, False, False])
    assert JIT_RESET(env, jax.random.key(0)).obs.shape == (3, 4)


def test_states_are_rebuilt_not_mutated():
    env = wrappers.AutoReset(wrappers.EpisodeWrapper(task("cartpole"), 500))
    state = env.reset_to(np.zeros(4))
    info, metrics = state.info, state.metrics
    snapshot = ({**info}, {**metrics})
    new = env.step(state, 1)
    assert state.info is info and state.metrics is metrics
    assert state.info.keys() == snapshot[0].keys() and all(state.info[k] is v for k, v in snapshot[0].items())
    assert all(state.metrics[k] is v for k, v in snapshot[1].items())
    assert new.info is not info and int(new.info["episode_steps"]) == 1
    with pytest.raises(AttributeError):
        state.obs = None


def test_tree_where_needs_equal_structures():
    a = State.first(jnp.zeros(2), jnp.float64, info={"x": jnp.zeros(())})
    with pytest.raises(ValueError, match="structure"):
        tree_where(jnp.array(True), a, a.replace(info={}))
    chosen = tree_where(jnp.array([True, False]), jnp.ones((2, 3)), jnp.zeros((2, 3)))
    np.testing.assert_array_equal(np.asarray(chosen), [[1, 1, 1], [0, 0, 0]])
