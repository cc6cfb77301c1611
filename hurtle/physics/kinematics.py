"""Position stages: `kinematics` (frames of bodies, joints, geoms, sites) and `com_pos`.

The tree is walked level by level: every body of one depth is placed by one vectorised operation,
so the traced program grows with the tree's depth, not its size.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.types import JNT_BALL, JNT_FREE, JNT_HINGE, JNT_SLIDE, Data, Model


def _joint_transforms(m: Model, d: Data):
    """Each body's k-th joint as a rigid transform in the body's frame as it stands before that joint, for
    every (slot k, body) at once: its quaternion (for `xquat`), rotation matrix R and shift t (a hinge or
    ball turns about its anchor c: t = c - R c; a slide shifts along its axis). Empty slots are the
    identity. Also returns the joints' (slot, body) positions and axes in their body's frame."""
    t = m.tree
    jnt, valid = t.jnt_slot, t.jnt_slot_valid
    jtype = np.where(valid, m.jnt_type[jnt], JNT_SLIDE)
    # axis and anchor in one gather, and qpos - qpos0 before its gather: each model-only value the
    # loop reads is a kernel of its own once XLA hoists it out of a rollout's loop
    ap = jnp.concatenate([m.jnt_axis, m.jnt_pos], -1)[jnt]
    axis, pos = ap[..., :3], ap[..., 3:]
    qadr = m.jnt_qposadr[jnt]
    dtype = d.qpos.dtype
    value = jnp.where(valid, (d.qpos - m.qpos0)[qadr], 0.0)
    quat = jnp.broadcast_to(np.array([1.0, 0.0, 0.0, 0.0], dtype), jnt.shape + (4,))
    rot = jnp.broadcast_to(np.eye(3, dtype=dtype), jnt.shape + (3, 3))
    if np.any(jtype == JNT_HINGE):
        hinge = jtype == JNT_HINGE
        quat = jnp.where(hinge[..., None], math.axis_angle_to_quat(axis, value), quat)
        rot = jnp.where(hinge[..., None, None], math.axis_angle_to_mat(axis, value), rot)
    if np.any(jtype == JNT_BALL):
        ball = jtype == JNT_BALL
        idx = np.minimum(qadr[..., None] + np.arange(4), m.nq - 1)
        qb = math.quat_normalize(d.qpos[idx])
        quat = jnp.where(ball[..., None], qb, quat)
        rot = jnp.where(ball[..., None, None], math.quat_to_mat(qb), rot)
    rotating = jtype != JNT_SLIDE
    shift = jnp.where(rotating[..., None], pos - math.matvec(rot, pos), axis * value[..., None])
    return quat, rot, jnp.where(valid[..., None], shift, 0.0), pos, axis


@tracing.inline_numpy
def kinematics(m: Model, d: Data) -> Data:
    """Global frames of bodies, joints (anchor, axis), inertias, geoms and sites (mj_kinematics).

    Positions and rotations go through 3x3 matrices (products as sums of outer products: no stacked
    components, which XLA CPU compiles slowly); the body quaternions `xquat` are composed alongside, as
    MuJoCo's, normalised at every level."""
    with jax.named_scope("kinematics"):
        t = m.tree
        dtype = d.qpos.dtype
        # pose of each body in its parent's frame: body offset (or mocap), then its joints in order
        # (every body's k-th joint at once); the pose before each joint is kept for its anchor and axis
        p, q = m.body_pos, m.body_quat
        if m.nmocap:
            mb = np.nonzero(m.body_mocapid >= 0)[0]
            mid = m.body_mocapid[mb]
            p = p.at[mb].set(d.mocap_pos[mid])
            q = q.at[mb].set(math.quat_normalize(d.mocap_quat[mid]))
        r = math.quat_to_mat(q)
        jq, jr, jt, jpos, jaxis = _joint_transforms(m, d)
        nslot = t.jnt_slot.shape[0]
        # each joint's anchor and axis in its body's parent frame, from the pose before the joint
        # (vectors: only the joints' own are carried to the world frame below)
        anchors, axes = [], []
        for k in range(nslot):
            anchors.append(p + math.matvec(r, jpos[k]))
            axes.append(math.matvec(r, jaxis[k]))
            p, r, q = p + math.matvec(r, jt[k]), math.mat_mul(r, jr[k]), math.quat_mul(q, jq[k])

        # world frames, one tree level at a time, starting from the bodies' own poses: the levels
        # overwrite every body but the world, whose pose is its own (MuJoCo's compiler fixes it at the
        # origin; a fresh constant array would be a kernel of its own in a rollout's loop)
        # (batched like qpos under vmap, as the levels make them: one batching pass of the level fewer)
        xpos, xquat, xmat = tracing.varying_like(d.qpos, p, q, r, tuple_=True)
        if t.free_body.size:
            idx = t.free_qadr[:, None] + np.arange(7)
            qf = d.qpos[idx]
            qn = math.quat_normalize(qf[:, 3:])
            xpos = xpos.at[t.free_body].set(qf[:, :3])
            xquat = xquat.at[t.free_body].set(qn)
            xmat = xmat.at[t.free_body].set(math.quat_to_mat(qn))
        # one traced body for all levels: each pass places the bodies of its level (mask) from their
        # parents, placed by the pass before
        par = m.body_parentid

        def place(frame, mask):
            xpos, xquat, xmat = frame
            xm_par = math.take(xmat, par)
            xpos = jnp.where(mask[:, None], math.take(xpos, par) + math.matvec(xm_par, p), xpos)
            xquat = jnp.where(mask[:, None], math.quat_normalize(math.quat_mul(math.take(xquat, par), q)), xquat)
            xmat = jnp.where(mask[:, None, None], math.mat_mul(xm_par, r), xmat)
            return (xpos, xquat, xmat), None

        (xpos, xquat, xmat), _ = tracing.scan(place, (xpos, xquat, xmat), t.level_mask)

        # joint anchors and axes: the body's pose before the joint, in its parent's world frame
        if nslot:
            # one array of both (a gather of each made more code), then the joints' own
            local = jnp.concatenate([jnp.concatenate(anchors), jnp.concatenate(axes)], -1)
            local = math.take(local, t.jnt_slot_flat)
            par = m.body_parentid[m.jnt_bodyid]
            xm_par = math.take(xmat, par)
            xanchor = math.take(xpos, par) + math.matvec(xm_par, local[:, :3])
            xaxis = math.matvec(xm_par, local[:, 3:])
        else:
            xanchor = jnp.zeros((m.njnt, 3), dtype)
            xaxis = jnp.zeros((m.njnt, 3), dtype)
        free_j = np.nonzero(m.jnt_type == JNT_FREE)[0]
        if free_j.size:
            xanchor = xanchor.at[free_j].set(xpos[m.jnt_bodyid[free_j]])
            xaxis = xaxis.at[free_j].set(m.jnt_axis[free_j])

        # inertial, geom and site frames in one vectorised pass, then each kind's copies of the frames
        # the compiler found equal
        nb, ng = m.nbody, m.ngeom
        body = np.concatenate([np.arange(nb), m.geom_bodyid, m.site_bodyid]).astype(np.int32)
        local = math.quat_to_mat(jnp.concatenate([m.body_iquat, m.geom_quat, m.site_quat]))
        xm_body = math.take(xmat, body)
        wpos = math.take(xpos, body) + math.matvec(xm_body, jnp.concatenate([m.body_ipos, m.geom_pos, m.site_pos]))
        wmat = math.mat_mul(xm_body, local)
        frames = (xpos, xquat, xmat, None, None)
        xipos, ximat = _same_frames(frames, wpos[:nb], wmat[:nb], np.arange(nb), m.body_sameframe)
        # the world body's inertial frame stays at the origin, as in MuJoCo
        xipos, ximat = xipos.at[0].set(0.0), ximat.at[0].set(np.eye(3, dtype=dtype))
        frames = (xpos, xquat, xmat, xipos, ximat)
        geom_xpos, geom_xmat = _same_frames(
            frames, wpos[nb : nb + ng], wmat[nb : nb + ng], m.geom_bodyid, m.geom_sameframe
        )
        site_xpos, site_xmat = _same_frames(frames, wpos[nb + ng :], wmat[nb + ng :], m.site_bodyid, m.site_sameframe)
        return d.replace(
            xpos=xpos,
            xquat=xquat,
            xmat=xmat,
            xipos=xipos,
            ximat=ximat,
            xanchor=xanchor,
            xaxis=xaxis,
            geom_xpos=geom_xpos,
            geom_xmat=geom_xmat,
            site_xpos=site_xpos,
            site_xmat=site_xmat,
        )


