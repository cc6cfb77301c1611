"""Box primitives of the narrow phase: capsule-box and box-box (MuJoCo's mjc_CapsuleBox, mjc_BoxBox).

Both follow MuJoCo's routines decision by decision, branch-free: every candidate feature is evaluated
and the one MuJoCo's loops would keep is selected with `jnp.where`. Sums of products are written in
MuJoCo's order of operations, so that near-ties between features round as in MuJoCo; XLA may still fuse
a multiply-add, so an exact geometric tie (e.g. a sphere centre equidistant from two box faces) can be
decided the other way.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics.collision.primitives import sphere_box
from hurtle.physics.math import MINVAL
from hurtle.physics.types import BOX, CAPSULE

# --- 3-vector helpers over a leading pair axis, in MuJoCo's summation order ---


def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _mat_vec(mat, v):
    """mat @ v (mji_mulMatVec3)."""
    return mat[..., :, 0] * v[..., 0:1] + mat[..., :, 1] * v[..., 1:2] + mat[..., :, 2] * v[..., 2:3]


def _mat_t_vec(mat, v):
    """mat.T @ v (mji_mulMatTVec3)."""
    return mat[..., 0, :] * v[..., 0:1] + mat[..., 1, :] * v[..., 1:2] + mat[..., 2, :] * v[..., 2:3]


def _take(x, idx):
    """x[p, idx[p]] for every pair p: x (k, m), idx (k,) -> (k,)."""
    return jnp.take_along_axis(x, idx[:, None], axis=1)[:, 0]


def _safe_div(num, den):
    """num / den where den != 0, else +inf (MuJoCo's `e < best` tests then never pick it)."""
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), jnp.inf)


# --- capsule-box ---


# the 12 box edges in mjraw_CapsuleBox's loop order: along axis j, from corner i (bit j clear)
_CB_EDGES = [(j, i) for j in range(3) for i in range(8) if not i & (1 << j)]
_CB_AXIS = np.array([j for j, _ in _CB_EDGES])
_CB_START = np.array([[0 if c == j else (i >> c & 1) * 2 - 1 for c in range(3)] for j, i in _CB_EDGES], float)


def _segment_edges(pos, ha, hl, size):
    """Closest points between the segment pos + s * ha (s in [-1, 1]) and each box edge (k, 12).

    Returns (dist^2, segment parameter, edge parameter in [-1, 1], clamping code s1 * 3 + s2, usable).
    """
    e = np.arange(len(_CB_EDGES))
    start = jnp.asarray(_CB_START, pos.dtype) * size[:, None, :]
    dif = start - pos[:, None, :]
    sj, hj = size[:, _CB_AXIS], ha[:, _CB_AXIS]
    ma, mb, mc = sj * sj, -sj * hj, (hl * hl)[:, None]
    u, v = -sj * dif[:, e, _CB_AXIS], _dot(ha[:, None, :], dif)
    det = ma * mc - mb * mb
    ok = jnp.abs(det) >= MINVAL
    idet = 1 / jnp.where(ok, det, 1.0)
    x1, x2 = (mc * u - mb * v) * idet, (ma * v - mb * u) * idet
    # clamp the edge parameter and re-solve the segment's, then the reverse (MuJoCo's s1, s2 bookkeeping)
    s1 = jnp.where(x1 > 1, 2, jnp.where(x1 < -1, 0, 1))
    x2 = jnp.where(x1 > 1, (v - mb) * (1 / mc), jnp.where(x1 < -1, (v + mb) * (1 / mc), x2))
    x1 = jnp.clip(x1, -1, 1)
    s2 = jnp.where(x2 > 1, 2, jnp.where(x2 < -1, 0, 1))
    re = jnp.where(x2 > 1, (u - mb) * (1 / ma), (u + mb) * (1 / ma))
    s1 = jnp.where(s2 != 1, jnp.where(re > 1, 2, jnp.where(re < -1, 0, s1)), s1)  # kept when re is inside
    x1 = jnp.where(s2 != 1, jnp.clip(re, -1, 1), x1)
    x2 = jnp.clip(x2, -1, 1)
    onehot = jnp.asarray(np.eye(3)[_CB_AXIS], pos.dtype)
    dif = dif - ha[:, None, :] * x2[..., None] + onehot * (sj * x1)[..., None]
    return _dot(dif, dif), x2, x1, s1 * 3 + s2, ok


