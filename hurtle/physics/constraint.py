"""Constraint rows (`efc_*`) and MuJoCo's soft-constraint model.

Rows have a static layout fixed when the model is built (`Model.efc`): equality rows, then friction
loss, then limits, then contacts, in MuJoCo's order. A row MuJoCo would not instantiate in the
current state (an inactive equality, a limit farther than its margin) stays in place with
`efc_active` False and contributes nothing, so shapes never depend on the state.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import inertia, math, tracing
from hurtle.physics.collision import slot_geoms
from hurtle.physics.dataclass import pytree_dataclass, static_field
from hurtle.physics.types import JNT_BALL, Data, Model

_DSBL = mujoco.mjtDisableBit
_ENBL = mujoco.mjtEnableBit

# mjtConstraint
EQUALITY, FRICTION_DOF, FRICTION_TENDON, LIMIT_JOINT, LIMIT_TENDON = 0, 1, 2, 3, 4
CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC = 5, 6, 7
# mjtConstraintState
SATISFIED, QUADRATIC, LINEARNEG, LINEARPOS, CONE = 0, 1, 2, 3, 4
# mjtEq
EQ_CONNECT, EQ_WELD, EQ_JOINT, EQ_TENDON = 0, 1, 2, 3
OBJ_SITE = 6
_CONTACTS = (CONTACT_FRICTIONLESS, CONTACT_PYRAMIDAL, CONTACT_ELLIPTIC)
MINIMP, MAXIMP = 0.0001, 0.9999
DEFAULT_SOLREF = (0.02, 1.0)


@pytree_dataclass
class Layout:
    """Static row layout: which element each row belongs to and how rows group into constraints."""

    nefc: int = static_field()
    ne: int = static_field()
    nf: int = static_field()
    type: np.ndarray = static_field()  # (nefc,) mjtConstraint
    id: np.ndarray = static_field()  # (nefc,) element id (equality, dof, joint, tendon, contact)
    group: np.ndarray = static_field()  # (nefc,) first row of the row's constraint
    side: np.ndarray = static_field()  # (nefc,) limit side: -1 lower, +1 upper, 0 otherwise
    eq_row: np.ndarray = static_field()  # (neq,) first row of each equality (-1 if none)


def build_layout(m: mujoco.MjModel, contact_dims=()) -> Layout:
    """Rows for every constraint the model could instantiate under its enabled flags; contacts get
    one row (condim 1) or 2 (condim - 1) pyramid edges per slot of `contact_dims`."""
    dsbl = m.opt.disableflags
    types, ids, sides, groups = [], [], [], []
    eq_row = -np.ones(m.neq, int)

    def add(t, i, n, side=0):
        start = len(types)
        types.extend([t] * n)
        ids.extend([i] * n)
        sides.extend([side] * n)
        groups.extend([start] * n)
        return start

    if not dsbl & _DSBL.mjDSBL_CONSTRAINT:
        if not dsbl & _DSBL.mjDSBL_EQUALITY:
            for e in range(m.neq):
                size = {EQ_CONNECT: 3, EQ_WELD: 6, EQ_JOINT: 1, EQ_TENDON: 1}[int(m.eq_type[e])]
                eq_row[e] = add(EQUALITY, e, size)
        ne = len(types)
        if not dsbl & _DSBL.mjDSBL_FRICTIONLOSS:
            for v in range(m.nv):
                if m.dof_frictionloss[v] > 0:
                    add(FRICTION_DOF, v, 1)
            for t in range(m.ntendon):
                if m.tendon_frictionloss[t] > 0:
                    add(FRICTION_TENDON, t, 1)
        nf = len(types) - ne
        if not dsbl & _DSBL.mjDSBL_LIMIT:
            for j in range(m.njnt):
                if not m.jnt_limited[j]:
                    continue
                if m.jnt_type[j] == JNT_BALL:
                    add(LIMIT_JOINT, j, 1)
                else:
                    add(LIMIT_JOINT, j, 1, side=-1)
                    add(LIMIT_JOINT, j, 1, side=1)
            for t in range(m.ntendon):
                if m.tendon_limited[t]:
                    add(LIMIT_TENDON, t, 1, side=-1)
                    add(LIMIT_TENDON, t, 1, side=1)
        if not dsbl & _DSBL.mjDSBL_CONTACT:
            elliptic = m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
            for i, dim in enumerate(contact_dims):
                if dim == 1:
                    add(CONTACT_FRICTIONLESS, i, 1)
                elif elliptic:
                    add(CONTACT_ELLIPTIC, i, int(dim))
                else:
                    add(CONTACT_PYRAMIDAL, i, 2 * (int(dim) - 1))
    else:
        ne = nf = 0
    arr = lambda x: np.array(x, dtype=np.int32)  # noqa: E731
    return Layout(
        nefc=len(types),
        ne=ne,
        nf=nf,
        type=arr(types),
        id=arr(ids),
        group=arr(groups),
        side=arr(sides),
        eq_row=arr(eq_row),
    )


# the solver's working set when the file does not size it: from this many rows up, a quarter of them
# (at least WORKING_MIN), in multiples of 8
WORKING_FROM, WORKING_MIN = 128, 64


def working_rows(layout: Layout, njmax: int | None, source: str, explicit: bool = False) -> int:
    """The solver's working set (`Model.njmax`): how many rows its Newton trips run on, the active rows
    gathered into them; 0 for every row. `njmax` is the file's `<size njmax>` or, `explicit`, the
    caller's; negative (MuJoCo's default) chooses from the layout; 0 turns the working set off. A set as
    large as half the rows saves nothing and is off. Elliptic cones are solved on every row (a size from
    the file is then ignored; one from the caller raises)."""
    if njmax is None or isinstance(njmax, bool) or not isinstance(njmax, (int, np.integer)):
        raise ValueError(f"{source}: njmax must be a number of constraint rows, got {njmax!r}")
    nefc = layout.nefc
    if np.any(layout.type == CONTACT_ELLIPTIC):
        if explicit and njmax > 0:
            raise NotImplementedError(f"{source}: njmax (the solver's working set) with elliptic cones (<option cone>)")
        return 0
    if njmax < 0:
        if nefc < WORKING_FROM:
            return 0
        njmax = -(-max(WORKING_MIN, nefc // 4) // 8) * 8
    return int(njmax) if 0 < njmax and 2 * njmax <= nefc else 0


def jac_point(m: Model, d: Data, body: np.ndarray, point: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Translational and rotational Jacobians (k, 3, nv) of world points fixed to bodies (mj_jac)."""
    mask, root = m.tree.body_dof_anc[body][:, None, :], m.body_rootid[body]
    offset = point - d.subtree_com[root]  # (k, 3)
    ang, lin = d.cdof[:, :3].T, d.cdof[:, 3:].T  # (3, nv)
    jacr = jnp.where(mask, ang[None], 0.0)
    jacp = jnp.where(mask, lin[None] + math.cross(ang.T[None], offset[:, None, :]).transpose(0, 2, 1), 0.0)
    return jacp, jacr


