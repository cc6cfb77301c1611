"""Actuators: `transmission` (lengths and moment arms) and `actuation` (forces, act_dot)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.types import (
    BIAS_AFFINE,
    DYN_FILTER,
    DYN_FILTEREXACT,
    DYN_INTEGRATOR,
    DYN_NONE,
    GAIN_AFFINE,
    JNT_BALL,
    JNT_FREE,
    TRN_BODY,
    TRN_JOINT,
    TRN_JOINTINPARENT,
    TRN_SITE,
    TRN_SLIDERCRANK,
    TRN_TENDON,
    Data,
    Model,
)

_DSBL = mujoco.mjtDisableBit


@tracing.inline_numpy
def transmission(m: Model, d: Data) -> Data:
    """`actuator_length` and the dense moment matrix `actuator_moment` (nu x nv) (mj_transmission)."""
    with jax.named_scope("transmission"):
        dt = d.qpos.dtype
        if m.nu == 0:
            return d
        length = jnp.zeros(m.nu, dt)
        moment = jnp.zeros((m.nu, m.nv), dt)
        gear = m.actuator_gear
        trn, tid = m.actuator_trntype, m.actuator_trnid[:, 0]
        joint_trn = (trn == TRN_JOINT) | (trn == TRN_JOINTINPARENT)
        jtype = np.where(joint_trn, m.jnt_type[np.where(joint_trn, tid, 0)], -1)
        # scalar joints: length = gear * q, moment = gear
        a = np.nonzero(joint_trn & (jtype != JNT_BALL) & (jtype != JNT_FREE))[0]
        if a.size:
            # a select on a constant pattern and products of slices: XLA hoists a model-only gather or
            # scatter out of a rollout's loop into a kernel of its own, and not a slice
            j = tid[a]
            vals = math.take(gear[:, 0], a) * math.take(d.qpos, m.jnt_qposadr[j])
            length = math.assemble(m.nu, [(a, vals)], jnp.zeros((), dt))  # no scatter when a is every row
            at = np.zeros((m.nu, m.nv), bool)
            at[a, m.jnt_dofadr[j]] = True
            moment = jnp.where(at, gear[:, 0, None].astype(dt), moment)
        # ball joints: length = rotation vector . gear axis
        a = np.nonzero(joint_trn & (jtype == JNT_BALL))[0]
        if a.size:
            j = tid[a]
            quat = d.qpos[m.jnt_qposadr[j][:, None] + np.arange(4)]
            gax = _gear_axis(trn[a], gear[a, :3], quat)
            length = length.at[a].set(math.dot(math.quat_to_rotvec(quat), gax))
            moment = moment.at[a[:, None], m.jnt_dofadr[j][:, None] + np.arange(3)].set(gax)
        # free joints: no meaningful length; moment is the gear (rotation part maybe in parent frame)
        a = np.nonzero(joint_trn & (jtype == JNT_FREE))[0]
        if a.size:
            j = tid[a]
            quat = d.qpos[m.jnt_qposadr[j][:, None] + 3 + np.arange(4)]
            gax = _gear_axis(trn[a], gear[a, 3:6], quat)
            moment = moment.at[a[:, None], m.jnt_dofadr[j][:, None] + np.arange(6)].set(
                jnp.concatenate([gear[a, :3], gax], -1)
            )
        a = np.nonzero(trn == TRN_TENDON)[0]
        if a.size:
            length = length.at[a].set(gear[a, 0] * d.ten_length[tid[a]])
            moment = moment.at[a].set(gear[a, 0, None] * d.ten_J[tid[a]])
        a = np.nonzero(trn == TRN_SITE)[0]
        if a.size:
            site_len, site_moment = _site_transmission(m, d, a)
            length = length.at[a].set(site_len)
            moment = moment.at[a].set(site_moment)
        a = np.nonzero(trn == TRN_SLIDERCRANK)[0]
        if a.size:
            crank_len, crank_moment = _slider_crank(m, d, a)
            length = length.at[a].set(crank_len)
            moment = moment.at[a].set(crank_moment)
        a = np.nonzero(trn == TRN_BODY)[0]
        if a.size:  # no meaningful length: 0
            moment = moment.at[a].set(_body_transmission(m, d, tid[a]))
        return d.replace(actuator_length=length, actuator_moment=moment)


def _slider_crank(m: Model, d: Data, a: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """Lengths and moment rows of slider-crank transmissions (mjTRN_SLIDERCRANK): a rod of length r from the crank
    site to a point on the slider site's z axis; length = a'v - sqrt((a'v)^2 + r^2 - v'v) (v from slider to
    crank), or a'v where the rod cannot reach the axis, and its gradient through both sites' Jacobians."""
    from hurtle.physics.constraint import jac_point

    crank, slider = m.actuator_trnid[a, 0], m.actuator_trnid[a, 1]
    rod = m.actuator_cranklength[a]
    axis = d.site_xmat[slider][:, :, 2]
    vec = d.site_xpos[crank] - d.site_xpos[slider]
    av = math.dot(vec, axis)
    det = av * av + rod * rod - math.dot(vec, vec)
    ok = det > 0
    sdet = jnp.sqrt(jnp.where(ok, det, 1.0))
    length = jnp.where(ok, av - sdet, av)
    dldv = jnp.where(ok[:, None], axis * (1 - av / sdet)[:, None] + vec / sdet[:, None], axis)
    dlda = jnp.where(ok[:, None], vec * (1 - av / sdet)[:, None], vec)
    jac_s, jacr_s = jac_point(m, d, m.site_bodyid[slider], d.site_xpos[slider])
    jac_c, _ = jac_point(m, d, m.site_bodyid[crank], d.site_xpos[crank])
    jac_axis = math.cross(jacr_s.transpose(0, 2, 1), axis[:, None, :]).transpose(0, 2, 1)  # d axis / dq
    moment = math.einsum("kc,kcv->kv", dlda, jac_axis) + math.einsum("kc,kcv->kv", dldv, jac_c - jac_s)
    gear = m.actuator_gear[a, 0]
    return gear * length, gear[:, None] * moment


def _body_transmission(m: Model, d: Data, bodies: np.ndarray) -> jax.Array:
    """Moment rows of body transmissions (adhesion, mj_transmission's mjTRN_BODY): minus the mean normal Jacobian
    of the body's contacts, those with constraint rows and those found inside the gap (which pull the body in
    before it touches). The slots that can involve each body are known when the model is built."""
    from hurtle.physics.collision import slot_geoms
    from hurtle.physics.constraint import jac_point

    geoms = slot_geoms(m)  # (from_mujoco refuses body transmissions with caller-filled or capped slots)
    if geoms is None:  # no contacts at all
        return jnp.zeros((len(bodies), m.nv), d.qpos.dtype)
    b1, b2 = m.geom_bodyid[geoms[0]], m.geom_bodyid[geoms[1]]
    rows = []
    for body in bodies:
        slots = np.nonzero((b1 == body) | (b2 == body))[0]
        if slots.size == 0:
            rows.append(jnp.zeros(m.nv, d.qpos.dtype))
            continue
        con = d.contact
        pos, normal = con.pos[slots], con.frame[slots, 0]
        jac1, _ = jac_point(m, d, b1[slots], pos)
        jac2, _ = jac_point(m, d, b2[slots], pos)
        jn = math.einsum("kc,kcv->kv", normal, jac2 - jac1)
        use = con.active[slots] | con.gap[slots]
        count = jnp.sum(use.astype(jn.dtype))
        total = jnp.sum(jnp.where(use[:, None], jn, 0.0), axis=0)
        rows.append(jnp.where(count > 0, -total / jnp.maximum(count, 1.0), 0.0))
    return jnp.stack(rows)


def _common_chain(m: Model, site: int, ref: int) -> np.ndarray:
    """Dofs from the deepest dof that moves both sites' bodies up to the root: MuJoCo clears these columns of a
    refsite transmission's Jacobian difference (they move both sites alike)."""
    b0, b1 = m.body_weldid[m.site_bodyid[site]], m.body_weldid[m.site_bodyid[ref]]
    a0 = m.body_dofadr[b0] + m.body_dofnum[b0] - 1 if m.body_dofnum[b0] else -1
    a1 = m.body_dofadr[b1] + m.body_dofnum[b1] - 1 if m.body_dofnum[b1] else -1
    if a0 < 0 or a1 < 0:
        return np.zeros(0, int)
    while a0 != a1 and a0 >= 0 and a1 >= 0:
        if a0 < a1:
            a1 = m.dof_parentid[a1]
        else:
            a0 = m.dof_parentid[a0]
    chain = []
    while a0 == a1 and a0 >= 0:
        chain.append(a0)
        a0 = a1 = m.dof_parentid[a0]
    return np.array(chain, int)


def _site_transmission(m: Model, d: Data, a: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """Lengths and moment rows of site transmissions (mj_transmission's mjTRN_SITE): without a reference site the
    gear is a wrench in the site's frame and the length is 0; with one, the site's displacement and rotation
    relative to the reference site, along the gear, and the Jacobian difference."""
    from hurtle.physics.constraint import jac_point

    site, ref = m.actuator_trnid[a, 0], m.actuator_trnid[a, 1]
    gear = m.actuator_gear[a]
    jacp, jacr = jac_point(m, d, m.site_bodyid[site], d.site_xpos[site])  # (k, 3, nv)
    mat = d.site_xmat[site]
    # no reference site: the gear's force and torque in the site frame, through the site's Jacobian
    free = math.einsum("kcv,kc->kv", jacp, math.matvec(mat, gear[:, :3]))
    free = free + math.einsum("kcv,kc->kv", jacr, math.matvec(mat, gear[:, 3:6]))
    has_ref = ref >= 0
    if not has_ref.any():
        return jnp.zeros(len(a), d.qpos.dtype), free
    r = np.where(has_ref, ref, 0)
    refp, refr = jac_point(m, d, m.site_bodyid[r], d.site_xpos[r])
    keep = np.ones((len(a), m.nv), bool)
    for k in np.nonzero(has_ref)[0]:
        keep[k, _common_chain(m, int(site[k]), int(ref[k]))] = False
    jp = jnp.where(keep[:, None], jacp - refp, 0.0)
    jr = jnp.where(keep[:, None], jacr - refr, 0.0)
    ref_mat = d.site_xmat[r]
    offset = math.matvec_t(ref_mat, d.site_xpos[site] - d.site_xpos[r])
    quat = math.quat_mul(d.xquat[m.site_bodyid[site]], m.site_quat[site])
    ref_quat = math.quat_mul(d.xquat[m.site_bodyid[r]], m.site_quat[r])
    length = math.dot(offset, gear[:, :3]) + math.dot(math.sub_quat(quat, ref_quat), gear[:, 3:6])
    moment = math.einsum("kcv,kc->kv", jp, math.matvec(ref_mat, gear[:, :3]))
    moment = moment + math.einsum("kcv,kc->kv", jr, math.matvec(ref_mat, gear[:, 3:6]))
    return jnp.where(has_ref, length, 0.0), jnp.where(has_ref[:, None], moment, free)


def _gear_axis(trn: np.ndarray, gear: jax.Array, quat: jax.Array) -> jax.Array:
    """Gear axis, rotated into the parent frame for `jointinparent` transmissions."""
    inparent = math.quat_rot(math.quat_conj(quat), gear)
    return jnp.where((trn == TRN_JOINTINPARENT)[:, None], inparent, gear)


def actuator_velocity(m: Model, d: Data) -> Data:
    if m.nu == 0 or m.disabled(_DSBL.mjDSBL_ACTUATION):
        return d.replace(actuator_velocity=jnp.zeros(m.nu, d.qpos.dtype))
    return d.replace(actuator_velocity=math.matmul(d.actuator_moment, d.qvel))


def next_activation(m: Model, d: Data, act_dot: jax.Array) -> jax.Array:
    """Activation after one timestep, per activation slot, clamped to `actrange` (mj_nextActivation)."""
    if m.na == 0:
        return d.act
    has = np.nonzero(m.actuator_actadr >= 0)[0]
    adr = m.actuator_actadr[has]
    dt = m.opt.timestep
    tau = jnp.maximum(math.MINVAL, m.actuator_dynprm[has, 0])
    exact = m.actuator_dyntype[has] == DYN_FILTEREXACT
    step = jnp.where(exact, act_dot[adr] * tau * (1.0 - jnp.exp(-dt / tau)), act_dot[adr] * dt)
    act = d.act[adr] + step
    lim = m.actuator_actlimited[has]
    rng = m.actuator_actrange[has]
    act = jnp.where(lim, jnp.clip(act, rng[:, 0], rng[:, 1]), act)
    return d.act.at[adr].set(act)


@tracing.inline_numpy
def actuation(m: Model, d: Data) -> Data:
    """Activation dynamics, actuator forces and `qfrc_actuator` (mj_fwdActuation)."""
    with jax.named_scope("actuation"):
        dt = d.qpos.dtype
        zero_v = jnp.zeros(m.nv, dt)
        if m.nu == 0 or m.disabled(_DSBL.mjDSBL_ACTUATION):
            return d.replace(actuator_force=jnp.zeros(m.nu, dt), act_dot=jnp.zeros(m.na, dt), qfrc_actuator=zero_v)
        ctrl = d.ctrl
        if not m.disabled(_DSBL.mjDSBL_CLAMPCTRL):
            rng = m.actuator_ctrlrange
            ctrl = jnp.where(m.actuator_ctrllimited, jnp.clip(ctrl, rng[:, 0], rng[:, 1]), ctrl)
        # a non-finite control zeroes all controls, as MuJoCo does (with a warning there)
        ctrl = jnp.where(jnp.all(jnp.isfinite(ctrl)), ctrl, 0.0)

        dyn = m.actuator_dyntype
        act_dot = jnp.zeros(m.na, dt)
        stateful = np.nonzero(m.actuator_actadr >= 0)[0]
        if stateful.size:
            adr = m.actuator_actadr[stateful] + m.actuator_actnum[stateful] - 1
            tau = jnp.maximum(math.MINVAL, m.actuator_dynprm[stateful, 0])
            filt = (ctrl[stateful] - d.act[adr]) / tau
            integ = dyn[stateful] == DYN_INTEGRATOR
            filtered = (dyn[stateful] == DYN_FILTER) | (dyn[stateful] == DYN_FILTEREXACT)
            val = jnp.where(integ, ctrl[stateful], jnp.where(filtered, filt, 0.0))
            act_dot = act_dot.at[adr].set(val)

        length, vel = d.actuator_length, d.actuator_velocity
        gp, bp = m.actuator_gainprm, m.actuator_biasprm
        gain = jnp.where(m.actuator_gaintype == GAIN_AFFINE, gp[:, 0] + gp[:, 1] * length + gp[:, 2] * vel, gp[:, 0])
        bias = jnp.where(m.actuator_biastype == BIAS_AFFINE, bp[:, 0] + bp[:, 1] * length + bp[:, 2] * vel, 0.0)
        inp = ctrl
        if stateful.size:
            adr = m.actuator_actadr[stateful] + m.actuator_actnum[stateful] - 1
            nxt = next_activation(m, d, act_dot)
            act_in = jnp.where(m.actuator_actearly[stateful], nxt[adr], d.act[adr])
            inp = inp.at[stateful].set(jnp.where(dyn[stateful] == DYN_NONE, ctrl[stateful], act_in))
        force = gain * inp + bias
        frng = m.actuator_forcerange
        force = jnp.where(m.actuator_forcelimited, jnp.clip(force, frng[:, 0], frng[:, 1]), force)

        qfrc = math.matmul(force, d.actuator_moment)
        if np.any(m.jnt_actgravcomp):
            qfrc = qfrc + jnp.where(m.jnt_actgravcomp[m.dof_jntid], d.qfrc_gravcomp, 0.0)
        if np.any(m.jnt_actfrclimited):
            # MuJoCo clamps the first dof of each limited joint
            rng = m.jnt_actfrcrange[m.dof_jntid]
            first = np.arange(m.nv) == m.jnt_dofadr[m.dof_jntid]
            lim = m.jnt_actfrclimited[m.dof_jntid] & first
            qfrc = jnp.where(lim, jnp.clip(qfrc, rng[:, 0], rng[:, 1]), qfrc)
        return d.replace(actuator_force=force, act_dot=act_dot, qfrc_actuator=qfrc)