# mjtSameFrame: which frames MuJoCo's compiler found equal to the body or inertial frame
_SAME_NONE, _SAME_BODY, _SAME_INERTIA, _SAME_BODYROT, _SAME_INERTIAROT = range(5)


def _same_frames(frames, wpos, wmat, body, sameframe):
    """World frames `wpos`, `wmat` (mj_local2Global of frames given in their body's frame), with those the
    compiler marked as coinciding with the body or inertial frame copied from it exactly."""
    xpos, xquat, xmat, xipos, ximat = frames
    if len(body) == 0:
        return jnp.zeros((0, 3), xpos.dtype), jnp.zeros((0, 3, 3), xpos.dtype)
    sf = sameframe
    wpos = jnp.where((sf == _SAME_BODY)[:, None], math.take(xpos, body), wpos)
    wmat = jnp.where(np.isin(sf, (_SAME_BODY, _SAME_BODYROT))[:, None, None], math.take(xmat, body), wmat)
    if xipos is not None:
        wpos = jnp.where((sf == _SAME_INERTIA)[:, None], math.take(xipos, body), wpos)
        wmat = jnp.where(np.isin(sf, (_SAME_INERTIA, _SAME_INERTIAROT))[:, None, None], math.take(ximat, body), wmat)
    return wpos, wmat


