"""`Model`, `Option`, `Data` and `Contact`: MuJoCo's structures as immutable pytrees.

Field names are MuJoCo's. In `Model`, integers that describe structure (topology, types, addresses)
are static numpy arrays; every real number a user may randomise is a `jax.Array`, so a batch of models
is one `jax.vmap`. `Data` holds only arrays, with shapes fixed by the model.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics.dataclass import pytree_dataclass, static_field

# MuJoCo enum values used by the engine (mjtJoint, mjtTrn, mjtDyn, mjtGain, mjtBias, ...)
JNT_FREE, JNT_BALL, JNT_SLIDE, JNT_HINGE = 0, 1, 2, 3
JNT_QPOS = np.array([7, 4, 1, 1])
JNT_DOF = np.array([6, 3, 1, 1])
TRN_JOINT, TRN_JOINTINPARENT, TRN_SLIDERCRANK, TRN_TENDON, TRN_SITE, TRN_BODY = 0, 1, 2, 3, 4, 5
DYN_NONE, DYN_INTEGRATOR, DYN_FILTER, DYN_FILTEREXACT = 0, 1, 2, 3
GAIN_FIXED, GAIN_AFFINE = 0, 1
BIAS_NONE, BIAS_AFFINE = 0, 1
INT_EULER, INT_RK4, INT_IMPLICIT, INT_IMPLICITFAST, INT_DISCRETE = 0, 1, 2, 3, 4
WRAP_JOINT = 1
# mjtGeom
PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = 0, 1, 2, 3, 4, 5, 6, 7


@pytree_dataclass
class Tree:
    """Index work derived from the kinematic tree once, when the model is built (all static).

    Dense 0/1 matrices turn the tree's recursive passes into matrix products: `body_subtree[i, j]`
    is 1 when body j is in the subtree of body i; `body_dof_anc[b, k]` when dof k moves body b;
    `dof_anc[i, j]` when dof j is dof i or one of its ancestors.
    """

    level_mask: np.ndarray = static_field()  # (depth, nbody): bodies of each depth (world, free bodies excluded)
    free_body: np.ndarray = static_field()  # bodies whose only joint is free
    free_qadr: np.ndarray = static_field()
    jnt_slot: np.ndarray = static_field()  # (slots, nbody): the k-th joint of each body (0 where none)
    jnt_slot_valid: np.ndarray = static_field()  # (slots, nbody): body has a k-th joint (free joints excluded)
    jnt_slot_flat: np.ndarray = static_field()  # (njnt,): k * nbody + body of each joint
    body_subtree: np.ndarray = static_field()
    body_dof_anc: np.ndarray = static_field()
    dof_anc: np.ndarray = static_field()
    dof_prefix: np.ndarray = static_field()  # dofs whose velocity precedes dof i's in com_vel
    dof_free: np.ndarray = static_field()  # free-joint translational dof mask
    dof_ballrot: np.ndarray = static_field()  # ball or free rotational dof mask
    dof_axis_col: np.ndarray = static_field()  # column of xmat (ball/free rot) or unit axis (free trans)
    dof_rootid: np.ndarray = static_field()
    free_standalone: np.ndarray = static_field()  # free joints of childless, single-body trees


@pytree_dataclass
class Option:
    """Physics options (mjOption). Enumerations and caps are static; physical constants are arrays."""

    timestep: jax.Array
    gravity: jax.Array
    wind: jax.Array
    magnetic: jax.Array
    density: jax.Array
    viscosity: jax.Array
    impratio: jax.Array
    tolerance: jax.Array
    ls_tolerance: jax.Array
    o_margin: jax.Array
    o_solref: jax.Array
    o_solimp: jax.Array
    o_friction: jax.Array
    ccd_tolerance: jax.Array
    noslip_tolerance: jax.Array
    integrator: int = static_field()
    solver: int = static_field()
    cone: int = static_field()
    jacobian: int = static_field()
    iterations: int = static_field()
    ls_iterations: int = static_field()
    noslip_iterations: int = static_field()
    ccd_iterations: int = static_field()
    disableflags: int = static_field()
    enableflags: int = static_field()
    has_fluid: bool = static_field()  # density or viscosity was nonzero when the model was built
    # hurtle's own: "adaptive" (while loops, stop at tolerance) or "fixed" (opt.iterations steps in
    # lax loops without early exit, so reverse-mode differentiation passes through the solver)
    solver_mode: str = static_field(default="adaptive")
    # hurtle's own: how the solver's answer is differentiated, "implicit" (at the optimum, any mode) or
    # "unrolled" (through the iterations; reverse mode then needs solver_mode="fixed")
    solver_grad: str = static_field(default="implicit")


@pytree_dataclass
class Model:
    """A compiled model (mjModel): static structure plus randomisable parameters."""

    opt: Option
    # -- randomisable parameters (jax arrays) --
    qpos0: jax.Array
    qpos_spring: jax.Array
    body_pos: jax.Array
    body_quat: jax.Array
    body_ipos: jax.Array
    body_iquat: jax.Array
    body_mass: jax.Array
    body_inertia: jax.Array
    body_gravcomp: jax.Array
    jnt_pos: jax.Array
    jnt_axis: jax.Array
    jnt_stiffness: jax.Array
    jnt_range: jax.Array
    jnt_margin: jax.Array
    jnt_solref: jax.Array
    jnt_solimp: jax.Array
    jnt_actfrcrange: jax.Array
    dof_armature: jax.Array
    dof_damping: jax.Array
    dof_frictionloss: jax.Array
    dof_solref: jax.Array
    dof_solimp: jax.Array
    dof_invweight0: jax.Array
    geom_pos: jax.Array
    geom_quat: jax.Array
    geom_size: jax.Array
    geom_friction: jax.Array
    geom_solref: jax.Array
    geom_solimp: jax.Array
    geom_solmix: jax.Array
    geom_margin: jax.Array
    geom_gap: jax.Array
    geom_rbound: jax.Array
    geom_fluid: jax.Array
    site_pos: jax.Array
    site_quat: jax.Array
    site_size: jax.Array
    actuator_gear: jax.Array
    actuator_ctrlrange: jax.Array
    actuator_forcerange: jax.Array
    actuator_actrange: jax.Array
    actuator_gainprm: jax.Array
    actuator_biasprm: jax.Array
    actuator_dynprm: jax.Array
    actuator_lengthrange: jax.Array
    actuator_cranklength: jax.Array
    actuator_acc0: jax.Array
    actuator_length0: jax.Array
    tendon_stiffness: jax.Array
    tendon_damping: jax.Array
    tendon_armature: jax.Array
    tendon_frictionloss: jax.Array
    tendon_lengthspring: jax.Array
    tendon_length0: jax.Array
    tendon_range: jax.Array
    tendon_margin: jax.Array
    tendon_solref_lim: jax.Array
    tendon_solimp_lim: jax.Array
    tendon_solref_fri: jax.Array
    tendon_solimp_fri: jax.Array
    tendon_invweight0: jax.Array
    wrap_prm: jax.Array
    eq_data: jax.Array
    eq_solref: jax.Array
    eq_solimp: jax.Array
    body_invweight0: jax.Array
    body_subtreemass: jax.Array
    sensor_cutoff: jax.Array
    sensor_noise: jax.Array
    stat_meaninertia: jax.Array
    pair_solref: jax.Array
    pair_solreffriction: jax.Array
    pair_solimp: jax.Array
    pair_friction: jax.Array
    pair_margin: jax.Array
    pair_gap: jax.Array
    # -- sizes and structure (static) --
    nq: int = static_field()
    nv: int = static_field()
    nu: int = static_field()
    na: int = static_field()
    nbody: int = static_field()
    njnt: int = static_field()
    ngeom: int = static_field()
    nsite: int = static_field()
    nmocap: int = static_field()
    ntendon: int = static_field()
    neq: int = static_field()
    npair: int = static_field()
    nsensordata: int = static_field()
    nsensor: int = static_field()
    body_parentid: np.ndarray = static_field()
    body_rootid: np.ndarray = static_field()
    body_weldid: np.ndarray = static_field()
    body_mocapid: np.ndarray = static_field()
    body_jntnum: np.ndarray = static_field()
    body_jntadr: np.ndarray = static_field()
    body_dofnum: np.ndarray = static_field()
    body_dofadr: np.ndarray = static_field()
    body_geomnum: np.ndarray = static_field()
    body_geomadr: np.ndarray = static_field()
    body_sameframe: np.ndarray = static_field()
    jnt_type: np.ndarray = static_field()
    jnt_qposadr: np.ndarray = static_field()
    jnt_dofadr: np.ndarray = static_field()
    jnt_bodyid: np.ndarray = static_field()
    jnt_limited: np.ndarray = static_field()
    jnt_actfrclimited: np.ndarray = static_field()
    jnt_actgravcomp: np.ndarray = static_field()
    dof_bodyid: np.ndarray = static_field()
    dof_jntid: np.ndarray = static_field()
    dof_parentid: np.ndarray = static_field()
    dof_treeid: np.ndarray = static_field()  # kinematic tree of each dof (constraint islands)
    body_treeid: np.ndarray = static_field()  # tree of each body, -1 for static bodies
    geom_type: np.ndarray = static_field()
    geom_bodyid: np.ndarray = static_field()
    geom_contype: np.ndarray = static_field()
    geom_conaffinity: np.ndarray = static_field()
    geom_condim: np.ndarray = static_field()
    geom_priority: np.ndarray = static_field()
    geom_dataid: np.ndarray = static_field()
    geom_sameframe: np.ndarray = static_field()
    geom_rayvisible: np.ndarray = static_field()  # geoms rays hit (not fully transparent: mj_ray's filter)
    ray_shapes: tuple = static_field()  # meshes' faces and height fields' heights for rangefinders (sensor.ray_shapes)
    site_bodyid: np.ndarray = static_field()
    site_type: np.ndarray = static_field()
    site_sameframe: np.ndarray = static_field()
    actuator_trntype: np.ndarray = static_field()
    actuator_dyntype: np.ndarray = static_field()
    actuator_gaintype: np.ndarray = static_field()
    actuator_biastype: np.ndarray = static_field()
    actuator_trnid: np.ndarray = static_field()
    actuator_actadr: np.ndarray = static_field()
    actuator_actnum: np.ndarray = static_field()
    actuator_ctrllimited: np.ndarray = static_field()
    actuator_forcelimited: np.ndarray = static_field()
    actuator_actlimited: np.ndarray = static_field()
    actuator_actearly: np.ndarray = static_field()
    tendon_adr: np.ndarray = static_field()
    tendon_num: np.ndarray = static_field()
    tendon_limited: np.ndarray = static_field()
    wrap_type: np.ndarray = static_field()
    wrap_objid: np.ndarray = static_field()
    tendon_segments: dict = static_field()  # spatial tendons' paths (hurtle.physics.tendon.spatial_segments)
    sensor_type: np.ndarray = static_field()
    sensor_datatype: np.ndarray = static_field()
    sensor_objtype: np.ndarray = static_field()
    sensor_objid: np.ndarray = static_field()
    sensor_reftype: np.ndarray = static_field()
    sensor_refid: np.ndarray = static_field()
    sensor_adr: np.ndarray = static_field()
    sensor_dim: np.ndarray = static_field()
    sensor_intprm: np.ndarray = static_field()
    eq_type: np.ndarray = static_field()
    eq_obj1id: np.ndarray = static_field()
    eq_obj2id: np.ndarray = static_field()
    eq_objtype: np.ndarray = static_field()
    eq_active0: np.ndarray = static_field()
    ncon_max: int = static_field()  # static capacity of Data.contact
    contact_dim: np.ndarray = static_field()  # (ncon_max,) condim of each contact slot
    # MJCF <size nconmax>: contacts kept per condim when fewer than the candidate slots, -1 for all
    nconmax: int = static_field()
    contact_compaction: Any = static_field()  # hurtle.physics.collision.Compaction, or None
    # the solver's working set: rows it gathers the active constraints into (MJCF <size njmax>, or
    # chosen from the rows when the file does not set it); 0: it works on every row
    njmax: int = static_field()
    # decisions taken from parameter values when the model was built (randomising a parameter away
    # from zero does not switch the feature on)
    has_gravcomp: bool = static_field()
    has_dof_damping: bool = static_field()
    has_frictionloss: bool = static_field()
    tree: Tree = static_field()
    efc: Any = static_field()  # constraint row layout (hurtle.physics.constraint.Layout)
    collision: tuple = static_field()  # candidate geom pairs by type pair (collision.PairGroup)
    names: dict = static_field()  # {"body": (...), "joint": (...), ...} element names, "" if unnamed
    source: str = static_field()  # file the model came from, or "<mjModel>"

    def name2id(self, kind: str, name: str) -> int:
        """Index of the element `name` of `kind` ("body", "joint", "geom", "site", "actuator", ...)."""
        try:
            return self.names[kind].index(name)
        except (KeyError, ValueError):
            raise KeyError(f"{self.source}: no {kind} named {name!r}") from None

    def disabled(self, flag: int) -> bool:
        return bool(self.opt.disableflags & flag)

    def enabled(self, flag: int) -> bool:
        return bool(self.opt.enableflags & flag)


@pytree_dataclass
class Contact:
    """Contacts with a static capacity; `active` marks the ones that exist (filled by collision)."""

    dist: jax.Array
    pos: jax.Array
    frame: jax.Array  # (n, 3, 3): normal in the first row, as MuJoCo
    includemargin: jax.Array
    friction: jax.Array  # (n, 5): tangent, tangent, torsional, rolling, rolling
    solref: jax.Array
    solreffriction: jax.Array
    solimp: jax.Array
    geom1: jax.Array
    geom2: jax.Array
    dim: jax.Array  # condim of each slot (fixed when the model is built)
    active: jax.Array
    # found inside the gap (margin <= dist < margin + gap): no constraint rows (MuJoCo's excluded contacts), but
    # body (adhesion) transmissions pull through them
    gap: jax.Array


@pytree_dataclass
class Data:
    """Simulation state and everything computed from it (mjData), with fixed shapes.

    `contact` has a static capacity; `ncon` counts its active slots (MuJoCo's `ncon`).
    """

    @property
    def ncon(self) -> jax.Array:
        return jnp.sum(self.contact.active, axis=-1, dtype=jnp.int32)

    time: jax.Array
    qpos: jax.Array
    qvel: jax.Array
    act: jax.Array
    ctrl: jax.Array
    qacc: jax.Array
    qacc_warmstart: jax.Array
    qacc_smooth: jax.Array
    qfrc_applied: jax.Array
    xfrc_applied: jax.Array
    mocap_pos: jax.Array
    mocap_quat: jax.Array
    energy: jax.Array
    # position dependent
    xpos: jax.Array
    xquat: jax.Array
    xmat: jax.Array
    xipos: jax.Array
    ximat: jax.Array
    xanchor: jax.Array
    xaxis: jax.Array
    geom_xpos: jax.Array
    geom_xmat: jax.Array
    site_xpos: jax.Array
    site_xmat: jax.Array
    subtree_com: jax.Array
    cinert: jax.Array
    crb: jax.Array
    cdof: jax.Array
    ten_length: jax.Array
    ten_J: jax.Array
    actuator_length: jax.Array
    actuator_moment: jax.Array
    qM: jax.Array
    qLD: jax.Array
    qLDiagInv: jax.Array
    # L'DL factor of qM + h diag(dof_damping), Euler's implicit damping (MuJoCo's qH, qHDiagInv),
    # dense like qLD; shape (0, 0) and (0,) when the model's Euler step does not use it
    qH: jax.Array
    qHDiagInv: jax.Array
    contact: Contact
    # active contacts that collision found beyond Model.nconmax and dropped (0 without a cap)
    ncon_dropped: jax.Array
    # velocity dependent
    cvel: jax.Array
    cdof_dot: jax.Array
    ten_velocity: jax.Array
    actuator_velocity: jax.Array
    qfrc_bias: jax.Array
    qfrc_spring: jax.Array
    qfrc_damper: jax.Array
    qfrc_gravcomp: jax.Array
    qfrc_fluid: jax.Array
    qfrc_passive: jax.Array
    # acceleration dependent
    actuator_force: jax.Array
    act_dot: jax.Array
    qfrc_actuator: jax.Array
    qfrc_smooth: jax.Array
    qfrc_constraint: jax.Array
    # after the solve, by rne_post_constraint (MuJoCo computes them on demand)
    cacc: jax.Array
    cfrc_int: jax.Array
    cfrc_ext: jax.Array
    # constraints: one row per entry of Model.efc, masked by efc_active
    eq_active: jax.Array
    efc_J: jax.Array
    efc_pos: jax.Array
    efc_margin: jax.Array
    efc_frictionloss: jax.Array
    efc_diagA: jax.Array
    efc_R: jax.Array
    efc_D: jax.Array
    efc_KBIP: jax.Array
    efc_vel: jax.Array
    efc_aref: jax.Array
    efc_force: jax.Array
    efc_state: jax.Array
    efc_active: jax.Array
    solver_niter: jax.Array
    # sensors (hurtle.physics.sensor), MuJoCo's layout: Model.sensor_adr, sensor_dim
    sensordata: jax.Array


def field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))
