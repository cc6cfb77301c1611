"""Primitive pairs of the narrow phase: planes, spheres, capsules, cylinders and sphere-box (MuJoCo's
mjc_PlaneSphere ... mjc_SphereCylinder). Each returns (dist, pos, normal, tangent, valid) with a leading contact
axis, vectorised over a pair group."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math
from hurtle.physics.types import BOX, CAPSULE, CYLINDER, PLANE, SPHERE

PARALLEL_SIN2 = 1e-8  # capsule axes this close to parallel (sin^2 of their angle) count as parallel


# --- narrow phase: each returns (dist, pos, normal, tangent, valid) with a leading contact axis ---


def _plane_sphere(n, p1, p2, r2, margin):
    cdist = math.dot(p2 - p1, n)
    dist = cdist - r2
    pos = p2 - n * (dist / 2 + r2)[..., None]
    return dist, pos, cdist <= margin + r2


def plane_sphere(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    n = mat1[..., :, 2]
    dist, pos, ok = _plane_sphere(n, pos1, pos2, size2[..., 0], margin)
    return dist[:, None], pos[:, None], n[:, None], jnp.zeros_like(pos)[:, None], ok[:, None]


def plane_capsule(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    n = mat1[..., :, 2]
    axis = mat2[..., :, 2]
    seg = axis * size2[..., 1:2]
    d1, q1, ok1 = _plane_sphere(n, pos1, pos2 + seg, size2[..., 0], margin)
    d2, q2, ok2 = _plane_sphere(n, pos1, pos2 - seg, size2[..., 0], margin)
    st = lambda a, b: math.stack_select([a, b], 1)  # noqa: E731
    return st(d1, d2), st(q1, q2), st(n, n), st(axis, axis), st(ok1, ok2)


def plane_box(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    n = mat1[..., :, 2]
    dist = math.dot(pos2 - pos1, n)
    signs = np.array([[(i & 1) * 2 - 1, (i & 2) - 1, (i & 4) // 2 - 1] for i in range(8)], dtype=np.float64)
    local = signs[None] * size2[:, None, :]  # (k, 8, 3)
    corner = jnp.einsum("kij,kcj->kci", mat2, local)
    ldist = jnp.einsum("kci,ki->kc", corner, n)
    ok = (dist[:, None] + ldist <= margin[:, None]) & (ldist <= 0)
    cdist = dist[:, None] + ldist
    cpos = corner + pos2[:, None] - n[:, None] * (cdist / 2)[..., None]
    # the first four qualifying corners, in MuJoCo's corner order
    rank = jnp.cumsum(ok, axis=1) - 1
    pick = ok[:, None, :] & (rank[:, None, :] == np.arange(4)[None, :, None])  # (k, 4, 8)
    sel = lambda x: jnp.einsum("kjc,kc...->kj...", pick.astype(x.dtype), x)  # noqa: E731
    valid = jnp.any(pick, -1)
    z = jnp.zeros((len(dist), 4, 3), pos2.dtype)
    return sel(cdist), sel(cpos), jnp.broadcast_to(n[:, None], z.shape), z, valid


def plane_cylinder(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    n = mat1[..., :, 2]
    axis = mat2[..., :, 2]
    prjaxis = math.dot(n, axis)
    flip = prjaxis > 0
    axis = jnp.where(flip[:, None], -axis, axis)
    prjaxis = jnp.where(flip, -prjaxis, prjaxis)
    dist0 = math.dot(pos2 - pos1, n)
    vec = axis * prjaxis[:, None] - n
    len_sqr = math.dot(vec, vec)
    r, h = size2[:, 0], size2[:, 1]
    general = len_sqr >= math.MINVAL * math.MINVAL
    vec = jnp.where(
        general[:, None], vec * (r / jnp.sqrt(jnp.where(general, len_sqr, 1.0)))[:, None], mat2[..., :, 0] * r[:, None]
    )
    prjvec = math.dot(vec, n)
    axis = axis * h[:, None]
    prjaxis = prjaxis * h
    d1 = dist0 + prjaxis + prjvec
    d2 = dist0 - prjaxis + prjvec
    prjvec1 = -prjvec * 0.5
    d3 = dist0 + prjaxis + prjvec1
    ok1 = d1 <= margin
    ok2 = ok1 & (d2 <= margin)
    ok3 = ok1 & (d3 <= margin)
    vec1 = math.normalize(math.cross(vec, axis)) * (r * np.sqrt(3.0) / 2)[:, None]
    p1 = pos2 + vec + axis - n * (d1 / 2)[:, None]
    p2 = pos2 + vec - axis - n * (d2 / 2)[:, None]
    pa = pos2 + vec1 + axis - vec * 0.5 - n * (d3 / 2)[:, None]
    pb = pos2 - vec1 + axis - vec * 0.5 - n * (d3 / 2)[:, None]
    st = lambda *a: jnp.stack(a, 1)  # noqa: E731
    zero = jnp.zeros_like(pos2)
    return st(d1, d2, d3, d3), st(p1, p2, pa, pb), st(n, n, n, n), st(zero, zero, zero, zero), st(ok1, ok2, ok3, ok3)


def _sphere_sphere(p1, z1, r1, p2, z2, r2, margin):
    dif = p2 - p1
    dsq = math.dot(dif, dif)
    ok = dsq <= (margin + r1 + r2) ** 2
    length = math.safe_norm(dif)
    dist = length - r1 - r2
    fallback = math.cross(z1, z2)
    fb_len = math.safe_norm(fallback)
    fallback = jnp.where(
        (fb_len < math.MINVAL)[..., None],
        jnp.array([1.0, 0, 0], p1.dtype),
        fallback / jnp.maximum(fb_len, math.MINVAL)[..., None],
    )
    normal = jnp.where((length < math.MINVAL)[..., None], fallback, dif / jnp.maximum(length, math.MINVAL)[..., None])
    pos = p1 + normal * (r1 + dist / 2)[..., None]
    return dist, pos, normal, ok


def sphere_sphere(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    d, p, n, ok = _sphere_sphere(pos1, mat1[..., :, 2], size1[:, 0], pos2, mat2[..., :, 2], size2[:, 0], margin)
    return d[:, None], p[:, None], n[:, None], jnp.zeros_like(p)[:, None], ok[:, None]


def sphere_capsule(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    axis = mat2[..., :, 2]
    x = jnp.clip(math.dot(axis, pos1 - pos2), -size2[:, 1], size2[:, 1])
    near = pos2 + axis * x[:, None]
    d, p, n, ok = _sphere_sphere(pos1, mat1[..., :, 2], size1[:, 0], near, axis, size2[:, 0], margin)
    return d[:, None], p[:, None], n[:, None], jnp.zeros_like(p)[:, None], ok[:, None]


def capsule_capsule(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    z1, z2 = mat1[..., :, 2], mat2[..., :, 2]
    a1, a2 = z1 * size1[:, 1:2], z2 * size2[:, 1:2]
    dif = pos1 - pos2
    ma, mb, mc = math.dot(a1, a1), -math.dot(a1, a2), math.dot(a2, a2)
    u, v = -math.dot(a1, dif), math.dot(a2, dif)
    det = ma * mc - mb * mb
    # MuJoCo 4 treats axes within 1e-4 rad of parallel (sin^2 < 1e-8) as parallel: two contacts
    general = det >= PARALLEL_SIN2 * ma * mc
    sdet = jnp.where(general, det, 1.0)
    x1 = (mc * u - mb * v) / sdet
    x2 = (ma * v - mb * u) / sdet
    x2 = jnp.where(x1 > 1, (v - mb) / mc, jnp.where(x1 < -1, (v + mb) / mc, x2))
    x1 = jnp.clip(x1, -1, 1)
    x1 = jnp.where(x2 > 1, jnp.clip((u - mb) / ma, -1, 1), jnp.where(x2 < -1, jnp.clip((u + mb) / ma, -1, 1), x1))
    x2 = jnp.clip(x2, -1, 1)
    r1, r2 = size1[:, 0], size2[:, 0]

    def test(s1, s2):
        return _sphere_sphere(pos1 + a1 * s1[:, None], z1, r1, pos2 + a2 * s2[:, None], z2, r2, margin)

    gen = test(x1, x2)
    # parallel: the two ends of the overlap of the segments along the first axis, in its order; an end is
    # the first segment's own (the nearest point of the second opposite it) or the second's end projected
    # onto the first (apart, both ends are the nearest end points)
    sp, sm = (u - mb) / ma, (u + mb) / ma  # the second's ends (x2 = 1, -1) along the first
    up = sp <= sm
    smin, emin = jnp.where(up, sp, sm), jnp.where(up, 1.0, -1.0)
    smax, emax = jnp.where(up, sm, sp), jnp.where(up, -1.0, 1.0)
    low, high = smin <= -1, smax >= 1
    par = [
        test(jnp.where(low, -1.0, jnp.minimum(smin, 1)), jnp.where(low, jnp.clip((v + mb) / mc, -1, 1), emin)),
        test(jnp.where(high, 1.0, jnp.maximum(smax, -1)), jnp.where(high, jnp.clip((v - mb) / mc, -1, 1), emax)),
    ]
    out = []
    for i in range(4):
        first = jnp.where(general.reshape((-1,) + (1,) * (gen[i].ndim - 1)), gen[i], par[0][i])
        second = jnp.where(general.reshape((-1,) + (1,) * (gen[i].ndim - 1)), jnp.zeros_like(par[1][i]), par[1][i])
        out.append(jnp.stack([first, second], 1))
    dist, pos, normal, ok = out
    return dist, pos, normal, jnp.zeros_like(pos), ok


def sphere_box(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    r = size1[:, 0]
    center = jnp.einsum("kji,kj->ki", mat2, pos1 - pos2)  # sphere centre in the box frame
    clamped = jnp.clip(center, -size2, size2)
    tmp = clamped - center
    dist = math.safe_norm(tmp)
    direction = tmp / jnp.maximum(dist, math.MINVAL)[:, None]
    ok = dist - r <= margin
    # centre inside the box: push out through the nearest face (first of equals, as MuJoCo)
    faces = jnp.stack([-size2[:, 0], size2[:, 0], -size2[:, 1], size2[:, 1], -size2[:, 2], size2[:, 2]], 1)
    gaps = jnp.abs(faces - jnp.repeat(center, 2, axis=1))
    k = jnp.argmin(gaps, axis=1)
    closest = jnp.min(gaps, axis=1)
    nearest = jax.nn.one_hot(k // 2, 3, dtype=pos1.dtype) * jnp.where(k % 2 == 1, -1.0, 1.0)[:, None]
    inside = dist <= math.MINVAL
    local_pos = jnp.where(
        inside[:, None],
        center + nearest * ((r - closest) / 2)[:, None],
        0.5 * (clamped + center + direction * r[:, None]),
    )
    normal = math.matvec(mat2, jnp.where(inside[:, None], nearest, direction))
    d = jnp.where(inside, -closest, dist) - r
    pos = math.matvec(mat2, local_pos) + pos2
    return d[:, None], pos[:, None], normal[:, None], jnp.zeros_like(pos)[:, None], ok[:, None]


def sphere_cylinder(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    axis = mat2[..., :, 2]
    r, h = size2[:, 0], size2[:, 1]
    vec = pos1 - pos2
    x = math.dot(axis, vec)
    a_proj = axis * x[:, None]
    p_proj = vec - a_proj
    p_sqr = math.dot(p_proj, p_proj)
    side = jnp.abs(x) < h
    cap = p_sqr < r * r
    # centre inside: leave through the nearer of side and cap
    deep = side & cap
    cap_nearer = h - jnp.abs(x) < r - jnp.sqrt(p_sqr)
    side = side & ~(deep & cap_nearer)
    cap = cap & ~(deep & ~cap_nearer)
    z1, r1 = mat1[..., :, 2], size1[:, 0]
    # side: against the axis point; cap: plane through the cap; otherwise the rim's nearest point
    ds, ps, ns, oks = _sphere_sphere(pos1, z1, r1, pos2 + a_proj, axis, r, margin)
    top = x > 0
    n_cap = jnp.where(top[:, None], axis, -axis)
    dc, pc, okc = _plane_sphere(n_cap, pos2 + n_cap * h[:, None], pos1, r1, margin)
    rim = p_proj * (r / jnp.sqrt(jnp.where(cap | side, 1.0, p_sqr)))[:, None] + n_cap * h[:, None]
    dr, pr, nr, okr = _sphere_sphere(pos1, z1, r1, pos2 + rim, axis, jnp.zeros_like(r), margin)
    pick = lambda a, b, c: jnp.where(  # noqa: E731
        side.reshape((-1,) + (1,) * (a.ndim - 1)), a, jnp.where(cap.reshape((-1,) + (1,) * (a.ndim - 1)), b, c)
    )
    dist, pos, normal, ok = pick(ds, dc, dr), pick(ps, pc, pr), pick(ns, -n_cap, nr), pick(oks, okc, okr)
    return dist[:, None], pos[:, None], normal[:, None], jnp.zeros_like(pos)[:, None], ok[:, None]


# (type1, type2) -> (narrow-phase function, contact slots per pair)
PAIRS = {
    (PLANE, SPHERE): (plane_sphere, 1),
    (PLANE, CAPSULE): (plane_capsule, 2),
    (PLANE, BOX): (plane_box, 4),
    (PLANE, CYLINDER): (plane_cylinder, 4),
    (SPHERE, SPHERE): (sphere_sphere, 1),
    (SPHERE, CAPSULE): (sphere_capsule, 1),
    (SPHERE, BOX): (sphere_box, 1),
    (SPHERE, CYLINDER): (sphere_cylinder, 1),
    (CAPSULE, CAPSULE): (capsule_capsule, 2),
}