def _eq_bodies(m: Model, eqs: np.ndarray):
    """Bodies of the two objects of equalities (sites resolve to their bodies)."""
    o1, o2 = m.eq_obj1id[eqs], m.eq_obj2id[eqs]
    site = m.eq_objtype[eqs] == OBJ_SITE
    if not np.any(site):
        return o1, o2
    return np.where(site, m.site_bodyid[np.where(site, o1, 0)], o1), np.where(
        site, m.site_bodyid[np.where(site, o2, 0)], o2
    )


def _eq_anchors(m: Model, d: Data, eqs: np.ndarray, weld: bool):
    """World anchor points and bodies of connect/weld equalities (mj_equalityAnchors)."""
    o1, o2 = m.eq_obj1id[eqs], m.eq_obj2id[eqs]
    data = m.eq_data[eqs]
    site = m.eq_objtype[eqs] == OBJ_SITE
    b1, b2 = _eq_bodies(m, eqs)
    local1, local2 = (data[:, 3:6], data[:, 0:3]) if weld else (data[:, 0:3], data[:, 3:6])
    p1 = d.xpos[o1 * ~site] + math.matvec(d.xmat[o1 * ~site], local1)
    p2 = d.xpos[o2 * ~site] + math.matvec(d.xmat[o2 * ~site], local2)
    if m.nsite and np.any(site):
        p1 = jnp.where(site[:, None], d.site_xpos[np.where(site, o1, 0)], p1)
        p2 = jnp.where(site[:, None], d.site_xpos[np.where(site, o2, 0)], p2)
    return p1, p2, b1, b2


def _weld_frames(m: Model, d: Data, eqs: np.ndarray, b1, b2):
    """q0 * relpose (or body1 * site1 quat) and neg(q1) (or of body2 * site2 quat) for welds."""
    o1, o2 = m.eq_obj1id[eqs], m.eq_obj2id[eqs]
    site = m.eq_objtype[eqs] == OBJ_SITE
    q0r = math.quat_mul(d.xquat[b1], m.eq_data[eqs, 6:10])
    q1 = d.xquat[b2]
    if m.nsite and np.any(site):
        s1, s2 = np.where(site, o1, 0), np.where(site, o2, 0)
        q0r = jnp.where(site[:, None], math.quat_mul(d.xquat[b1], m.site_quat[s1]), q0r)
        q1 = jnp.where(site[:, None], math.quat_mul(d.xquat[b2], m.site_quat[s2]), q1)
    return q0r, math.quat_conj(q1), site


def _connect_weld(m: Model, d: Data):
    """Each kind of connect/weld equality with rows: (weld?, ids, anchor1, anchor2, body1, body2)."""
    for kind in (EQ_CONNECT, EQ_WELD):
        eqs = np.nonzero((m.eq_type == kind) & (m.efc.eq_row >= 0))[0]
        if eqs.size:
            weld = kind == EQ_WELD
            yield (weld, eqs, *_eq_anchors(m, d, eqs, weld))


def _axis_quat(v):
    return jnp.concatenate([jnp.zeros_like(v[..., :1]), v], -1)


def _equality_rows(m: Model, d: Data):
    """(rows, J, pos, active) pieces for every equality constraint."""
    lay = m.efc
    out = []
    eq_type = m.eq_type
    has_rows = lay.eq_row >= 0
    for weld, eqs, p1, p2, b1, b2 in _connect_weld(m, d):
        jp1, jr1 = jac_point(m, d, b1, p1)
        jp2, jr2 = jac_point(m, d, b2, p2)
        jac = jp1 - jp2
        pos = p1 - p2
        if weld:
            ts = m.eq_data[eqs, 10]
            q0r, negq1, _ = _weld_frames(m, d, eqs, b1, b2)
            quat2 = math.quat_mul(negq1, q0r)
            pos = jnp.concatenate([pos, ts[:, None] * quat2[:, 1:]], -1)
            axes = _axis_quat(jnp.swapaxes(jr1 - jr2, 1, 2))  # (k, nv, 4)
            q3 = math.quat_mul(math.quat_mul(negq1[:, None], axes), q0r[:, None])
            jrot = 0.5 * jnp.swapaxes(q3[..., 1:], 1, 2) * ts[:, None, None]
            jac = jnp.concatenate([jac, jrot], 1)
        rows = lay.eq_row[eqs][:, None] + np.arange(jac.shape[1])
        out.append((rows, jac, pos, eqs))
    for kind in (EQ_JOINT, EQ_TENDON):
        eqs = np.nonzero((eq_type == kind) & has_rows)[0]
        if not eqs.size:
            continue
        o1, o2 = m.eq_obj1id[eqs], m.eq_obj2id[eqs]
        two = o2 >= 0
        o2s = np.where(two, o2, 0)
        if kind == EQ_JOINT:
            x1 = d.qpos[m.jnt_qposadr[o1]] - m.qpos0[m.jnt_qposadr[o1]]
            x2 = d.qpos[m.jnt_qposadr[o2s]] - m.qpos0[m.jnt_qposadr[o2s]]
            eye = np.eye(m.nv, dtype=d.qpos.dtype)
            j1, j2 = eye[m.jnt_dofadr[o1]], eye[m.jnt_dofadr[o2s]]
        else:
            x1 = d.ten_length[o1] - m.tendon_length0[o1]
            x2 = d.ten_length[o2s] - m.tendon_length0[o2s]
            j1, j2 = d.ten_J[o1], d.ten_J[o2s]
        c = m.eq_data[eqs]
        poly = c[:, 1] * x2 + c[:, 2] * x2**2 + c[:, 3] * x2**3 + c[:, 4] * x2**4
        deriv = c[:, 1] + 2 * c[:, 2] * x2 + 3 * c[:, 3] * x2**2 + 4 * c[:, 4] * x2**3
        pos = x1 - c[:, 0] - jnp.where(two, poly, 0.0)
        jac = j1 - jnp.where(two, deriv, 0.0)[:, None] * j2
        rows = lay.eq_row[eqs][:, None]
        out.append((rows, jac[:, None, :], pos[:, None], eqs))
    return out


