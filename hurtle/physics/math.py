"""Quaternions, rotations and 6D spatial algebra in MuJoCo's conventions.

Quaternions are (w, x, y, z). Spatial motion and force vectors are (angular(3), linear(3)).
A com-based inertia (`cinert`) has MuJoCo's 10-number layout (Ixx, Iyy, Izz, Ixy, Ixz, Iyz,
m*dx, m*dy, m*dz, m). All functions broadcast over leading axes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

MINVAL = 1e-15  # mjMINVAL: smallest value MuJoCo divides by
HIGHEST = jax.lax.Precision.HIGHEST


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """Matrix product at full precision (no TF32 on GPUs)."""
    return jnp.matmul(a, b, precision=HIGHEST)


def diag_embed(v: jax.Array) -> jax.Array:
    """The square matrix with `v` (..., n) on its diagonal: a product with a constant identity, which
    XLA fuses into its consumer (jnp.diag builds the mask from iotas in a kernel of its own)."""
    return v[..., None] * np.eye(v.shape[-1], dtype=v.dtype)


def symmetric_from_lower(low: jax.Array) -> jax.Array:
    """The symmetric matrix whose lower triangle (diagonal included) is `low`'s; `low` is zero above its
    diagonal."""
    return low + jnp.where(np.eye(low.shape[-1], dtype=bool), 0.0, jnp.swapaxes(low, -1, -2))


def diagonal(a: jax.Array) -> jax.Array:
    """The diagonal of square matrices (..., n, n): a strided slice of the flattened matrix, which fuses
    into its consumer (jnp.diagonal is a gather)."""
    n = a.shape[-1]
    return a.reshape(a.shape[:-2] + (n * n,))[..., :: n + 1]


def assemble(n: int, pieces: list, fill: jax.Array) -> jax.Array:
    """An (n, ...) array from (rows, values) pieces (rows of any shape, values with those leading
    axes); rows no piece covers hold `fill`. A concatenation, plus one gather with static indices
    when the pieces are not already in row order."""
    if not pieces:
        return jnp.broadcast_to(fill, (n,) + fill.shape)
    rows = np.concatenate([np.ravel(r) for r, _ in pieces])
    vals = [jnp.asarray(v, fill.dtype).reshape((np.size(r),) + fill.shape) for r, v in pieces]
    order = np.full(n, rows.size)
    order[rows] = np.arange(rows.size)
    if rows.size == n and np.array_equal(order, np.arange(n)):
        return jnp.concatenate(vals)
    return jnp.concatenate(vals + [fill[None]])[order]


def take(x: jax.Array, idx: np.ndarray) -> jax.Array:
    """x[idx] for static indices `idx` (1D) along the first axis: `x` itself for the identity, a slice
    for a run of consecutive indices, a gather (a kernel of its own under vmap) only otherwise."""
    idx = np.asarray(idx, int)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return x if idx.size == x.shape[0] else x[idx[0] : idx[0] + idx.size]
    return x[idx]


def stack_select(xs: list, axis: int = -1) -> jax.Array:
    """jnp.stack(xs, axis) for arrays of one shape, written as selects on the new axis's index instead of
    a concatenation. For arrays a stage writes out whole (a `Data` field): XLA CPU emits a concatenation
    along a short minor axis as one loop nest per operand that LLVM unrolls and vectorises lane by lane,
    often the slowest kernels of a step to compile (benchmarks/NOTES.md §17). Not for intermediates that
    consumers slice: XLA simplifies a slice of a concatenation, not of a select."""
    x0 = jnp.asarray(xs[0])
    axis = axis % (x0.ndim + 1)
    shape = [1] * (x0.ndim + 1)
    shape[axis] = len(xs)
    idx = np.arange(len(xs)).reshape(shape)
    out = jnp.expand_dims(jnp.asarray(xs[-1]), axis)
    for i in range(len(xs) - 2, -1, -1):
        out = jnp.where(idx == i, jnp.expand_dims(jnp.asarray(xs[i]), axis), out)
    return out


def bilinear(a: jax.Array, b: jax.Array, t: np.ndarray, form: str | None = None) -> jax.Array:
    """out[..., k] = sum_ij t[i, j, k] a[..., i] b[..., j] for a constant tensor `t` (the quaternion and
    spatial products below).

    `form` "stack" (the default): each component of the result written out and stacked. "dot": `b`
    times the constant matrix, one matrix product (on the CPU a library call: nothing for LLVM to
    compile), then the sum over `a`'s components of each times its slice of that product, with nothing
    concatenated along the short minor axis. The dot form compiled faster and ran slower in the
    benchmark's workers (benchmarks/NOTES.md §18), so nothing uses it by default."""
    na, nb, nk = t.shape
    if form in (None, "stack"):
        cols = []
        for k in range(nk):
            acc = None
            for i, j in zip(*np.nonzero(t[:, :, k])):
                c = float(t[i, j, k])
                term = a[..., i] * b[..., j]
                if acc is None:
                    acc = term if c == 1 else -term if c == -1 else c * term
                else:
                    acc = acc + term if c == 1 else acc - term if c == -1 else acc + c * term
            cols.append(jnp.zeros_like(a[..., 0] * b[..., 0]) if acc is None else acc)
        return jnp.stack(cols, -1)
    bt = jnp.matmul(b, t.transpose(1, 0, 2).reshape(nb, na * nk).astype(b.dtype), precision=HIGHEST)
    bt = bt.reshape(bt.shape[:-1] + (na, nk))
    out = None
    for i in range(na):
        if t[i].any():
            term = a[..., i : i + 1] * bt[..., i, :]
            out = term if out is None else out + term
    return out


