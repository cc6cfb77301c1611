"""The Berkeley humanoid following a joystick command (`berkeley_humanoid_joystick_flat`): MuJoCo Playground's task,
stepped batched without NaN, replayed on MuJoCo C (pushes included) and equal to EnvPool's C++ twin."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle import envs
from hurtle.envs.robots import berkeley as B
from tests.conftest import require_or_skip
from tests.envs import engines
from tests.envs import envpool_twin as twin

TWIN = "MuJoCoPlayground/BerkeleyHumanoidJoystickFlatTerrain-v1"


@pytest.fixture(scope="module")
def quiet():
    """Noise off, pushes on (the host comparison replays them); the EnvPool comparison turns them off."""
    require_or_skip("robots")
    return B.BerkeleyHumanoidJoystick(noise=0.0)


def test_64_worlds_step_1000_random_actions_without_nan():
    """jit and vmap over 64 worlds, pushes and noise on, random actions for 1,000 steps with resets, float32 as
    training runs: finite throughout, falls ended and restarted; Playground's 52 and 114 observation values."""
    require_or_skip("robots")
    env = envs.make("berkeley_humanoid_joystick_flat")
    assert env.observation_space.shape == (52,) and env.privileged_observation_space.shape == (114,)
    out = engines.random_rollout("berkeley_humanoid_joystick_flat", 64, 1000)
    assert out["finite"] and out["nan_resets"] == 0 and out["done"] > 0


def test_pushes_kick_the_base_on_their_interval(quiet):
    """A push changes the base's horizontal velocity by 0.1-2 m/s on the step its interval comes round, and only
    then; `push=False` never does."""
    state = jax.jit(quiet.reset)(jax.random.key(3))
    interval = int(state.info["push_interval_steps"])
    assert 250 <= interval <= 500
    push = jax.jit(lambda s, at: quiet.push(s.replace(info={**s.info, "push_step": at}))[1])
    none, kick = push(state, jnp.asarray(interval - 2, jnp.int32)), push(state, jnp.asarray(interval - 1, jnp.int32))
    assert float(jnp.abs(none).max()) == 0.0
    assert 0.1 <= float(jnp.linalg.norm(kick[:2])) <= 2.0 and float(jnp.abs(kick[2:]).max()) == 0.0
    assert B.BerkeleyHumanoidJoystick(noise=0.0, push=False).push(state)[1] is None


def test_mujoco_c_replays_the_task(quiet):
    """On MuJoCo C (`MujocoEnv`, float64, its kicks added to the simulations' velocities), the JAX task's
    observations, reward terms and terminations, from the same keys; a push falls within the steps compared."""
    from hurtle.hostenvs import MujocoEnv

    n, seed = 3, 2
    host = MujocoEnv(quiet, n, nthread=1)
    obs = host.reset(seed=seed)
    subkeys = jax.vmap(jax.random.split)(jax.random.split(jax.random.PRNGKey(seed), n))[:, 1]
    states = jax.jit(jax.vmap(quiet.reset))(subkeys)
    # bring the first push near: each environment's push counter set 5 steps short of its interval, both sides
    due = np.asarray(states.info["push_interval_steps"]) - 6
    states = states.replace(info={**states.info, "push_step": jnp.asarray(due, jnp.int32)})
    host._task_state[0]["push_step"][:] = due
    close = dict(rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(obs, states.obs, **close)
    np.testing.assert_allclose(host.reset_privileged_obs, states.privileged_obs, **close)
    step = jax.jit(jax.vmap(quiet.step))
    rng = np.random.default_rng(0)
    for t in range(10):
        action = rng.uniform(-0.3, 0.3, (n, 12))
        out = host.step(action)
        states = step(states, jnp.asarray(action))
        alive = ~out.ended
        np.testing.assert_allclose(out.final_obs, states.obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.final_privileged_obs, states.privileged_obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.reward, states.reward, **close)
        for key in B.SCALES:
            np.testing.assert_allclose(out.metrics[f"reward/{key}"], states.metrics[f"reward/{key}"], **close)
        assert alive.all(), f"step {t}: an episode ended; the comparison would need its restart"
    host.close()


def test_equals_envpools_twin():
    """EnvPool 1.2.5's C++ BerkeleyHumanoidJoystickFlatTerrain (envpool_twin.VERSION), noise and pushes off: from
    EnvPool's reset states (rebuilt in hurtle: the yaw and base velocities solved from the IMU, the scaled joints,
    their velocities and the base's height read from the privileged observation) and with EnvPool's commands, the
    same random actions give the same observation, privileged observation, every reward term and termination
    within 1e-5. The gait's frequency, drawn at reset, is not observed until the second step's phase: a first pass
    of two steps reads it, and the comparison starts again from the same seed."""
    envpool = twin.envpool_or_skip()
    require_or_skip("robots")
    task = B.BerkeleyHumanoidJoystick(noise=0.0, push=False)
    n, steps = 4, 100

    def pool():
        return envpool.make(TWIN, env_type="gymnasium", num_envs=n, seed=0, noise_level=0.0, push_enable=False)

    first = pool()
    first.reset()
    for _ in range(2):
        obs = first.step(np.zeros((n, 12)))[0]
    first.close()
    phase_dt = np.arctan2(obs["state"][:, 50], obs["state"][:, 48])  # the left foot's phase after one step

    p0 = pool()
    obs, info = p0.reset()
    qpos, qvel = [], []
    for p in obs["privileged_state"]:
        q, v = twin.base_state(
            task.mj, task.home_qpos, task.default_pose + p[67:79], p[79:91], "imu", gyro=p[52:55],
            world_angvel=p[64:67], local_linvel=p[61:64],
        )  # fmt: skip
        q[2] = p[91]
        qpos.append(q)
        qvel.append(v)
    start = [twin.with_info(s, phase_dt=phase_dt[i]) for i, s in enumerate(twin.starts(task, qpos, qvel))]

    def follow(state, info):
        return twin.with_info(state, command=info["command"])

    state = follow(twin.stack(start), info)
    observe = jax.jit(jax.vmap(lambda s: task._observe(s.physics, s.info, task.read(s.physics))[:2]))
    ours, privileged = observe(state)
    np.testing.assert_allclose(ours, obs["state"], atol=1e-9)
    np.testing.assert_allclose(privileged, obs["privileged_state"], atol=1e-9)
    assert twin.compare(task, p0, state, info, steps, 0.3, follow) >= 150