@tracing.inline_numpy
def make_constraint(m: Model, d: Data) -> Data:
    """Constraint Jacobian, positions, margins, regularisers and impedances (mj_makeConstraint)."""
    lay = m.efc
    n, nv = lay.nefc, m.nv
    if n == 0:
        return d
    with jax.named_scope("make_constraint"):
        dt = d.qpos.dtype
        if m.ncon_max and m.enabled(_ENBL.mjENBL_OVERRIDE):
            # MuJoCo's global contact friction override (mj_assignFriction)
            fr = jnp.broadcast_to(jnp.maximum(1e-5, m.opt.o_friction), d.contact.friction.shape)
            d = d.replace(contact=d.contact.replace(friction=fr))
        # every kind of row contributes (rows, values) pieces; the arrays are assembled once at the
        # end (a concatenation, and one gather when the pieces are not already in row order): a
        # scatter per kind and field made one XLA kernel each
        Js, poss, actives = [], [], []
        typ, ids, side = lay.type, lay.id, lay.side
        solref, solimp, margin, imp_margin, floss, bound, inv_weight = _row_params(m, d)
        # equality
        for rows, jac, p, eqs in _equality_rows(m, d):
            nonempty = jnp.any(jac != 0, axis=(1, 2))  # MuJoCo drops all-zero equalities
            act = d.eq_active[eqs] & nonempty
            Js.append((rows, jac))
            poss.append((rows, p))
            actives.append((rows, jnp.broadcast_to(act[:, None], rows.shape)))
        # friction loss
        r = np.nonzero(typ == FRICTION_DOF)[0]
        if r.size:
            Js.append((r, np.eye(nv, dtype=dt)[ids[r]]))
            actives.append((r, np.ones(r.size, bool)))
        r = np.nonzero(typ == FRICTION_TENDON)[0]
        if r.size:
            Js.append((r, d.ten_J[ids[r]]))
            actives.append((r, np.ones(r.size, bool)))
        # joint limits: scalar joints each side, ball joints as a cone on the rotation angle
        r = np.nonzero((typ == LIMIT_JOINT) & (side != 0))[0]
        if r.size:
            j = ids[r]
            value = d.qpos[m.jnt_qposadr[j]]
            dist = side[r].astype(dt) * (math.take(bound, r) - value)
            Js.append((r, -side[r].astype(dt)[:, None] * np.eye(nv, dtype=dt)[m.jnt_dofadr[j]]))
            poss.append((r, dist))
            actives.append((r, dist < math.take(margin, r)))
        r = np.nonzero((typ == LIMIT_JOINT) & (side == 0))[0]
        if r.size:
            j = ids[r]
            quat = math.quat_normalize(d.qpos[m.jnt_qposadr[j][:, None] + np.arange(4)])
            rv = math.quat_to_rotvec(quat)
            angle = math.safe_norm(rv)
            axis = rv / jnp.maximum(angle, math.MINVAL)[:, None]
            axis = jnp.where((angle < math.MINVAL)[:, None], jnp.array([1.0, 0, 0], dt), axis)
            dist = math.take(bound, r) - angle
            onehot = np.eye(nv, dtype=dt)[m.jnt_dofadr[j][:, None] + np.arange(3)]  # (k, 3, nv)
            Js.append((r, -jnp.sum(axis[:, :, None] * onehot, 1)))
            poss.append((r, dist))
            actives.append((r, dist < math.take(margin, r)))
        r = np.nonzero(typ == LIMIT_TENDON)[0]
        if r.size:
            t = ids[r]
            dist = side[r].astype(dt) * (math.take(bound, r) - d.ten_length[t])
            Js.append((r, -side[r].astype(dt)[:, None] * d.ten_J[t]))
            poss.append((r, dist))
            actives.append((r, dist < math.take(margin, r)))

        con = d.contact
        normal_only = m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC  # elliptic: pos on the normal row only
        for rows, jac, slots, moved in _contact_rows(m, d):
            keep = (np.arange(rows.shape[1]) == 0) | (not normal_only)
            # (math.take: the slots in order are the arrays themselves, not gathers, which XLA makes a
            # kernel each, hoisted out of a rollout's loop for the model-only fields)
            act = math.take(con.active, slots) & moved  # MuJoCo skips contacts no dof moves
            Js.append((rows, jac))
            poss.append((rows, jnp.where(keep, math.take(con.dist, slots)[:, None], 0.0)))
            actives.append((rows, jnp.broadcast_to(act[:, None], rows.shape)))
        J = math.assemble(n, Js, jnp.zeros(nv, dt))
        pos = math.assemble(n, poss, jnp.zeros((), dt))
        active = math.assemble(n, actives, jnp.zeros((), bool))

        diag = _diag_exact(m, d, J) if inv_weight is None else inv_weight
        R, K, B, imp = _impedance(m, solref, solimp, pos, imp_margin, diag)
        R = _contact_regulariser(m, d, R)
        diag = R * imp / (1.0 - imp)
        # efc_KBIP is written whole: selects, not a minor-axis concatenation (math.stack_select)
        kbip = math.stack_select([K, B, imp, jnp.zeros_like(imp)])
        return d.replace(
            efc_J=J,
            efc_pos=pos,
            efc_margin=margin,
            efc_frictionloss=floss,
            efc_active=active,
            efc_diagA=diag,
            efc_R=R,
            efc_D=1.0 / R,
            efc_KBIP=kbip,
        )


