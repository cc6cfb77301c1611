"""The UR5e arm model written for the manipulation tasks (hurtle/envs/manipulation/assets/ur5e.xml): its
kinematics are the UR5e's Denavit-Hartenberg chain, its masses and limits the datasheet's, and hurtle's physics
matches MuJoCo C on it with contacts."""

from __future__ import annotations

import os

import mujoco
import numpy as np
import pytest

import hurtle.envs as envs
import hurtle.physics as hp
from tests.physics import parity as P

UR5E = os.path.join(os.path.dirname(envs.__file__), "manipulation", "assets", "ur5e.xml")
DH_D = (0.1625, 0, 0, 0.1333, 0.0997, 0.0996)
DH_A = (0, -0.425, -0.3922, 0, 0, 0)
DH_ALPHA = (np.pi / 2, 0, 0, np.pi / 2, -np.pi / 2, 0)


def _dh(q):
    out = np.eye(4)
    for i in range(6):
        ct, st, ca, sa = np.cos(q[i]), np.sin(q[i]), np.cos(DH_ALPHA[i]), np.sin(DH_ALPHA[i])
        out = out @ np.array(
            [
                [ct, -st * ca, st * sa, DH_A[i] * ct],
                [st, ct * ca, -ct * sa, DH_A[i] * st],
                [0, sa, ca, DH_D[i]],
                [0, 0, 0, 1],
            ]
        )
    return out


def test_kinematics_are_the_ur5e_dh_chain():
    mm = mujoco.MjModel.from_xml_path(UR5E)
    md = mujoco.MjData(mm)
    flange = mm.site("flange").id
    for q in np.random.default_rng(0).uniform(-np.pi, np.pi, (20, 6)):
        md.qpos[:] = q
        mujoco.mj_kinematics(mm, md)
        ref = _dh(q)
        np.testing.assert_allclose(md.site_xpos[flange], ref[:3, 3], atol=1e-12)
        np.testing.assert_allclose(md.site_xmat[flange].reshape(3, 3), ref[:3, :3], atol=1e-12)


def test_datasheet_masses_limits_and_servos():
    mm = mujoco.MjModel.from_xml_path(UR5E)
    np.testing.assert_allclose(mm.body_mass[1:], [3.761, 8.058, 2.846, 1.37, 1.3, 0.365])
    np.testing.assert_allclose(mm.jnt_range, np.tile([-2 * np.pi, 2 * np.pi], (6, 1)), atol=1e-4)
    np.testing.assert_allclose(mm.actuator_gainprm[:, 0], [2000, 2000, 2000, 500, 500, 500])
    np.testing.assert_allclose(mm.actuator_forcerange[:, 1], [150, 150, 150, 28, 28, 28])


def test_hurtle_matches_mujoco_on_the_arm_with_contacts():
    """Random states (the links pressed into the table in some) and 200 steps of the servos driving the arm down
    onto the table: qacc and the trajectory are MuJoCo's."""
    mm = mujoco.MjModel.from_xml_path(UR5E)
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model, out, mjds = P.forward_at_random_states(mm, nstates=4, seed=1, source=UR5E)
    P.assert_parity(P.compare(model, out, mm, mjds, fields=("qacc_smooth", "actuator_force")), label="ur5e")
    md = mujoco.MjData(mm)
    md.qpos[:] = [0, -1.2, 1.6, -1.9, -1.57, 0]
    md.ctrl[:] = [0.4, -0.3, 2.2, -1.0, -1.57, 0.5]  # shoulder and elbow fold the tool into the table
    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 200)
    ref, contacts = P.mujoco_qpos_rollout(mm, md, 200)
    assert contacts > 0
    assert P.rel_error(qpos, ref) <= 1e-8


@pytest.fixture(scope="module")
def reach():
    import jax

    env = envs.make("ur5e_reach")
    return env, jax.jit(env.reset), jax.jit(env.step)


