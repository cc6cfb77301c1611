"""Go1 following a joystick command (`go1_joystick_flat`, `go1_joystick_rough`): MuJoCo Playground's task, stepped
batched without NaN, replayed on MuJoCo C with the same observations and rewards, and equal to EnvPool's C++ twin."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hurtle import envs
from hurtle.envs.robots import go1 as G
from tests.conftest import require_or_skip
from tests.envs import engines
from tests.envs import envpool_twin as twin


@pytest.fixture(scope="module")
def flat():
    require_or_skip("robots")
    return G.Go1Joystick("flat", noise=0.0)


def test_unknown_settings_are_refused_by_name():
    require_or_skip("robots")
    with pytest.raises(ValueError, match="terrain must be one of flat, rough"):
        G.Go1Joystick("hills")
    with pytest.raises(ValueError, match=r"no reward terms \['speed'\]"):
        G.Go1Joystick(scales={"speed": 1.0})


# the rough terrain's worlds and steps: on this CPU a batch of robots flailing on the height field steps at ~30 ms
# per environment step (the field's candidate prisms, benchmarks/NOTES.md §55), 100x the flat floor's: 64 x 1,000
# would take half an hour
SIZES = {"go1_joystick_flat": (64, 1000), "go1_joystick_rough": (8, 200)}


@pytest.mark.parametrize("name", list(SIZES))
def test_64_worlds_step_1000_random_actions_without_nan(name):
    """jit and vmap over 64 worlds, random actions for 1,000 steps with resets (the rough terrain: 8 worlds, 200
    steps), float32 as training runs: finite throughout; random actions topple some robots (the episode ends on its
    back); the observation and privileged observation are Playground's 48 and 123 values."""
    require_or_skip("robots")
    env = envs.make(name)
    assert env.observation_space.shape == (48,) and env.privileged_observation_space.shape == (123,)
    out = engines.random_rollout(name, *SIZES[name])
    assert out["finite"] and out["nan_resets"] == 0
    assert out["done"] > 0, f"no robot fell under {SIZES[name][1]} random actions"


def test_standing_still_under_zero_actions(flat):
    """The home pose held by the PD servos: upright after 2 s (100 control steps) of zero actions."""
    step = jax.jit(flat.step)
    state = jax.jit(flat.reset)(jax.random.key(0))
    for _ in range(100):
        state = step(state, jnp.zeros(12))
    assert not bool(state.done)
    assert float(flat.sensor(state.physics, "upvector")[2]) > 0.95


def test_tracking_errors_are_the_episodes_means(flat):
    """The success measures an evaluation logs: the mean, over the episode's steps so far, of the planar velocity
    error and the yaw-rate error against the step's command (hand-computed from the noiseless observations: local
    velocity, gyro, command), and no fall."""
    step = jax.jit(flat.step)
    state = jax.jit(flat.reset)(jax.random.key(1))
    lin, ang = [], []
    for _ in range(6):
        state = step(state, jnp.zeros(12))
        obs = np.asarray(state.obs)
        command = obs[45:48]  # the command of the step (Playground's: before the step's update)
        lin.append(np.linalg.norm(command[:2] - obs[0:2]))
        ang.append(abs(command[2] - obs[5]))
    np.testing.assert_allclose(float(state.metrics["tracking/lin_vel_error"]), np.mean(lin), rtol=1e-12)
    np.testing.assert_allclose(float(state.metrics["tracking/ang_vel_error"]), np.mean(ang), rtol=1e-12)
    assert float(state.metrics["fell"]) == 0.0 and np.mean(lin) > 0


def test_domain_randomization_is_playgrounds_on_both_engines(flat):
    """`randomize` draws Playground's ranges (floor friction U(0.4, 1), masses times U(0.9, 1.1) and the trunk's
    plus U(-1, 1) kg, joint offsets within 0.05 rad, the trunk's centre of mass within 5 cm); `MujocoEnv` with the
    same key gives each simulation the same variant (MuJoCo's batch, per-simulation fields), and both engines then
    step alike."""

    n, key = 2, jax.random.key(5)
    models = jax.vmap(flat.randomize, in_axes=(None, 0))(flat.model, jax.random.split(key, n))
    base = flat.model
    friction = np.asarray(models.geom_friction[:, flat.mj.geom("floor").id, 0])
    assert ((friction >= 0.4) & (friction <= 1.0)).all() and friction[0] != friction[1]
    ratio = np.asarray(models.body_mass[:, 2:] / base.body_mass[2:])
    assert ((ratio >= 0.9) & (ratio <= 1.1)).all() and ratio.std() > 0.01
    assert (np.abs(np.asarray(models.body_mass[:, flat.trunk] - base.body_mass[flat.trunk])) <= 1.1 * 1.1 + 1).all()
    assert (np.abs(np.asarray(models.qpos0[:, 7:] - base.qpos0[7:])) <= 0.05).all()
    assert (np.abs(np.asarray(models.body_ipos[:, flat.trunk] - base.body_ipos[flat.trunk])) <= 0.05).all()
    engines.randomized_engines_agree(flat, key, n)