def _contact_rows(m: Model, d: Data):
    """(rows, J, slots, moved) per contact dimension: the rows are the normal, or the pyramid edges
    N +- mu_k T_k; `moved` whether any dof moves either body (MuJoCo skips a contact none does)."""
    lay = m.efc
    con = d.contact
    geoms = slot_geoms(m)
    out = []
    for dim in (1, 3, 4, 6):
        first = np.nonzero(np.isin(lay.type, _CONTACTS) & (lay.group == np.arange(lay.nefc)))[0]
        first = first[m.contact_dim[lay.id[first]] == dim]
        if not first.size:
            continue
        slots = lay.id[first]
        if geoms is None:  # caller-filled slots: the bodies are data
            bodyid = jnp.asarray(m.geom_bodyid)
            b1, b2 = bodyid[con.geom1[slots]], bodyid[con.geom2[slots]]
        else:
            b1, b2 = m.geom_bodyid[geoms[0][slots]], m.geom_bodyid[geoms[1][slots]]
        # rows: normal, two tangents, then rotations about the normal and the tangents
        pos, frame = math.take(con.pos, slots), math.take(con.frame, slots)
        a, moved = _contact_jac(m, d, b1, b2, pos, frame, rotation=dim > 3)
        if dim == 1:
            jac = a[:, :1]
        elif m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC:
            jac = a[:, :dim]
        else:
            mu = math.take(con.friction, slots)[:, : dim - 1, None]  # (k, dim-1, 1)
            edges = jnp.stack([a[:, :1] + mu * a[:, 1:dim], a[:, :1] - mu * a[:, 1:dim]], 2)  # (k, dim-1, 2, nv)
            jac = edges.reshape(len(slots), 2 * (dim - 1), m.nv)
        out.append((first[:, None] + np.arange(jac.shape[1]), jac, slots, moved))
    return out


def _contact_jac(m: Model, d: Data, b1, b2, point: jax.Array, frame: jax.Array, rotation: bool):
    """frame @ (J(b2, point) - J(b1, point)) for k contacts: (k, 3, nv) translational rows, then
    (k, 3, nv) rotational ones when `rotation` (mj_jacDifPair, rotated into the contact frame); and
    (k,) whether any dof moves either body (mj_jacDifPair's dof count is not zero).

    The dofs that move both bodies cancel exactly (the same root, so the same Jacobian column), so
    only each body's own dofs contribute: dof v of body 2 gives F lin_v + F (ang_v x off2) =
    F lin_v + H2 ang_v with H2's rows off2 x F_i (off = point - subtree_com[root]), body 1's the same
    negated. Bodies given as numpy arrays (contact slots fixed by the model) make the dof masks
    constants; everything is multiply-adds over (k, 3, nv), which XLA fuses (a batched 3x3 product
    per contact ran as a slow reduction kernel).
    """
    anc = m.tree.body_dof_anc
    if isinstance(b1, np.ndarray) and isinstance(b2, np.ndarray):
        m1, m2, rootid = anc[b1], anc[b2], m.body_rootid
    else:
        anc = jnp.asarray(anc)
        m1, m2, rootid = anc[b1], anc[b2], jnp.asarray(m.body_rootid)
    own1, own2 = m1 & ~m2, m2 & ~m1  # (k, nv)
    dt = frame.dtype
    sign = (own2.astype(dt) - own1.astype(dt))[:, None, :]  # (k, 1, nv)
    ang, lin = d.cdof[:, :3], d.cdof[:, 3:]  # (nv, 3)

    def rotate(f, v):  # (k, 3, 3) rows dotted with (nv, 3) vectors -> (k, 3, nv)
        return sum(f[:, :, j, None] * v[None, None, :, j] for j in range(3))

    trans = sign * rotate(frame, lin)
    for own, b, s in ((own2, b2, 1.0), (own1, b1, -1.0)):
        if isinstance(own, np.ndarray) and not own.any():
            continue  # no dofs of its own (the world, or a body welded to it)
        off = point - d.subtree_com[rootid[b]]  # (k, 3)
        h = math.cross(off[:, None, :], s * frame)  # (k, 3, 3): +-(off x F_i)
        trans = trans + jnp.where(own[:, None, :], rotate(h, ang), 0.0)
    moved = (m1 | m2).any(-1)
    if not rotation:
        return trans, moved
    return jnp.concatenate([trans, sign * rotate(frame, ang)], 1), moved


def _contact_regulariser(m: Model, d: Data, R: jax.Array) -> jax.Array:
    """Frictional contacts: R of the friction directions from impratio, one R for all pyramid edges;
    elliptic cones scale each friction direction's R by its friction coefficient."""
    lay = m.efc
    ell = np.nonzero((lay.type == CONTACT_ELLIPTIC) & (lay.group != np.arange(lay.nefc)))[0]
    if ell.size:
        first = lay.group[ell]
        j = ell - first  # 1 .. dim-1
        r1 = R[first] / jnp.maximum(math.MINVAL, m.opt.impratio)
        fr = d.contact.friction[lay.id[ell]]
        f0 = fr[:, 0]
        fj = fr[np.arange(ell.size), j - 1]
        R = R.at[ell].set(jnp.where(j == 1, r1, r1 * f0 * f0 / (fj * fj)))
    first = np.nonzero((lay.type == CONTACT_PYRAMIDAL) & (lay.group == np.arange(lay.nefc)))[0]
    if not first.size:
        return R
    slots = lay.id[first]
    r0 = R[first]
    r1 = r0 / jnp.maximum(math.MINVAL, m.opt.impratio)
    mu = math.take(d.contact.friction[:, 0], slots) * jnp.sqrt(r1 / r0)
    rpy = 2.0 * mu * mu * r0
    rows = np.nonzero(lay.type == CONTACT_PYRAMIDAL)[0]
    index = np.searchsorted(first, lay.group[rows])
    return R.at[rows].set(rpy[index])