def _segment_ends(pos, ha, size):
    """Each segment end (s = -1, 1) against the box: (dist^2 to the box, clamped axis or -1, usable)."""
    ends = pos[:, None, :] + ha[:, None, :] * jnp.asarray([[-1.0], [1.0]], pos.dtype)
    out = (ends < -size[:, None]) | (ends > size[:, None])
    last = jnp.where(jnp.any(out, -1), 2 - jnp.argmax(out[..., ::-1], axis=-1), -1).astype(jnp.int32)
    dif = jnp.clip(ends, -size[:, None], size[:, None]) - ends
    return _dot(dif, dif), last, jnp.sum(out, -1, dtype=jnp.int32) <= 1


def _capsule_box_closest(pos, ha, hl, size, bestdist):
    """Closest feature between the capsule segment and the box (box frame), as mjraw_CapsuleBox's loops.

    Returns (segpos, boxpos, cltype, clface, clcorner, cledge): cltype -3/-1 a segment end nearest a face
    (clface: the clamped axis or -1 inside), 0..8 an edge (clamping codes), -4 nothing found.
    """
    izero = jnp.zeros(pos.shape[0], jnp.int32)
    segpos, boxpos = jnp.zeros_like(hl), jnp.zeros_like(hl)
    cltype, clface, clcorner, cledge = izero - 4, izero - 1, izero, izero
    dend, last, okend = _segment_ends(pos, ha, size)
    for n, i in enumerate((-1, 1)):
        upd = okend[:, n] & (dend[:, n] < bestdist)
        bestdist = jnp.where(upd, dend[:, n], bestdist)
        segpos = jnp.where(upd, float(i), segpos)
        cltype = jnp.where(upd, -2 + i, cltype)
        clface = jnp.where(upd, last[:, n], clface)
    d, x2, x1, code, ok = _segment_edges(pos, ha, hl, size)
    for e, (j, i) in enumerate(_CB_EDGES):  # an edge must beat the best so far by MINVAL
        upd = ok[:, e] & (d[:, e] < bestdist - MINVAL)
        bestdist = jnp.where(upd, d[:, e], bestdist)
        segpos = jnp.where(upd, x2[:, e], segpos)
        boxpos = jnp.where(upd, x1[:, e], boxpos)
        clcorner = jnp.where(upd, i + (1 << j) * (code[:, e] // 6), clcorner)
        cledge = jnp.where(upd, j, cledge)
        cltype = jnp.where(upd, code[:, e], cltype)
    return segpos, boxpos, cltype, clface, clcorner, cledge


def _second_at_corner(axis, ha, size, segpos, axisdir, clcorner):
    """Second point when a box corner is closest: along the edge or the face the capsule lies on."""
    c1 = axisdir ^ clcorner
    skip = (c1 == 0) | (c1 == 7)
    neg = (c1 == 3) | (c1 == 5) | (c1 == 6)
    mul = jnp.where(neg, -1.0, 1.0)
    de = jnp.where(neg, 1 + segpos, 1 - segpos)
    dp = jnp.where(neg, 1 - segpos, 1 + segpos)
    c1 = jnp.where(neg, 7 - c1, c1)
    ax = jnp.where(c1 == 1, 0, jnp.where(c1 == 2, 1, 2))
    ax1, ax2 = (ax + 1) % 3, (ax + 2) % 3
    reach = lambda a: _safe_div(2 * _take(size, a), jnp.abs(_take(ha, a)))  # noqa: E731
    along_edge = jnp.minimum(de, reach(ax)) * mul
    along_face = jnp.minimum(jnp.minimum(dp, reach(ax1)), reach(ax2)) * -mul
    return jnp.where(_take(axis, ax) ** 2 > 0.5, along_edge, along_face), skip


def _second_at_edge(axis, ha, size, segpos, boxpos, axisdir, clcorner, cledge):
    """Second point when the middle of a box edge is closest (crossing configurations only)."""
    c1 = (axisdir ^ clcorner) & (7 - (1 << cledge))
    skip = (c1 != 1) & (c1 != 2) & (c1 != 4)
    ax = cledge
    ax1, ax2 = (ax + 1) % 3, (ax + 2) % 3
    ax1 = jnp.where(jnp.abs(_take(axis, ax1)) > jnp.abs(_take(axis, ax2)), ax2, ax1)
    ax2 = 3 - ax - ax1
    bit = ((c1 >> ax2) & 1) == 1
    mul = jnp.where(bit, 1.0, -1.0)
    second = jnp.where(bit, 1 - segpos, 1 + segpos)
    second = jnp.minimum(second, _safe_div(2 * _take(size, ax2), jnp.abs(_take(ha, ax2))))
    e2 = jnp.where(((axisdir >> ax) & 1 == 1) == bit, 1 - boxpos, 1 + boxpos)
    second = jnp.minimum(second, _safe_div(_take(size, ax) * e2, jnp.abs(_take(ha, ax))))
    return second * mul, skip


def _second_at_face(pos, ha, size, cltype, clface):
    """Second point when a segment end is closest to a face: the farthest point still above the box."""
    mul = jnp.where(cltype == -3, 1.0, -1.0)
    other = pos - ha * mul[:, None]
    second = jnp.full_like(mul, 2.0)
    for i in range(3):
        for bound in (size[:, i], -size[:, i]):
            e1 = _safe_div(bound - other[:, i], ha[:, i]) * mul
            upd = (clface != i) & (e1 > 0) & (e1 < second)
            second = jnp.where(upd, e1, second)
    return second * mul, clface == -1


def capsule_box(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    """Capsule (geom1) against box (geom2): up to two sphere-box contacts along the segment."""
    pos = _mat_t_vec(mat2, pos1 - pos2)  # capsule centre and axis in the box frame
    axis = _mat_t_vec(mat2, mat1[..., :, 2])
    hl = size1[:, 1]
    ha = axis * hl[:, None]
    axisdir = jnp.sum(jnp.where(ha > 0, jnp.array([1, 2, 4], jnp.int32), 0), axis=-1, dtype=jnp.int32)
    bestdist = margin + 2 * (size1[:, 0] + hl + size2[:, 0] + size2[:, 1] + size2[:, 2])
    segpos, boxpos, cltype, clface, clcorner, cledge = _capsule_box_closest(pos, ha, hl, size2, bestdist)
    at_corner, skip_c = _second_at_corner(axis, ha, size2, segpos, axisdir, clcorner)
    at_edge, skip_e = _second_at_edge(axis, ha, size2, segpos, boxpos, axisdir, clcorner, cledge)
    at_face, skip_f = _second_at_face(pos, ha, size2, cltype, clface)
    face, mid_edge = cltype < 0, (cltype // 3) == 1
    second = jnp.where(face, at_face, jnp.where(mid_edge, at_edge, at_corner))
    skip = jnp.where(face, skip_f, jnp.where(mid_edge, skip_e, skip_c))
    second = jnp.where(skip, -4.0, second)
    found = cltype != -4

    eye = jnp.broadcast_to(jnp.eye(3, dtype=pos.dtype), mat2.shape)

    def sphere(s):
        # sphere-box in the box frame, the centre taken through the world frame and back as MuJoCo does
        centre = _mat_t_vec(mat2, (_mat_vec(mat2, pos + ha * s[:, None]) + pos2) - pos2)
        d, p, n, t, ok = sphere_box(g, centre, eye, size1, jnp.zeros_like(pos), eye, size2, margin)
        return d, _mat_vec(mat2[:, None], p) + pos2[:, None], _mat_vec(mat2[:, None], n), t, ok

    d1, p1, n1, t1, ok1 = sphere(segpos)
    d2, p2, n2, t2, ok2 = sphere(second + segpos)
    cat = lambda a, b: jnp.concatenate([a, b], 1)  # noqa: E731
    ok = cat(ok1 & found[:, None], ok2 & (found & (second > -3))[:, None])
    return cat(d1, d2), cat(p1, p2), cat(n1, n2), cat(t1, t2), ok


# --- box-box: separating axes, then an edge-edge contact or a clipped face polygon ---

_EI, _EJ = np.divmod(np.arange(9), 3)  # edge-cross axes 6 + 3i + j: box1 axis i x box2 axis j
_MAXVERT = 12  # polygon capacity while clipping (MuJoCo's mjBOXBOX_MAXVERT)


def _eps(dtype):
    """(SEPEPS, PAREPS, SGNEPS, DUPEPS) of MuJoCo's box-box, the single-precision set for float32."""
    if dtype == jnp.float32:
        return 1e-6, 1e-7, 1e-5, 1e-10
    return 1e-13, 1e-16, 1e-9, 1e-14


def _onehot(c, dtype):
    return jax.nn.one_hot(c, 3, dtype=dtype)


def _edge_axis(rot, i, j):
    """Unit e_i x (box2 axis j) in the box1 frame, for each pair's (i, j) (k,)."""
    r = jnp.arange(rot.shape[0])
    i1, i2 = (i + 1) % 3, (i + 2) % 3
    axis = _onehot(i1, rot.dtype) * -rot[r, i2, j][:, None] + _onehot(i2, rot.dtype) * rot[r, i1, j][:, None]
    return _unit(axis)


def _unit(v):
    """mju_normalize3: v / |v|, or (1, 0, 0) below MINVAL."""
    n2 = _dot(v, v)
    small = n2 < MINVAL * MINVAL  # and no sqrt at zero: gradients stay finite for aligned boxes
    inv = 1 / jnp.sqrt(jnp.where(small, 1.0, n2))
    return jnp.where(small[:, None], jnp.array([1.0, 0, 0], v.dtype), v * inv[:, None])


def _take_col(mat, c):
    """mat[p, :, c[p]] for every pair p."""
    return jnp.take_along_axis(mat, c[:, None, None], 2)[:, :, 0]


def _edge_separations(rot, pos21, size1, size2, pareps):
    """Separation along each edge-cross axis (k, 9) and whether the axis is usable (not near-parallel)."""
    i1, i2, j1, j2 = (_EI + 1) % 3, (_EI + 2) % 3, (_EJ + 1) % 3, (_EJ + 2) % 3
    ax1, ax2 = -rot[:, i2, _EJ], rot[:, i1, _EJ]
    norm2 = ax1 * ax1 + ax2 * ax2
    usable = norm2 >= pareps  # nearly parallel edges: the face axes cover them
    inv = 1 / jnp.sqrt(jnp.where(usable, norm2, 1.0))
    ax1, ax2 = ax1 * inv, ax2 * inv
    rad1 = size1[:, i1] * jnp.abs(ax1) + size1[:, i2] * jnp.abs(ax2)
    a21 = ax1 * rot[:, i1, j1] + ax2 * rot[:, i2, j1]
    a22 = ax1 * rot[:, i1, j2] + ax2 * rot[:, i2, j2]
    rad2 = size2[:, j1] * jnp.abs(a21) + size2[:, j2] * jnp.abs(a22)
    return jnp.abs(ax1 * pos21[:, i1] + ax2 * pos21[:, i2]) - rad1 - rad2, usable


def _separation(rot, pos21, pos12, size1, size2, septol, pareps):
    """Stage 1 (separating axes): (separated, code, code_face), code 0..2 / 3..5 a face of box1 / box2,
    6 + 3i + j the edge pair (i, j), chosen as MuJoCo's loops choose them."""
    rabs = jnp.abs(rot)
    r2 = rabs[:, :, 0] * size2[:, None, 0] + rabs[:, :, 1] * size2[:, None, 1] + rabs[:, :, 2] * size2[:, None, 2]
    r1 = rabs[:, 0, :] * size1[:, None, 0] + rabs[:, 1, :] * size1[:, None, 1] + rabs[:, 2, :] * size1[:, None, 2]
    faces = jnp.concatenate([jnp.abs(pos21) - size1 - r2, jnp.abs(pos12) - size2 - r1], 1)
    edges, usable = _edge_separations(rot, pos21, size1, size2, pareps)
    separated = jnp.any(faces > septol[:, None], 1) | jnp.any(usable & (edges > septol[:, None]), 1)
    code_face = jnp.argmax(faces, 1).astype(jnp.int32)
    sep_face = jnp.max(faces, 1)
    best, code = sep_face, code_face
    for e in range(9):  # an edge must beat the faces by a small bias: on ties the face's manifold is better
        sep = edges[:, e]
        upd = usable[:, e] & (sep - 1e-6 * jnp.abs(sep) > best) & (sep > sep_face)
        best = jnp.where(upd, sep, best)
        code = jnp.where(upd, 6 + e, code)
    # a winning edge nearly parallel to the best face, and not 5% deeper, gives way to the face
    e = jnp.clip(code - 6, 0, 8)
    axis = _edge_axis(rot, e // 3, e % 3)
    f = code_face % 3
    face_dir = jnp.where((code_face < 3)[:, None], _onehot(f, rot.dtype), _take_col(rot, f))
    face_dot = jnp.abs(_dot(axis, face_dir))
    swap = (code >= 6) & (face_dot > 0.99) & (best < sep_face + 0.05 * jnp.abs(sep_face) + MINVAL)
    return separated, jnp.where(swap, code_face, code), code_face


def _corner(axis, c, size, sign):
    """Component c of the box corner that supports sign * axis, as a 3-vector (zero elsewhere)."""
    s = _take(size, c)
    return _onehot(c, axis.dtype) * jnp.where(_take(axis, c) >= 0, sign * s, -sign * s)[:, None]


def _edge_contact(rot, pos21, size1, size2, i, j, sgneps):
    """Stage 2a for the edge pair (i, j) (k,): witness points of the two supporting edges (box1 frame).

    Returns (dist, midpoint, axis). An axis component below SGNEPS makes the supporting edge
    ambiguous; both choices are tried and the closest witness pair kept, as MuJoCo does.
    """
    dt = rot.dtype
    i1, i2, j1, j2 = (i + 1) % 3, (i + 2) % 3, (j + 1) % 3, (j + 2) % 3
    axis = _edge_axis(rot, i, j)
    axis = jnp.where((_dot(axis, pos21) < 0)[:, None], -axis, axis)
    a2 = _mat_t_vec(rot, axis)
    small = lambda v, c: jnp.abs(_take(v, c)) < sgneps  # noqa: E731
    amb1 = jnp.where(small(axis, i1), i1, jnp.where(small(axis, i2), i2, -1))
    amb2 = jnp.where(small(a2, j1), j1, jnp.where(small(a2, j2), j2, -1))
    # supporting corners: box1's along +axis, box2's along -axis; then each ambiguous sign flipped
    c1 = _corner(axis, i1, size1, 1.0) + _corner(axis, i2, size1, 1.0)
    cc = _corner(a2, j1, size2, -1.0) + _corner(a2, j2, size2, -1.0)
    v1, v2 = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])  # MuJoCo's variant order
    c1 = jnp.where((_onehot(amb1, dt)[:, None] > 0) & (v1[None, :, None] == 1), -c1[:, None], c1[:, None])
    cc = jnp.where((_onehot(amb2, dt)[:, None] > 0) & (v2[None, :, None] == 1), -cc[:, None], cc[:, None])
    c2 = _mat_vec(rot[:, None], cc) + pos21[:, None]
    d2 = _take_col(rot, j)[:, None]
    b = _take(d2[:, 0], i)[:, None]
    denom = 1 - b * b
    e = c2 - c1
    d1e, d2e = jnp.take_along_axis(e, jnp.broadcast_to(i[:, None, None], (len(i), 4, 1)), 2)[..., 0], _dot(d2, e)
    par = denom < MINVAL
    s = jnp.where(par, 0.0, (d1e - b * d2e) / jnp.where(par, 1.0, denom))
    lim1, lim2 = _take(size1, i)[:, None], _take(size2, j)[:, None]
    s = jnp.clip(s, -lim1, lim1)
    t = jnp.clip(b * s - d2e, -lim2, lim2)
    s = jnp.clip(d1e + b * t, -lim1, lim1)
    w1 = c1 + _onehot(i, dt)[:, None] * s[..., None]
    w2 = c2 + d2 * t[..., None]
    gap = w2 - w1
    allowed = ((v1 == 0) | (amb1[:, None] >= 0)) & ((v2 == 0) | (amb2[:, None] >= 0))
    best = jnp.argmin(jnp.where(allowed, _dot(gap, gap), jnp.inf), 1)[:, None, None]
    w1 = jnp.take_along_axis(w1, best, 1)[:, 0]
    w2 = jnp.take_along_axis(w2, best, 1)[:, 0]
    return _dot(w2 - w1, axis), 0.5 * (w1 + w2), axis


def _compact(x, keep, n):
    """The first n kept entries of x (k, m, ...) along axis 1, in order: (k, n, ...) and their mask."""
    rank = jnp.cumsum(keep, axis=1, dtype=jnp.int32) - 1
    pick = keep[:, None, :] & (rank[:, None, :] == jnp.arange(n, dtype=jnp.int32)[None, :, None])  # (k, n, m)
    idx = jnp.argmax(pick, -1)
    out = jnp.take_along_axis(x, idx.reshape(idx.shape + (1,) * (x.ndim - 2)), 1)
    return out, jnp.any(pick, -1)


def _clip(poly, valid, coord, sign, limit):
    """Sutherland-Hodgman against sign * v[coord] <= limit (MuJoCo's clipHalfPlane), branch-free.

    poly (k, m, 3) with its first count vertices valid (cyclic); returns (k, min(m + 2, 12), 3)."""
    m = poly.shape[1]
    count = jnp.sum(valid, 1, dtype=jnp.int32)
    nxt = jnp.where(jnp.arange(m, dtype=jnp.int32) + 1 >= count[:, None], 0, jnp.arange(m, dtype=jnp.int32) + 1)
    q = jnp.take_along_axis(poly, nxt[:, :, None], 1)
    dp = sign * poly[:, :, coord] - limit[:, None]
    dq = jnp.take_along_axis(dp, nxt, 1)
    cross = valid & (((dp < 0) & (dq > 0)) | ((dp > 0) & (dq < 0)))
    t = dp / jnp.where(cross, dp - dq, 1.0)
    inter = poly + t[:, :, None] * (q - poly)
    cand = jnp.stack([poly, inter], 2).reshape(poly.shape[0], 2 * m, 3)
    keep = jnp.stack([valid & (dp <= 0), cross], 2).reshape(poly.shape[0], 2 * m)
    return _compact(cand, keep, min(m + 2, _MAXVERT))


def _accept(poly, valid, margin, dupe2):
    """Clipped vertices within the margin band, near-duplicates of earlier accepted ones dropped."""
    x, y = poly[:, :, 0], poly[:, :, 1]
    close = (x[:, :, None] - x[:, None, :]) ** 2 + (y[:, :, None] - y[:, None, :]) ** 2 < dupe2[:, None, None]
    ok = valid & (poly[:, :, 2] <= margin[:, None])
    acc = jnp.zeros_like(ok)
    for v in range(poly.shape[1]):
        acc = acc.at[:, v].set(ok[:, v] & ~jnp.any(acc & close[:, :, v], 1))
    return acc


def _face_contacts(code, rot, pos1, mat1, size1, pos2, mat2, size2, pos21, pos12, margin, dupeps):
    """Stage 2b: the incident face clipped by the reference face's side planes; up to 8 contacts.

    code (k,) 0..2 / 3..5: the reference face is box1's / box2's along that axis. Returns
    (dist, pos, normal, valid) with a contact axis of 8."""
    ref1 = code < 3
    a = code % 3
    sel = lambda u, v: jnp.where(ref1.reshape((-1,) + (1,) * (u.ndim - 1)), u, v)  # noqa: E731
    sref, sinc, posref, matref = sel(size1, size2), sel(size2, size1), sel(pos1, pos2), sel(mat1, mat2)
    posoi, rinc = sel(pos21, pos12), sel(rot, jnp.swapaxes(rot, 1, 2))
    sgn = jnp.where(_take(posoi, a) >= 0, 1.0, -1.0)
    row = jnp.take_along_axis(rinc, a[:, None, None], 1)[:, 0]  # incident axes' components along a
    binc = jnp.argmax(jnp.abs(row), 1).astype(jnp.int32)
    tinc = jnp.where(sgn * _take(row, binc) > 0, -1.0, 1.0)
    ax, ay = (a + 1) % 3, (a + 2) % 3
    rows = jnp.stack([ax, ay, a], 1)  # reference axes in the polygon's (x, y, z) order
    r = jnp.take_along_axis(rinc, rows[:, :, None], 1)  # (k, 3 rows, 3 incident axes)
    po = jnp.take_along_axis(posoi, rows, 1)
    col = lambda c: _take_col(r, c)  # noqa: E731
    cx = po + (tinc * _take(sinc, binc))[:, None] * col(binc)
    du = _take(sinc, (binc + 1) % 3)[:, None] * col((binc + 1) % 3)
    dv = _take(sinc, (binc + 2) % 3)[:, None] * col((binc + 2) % 3)
    cx = cx.at[:, 2].set(sgn * cx[:, 2] - _take(sref, a))
    du, dv = du.at[:, 2].multiply(sgn), dv.at[:, 2].multiply(sgn)
    poly = jnp.stack([cx + su * du + sv * dv for su, sv in ((1, 1), (-1, 1), (-1, -1), (1, -1))], 1)
    valid = jnp.ones(poly.shape[:2], bool)
    sx, sy = _take(sref, ax), _take(sref, ay)
    for coord, sign, limit in ((0, 1.0, sx), (0, -1.0, sx), (1, 1.0, sy), (1, -1.0, sy)):
        poly, valid = _clip(poly, valid, coord, sign, limit)
    keep = _accept(poly, valid, margin, dupeps * (sx * sx + sy * sy))
    v, ok = _compact(poly, keep, _BOXBOX_SLOTS)
    onehot = lambda c: _onehot(c, pos1.dtype)[:, None, :]  # noqa: E731
    depth = sgn[:, None] * (_take(sref, a)[:, None] + 0.5 * v[:, :, 2])  # midway between the faces
    local = onehot(ax) * v[:, :, 0:1] + onehot(ay) * v[:, :, 1:2] + onehot(a) * depth[:, :, None]
    pos = _mat_vec(matref[:, None], local) + posref[:, None]
    normal = jnp.where(ref1, sgn, -sgn)[:, None] * _take_col(matref, a)
    return v[:, :, 2], pos, jnp.broadcast_to(normal[:, None], pos.shape), ok


def box_box(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    """Box (geom1) against box (geom2): MuJoCo 4's separating-axis test and face clipping, up to 8 contacts."""
    sepeps, pareps, sgneps, dupeps = _eps(pos1.dtype)
    pos21 = _mat_t_vec(mat1, pos2 - pos1)
    pos12 = _mat_t_vec(mat2, pos1 - pos2)
    rot = jnp.swapaxes(_mat_t_vec(mat1[:, None], jnp.swapaxes(mat2, 1, 2)), 1, 2)  # mat1.T @ mat2
    septol = margin + sepeps * (size1[:, 0] + size1[:, 1] + size1[:, 2] + size2[:, 0] + size2[:, 1] + size2[:, 2])
    separated, code, code_face = _separation(rot, pos21, pos12, size1, size2, septol, pareps)
    is_edge = code >= 6
    face = (pos1, mat1, size1, pos2, mat2, size2, pos21, pos12)
    dist, pos, normal, ok = _face_contacts(jnp.where(is_edge, code_face, code), rot, *face, margin, dupeps)
    e = jnp.clip(code - 6, 0, 8)
    edist, emid, eaxis = _edge_contact(rot, pos21, size1, size2, e // 3, e % 3, sgneps)
    edge = jnp.arange(_BOXBOX_SLOTS) == 0
    dist = jnp.where(is_edge[:, None] & edge, edist[:, None], dist)
    pos = jnp.where((is_edge[:, None] & edge)[..., None], (_mat_vec(mat1, emid) + pos1)[:, None], pos)
    normal = jnp.where((is_edge[:, None] & edge)[..., None], _mat_vec(mat1, eaxis)[:, None], normal)
    ok = jnp.where(is_edge[:, None], edge & (edist <= septol)[:, None], ok) & ~separated[:, None]
    return dist, pos, normal, jnp.zeros_like(pos), ok


_BOXBOX_SLOTS = 8  # mj_maxContact's box-box count: a quadrilateral clipped by four half-planes

# (type1, type2) -> (narrow-phase function, contact slots per pair)
PAIRS: dict = {(CAPSULE, BOX): (capsule_box, 2), (BOX, BOX): (box_box, _BOXBOX_SLOTS)}
