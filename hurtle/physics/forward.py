"""`forward` (the pipeline of stages) and `step` (forward plus an integrator).

Stages are pure `(model, data) -> data` functions named after MuJoCo's pipeline:
kinematics -> com_pos -> tendon -> crb -> factor_m -> transmission -> (tendon/actuator velocity)
-> com_vel -> passive -> rne -> actuation -> qacc_smooth -> solve -> sensors. The library never jits; callers jit
`forward` or `step` with the model as an ordinary argument.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import dynamics, inertia, linalg, math, solver, tracing
from hurtle.physics.actuation import actuation, actuator_velocity, next_activation, transmission
from hurtle.physics.collision import collision
from hurtle.physics.constraint import make_constraint, reference_constraint
from hurtle.physics.kinematics import com_pos, kinematics
from hurtle.physics.sensor import sensors
from hurtle.physics.tendon import tendon, tendon_velocity
from hurtle.physics.types import (
    INT_EULER,
    INT_IMPLICIT,
    INT_IMPLICITFAST,
    INT_RK4,
    JNT_BALL,
    JNT_FREE,
    JNT_HINGE,
    JNT_SLIDE,
    Data,
    Model,
)

_DSBL = mujoco.mjtDisableBit
_ENBL = mujoco.mjtEnableBit


def fwd_position(m: Model, d: Data) -> Data:
    d = kinematics(m, d)
    d = com_pos(m, d)
    d = tendon(m, d)
    d = inertia.crb(m, d)
    d = inertia.factor_m(m, d)
    d = collision(m, d)
    d = make_constraint(m, d)
    d = transmission(m, d)
    return d


def fwd_velocity(m: Model, d: Data) -> Data:
    d = tendon_velocity(m, d)
    d = actuator_velocity(m, d)
    d = dynamics.com_vel(m, d)
    d = dynamics.passive(m, d)
    d = reference_constraint(m, d)
    d = dynamics.rne(m, d)
    return d


def xfrc_accumulate(m: Model, d: Data) -> jax.Array:
    """Generalised force of the Cartesian forces and torques `xfrc_applied` (mj_xfrcAccumulate)."""
    f = d.xfrc_applied.at[0].set(0.0)
    return dynamics.apply_ft(m, d, f[:, :3], f[:, 3:], d.xipos)


def fwd_acceleration(m: Model, d: Data) -> Data:
    """`qfrc_smooth` and the unconstrained acceleration `qacc_smooth = M^-1 qfrc_smooth`."""
    with jax.named_scope("qacc_smooth"):
        qfrc = d.qfrc_passive - d.qfrc_bias + d.qfrc_applied + d.qfrc_actuator
        if m.nv:
            qfrc = qfrc + xfrc_accumulate(m, d)
        qacc = inertia.solve_m(m, d, qfrc) if m.nv else qfrc
        return d.replace(qfrc_smooth=qfrc, qacc_smooth=qacc)


def fwd_constraint(m: Model, d: Data) -> Data:
    """The constrained acceleration (the smooth one when the model has no constraint rows)."""
    return solver.solve(m, d)


@tracing.inline_numpy
def energy(m: Model, d: Data) -> jax.Array:
    """Potential and kinetic energy (mj_energyPos, mj_energyVel)."""
    pot = jnp.zeros((), d.qpos.dtype)
    if not m.disabled(_DSBL.mjDSBL_GRAVITY):
        pot = pot - jnp.sum(m.body_mass[1:] * (d.xipos[1:] @ m.opt.gravity))
    if not m.disabled(_DSBL.mjDSBL_SPRING):
        k = m.jnt_stiffness
        for jtype in np.unique(m.jnt_type):
            j = np.nonzero(m.jnt_type == jtype)[0]
            qa = m.jnt_qposadr[j]
            if jtype in (JNT_FREE, JNT_BALL):
                off = 3 if jtype == JNT_FREE else 0
                if jtype == JNT_FREE:
                    dif = d.qpos[qa[:, None] + np.arange(3)] - m.qpos_spring[qa[:, None] + np.arange(3)]
                    pot = pot + jnp.sum(0.5 * k[j] * math.dot(dif, dif))
                # MuJoCo takes the difference of the raw (unnormalised) quaternion here
                rot = math.sub_quat(
                    d.qpos[qa[:, None] + off + np.arange(4)], m.qpos_spring[qa[:, None] + off + np.arange(4)]
                )
                pot = pot + jnp.sum(0.5 * k[j] * math.dot(rot, rot))
            else:
                x = d.qpos[qa] - m.qpos_spring[qa]
                pot = pot + jnp.sum(0.5 * k[j] * x * x)
        if m.ntendon:
            length = d.ten_length
            lo, hi = m.tendon_lengthspring[:, 0], m.tendon_lengthspring[:, 1]
            x = jnp.where(length > hi, length - hi, jnp.where(length < lo, length - lo, 0.0))
            pot = pot + jnp.sum(0.5 * m.tendon_stiffness * x * x)
    kin = 0.5 * jnp.dot(d.qvel, math.matmul(d.qM, d.qvel)) if m.nv else jnp.zeros((), d.qpos.dtype)
    return jnp.stack([pot, kin])


@tracing.inline_numpy
def forward(m: Model, d: Data) -> Data:
    """Forward dynamics: every quantity of `d` that depends on its state, and `qacc` (mj_forward)."""
    d = fwd_position(m, d)
    d = fwd_velocity(m, d)
    if m.enabled(_ENBL.mjENBL_ENERGY):
        d = d.replace(energy=energy(m, d))
    else:
        d = d.replace(energy=jnp.zeros_like(d.energy))
    d = actuation(m, d)
    d = fwd_acceleration(m, d)
    d = fwd_constraint(m, d)
    d = sensors(m, d)
    return d


@tracing.inline_numpy
def integrate_pos(m: Model, qpos: jax.Array, qvel: jax.Array, dt: jax.Array) -> jax.Array:
    """Advance positions by velocity `qvel` over `dt`, quaternions on their manifold (mj_integratePos).
    Every joint's new coordinates are one piece of one concatenation (no scatter per joint type)."""
    pieces = []
    scalar = np.nonzero((m.jnt_type == JNT_HINGE) | (m.jnt_type == JNT_SLIDE))[0]
    if scalar.size:
        qa, da = m.jnt_qposadr[scalar], m.jnt_dofadr[scalar]
        pieces.append((qa, math.take(qpos, qa) + dt * math.take(qvel, da)))
    for jtype in (JNT_FREE, JNT_BALL):
        j = np.nonzero(m.jnt_type == jtype)[0]
        if not j.size:
            continue
        qa, da = m.jnt_qposadr[j], m.jnt_dofadr[j]
        if jtype == JNT_FREE:
            pi, vi = qa[:, None] + np.arange(3), da[:, None] + np.arange(3)
            pieces.append((pi, _take(qpos, pi) + dt * _take(qvel, vi)))
            qa, da = qa + 3, da + 3
        qi, wi = qa[:, None] + np.arange(4), da[:, None] + np.arange(3)
        pieces.append((qi, math.quat_integrate(_take(qpos, qi), _take(qvel, wi), dt)))
    if not pieces:
        return qpos
    # in row order where the joints allow (a floating base, then hinges): then no gather is needed
    pieces.sort(key=lambda p: int(np.min(p[0])))
    return math.assemble(m.nq, pieces, jnp.zeros((), qpos.dtype))


