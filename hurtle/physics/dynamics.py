"""Velocity stages: `com_vel` (cvel, cdof_dot), `rne` (qfrc_bias) and `passive` forces.

Recursions over the tree become products with the model's static 0/1 ancestry matrices: a body's
velocity sums the motion of every dof that moves it; a dof's force sums the wrenches of its subtree.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.types import JNT_BALL, JNT_FREE, Data, Model

_DSBL = mujoco.mjtDisableBit


@tracing.inline_numpy
def com_vel(m: Model, d: Data) -> Data:
    """Spatial body velocities `cvel` and dof derivatives `cdof_dot` (mj_comVel)."""
    with jax.named_scope("com_vel"):
        t = m.tree
        dt = d.qpos.dtype
        if m.nv == 0:
            return d.replace(cvel=jnp.zeros((m.nbody, 6), dt))
        motion = d.cdof * d.qvel[:, None]  # (nv, 6)
        cvel = math.const_matmul(t.body_dof_anc, motion)
        before = math.const_matmul(t.dof_prefix, motion)  # velocity each dof is added to
        cdof_dot = math.cross_motion(before, d.cdof)
        # a free joint's translation is constant in the world frame
        cdof_dot = jnp.where(t.dof_free[:, None], 0.0, cdof_dot)
        return d.replace(cvel=cvel, cdof_dot=cdof_dot)


def _subtree_force(m: Model, d: Data, cfrc: jax.Array) -> jax.Array:
    """Generalised force of per-body com-frame wrenches `cfrc` (nbody, 6): cdof_i . sum of subtree."""
    if m.nv == 0:
        return jnp.zeros(0, cfrc.dtype)
    # dof i feels the wrenches of all bodies it moves: body_dof_anc[b, i]
    per_dof = math.matmul(m.tree.body_dof_anc.T.astype(cfrc.dtype), cfrc)
    return jnp.sum(d.cdof * per_dof, -1)


@tracing.inline_numpy
def rne(m: Model, d: Data) -> Data:
    """Bias forces `qfrc_bias` (Coriolis, centrifugal, gravity): RNE with zero acceleration."""
    with jax.named_scope("rne"):
        dt = d.qpos.dtype
        if m.nv:
            cacc = math.matmul(m.tree.body_dof_anc.astype(dt), d.cdof_dot * d.qvel[:, None])
        else:
            cacc = jnp.zeros((m.nbody, 6), dt)
        if not m.disabled(_DSBL.mjDSBL_GRAVITY):
            # the linear part minus gravity, in the batched arithmetic (a model-only padded vector
            # would be a kernel of its own)
            g = jnp.broadcast_to(m.opt.gravity, (2, 3)).reshape(6)
            cacc = jnp.where(np.arange(6) >= 3, cacc - g, cacc)
        cfrc = math.inert_mul(d.cinert, cacc) + math.cross_force(d.cvel, math.inert_mul(d.cinert, d.cvel))
        return d.replace(qfrc_bias=_subtree_force(m, d, cfrc.at[0].set(0.0)))


def apply_ft(m: Model, d: Data, force: jax.Array, torque: jax.Array, point: jax.Array) -> jax.Array:
    """Generalised force of per-body world forces and torques applied at `point` (mj_applyFT).

    All arguments have shape (nbody, 3).
    """
    r = point - d.subtree_com[m.body_rootid]
    cfrc = jnp.concatenate([torque + math.cross(r, force), force], -1)
    return _subtree_force(m, d, cfrc)


@tracing.inline_numpy
def passive(m: Model, d: Data) -> Data:
    """Springs, dampers, gravity compensation and fluid forces (mj_passive)."""
    with jax.named_scope("passive"):
        zero = jnp.zeros(m.nv, d.qpos.dtype)
        spring_on = not m.disabled(_DSBL.mjDSBL_SPRING)
        damper_on = not m.disabled(_DSBL.mjDSBL_DAMPER)
        if not (spring_on or damper_on):
            return d.replace(qfrc_spring=zero, qfrc_damper=zero, qfrc_gravcomp=zero, qfrc_fluid=zero, qfrc_passive=zero)
        spring = _joint_springs(m, d) if spring_on else zero
        damper = -(m.dof_damping * d.qvel) if damper_on else zero
        if m.ntendon:
            length = d.ten_length
            lo, hi = m.tendon_lengthspring[:, 0], m.tendon_lengthspring[:, 1]
            x = jnp.where(length > hi, length - hi, jnp.where(length < lo, length - lo, 0.0))
            if spring_on:
                spring = spring + math.matmul(d.ten_J.T, -m.tendon_stiffness * x)
            if damper_on:
                damper = damper + math.matmul(d.ten_J.T, -m.tendon_damping * d.ten_velocity)
        gravcomp = _gravcomp(m, d)
        fluid = _fluid(m, d) if m.opt.has_fluid else zero
        total = spring + damper + fluid
        total = total + jnp.where(m.jnt_actgravcomp[m.dof_jntid], 0.0, gravcomp)
        return d.replace(
            qfrc_spring=spring, qfrc_damper=damper, qfrc_gravcomp=gravcomp, qfrc_fluid=fluid, qfrc_passive=total
        )


def _joint_springs(m: Model, d: Data) -> jax.Array:
    """Joint stiffness about `qpos_spring`, per dof."""
    dt = d.qpos.dtype
    pieces = []  # (dofs, forces), assembled once: a scatter per joint type made a kernel each
    k = m.jnt_stiffness
    for jtype in np.unique(m.jnt_type):
        j = np.nonzero(m.jnt_type == jtype)[0]
        qa, da = m.jnt_qposadr[j], m.jnt_dofadr[j]
        if jtype in (JNT_BALL, JNT_FREE):
            off = 3 if jtype == JNT_FREE else 0
            if jtype == JNT_FREE:
                dif = d.qpos[qa[:, None] + np.arange(3)] - m.qpos_spring[qa[:, None] + np.arange(3)]
                pieces.append((da[:, None] + np.arange(3), -k[j, None] * dif))
            quat = math.quat_normalize(d.qpos[qa[:, None] + off + np.arange(4)])
            dif = math.sub_quat(quat, m.qpos_spring[qa[:, None] + off + np.arange(4)])
            pieces.append((da[:, None] + off + np.arange(3), -k[j, None] * dif))
        else:
            # slices where the joints run consecutively (a model-only gather is a kernel of its own)
            pieces.append((da, -(math.take(k, j) * math.take(d.qpos - m.qpos_spring, qa))))
    return math.assemble(m.nv, pieces, jnp.zeros((), dt))


def _gravcomp(m: Model, d: Data) -> jax.Array:
    """Forces cancelling gravity on bodies with `gravcomp` (zero where unused)."""
    if not m.has_gravcomp or m.disabled(_DSBL.mjDSBL_GRAVITY) or m.nv == 0:
        return jnp.zeros(m.nv, d.qpos.dtype)
    force = -m.opt.gravity * (m.body_mass * m.body_gravcomp)[:, None]
    return apply_ft(m, d, force.at[0].set(0.0), jnp.zeros_like(force), d.xipos)


def _fluid(m: Model, d: Data) -> jax.Array:
    """MuJoCo's inertia-box fluid model: drag and viscous forces on each body's equivalent box."""
    mass, inertia = m.body_mass, m.body_inertia
    safe_mass = jnp.where(mass < math.MINVAL, 1.0, mass)
    i0, i1, i2 = inertia[:, 0], inertia[:, 1], inertia[:, 2]

    def side(a):
        return jnp.sqrt(jnp.maximum(math.MINVAL, a) / safe_mass * 6.0)

    box = jnp.stack([side(i1 + i2 - i0), side(i0 + i2 - i1), side(i0 + i1 - i2)], -1)
    # body velocity at its com, in its inertial frame, relative to the wind
    lvel = math.transform_motion(d.cvel, d.xipos, d.subtree_com[m.body_rootid], d.ximat)
    lwind = math.matvec(jnp.swapaxes(d.ximat, -1, -2), jnp.broadcast_to(m.opt.wind, d.xipos.shape))
    w, v = lvel[:, :3], lvel[:, 3:] - lwind
    visc, dens = m.opt.viscosity, m.opt.density
    diam = jnp.mean(box, -1, keepdims=True)
    torque = -jnp.pi * diam**3 * visc * w
    force = -3.0 * jnp.pi * diam * visc * v
    b0, b1, b2 = box[:, 0], box[:, 1], box[:, 2]
    area = jnp.stack([b1 * b2, b0 * b2, b0 * b1], -1)
    force = force - 0.5 * dens * area * jnp.abs(v) * v
    b4 = box**4
    arm = jnp.stack([b0 * (b4[:, 1] + b4[:, 2]), b1 * (b4[:, 0] + b4[:, 2]), b2 * (b4[:, 0] + b4[:, 1])], -1)
    torque = torque - dens * arm * jnp.abs(w) * w / 64.0
    on = (mass >= math.MINVAL)[:, None] & (np.arange(m.nbody) > 0)[:, None]
    bfrc = jnp.where(on, math.matvec(d.ximat, force), 0.0)
    btrq = jnp.where(on, math.matvec(d.ximat, torque), 0.0)
    return apply_ft(m, d, bfrc, btrq, d.xipos)
