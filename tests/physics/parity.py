"""Helpers for comparing hurtle against MuJoCo C, field by field."""

from __future__ import annotations

import functools
import glob
import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import hurtle.physics as hp

TOL = 1e-8  # the parity tolerance of the relative error below

_ASSET_DIRS = {"gymnasium": ("envs", "mujoco", "assets"), "dm_control": ("suite",)}


def asset_dir(package: str) -> str | None:
    """The model directory of `gymnasium` (its MuJoCo assets) or `dm_control` (its suite); None if not installed."""
    try:
        module = __import__(package)
    except ImportError:
        return None
    return os.path.join(os.path.dirname(module.__file__), *_ASSET_DIRS[package])


def asset_files(*packages: str) -> list[str]:
    """Every model file of the given packages that are installed, sorted per package."""
    return [f for p in packages if (root := asset_dir(p)) for f in sorted(glob.glob(os.path.join(root, "*.xml")))]


# fields of Data compared with MuJoCo after mj_forward
FORWARD_FIELDS = (
    "qpos",
    "qvel",
    "act",
    "ctrl",
    "qfrc_applied",
    "xfrc_applied",
    "xpos",
    "xquat",
    "xmat",
    "xipos",
    "ximat",
    "xanchor",
    "xaxis",
    "geom_xpos",
    "geom_xmat",
    "site_xpos",
    "site_xmat",
    "subtree_com",
    "cinert",
    "crb",
    "cdof",
    "cvel",
    "cdof_dot",
    "qM",
    "ten_length",
    "ten_J",
    "ten_velocity",
    "actuator_length",
    "actuator_moment",
    "actuator_velocity",
    "qfrc_bias",
    "qfrc_spring",
    "qfrc_damper",
    "qfrc_gravcomp",
    "qfrc_fluid",
    "qfrc_passive",
    "actuator_force",
    "act_dot",
    "qfrc_actuator",
    "qfrc_smooth",
    "qacc_smooth",
    "qacc",
    "energy",
    "sensordata",
)


def rel_error(ours, ref) -> float:
    """max|ours - ref| / (max|ref| + 1e-3) over a field."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(ours - ref)) / (np.max(np.abs(ref)) + 1e-3))


def sensor_errors(mj_model: mujoco.MjModel, ours, ref) -> np.ndarray:
    """Per sensor: max |ours - ref| / (max |ref| + 1) over its values (sensordata vectors)."""
    ours, ref = np.asarray(ours, np.float64), np.asarray(ref, np.float64)
    out = np.zeros(mj_model.nsensor)
    for s in range(mj_model.nsensor):
        a, n = mj_model.sensor_adr[s], mj_model.sensor_dim[s]
        out[s] = np.max(np.abs(ours[a : a + n] - ref[a : a + n])) / (np.max(np.abs(ref[a : a + n])) + 1)
    return out


def random_state(mj_model: mujoco.MjModel, rng: np.random.Generator, mj_data: mujoco.MjData | None = None):
    """A random valid state written into a fresh (or given) MjData: normalised quaternions, random
    velocities, controls (some outside their ranges), activations, applied forces and mocap poses."""
    m = mj_model
    d = mj_data if mj_data is not None else mujoco.MjData(m)
    mujoco.mj_resetData(m, d)
    qpos = m.qpos0 + 0.5 * rng.standard_normal(m.nq)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j]
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[a : a + 3] = m.qpos0[a : a + 3] + 0.3 * rng.standard_normal(3)
            q = rng.standard_normal(4)
            qpos[a + 3 : a + 7] = q / np.linalg.norm(q)
        elif m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
            q = rng.standard_normal(4)
            qpos[a : a + 4] = q / np.linalg.norm(q)
    d.qpos[:] = qpos
    d.qvel[:] = rng.standard_normal(m.nv)
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    width = np.where(m.actuator_ctrllimited, hi - lo, 2.0)
    centre = np.where(m.actuator_ctrllimited, 0.5 * (lo + hi), 0.0)
    d.ctrl[:] = centre + 0.6 * width * rng.uniform(-1, 1, m.nu)  # some outside the range
    d.act[:] = rng.standard_normal(m.na)
    d.qfrc_applied[:] = 0.1 * rng.standard_normal(m.nv)
    d.xfrc_applied[1:] = 0.1 * rng.standard_normal((m.nbody - 1, 6))
    if m.nmocap:
        d.mocap_pos[:] = rng.standard_normal((m.nmocap, 3))
        q = rng.standard_normal((m.nmocap, 4))
        d.mocap_quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    return d


def batch_data(model: hp.Model, mj_model: mujoco.MjModel, mj_datas) -> hp.Data:
    """hurtle Data for each MjData's state, stacked along a leading batch axis."""
    datas = [hp.from_mjdata(model, d, mj_model) for d in mj_datas]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *datas)