def _diag_exact(m: Model, d: Data, J: jax.Array) -> jax.Array:
    """The diagonal of J M^-1 J' (under the `diagexact` enable flag)."""
    # M^-1 by its columns, then a product: solving for J' directly is nefc right-hand sides per world,
    # which `linalg` must split into one LAPACK call per world (see its docstring) at large batches
    minv = inertia.solve_m(m, d, jnp.eye(m.nv, dtype=J.dtype))
    return jnp.sum(J * (J @ minv), axis=1)


def _kind_rows(lay: Layout, kind) -> np.ndarray:
    """The rows of one kind (`_CONTACTS`: of every contact), in order."""
    return np.nonzero(np.isin(lay.type, kind))[0]


def _inv_weight(m: Model, d: Data) -> dict:
    """Approximate diagonal of J M^-1 J' from the model's invweight0 (mj_diagApprox), by kind of row:
    {kind: values of the rows `_kind_rows(lay, kind)`, in order} (`_CONTACTS` for every contact)."""
    lay = m.efc
    dt = d.qpos.dtype
    pieces = {}
    typ, ids = lay.type, lay.id
    iw = m.body_invweight0
    r = np.nonzero(typ == EQUALITY)[0]
    if r.size:
        e = ids[r]
        et = m.eq_type[e]
        o1, o2 = m.eq_obj1id[e], m.eq_obj2id[e]
        b1, b2 = _eq_bodies(m, e)
        rot = ((et == EQ_WELD) & (r - lay.group[r] > 2)).astype(int)
        body_w = iw[b1, rot] + iw[b2, rot]
        two = o2 >= 0
        o2s = np.where(two, o2, 0)
        if m.ntendon:
            t1 = m.tendon_invweight0[np.where(et == EQ_TENDON, o1, 0)]
            t2 = m.tendon_invweight0[np.where(et == EQ_TENDON, o2s, 0)]
        else:
            t1 = t2 = jnp.zeros(r.size, dt)
        jw1 = m.dof_invweight0[m.jnt_dofadr[np.where(et == EQ_JOINT, o1, 0)]] if m.nv else t1
        jw2 = m.dof_invweight0[m.jnt_dofadr[np.where(et == EQ_JOINT, o2s, 0)]] if m.nv else t2
        scalar = jnp.where(et == EQ_JOINT, jw1 + jnp.where(two, jw2, 0.0), t1 + jnp.where(two, t2, 0.0))
        pieces[EQUALITY] = jnp.where((et == EQ_CONNECT) | (et == EQ_WELD), body_w, scalar)
    r = np.nonzero(typ == FRICTION_DOF)[0]
    if r.size:
        pieces[FRICTION_DOF] = m.dof_invweight0[ids[r]]
    r = np.nonzero(typ == LIMIT_JOINT)[0]
    if r.size:
        pieces[LIMIT_JOINT] = m.dof_invweight0[m.jnt_dofadr[ids[r]]]
    for kind in (FRICTION_TENDON, LIMIT_TENDON):
        r = np.nonzero(typ == kind)[0]
        if r.size:
            pieces[kind] = m.tendon_invweight0[ids[r]]
    r = np.nonzero(np.isin(typ, _CONTACTS))[0]
    if r.size:
        con = d.contact
        slot = ids[r]
        geoms = slot_geoms(m)
        if geoms is None:  # caller-filled slots: their geoms are traced
            bodies = jnp.asarray(m.geom_bodyid)
            w1, w2 = iw[bodies[con.geom1[slot]]], iw[bodies[con.geom2[slot]]]
        else:
            w1, w2 = iw[m.geom_bodyid[geoms[0][slot]]], iw[m.geom_bodyid[geoms[1][slot]]]
        tran, rot = w1[:, 0] + w2[:, 0], w1[:, 1] + w2[:, 1]
        k = (r - lay.group[r]) // 2  # friction direction of each pyramid edge
        fri = con.friction[slot, np.minimum(k, 4)]
        edge = tran + fri * fri * jnp.where(k < 2, tran, rot)
        ell = jnp.where(r - lay.group[r] < 3, tran, rot)
        pieces[_CONTACTS] = jnp.where(
            typ[r] == CONTACT_FRICTIONLESS, tran, jnp.where(typ[r] == CONTACT_ELLIPTIC, ell, edge)
        )
    return pieces