@tracing.inline_numpy
def com_pos(m: Model, d: Data) -> Data:
    """Subtree centres of mass, com-based inertias `cinert` and motion dofs `cdof` (mj_comPos)."""
    with jax.named_scope("com_pos"):
        t = m.tree
        mass = m.body_mass
        # the subtrees' mass moments and masses in one product, the masses a column beside the moments
        # (batched with them: alone they would be a model-only value, a kernel of its own in a
        # rollout's loop, and so would the test and the division on them)
        weighted = jnp.concatenate([mass[:, None] * d.xipos, jnp.broadcast_to(mass[:, None], (m.nbody, 1))], -1)
        summed = math.const_matmul(t.body_subtree, weighted)
        sub_mom, sub_mass = summed[:, :3], summed[:, 3]
        ok = sub_mass >= math.MINVAL
        subtree_com = jnp.where(ok[:, None], sub_mom / jnp.where(ok, sub_mass, 1.0)[:, None], d.xipos)

        # cinert: body inertia rotated to world axes, about the subtree com of its tree's root
        dif = d.xipos - math.take(subtree_com, m.body_rootid)
        rot = math.einsum("bij,bj,bkj->bik", d.ximat, m.body_inertia, d.ximat)
        md = mass[:, None] * dif
        dx, dy, dz = dif[:, 0], dif[:, 1], dif[:, 2]
        cinert = (
            math.stack_select(
                [
                    rot[:, 0, 0] + mass * (dy * dy + dz * dz),
                    rot[:, 1, 1] + mass * (dx * dx + dz * dz),
                    rot[:, 2, 2] + mass * (dx * dx + dy * dy),
                    rot[:, 0, 1] - mass * dx * dy,
                    rot[:, 0, 2] - mass * dx * dz,
                    rot[:, 1, 2] - mass * dy * dz,
                    md[:, 0],
                    md[:, 1],
                    md[:, 2],
                    mass,
                ]
            )
            .at[0]
            .set(0.0)
        )

        cdof = _cdof(m, d, subtree_com)
        return d.replace(subtree_com=subtree_com, cinert=cinert, cdof=cdof)


def _cdof(m: Model, d: Data, subtree_com: jax.Array) -> jax.Array:
    """Motion subspaces of all dofs in the com-based frame."""
    t = m.tree
    if m.nv == 0:
        return jnp.zeros((0, 6), d.qpos.dtype)
    jnt = m.dof_jntid
    offset = math.take(subtree_com, t.dof_rootid) - math.take(d.xanchor, jnt)
    axis = math.take(d.xaxis, jnt)
    col = t.dof_axis_col
    if np.any(t.dof_ballrot):
        body_axis = d.xmat[m.dof_bodyid, :, col]
        axis = jnp.where(t.dof_ballrot[:, None], body_axis, axis)
    if np.any(t.dof_free):
        unit = np.eye(3, dtype=axis.dtype)[col]
        axis = jnp.where(t.dof_free[:, None], unit, axis)
    translational = (m.jnt_type[jnt] == JNT_SLIDE) | t.dof_free
    moment = math.cross(axis, offset)
    # cdof is written whole: its six columns by selects (math.stack_select)
    ang = [jnp.where(translational, 0.0, axis[:, k]) for k in range(3)]
    lin = [jnp.where(translational, axis[:, k], moment[:, k]) for k in range(3)]
    return math.stack_select(ang + lin)
