"""`grasp` and its hand (hurtle/envs/manipulation/assets/grasp.xml): the model's digits and joints, MuJoCo C parity
with contacts, and a scripted grasp through the task's actions: the fingertips' contacts, the reward terms, the
time held and a target reached."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.envs as envs
import hurtle.physics as hp
from hurtle.envs.manipulation.grasp import HELD_TARGETS
from tests.physics import parity as P

GRASP = os.path.join(os.path.dirname(envs.__file__), "manipulation", "assets", "grasp.xml")


def command(task, s, servos: np.ndarray) -> jax.Array:
    """The action that drives the servos' targets towards `servos` (changes to the targets: at most a full command
    a step)."""
    return jnp.asarray(np.clip((servos - np.asarray(s.physics.ctrl)) / np.asarray(task._step), -1, 1), s.obs.dtype)


def test_hand_model_matches_mujoco():
    """Three fingers and a thumb, 12 finger servos and 4 on the wrist; hurtle's forward equals MuJoCo's at random
    states with the hand, ball and table in contact."""
    mm = mujoco.MjModel.from_xml_path(GRASP)
    assert mm.nu == 16 and all(mm.actuator(i).name.startswith(("f", "thumb")) for i in range(4, 16))
    assert all(mm.actuator_biastype[i] == mujoco.mjtBias.mjBIAS_AFFINE for i in range(16))  # position servos
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    rng = np.random.default_rng(4)
    mjds = []
    for _ in range(4):
        d = P.random_state(mm, rng)
        d.qpos[:4] = rng.uniform(-0.05, 0.05, 4) + [0, 0, -0.13, 0]  # the fingers around the ball
        d.qpos[16:19] = [0, 0, 0.03]
        mjds.append(d)
    model = hp.from_mujoco(mm, source=GRASP)
    out = P.batched(hp.forward)(model, P.batch_data(model, mm, mjds))
    for d in mjds:
        mujoco.mj_forward(mm, d)
    assert sum(d.ncon for d in mjds) > 4
    P.assert_parity(P.compare(model, out, mm, mjds), label="grasp")


def test_scripted_grasp_lifts_the_ball_to_a_target():
    """Over the ball, down, close, lift over a second: the thumb and fingers touch the ball (`touch` > 0), the ball
    rises, stays in the hand for 2 s and counts as held, and a target put at the lifted ball is reached (bonus
    10). A ball knocked across the table stops at the tray's rim."""
    env = envs.make("grasp")
    task = env.unwrapped
    step = jax.jit(env.step)
    s = jax.jit(env.reset)(jax.random.key(0))
    assert s.obs.shape == (71,) and env.action_space.shape == (16,)
    assert {"reward/reach", "reward/touch", "reward/carry", "reward/ctrl", "ball/held_s"} <= set(s.metrics)
    ball = np.asarray(task.ball(s.physics))
    ctrl = np.zeros(16)
    ctrl[:3] = [ball[0], ball[1], 0.0]

    def hold(s, c, n):
        for _ in range(n):
            s = step(s, command(task, s, c))
        return s

    s = hold(s, ctrl, 50)
    ctrl[2] = -0.13
    s = hold(s, ctrl, 100)
    assert float(s.metrics["reward/lift"]) == 0.0  # on the table
    ctrl[4:13] = [0.9, 0.9, 0.5] * 3
    ctrl[13:16] = [0.0, 0.9, 0.9]
    s = hold(s, ctrl, 100)
    tips = np.asarray(task.tip_contacts(s.physics))
    assert tips[3] == 1 and tips[:3].sum() >= 2  # the thumb opposes the fingers
    assert float(s.metrics["reward/touch"]) == pytest.approx(0.1 * tips.sum())
    np.testing.assert_array_equal(s.obs[-4:], tips)
    assert float(s.metrics["reward/reach"]) == 0.5  # grasped: the full reach term
    # the same grasp with the ball up against the tray's rim pays no touch (policies pin it there first)
    q = s.physics.qpos.at[0].add(0.335 - float(task.ball(s.physics)[0]))  # closed, the fingers raised it 4 cm
    q = q.at[task._ball_q].set(0.335)
    forward = jax.jit(hp.forward)
    rim = forward(task.model, s.physics.replace(qpos=q))
    assert bool(task.on_rim(rim)) and np.asarray(task.tip_contacts(rim)).sum() == tips.sum()
    assert float(task.reward_terms(rim, rim, jnp.zeros(16, s.obs.dtype))["touch"]) == 0.0
    ctrl[2] = 0.1  # lift, 23 cm at 0.5 m/s at most
    s = hold(s, ctrl, 150)
    np.testing.assert_array_equal(task.tip_contacts(s.physics), 1.0)  # still in all four fingertips
    lifted = np.asarray(task.ball(s.physics))
    assert lifted[2] > 0.2 and not bool(s.done)
    assert float(s.metrics["ball/held_s"]) > 2.0 and float(s.metrics["reward/lift"]) == 3.0
    s = s.replace(physics=task._place(s.physics, task.ball(s.physics)))
    hit = step(s, command(task, s, ctrl))
    assert float(hit.metrics["reward/hit"]) == 10.0 and float(hit.metrics["targets/reached"]) == 1.0
    target = np.asarray(task.target(hit.physics))
    assert np.all(np.abs(target[:2]) <= 0.15) and 0.1 <= target[2] <= 0.3
    # a ball knocked at 2 m/s stays in the tray: the rim stops it and the episode goes on
    s = jax.jit(env.reset)(jax.random.key(1))
    v = s.physics.qvel.at[task._ball_v : task._ball_v + 2].set(jnp.asarray([2.0, 1.0], s.obs.dtype))
    s = s.replace(physics=s.physics.replace(qvel=v))
    xs = []
    for _ in range(100):
        s = step(s, jnp.zeros(16, s.obs.dtype))
        xs.append(np.asarray(task.ball(s.physics))[:2])
        assert not bool(s.done)
    # it reached the rim and went no further than the soft contact lets a 2 m/s ball into it (6 mm)
    assert 0.3 < np.max(np.abs(xs)) < 0.355 - 0.035 + 0.01
    # up against a wall the ball does not count as lifted (pinned there, it is not held); in the air it does
    for x, lifted in ((0.321, 0.0), (0.0, 1.0)):
        q = s.physics.qpos.at[task._ball_q : task._ball_q + 3].set(jnp.asarray([x, 0.0, 0.058], s.obs.dtype))
        assert float(task.lifted(forward(task.model, s.physics.replace(qpos=q)))) == lifted, x


