"""`fetch` and its quadruped (hurtle/envs/locomotion/assets/quadruped.xml): the model's sizes, MuJoCo C parity
with contacts, the egocentric observation, the reward terms, targets and termination."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import hurtle.envs as envs
from tests.physics import parity as P

QUADRUPED = os.path.join(os.path.dirname(envs.__file__), "locomotion", "assets", "quadruped.xml")


def test_quadruped_model_stands_and_matches_mujoco():
    """13 kg, 12 servos with their torque limits; MuJoCo C keeps it standing on its servos for 4 s; hurtle's forward
    equals MuJoCo's at random states (feet and torso on the floor in some)."""
    mm = mujoco.MjModel.from_xml_path(QUADRUPED)
    assert mm.nu == 12 and mm.nq == 19
    np.testing.assert_allclose(mm.body_subtreemass[1], 13.04)
    np.testing.assert_allclose(np.abs(mm.actuator_forcerange[:, 1]), [23.7, 23.7, 35.5] * 4)
    md = mujoco.MjData(mm)
    mujoco.mj_resetDataKeyframe(mm, md, 0)
    for _ in range(1000):
        mujoco.mj_step(mm, md)
    assert 0.22 < md.qpos[2] < 0.3 and md.ncon == 4 and np.abs(md.qvel).max() < 0.05
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model, out, mjds = P.forward_at_random_states(mm, nstates=4, seed=3, source=QUADRUPED)
    assert sum(d.ncon for d in mjds) > 0
    P.assert_parity(P.compare(model, out, mm, mjds), label="quadruped")


def test_fetch_observes_rewards_and_moves_targets():
    """Targets 2-15 m away in every direction; the observation's target heading is in the torso's frame; the
    standing robot feels its four feet; `velocity` is the torso's speed towards the target; a target reached
    (within 0.5 m) pays 10 and moves on; a flipped torso ends the episode."""
    env = envs.make("fetch")
    task = env.unwrapped
    reset, step = jax.jit(jax.vmap(env.reset)), jax.jit(env.step)
    states = reset(jax.random.split(jax.random.key(0), 128))
    assert states.obs.shape == (128, 53) and env.action_space.shape == (12,)
    to = np.asarray(states.physics.mocap_pos[:, 0, :2] - states.physics.xpos[:, 1, :2])
    dist = np.linalg.norm(to, axis=1)
    assert np.all((dist >= 2 - 1e-6) & (dist <= 15 + 1e-6)) and np.ptp(np.arctan2(to[:, 1], to[:, 0])) > 6
    np.testing.assert_allclose(states.obs[:, 2], dist / 10, rtol=1e-5)
    for b in range(4):  # the heading, rotated by the torso's yaw, is the world direction to the target
        rot = np.asarray(states.physics.xmat[b, 1]).reshape(3, 3)
        heading = rot[:2, :2] @ np.asarray(states.obs[b, :2])
        np.testing.assert_allclose(heading, to[b] / dist[b], atol=1e-5)

    s = jax.tree.map(lambda x: x[0], states)
    zero = jnp.zeros(12, s.obs.dtype)
    for _ in range(25):  # settle on the servos
        s = step(s, zero)
    assert not bool(s.done)
    np.testing.assert_array_equal(s.obs[-4:], 1.0)  # four feet on the floor
    rot = np.asarray(s.physics.xmat[1]).reshape(3, 3)
    np.testing.assert_allclose(s.obs[3:6], rot.T @ [0, 0, -1], atol=1e-6)  # gravity in the torso's frame
    assert s.obs[5] < -0.95  # standing: nearly along the torso's -z

    pushed = s.replace(physics=s.physics.replace(qvel=s.physics.qvel.at[:2].set(task.to_target(s.physics)[:2])))
    new = step(pushed, zero)  # shoved towards the target at its distance per second
    moved = np.asarray(task.effector(new.physics) - task.effector(pushed.physics))
    direction = np.asarray(task.to_target(pushed.physics))
    expected = min(moved @ direction / np.linalg.norm(direction) / task.dt, 2.0)
    np.testing.assert_allclose(float(new.metrics["reward/velocity"]), expected, rtol=1e-4)

    at = s.replace(physics=task._place(s.physics, task.effector(s.physics) + jnp.asarray([0.3, 0.0, 0.0])))
    hit = step(at, zero)
    assert float(hit.metrics["reward/hit"]) == 10.0 and float(hit.metrics["targets/reached"]) == 1.0
    gap = np.linalg.norm(np.asarray(task.to_target(hit.physics)))
    assert 2 - 0.1 <= gap <= 15 + 0.1

    flipped = s.physics.qpos.at[3:7].set(jnp.asarray([0.0, 1.0, 0.0, 0.0]))  # upside down
    fallen = step(s.replace(physics=s.physics.replace(qpos=flipped)), zero)
    assert bool(fallen.done)