def _take(x: jax.Array, idx: np.ndarray) -> jax.Array:
    return math.take(x, idx.ravel()).reshape(idx.shape)


def _advance(m: Model, d: Data, act_dot: jax.Array, qacc: jax.Array, qvel: jax.Array | None = None) -> Data:
    """Integrate activations, velocities, positions and time by one timestep (mj_advance)."""
    dt = m.opt.timestep
    act = d.act
    if m.na and not m.disabled(_DSBL.mjDSBL_ACTUATION):
        act = next_activation(m, d, act_dot)
    new_qvel = d.qvel + dt * qacc
    qpos = integrate_pos(m, d.qpos, new_qvel if qvel is None else qvel, dt)
    return d.replace(act=act, qvel=new_qvel, qpos=qpos, time=d.time + dt, qacc_warmstart=d.qacc)


@tracing.inline_numpy
def euler(m: Model, d: Data) -> Data:
    """Semi-implicit Euler, with joint damping integrated implicitly (mj_Euler)."""
    with jax.named_scope("euler"):
        if not inertia.implicit_damping(m):
            return _advance(m, d, d.act_dot, d.qacc)
        # (M + h D) qacc = qfrc, with M + h D factorised by factor_m (from forward) in qH; a model
        # whose own integrator is not Euler has no qH, so its factor is computed here
        if inertia.euler_damped(m):
            ld, dinv = d.qH, d.qHDiagInv
        else:
            ld, dinv = inertia.factor(m, inertia.damped_inertia(m, d))
        qacc = inertia.solve(m, ld, dinv, d.qfrc_smooth + d.qfrc_constraint)
        return _advance(m, d, d.act_dot, qacc)