@functools.cache
def batched(fn):
    """One compiled, batched version of a stage function, shared by all tests (compiled per model)."""
    return jax.jit(jax.vmap(fn, in_axes=(None, 0)))


def forward_at_random_states(mm: mujoco.MjModel, nstates: int = 2, seed: int = 0, source: str = "<mjModel>"):
    """hurtle's batched forward and MuJoCo's mj_forward at the same random states.

    Returns (model, hurtle's batched Data, MuJoCo's MjData list)."""
    model = hp.from_mujoco(mm, source=source)
    rng = np.random.default_rng(seed)
    mjds = [random_state(mm, rng) for _ in range(nstates)]
    batch = batch_data(model, mm, mjds)
    for d in mjds:
        mujoco.mj_forward(mm, d)
    return model, batched(hp.forward)(model, batch), mjds


def compare(model: hp.Model, ours: hp.Data, mj_model, mj_datas, fields=FORWARD_FIELDS, index=None):
    """Relative errors of each field for each state of a batch; returns {field: worst error}."""
    worst = {}
    for b, mjd in enumerate(mj_datas):
        ref = hp.from_mjdata(model, mjd, mj_model)
        for f in fields:
            mine = getattr(ours, f)[b]
            err = rel_error(mine, getattr(ref, f))
            worst[f] = max(worst.get(f, 0.0), err)
    return worst


def assert_parity(worst: dict, tol: float = TOL, label: str = ""):
    bad = {f: e for f, e in worst.items() if not e <= tol}
    assert not bad, f"{label}: fields beyond {tol:g}: " + ", ".join(f"{f}={e:.2e}" for f, e in bad.items())


def contacts_from_mujoco(model: hp.Model, d: hp.Data, mj_data: mujoco.MjData) -> hp.Data:
    """`d` with the contacts MuJoCo detected copied into its slots (for testing contact rows)."""
    n = model.ncon_max
    cons = [mj_data.contact[i] for i in range(mj_data.ncon)]
    assert len(cons) <= n
    dt = d.qpos.dtype

    def field(name, shape, fill=0.0, dtype=None):
        out = np.full((n,) + shape, fill, dtype=dtype or np.float64)
        for i, c in enumerate(cons):
            out[i] = np.reshape(getattr(c, name), shape)
        return jnp.asarray(out, dtype or dt)

    contact = d.contact.replace(
        dist=field("dist", ()),
        pos=field("pos", (3,)),
        frame=field("frame", (3, 3)),
        includemargin=field("includemargin", ()),
        friction=field("friction", (5,), 1.0),
        solref=field("solref", (2,)),
        solreffriction=field("solreffriction", (2,)),
        solimp=field("solimp", (5,)),
        geom1=field("geom1", (), 0, np.int32),
        geom2=field("geom2", (), 0, np.int32),
        active=jnp.asarray(np.arange(n) < len(cons))
        & jnp.asarray([c.exclude == 0 for c in cons] + [False] * (n - len(cons))),
    )
    return d.replace(contact=contact)


def qpos_rollout(model: hp.Model, data: hp.Data, steps: int) -> jax.Array:
    """qpos after each of `steps` hurtle steps, compiled as one scan."""

    def roll(m, d):
        def body(d, _):
            d = hp.step(m, d)
            return d, d.qpos

        return jax.lax.scan(body, d, None, length=steps)[1]

    return jax.jit(roll)(model, data)


def mujoco_qpos_rollout(mj_model: mujoco.MjModel, mj_data: mujoco.MjData, steps: int) -> tuple[np.ndarray, int]:
    """MuJoCo's qpos after each of `steps` steps from `mj_data` (advanced in place), and the contacts seen."""
    qpos, contacts = [], 0
    for _ in range(steps):
        mujoco.mj_step(mj_model, mj_data)
        qpos.append(mj_data.qpos.copy())
        contacts += mj_data.ncon
    return np.array(qpos), contacts


