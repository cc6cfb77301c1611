"""PhysicsEnv on the test reacher: reset_to, n_frames physics steps against MuJoCo C, reward terms as metrics,
the model file override, and domain randomisation over Model fields."""

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.envs as envs
from hurtle.envs import PhysicsEnv, wrappers
from tests.envs.conftest import JIT_STEP, task
from tests.envs.tasks import TARGET, Reacher

XML = os.path.join(os.path.dirname(__file__), "reacher.xml")
# float64 physics against MuJoCo C over a few steps (the engine's own parity is ~1e-12)
PHYSICS_TOL = 1e-10

JIT_RESET_TO = jax.jit(lambda env, qpos, qvel: env.reset_to(qpos, qvel), static_argnums=0)


def mujoco_steps(qpos, qvel, ctrl, n, body_mass=None):
    """MuJoCo C's `MjData` after `n` steps from (qpos, qvel) with `ctrl` held (after `mj_forward` if n is 0)."""
    m = mujoco.MjModel.from_xml_path(XML)
    if body_mass is not None:
        m.body_mass[:] = body_mass
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl
    for _ in range(n):
        mujoco.mj_step(m, d)
    if n == 0:
        mujoco.mj_forward(m, d)
    return d


def reacher_obs(d):
    """The reacher's observation computed from MuJoCo's data."""
    return np.concatenate([np.cos(d.qpos), np.sin(d.qpos), d.qvel, d.site_xpos[0, :2] - np.array(TARGET)])


def test_reset_to_and_step_match_mujoco():
    env = task("reacher")
    qpos, qvel, action = np.array([0.3, -0.7]), np.array([0.5, -0.2]), np.array([0.8, -1.0])
    state = JIT_RESET_TO(env, qpos, qvel)
    np.testing.assert_array_equal(np.asarray(state.physics.qpos), qpos)
    start = mujoco_steps(qpos, qvel, 0, 0)
    np.testing.assert_allclose(np.asarray(state.obs), reacher_obs(start), atol=PHYSICS_TOL, err_msg="obs at reset")
    assert set(state.metrics) == {"reward/distance", "reward/control"} and float(state.reward) == 0.0
    assert not state.done and not state.truncation

    state = JIT_STEP(env, state, action)
    ref = mujoco_steps(qpos, qvel, action, env.n_frames)
    np.testing.assert_allclose(np.asarray(state.physics.qpos), ref.qpos, atol=PHYSICS_TOL, err_msg="qpos")
    np.testing.assert_allclose(np.asarray(state.physics.qvel), ref.qvel, atol=PHYSICS_TOL, err_msg="qvel")
    np.testing.assert_allclose(np.asarray(state.obs), reacher_obs(ref), atol=PHYSICS_TOL, err_msg="obs")
    to_target = ref.site_xpos[0, :2] - np.array(TARGET)
    distance, control = -np.linalg.norm(to_target), -0.1 * np.sum(action**2)
    np.testing.assert_allclose(float(state.metrics["reward/distance"]), distance, atol=PHYSICS_TOL)
    np.testing.assert_allclose(float(state.metrics["reward/control"]), control, rtol=1e-15)
    np.testing.assert_allclose(float(state.reward), distance + control, atol=PHYSICS_TOL)
    assert float(state.physics.time) == pytest.approx(env.dt)


def test_spaces_and_errors(tmp_path):
    env = task("reacher")
    assert env.action_space.shape == (2,) and np.all(env.action_space.high == 1.0)
    assert env.observation_size == 8 and env.action_size == 2 and env.dt == pytest.approx(0.02)
    with pytest.raises(ValueError, match=r"expected \(2,\)"):
        env.step(None, jnp.zeros(3))
    with pytest.raises(
        ValueError, match=r"qpos \(3,\), qvel \(2,\) and ctrl \(2,\), expected \(2,\), \(2,\) and \(2,\)"
    ):
        env.reset_to(np.zeros(3))
    with pytest.raises(ValueError, match=r"ctrl \(3,\), expected \(2,\), \(2,\) and \(2,\)"):
        env.reset_to(np.zeros(2), ctrl=np.zeros(3))
    with pytest.raises(ValueError, match="no model file"):
        type("NoModel", (PhysicsEnv,), {})()
    four = type("FourValues", (Reacher,), {"reset_state": lambda self, key: (*Reacher.reset_state(self, key), 0, 0)})
    with pytest.raises(ValueError, match=r"FourValues.reset_state returned 4 values"):
        four(xml=XML).reset(jax.random.key(0))
    with pytest.raises(FileNotFoundError, match="missing.xml"):
        Reacher(xml=str(tmp_path / "missing.xml"))
    assert Reacher(n_frames=5).dt == pytest.approx(0.05)


