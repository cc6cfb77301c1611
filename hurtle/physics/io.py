"""Making `Data`, and copying state to and from MuJoCo's `MjData`."""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics.inertia import euler_damped
from hurtle.physics.model import float_dtype
from hurtle.physics.types import Contact, Data, Model

# fields copied to an MjData by `to_mujoco`: the state, its inputs and what rendering needs
_STATE = (
    "time",
    "qpos",
    "qvel",
    "act",
    "ctrl",
    "qacc_warmstart",
    "qfrc_applied",
    "xfrc_applied",
    "mocap_pos",
    "mocap_quat",
    "eq_active",
)


def _shapes(m: Model) -> dict[str, tuple[int, ...]]:
    nb, nv, nu = m.nbody, m.nv, m.nu
    return dict(
        time=(),
        qpos=(m.nq,),
        qvel=(nv,),
        act=(m.na,),
        ctrl=(nu,),
        qacc=(nv,),
        qacc_warmstart=(nv,),
        qacc_smooth=(nv,),
        qfrc_applied=(nv,),
        xfrc_applied=(nb, 6),
        mocap_pos=(m.nmocap, 3),
        mocap_quat=(m.nmocap, 4),
        energy=(2,),
        xpos=(nb, 3),
        xquat=(nb, 4),
        xmat=(nb, 3, 3),
        xipos=(nb, 3),
        ximat=(nb, 3, 3),
        xanchor=(m.njnt, 3),
        xaxis=(m.njnt, 3),
        geom_xpos=(m.ngeom, 3),
        geom_xmat=(m.ngeom, 3, 3),
        site_xpos=(m.nsite, 3),
        site_xmat=(m.nsite, 3, 3),
        subtree_com=(nb, 3),
        cinert=(nb, 10),
        crb=(nb, 10),
        cdof=(nv, 6),
        ten_length=(m.ntendon,),
        ten_J=(m.ntendon, nv),
        actuator_length=(nu,),
        actuator_moment=(nu, nv),
        qM=(nv, nv),
        qLD=(nv, nv),
        qLDiagInv=(nv,),
        qH=(nv, nv) if euler_damped(m) else (0, 0),
        qHDiagInv=(nv,) if euler_damped(m) else (0,),
        cvel=(nb, 6),
        cdof_dot=(nv, 6),
        ten_velocity=(m.ntendon,),
        actuator_velocity=(nu,),
        qfrc_bias=(nv,),
        qfrc_spring=(nv,),
        qfrc_damper=(nv,),
        qfrc_gravcomp=(nv,),
        qfrc_fluid=(nv,),
        qfrc_passive=(nv,),
        actuator_force=(nu,),
        act_dot=(m.na,),
        qfrc_actuator=(nv,),
        qfrc_smooth=(nv,),
        qfrc_constraint=(nv,),
        eq_active=(m.neq,),
        cacc=(nb, 6),
        cfrc_int=(nb, 6),
        cfrc_ext=(nb, 6),
        efc_state=(m.efc.nefc,),
        efc_active=(m.efc.nefc,),
        solver_niter=(),
        ncon_dropped=(),
        sensordata=(m.nsensordata,),
        efc_J=(m.efc.nefc, nv),
        efc_KBIP=(m.efc.nefc, 4),
        **{f: (m.efc.nefc,) for f in _EFC_VEC},
    )


# per-row constraint fields; hurtle's rows are MuJoCo's rows padded to a static layout, so they are
# not copied from an MjData (compare them through Model.efc's type and id, or by J' f)
_EFC_VEC = (
    "efc_pos",
    "efc_margin",
    "efc_frictionloss",
    "efc_diagA",
    "efc_R",
    "efc_D",
    "efc_vel",
    "efc_aref",
    "efc_force",
)
_NOT_COPIED = set(_EFC_VEC) | {
    "efc_J",
    "efc_KBIP",
    "qLD",
    "qLDiagInv",
    "qH",
    "qHDiagInv",
    "efc_state",
    "efc_active",
    "solver_niter",
    "ncon_dropped",
}