def mujoco_random_walk(mj_model: mujoco.MjModel, rng: np.random.Generator, rounds: int, steps: int):
    """Yields one MjData `rounds` times, each after `steps` MuJoCo steps under uniform random controls (in
    the control range, [-1, 1] where unlimited) and `mj_forward`: states a real trajectory visits."""
    m = mj_model
    md = mujoco.MjData(m)
    lo = np.where(m.actuator_ctrllimited, m.actuator_ctrlrange[:, 0], -1.0)
    hi = np.where(m.actuator_ctrllimited, m.actuator_ctrlrange[:, 1], 1.0)
    for _ in range(rounds):
        for _ in range(steps):
            md.ctrl[:] = rng.uniform(lo, hi)
            mujoco.mj_step(m, md)
        mujoco.mj_forward(m, md)
        yield md


KNIFE_NUDGE = 1e-9  # how far a state is nudged (in joint space) to see whether MuJoCo's own answer holds still
KNIFE_JUMP = 1e-4  # a relative change of qacc or sensordata past this under such a nudge marks a knife edge: a
# contact stiffness moves qacc by ~1e-6 relative under 1e-9, where a rounding-level tie (EPA's choice of a height
# field's prism, two faces parallel) moves it by 1e-3 to 10 (benchmarks/NOTES.md §52)


def nudged_answers(
    mj_model: mujoco.MjModel, mj_data: mujoco.MjData, rng: np.random.Generator, nudges: int = 4
) -> list[np.ndarray]:
    """MuJoCo's qacc and sensordata (concatenated) at the state and with its qpos moved by KNIFE_NUDGE along
    `nudges` random joint-space directions, each way (a tie one rounding away flips for one of the two signs far
    more often than for one random direction)."""
    m = mj_model
    out = [np.concatenate([mj_data.qacc, mj_data.sensordata])]
    probe = mujoco.MjData(m)
    for _ in range(nudges):
        dq = rng.standard_normal(m.nv)
        dq *= KNIFE_NUDGE / max(np.linalg.norm(dq), 1e-300)
        for sign in (1.0, -1.0):
            mujoco.mj_copyData(probe, m, mj_data)
            mujoco.mj_integratePos(m, probe.qpos, sign * dq, 1.0)
            mujoco.mj_forward(m, probe)
            out.append(np.concatenate([probe.qacc, probe.sensordata]))
    return out


def knife_edge(mj_model: mujoco.MjModel, mj_data: mujoco.MjData, rng: np.random.Generator, nudges: int = 4) -> float:
    """How much MuJoCo's own qacc and sensordata move (relative, the largest) under `nudged_answers`' nudges: above
    KNIFE_JUMP, the state is a knife edge, where no engine can be held to MuJoCo's one answer."""
    base, *moved = nudged_answers(mj_model, mj_data, rng, nudges)
    scale = np.max(np.abs(base), initial=0.0) + 1.0
    return max(float(np.max(np.abs(x - base), initial=0.0) / scale) for x in moved)


def off_knife_edge(
    mj_model: mujoco.MjModel, mj_data: mujoco.MjData, rng: np.random.Generator, tries: int = 12
) -> tuple[mujoco.MjData, int]:
    """`mj_data`, or a nearby state that is not a knife edge (`knife_edge` at most KNIFE_JUMP). Each move steps
    MuJoCo once (a state the trajectory visits) and shifts qpos by a random joint-space displacement growing from
    1e-7 to 1e-4 (a body resting where two faces tie stays on the tie as it steps). Returns the state (forwarded)
    and how many moves it took (0: the state was steady); RuntimeError if none of `tries` was."""
    m = mj_model
    for moves in range(tries + 1):
        if knife_edge(m, mj_data, rng) <= KNIFE_JUMP:
            return mj_data, moves
        mujoco.mj_step(m, mj_data)
        dq = rng.standard_normal(m.nv)
        scale = 1e-7 * 10 ** (3 * moves / max(tries - 1, 1))
        mujoco.mj_integratePos(m, mj_data.qpos, dq * (scale / max(np.linalg.norm(dq), 1e-300)), 1.0)
        mujoco.mj_forward(m, mj_data)
    raise RuntimeError(f"no state off a knife edge within {tries} moves (MuJoCo's own answer is unstable there)")


def actuator_moment(mj_model: mujoco.MjModel, mj_data: mujoco.MjData) -> np.ndarray:
    """MuJoCo's sparse actuator_moment as a dense (nu, nv) matrix."""
    out = np.zeros((mj_model.nu, mj_model.nv))
    d = mj_data
    mujoco.mju_sparse2dense(out, d.actuator_moment, d.moment_rownnz, d.moment_rowadr, d.moment_colind)
    return out