def _row_params(m: Model, d: Data):
    """Every row's model parameters: solref (n, 2) and solimp (n, 5), sanitised as MuJoCo's
    getsolparam; and (n,) each: the margin (`efc_margin`), the impedance's margin (a contact's on
    every row of it), the friction loss, a limit row's bound (the end of the range on its side; a ball
    joint's largest) and, unless `diagexact` is on, the approximate diagonal of J M^-1 J'
    (mj_diagApprox). They are the columns of one array, gathered once from the kinds' tables with
    static row indices and sanitised as a whole: a rollout's loop reads each model-only array as a
    kernel of its own (XLA hoists it out of the loop), so the rows' parameters are one kernel, not
    one per field and kind."""
    lay = m.efc
    typ, ids, side = lay.type, lay.id, lay.side
    n = lay.nefc
    dt = d.qpos.dtype

    weights = None if m.enabled(_ENBL.mjENBL_DIAGEXACT) else _inv_weight(m, d)

    def sanitised(ref, imp):
        """solref and solimp as MuJoCo's getsolparam makes them: a mixed-sign solref is the default,
        the time constant at least two steps (unless `refsafe` is off), solimp within its bounds."""
        ref, imp = jnp.asarray(ref, dt), jnp.asarray(imp, dt)
        mixed = (ref[:, :1] > 0) ^ (ref[:, 1:] > 0)
        ref = jnp.where(mixed, np.array(DEFAULT_SOLREF, dt), ref)
        if not m.disabled(_DSBL.mjDSBL_REFSAFE):  # the time constant, where positive
            ref = jnp.where((np.arange(2) == 0) & (ref > 0), jnp.maximum(ref, 2 * m.opt.timestep), ref)
        lo = np.array([MINIMP, MINIMP, 0.0, MINIMP, 1.0], dt)
        hi = np.array([MAXIMP, MAXIMP, np.inf, MAXIMP, np.inf], dt)
        return ref, jnp.minimum(jnp.maximum(imp, lo), hi)

    sources, index = [], np.zeros(n, int)  # the kinds' source tables, and each row's source row

    def add(kind, rows, i, ref, imp, margin=None, floss=None, bound=None):
        """The rows `rows` read source rows `i` of a table of solref and solimp (sanitised), margin,
        frictionloss and bound (each (nsrc,), 0 if None)."""
        ref, imp = sanitised(ref, imp)
        extra = [
            jnp.zeros((len(ref), 1), dt) if x is None else jnp.asarray(x, dt)[:, None] for x in (margin, floss, bound)
        ]
        index[rows] = sum(len(x) for x in sources) + i
        sources.append(jnp.concatenate([ref, imp] + extra, 1))

    r = np.nonzero(typ == EQUALITY)[0]
    if r.size:
        add(EQUALITY, r, ids[r], m.eq_solref, m.eq_solimp)
    for t, ref, imp, floss in (
        (FRICTION_DOF, m.dof_solref, m.dof_solimp, m.dof_frictionloss),
        (FRICTION_TENDON, m.tendon_solref_fri, m.tendon_solimp_fri, m.tendon_frictionloss),
    ):
        r = np.nonzero(typ == t)[0]
        if r.size:
            add(t, r, ids[r], ref, imp, floss=floss)
    for t, ref, imp, margin, rng in (
        (LIMIT_JOINT, m.jnt_solref, m.jnt_solimp, m.jnt_margin, m.jnt_range),
        (LIMIT_TENDON, m.tendon_solref_lim, m.tendon_solimp_lim, m.tendon_margin, m.tendon_range),
    ):
        r = np.nonzero(typ == t)[0]
        if r.size:
            # sources: each joint (tendon) three times, with the lower end, the upper end, then the
            # largest (ball joints) as its bound
            rng = jnp.asarray(rng, dt)
            ends = jnp.concatenate([rng[:, 0], rng[:, 1], jnp.max(rng, axis=-1)])
            three = [jnp.concatenate([x] * 3) for x in (ref, imp, margin)]
            i = ids[r] + len(rng) * np.select([side[r] < 0, side[r] > 0], [0, 1], 2)
            add(t, r, i, three[0], three[1], margin=three[2], bound=ends)
    r = np.nonzero(np.isin(typ, _CONTACTS))[0]
    if r.size:
        con = d.contact
        if m.enabled(_ENBL.mjENBL_OVERRIDE):  # MuJoCo's global contact overrides
            ref = jnp.broadcast_to(m.opt.o_solref, (m.ncon_max, 2))
            imp = jnp.broadcast_to(m.opt.o_solimp, (m.ncon_max, 5))
        else:
            ref, imp = con.solref, con.solimp
        add(_CONTACTS, r, ids[r], ref, imp, margin=con.includemargin)
    # one gather of one table (XLA fuses it into one kernel; a gather per kind made more)
    table = jnp.concatenate(sources)[index]
    if weights is not None:
        pieces = [(_kind_rows(lay, kind), w) for kind, w in weights.items()]
        table = jnp.concatenate([table, math.assemble(n, pieces, jnp.zeros((), dt))[:, None]], 1)
    # elliptic friction rows use solreffriction when it is set (a mixed sign counts as unset)
    fr = (typ == CONTACT_ELLIPTIC) & (np.arange(n) != lay.group)
    if fr.any():
        srf = d.contact.solreffriction[np.where(fr, ids, 0)]
        use = fr & ((srf[:, 0] != 0) | (srf[:, 1] != 0)) & ~((srf[:, 0] > 0) ^ (srf[:, 1] > 0))
        srf = jnp.pad(sanitised(srf, jnp.zeros((n, 5), dt))[0], ((0, 0), (0, table.shape[1] - 2)))
        table = jnp.where(use[:, None] & (np.arange(table.shape[1]) < 2), srf, table)
    solref, solimp, imp_margin, floss, bound = table[:, :2], table[:, 2:7], table[:, 7], table[:, 8], table[:, 9]
    inv_weight = table[:, 10] if table.shape[1] > 10 else None
    # an elliptic contact's margin (efc_margin) is its normal row's alone
    off_normal = np.isin(typ, _CONTACTS) & (np.arange(n) != lay.group) & (m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC)
    margin = jnp.where(off_normal, 0.0, imp_margin) if off_normal.any() else imp_margin
    return solref, solimp, margin, imp_margin, floss, bound, inv_weight


def _row_constants(m: Model, solref: jax.Array, solimp: jax.Array) -> jax.Array:
    """What the impedance and the reference acceleration need of each row's solref and solimp (model
    constants), as the columns of one array (n, 9):

    - the impedance curve's width (1 where the curve is flat), its two power-law scales
      1 / mid^(p-1) and 1 / (1-mid)^(p-1), d0 and dwidth - d0 (the flat curve's value and 0 where it
      is flat, so the curve yields that value), mid (1 where the power is 1, so the curve's lower
      branch, x itself, always applies) and 1 / width;
    - K and B (mj_makeImpedance; K is 0 on friction rows).

    One elementwise expression with no model-only predicate, one power and one division over all
    columns (the columns that need neither take 1^e and x / 1, both exact): XLA computes the model's
    values once, outside a rollout's loop, and each value it computes there is a kernel of its own."""
    lay = m.efc
    n, ncol = lay.nefc, 9
    col = np.arange(ncol)
    d0, dw, width, mid, power = (solimp[:, k : k + 1] for k in range(5))
    flat = (d0 == dw) | (width <= math.MINVAL)
    width = jnp.where(flat, 1.0, width)
    r0, r1, dm = solref[:, :1], solref[:, 1:], dw
    friction = (lay.type == FRICTION_DOF) | (lay.type == FRICTION_TENDON)
    friction = friction | ((lay.type == CONTACT_ELLIPTIC) & (lay.group != np.arange(n)))
    std = jnp.where(col == 7, r0, r1) > 0  # K: stiffness and damping given; B: damping ratio given
    # numerators
    num = jnp.where(col == 0, width, 1.0)
    num = jnp.where(col == 3, jnp.where(flat, 0.5 * (d0 + dw), d0), num)
    num = jnp.where(col == 4, jnp.where(flat, 0.0, dw - d0), num)
    num = jnp.where(col == 5, jnp.where(power == 1.0, 1.0, mid), num)
    num = jnp.where(col == 7, jnp.where(std, 1.0, -r0), num)
    num = jnp.where(col == 8, jnp.where(std, 2.0, -r1), num)
    num = jnp.where((col == 7) & friction[:, None], 0.0, num)  # no stiffness on friction rows
    # denominators: the power laws' powers (of 1 elsewhere), the width, K's and B's
    base = jnp.where(col == 1, mid, jnp.where(col == 2, 1.0 - mid, 1.0))
    den = jnp.power(base, jnp.where((col == 1) | (col == 2), power - 1.0, 1.0))
    den = jnp.where(col == 6, width, den)
    kden = jnp.where(col == 7, jnp.where(std, dm * dm * r0**2 * r1**2, dm * dm), jnp.where(std, dm * r0, dm))
    den = jnp.where(col >= 7, jnp.maximum(math.MINVAL, kden), den)
    return num / den