def make_data(m: Model) -> Data:
    """The state at `qpos0` with zero velocity, as `mj_makeData`; derived fields are zero."""
    dt = float_dtype()
    fields = {k: jnp.zeros(s, dt) for k, s in _shapes(m).items()}
    fields["qpos"] = jnp.asarray(m.qpos0, dt)
    mocap = np.nonzero(m.body_mocapid >= 0)[0]
    order = np.argsort(m.body_mocapid[mocap])
    fields["mocap_pos"] = jnp.asarray(m.body_pos, dt)[mocap[order]]
    fields["mocap_quat"] = jnp.asarray(m.body_quat, dt)[mocap[order]]
    fields["eq_active"] = jnp.asarray(m.eq_active0, bool)
    fields["efc_state"] = jnp.zeros(m.efc.nefc, jnp.int32)
    fields["efc_active"] = jnp.zeros(m.efc.nefc, bool)
    fields["solver_niter"] = jnp.zeros((), jnp.int32)
    fields["ncon_dropped"] = jnp.zeros((), jnp.int32)
    n = m.ncon_max
    contact = Contact(
        dist=jnp.zeros(n, dt),
        pos=jnp.zeros((n, 3), dt),
        frame=jnp.zeros((n, 3, 3), dt),
        includemargin=jnp.zeros(n, dt),
        friction=jnp.ones((n, 5), dt),
        solref=jnp.tile(jnp.array([0.02, 1.0], dt), (n, 1)),
        solreffriction=jnp.zeros((n, 2), dt),
        solimp=jnp.tile(jnp.array([0.9, 0.95, 0.001, 0.5, 2.0], dt), (n, 1)),
        geom1=jnp.full(n, -1, jnp.int32),
        geom2=jnp.full(n, -1, jnp.int32),
        dim=jnp.asarray(m.contact_dim, jnp.int32).reshape(n),
        active=jnp.zeros(n, bool),
        gap=jnp.zeros(n, bool),
    )
    return Data(contact=contact, **fields)


def _dense(mj_model: mujoco.MjModel, mj_data: mujoco.MjData, name: str) -> np.ndarray | None:
    """MjData fields that MuJoCo stores sparse, in hurtle's dense layout."""
    m, d = mj_model, mj_data
    if name == "qM":
        out = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, out)
        return out
    if name == "actuator_moment":
        out = np.zeros((m.nu, m.nv))
        mujoco.mju_sparse2dense(out, d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind)
        return out
    if name == "ten_J":
        out = np.zeros((m.ntendon, m.nv))
        if m.ntendon:
            mujoco.mju_sparse2dense(out, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind)
        return out
    if name in ("xmat", "ximat", "geom_xmat", "site_xmat"):
        return np.array(getattr(d, name)).reshape(-1, 3, 3)
    if name in _NOT_COPIED:
        return None
    if name == "eq_active":
        return np.array(d.eq_active, dtype=bool)
    return np.array(getattr(d, name)) if hasattr(d, name) else None


def from_mjdata(m: Model, mj_data: mujoco.MjData, mj_model: mujoco.MjModel | None = None) -> Data:
    """A `Data` holding every field of `mj_data` that hurtle computes (state and derived)."""
    mj_model = mj_model if mj_model is not None else mj_data.model
    d = make_data(m)
    dt = float_dtype()
    out = {}
    for name in _shapes(m):
        val = _dense(mj_model, mj_data, name)
        if val is not None:
            kind = bool if name == "eq_active" else dt
            out[name] = jnp.asarray(np.reshape(val, _shapes(m)[name]), kind)
    return d.replace(**out)


def to_mujoco(m: Model, d: Data, mj_data: mujoco.MjData, kinematics: bool = True) -> mujoco.MjData:
    """Copy the state of `d` into `mj_data` (in place) and return it.

    With `kinematics`, MuJoCo then recomputes the position-dependent fields (frames for rendering).
    """
    for name in _STATE:
        val = np.asarray(getattr(d, name), dtype=np.float64)
        if name == "time":
            mj_data.time = float(val)
        else:
            getattr(mj_data, name)[...] = val.reshape(getattr(mj_data, name).shape)
    if kinematics:
        mujoco.mj_kinematics(mj_data.model, mj_data)
        mujoco.mj_comPos(mj_data.model, mj_data)
    return mj_data