def matched_contacts(ours: hp.Data, mj_data: mujoco.MjData) -> list[tuple[int, int, float]]:
    """(our slot, MuJoCo's contact index, largest difference of dist, pos and frame) for each of MuJoCo's
    contacts with rows, paired with the nearest active slot of ours between the same geoms (the engines
    may list contacts in other orders). The frame is the whole of it: the normal and both tangents, which
    set the directions of a contact's friction rows."""
    act = np.asarray(ours.contact.active)
    g = np.stack([np.asarray(ours.contact.geom1), np.asarray(ours.contact.geom2)], 1)
    frame = np.asarray(ours.contact.frame).reshape(-1, 9)
    key = np.concatenate([np.asarray(ours.contact.dist)[:, None], np.asarray(ours.contact.pos), frame], 1)
    free = set(np.nonzero(act)[0])
    out = []
    for k, c in enumerate(mj_data.contact[: mj_data.ncon]):
        if c.exclude or c.efc_address < 0:
            continue
        cand = [i for i in free if g[i, 0] == c.geom1 and g[i, 1] == c.geom2]
        assert cand, f"MuJoCo's contact between geoms {c.geom1} and {c.geom2} has no match"
        ref = np.array([c.dist, *c.pos, *c.frame])
        i = min(cand, key=lambda i: np.abs(key[i] - ref).max())
        free.discard(i)
        out.append((int(i), k, float(np.abs(key[i] - ref).max())))
    return out


CONTACT_TYPES = [
    mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS,
    mujoco.mjtConstraint.mjCNSTR_CONTACT_PYRAMIDAL,
    mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC,
]


def _contact_rows(model: hp.Model, ours: hp.Data, mj_data: mujoco.MjData):
    """(our row indices, MuJoCo's row indices) of every contact's constraint rows, paired by contact."""
    contact_rows = np.isin(model.efc.type, CONTACT_TYPES)
    mine, theirs = [], []
    for i, k, _ in matched_contacts(ours, mj_data):
        rows = np.nonzero(contact_rows & (model.efc.id == i))[0]
        adr = mj_data.contact.efc_address[k]
        mine.extend(rows)
        theirs.extend(range(adr, adr + len(rows)))
    return np.array(mine, int), np.array(theirs, int)


_CONTACT_FIELDS = {
    "dist": (),
    "pos": (3,),
    "frame": (3, 3),
    "includemargin": (),
    "friction": (5,),
    "solref": (2,),
    "solreffriction": (2,),
    "solimp": (5,),
}


def mujoco_contacts_in_slots(d: hp.Data, mj_data: mujoco.MjData, slots: list[tuple[int, int, float]]) -> hp.Data:
    """`d` with MuJoCo's contacts written into our slots (`matched_contacts`' pairing) and every other slot
    off: for a model built with `contact_dims=model.contact_dim` (no collision), whose forward takes them."""
    fields = {}
    for name, shape in _CONTACT_FIELDS.items():
        out = np.array(getattr(d.contact, name), np.float64)
        for i, k, _ in slots:
            out[i] = np.reshape(getattr(mj_data.contact[k], name), shape)
        fields[name] = jnp.asarray(out, d.qpos.dtype)
    active = np.zeros(d.contact.dist.shape[0], bool)
    active[[i for i, _, _ in slots]] = True
    return d.replace(contact=d.contact.replace(active=jnp.asarray(active), **fields))


def constrained_errors(model: hp.Model, ours: hp.Data, mj_data: mujoco.MjData) -> dict:
    """Relative errors of what users consume from a constrained step (qacc, qfrc_constraint and every
    row's efc_force, contact rows paired by contact) for one world; asserts the same active rows."""
    act = np.asarray(ours.efc_active)
    assert act.sum() == mj_data.nefc, f"{act.sum()} active rows, MuJoCo {mj_data.nefc}"
    mine, theirs = _contact_rows(model, ours, mj_data)
    is_contact = np.zeros(len(act), bool)
    is_contact[mine] = True
    rest = np.nonzero(act & ~is_contact)[0]  # the other rows keep MuJoCo's order
    rest_ref = np.setdiff1d(np.arange(mj_data.nefc), theirs)
    np.testing.assert_array_equal(model.efc.type[rest], mj_data.efc_type[rest_ref])
    np.testing.assert_array_equal(model.efc.id[rest], mj_data.efc_id[rest_ref])
    force = np.asarray(ours.efc_force)
    return {
        "qacc": rel_error(ours.qacc, mj_data.qacc),
        "qfrc_constraint": rel_error(ours.qfrc_constraint, mj_data.qfrc_constraint),
        "efc_force": rel_error(force[np.r_[mine, rest]], mj_data.efc_force[np.r_[theirs, rest_ref]]),
    }