def _impedance_curve(solimp: jax.Array, consts: jax.Array, pos: jax.Array, margin: jax.Array) -> jax.Array:
    """MuJoCo's impedance d(r) in [d0, dwidth] of the violation r = |pos - margin| (getimpedance)."""
    power = solimp[:, 4]
    width, a, b, d0, span, mid, inv_width = (consts[:, k] for k in range(7))
    x = jnp.abs((pos - margin) * inv_width)
    xc = jnp.clip(x, 1e-300, 1.0)
    # one power for both branches: a x^p below mid (x itself where the power is 1: a = 1, mid = 1),
    # 1 - b (1 - x)^p above (a power is the step's costliest elementwise operation)
    low = xc <= mid
    t = jnp.power(jnp.where(low, xc, jnp.maximum(1.0 - xc, 0.0)), power)
    y = jnp.where(low, a * t, 1.0 - b * t)
    y = jnp.where(x >= 1.0, 1.0, jnp.where(x <= 0.0, 0.0, y))
    return d0 + y * span  # the flat curve's value where it is flat (span 0)


def _impedance(m: Model, solref, solimp, pos: jax.Array, margin: jax.Array, diag: jax.Array):
    """Regulariser R, and K, B and imp per row (mj_makeImpedance), from `_row_params`' solref and
    solimp; `margin` the rows' impedance margins (a contact's on every row of it)."""
    lay = m.efc
    # connect and weld rows share one impedance, of the norm of their violation
    eq_vec = np.zeros(lay.nefc, bool)
    if m.neq:
        eq_kind = m.eq_type[np.where(lay.type == EQUALITY, lay.id, 0)]
        eq_vec = (lay.type == EQUALITY) & np.isin(eq_kind, (EQ_CONNECT, EQ_WELD))
    # a contact's impedance is of its normal distance: every row of a pyramidal contact holds it,
    # an elliptic contact's rows but the normal hold 0 and read it from their group's first row
    off = (lay.type == CONTACT_ELLIPTIC) & (lay.group != np.arange(lay.nefc))
    ipos = jnp.where(off, pos[lay.group], pos) if off.any() else pos
    if eq_vec.any():
        group_sq = jax.ops.segment_sum(pos * pos, lay.group, num_segments=lay.nefc)
        ipos = jnp.where(eq_vec, jnp.sqrt(group_sq[lay.group]), ipos)
    consts = _row_constants(m, solref, solimp)
    imp = _impedance_curve(solimp, consts, ipos, margin)
    R = jnp.maximum(math.MINVAL, (1.0 - imp) * diag / imp)
    return R, consts[:, 7], consts[:, 8], imp


@tracing.inline_numpy
def reference_constraint(m: Model, d: Data) -> Data:
    """Constraint velocities and reference accelerations aref = -B v - K imp (pos - margin)."""
    if m.efc.nefc == 0:
        return d
    with jax.named_scope("reference_constraint"):
        vel = math.matmul(d.efc_J, d.qvel)
        K, B, imp = d.efc_KBIP[:, 0], d.efc_KBIP[:, 1], d.efc_KBIP[:, 2]
        aref = -B * vel - K * imp * (d.efc_pos - d.efc_margin)
        aref = aref - _jdot_v(m, d)
        return d.replace(efc_vel=vel, efc_aref=aref)


def _point_bias(m: Model, d: Data, body, point):
    """J_dot v of world points fixed to bodies, translational and rotational (mj_jacDot * qvel)."""
    acc = math.matmul(m.tree.body_dof_anc[body].astype(d.qpos.dtype), d.cdof_dot * d.qvel[:, None])
    offset = point - d.subtree_com[m.body_rootid[body]]
    cvel = d.cvel[body]
    pvel_lin = cvel[:, 3:] - math.cross(offset, cvel[:, :3])
    trans = acc[:, 3:] + math.cross(acc[:, :3], offset) + math.cross(cvel[:, :3], pvel_lin)
    return trans, acc[:, :3]


