"""Building a `Model` from MuJoCo's compiler: `from_mujoco(mj_model)` and `load(path_or_xml)`.

MuJoCo parses MJCF/URDF, applies defaults and computes inertias; this module copies its numbers into
a pytree, derives the static index work the engine needs (`Tree`), and refuses, naming the element
and the file, any feature the engine does not implement yet.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import sensor, types
from hurtle.physics.collision import build_compaction, build_groups
from hurtle.physics.constraint import build_layout, working_rows
from hurtle.physics.tendon import spatial_segments
from hurtle.physics.types import Model, Option, Tree

_DSBL = mujoco.mjtDisableBit
_ENBL = mujoco.mjtEnableBit
# enable flags that change no quantity this engine computes, or that it honours
_ENABLE_OK = (
    _ENBL.mjENBL_ENERGY
    | _ENBL.mjENBL_OVERRIDE
    | _ENBL.mjENBL_FWDINV
    | _ENBL.mjENBL_INVDISCRETE
    | _ENBL.mjENBL_DIAGEXACT
)
_NAMED = {
    "body": (mujoco.mjtObj.mjOBJ_BODY, "nbody"),
    "joint": (mujoco.mjtObj.mjOBJ_JOINT, "njnt"),
    "geom": (mujoco.mjtObj.mjOBJ_GEOM, "ngeom"),
    "site": (mujoco.mjtObj.mjOBJ_SITE, "nsite"),
    "actuator": (mujoco.mjtObj.mjOBJ_ACTUATOR, "nu"),
    "tendon": (mujoco.mjtObj.mjOBJ_TENDON, "ntendon"),
    "equality": (mujoco.mjtObj.mjOBJ_EQUALITY, "neq"),
    "sensor": (mujoco.mjtObj.mjOBJ_SENSOR, "nsensor"),
}


def float_dtype() -> np.dtype:
    """JAX's default float dtype: float64 when `jax_enable_x64` is on, float32 otherwise."""
    return jnp.zeros(()).dtype


def load(path_or_xml: str | os.PathLike, nconmax: int | None = None, njmax: int | None = None) -> Model:
    """Compile an MJCF or URDF file (or an MJCF string) with MuJoCo and convert it (`nconmax`, `njmax`:
    as `from_mujoco`'s, overriding the file's `<size>`)."""
    return from_mujoco(compile_mjcf(path_or_xml), source=source_name(path_or_xml), nconmax=nconmax, njmax=njmax)


def is_mjcf_string(source: str | os.PathLike) -> bool:
    """Whether `source` is MJCF text rather than a path."""
    return isinstance(source, str) and source.lstrip().startswith("<")


def source_name(source: str | os.PathLike) -> str:
    """How messages name a model: its path, or `<xml string>`."""
    return "<xml string>" if is_mjcf_string(source) else os.fspath(source)


def compile_mjcf(source: str | os.PathLike) -> mujoco.MjModel:
    """MuJoCo's model of an MJCF/URDF file or MJCF string; FileNotFoundError or ValueError, one line naming it."""
    where = source_name(source)
    if is_mjcf_string(source):
        build = mujoco.MjModel.from_xml_string
    elif not os.path.exists(where):
        raise FileNotFoundError(missing_model_message(where))
    else:
        build = mujoco.MjModel.from_xml_path
    try:
        return build(str(source) if is_mjcf_string(source) else where)
    except ValueError as e:
        raise ValueError(f"{where}: MuJoCo could not compile the model: {' '.join(str(e).split())}") from None


def missing_model_message(source: str) -> str:
    """One line for a model path that does not exist (the text shortened where it is not a path at all)."""
    shown = source if len(source) <= 200 and "\n" not in source else repr(source[:60]) + "..."
    return (
        f"{shown}: no such model file (give a path to an MJCF or URDF file, or an MJCF string; the model files "
        f"hurtle's tasks use: hurtle.envs.asset_path(NAME), e.g. asset_path('ant.xml'))"
    )


def _names(m: mujoco.MjModel) -> dict[str, tuple[str, ...]]:
    out = {}
    for kind, (obj, size) in _NAMED.items():
        out[kind] = tuple(mujoco.mj_id2name(m, obj, i) or "" for i in range(getattr(m, size)))
    return out