def test_reach_task_counts_hits_misses_and_moves_the_target(reach):
    """ur5e_reach: observation and reward terms; actions move the servos' targets by 0.1 rad per unit, kept
    within 0.25 rad of the joints; `progress` is 10 x the step's gain in distance; a target put at the tool tip
    is reached on the next step (bonus 10) and jumps; one left alone for 2 s is missed and jumps; the success
    rate counts both."""
    import jax
    import jax.numpy as jnp

    from hurtle.envs.manipulation.ur5e import SHOULDER, sample_workspace

    env, reset, step = reach
    task = env.unwrapped
    s = reset(jax.random.key(0))
    zero = jnp.zeros(6, s.obs.dtype)
    assert s.obs.shape == (30,) and env.action_space.shape == (6,)
    assert {"reward/progress", "reward/motion", "reward/hit", "targets/reached", "targets/missed"} <= set(s.metrics)
    np.testing.assert_array_equal(s.physics.ctrl, s.physics.qpos)  # the servos hold the start pose
    q0 = np.asarray(s.physics.qpos)
    a = jnp.asarray([1.0, -1.0, 0.5, 0.0, 0.2, -0.3], s.obs.dtype)
    s1 = step(s, a)
    np.testing.assert_allclose(s1.physics.ctrl, q0 + 0.1 * np.asarray(a), rtol=1e-6)
    d = lambda st: np.linalg.norm(np.asarray(task.to_target(st.physics)))  # noqa: E731
    np.testing.assert_allclose(float(s1.metrics["reward/progress"]), 10 * (d(s) - d(s1)), rtol=1e-4, atol=1e-6)
    wound = step(s.replace(physics=s.physics.replace(ctrl=s.physics.qpos + 1.0)), zero)
    np.testing.assert_allclose(wound.physics.ctrl, q0 + 0.25, rtol=1e-6)  # a target leads its joint by 0.25 at most
    assert np.all(np.isfinite(np.asarray(s1.obs)))

    s = s.replace(physics=task._place(s.physics, task.effector(s.physics)))
    hit = step(s, zero)
    assert float(hit.metrics["reward/hit"]) == 10.0 and float(hit.metrics["targets/reached"]) == 1.0
    assert float(hit.metrics["targets/time"]) == 0.0 and float(hit.metrics["targets/success"]) == 1.0
    assert np.linalg.norm(np.asarray(task.target(hit.physics)) - np.asarray(task.effector(s.physics))) > 0.02

    far = jnp.asarray([0.0, 0.0, 5.0], s.obs.dtype)  # out of reach: missed after 2 s = 50 steps
    s = hit.replace(physics=task._place(hit.physics, far))
    for n in range(1, 51):
        s = step(s, zero)
        assert float(s.metrics["targets/missed"]) == (n == 50)
    assert float(s.metrics["targets/time"]) == 0.0 and float(s.metrics["targets/success"]) == 0.5
    assert np.linalg.norm(np.asarray(task.target(s.physics)) - np.asarray(far)) > 1.0  # a new target

    targets = np.asarray(jax.vmap(lambda k: sample_workspace(k, np.float32))(jax.random.split(jax.random.key(1), 512)))
    radius = np.linalg.norm(targets[:, :2], axis=1)
    assert np.all((radius >= 0.3 - 1e-6) & (radius <= 0.75 + 1e-6))
    assert np.all((targets[:, 2] >= 0.1) & (targets[:, 2] <= 0.6))
    assert np.all(np.linalg.norm(targets - SHOULDER, axis=1) < 0.8)
    assert np.ptp(np.arctan2(targets[:, 1], targets[:, 0])) > 6.0  # every direction


def test_evaluation_reports_the_task_measures():
    """The runner's evaluation (here through `rollout`, which the viewer and video show) returns each episode's
    reward terms (summed: together the return) and its success measures as they stood at the end (a zero policy
    misses a target every 2 s), and the target's positions frame by frame, for the viewer to move it."""
    import dataclasses

    import jax

    from hurtle.agents import runner
    from hurtle.agents.ppo.presets import preset
    from hurtle.io import html

    config = dataclasses.replace(preset("ur5e_reach"), episode_length=120)
    act = lambda policy, obs: obs[..., :6] * 0.0  # noqa: E731
    out = runner.rollout(config, act, None, jax.random.key(3), num_episodes=3)
    m = out.metrics
    terms = sum(m[k] for k in m if k.startswith("reward/"))
    np.testing.assert_allclose(terms, out.episode_return, rtol=1e-5, atol=1e-5)
    assert np.all(m["targets/missed"] == 2) and np.all(m["targets/reached"] == 0)  # 120 steps: two 50-step timeouts
    np.testing.assert_allclose(m["targets/time"], 20 * out.dt, rtol=1e-5)
    logged = runner.eval_metrics(
        {"episode_return": out.episode_return, "episode_length": out.episode_length, "metrics": m}
    )
    assert logged["eval/targets/missed"] == 2.0 and "eval/reward/progress" in logged
    assert out.mocap_pos.shape == (3, 121, 1, 3) and out.qpos.shape == (3, 121, 6)
    jumps = np.linalg.norm(np.diff(out.mocap_pos[:, :, 0], axis=1), axis=-1) > 1e-6
    np.testing.assert_array_equal(np.argwhere(jumps[0]).ravel(), [49, 99])  # moved on steps 50 and 100
    mm = html.mj_model(out.task)
    placed = html.poses(mm, out.qpos[:, ::60], out.mocap_pos[:, ::60])
    np.testing.assert_allclose(placed[:, :, mm.body("target").id, :3], out.mocap_pos[:, ::60, 0], atol=1e-6)


