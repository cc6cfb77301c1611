"""Sensors (MuJoCo's engine_sensor.c): `Data.sensordata` with MuJoCo's layout (`Model.sensor_adr`, `sensor_dim`).

`sensors(m, d)` runs at the end of `forward`. MuJoCo computes position, velocity and acceleration sensors after
their own stages (mj_sensorPos, mj_sensorVel, mj_sensorAcc); nothing a sensor reads changes after its stage, so
computing all of them once, after the constraint solve, gives MuJoCo's values. Each sensor type is computed for
all its sensors at once (static indices), the pieces are put in `sensordata` order by one static gather, and
MuJoCo's `cutoff` clamps real and positive sensors. MuJoCo does not add `noise` in its engine; `noisy` adds it
where a user asks for it, with an explicit key.

Supported: see `SUPPORTED`; any other type is refused by name when the model is built (`check`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math, ray
from hurtle.physics.collision import contact_order
from hurtle.physics.types import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, SPHERE, Data, Model

S = mujoco.mjtSensor
OBJ_BODY, OBJ_XBODY, OBJ_GEOM, OBJ_SITE, OBJ_CAMERA = 1, 2, 5, 6, 7
REAL, POSITIVE, AXIS, QUATERNION = 0, 1, 2, 3  # mjtDataType
MINVAL = 1e-15

SUPPORTED = {
    S.mjSENS_TOUCH,
    S.mjSENS_ACCELEROMETER,
    S.mjSENS_VELOCIMETER,
    S.mjSENS_GYRO,
    S.mjSENS_FORCE,
    S.mjSENS_TORQUE,
    S.mjSENS_MAGNETOMETER,
    S.mjSENS_RANGEFINDER,
    S.mjSENS_JOINTPOS,
    S.mjSENS_JOINTVEL,
    S.mjSENS_TENDONPOS,
    S.mjSENS_TENDONVEL,
    S.mjSENS_ACTUATORPOS,
    S.mjSENS_ACTUATORVEL,
    S.mjSENS_ACTUATORFRC,
    S.mjSENS_JOINTACTFRC,
    S.mjSENS_TENDONACTFRC,
    S.mjSENS_BALLQUAT,
    S.mjSENS_BALLANGVEL,
    S.mjSENS_JOINTLIMITPOS,
    S.mjSENS_JOINTLIMITVEL,
    S.mjSENS_JOINTLIMITFRC,
    S.mjSENS_TENDONLIMITPOS,
    S.mjSENS_TENDONLIMITVEL,
    S.mjSENS_TENDONLIMITFRC,
    S.mjSENS_FRAMEPOS,
    S.mjSENS_FRAMEQUAT,
    S.mjSENS_FRAMEXAXIS,
    S.mjSENS_FRAMEYAXIS,
    S.mjSENS_FRAMEZAXIS,
    S.mjSENS_FRAMELINVEL,
    S.mjSENS_FRAMEANGVEL,
    S.mjSENS_FRAMELINACC,
    S.mjSENS_FRAMEANGACC,
    S.mjSENS_SUBTREECOM,
    S.mjSENS_SUBTREELINVEL,
    S.mjSENS_SUBTREEANGMOM,
    S.mjSENS_INSIDESITE,
    S.mjSENS_E_POTENTIAL,
    S.mjSENS_E_KINETIC,
    S.mjSENS_CLOCK,
    S.mjSENS_CONTACT,
}
# types that read cacc / cfrc_int (mj_rnePostConstraint)
_POST = {S.mjSENS_ACCELEROMETER, S.mjSENS_FORCE, S.mjSENS_TORQUE, S.mjSENS_FRAMELINACC, S.mjSENS_FRAMEANGACC}
_SITE_SHAPES = (SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX)
# limit sensors: the constraint rows they read (joint or tendon limits) and which of the rows' quantities
_LIMITS = {
    S.mjSENS_JOINTLIMITPOS: ("joint", "pos"),
    S.mjSENS_JOINTLIMITVEL: ("joint", "vel"),
    S.mjSENS_JOINTLIMITFRC: ("joint", "frc"),
    S.mjSENS_TENDONLIMITPOS: ("tendon", "pos"),
    S.mjSENS_TENDONLIMITVEL: ("tendon", "vel"),
    S.mjSENS_TENDONLIMITFRC: ("tendon", "frc"),
}


def type_name(t: int) -> str:
    return mujoco.mjtSensor(int(t)).name[len("mjSENS_") :].lower()


def check(m: mujoco.MjModel, label, source: str) -> None:
    """NotImplementedError naming the first sensor hurtle cannot compute (`label(i)` names sensor i)."""
    if m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_SENSOR:
        return

    def refuse(i: int, what: str) -> None:
        raise NotImplementedError(f"{source}: {what} ({label(i)}) is not supported by hurtle yet")

    for i in range(m.nsensor):
        t = int(m.sensor_type[i])
        if t not in SUPPORTED:
            refuse(i, f"the {type_name(t)} sensor")
        if m.sensor_delay[i] > 0 or np.any(m.sensor_interval[i] > 0) or np.any(m.sensor_history[i] > 0):
            refuse(i, "sensor delay, interval or history")
        for kind, ids in ((m.sensor_objtype[i], m.sensor_objid[i]), (m.sensor_reftype[i], m.sensor_refid[i])):
            if kind == OBJ_CAMERA and ids >= 0:
                refuse(i, f"{type_name(t)} sensors on cameras")
        if t in (S.mjSENS_ACTUATORPOS, S.mjSENS_ACTUATORVEL, S.mjSENS_ACTUATORFRC) and m.sensor_dim[i] != 1:
            refuse(i, "sensors of multi-output actuators")
        if t == S.mjSENS_RANGEFINDER:
            if m.sensor_dim[i] != 1:
                refuse(i, "rangefinder data other than the distance (data='dist')")
            sdf = [g for g in range(m.ngeom) if m.geom_type[g] == 8 and ray_visible(m)[g]]
            if sdf:
                refuse(i, f"rangefinder rays against SDF geoms (geom {sdf[0]})")
        if t == S.mjSENS_CONTACT and (np.any(m.geom_gap > 0) or np.any(m.pair_gap > 0)):
            refuse(i, "contact sensors in models with contact gaps (MuJoCo lists the contacts in the gap)")
        if t in (S.mjSENS_TOUCH, S.mjSENS_INSIDESITE):
            site = m.sensor_objid[i] if t == S.mjSENS_TOUCH else m.sensor_refid[i]
            if int(m.site_type[site]) not in _SITE_SHAPES:
                refuse(i, f"{type_name(t)} sensor zones of site type {int(m.site_type[site])}")


def ray_visible(m: mujoco.MjModel) -> np.ndarray:
    """Geoms a ray can hit (MuJoCo's ray_eliminate without body or group filters): not fully transparent."""
    alpha = np.array(m.geom_rgba[:, 3])
    mat = m.geom_matid >= 0
    alpha[mat] = m.mat_rgba[m.geom_matid[mat], 3]
    return alpha != 0


def ray_shapes(m: mujoco.MjModel) -> tuple:
    """What rangefinders need of each ray-visible mesh and height field geom: (geom, faces (nface, 3, 3) in the
    mesh frame) and (geom, nrow, ncol, size, heights); nothing for a model without rangefinders."""
    if not np.any(m.sensor_type == S.mjSENS_RANGEFINDER):
        return ()
    out = []
    for g in np.nonzero(np.isin(m.geom_type, (MESH, HFIELD)) & ray_visible(m))[0]:
        k = m.geom_dataid[g]
        if m.geom_type[g] == MESH:
            v0, f0, nf = m.mesh_vertadr[k], m.mesh_faceadr[k], m.mesh_facenum[k]
            faces = m.mesh_face[f0 : f0 + nf] + v0
            out.append((int(g), np.asarray(m.mesh_vert, np.float64)[faces]))
        else:
            nrow, ncol, adr = int(m.hfield_nrow[k]), int(m.hfield_ncol[k]), int(m.hfield_adr[k])
            heights = np.asarray(m.hfield_data[adr : adr + nrow * ncol], np.float64)
            out.append((int(g), nrow, ncol, tuple(float(v) for v in m.hfield_size[k]), heights))
    return tuple(out)


# -- object frames and motion (mj_objectVelocity, mj_objectAcceleration, get_xpos_xmat, get_xquat) --


def _body_of(m: Model, objtype: np.ndarray, objid: np.ndarray) -> np.ndarray:
    body = np.asarray(objid).copy()
    geom, site = objtype == OBJ_GEOM, objtype == OBJ_SITE
    body[geom] = m.geom_bodyid[objid[geom]]
    body[site] = m.site_bodyid[objid[site]]
    return body


def _rows(m: Model, objtype: np.ndarray, objid: np.ndarray) -> np.ndarray:
    """Rows of objects in a table of xbodies, bodies, geoms and sites stacked in that order."""
    offset = {OBJ_XBODY: 0, OBJ_BODY: m.nbody, OBJ_GEOM: 2 * m.nbody, OBJ_SITE: 2 * m.nbody + m.ngeom}
    return np.array([offset[int(t)] for t in objtype], int) + objid


def _frame(m: Model, d: Data, objtype: np.ndarray, objid: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """Positions (n, 3) and orientations (n, 3, 3) of objects of mixed types: xbody (xpos), body (its inertial
    frame, xipos), geom, site."""
    row = _rows(m, objtype, objid)
    pos = jnp.concatenate([d.xpos, d.xipos, d.geom_xpos, d.site_xpos])
    mat = jnp.concatenate([d.xmat, d.ximat, d.geom_xmat, d.site_xmat])
    return pos[row], mat[row]


def _quat(m: Model, d: Data, objtype: np.ndarray, objid: np.ndarray) -> jax.Array:
    """Orientation quaternions (n, 4) of objects, as MuJoCo's get_xquat composes them."""
    body = _body_of(m, objtype, objid)
    one = jnp.broadcast_to(jnp.array([1.0, 0, 0, 0], d.xquat.dtype), (m.nbody, 4))
    local = jnp.concatenate([one, m.body_iquat, m.geom_quat, m.site_quat])[_rows(m, objtype, objid)]
    return math.quat_mul(d.xquat[body], local)


def _spatial(vec: jax.Array, newpos: jax.Array, oldpos: jax.Array, rot: jax.Array | None) -> jax.Array:
    """mju_transformSpatial of motion vectors (angular, linear), rotated into `rot`'s frame when given."""
    lin = vec[..., 3:] - math.cross(newpos - oldpos, vec[..., :3])
    ang = vec[..., :3]
    if rot is not None:
        ang, lin = math.matvec_t(rot, ang), math.matvec_t(rot, lin)
    return jnp.concatenate([ang, lin], -1)


def _moving(m: Model, body: np.ndarray) -> np.ndarray:
    """Bodies welded to something with dofs (MuJoCo returns zero motion for the others)."""
    return m.body_dofnum[m.body_weldid[body]] > 0


def object_velocity(m: Model, d: Data, objtype: np.ndarray, objid: np.ndarray, local: bool) -> jax.Array:
    """(n, 6) angular and linear velocity of objects at their origins (mj_objectVelocity)."""
    body = _body_of(m, objtype, objid)
    pos, mat = _frame(m, d, objtype, objid)
    res = _spatial(d.cvel[body], pos, d.subtree_com[m.body_rootid[body]], mat if local else None)
    return jnp.where(_moving(m, body)[:, None], res, 0.0)


def object_acceleration(m: Model, d: Data, objtype: np.ndarray, objid: np.ndarray, local: bool) -> jax.Array:
    """(n, 6) angular and linear acceleration of objects at their origins, after `rne_post_constraint`
    (mj_objectAcceleration: the com-based acceleration moved to the object, plus w x v). A body without dofs
    (the world, a body welded to it, a mocap body) has MuJoCo 4's answer: gravity's alone (`cacc` holds -g), so
    an accelerometer at rest reads g in its frame, as a real one does (MuJoCo 3 gave zero)."""
    body = _body_of(m, objtype, objid)
    pos, mat = _frame(m, d, objtype, objid)
    com = d.subtree_com[m.body_rootid[body]]
    rot = mat if local else None
    acc = _spatial(d.cacc[body], pos, com, rot)
    vel = _spatial(d.cvel[body], pos, com, rot)
    return jnp.concatenate([acc[:, :3], acc[:, 3:] + math.cross(vel[:, :3], vel[:, 3:])], -1)


def subtree_vel(m: Model, d: Data, bodies: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """Linear velocity of each subtree's centre of mass and its angular momentum about it (mj_subtreeVel), for
    the subtrees rooted at `bodies`: sums over each subtree's bodies (MuJoCo accumulates child to parent)."""
    every = np.arange(m.nbody)
    vel = object_velocity(m, d, np.full(m.nbody, OBJ_BODY), every, local=False)  # at each body's COM
    mass = m.body_mass
    inside = m.tree.body_subtree[bodies].astype(d.qpos.dtype)  # (n, nbody)
    smass = inside @ mass
    linvel = (inside @ (mass[:, None] * vel[:, 3:])) / jnp.maximum(smass, MINVAL)[:, None]
    # each body's own angular momentum: ximat diag(inertia) ximat' w
    own = math.matvec(d.ximat, m.body_inertia * math.matvec_t(d.ximat, vel[:, :3]))
    com = d.subtree_com[bodies]
    arm = d.xipos[None] - com[:, None]  # (n, nbody, 3)
    rel = vel[None, :, 3:] - linvel[:, None]
    angmom = jnp.sum(inside[..., None] * (own[None] + mass[None, :, None] * math.cross(arm, rel)), axis=1)
    return linvel, angmom


# -- contact and limit helpers --


def _limit_rows(m: Model, etype: int, ids: np.ndarray) -> np.ndarray:
    """(n, 2) the constraint rows of each joint/tendon limit in row order, -1 where absent."""
    lay = m.efc
    out = -np.ones((len(ids), 2), int)
    for k, i in enumerate(ids):
        rows = np.nonzero((lay.type == etype) & (lay.id == i))[0][:2]
        out[k, : len(rows)] = rows
    return out


def _first_active(d: Data, rows: np.ndarray, values: jax.Array) -> jax.Array:
    """The value of each sensor's first active row (MuJoCo's loop over instantiated rows), 0 if none."""
    out = jnp.zeros(rows.shape[0], values.dtype)
    for k in (1, 0):
        r = rows[:, k]
        ok = r >= 0
        safe = np.where(ok, r, 0)
        active = jnp.where(ok, d.efc_active[safe], False)
        out = jnp.where(active, values[safe], out)
    return out


def _touch(m: Model, d: Data, site: np.ndarray) -> jax.Array:
    """Normal contact forces on each site's body whose force ray from the contact point meets the site's zone
    (MuJoCo's touch sensor)."""
    from hurtle.physics.constraint import contact_forces

    dt = d.qpos.dtype
    if m.ncon_max == 0:
        return jnp.zeros((len(site), 1), dt)
    normal = contact_forces(m, d)[:, 0]  # (ncon,)
    body = m.site_bodyid[site]
    b1 = jnp.asarray(m.geom_bodyid)[jnp.maximum(d.contact.geom1, 0)]
    b2 = jnp.asarray(m.geom_bodyid)[jnp.maximum(d.contact.geom2, 0)]
    out = jnp.zeros(len(site), dt)
    for shape in _SITE_SHAPES:
        k = np.nonzero(m.site_type[site] == shape)[0]
        if not k.size:
            continue
        s = site[k]
        on1 = b1[None] == jnp.asarray(body[k])[:, None]  # (n, ncon)
        on2 = b2[None] == jnp.asarray(body[k])[:, None]
        direction = math.normalize(d.contact.frame[:, 0] * normal[:, None])  # (ncon, 3)
        direction = jnp.where(on2[..., None], -direction[None], direction[None])  # pointing away from the body
        hit = ray.ray_geom(
            int(shape),
            d.site_xpos[s][:, None],
            d.site_xmat[s][:, None],
            m.site_size[s][:, None],
            d.contact.pos[None],
            direction,
        )
        counted = (on1 | on2) & (normal[None] > 0) & (hit >= 0)
        out = out.at[k].set(jnp.sum(jnp.where(counted, normal[None], 0.0), axis=1))
    return out[:, None]


def _rangefinder(m: Model, d: Data, site: np.ndarray) -> jax.Array:
    """Distance along each site's z axis to the nearest ray-visible geom not on the site's body, -1 if none
    (mj_ray with flg_static, no group filter)."""
    pnt, vec = d.site_xpos[site], d.site_xmat[site][:, :, 2]
    body = m.site_bodyid[site]
    best = jnp.full(len(site), jnp.inf, pnt.dtype)
    for gtype in np.unique(m.geom_type[m.geom_rayvisible]):
        g = np.nonzero(m.geom_rayvisible & (m.geom_type == gtype))[0]
        if gtype in (MESH, HFIELD):
            shapes = {entry[0]: entry[1:] for entry in m.ray_shapes}
            one = ray.ray_mesh if gtype == MESH else ray.ray_hfield
            x = jnp.stack([one(d.geom_xpos[k], d.geom_xmat[k], *shapes[int(k)], pnt, vec) for k in g], 1)
        else:
            x = ray.ray_geom(
                int(gtype), d.geom_xpos[g][None], d.geom_xmat[g][None], m.geom_size[g][None], pnt[:, None], vec[:, None]
            )
        x = jnp.where(m.geom_bodyid[g][None] != body[:, None], x, -1.0)
        best = jnp.minimum(best, jnp.min(jnp.where(x >= 0, x, jnp.inf), axis=1))
    return jnp.where(jnp.isfinite(best), best, -1.0)[:, None]


CONDATA_SIZE = (1, 3, 3, 1, 3, 3, 3)  # found, force, torque, dist, pos, normal, tangent (mjtConDataField)
REDUCE_NONE, REDUCE_MINDIST, REDUCE_MAXFORCE, REDUCE_NETFORCE = 0, 1, 2, 3


def _contact_match(m: Model, d: Data, i: int) -> tuple[jax.Array, jax.Array]:
    """Which contacts sensor i's objects take part in, and whether to flip each one's normal (matchContact)."""
    t1, id1, t2, id2 = (int(x[i]) for x in (m.sensor_objtype, m.sensor_objid, m.sensor_reftype, m.sensor_refid))
    g = (jnp.maximum(d.contact.geom1, 0), jnp.maximum(d.contact.geom2, 0))
    b = tuple(jnp.asarray(m.geom_bodyid)[x] for x in g)

    def check(k, kind, ident):
        if kind in (0, OBJ_SITE):
            return jnp.ones(m.ncon_max, bool)
        if kind == OBJ_GEOM:
            return g[k] == ident
        if kind == OBJ_BODY:
            return b[k] == ident
        return jnp.asarray(m.tree.body_subtree[ident])[b[k]]  # xbody: the subtree

    m11, m12, m21, m22 = check(0, t1, id1), check(1, t1, id1), check(0, t2, id2), check(1, t2, id2)
    match = d.contact.active & (m11 | m12) & (m21 | m22)
    if t1 == OBJ_SITE:
        match = match & (_inside(m, d, np.full(m.ncon_max, id1), d.contact.pos) > 0)
    if t1 and t2:
        regular, reverse = m11 & m22, m12 & m21
        return match & (regular | reverse), reverse & ~regular
    if t1:
        return match, ~m11
    if t2:
        return match, ~m22
    return match, jnp.zeros(m.ncon_max, bool)


def _contact_sensor(m: Model, d: Data, i: int, forces: jax.Array) -> jax.Array:
    """One contact sensor's data (MuJoCo's mjSENS_CONTACT): the fields of its dataspec for each of its slots,
    filled with the matching contacts chosen by its reduction."""
    dataspec, reduce = int(m.sensor_intprm[i, 0]), int(m.sensor_intprm[i, 1])
    fields = [k for k in range(len(CONDATA_SIZE)) if dataspec & (1 << k)]
    size = sum(CONDATA_SIZE[k] for k in fields)
    num = int(m.sensor_dim[i]) // size
    dt = d.qpos.dtype
    if m.ncon_max == 0:  # no contact slots (contacts disabled): nothing ever matches
        return jnp.zeros(int(m.sensor_dim[i]), dt)
    match, flip = _contact_match(m, d, i)
    found = jnp.sum(match).astype(dt)
    sign = jnp.where(flip, -1.0, 1.0)[:, None]
    if reduce == REDUCE_NETFORCE:
        wrench = forces * sign  # flipped contacts count with the opposite wrench
        weight = jnp.where(match, math.safe_norm(wrench[:, :3]), 0.0)
        point = jnp.sum(weight[:, None] * d.contact.pos, 0) / jnp.maximum(jnp.sum(weight), MINVAL)
        frame = d.contact.frame
        force = math.matvec_t(frame, wrench[:, :3])
        torque = math.matvec_t(frame, wrench[:, 3:]) + math.cross(d.contact.pos - point, force)
        force = jnp.sum(jnp.where(match[:, None], force, 0.0), 0)
        torque = jnp.sum(jnp.where(match[:, None], torque, 0.0), 0)
        values = {
            0: found[None],
            1: force,
            2: torque,
            3: jnp.zeros(1, dt),
            4: point,
            5: jnp.array([1.0, 0, 0], dt),
            6: jnp.array([0.0, 1, 0], dt),
        }
        first = jnp.where(found > 0, jnp.concatenate([values[k] for k in fields]), 0.0)  # no match: all zero
        return jnp.concatenate([first, jnp.zeros((num - 1) * size, dt)])
    rank = jnp.zeros(m.ncon_max, jnp.int32).at[contact_order(m, d)].set(jnp.arange(m.ncon_max, dtype=jnp.int32))
    if reduce == REDUCE_MINDIST:
        criterion = d.contact.dist
    elif reduce == REDUCE_MAXFORCE:
        criterion = -jnp.sum(forces[:, :3] ** 2, -1)
    else:
        criterion = jnp.zeros(m.ncon_max, dt)
    chosen = jnp.lexsort((rank, criterion, ~match))[:num]  # matches first, by criterion, ties in MuJoCo's order
    filled = (jnp.arange(num, dtype=dt) < found)[:, None]
    f = forces[chosen]
    flip_z = jnp.where(flip[chosen], -1.0, 1.0)
    values = {
        0: jnp.broadcast_to(found, (num, 1)),
        1: f[:, :3].at[:, 2].multiply(flip_z),
        2: f[:, 3:6].at[:, 2].multiply(flip_z),
        3: d.contact.dist[chosen][:, None],
        4: d.contact.pos[chosen],
        5: d.contact.frame[chosen, 0] * flip_z[:, None],
        6: d.contact.frame[chosen, 1] * flip_z[:, None],
    }
    slots = jnp.concatenate([values[k] for k in fields], 1)
    return jnp.where(filled, slots, 0.0).reshape(-1)


def _inside(m: Model, d: Data, site: np.ndarray, point: jax.Array) -> jax.Array:
    """1.0 where `point` (n, 3) is inside site `site`'s shape (mju_insideGeom), else 0.0."""
    out = jnp.zeros(len(site), point.dtype)
    for shape in _SITE_SHAPES:
        k = np.nonzero(m.site_type[site] == shape)[0]
        if not k.size:
            continue
        s = site[k]
        vec = point[k] - d.site_xpos[s]
        size = m.site_size[s]
        p = math.matvec_t(d.site_xmat[s], vec)
        if shape == SPHERE:
            inside = math.dot(vec, vec) < size[:, 0] ** 2
        elif shape == CAPSULE:
            z = p[:, 2] - jnp.clip(p[:, 2], -size[:, 1], size[:, 1])
            inside = p[:, 0] ** 2 + p[:, 1] ** 2 + z * z < size[:, 0] ** 2
        elif shape == ELLIPSOID:
            inside = jnp.sum(p * p / (size * size), -1) < 1
        elif shape == CYLINDER:
            inside = (jnp.abs(p[:, 2]) < size[:, 1]) & (p[:, 0] ** 2 + p[:, 1] ** 2 < size[:, 0] ** 2)
        else:
            inside = jnp.all(jnp.abs(p) < size, axis=-1)
        out = out.at[k].set(inside.astype(point.dtype))
    return out


# -- the sensors, type by type: each returns (n, dim) for the sensors `i` of its type --


def _values(m: Model, d: Data, t: int, i: np.ndarray) -> jax.Array:
    objtype, objid = m.sensor_objtype[i], m.sensor_objid[i]
    reftype, refid = m.sensor_reftype[i], m.sensor_refid[i]
    col = lambda x: x[:, None]  # noqa: E731
    if t == S.mjSENS_JOINTPOS:
        return col(d.qpos[m.jnt_qposadr[objid]])
    if t == S.mjSENS_JOINTVEL:
        return col(d.qvel[m.jnt_dofadr[objid]])
    if t == S.mjSENS_TENDONPOS:
        return col(d.ten_length[objid])
    if t == S.mjSENS_TENDONVEL:
        return col(d.ten_velocity[objid])
    if t == S.mjSENS_ACTUATORPOS:
        return col(d.actuator_length[objid])
    if t == S.mjSENS_ACTUATORVEL:
        return col(d.actuator_velocity[objid])
    if t == S.mjSENS_ACTUATORFRC:
        return col(d.actuator_force[objid])
    if t == S.mjSENS_JOINTACTFRC:
        return col(d.qfrc_actuator[m.jnt_dofadr[objid]])
    if t == S.mjSENS_TENDONACTFRC:
        on = (m.actuator_trntype[None] == 3) & (m.actuator_trnid[None, :, 0] == objid[:, None])
        return col(math.const_matmul(on.astype(np.float64), d.actuator_force))
    if t == S.mjSENS_BALLQUAT:
        return math.quat_normalize(d.qpos[m.jnt_qposadr[objid][:, None] + np.arange(4)])
    if t == S.mjSENS_BALLANGVEL:
        return d.qvel[m.jnt_dofadr[objid][:, None] + np.arange(3)]
    if t in _LIMITS:
        from hurtle.physics.constraint import LIMIT_JOINT, LIMIT_TENDON

        row_type, quantity = _LIMITS[t]
        field = {"pos": d.efc_pos - d.efc_margin, "vel": d.efc_vel, "frc": d.efc_force}[quantity]
        rows = _limit_rows(m, LIMIT_JOINT if row_type == "joint" else LIMIT_TENDON, objid)
        return col(_first_active(d, rows, field))
    if t in (S.mjSENS_FRAMEPOS, S.mjSENS_FRAMEXAXIS, S.mjSENS_FRAMEYAXIS, S.mjSENS_FRAMEZAXIS):
        pos, mat = _frame(m, d, objtype, objid)
        val = pos if t == S.mjSENS_FRAMEPOS else mat[:, :, int(t) - int(S.mjSENS_FRAMEXAXIS)]
        has_ref = refid >= 0
        if not has_ref.any():
            return val
        ref_pos, ref_mat = _frame(m, d, np.where(has_ref, reftype, OBJ_XBODY), np.where(has_ref, refid, 0))
        rel = val - ref_pos if t == S.mjSENS_FRAMEPOS else val
        return jnp.where(has_ref[:, None], math.matvec_t(ref_mat, rel), val)
    if t == S.mjSENS_FRAMEQUAT:
        q = _quat(m, d, objtype, objid)
        has_ref = refid >= 0
        if not has_ref.any():
            return q
        ref = _quat(m, d, np.where(has_ref, reftype, OBJ_XBODY), np.where(has_ref, refid, 0))
        return jnp.where(has_ref[:, None], math.quat_mul(math.quat_conj(ref), q), q)
    if t in (S.mjSENS_FRAMELINVEL, S.mjSENS_FRAMEANGVEL):
        vel = object_velocity(m, d, objtype, objid, local=False)
        has_ref = refid >= 0
        if has_ref.any():
            rt, ri = np.where(has_ref, reftype, OBJ_XBODY), np.where(has_ref, refid, 0)
            ref_vel = object_velocity(m, d, rt, ri, local=False)
            pos, _ = _frame(m, d, objtype, objid)
            ref_pos, ref_mat = _frame(m, d, rt, ri)
            rel = vel - ref_vel
            lin = rel[:, 3:] + math.cross(pos - ref_pos, ref_vel[:, :3])
            moved = jnp.concatenate([math.matvec_t(ref_mat, rel[:, :3]), math.matvec_t(ref_mat, lin)], -1)
            vel = jnp.where(has_ref[:, None], moved, vel)
        return vel[:, 3:] if t == S.mjSENS_FRAMELINVEL else vel[:, :3]
    if t in (S.mjSENS_FRAMELINACC, S.mjSENS_FRAMEANGACC):
        acc = object_acceleration(m, d, objtype, objid, local=False)
        return acc[:, 3:] if t == S.mjSENS_FRAMELINACC else acc[:, :3]
    if t in (S.mjSENS_VELOCIMETER, S.mjSENS_GYRO):
        vel = object_velocity(m, d, np.full(len(i), OBJ_SITE), objid, local=True)
        return vel[:, 3:] if t == S.mjSENS_VELOCIMETER else vel[:, :3]
    if t == S.mjSENS_ACCELEROMETER:
        return object_acceleration(m, d, np.full(len(i), OBJ_SITE), objid, local=True)[:, 3:]
    if t in (S.mjSENS_FORCE, S.mjSENS_TORQUE):
        body = m.site_bodyid[objid]
        frc = d.cfrc_int[body]  # (torque, force) about the root's subtree COM
        torque = frc[:, :3] - math.cross(d.site_xpos[objid] - d.subtree_com[m.body_rootid[body]], frc[:, 3:])
        mat = d.site_xmat[objid]
        return math.matvec_t(mat, frc[:, 3:]) if t == S.mjSENS_FORCE else math.matvec_t(mat, torque)
    if t == S.mjSENS_MAGNETOMETER:
        return math.matvec_t(d.site_xmat[objid], jnp.broadcast_to(m.opt.magnetic, (len(i), 3)))
    if t == S.mjSENS_SUBTREECOM:
        return d.subtree_com[objid]
    if t in (S.mjSENS_SUBTREELINVEL, S.mjSENS_SUBTREEANGMOM):
        linvel, angmom = subtree_vel(m, d, objid)
        return linvel if t == S.mjSENS_SUBTREELINVEL else angmom
    if t == S.mjSENS_CLOCK:
        return jnp.broadcast_to(d.time, (len(i), 1))
    if t in (S.mjSENS_E_POTENTIAL, S.mjSENS_E_KINETIC):
        return jnp.broadcast_to(_energy(m, d)[0 if t == S.mjSENS_E_POTENTIAL else 1], (len(i), 1))
    if t == S.mjSENS_TOUCH:
        return _touch(m, d, objid)
    if t == S.mjSENS_RANGEFINDER:
        return _rangefinder(m, d, objid)
    if t == S.mjSENS_INSIDESITE:
        pos, _ = _frame(m, d, objtype, objid)
        body = (objtype == OBJ_BODY) & (objid > 0)
        if body.any():  # a massless body with mass below it: its subtree's COM (as MuJoCo)
            b = np.where(body, objid, 0)
            massless = jnp.asarray(body) & (m.body_mass[b] < MINVAL) & (m.body_subtreemass[b] >= MINVAL)
            pos = jnp.where(massless[:, None], d.subtree_com[b], pos)
        return col(_inside(m, d, refid, pos))
    raise NotImplementedError(f"{m.source}: the {type_name(t)} sensor is not supported by hurtle yet")


def _energy(m: Model, d: Data) -> jax.Array:
    if m.enabled(mujoco.mjtEnableBit.mjENBL_ENERGY):
        return d.energy
    from hurtle.physics.forward import energy

    return energy(m, d)


def sensors(m: Model, d: Data) -> Data:
    """`sensordata` of every sensor (unchanged when the model has none or disables sensors)."""
    if m.nsensor == 0 or m.disabled(mujoco.mjtDisableBit.mjDSBL_SENSOR):
        return d
    from hurtle.physics.constraint import rne_post_constraint

    with jax.named_scope("sensors"):
        types = m.sensor_type
        if np.isin(types, list(_POST)).any():
            d = rne_post_constraint(m, d)
        pieces, where = [], []
        for t in np.unique(types):
            i = np.nonzero(types == t)[0]
            if t == S.mjSENS_CONTACT:  # each its own size: one piece per sensor
                from hurtle.physics.constraint import contact_forces

                forces = contact_forces(m, d) if m.ncon_max else jnp.zeros((0, 6), d.qpos.dtype)
                for k in i:
                    pieces.append(_contact_sensor(m, d, int(k), forces))
                    where.append(m.sensor_adr[k] + np.arange(m.sensor_dim[k]))
                continue
            val = _values(m, d, int(t), i)
            pieces.append(val.reshape(-1))
            where.append((m.sensor_adr[i][:, None] + np.arange(val.shape[1])).ravel())
        data = jnp.concatenate(pieces)[np.argsort(np.concatenate(where))]
        # cutoff: real sensors clamp on both sides, positive ones above (not contact or fromto sensors)
        owner = np.repeat(np.arange(m.nsensor), m.sensor_dim)
        cut = jnp.where(m.sensor_type[owner] == S.mjSENS_CONTACT, 0.0, m.sensor_cutoff[owner])
        kind = m.sensor_datatype[owner]
        data = jnp.where((cut > 0) & (kind == REAL), jnp.clip(data, -cut, cut), data)
        data = jnp.where((cut > 0) & (kind == POSITIVE), jnp.minimum(data, cut), data)
        if types[np.isin(types, [S.mjSENS_E_POTENTIAL, S.mjSENS_E_KINETIC])].size and not m.enabled(
            mujoco.mjtEnableBit.mjENBL_ENERGY
        ):
            d = d.replace(energy=_energy(m, d))  # MuJoCo's energy sensors compute and keep it
        return d.replace(sensordata=data)


def read(m: Model, d: Data, name: str) -> jax.Array:
    """The sensor `name`'s values `(..., dim)` from a (batched) `Data`: MuJoCo's `data.sensor(name).data`."""
    i = m.name2id("sensor", name)
    adr, dim = int(m.sensor_adr[i]), int(m.sensor_dim[i])
    return d.sensordata[..., adr : adr + dim]


def noisy(m: Model, d: Data, key: jax.Array) -> jax.Array:
    """`d.sensordata` with each sensor's `noise` (a standard deviation) added as MuJoCo 2 did: Gaussian for real
    sensors, kept non-negative for positive ones (where positive), a rotation by a Gaussian angle about a random
    axis for axis and quaternion sensors. MuJoCo's engine adds none; this is the explicit opt-in."""
    data = d.sensordata
    if m.nsensor == 0:
        return data
    owner = np.repeat(np.arange(m.nsensor), m.sensor_dim)
    kind = m.sensor_datatype[owner]
    k1, k2, k3 = jax.random.split(key, 3)
    sigma = m.sensor_noise[owner]
    step = sigma * jax.random.normal(k1, data.shape, data.dtype)
    data = jnp.where(kind == REAL, data + step, data)
    data = jnp.where((kind == POSITIVE) & (data > 0), jnp.maximum(0.0, data + step), data)
    rotated = np.nonzero(np.isin(m.sensor_datatype, (AXIS, QUATERNION)))[0]
    if rotated.size:
        angle = m.sensor_noise[rotated] * jax.random.normal(k2, (rotated.size,), data.dtype)
        axis = math.normalize(jax.random.normal(k3, (rotated.size, 3), data.dtype))
        q = math.axis_angle_to_quat(axis, angle)
        for n, s in enumerate(rotated):
            adr = int(m.sensor_adr[s])
            if m.sensor_datatype[s] == AXIS:
                data = data.at[adr : adr + 3].set(math.quat_rot(q[n], data[adr : adr + 3]))
            else:
                data = data.at[adr : adr + 4].set(math.quat_mul(data[adr : adr + 4], q[n]))
    return data


__all__ = ["SUPPORTED", "check", "noisy", "read", "object_acceleration", "object_velocity", "sensors", "subtree_vel"]