def _label(names: dict, kind: str, i: int) -> str:
    name = names[kind][i]
    return f"{kind} {name!r}" if name else f"{kind} #{i}"


def _enum(enum_type, value) -> str:
    """MuJoCo's enum name without its prefix, as MJCF spells it ('mjTRN_SITE' -> 'site')."""
    return enum_type(int(value)).name.split("_", 1)[1].lower()


def _check_supported(m: mujoco.MjModel, names: dict, source: str) -> None:
    """Raise NotImplementedError for any feature the model would use that the engine lacks."""

    def refuse(what: str) -> None:
        raise NotImplementedError(f"{source}: {what} is not supported by hurtle yet")

    if m.nflex:
        refuse("flex (deformable) elements")
    sensor.check(m, lambda i: _label(names, "sensor", i), source)
    sdf = np.nonzero(m.geom_type == mujoco.mjtGeom.mjGEOM_SDF)[0]
    if sdf.size:
        refuse(f"signed-distance-field geoms (plugin SDFs: {_label(names, 'geom', int(sdf[0]))})")
    if m.nplugin:
        refuse("engine plugins")
    if getattr(m, "nplastic", 0) and np.any(m.jnt_springyield):
        refuse("plastic joint springs (springyield)")
    if m.opt.integrator == mujoco.mjtIntegrator.mjINT_DISCRETE:
        refuse("the 'discrete' integrator")
    if m.opt.disableactuator and not m.opt.disableflags & _DSBL.mjDSBL_ACTUATION:
        groups = [g for g in range(31) if m.opt.disableactuator & (1 << g)]
        if np.any(np.isin(m.actuator_group, groups)):
            refuse(f"disabling actuator groups {groups} (option actuatorgroupdisable)")
    bad_enable = m.opt.enableflags & ~_ENABLE_OK
    for name, flag in _ENBL.__members__.items():
        if name != "mjNENABLE" and bad_enable & int(flag):
            refuse(f"enable flag {name[6:].lower()!r}")
    constraints_on = not m.opt.disableflags & (_DSBL.mjDSBL_CONSTRAINT | _DSBL.mjDSBL_EQUALITY)
    for e in range(m.neq if constraints_on else 0):
        if m.eq_type[e] not in (0, 1, 2, 3):
            kind = _enum(mujoco.mjtEq, m.eq_type[e])
            refuse(f"{kind!r} equality constraints ({_label(names, 'equality', e)})")
    for t in range(m.ntendon):
        adr = m.tendon_adr[t]
        if m.wrap_type[adr] != mujoco.mjtWrap.mjWRAP_JOINT and m.tendon_armature[t] > 0:
            refuse(f"armature on spatial tendons ({_label(names, 'tendon', t)})")
    for j in range(m.njnt):
        if np.any(m.jnt_stiffnesspoly[j]):
            refuse(f"polynomial joint stiffness ({_label(names, 'joint', j)})")
        if m.jnt_springyield[j] if m.jnt_springyield.ndim == 1 else np.any(m.jnt_springyield[j]):
            refuse(f"joint spring yield ({_label(names, 'joint', j)})")
    for v in range(m.nv):
        if np.any(m.dof_dampingpoly[v]):
            refuse(f"polynomial joint damping ({_label(names, 'joint', m.dof_jntid[v])})")
    for t in range(m.ntendon):
        if np.any(m.tendon_stiffnesspoly[t]) or np.any(m.tendon_dampingpoly[t]):
            refuse(f"polynomial tendon stiffness/damping ({_label(names, 'tendon', t)})")
    body_free_ok = {mujoco.mjtJoint.mjJNT_FREE}
    for b in range(m.nbody):
        types_b = {int(m.jnt_type[j]) for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])}
        if body_free_ok & types_b and m.body_jntnum[b] > 1:
            refuse(f"a free joint combined with other joints ({_label(names, 'body', b)})")
    ok_trn = {
        types.TRN_JOINT,
        types.TRN_JOINTINPARENT,
        types.TRN_TENDON,
        types.TRN_SITE,
        types.TRN_BODY,
        types.TRN_SLIDERCRANK,
    }
    ok_dyn = {types.DYN_NONE, types.DYN_INTEGRATOR, types.DYN_FILTER, types.DYN_FILTEREXACT}
    for i in range(m.nu):
        label = _label(names, "actuator", i)
        if m.actuator_trntype[i] not in ok_trn:
            kind = _enum(mujoco.mjtTrn, m.actuator_trntype[i])
            refuse(f"actuator transmission {kind!r} ({label})")
        if m.opt.disableflags & _DSBL.mjDSBL_ACTUATION:
            continue  # actuators are unused: only their transmission (above) is computed
        if m.actuator_dyntype[i] not in ok_dyn:
            refuse(f"actuator dynamics {_enum(mujoco.mjtDyn, m.actuator_dyntype[i])!r} ({label})")
        if m.actuator_gaintype[i] not in (types.GAIN_FIXED, types.GAIN_AFFINE):
            refuse(f"actuator gain {_enum(mujoco.mjtGain, m.actuator_gaintype[i])!r} ({label})")
        if m.actuator_biastype[i] not in (types.BIAS_NONE, types.BIAS_AFFINE):
            refuse(f"actuator bias {_enum(mujoco.mjtBias, m.actuator_biastype[i])!r} ({label})")
        if m.actuator_plugin[i] >= 0:
            refuse(f"actuator plugins ({label})")
        if np.any(m.actuator_delay[i]) or np.any(m.actuator_history[i]):
            refuse(f"actuator delay/history ({label})")
        if np.any(m.actuator_damping[i]) or np.any(m.actuator_armature[i]) or np.any(m.actuator_dampingpoly[i]):
            refuse(f"actuator damping/armature ({label})")
        if m.actuator_ctrlnum[i] != 1 or m.actuator_ctrladr[i] != i or m.actuator_outnum[i] != 1:
            refuse(f"multi-input or multi-output actuators ({label})")
        trn_j = m.actuator_trntype[i] in (types.TRN_JOINT, types.TRN_JOINTINPARENT)
        servo = (
            m.actuator_gaintype[i] == types.GAIN_FIXED
            and m.actuator_biastype[i] == types.BIAS_AFFINE
            and m.actuator_gainprm[i, 0] == -m.actuator_biasprm[i, 1]
        )
        if trn_j and servo and m.jnt_type[m.actuator_trnid[i, 0]] == types.JNT_BALL:
            refuse(f"position servos on ball joints (setpoint wrapping) ({label})")
        if m.actuator_trntype[i] == types.TRN_TENDON and m.tendon_actfrclimited[m.actuator_trnid[i, 0]]:
            refuse(f"tendon actuator force limits (actuatorfrcrange on a tendon) ({label})")
        if m.actuator_actnum[i] > 1:
            refuse(f"actuators with {m.actuator_actnum[i]} activation states ({label})")
    has_fluid = bool(m.opt.density > 0 or m.opt.viscosity > 0)
    passive_on = not (m.opt.disableflags & _DSBL.mjDSBL_SPRING and m.opt.disableflags & _DSBL.mjDSBL_DAMPER)
    if has_fluid and passive_on:
        for g in range(m.ngeom):
            if m.geom_fluid[g, 0] > 0:
                refuse(f"the ellipsoid fluid model ({_label(names, 'geom', g)}, fluidshape='ellipsoid')")


