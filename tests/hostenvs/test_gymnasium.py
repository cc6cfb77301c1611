"""Gymnasium host environments: same-step autoreset with the final observation, both vectorisations, the NaN
guard, errors raised from a worker, clear refusals."""

import gymnasium as gym
import numpy as np
import pytest

from hurtle.envs.base import Discrete
from hurtle.hostenvs import GymnasiumEnv


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_cartpole_autoresets_with_the_final_observation(vectorization):
    with GymnasiumEnv("CartPole-v1", 3, vectorization) as env:
        assert env.action_space == Discrete(2) and env.observation_space.shape == (4,)
        obs = env.reset(seed=0)
        reference = gym.make("CartPole-v1")
        ref_obs, _ = reference.reset(seed=0)
        np.testing.assert_allclose(obs[0], ref_obs, rtol=1e-6)
        total, steps = 0.0, 0
        for _ in range(100):
            steps += 1
            s = env.step(np.ones(3, np.int64))  # always push right: the pole falls within ~10 steps
            ref_obs, ref_r, ref_term, _, _ = reference.step(1)
            total += ref_r
            if s.ended[0]:
                break
            np.testing.assert_allclose(s.obs[0], ref_obs, rtol=1e-6)
        # the ending step: terminated, the last observation in final_obs, a fresh one in obs
        assert s.terminated[0] and ref_term and not s.truncated[0]
        np.testing.assert_allclose(s.final_obs[0], ref_obs, rtol=1e-6)
        assert np.abs(s.obs[0]).max() <= 0.05  # CartPole resets within +-0.05
        assert s.metrics["episode/return"][0] == total and s.metrics["episode/length"][0] == steps
        s = env.step(np.ones(3, np.int64))
        assert s.metrics["episode/length"][0] == 1
    assert env.venv is None  # closed by `with`


class _Broken(gym.Env):
    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (1,), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if action[0] > 0.9:
            raise RuntimeError("the broken environment failed")
        obs = np.full(2, np.nan if action[0] < -0.9 else self.t, np.float32)
        return obs, 1.0, False, False, {}


def test_nonfinite_steps_restart_that_environment():
    with GymnasiumEnv(_Broken, 2) as env:
        env.reset(seed=0)
        s = env.step(np.array([[-1.0], [0.0]]))
        np.testing.assert_array_equal(s.metrics["nan_resets"], [1, 0])
        assert s.terminated[0] and s.reward[0] == 0 and np.all(s.final_obs[0] == 0)
        np.testing.assert_array_equal(s.obs, [[0, 0], [1, 1]])  # env 0 restarted, env 1 went on
        s = env.step(np.zeros((2, 1)))
        np.testing.assert_array_equal(s.obs, [[1, 1], [2, 2]])


def test_an_error_in_a_worker_is_raised_by_step():
    with GymnasiumEnv(_Broken, 2, "async") as env:
        env.reset(seed=0)
        with pytest.raises(RuntimeError, match="the broken environment failed"):
            env.step(np.array([[0.0], [1.0]]))


def test_refusals():
    with pytest.raises(ValueError, match="NoSuchEnv-v0: not a Gymnasium environment id"):
        GymnasiumEnv("NoSuchEnv-v0", 2)
    with pytest.raises(ValueError, match="vectorization must be 'sync' or 'async'"):
        GymnasiumEnv("CartPole-v1", 2, "threads")
    with GymnasiumEnv("CartPole-v1", 2) as env:
        env.reset(0)
        with pytest.raises(ValueError, match=r"CartPole-v1: action has shape \(3,\), expected \(2,\)"):
            env.step(np.zeros(3, np.int64))


def test_envpool_follows_the_same_contract():
    """EnvPool (an optional extra: skipped where it is not installed) resets an ended environment in the same
    step, like the Gymnasium backend, and matches Gymnasium's CartPole step for step from the same state."""
    pytest.importorskip("envpool")
    from hurtle.hostenvs.envpool import EnvPoolEnv

    with pytest.raises(ValueError, match="NoSuchEnv-v0: not an EnvPool environment id"):
        EnvPoolEnv("NoSuchEnv-v0", 2)
    with EnvPoolEnv("CartPole-v1", 3) as env:
        obs = env.reset(seed=0)
        assert obs.shape == (3, 4) and env.action_space == Discrete(2)
        for _ in range(100):
            s = env.step(np.ones(3, np.int64))
            if s.ended.any():
                break
        i = int(np.nonzero(s.ended)[0][0])
        assert s.terminated[i] and abs(s.final_obs[i][2]) > 0.2  # the pole fell past 12 degrees
        assert np.abs(s.obs[i]).max() <= 0.05 and s.metrics["episode/length"][i] >= 8
        s = env.step(np.ones(3, np.int64))
        assert s.metrics["episode/length"][i] == 1