def test_start_in_hand_and_over_curricula():
    """`start_in_hand=0.4 start_over=0.3`: about 40% of the resets put the open hand around the ball (the grip point
    at its centre, the digits touching it 1 mm in at most: no finger pressed into the ball or the table), 30% the
    same hand straight over it, up to 12 cm higher (2 mm in at most), the rest 25 cm up as registered; a share
    outside [0, 1], or shares summing over 1, are refused."""
    task = envs.make("grasp", start_in_hand=0.4, start_over=0.3).unwrapped
    s = jax.jit(jax.vmap(task.reset))(jax.random.split(jax.random.key(1), 256))
    ball, grip = np.asarray(jax.vmap(task.ball)(s.physics)), np.asarray(jax.vmap(task.grip)(s.physics))
    z, above = np.asarray(s.physics.qpos[:, 2]), np.all(np.abs(grip - ball - [-0.002, 0, 0])[:, :2] < 1e-6, axis=1)
    in_hand, over = above & np.isclose(z, -0.12, rtol=0, atol=1e-9), above & ~np.isclose(z, -0.12, rtol=0, atol=1e-9)
    registered = ~above
    assert 0.3 < in_hand.mean() < 0.5 and 0.2 < over.mean() < 0.4
    np.testing.assert_allclose(grip[in_hand] - ball[in_hand], [[-0.002, 0, 0]] * in_hand.sum(), atol=1e-6)
    assert np.all((z[over] > -0.12) & (z[over] <= 0.0)) and np.max(z[over]) > -0.02
    np.testing.assert_array_equal(z[registered], 0.0)
    c = s.physics.contact
    dist = np.min(np.where(c.active, c.dist, 0.0), axis=1)
    assert np.all(dist[in_hand] > -1.1e-3) and np.all(dist[over] > -2.1e-3)
    assert envs.make("grasp").unwrapped.start_in_hand == 0.0
    with pytest.raises(ValueError, match="start_in_hand"):
        envs.make("grasp", start_in_hand=1.5)
    with pytest.raises(ValueError, match="start_in_hand \\+ start_over \\+ start_held"):
        envs.make("grasp", start_in_hand=0.6, start_held=0.6)


def test_start_held_curriculum_holds_the_ball():
    """`start_held=1`: every reset has the ball in the closed hand 10-20 cm over the table; with the scripted
    grasp's servo targets the hand keeps it there for 2 s, held all along (`lift` 3 per step, `ball/held_s` 2 s),
    and moving the hand towards the target pays `carry`; opened, the hand drops the ball and neither pays."""
    env = envs.make("grasp", start_held=1.0)
    task = env.unwrapped
    s = jax.jit(env.reset)(jax.random.key(3))
    ball = np.asarray(task.ball(s.physics))
    assert 0.1 - 0.04 <= ball[2] <= 0.2 - 0.03
    # the finger servos start at the scripted grasp's targets (not at the joints, which would let go), the wrist's
    # at its joints
    np.testing.assert_allclose(np.asarray(s.physics.ctrl)[4:], HELD_TARGETS, rtol=0, atol=1e-6)
    np.testing.assert_allclose(np.asarray(s.physics.ctrl)[:4], np.asarray(s.physics.qpos[:4]), rtol=0, atol=1e-6)
    ctrl = np.zeros(16)
    ctrl[:4] = np.asarray(s.physics.qpos[:4])
    ctrl[4:13] = [0.9, 0.9, 0.5] * 3
    ctrl[13:16] = [0.0, 0.9, 0.9]
    target = np.asarray(task.target(s.physics))
    step = jax.jit(env.step)
    carry = 0.0
    for i in range(100):
        c = ctrl.copy()
        if i >= 50:  # the second second: the hand moves 5 cm towards the target
            to = target - ball
            c[:3] += 0.05 * min(1.0, (i - 50) / 25) * to / np.linalg.norm(to)
        s = step(s, command(task, s, c))
        assert bool(task.held(s.physics)) and float(s.metrics["reward/lift"]) == 3.0, i
        carry += float(s.metrics["reward/carry"])
    assert float(s.metrics["ball/held_s"]) == pytest.approx(2.0, abs=1e-4)
    assert carry > 2.5  # 5 cm towards the target: 2 x 0.05 m / 0.02 s (per step, summed), about 5
    ctrl[4:16] = np.asarray(task._mid - task._half)[4:16]  # open every digit
    ctrl[:3] = np.asarray(s.physics.qpos[:3])
    for _ in range(50):
        s = step(s, command(task, s, ctrl))
    assert not bool(task.held(s.physics))
    assert float(s.metrics["reward/lift"]) == 0.0 and float(s.metrics["reward/carry"]) == 0.0
