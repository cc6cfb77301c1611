"""`grasp`: a four-digit hand on an actuated wrist picks a ball off the table and carries it to targets in the air
(assets/grasp.xml, hurtle's own hand: three fingers and an opposing thumb, 12 finger joints, the wrist's slides and
yaw moving it in 3D under physics); each target reached gives way to a new one (`hurtle.envs.targets`).

Action (16, in [-1, 1]), at 50 Hz (5 physics steps of 4 ms): changes to the servos' targets
(`hurtle.envs.manipulation.commands`), as MuJoCo Playground's LEAP hand takes them: the wrist's x, y, z and yaw
(1 cm and 0.05 rad per step at full command: 0.5 m/s and 2.5 rad/s; a target kept within 4 cm and 0.2 rad of its
joint), then the fingers' joints (f1, f2, f3: mcp, pip, dip; the thumb: opposition, mcp, ip; 0.05 rad per step, a
target kept within 0.6 rad of its joint: a finger closed on the ball pushes with its servo's full force). A zero
action holds the hand as it is: exploration's noise does not half-close the fingers before they reach the ball,
and a closed hand stays closed without the policy holding it so.

Observation (71): the hand's position (3), yaw as sin, cos (2), the wrist's velocities (4), the servos' targets
minus their joints (16), finger joint angles (12) and velocities x 0.1 (12), the ball's position (3) and velocity
(3), the ball minus the grip point (3: where the ball's centre sits in the open hand lowered around it, 9.5 cm
under the hand) and its tanh at 5 cm (3), the target (3), target minus ball (3), and which fingertips touch the
ball (4: f1, f2, f3, thumb, from the engine's contacts).

Reward terms: `reach`, 0.5 x (1 - tanh(d / 10 cm)), d the grip point's distance to the ball (robosuite's reaching
term: paid every step the hand stays at the ball; highest with the open hand around it, ready to close), 0.5 while
the ball is grasped (below); `touch`, 0.1 per fingertip touching the ball (the thumb and the fingers alike, 0.4 with
all four) while the ball is clear of the tray's rim (a ball pinned against a wall pays nothing); `lift`, while the
thumb and a finger touch the ball (`grasped`) and it is clear of the tray's rim, 3 x its bottom's height over the
table over 2 cm, at most 3 (3 while `held`, below: graded so that the first millimetres of a lift pay; it outweighs
touching a ball left on the table several times over); `carry`, while the ball is held, 2 x its velocity towards
the target (m/s, capped at 1: nothing for pushing or knocking it along the table); `hit`, 10 when the ball's centre
comes within 5 cm of the target; `ctrl`, minus 1e-3 |action|^2.

Reset: the hand 25 cm up, open, over a random place; the ball at rest on the table uniform over x, y in [-0.15,
0.15] m; targets uniform over x, y in [-0.15, 0.15] and 10-30 cm above the table. Training curricula (shares of
episodes, 0 as registered; the PPO preset trains with `start_in_hand=0.2 start_over=0.2 start_held=0.2`, `--env-options`
to change them; evaluation runs the task as registered): `start_in_hand`, the open hand lowered around the
ball, its palm over it and the fingers ready to close; `start_over`, the same hand straight over the ball, up to 12
cm higher (between the in-hand and the registered heights); `start_held`, the ball already held in the closed hand
10-20 cm over the table with the servos at the scripted grasp's targets (a reverse curriculum: the end of a grasp
first). The table is a tray whose rim (6 cm high, 71 cm square inside) keeps a knocked ball within reach; the
episode ends when the ball leaves it (its centre more than 0.4 m out along x or y), else after 1,000 steps (20 s).

Success measures: targets reached per episode (`targets/reached`) and the seconds the ball was held off the table
(`ball/held_s`: its bottom 2 cm or more above the table, clear of the rim, with the thumb and a finger on it).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

import hurtle.physics as hp
from hurtle.envs.base import Box, State
from hurtle.envs.manipulation.commands import fine, integrate
from hurtle.envs.physics_env import touching
from hurtle.envs.targets import TargetTask

TIPS = ("tip_f1", "tip_f2", "tip_f3", "tip_thumb")
AREA = 0.15  # m: the ball's and the targets' half-width over the table
# the open hand lowered around the ball on the table: the wrist's z slide, and the palm's offset from the ball (the
# thumb and fingers just touch it, about 1 mm in: the opening is a little narrower than the ball)
IN_HAND_Z = -0.12
IN_HAND_DX = (-0.002, 0.0)
# the ball held in the closed hand: the finger joints and the ball's offset from the hand body where the scripted
# grasp (tests/envs/test_grasp.py: lowered, closed with the servos at 0.9, 0.9, 0.5 and the thumb at 0, 0.9, 0.9,
# lifted) settles after 2 s; from this state the same servo targets hold the ball at any height
HELD_FINGERS = (0.1155, 0.6991, 0.4567, 0.1287, 0.6869, 0.4534, 0.1155, 0.6991, 0.4567, 0.0, -0.0693, 0.8073)
HELD_BALL = (-0.0019, 0.0, -0.0386)
HELD_HEIGHT = (0.1, 0.2)  # m: the hand body's height over the table in a held start
LIFT_HEIGHT = 0.02  # m: the ball's bottom this far over the table counts as lifted
# the servo targets where the scripted grasp closes the digits on the ball (f1, f2, f3: mcp, pip, dip; the thumb:
# opposition, mcp, ip): a held start keeps them
HELD_TARGETS = (0.9, 0.9, 0.5, 0.9, 0.9, 0.5, 0.9, 0.9, 0.5, 0.0, 0.9, 0.9)
# per control step at full command: the wrist's x, y, z (m) and yaw (rad), then each finger joint (rad); and the
# most each servo's target may lead its joint (a finger closed on the ball: 0.6 rad, its servo's force limit)
STEP = (0.01, 0.01, 0.01, 0.05) + (0.05,) * 12
LEAD = (0.04, 0.04, 0.04, 0.2) + (0.6,) * 12


class Grasp(TargetTask):
    """Pick up the ball and carry it to targets (see the module's docstring)."""

    xml_path = "assets/grasp.xml"
    n_frames = 5
    hit_radius = 0.05
    hit_bonus = 10.0
    ball_radius = 0.035

    def __init__(
        self,
        xml: str | os.PathLike | None = None,
        reach_weight: float = 0.5,
        touch_weight: float = 0.1,
        lift_weight: float = 3.0,
        carry_weight: float = 2.0,
        ctrl_cost_weight: float = 1e-3,
        start_in_hand: float = 0.0,
        start_over: float = 0.0,
        start_held: float = 0.0,
    ):
        super().__init__(xml)
        shares = {"start_in_hand": start_in_hand, "start_over": start_over, "start_held": start_held}
        for name, share in shares.items():
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"grasp: {name} is a share of episodes in [0, 1], got {share}")
        if sum(shares.values()) > 1.0:
            raise ValueError(
                f"grasp: {' + '.join(shares)} is a share of episodes, at most 1, got {sum(shares.values())}"
            )
        self.start_in_hand = float(start_in_hand)
        self.start_over = float(start_over)
        self.start_held = float(start_held)
        self.reach_weight = float(reach_weight)
        self.touch_weight = float(touch_weight)
        self.lift_weight = float(lift_weight)
        self.carry_weight = float(carry_weight)
        self.ctrl_cost_weight = float(ctrl_cost_weight)
        m = self.model
        self._hand = m.name2id("body", "hand")
        self._ball = m.name2id("body", "ball")
        self._ball_geom = m.name2id("geom", "ball")
        self._tips = jnp.asarray([m.name2id("geom", t) for t in TIPS], jnp.int32)
        self._rim = jnp.asarray([m.name2id("geom", f"rim_{side}") for side in ("px", "nx", "py", "ny")], jnp.int32)
        self._grip = m.name2id("site", "grip")
        self._ball_q = int(m.jnt_qposadr[m.body_jntadr[self._ball]])
        self._ball_v = int(m.jnt_dofadr[m.body_jntadr[self._ball]])
        lo, hi = np.asarray(m.actuator_ctrlrange, np.float64).T
        self._mid, self._half = jnp.asarray((lo + hi) / 2, self.dtype), jnp.asarray((hi - lo) / 2, self.dtype)
        self._action_space = Box(-np.ones(m.nu), np.ones(m.nu), (m.nu,), self.dtype)
        self._step = jnp.asarray(STEP, self.dtype)
        self._lead = jnp.asarray(LEAD, self.dtype)

    def control(self, data: hp.Data, action: jax.Array) -> jax.Array:
        return self._in_range(integrate(data.ctrl, data.qpos[:16], action, self._step, self._lead))

    def _in_range(self, ctrl: jax.Array) -> jax.Array:
        return jnp.clip(ctrl, self._mid - self._half, self._mid + self._half)

    def start_ctrl(self, qpos: jax.Array) -> jax.Array:
        return self._in_range(qpos[:16])  # the servos hold the start pose

    # -- what the task reads --

    def ball(self, data: hp.Data) -> jax.Array:
        return data.xpos[self._ball]

    def grip(self, data: hp.Data) -> jax.Array:
        return data.site_xpos[self._grip]

    def effector(self, data: hp.Data) -> jax.Array:
        return self.ball(data)

    def sample_target(self, key: jax.Array, data: hp.Data) -> jax.Array:
        lo = jnp.asarray([-AREA, -AREA, 0.1], self.dtype)
        hi = jnp.asarray([AREA, AREA, 0.3], self.dtype)
        return jax.random.uniform(key, (3,), self.dtype, lo, hi)

    def tip_contacts(self, data: hp.Data) -> jax.Array:
        """1 for each fingertip (TIPS) with an active contact with the ball, else 0."""
        return touching(data, self._tips, self._ball_geom).astype(self.dtype)

    def grasped(self, data: hp.Data) -> jax.Array:
        """The thumb and at least one finger on the ball."""
        tips = self.tip_contacts(data)
        return (tips[3] > 0) & (jnp.sum(tips[:3]) > 0)

    def on_rim(self, data: hp.Data) -> jax.Array:
        """The ball touches the tray's rim."""
        return jnp.any(touching(data, self._rim, self._ball_geom))

    def lifted(self, data: hp.Data) -> jax.Array:
        """How far the ball's bottom is over the table, over LIFT_HEIGHT, in [0, 1]; 0 while it touches the tray's
        rim (a ball pinned up against a wall is not lifted: policies find that first)."""
        up = jnp.clip((self.ball(data)[2] - self.ball_radius) / LIFT_HEIGHT, 0.0, 1.0)
        return jnp.where(self.on_rim(data), 0.0, up)

    def held(self, data: hp.Data) -> jax.Array:
        """The ball 2 cm or more off the table, clear of the rim, with the thumb and at least one finger on it."""
        return self.grasped(data) & (self.lifted(data) >= 1.0)

    def observation(self, data: hp.Data) -> jax.Array:
        q, v = data.qpos, data.qvel
        ball, target = self.ball(data), self.target(data)
        return jnp.concatenate(
            [
                data.xpos[self._hand],
                jnp.stack([jnp.sin(q[3]), jnp.cos(q[3])]),
                v[:4],
                data.ctrl - q[:16],
                q[4:16],
                0.1 * v[4:16],
                ball,
                v[self._ball_v : self._ball_v + 3],
                ball - self.grip(data),
                fine(ball - self.grip(data)),
                target,
                target - ball,
                self.tip_contacts(data),
            ]
        )

    def reward_terms(self, before: hp.Data, after: hp.Data, action: jax.Array) -> dict[str, jax.Array]:
        gap = jnp.linalg.norm(self.ball(after) - self.grip(after))
        to = self.target(before) - self.ball(before)
        direction = to / jnp.maximum(jnp.linalg.norm(to), 1e-6)
        velocity = (self.ball(after) - self.ball(before)) / self.dt
        grasped, clear = self.grasped(after), ~self.on_rim(after)
        return {
            "reach": self.reach_weight * jnp.where(grasped, 1.0, 1.0 - jnp.tanh(gap / 0.1)),
            "touch": jnp.where(clear, self.touch_weight * jnp.sum(self.tip_contacts(after)), 0.0),
            "lift": self.lift_weight * jnp.where(grasped, self.lifted(after), 0.0),
            "carry": jnp.where(
                self.held(after), self.carry_weight * jnp.minimum(jnp.dot(velocity, direction), 1.0), 0.0
            ),
            "ctrl": -self.ctrl_cost_weight * jnp.sum(action * action),
        }

    def terminated(self, data: hp.Data) -> jax.Array:
        away = jnp.max(jnp.abs(self.ball(data)[:2])) > 0.4  # out of the tray
        return away | ~jnp.all(jnp.isfinite(data.qpos))

    def reset_state(self, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        k_hand, k_ball, k_start, k_height, k_over = jax.random.split(key, 5)
        m = self.model
        dt = self.dtype
        qpos = jnp.asarray(m.qpos0, dt)
        hand = jax.random.uniform(k_hand, (2,), dt, -AREA, AREA)
        ball = jax.random.uniform(k_ball, (2,), dt, -AREA, AREA)
        u = jax.random.uniform(k_start, (), dt)
        ends = np.cumsum([self.start_in_hand, self.start_over, self.start_held])
        start = jnp.sum(u >= jnp.asarray(ends, dt))  # 0 in hand, 1 over, 2 held, 3 as registered
        registered = qpos.at[:2].set(hand).at[self._ball_q : self._ball_q + 2].set(ball)
        # around the ball: the palm over it, the grip point at its centre
        around = registered.at[:3].set(
            jnp.concatenate([ball + jnp.asarray(IN_HAND_DX, dt), jnp.asarray([IN_HAND_Z], dt)])
        )
        # over it: the same pose raised by up to -IN_HAND_Z (as high as the registered start)
        over = around.at[2].add(jax.random.uniform(k_over, (), dt, 0.0, -IN_HAND_Z))
        # in the closed hand, lifted: the hand at a random height, the ball where the scripted grasp holds it
        body = jnp.concatenate(
            [ball - jnp.asarray(HELD_BALL[:2], dt), jax.random.uniform(k_height, (1,), dt, *HELD_HEIGHT)]
        )
        wrist = body - jnp.asarray(m.body_pos[self._hand], dt)
        in_fist = (
            registered.at[:3]
            .set(wrist)
            .at[4:16]
            .set(jnp.asarray(HELD_FINGERS, dt))
            .at[self._ball_q : self._ball_q + 3]
            .set(body + jnp.asarray(HELD_BALL, dt))
        )
        qpos = jnp.stack([around, over, in_fist, registered])[start]
        # the servos hold the start pose; the digits closed on the ball (a held start) keep the grasp's targets
        held = jnp.concatenate([in_fist[:4], jnp.asarray(HELD_TARGETS, dt)])
        ctrl = jnp.where(start == 2, self._in_range(held), self.start_ctrl(qpos))
        return qpos, jnp.zeros(m.nv, dt), ctrl

    # -- the time the ball was held, an episode's success measure beside the targets --

    def begin(self, state: State, key: jax.Array) -> State:
        state = super().begin(state, key)
        zero = jnp.zeros((), self.dtype)
        return state.replace(info={**state.info, "held_s": zero}, metrics={**state.metrics, "ball/held_s": zero})

    def advance(self, state: State, after: hp.Data, action: jax.Array) -> State:
        new = super().advance(state, after, action)
        held = state.info["held_s"] + self.dt * self.held(new.physics).astype(self.dtype)
        return new.replace(info={**new.info, "held_s": held}, metrics={**new.metrics, "ball/held_s": held})
