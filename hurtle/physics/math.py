"""Quaternions, rotations and 6D spatial algebra in MuJoCo's conventions.

Quaternions are (w, x, y, z). Spatial motion and force vectors are (angular(3), linear(3)).
A com-based inertia (`cinert`) has MuJoCo's 10-number layout (Ixx, Iyy, Izz, Ixy, Ixz, Iyz,
m*dx, m*dy, m*dz, m). All functions broadcast over leading axes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

MINVAL = 1e-15  # mjMINVAL: smallest value MuJoCo divides by
HIGHEST = jax.lax.Precision.HIGHEST


def matmul(a: jax.Array, b: jax.Array) -> jax.Array:
    """Matrix product at full precision (no TF32 on GPUs)."""
    return jnp.matmul(a, b, precision=HIGHEST)


def const_matmul(c: np.ndarray, x: jax.Array) -> jax.Array:
    """c @ x for a constant (model) matrix `c` (n, k) and `x` (k,) or (k, m), as one broadcast product
    summed over k. Under vmap a dot of a constant with batched `x` puts the batch inside the product:
    an operand relayout, the product, and a result laid out batch-inner, copied wherever it is stored
    (a `Data` field carried by a loop: at the loop's entry and exit). The summed product is
    batch-major. For the small 0/1 matrices of a model's tree; a sum of rank-1 terms instead made 15
    more kernels on half_cheetah."""
    c = np.asarray(c)
    if x.ndim == 1:
        return jnp.sum(c.astype(x.dtype) * x[None, :], axis=1)
    return jnp.sum(c.astype(x.dtype)[:, :, None] * x[None, :, :], axis=1)


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


TAKE_RUNS = 8
"""`take` concatenates up to this many slices before it gathers."""


def _index_runs(idx: np.ndarray) -> list[tuple[int, int, int]]:
    """`idx` as maximal runs (first index, length, step) of consecutive (step 1) or repeated (step 0)
    indices."""
    runs, i = [], 0
    while i < idx.size:
        j = i + 1
        if j < idx.size and idx[j] - idx[i] in (0, 1):
            step = int(idx[j] - idx[i])
            while j < idx.size and idx[j] - idx[j - 1] == step:
                j += 1
        else:
            step = 1
        runs.append((int(idx[i]), j - i, step))
        i = j
    return runs


def take(x: jax.Array, idx: np.ndarray) -> jax.Array:
    """x[idx] for static indices `idx` (1D) along the first axis: `x` itself for the identity, a slice
    for a run of consecutive indices, a broadcast for a repeated one, their concatenation for a few
    runs, a gather only otherwise. Under vmap a gather is a kernel of its own, and its result is laid
    out with the indexed axis before the batch (a layout copy wherever it is stored); slices and
    broadcasts fuse into their consumers."""
    idx = np.asarray(idx, int)
    if idx.size == 0:
        return x[idx]
    runs = _index_runs(idx)
    if len(runs) > TAKE_RUNS:
        return x[idx]
    if len(runs) == 1 and runs[0] == (0, x.shape[0], 1):
        return x
    parts = [x[i : i + n] if step else jnp.broadcast_to(x[i : i + 1], (n,) + x.shape[1:]) for i, n, step in runs]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts)


def first_active(active: jax.Array, k: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The positions of the first `k` True entries of `active` (1D) in order, each slot's validity
    (fewer than `k` True entries leave the last slots invalid, pointing at the last entry), and the
    running count of True entries (entry i, when True, sits in slot count[i] - 1; count[-1] is the
    total). Branch-free and scatter-free: slot p holds the entry of rank p + 1 in the running count,
    found by binary search (a few gathers; a (k, n) comparison costs ten times as much on the CPU)."""
    count = jnp.cumsum(active.astype(jnp.int32))
    idx = jnp.searchsorted(count, np.arange(1, k + 1, dtype=np.int32), method="scan").astype(jnp.int32)
    return jnp.minimum(idx, active.shape[0] - 1), np.arange(k, dtype=np.int32) < count[-1], count


def stack_select(xs: list, axis: int = -1) -> jax.Array:
    """jnp.stack(xs, axis) for arrays of one shape, written as selects on the new axis's index instead of
    a concatenation. For arrays a stage writes out whole (a `Data` field): XLA CPU emits a concatenation
    along a short minor axis as one loop nest per operand that LLVM unrolls and vectorises lane by lane,
    often the slowest kernels of a step to compile (benchmarks/NOTES.md §17). Not for intermediates that
    consumers slice: XLA simplifies a slice of a concatenation, not of a select."""
    xs = [jnp.asarray(x) for x in xs]
    dtype = jnp.result_type(*xs)
    shape = jnp.broadcast_shapes(*(x.shape for x in xs))
    axis = axis % (len(shape) + 1)
    full = shape[:axis] + (len(xs),) + shape[axis:]
    keep = tuple(d for d in range(len(full)) if d != axis)

    def spread(x):  # x broadcast along the new axis: one traced operation
        x = x.astype(dtype)
        return lax.broadcast_in_dim(x, full, keep[len(keep) - x.ndim :])

    which = np.arange(len(xs)).reshape((1,) * axis + (len(xs),) + (1,) * (len(full) - axis - 1))
    out = spread(xs[-1])
    for i in range(len(xs) - 2, -1, -1):
        out = lax.select(lax.broadcast_in_dim(which == i, full, tuple(range(len(full)))), spread(xs[i]), out)
    return out


def einsum(spec: str, *ops: jax.Array) -> jax.Array:
    return jnp.einsum(spec, *ops, precision=HIGHEST)


def sum_last(x: jax.Array, keepdims: bool = False) -> jax.Array:
    """Sum over the last axis; a short axis (up to 4) as a chain of adds, which XLA fuses with the
    arithmetic around it, where a reduction becomes a kernel of its own (compile time)."""
    x = jnp.asarray(x)
    n = x.shape[-1]
    if n == 0 or n > 4:
        return jnp.sum(x, axis=-1, keepdims=keepdims)
    out = _adds(_entry(x, i) for i in range(n))
    return out if keepdims else out.reshape(x.shape[:-1])


def _entry(x: jax.Array, i: int, axis: int = -1) -> jax.Array:
    """x's i-th entry along `axis`, the axis kept (size 1): one slice, where indexing traces a slice and
    a squeeze (trace and lowering time grow with the traced operations)."""
    return lax.slice_in_dim(x, i, i + 1, axis=axis % x.ndim)


def _adds(terms) -> jax.Array:
    """The sum of arrays of one rank, size-1 axes broadcast by `lax.add` (no explicit broadcasts, no 0 +)."""
    it = iter(terms)
    out = next(it)
    for t in it:
        out = lax.add(out, t)
    return out


def _same_rank(*xs: jax.Array) -> list:
    """The arrays with leading size-1 axes added up to the largest rank, for `lax`'s size-1 broadcasting."""
    r = max(x.ndim for x in xs)
    return [x.reshape((1,) * (r - x.ndim) + x.shape) if x.ndim < r else x for x in xs]


def dot(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dot product over the last axis."""
    return sum_last(a * b)


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


def _tensor(f, na: int, nb: int) -> np.ndarray:
    """t (na, nout, nb) with f(a, b) = sum_jk a_j t[j, :, k] b_k, for a function f bilinear in (a, b),
    from its values on unit vectors."""
    eye_a, eye_b = np.eye(na), np.eye(nb)
    return np.stack([np.stack([f(eye_a[j], eye_b[k]) for k in range(nb)], -1) for j in range(na)])


def _combine(a: jax.Array, t: np.ndarray) -> jax.Array:
    """sum_j a_j t[j] for constant matrices t[j] (those that are zero left out), as one broadcast sum.
    Each term is a slice of `a` (..., 1, 1) times the constant, broadcast by `lax.mul` itself: four
    traced operations a term, where jax.numpy's indexing and broadcasting take seven."""
    a = jnp.asarray(a)
    lead = a.shape[:-1]
    ar = a.reshape(lead + (1, a.shape[-1]))
    ones = (1,) * len(lead)
    t = np.asarray(t).astype(a.dtype)
    return _adds(lax.mul(_entry(ar, j), t[j].reshape(ones + t.shape[1:])) for j in range(t.shape[0]) if t[j].any())


def bilinear(a: jax.Array, b: jax.Array, t: np.ndarray) -> jax.Array:
    """sum_jk a_j t[j, :, k] b_k: the matrix sum_j a_j t[j], then its product with b, both as sums of
    broadcast terms. One expression for every output component instead of one per component stacked
    along the minor axis, which XLA CPU compiles slowly (NOTES.md §17, §19); terms whose constant is
    zero are left out."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    dtype = jnp.result_type(a, b)
    mat = _combine(a.astype(dtype), t)  # (..., n, m)
    b = b.astype(dtype)
    mat, br = _same_rank(mat, b.reshape(b.shape[:-1] + (1, b.shape[-1])))
    out = _adds(lax.mul(_entry(mat, k), _entry(br, k)) for k in range(t.shape[2]) if t[:, :, k].any())
    return out.reshape(out.shape[:-1])


_EYE3 = np.eye(3)
_CROSS = _tensor(np.cross, 3, 3)  # _CROSS[k] = skew(e_k)


def _np_quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


_QUAT_MUL = _tensor(_np_quat_mul, 4, 4)


def quat_mul(a: jax.Array, b: jax.Array) -> jax.Array:
    """Quaternion product a b (mju_mulQuat), as a bilinear form: no stack of components."""
    return bilinear(a, b, _QUAT_MUL)


def skew(v: jax.Array) -> jax.Array:
    """Matrix with skew(v) @ u = cross(v, u), as a sum of constant matrices scaled by v's components: one
    expression for all nine entries, no stack (XLA CPU compiles a stack along a short minor axis slowly:
    NOTES.md §17)."""
    return _combine(v, _CROSS)


def outer(a: jax.Array, b: jax.Array) -> jax.Array:
    return a[..., :, None] * b[..., None, :]


def mat_mul(a: jax.Array, b: jax.Array) -> jax.Array:
    """a @ b for small matrices as a sum of outer products of a's columns and b's rows (fused by XLA
    with the arithmetic around it, no stack and no library call)."""
    dtype = jnp.result_type(a, b)
    a, b = _same_rank(jnp.asarray(a, dtype), jnp.asarray(b, dtype))
    return _adds(lax.mul(_entry(a, k), _entry(b, k, -2)) for k in range(a.shape[-1]))


def quat_to_mat(q: jax.Array) -> jax.Array:
    """3x3 rotation matrix of a unit quaternion (shape (..., 3, 3)): (w^2 - u.u) I + 2 u u' + 2 w skew(u)
    (mju_quat2Mat's entries, written without a stack)."""
    w, u = q[..., 0, None, None], q[..., 1:]
    uu = sum_last(u * u)[..., None, None]
    return (w * w - uu) * _EYE3.astype(q.dtype) + 2.0 * (outer(u, u) + w * skew(u))


def axis_angle_to_mat(axis: jax.Array, angle: jax.Array) -> jax.Array:
    """Rotation matrix by `angle` about the unit `axis` (Rodrigues): I + sin K + (1 - cos) K^2, K =
    skew(axis), K^2 = a a' - (a.a) I."""
    k = skew(axis)
    k2 = outer(axis, axis) - sum_last(axis * axis)[..., None, None] * _EYE3.astype(axis.dtype)
    s, c = jnp.sin(angle)[..., None, None], jnp.cos(angle)[..., None, None]
    return _EYE3.astype(k.dtype) + s * k + (1.0 - c) * k2


_EYE4 = np.eye(4)


def _quat_of(w: jax.Array, v: jax.Array) -> jax.Array:
    """The quaternion (w, v) for w (..., 1) and v (..., 3), as a sum of constant unit quaternions scaled
    by the components (exactly the components: the other terms add zeros), without a concatenation."""
    e = _EYE4.astype(v.dtype)
    return w * e[0] + sum(v[..., i : i + 1] * e[i + 1] for i in range(3))


def axis_angle_to_quat(axis: jax.Array, angle: jax.Array) -> jax.Array:
    half = 0.5 * angle[..., None]
    return _quat_of(jnp.cos(half), jnp.sin(half) * axis)


def rotvec_to_quat(v: jax.Array) -> jax.Array:
    """Quaternion of the rotation vector `v` (axis times angle); smooth at zero."""
    angle = safe_norm(v, keepdims=True)
    small = angle < 1e-6
    a = jnp.where(small, 1.0, angle)
    # sin(angle/2)/angle, with its Taylor series near zero
    scale = jnp.where(small, 0.5 - angle * angle / 48.0, jnp.sin(0.5 * a) / a)
    return _quat_of(jnp.cos(0.5 * angle), scale * v)


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


def _np_cross_motion(v, u):
    return np.concatenate([np.cross(v[:3], u[:3]), np.cross(v[:3], u[3:]) + np.cross(v[3:], u[:3])])


def _np_cross_force(v, f):
    return np.concatenate([np.cross(v[:3], f[:3]) + np.cross(v[3:], f[3:]), np.cross(v[:3], f[3:])])


_I10 = np.array([[0, 3, 4], [3, 1, 5], [4, 5, 2]])


def _np_inert_mul(i, v):
    rot, h, m = i[_I10], i[6:9], i[9]
    return np.concatenate([rot @ v[:3] + np.cross(h, v[3:]), m * v[3:] - np.cross(h, v[:3])])


_CROSS_MOTION = _tensor(_np_cross_motion, 6, 6)
_CROSS_FORCE = _tensor(_np_cross_force, 6, 6)
_INERT_MUL = _tensor(_np_inert_mul, 10, 6)
_INERT_ROT_MUL = _tensor(lambda i, w: i[_I10] @ w, 10, 3)


def cross(a: jax.Array, b: jax.Array) -> jax.Array:
    return bilinear(a, b, _CROSS)


def cross_motion(v: jax.Array, u: jax.Array) -> jax.Array:
    """Spatial motion cross product v x u."""
    return bilinear(v, u, _CROSS_MOTION)


def cross_force(v: jax.Array, f: jax.Array) -> jax.Array:
    """Spatial force cross product v x* f."""
    return bilinear(v, f, _CROSS_FORCE)


def inert_mul(i: jax.Array, v: jax.Array) -> jax.Array:
    """Product of a 10-number com-based inertia with a spatial motion vector (mju_mulInertVec)."""
    return bilinear(i, v, _INERT_MUL)


def inert_rot_mul(i: jax.Array, w: jax.Array) -> jax.Array:
    """Rotational 3x3 part of a 10-number inertia times a 3-vector."""
    return bilinear(i, w, _INERT_ROT_MUL)


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


def matvec_t(m: jax.Array, v: jax.Array) -> jax.Array:
    """m' v (mju_mulMatTVec3): the transpose of a (..., 3, 3) matrix times a (..., 3) vector."""
    return jnp.sum(m * v[..., :, None], axis=-2)