_RK4_A = ((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0))
_RK4_B = (1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0)


def _rot_dofs(m: Model) -> np.ndarray:
    """(n, 3) dof indices of the rotation of every ball and free joint."""
    rows = [
        m.jnt_dofadr[j] + (3 if m.jnt_type[j] == JNT_FREE else 0) + np.arange(3)
        for j in range(m.njnt)
        if m.jnt_type[j] in (JNT_FREE, JNT_BALL)
    ]
    return np.array(rows, int).reshape(-1, 3)


def dexp_inv(theta: jax.Array, omega: jax.Array) -> jax.Array:
    """Rate of the rotation vector `theta` of q0^-1 q for body angular velocity `omega`
    (the inverse right-trivialised differential of the exponential map on SO(3))."""
    t = math.safe_norm(theta, keepdims=True)
    small = t < 1e-3
    ts = jnp.where(small, 1.0, t)
    exact = 1.0 / (ts * ts) - (1.0 + jnp.cos(ts)) / (2.0 * ts * jnp.sin(ts))
    c = jnp.where(small, 1.0 / 12.0 + t * t / 720.0, exact)
    tw = math.cross(theta, omega)
    return omega + 0.5 * tw + c * math.cross(theta, tw)


@tracing.inline_numpy
def rk4(m: Model, d: Data) -> Data:
    """4th-order Runge-Kutta on (qpos, qvel, act) of a state `forward` has been run on (mj_RungeKutta, N=4).

    Ball and free-joint rotations are integrated on SO(3) as MuJoCo 4 does (Runge-Kutta-Munthe-Kaas):
    each stage's angular velocity is mapped through the inverse differential of the exponential map
    at that stage's rotation. As in MuJoCo, the derived quantities left in the result are those of the
    last stage.
    """
    return _rk4(m, d, first_forward=False)