def _tensor(f, na: int, nb: int) -> np.ndarray:
    """The tensor t of a bilinear map f(a, b) -> list of components: t[i, j] = f(e_i, e_j)."""
    eye_a, eye_b = np.eye(na), np.eye(nb)
    return np.array([[f(eye_a[i], eye_b[j]) for j in range(nb)] for i in range(na)])


_QUAT_MUL = _tensor(
    lambda a, b: [
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ],
    4,
    4,
)
# R(q) = f(q, q), row-major (each product of two components appears once)
_QUAT_TO_MAT = _tensor(
    lambda a, b: [
        a[0] * b[0] + a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        2 * (a[1] * b[2] - a[0] * b[3]),
        2 * (a[1] * b[3] + a[0] * b[2]),
        2 * (a[1] * b[2] + a[0] * b[3]),
        a[0] * b[0] - a[1] * b[1] + a[2] * b[2] - a[3] * b[3],
        2 * (a[2] * b[3] - a[0] * b[1]),
        2 * (a[1] * b[3] - a[0] * b[2]),
        2 * (a[2] * b[3] + a[0] * b[1]),
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] + a[3] * b[3],
    ],
    4,
    4,
)


def einsum(spec: str, *ops: jax.Array) -> jax.Array:
    return jnp.einsum(spec, *ops, precision=HIGHEST)


def sum_last(x: jax.Array, keepdims: bool = False) -> jax.Array:
    """Sum over the last axis; a short axis (up to 4) as a chain of adds, which XLA fuses with the
    arithmetic around it, where a reduction becomes a kernel of its own (compile time)."""
    n = x.shape[-1]
    if n == 0 or n > 4:
        return jnp.sum(x, axis=-1, keepdims=keepdims)
    out = x[..., 0]
    for i in range(1, n):
        out = out + x[..., i]
    return out[..., None] if keepdims else out