def _check_contact_dims(m: mujoco.MjModel, dims, source: str) -> None:
    if any(int(c) not in (1, 3, 4, 6) for c in dims):
        raise ValueError(f"{source}: contact condim must be 1, 3, 4 or 6, got {list(dims)}")


def _tree(m: mujoco.MjModel) -> Tree:
    nbody, nv, njnt = m.nbody, m.nv, m.njnt
    parent = m.body_parentid
    depth = np.zeros(nbody, int)
    for b in range(1, nbody):
        depth[b] = depth[parent[b]] + 1
    jnt_type = m.jnt_type
    is_free_body = np.array(
        [m.body_jntnum[b] == 1 and jnt_type[m.body_jntadr[b]] == types.JNT_FREE for b in range(nbody)]
    )
    levels = tuple(np.nonzero((depth == d) & ~is_free_body)[0] for d in range(1, depth.max() + 1 if nbody > 1 else 1))
    levels = tuple(lv for lv in levels if lv.size)
    level_mask = np.zeros((len(levels), nbody), bool)
    for i, lv in enumerate(levels):
        level_mask[i, lv] = True
    free_body = np.nonzero(is_free_body)[0]
    free_qadr = np.array([m.jnt_qposadr[m.body_jntadr[b]] for b in free_body], int)
    # joints by position within their body: slot k holds every body's k-th joint (free bodies excluded)
    nslot = int(m.body_jntnum[~is_free_body].max()) if nbody and (~is_free_body).any() else 0
    slot_valid = (m.body_jntnum[None] > np.arange(nslot)[:, None]) & ~is_free_body[None]
    jnt_slot = np.where(slot_valid, m.body_jntadr[None] + np.arange(nslot)[:, None], 0)
    jnt_slot_flat = (np.arange(njnt) - m.body_jntadr[m.jnt_bodyid]) * nbody + m.jnt_bodyid
    # ancestry: anc[i, j] = body j is body i or one of its ancestors
    anc = np.zeros((nbody, nbody), bool)
    for b in range(nbody):
        a = b
        while True:
            anc[b, a] = True
            if a == 0:
                break
            a = parent[a]
    subtree = anc.T.copy()
    dof_body = m.dof_bodyid
    body_dof_anc = anc[:, dof_body] if nv else np.zeros((nbody, 0), bool)
    dof_anc = np.zeros((nv, nv), bool)
    for i in range(nv):
        j = i
        while j >= 0:
            dof_anc[i, j] = True
            j = m.dof_parentid[j]
    dof_jnt = m.dof_jntid
    dof_type = jnt_type[dof_jnt] if nv else np.zeros(0, int)
    dof_local = np.arange(nv) - m.jnt_dofadr[dof_jnt] if nv else np.zeros(0, int)
    dof_free = (dof_type == types.JNT_FREE) & (dof_local < 3)
    dof_ballrot = (dof_type == types.JNT_BALL) | ((dof_type == types.JNT_FREE) & (dof_local >= 3))
    dof_axis_col = np.where(dof_type == types.JNT_FREE, dof_local % 3, dof_local)
    # velocity that precedes dof i inside com_vel: strict ancestor bodies, earlier joints of the
    # same body, and a free joint's translation before its rotation
    prefix = np.zeros((nv, nv), bool)
    for i in range(nv):
        b = dof_body[i]
        strict = anc[b].copy()
        strict[b] = False
        prefix[i] = strict[dof_body]
        first = m.jnt_dofadr[dof_jnt[i]]
        if dof_type[i] == types.JNT_FREE and dof_local[i] >= 3:
            first += 3
        same = (dof_body == b) & (np.arange(nv) < first)
        prefix[i] |= same
    standalone = []
    for j in range(njnt):
        b = m.jnt_bodyid[j]
        if jnt_type[j] != types.JNT_FREE or m.body_jntnum[b] != 1:
            continue
        adr = m.jnt_dofadr[j]
        if m.tree_dofnum[m.dof_treeid[adr]] == 6 and m.body_subtreemass[b] == m.body_mass[b]:
            standalone.append(j)
    return Tree(
        level_mask=level_mask,
        free_body=free_body,
        free_qadr=free_qadr,
        jnt_slot=jnt_slot.astype(np.int32),
        jnt_slot_valid=slot_valid,
        jnt_slot_flat=jnt_slot_flat.astype(np.int32),
        body_subtree=subtree,
        body_dof_anc=body_dof_anc,
        dof_anc=dof_anc,
        dof_prefix=prefix,
        dof_free=dof_free,
        dof_ballrot=dof_ballrot,
        dof_axis_col=dof_axis_col,
        dof_rootid=m.body_rootid[dof_body] if nv else np.zeros(0, int),
        free_standalone=np.array(standalone, int),
    )