def test_mujoco_c_replays_the_task(flat):
    """hurtle's task on MuJoCo C (`MujocoEnv`, float64) gives the JAX task's observations, privileged observations,
    reward terms and terminations: both reset from the same keys (the host splits each environment's key as the
    JAX reset's caller would), then step under the same random actions."""
    from hurtle.hostenvs import MujocoEnv

    n, seed = 3, 1
    host = MujocoEnv(flat, n, nthread=1)
    obs = host.reset(seed=seed)
    subkeys = jax.vmap(jax.random.split)(jax.random.split(jax.random.PRNGKey(seed), n))[:, 1]
    states = jax.jit(jax.vmap(flat.reset))(subkeys)
    close = dict(rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(obs, states.obs, **close)
    np.testing.assert_allclose(host.reset_privileged_obs, states.privileged_obs, **close)
    step = jax.jit(jax.vmap(flat.step))
    rng = np.random.default_rng(0)
    for t in range(20):
        action = rng.uniform(-0.5, 0.5, (n, 12))
        out = host.step(action)
        states = step(states, jnp.asarray(action))
        assert not out.ended.any()
        np.testing.assert_allclose(out.final_obs, states.obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.final_privileged_obs, states.privileged_obs, **close, err_msg=f"step {t}")
        np.testing.assert_allclose(out.reward, states.reward, **close)
        for key in G.SCALES:
            np.testing.assert_allclose(out.metrics[f"reward/{key}"], states.metrics[f"reward/{key}"], **close)
    host.close()


def _envpool_go1(envpool, n: int, **config):
    return envpool.make(
        "MuJoCoPlayground/Go1JoystickFlatTerrain-v1", env_type="gymnasium", num_envs=n, seed=0, **config
    )


def test_equals_envpools_twin(flat):
    """EnvPool 1.2.5's C++ Go1JoystickFlatTerrain (envpool_twin.VERSION; it bundles its own MuJoCo C), noise off: from
    EnvPool's reset states (rebuilt in hurtle: envpool_twin.base_state) and with EnvPool's commands, 100 steps of the
    same random actions give the same observation, privileged observation, every reward term (EnvPool's
    `reward_<term>`, scaled, not times the control period) and termination within 1e-5."""
    envpool = twin.envpool_or_skip()
    n, steps = 4, 100
    pool = _envpool_go1(envpool, n, noise_level=0.0)
    obs, info = pool.reset()
    rows = [
        twin.base_state(
            flat.mj, flat.home_qpos, flat.default_pose + p[63:75], p[75:87], "imu", gyro=p[48:51],
            world_angvel=p[60:63], local_linvel=p[57:60],
        )
        for p in obs["privileged_state"]
    ]  # fmt: skip
    start = twin.starts(flat, [q for q, _ in rows], [v for _, v in rows])

    def follow(state, info):
        return twin.with_info(state, command=info["command"], steps_until_next_cmd=info["steps_until_next_cmd"])

    state = follow(twin.stack(start), info)
    observe = jax.jit(jax.vmap(lambda s: flat._observe(s.physics, s.info)[:2]))
    ours, privileged = observe(state)
    np.testing.assert_allclose(ours, obs["state"], atol=1e-9)
    np.testing.assert_allclose(privileged, obs["privileged_state"], atol=1e-9)
    assert twin.compare(flat, pool, state, info, steps, 0.5, follow, quirk=_pre_update_command) >= 200


COMMAND = slice(45, 48)  # the command's place in `state` (and in `privileged_state`, which begins with it)


def _pre_update_command(obs, info, last_info):
    """EnvPool's Go1 writes its observation after the step's command update, Playground's before it (hurtle's,
    Playground's): on a step whose command was redrawn EnvPool's observation shows the new one. Put back the one
    the step ran with (EnvPool's previous `info["command"]`)."""
    for key in ("state", "privileged_state"):
        obs[key][:, COMMAND] = last_info["command"]
    return obs