def _jdot_v(m: Model, d: Data) -> jax.Array:
    """The J_dot qvel correction MuJoCo subtracts from aref for connect and weld rows (mj_Jdotv)."""
    lay = m.efc
    out = jnp.zeros(lay.nefc, d.qpos.dtype)
    for weld, eqs, p1, p2, b1, b2 in _connect_weld(m, d):
        t1, r1 = _point_bias(m, d, b1, p1)
        t2, r2 = _point_bias(m, d, b2, p2)
        rows = lay.eq_row[eqs]
        out = out.at[rows[:, None] + np.arange(3)].set(t1 - t2)
        if weld:
            ts = m.eq_data[eqs, 10]
            q0r, negq1, site = _weld_frames(m, d, eqs, b1, b2)
            w1, w2 = d.cvel[b1, :3], d.cvel[b2, :3]
            dw = w1 - w2
            # quaternion rates 0.5 (0, w) q of the two frames
            qf0 = q0r if not np.any(~site) else jnp.where(site[:, None], q0r, d.xquat[b1])
            qdot0 = 0.5 * math.quat_mul(_axis_quat(w1), qf0)
            qdot0r = jnp.where(site[:, None], qdot0, math.quat_mul(qdot0, m.eq_data[eqs, 6:10]))
            negqdot1 = math.quat_conj(0.5 * math.quat_mul(_axis_quat(w2), math.quat_conj(negq1)))
            term1 = math.quat_mul(math.quat_mul(negqdot1, _axis_quat(dw)), q0r)
            term2 = math.quat_mul(math.quat_mul(negq1, _axis_quat(r1 - r2)), q0r)
            term3 = math.quat_mul(math.quat_mul(negq1, _axis_quat(dw)), qdot0r)
            rot = 0.5 * (term1 + term2 + term3)[:, 1:] * ts[:, None]
            out = out.at[rows[:, None] + 3 + np.arange(3)].set(rot)
    return out


@tracing.inline_numpy
def contact_forces(m: Model, d: Data) -> jax.Array:
    """Contact forces (ncon_max, 6) in each contact frame: normal, 2 tangents, torsion, 2 rolling
    (mj_contactForce; zero for inactive contacts; pyramid edge forces decoded)."""
    lay = m.efc
    out = jnp.zeros((m.ncon_max, 6), d.qpos.dtype)
    for t in _CONTACTS:
        first = np.nonzero((lay.type == t) & (lay.group == np.arange(lay.nefc)))[0]
        for dim in (1, 3, 4, 6):
            f = first[m.contact_dim[lay.id[first]] == dim]
            if not f.size:
                continue
            slots = lay.id[f]
            if t == CONTACT_PYRAMIDAL:
                p = d.efc_force[f[:, None] + np.arange(2 * (dim - 1))].reshape(len(f), dim - 1, 2)
                normal = jnp.sum(p, axis=(1, 2))
                tang = (p[:, :, 0] - p[:, :, 1]) * d.contact.friction[slots, : dim - 1]
                frc = jnp.concatenate([normal[:, None], tang], 1)
            else:
                frc = d.efc_force[f[:, None] + np.arange(dim)]
            frc = jnp.where(d.efc_active[f][:, None], frc, 0.0)
            out = out.at[slots, :dim].set(frc)
    return out


@tracing.inline_numpy
def rne_post_constraint(m: Model, d: Data) -> Data:
    """Body accelerations `cacc`, interaction forces `cfrc_int` and external forces `cfrc_ext`
    (applied, contact and connect/weld forces) after the constraint solve (mj_rnePostConstraint)."""
    dt = d.qpos.dtype
    com = d.subtree_com[m.body_rootid]  # per body

    def at_com(torque, force, point, body):
        # world-oriented wrench at `point`, moved to the body's subtree centre of mass
        return jnp.concatenate([torque - math.cross(com[body] - point, force), force], -1)

    ext = jnp.zeros((m.nbody, 6), dt)
    xf = d.xfrc_applied
    ext = ext.at[1:].set(at_com(xf[1:, 3:], xf[1:, :3], d.xipos[1:], np.arange(1, m.nbody)))
    if m.ncon_max:
        lfrc = contact_forces(m, d)
        frame_t = jnp.swapaxes(d.contact.frame, -1, -2)
        torque, force = math.matvec(frame_t, lfrc[:, 3:]), math.matvec(frame_t, lfrc[:, :3])
        bodies = jnp.asarray(m.geom_bodyid)
        b1, b2 = bodies[d.contact.geom1], bodies[d.contact.geom2]
        pos = d.contact.pos
        ext = ext.at[b1].add(-jnp.where((b1 > 0)[:, None], at_com(torque, force, pos, b1), 0.0))
        ext = ext.at[b2].add(jnp.where((b2 > 0)[:, None], at_com(torque, force, pos, b2), 0.0))
    for weld, eqs, p1, p2, b1, b2 in _connect_weld(m, d):
        rows = m.efc.eq_row[eqs]
        act = d.efc_active[rows][:, None]
        force = jnp.where(act, d.efc_force[rows[:, None] + np.arange(3)], 0.0)
        torque = jnp.zeros_like(force)
        if weld:
            # the rotational rows' force as a world torque: the transpose of their Jacobian map
            q0r, negq1, _ = _weld_frames(m, d, eqs, b1, b2)
            axes = _axis_quat(jnp.broadcast_to(jnp.eye(3, dtype=dt), (len(eqs), 3, 3)))  # (k, 3, 4)
            vec = math.quat_mul(math.quat_mul(negq1[:, None], axes), q0r[:, None])[..., 1:]  # (k, axis, row)
            frot = jnp.where(act, d.efc_force[rows[:, None] + 3 + np.arange(3)], 0.0)
            torque = 0.5 * m.eq_data[eqs, 10][:, None] * jnp.einsum("kar,kr->ka", vec, frot)
        ext = ext.at[b1].add(jnp.where((b1 > 0)[:, None], at_com(torque, force, p1, b1), 0.0))
        ext = ext.at[b2].add(-jnp.where((b2 > 0)[:, None], at_com(torque, force, p2, b2), 0.0))
    grav = jnp.zeros(6, dt)
    if not m.disabled(_DSBL.mjDSBL_GRAVITY):
        grav = grav.at[3:].set(-m.opt.gravity)
    if m.nv:
        motion = d.cdof_dot * d.qvel[:, None] + d.cdof * d.qacc[:, None]
        cacc = grav + math.matmul(m.tree.body_dof_anc.astype(dt), motion)
    else:
        cacc = jnp.broadcast_to(grav, (m.nbody, 6))
    cacc = cacc.at[0].set(grav)
    body = math.inert_mul(d.cinert, cacc) + math.cross_force(d.cvel, math.inert_mul(d.cinert, d.cvel))
    local = (body - ext).at[0].set(0.0)
    cfrc_int = math.matmul(m.tree.body_subtree.astype(dt), local)
    return d.replace(cacc=cacc, cfrc_int=cfrc_int, cfrc_ext=ext)