def test_xml_override_runs_the_task_on_another_model(tmp_path):
    longer = tmp_path / "long_reacher.xml"
    longer.write_text(open(XML).read().replace('body name="lower" pos="0.1 0 0"', 'body name="lower" pos="0.2 0 0"'))
    env = Reacher(xml=str(longer))
    assert env.model.source == str(longer)
    assert float(env.model.body_pos[2, 0]) == 0.2 and float(task("reacher").model.body_pos[2, 0]) == 0.1
    assert env.observation_space == task("reacher").observation_space


def heavier(model, key):
    """Scale every body's mass by a random factor in [0.5, 2]."""
    return model.replace(body_mass=model.body_mass * jax.random.uniform(key, (), model.body_mass.dtype, 0.5, 2.0))


def test_domain_randomization_steps_each_model():
    stack = wrappers.wrap_for_training(task("reacher"), 3, randomize=heavier, randomize_key=jax.random.key(7))
    assert isinstance(stack, wrappers.DomainRandomization) and isinstance(stack.env, wrappers.AutoReset)
    # the bare task keeps the compiled program small; wrappers in between are covered by with_model's test
    env = wrappers.DomainRandomization(task("reacher"), heavier, jax.random.key(7), batch_size=3)
    axes = jax.tree.leaves(env.in_axes)
    assert env.in_axes.body_mass == 0 and axes.count(0) == 1, "only the randomised field is batched"
    masses = np.asarray(env.models.body_mass)
    assert masses.shape == (3, 3) and len({tuple(m) for m in masses}) == 3

    qpos, qvel, action = np.array([0.3, -0.7]), np.zeros(2), np.array([1.0, 1.0])
    state = jax.jit(lambda q, v: env.reset_to(q, v))(np.tile(qpos, (3, 1)), np.tile(qvel, (3, 1)))
    state = JIT_STEP(env, state, np.tile(action, (3, 1)))
    for i in range(3):
        ref = mujoco_steps(qpos, qvel, action, 2, body_mass=masses[i])
        np.testing.assert_allclose(np.asarray(state.physics.qvel[i]), ref.qvel, atol=PHYSICS_TOL, err_msg=f"env {i}")


def test_with_model_replaces_the_model_under_wrappers():
    env = wrappers.AutoReset(wrappers.EpisodeWrapper(task("reacher"), 200))
    model = task("reacher").model
    lighter = model.replace(body_mass=model.body_mass * 0.5)
    copy = env.with_model(lighter)
    assert copy.unwrapped.model is lighter and env.unwrapped.model is model
    assert copy.episode_length == 200 and copy is not env and copy.env is not env.env


BALLS = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body pos="-0.3 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
    <body pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
    <body pos="0.3 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody>
</mujoco>
"""


class Balls(PhysicsEnv):
    """Three spheres resting on a plane: three contacts at every step."""

    n_frames = 2

    def observation(self, data):
        return data.qpos

    def reward_terms(self, before, after, action):
        return {"zero": jnp.zeros((), after.qpos.dtype)}


def test_contact_cap_counts_dropped_contacts_in_metrics():
    free = Balls(BALLS)
    capped = free.with_contact_cap(1)
    assert not free.contact_capped and capped.contact_capped and capped.model.nconmax == 1
    key = jax.random.key(0)
    assert "ncon_dropped" not in jax.eval_shape(free.reset, key).metrics
    first, s_capped = jax.jit(
        lambda k: (s := capped.reset(k), capped.step(capped.step(s, jnp.zeros(0)), jnp.zeros(0)))
    )(key)
    assert int(first.metrics["ncon_dropped"]) == 0
    # two of the three resting contacts dropped in each of the step's two physics steps
    assert int(s_capped.metrics["ncon_dropped"]) == 4
    # through make: physics tasks take the cap, others refuse it by name
    assert envs.make("ant", nconmax=8).unwrapped.model.nconmax == 8
    with pytest.raises(ValueError, match="cartpole: nconmax applies to physics tasks"):
        envs.make("cartpole", nconmax=8)