def test_push_task_pushes_the_cube_to_targets():
    """ur5e_push: the cube starts on the table at rest away from the tool, the target 10-30 cm from it in the
    push area; the tool swept into the cube pushes it (the engine's contacts), `approach` and `progress` are
    the steps' gains; the cube put on the target counts a hit and the target moves 10-30 cm from it."""
    import jax
    import jax.numpy as jnp

    from hurtle.envs.manipulation.ur5e import PUSH_AREA, PUSH_HOME, PUSH_TOOL

    env = envs.make("ur5e_push")
    task = env.unwrapped
    reset, step = jax.jit(jax.vmap(env.reset)), jax.jit(env.step)
    states = reset(jax.random.split(jax.random.key(0), 64))
    cube, target = np.asarray(states.physics.xpos[:, task._cube]), np.asarray(states.physics.mocap_pos[:, 0])
    assert states.obs.shape == (64, 39)
    np.testing.assert_allclose(cube[:, 2], 0.025, atol=1e-3)
    assert np.all(np.linalg.norm(cube[:, :2] - PUSH_TOOL, axis=1) > 0.12)
    gap = np.linalg.norm(target[:, :2] - cube[:, :2], axis=1)
    assert np.all((gap >= 0.1 - 1e-6) & (gap <= 0.3 + 1e-6))
    for xy in (cube[:, :2], target[:, :2]):
        assert np.all((xy >= PUSH_AREA[:, 0] - 1e-6) & (xy <= PUSH_AREA[:, 1] + 1e-6))

    from hurtle.envs.manipulation.ur5e import sample_push_target

    keys = jax.random.split(jax.random.key(2), 64)
    out = np.asarray(jax.vmap(lambda k: sample_push_target(k, jnp.asarray([0.3, 0.6], jnp.float32), np.float32))(keys))
    np.testing.assert_allclose(np.linalg.norm(out - [0.3, 0.6], axis=1), 0.3, rtol=1e-5)  # a cube out of the area
    s = jax.tree.map(lambda x: x[0], states)
    qpos = np.asarray(s.physics.qpos).copy()
    qpos[:6] = PUSH_HOME
    qpos[6:9] = [
        PUSH_TOOL[0],
        PUSH_TOOL[1] - 0.06,
        0.025,
    ]  # the cube just beside the tool, on the side the pan sweeps to
    qpos[9:13] = [1, 0, 0, 0]
    reset_to = jax.jit(task.reset_to)
    s = reset_to(jnp.asarray(qpos)).replace(info=s.info, metrics=s.metrics)  # keeps the target's key
    start = np.asarray(task.cube(s.physics))
    pan = jnp.asarray([1.0, 0, 0, 0, 0, 0], s.obs.dtype)  # the base turns anticlockwise: the tool sweeps to -y
    for _ in range(10):
        before = s
        s = step(s, pan)
    moved = np.asarray(task.cube(s.physics)) - start
    assert moved[1] < -0.03, moved  # pushed
    assert np.all(np.isfinite(np.asarray(s.obs)))
    d = lambda st: np.linalg.norm(np.asarray(task.to_target(st.physics)))  # noqa: E731
    np.testing.assert_allclose(float(s.metrics["reward/progress"]), 20 * (d(before) - d(s)), rtol=1e-3, atol=1e-5)

    on = jnp.asarray(qpos).at[6:8].set(task.target(s.physics)[:2])
    s2 = reset_to(on).replace(info=s.info, metrics=s.metrics)
    s2 = s2.replace(physics=task._place(s2.physics, task.target(s.physics)))
    hit = step(s2, jnp.zeros(6, s.obs.dtype))
    assert float(hit.metrics["reward/hit"]) == 10.0
    moved_to = np.linalg.norm(np.asarray(task.target(hit.physics) - task.cube(hit.physics))[:2])
    assert 0.1 - 0.01 <= moved_to <= 0.3 + 0.01


def test_task_models_match_mujoco():
    """The tasks' own model files (arm, cube, targets) load with MuJoCo's compiler alone and pass the parity
    check at random states."""
    for name in ("ur5e_reach.xml", "ur5e_push.xml"):
        path = os.path.join(os.path.dirname(UR5E), name)
        mm = mujoco.MjModel.from_xml_path(path)
        mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
        model, out, mjds = P.forward_at_random_states(mm, nstates=3, seed=2, source=path)
        P.assert_parity(P.compare(model, out, mm, mjds), label=name)
