"""Box primitives of the narrow phase: capsule-box and box-box (MuJoCo's mjc_CapsuleBox, mjc_BoxBox).

Both follow MuJoCo's routines decision by decision, branch-free: every candidate feature is evaluated
and the one MuJoCo's loops would keep is selected with `jnp.where`. Sums of products are written in
MuJoCo's order of operations, so that near-ties between features are decided as MuJoCo decides them.
"""

from __future__ import annotations

import jax.numpy as jnp

from hurtle.physics import collision
from hurtle.physics.math import MINVAL

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


def _capsule_box_closest(pos, ha, hl, size, bestdist):
    """Closest feature between the capsule segment and the box (box frame), as mjraw_CapsuleBox's loops.

    Returns (segpos, boxpos, cltype, clface, clcorner, cledge): cltype -3/-1 a segment end nearest a face
    (clface: the clamped axis or -1 inside), 0..8 an edge (clamping codes), -4 nothing found.
    """
    k = pos.shape[0]
    izero = jnp.zeros(k, jnp.int32)
    segpos, boxpos = jnp.zeros_like(hl), jnp.zeros_like(hl)
    cltype, clface, clcorner, cledge = izero - 4, izero - 1, izero, izero
    for i in (-1, 1):  # segment ends against the box faces
        end = pos + ha * i
        out = (end < -size) | (end > size)
        nout = jnp.sum(out, axis=-1, dtype=jnp.int32)
        last = jnp.where(jnp.any(out, -1), 2 - jnp.argmax(out[:, ::-1], axis=-1), -1).astype(jnp.int32)
        dif = jnp.clip(end, -size, size) - end
        d = _dot(dif, dif)
        upd = (nout <= 1) & (d < bestdist)
        bestdist = jnp.where(upd, d, bestdist)
        segpos = jnp.where(upd, float(i), segpos)
        cltype = jnp.where(upd, -2 + i, cltype)
        clface = jnp.where(upd, last, clface)
    mc = hl * hl
    for j in range(3):  # the segment against the 12 box edges, each edge along axis j
        for i in range(8):
            if i & (1 << j):
                continue
            sgn = [1.0 if i & (1 << c) else -1.0 for c in range(3)]
            start = jnp.stack([sgn[c] * size[:, c] if c != j else jnp.zeros_like(hl) for c in range(3)], -1)
            dif = start - pos
            sj, hj = size[:, j], ha[:, j]
            ma, mb = sj * sj, -sj * hj
            u, v = -sj * dif[:, j], _dot(ha, dif)
            det = ma * mc - mb * mb
            ok = jnp.abs(det) >= MINVAL
            idet = 1 / jnp.where(ok, det, 1.0)
            x1, x2 = (mc * u - mb * v) * idet, (ma * v - mb * u) * idet
            s1 = jnp.where(x1 > 1, 2, jnp.where(x1 < -1, 0, 1))
            x2 = jnp.where(x1 > 1, (v - mb) * (1 / mc), jnp.where(x1 < -1, (v + mb) * (1 / mc), x2))
            x1 = jnp.clip(x1, -1, 1)
            s2 = jnp.where(x2 > 1, 2, jnp.where(x2 < -1, 0, 1))
            re = jnp.where(x2 > 1, (u - mb) * (1 / ma), (u + mb) * (1 / ma))
            s1 = jnp.where(s2 != 1, jnp.where(re > 1, 2, jnp.where(re < -1, 0, s1)), s1)  # kept when re is inside
            x1 = jnp.where(s2 != 1, jnp.clip(re, -1, 1), x1)
            x2 = jnp.clip(x2, -1, 1)
            dif = (dif - ha * x2[:, None]).at[:, j].add(sj * x1)
            d = _dot(dif, dif)
            c1 = s1 * 3 + s2
            upd = ok & (d < bestdist - MINVAL)
            bestdist = jnp.where(upd, d, bestdist)
            segpos = jnp.where(upd, x2, segpos)
            boxpos = jnp.where(upd, x1, boxpos)
            clcorner = jnp.where(upd, i + (1 << j) * (c1 // 6), clcorner)
            cledge = jnp.where(upd, j, cledge)
            cltype = jnp.where(upd, c1, cltype)
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

    def sphere(s):
        centre = _mat_vec(mat2, pos + ha * s[:, None]) + pos2
        return collision.sphere_box(g, centre, mat1, size1, pos2, mat2, size2, margin)

    d1, p1, n1, t1, ok1 = sphere(segpos)
    d2, p2, n2, t2, ok2 = sphere(second + segpos)
    cat = lambda a, b: jnp.concatenate([a, b], 1)  # noqa: E731
    ok = cat(ok1 & found[:, None], ok2 & (found & (second > -3))[:, None])
    return cat(d1, d2), cat(p1, p2), cat(n1, n2), cat(t1, t2), ok


# (type1, type2) -> (narrow-phase function, contact slots per pair), merged into collision.NARROW
NARROW: dict = {(3, 6): (capsule_box, 2)}