def from_mujoco(
    mj_model: mujoco.MjModel,
    source: str = "<mjModel>",
    contact_dims=None,
    nconmax: int | None = None,
    njmax: int | None = None,
) -> Model:
    """Convert a compiled `mujoco.MjModel` into a hurtle `Model`.

    Contacts come from hurtle's collision detection, with a fixed number of slots per candidate geom
    pair. `nconmax` (default: the file's `<size nconmax>`, as MuJoCo Warp reads it) caps the contacts
    kept per condim: collision still tests every candidate, and the contact arrays and constraint rows
    then hold the first `nconmax` active ones, so the solver works on the contacts that can touch at
    once rather than on every pair that ever could. Contacts beyond the cap are dropped and counted in
    `Data.ncon_dropped`: size the cap from a rollout's largest `ncon`.
    `njmax` (default: the file's `<size njmax>`, else chosen from the rows) sizes the solver's working
    set: its Newton trips run on the active constraint rows gathered into `njmax` slots, and a world
    with more active rows than that is solved on all of them, so it changes speed, never results;
    0 runs every trip on every row (`hurtle.physics.solver.solve`).
    `contact_dims` instead declares caller-filled slots (one per entry, with that condim) and
    turns collision detection off: for contacts computed elsewhere, such as MuJoCo's.
    Raises NotImplementedError, naming the element, for a feature the engine does not support yet.
    """
    m = mj_model
    names = _names(m)
    _check_supported(m, names, source)
    if nconmax is not None and (isinstance(nconmax, bool) or not isinstance(nconmax, (int, np.integer)) or nconmax < 1):
        raise ValueError(f"{source}: nconmax must be a positive number of contacts, got {nconmax!r}")
    compaction = None
    caller_slots = contact_dims is not None
    if contact_dims is None:
        groups, contact_dims = build_groups(m, names, source)
        cap = int(m.nconmax) if nconmax is None else int(nconmax)
        if cap > 0:
            compaction, contact_dims = build_compaction(contact_dims, cap)
    else:
        if nconmax is not None:
            raise ValueError(
                f"{source}: nconmax caps hurtle's own collision; with contact_dims the caller sets the slots"
            )
        groups, cap = (), -1
    body_trn = np.nonzero(m.actuator_trntype == types.TRN_BODY)[0]
    if body_trn.size and (compaction is not None or caller_slots):
        why = "a contact cap (nconmax)" if compaction is not None else "caller-filled contact slots (contact_dims)"
        raise NotImplementedError(
            f"{source}: a body (adhesion) transmission ({_label(names, 'actuator', int(body_trn[0]))}) with {why}: "
            "the transmission reads the contacts found inside the gap, which capped or caller-filled slots leave out"
        )
    _check_contact_dims(m, contact_dims, source)
    layout = build_layout(m, contact_dims)
    fdt = float_dtype()

    def f(x: Any) -> jax.Array:
        return jnp.asarray(np.array(x, dtype=np.float64), dtype=fdt)

    def i(x: Any) -> np.ndarray:
        return np.array(x, dtype=np.int32).copy()

    def b(x: Any) -> np.ndarray:
        return np.array(x, dtype=bool).copy()

    opt = m.opt
    option = Option(
        timestep=f(opt.timestep),
        gravity=f(opt.gravity),
        wind=f(opt.wind),
        magnetic=f(opt.magnetic),
        density=f(opt.density),
        viscosity=f(opt.viscosity),
        impratio=f(opt.impratio),
        tolerance=f(opt.tolerance),
        ls_tolerance=f(opt.ls_tolerance),
        o_margin=f(opt.o_margin),
        o_solref=f(opt.o_solref),
        o_solimp=f(opt.o_solimp),
        o_friction=f(opt.o_friction),
        ccd_tolerance=f(opt.ccd_tolerance),
        noslip_tolerance=f(opt.noslip_tolerance),
        integrator=int(opt.integrator),
        solver=int(opt.solver),
        cone=int(opt.cone),
        jacobian=int(opt.jacobian),
        iterations=int(opt.iterations),
        ls_iterations=int(opt.ls_iterations),
        noslip_iterations=int(opt.noslip_iterations),
        ccd_iterations=int(opt.ccd_iterations),
        disableflags=int(opt.disableflags),
        enableflags=int(opt.enableflags),
        has_fluid=bool(opt.density > 0 or opt.viscosity > 0),
    )
    return Model(
        opt=option,
        qpos0=f(m.qpos0),
        qpos_spring=f(m.qpos_spring),
        body_pos=f(m.body_pos),
        body_quat=f(m.body_quat),
        body_ipos=f(m.body_ipos),
        body_iquat=f(m.body_iquat),
        body_mass=f(m.body_mass),
        body_inertia=f(m.body_inertia),
        body_gravcomp=f(m.body_gravcomp),
        jnt_pos=f(m.jnt_pos),
        jnt_axis=f(m.jnt_axis),
        jnt_stiffness=f(m.jnt_stiffness),
        jnt_range=f(m.jnt_range),
        jnt_margin=f(m.jnt_margin),
        jnt_solref=f(m.jnt_solref),
        jnt_solimp=f(m.jnt_solimp),
        jnt_actfrcrange=f(m.jnt_actfrcrange),
        dof_armature=f(m.dof_armature),
        dof_damping=f(m.dof_damping),
        dof_frictionloss=f(m.dof_frictionloss),
        dof_solref=f(m.dof_solref),
        dof_solimp=f(m.dof_solimp),
        dof_invweight0=f(m.dof_invweight0),
        geom_pos=f(m.geom_pos),
        geom_quat=f(m.geom_quat),
        geom_size=f(m.geom_size),
        geom_friction=f(m.geom_friction),
        geom_solref=f(m.geom_solref),
        geom_solimp=f(m.geom_solimp),
        geom_solmix=f(m.geom_solmix),
        geom_margin=f(m.geom_margin),
        geom_gap=f(m.geom_gap),
        geom_rbound=f(m.geom_rbound),
        geom_fluid=f(m.geom_fluid),
        site_pos=f(m.site_pos),
        site_quat=f(m.site_quat),
        site_size=f(m.site_size),
        actuator_gear=f(m.actuator_gear),
        actuator_ctrlrange=f(m.actuator_ctrlrange),
        actuator_forcerange=f(m.actuator_forcerange),
        actuator_actrange=f(m.actuator_actrange),
        actuator_gainprm=f(m.actuator_gainprm),
        actuator_biasprm=f(m.actuator_biasprm),
        actuator_dynprm=f(m.actuator_dynprm),
        actuator_lengthrange=f(m.actuator_lengthrange),
        actuator_cranklength=f(m.actuator_cranklength),
        actuator_acc0=f(m.actuator_acc0),
        actuator_length0=f(m.actuator_length0),
        tendon_stiffness=f(m.tendon_stiffness),
        tendon_damping=f(m.tendon_damping),
        tendon_armature=f(m.tendon_armature),
        tendon_frictionloss=f(m.tendon_frictionloss),
        tendon_lengthspring=f(m.tendon_lengthspring),
        tendon_length0=f(m.tendon_length0),
        tendon_range=f(m.tendon_range),
        tendon_margin=f(m.tendon_margin),
        tendon_solref_lim=f(m.tendon_solref_lim),
        tendon_solimp_lim=f(m.tendon_solimp_lim),
        tendon_solref_fri=f(m.tendon_solref_fri),
        tendon_solimp_fri=f(m.tendon_solimp_fri),
        tendon_invweight0=f(m.tendon_invweight0),
        wrap_prm=f(m.wrap_prm),
        eq_data=f(m.eq_data),
        eq_solref=f(m.eq_solref),
        eq_solimp=f(m.eq_solimp),
        body_invweight0=f(m.body_invweight0),
        body_subtreemass=f(m.body_subtreemass),
        sensor_cutoff=f(m.sensor_cutoff),
        sensor_noise=f(m.sensor_noise),
        stat_meaninertia=f(m.stat.meaninertia),
        pair_solref=f(m.pair_solref),
        pair_solreffriction=f(m.pair_solreffriction),
        pair_solimp=f(m.pair_solimp),
        pair_friction=f(m.pair_friction),
        pair_margin=f(m.pair_margin),
        pair_gap=f(m.pair_gap),
        nq=int(m.nq),
        nv=int(m.nv),
        nu=int(m.nu),
        na=int(m.na),
        nbody=int(m.nbody),
        njnt=int(m.njnt),
        ngeom=int(m.ngeom),
        nsite=int(m.nsite),
        nmocap=int(m.nmocap),
        ntendon=int(m.ntendon),
        neq=int(m.neq),
        npair=int(m.npair),
        nsensordata=int(m.nsensordata),
        nsensor=int(m.nsensor),
        body_parentid=i(m.body_parentid),
        body_rootid=i(m.body_rootid),
        body_weldid=i(m.body_weldid),
        body_mocapid=i(m.body_mocapid),
        body_jntnum=i(m.body_jntnum),
        body_jntadr=i(m.body_jntadr),
        body_dofnum=i(m.body_dofnum),
        body_dofadr=i(m.body_dofadr),
        body_geomnum=i(m.body_geomnum),
        body_geomadr=i(m.body_geomadr),
        body_sameframe=i(m.body_sameframe),
        jnt_type=i(m.jnt_type),
        jnt_qposadr=i(m.jnt_qposadr),
        jnt_dofadr=i(m.jnt_dofadr),
        dof_treeid=i(m.dof_treeid),
        body_treeid=i(m.body_treeid),
        jnt_bodyid=i(m.jnt_bodyid),
        jnt_limited=b(m.jnt_limited),
        jnt_actfrclimited=b(m.jnt_actfrclimited),
        jnt_actgravcomp=b(m.jnt_actgravcomp),
        dof_bodyid=i(m.dof_bodyid),
        dof_jntid=i(m.dof_jntid),
        dof_parentid=i(m.dof_parentid),
        geom_type=i(m.geom_type),
        geom_bodyid=i(m.geom_bodyid),
        geom_contype=i(m.geom_contype),
        geom_conaffinity=i(m.geom_conaffinity),
        geom_condim=i(m.geom_condim),
        geom_priority=i(m.geom_priority),
        geom_dataid=i(m.geom_dataid),
        geom_sameframe=i(m.geom_sameframe),
        geom_rayvisible=sensor.ray_visible(m),
        ray_shapes=sensor.ray_shapes(m),
        site_bodyid=i(m.site_bodyid),
        site_type=i(m.site_type),
        site_sameframe=i(m.site_sameframe),
        actuator_trntype=i(m.actuator_trntype),
        actuator_dyntype=i(m.actuator_dyntype),
        actuator_gaintype=i(m.actuator_gaintype),
        actuator_biastype=i(m.actuator_biastype),
        actuator_trnid=i(m.actuator_trnid),
        actuator_actadr=i(m.actuator_actadr),
        actuator_actnum=i(m.actuator_actnum),
        actuator_ctrllimited=b(m.actuator_ctrllimited),
        actuator_forcelimited=b(m.actuator_forcelimited),
        actuator_actlimited=b(m.actuator_actlimited),
        actuator_actearly=b(m.actuator_actearly),
        tendon_adr=i(m.tendon_adr),
        tendon_num=i(m.tendon_num),
        tendon_limited=b(m.tendon_limited),
        wrap_type=i(m.wrap_type),
        wrap_objid=i(m.wrap_objid),
        tendon_segments=spatial_segments(m),
        sensor_type=i(m.sensor_type),
        sensor_datatype=i(m.sensor_datatype),
        sensor_objtype=i(m.sensor_objtype),
        sensor_objid=i(m.sensor_objid),
        sensor_reftype=i(m.sensor_reftype),
        sensor_refid=i(m.sensor_refid),
        sensor_adr=i(m.sensor_adr),
        sensor_dim=i(m.sensor_dim),
        sensor_intprm=i(m.sensor_intprm),
        eq_type=i(m.eq_type),
        eq_obj1id=i(m.eq_obj1id),
        eq_obj2id=i(m.eq_obj2id),
        eq_objtype=i(m.eq_objtype),
        eq_active0=b(m.eq_active0),
        ncon_max=len(contact_dims),
        contact_dim=np.array(contact_dims, dtype=np.int32).reshape(-1),
        nconmax=cap if cap > 0 else -1,
        contact_compaction=compaction,
        has_gravcomp=bool(np.any(m.body_gravcomp)),
        has_dof_damping=bool(np.any(m.dof_damping > 0)),
        has_frictionloss=bool(np.any(m.dof_frictionloss > 0) or np.any(m.tendon_frictionloss > 0)),
        tree=_tree(m),
        njmax=working_rows(layout, int(m.njmax) if njmax is None else njmax, source, explicit=njmax is not None),
        efc=layout,
        collision=groups,
        names=names,
        source=source,
    )