def _rk4(m: Model, d: Data, first_forward: bool) -> Data:
    """RK4's stages as one lax.scan, so `forward` is traced once for all of them (a Python loop traces it once
    per stage, and the compiled program grows with it). With `first_forward`, the scan also runs the step's
    initial `forward` (stage 0, at the unmodified state), so `step` holds a single copy of the pipeline.

    Stage i combines the stored stage rates with row i of the Butcher tableau, padded with zeros; RK4's
    rows have one non-zero entry, so the sums equal the unpadded ones exactly.
    """
    with jax.named_scope("rk4"):
        dt = m.opt.timestep
        rot = _rot_dofs(m)
        qpos0, qvel0, act0, time0 = d.qpos, d.qvel, d.act, d.time

        def rate(v, theta):
            # the velocity that advances qpos0 to the stage: dexp^-1 on rotations
            if rot.size == 0:
                return v
            return v.at[rot].set(dexp_inv(theta[rot], v[rot]))

        n = len(_RK4_A) + 1
        rows = (((),) if first_forward else ()) + _RK4_A
        dtype = d.qvel.dtype
        a = jnp.asarray([list(row) + [0.0] * (n - len(row)) for row in rows], dtype)
        c = jnp.asarray([sum(row) for row in rows], dtype)

        def put(stack, i, x):
            return stack.at[i].set(x)

        # batched like the state under vmap, as the stages make them (one batching pass of the stage fewer)
        rates, accs, adots = tracing.varying_like(
            d.qvel,
            jnp.zeros((n,) + d.qvel.shape, dtype),
            jnp.zeros((n,) + d.qacc.shape, dtype),
            jnp.zeros((n,) + d.act_dot.shape, d.act_dot.dtype),
        )
        if not first_forward:
            rates = put(rates, 0, rate(d.qvel, jnp.zeros_like(d.qvel)))
            accs, adots = put(accs, 0, d.qacc), put(adots, 0, d.act_dot)

        def stage(carry, inputs):
            d, rates, accs, adots = carry
            i, row, ci = inputs
            dv, da, dact = row @ rates, row @ accs, row.astype(adots.dtype) @ adots
            qpos = integrate_pos(m, qpos0, dv, dt)
            if first_forward:  # stage 0 is the state itself (integrating by zero could renormalise quaternions)
                qpos = jnp.where(i == 0, qpos0, qpos)
            before = d.sensordata
            d = d.replace(qpos=qpos, qvel=qvel0 + dt * da, act=act0 + dt * dact, time=time0 + ci * dt)
            d = forward(m, d)
            if m.nsensor:  # MuJoCo's RK4 stages skip the sensors: keep those of the step's first forward
                d = d.replace(sensordata=jnp.where(i == 0, d.sensordata, before) if first_forward else before)
            carry = (d, put(rates, i, rate(d.qvel, dt * dv)), put(accs, i, d.qacc), put(adots, i, d.act_dot))
            return carry, None

        steps = (jnp.arange(n - len(rows), n), a, c)
        (d, rates, accs, adots), _ = tracing.scan(stage, (d, rates, accs, adots), steps)
        rates, accs, adots = list(rates), list(accs), list(adots)
        dv = sum(b * v for b, v in zip(_RK4_B, rates))
        da = sum(b * x for b, x in zip(_RK4_B, accs))
        dact = sum(b * x for b, x in zip(_RK4_B, adots))
        d = d.replace(qpos=qpos0, qvel=qvel0, act=act0, time=time0)
        return _advance(m, d, dact, da, dv)


def _actuator_damping_deriv(m: Model, d: Data) -> jax.Array:
    """d qfrc_actuator / d qvel as MuJoCo linearises it (mjd_actuator_vel): sum of b_i m_i m_i'."""
    if m.nu == 0 or m.disabled(_DSBL.mjDSBL_ACTUATION):
        return jnp.zeros((m.nv, m.nv), d.qpos.dtype)
    bias_vel = jnp.where(m.actuator_biastype == 1, m.actuator_biasprm[:, 2], 0.0)
    gain_vel = jnp.where(m.actuator_gaintype == 1, m.actuator_gainprm[:, 2], 0.0)
    inp = d.ctrl
    stateful = np.nonzero(m.actuator_actadr >= 0)[0]
    if stateful.size:
        adr = m.actuator_actadr[stateful] + m.actuator_actnum[stateful] - 1
        nxt = next_activation(m, d, d.act_dot)
        act_in = jnp.where(m.actuator_actearly[stateful], nxt[adr], d.act[adr])
        inp = inp.at[stateful].set(jnp.where(m.actuator_dyntype[stateful] == 0, d.ctrl[stateful], act_in))
    b = bias_vel + gain_vel * inp
    rng, f = m.actuator_forcerange, d.actuator_force
    clamped = m.actuator_forcelimited & ((f <= rng[:, 0]) | (f >= rng[:, 1]))
    b = jnp.where(clamped, 0.0, b)
    return math.matmul(d.actuator_moment.T * b, d.actuator_moment)


def _passive_damping_deriv(m: Model, d: Data) -> jax.Array:
    """d qfrc_passive / d qvel (mjd_passive_vel): dof and tendon damping, and fluid drag."""
    dt = d.qpos.dtype
    out = jnp.zeros((m.nv, m.nv), dt)
    if m.disabled(_DSBL.mjDSBL_SPRING) and m.disabled(_DSBL.mjDSBL_DAMPER):
        return out
    if m.opt.has_fluid:

        def fluid_of(qvel):
            dd = dynamics.com_vel(m, d.replace(qvel=qvel))
            return dynamics._fluid(m, dd)

        out = out + jax.jacfwd(fluid_of)(d.qvel)
    if not m.disabled(_DSBL.mjDSBL_DAMPER):
        out = out - math.diag_embed(m.dof_damping)
        if m.ntendon:
            out = out - math.matmul(d.ten_J.T * m.tendon_damping, d.ten_J)
    return out


