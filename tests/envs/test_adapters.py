"""Adapters out: Gymnasium's checker on every task, the vector env's same-step auto-reset, dm_env's test
mixin and its step types, and the dtypes each adapter promises (under x64, as the test suite runs)."""

import re
import warnings

import dm_env
import gymnasium
import jax
import numpy as np
import pytest
from absl.testing import absltest
from dm_env import test_utils
from gymnasium.utils.env_checker import check_env

from hurtle.envs import to_dm_env, to_gymnasium, to_gymnasium_vector, wrappers
from hurtle.envs.classic import Pendulum
from tests.envs.conftest import ALL, task, timed

# what Gymnasium's checker says about our spaces' design (it says the same of its own tasks) and about
# environments built outside `gymnasium.make`; any other warning fails the test
EXPECTED_WARNINGS = re.compile(r"infinity\. This is probably too|symmetric and normalized|not having a spec")


@pytest.mark.parametrize("name", ALL)
def test_gymnasium_env_checker(name):
    env = to_gymnasium(timed(name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    unexpected = [str(w.message) for w in caught if not EXPECTED_WARNINGS.search(str(w.message))]
    assert not unexpected, unexpected
    obs, _ = env.reset(seed=1)
    assert obs.dtype == np.float32 and obs in env.observation_space
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs.dtype == np.float32 and type(reward) is float and type(terminated) is bool and type(truncated) is bool
    assert "episode/length" in info and info["episode/length"] == 1


def test_gymnasium_env_time_limit_and_actions():
    env = to_gymnasium(timed("pendulum"))
    env.reset(seed=0)
    for i in range(200):
        _, _, terminated, truncated, _ = env.step(np.array([0.5], np.float32))
        assert not terminated and truncated == (i == 199)
    with pytest.raises(ValueError, match=r"expected \(1,\)"):
        env.step(np.zeros(2, np.float32))
    assert isinstance(to_gymnasium(timed("cartpole")).action_space, gymnasium.spaces.Discrete)


def test_gymnasium_vector_env_resets_in_the_same_step():
    envs = to_gymnasium_vector(timed("cartpole"), 4)
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert envs.observation_space.shape == (4, 4) and envs.single_action_space == gymnasium.spaces.Discrete(2)
    per_env, _ = envs.reset(seed=[1, 2, 3, 4])
    np.testing.assert_array_equal(envs.reset(seed=[1, 2, 3, 4])[0], per_env)
    assert len({tuple(o) for o in per_env}) == 4
    obs, _ = envs.reset(seed=3)
    np.testing.assert_array_equal(envs.reset(seed=3)[0], obs)
    assert obs.dtype == np.float32 and obs.shape == (4, 4)
    bare = task("cartpole")
    seen_end = False
    for _ in range(100):
        states = np.asarray(envs.state.info["state"])
        actions = np.ones(4, np.int64)
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        assert rewards.dtype == np.float64 and terminated.dtype == bool and obs.dtype == np.float32
        ended = terminated | truncated
        if ended.any():
            seen_end = True
            assert np.array_equal(infos["_final_obs"], ended) and infos["final_obs"].dtype == np.float32
            i = int(np.argmax(ended))
            reached = bare.step(bare.reset_to(states[i]), 1)
            np.testing.assert_allclose(infos["final_obs"][i], np.asarray(reached.obs, np.float32), rtol=1e-6)
            assert np.all(np.abs(obs[i]) <= 0.05), "the returned observation is the new episode's"
            assert infos["episode"]["l"][i] >= 1 and infos["episode"]["r"][i] == infos["episode"]["l"][i]
        else:
            assert "final_obs" not in infos
    assert seen_end
    with pytest.raises(ValueError, match=r"expected \(4,\)"):
        envs.step(np.ones(3, np.int64))


def _episode_actions(environment, n):
    """Random actions for `n` steps."""
    rng = np.random.default_rng(0)
    spec = environment.action_spec()
    for _ in range(n):
        if isinstance(spec, dm_env.specs.DiscreteArray):
            yield np.asarray(rng.integers(0, spec.num_values), spec.dtype)
        else:
            yield rng.uniform(spec.minimum, spec.maximum).astype(spec.dtype)


def _dm_env_test(name):
    env = timed(name)  # the object the Gymnasium test uses: its programs are compiled once

    class Test(test_utils.EnvironmentTestMixin, absltest.TestCase):
        def make_object_under_test(self):
            return to_dm_env(env)

        def make_action_sequence(self):
            # past the time limit, so the sequence crosses a LAST step and the FIRST after it
            return _episode_actions(self.environment, env.episode_length + 2)

    Test.__name__ = Test.__qualname__ = f"TestDmEnv_{name}"
    return Test


for _name in ALL:
    globals()[f"TestDmEnv_{_name}"] = _dm_env_test(_name)


def test_dm_env_step_types_and_discounts():
    falling = np.array([0.0, 0.0, 0.2094, 1.0])
    terminate = to_dm_env(wrappers.EpisodeWrapper(task("cartpole"), 500))
    first = terminate.reset()
    assert first.first() and first.reward is None and first.observation.dtype == np.float32
    terminate.state = terminate.env.reset_to(falling)
    last = terminate.step(np.int32(1))
    assert last.last() and last.discount == 0.0 and last.reward == 1.0 and last.reward.dtype == np.float64
    assert terminate.step(np.int32(1)).first(), "the step after LAST starts a new episode"

    truncate = to_dm_env(timed("pendulum", 2))
    truncate.reset()
    assert truncate.step(np.zeros(1, np.float32)).mid()
    last = truncate.step(np.zeros(1, np.float32))
    assert last.last() and last.discount == 1.0
    assert truncate.action_spec().dtype == np.float32 and truncate.observation_spec().dtype == np.float32
    assert to_dm_env(task("cartpole")).action_spec() == dm_env.specs.DiscreteArray(2, name="action")


def test_adapters_keep_dtypes_without_x64():
    with jax.enable_x64(False):
        env = wrappers.EpisodeWrapper(Pendulum(), 200)
        gym_env = to_gymnasium(env)
        obs, _ = gym_env.reset(seed=0)
        obs, reward, *_ = gym_env.step(np.array([1.0]))  # a float64 action is cast to the task's float32
        assert obs.dtype == np.float32 and type(reward) is float
        step = to_dm_env(env).step(np.array([1.0]))
        assert step.observation.dtype == np.float32


def test_adapters_give_a_privileged_observation_as_playground_names_it():
    """A task with a privileged observation: Gymnasium's and dm_env's observations are dicts of `state` and
    `privileged_state` (MuJoCo Playground's and EnvPool's names), final observations too."""
    from tests.envs.test_wrappers import Privileged

    one = to_gymnasium(Privileged(wrappers.EpisodeWrapper(task("pendulum"), 2)))
    assert set(one.observation_space.spaces) == {"state", "privileged_state"}
    obs, _ = one.reset(seed=0)
    assert one.observation_space.contains(obs) and obs["privileged_state"].shape == (3,)
    vec = to_gymnasium_vector(Privileged(wrappers.EpisodeWrapper(task("pendulum"), 2)), 3)
    obs, _ = vec.reset(seed=0)
    assert obs["state"].shape == (3, 3) and obs["privileged_state"].shape == (3, 3)
    vec.step(np.zeros((3, 1), np.float32))
    obs, _, _, truncated, infos = vec.step(np.zeros((3, 1), np.float32))
    assert truncated.all() and np.all(infos["final_obs"]["privileged_state"][:, 2] == 2.0)
    assert np.all(obs["privileged_state"][:, 2] == 0.0)
    dm = to_dm_env(Privileged(wrappers.EpisodeWrapper(task("pendulum"), 2)))
    assert set(dm.observation_spec()) == {"state", "privileged_state"}
    assert dm.reset().observation["privileged_state"].shape == (3,)