def dot(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dot product over the last axis."""
    return sum_last(a * b)


def cross(a: jax.Array, b: jax.Array) -> jax.Array:
    """a x b, its components stacked by selects (math.stack_select): it is mostly consumed whole by
    arithmetic, and a concatenation along the minor axis compiles slowly (benchmarks/NOTES.md §18)."""
    return stack_select(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ]
    )


def safe_norm(x: jax.Array, axis: int = -1, keepdims: bool = False) -> jax.Array:
    """Euclidean norm whose gradient is finite (zero) at the origin."""
    if axis in (-1, x.ndim - 1):
        sq = sum_last(x * x, keepdims=keepdims)
    else:
        sq = jnp.sum(x * x, axis=axis, keepdims=keepdims)
    pos = sq > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, 1.0)), 0.0)


def normalize(x: jax.Array, axis: int = -1) -> jax.Array:
    n = safe_norm(x, axis=axis, keepdims=True)
    return x / jnp.maximum(n, MINVAL)


def quat_normalize(q: jax.Array) -> jax.Array:
    """Unit quaternion; a (near-)zero quaternion becomes the identity, as mju_normalize4."""
    n = safe_norm(q, keepdims=True)
    unit = jnp.zeros_like(q).at[..., 0].set(1.0)
    return jnp.where(n < MINVAL, unit, q / jnp.maximum(n, MINVAL))


def quat_mul(a: jax.Array, b: jax.Array) -> jax.Array:
    return bilinear(a, b, _QUAT_MUL)


def quat_conj(q: jax.Array) -> jax.Array:
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_rot(q: jax.Array, v: jax.Array) -> jax.Array:
    """Rotate vector `v` by unit quaternion `q`."""
    w, u = q[..., :1], q[..., 1:]
    # v (w^2 - u.u) + 2 u (u.v) + 2 w (u x v): one cross product, not one nested in another (the
    # nested form made XLA emit kernels that LLVM expanded many times over: compile time)
    uu = sum_last(u * u, keepdims=True)
    uv = sum_last(u * v, keepdims=True)
    return v * (w * w - uu) + 2.0 * (u * uv + w * cross(u, v))


def quat_to_mat(q: jax.Array) -> jax.Array:
    """3x3 rotation matrix of a unit quaternion (shape (..., 3, 3))."""
    return bilinear(q, q, _QUAT_TO_MAT).reshape(q.shape[:-1] + (3, 3))


def axis_angle_to_quat(axis: jax.Array, angle: jax.Array) -> jax.Array:
    half = 0.5 * angle[..., None]
    return jnp.concatenate([jnp.cos(half), jnp.sin(half) * axis], axis=-1)


def rotvec_to_quat(v: jax.Array) -> jax.Array:
    """Quaternion of the rotation vector `v` (axis times angle); smooth at zero."""
    angle = safe_norm(v, keepdims=True)
    small = angle < 1e-6
    a = jnp.where(small, 1.0, angle)
    # sin(angle/2)/angle, with its Taylor series near zero
    scale = jnp.where(small, 0.5 - angle * angle / 48.0, jnp.sin(0.5 * a) / a)
    return jnp.concatenate([jnp.cos(0.5 * angle), scale * v], axis=-1)


def quat_integrate(q: jax.Array, omega: jax.Array, dt: jax.Array) -> jax.Array:
    """Rotate `q` by local angular velocity `omega` over `dt` (mju_quatIntegrate)."""
    return quat_normalize(quat_mul(q, rotvec_to_quat(omega * dt)))


def quat_to_rotvec(q: jax.Array) -> jax.Array:
    """Rotation vector of a quaternion, angle wrapped to (-pi, pi] (mju_quat2Vel with dt=1)."""
    v = q[..., 1:]
    s = safe_norm(v, keepdims=True)
    angle = 2.0 * jnp.arctan2(s, q[..., :1])
    angle = jnp.where(angle > jnp.pi, angle - 2.0 * jnp.pi, angle)
    small = s < MINVAL
    # angle/s -> 2/w as s -> 0
    w = q[..., :1]
    ratio = jnp.where(small, 2.0 / jnp.where(jnp.abs(w) > MINVAL, w, 1.0), angle / jnp.where(small, 1.0, s))
    return jnp.where(small & (jnp.abs(w) <= MINVAL), 0.0, ratio * v)


def sub_quat(qa: jax.Array, qb: jax.Array) -> jax.Array:
    """3D rotation `r` with qb * quat(r) = qa (mju_subQuat)."""
    return quat_to_rotvec(quat_mul(quat_conj(qb), qa))


def skew(v: jax.Array) -> jax.Array:
    """Matrix with skew(v) @ u = cross(v, u)."""
    z = jnp.zeros_like(v[..., 0])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return jnp.stack([jnp.stack([z, -w, y], -1), jnp.stack([w, z, -x], -1), jnp.stack([-y, x, z], -1)], -2)


def cross_motion(v: jax.Array, u: jax.Array) -> jax.Array:
    """Spatial motion cross product v x u."""
    return bilinear(v, u, _CROSS_MOTION)


def cross_force(v: jax.Array, f: jax.Array) -> jax.Array:
    """Spatial force cross product v x* f."""
    return bilinear(v, f, _CROSS_FORCE)


def inert_mul(i: jax.Array, v: jax.Array) -> jax.Array:
    """Product of a 10-number com-based inertia with a spatial motion vector (mju_mulInertVec)."""
    return bilinear(v, i, _INERT_MUL)


def _inert_rot(i: np.ndarray) -> np.ndarray:
    return np.array([[i[0], i[3], i[4]], [i[3], i[1], i[5]], [i[4], i[5], i[2]]])


# the spatial products' tensors, from their definitions
_CROSS_MOTION = _tensor(
    lambda v, u: np.concatenate([np.cross(v[:3], u[:3]), np.cross(v[:3], u[3:]) + np.cross(v[3:], u[:3])]), 6, 6
)
_CROSS_FORCE = _tensor(
    lambda v, f: np.concatenate([np.cross(v[:3], f[:3]) + np.cross(v[3:], f[3:]), np.cross(v[:3], f[3:])]), 6, 6
)
_INERT_MUL = _tensor(
    lambda v, i: np.concatenate(
        [_inert_rot(i) @ v[:3] + np.cross(i[6:9], v[3:]), i[9] * v[3:] - np.cross(i[6:9], v[:3])]
    ),
    6,
    10,
)


def inert_to_mat(i: jax.Array) -> jax.Array:
    """6x6 spatial inertia matrix of a 10-number com-based inertia."""
    rot = jnp.stack(
        [
            jnp.stack([i[..., 0], i[..., 3], i[..., 4]], -1),
            jnp.stack([i[..., 3], i[..., 1], i[..., 5]], -1),
            jnp.stack([i[..., 4], i[..., 5], i[..., 2]], -1),
        ],
        -2,
    )
    h = skew(i[..., 6:9])
    eye = jnp.eye(3, dtype=i.dtype) * i[..., 9, None, None]
    top = jnp.concatenate([rot, h], -1)
    bottom = jnp.concatenate([-h, eye], -1)
    return jnp.concatenate([top, bottom], -2)


def transform_motion(vec: jax.Array, newpos: jax.Array, oldpos: jax.Array, rot: jax.Array) -> jax.Array:
    """Move a spatial motion vector to origin `newpos` and express it in frame `rot`
    (mju_transformSpatial with flg_force=0 and rotnew2old=rot)."""
    lin = vec[..., 3:] - cross(newpos - oldpos, vec[..., :3])
    rt = jnp.swapaxes(rot, -1, -2)
    return jnp.concatenate([matvec(rt, vec[..., :3]), matvec(rt, lin)], -1)


def matvec(m: jax.Array, v: jax.Array) -> jax.Array:
    return sum_last(m * v[..., None, :])