def _bias_deriv(m: Model, d: Data, tangents: jax.Array) -> jax.Array:
    """Directional derivatives of `qfrc_bias` with respect to qvel along each row of `tangents`."""

    def bias_of(qvel):
        dd = dynamics.com_vel(m, d.replace(qvel=qvel))
        return dynamics.rne(m, dd).qfrc_bias

    return jax.vmap(lambda t: jax.jvp(bias_of, (d.qvel,), (t,))[1])(tangents)


@tracing.inline_numpy
def implicit(m: Model, d: Data) -> Data:
    """Implicit-in-velocity integration: `implicitfast` (symmetric, no Coriolis derivative, as MuJoCo
    except for standalone free bodies) or `implicit` (full derivative, dense LU)."""
    with jax.named_scope("implicit"):
        h = m.opt.timestep
        qfrc = d.qfrc_smooth + d.qfrc_constraint
        if m.nv == 0:
            return _advance(m, d, d.act_dot, d.qacc)
        qderiv = _actuator_damping_deriv(m, d) + _passive_damping_deriv(m, d)
        if m.opt.integrator == INT_IMPLICIT:
            dbias = _bias_deriv(m, d, jnp.eye(m.nv, dtype=d.qpos.dtype)).T
            qacc = linalg.solve(d.qM - h * (qderiv - dbias), qfrc)
            return _advance(m, d, d.act_dot, qacc)
        # implicitfast: the lower triangle of qDeriv within M's sparsity, used symmetrically
        t = m.tree
        low = jnp.where(t.dof_anc, qderiv, 0.0)
        sym = math.symmetric_from_lower(low)
        qh = d.qM - h * sym
        free = t.free_standalone
        if free.size:
            # standalone free bodies are solved apart, below: keep their rows of qH as M
            blk = (m.jnt_dofadr[free][:, None] + np.arange(6)).ravel()
            qh = qh.at[blk].set(d.qM[blk])
        ld, dinv = inertia.factor(m, qh)
        qacc = inertia.solve(m, ld, dinv, qfrc)
        if free.size:
            qacc = _free_body_solve(m, d, qderiv, qfrc, qacc, free)
        return _advance(m, d, d.act_dot, qacc)


def _free_body_solve(m: Model, d: Data, qderiv, qfrc, qacc, free) -> jax.Array:
    """Standalone free bodies under implicitfast: solve (M - h (qDeriv - dbias/dqvel)) per 6x6 block,
    with the gyroscopic derivative that the symmetric global solve leaves out (mjd_freeMhat)."""
    h = m.opt.timestep
    adr = m.jnt_dofadr[free]
    idx = adr[:, None] + np.arange(6)  # (nfree, 6)
    # the bias force of a standalone body depends only on its own velocity, so one tangent per
    # rotational axis, shared by all free bodies, yields every block's rotational columns
    tangents = jnp.zeros((3, m.nv), d.qpos.dtype)
    for k in range(3):
        tangents = tangents.at[k, adr + 3 + k].set(1.0)
    cols = _bias_deriv(m, d, tangents)  # (3, nv): column k of each block
    dbias = jnp.zeros((len(free), 6, 6), d.qpos.dtype)
    dbias = dbias.at[:, :, 3:].set(jnp.transpose(cols[:, idx], (1, 2, 0)))
    a = d.qM[idx[:, :, None], idx[:, None, :]] - h * qderiv[idx[:, :, None], idx[:, None, :]] + h * dbias
    x = linalg.solve(a, qfrc[idx][..., None])[..., 0]
    return qacc.at[idx].set(x)


@tracing.inline_numpy
def step(m: Model, d: Data) -> Data:
    """Advance the simulation by one timestep: `forward`, then the model's integrator (mj_step)."""
    integ = m.opt.integrator
    if integ == INT_RK4:
        return _rk4(m, d, first_forward=True)  # the initial forward is RK4's first stage
    d = forward(m, d)
    if integ == INT_EULER:
        return euler(m, d)
    if integ in (INT_IMPLICIT, INT_IMPLICITFAST):
        return implicit(m, d)
    raise NotImplementedError(f"{m.source}: integrator {integ} is not supported")
