"""Ray intersection with geoms (MuJoCo's engine_ray.c), branch-free and batched by broadcasting.

Each function takes the geom's frame (`pos` (..., 3), `mat` (..., 3, 3)), its `size` (..., 3) and a ray from
`pnt` along `vec` (both (..., 3), `vec` need not be unit length) and returns the ray parameter `x` of the nearest
intersection with `x >= 0` (the distance when `vec` is a unit vector), or -1 where the ray misses, as MuJoCo's
ray_* functions. `ray_geom` dispatches on a static geom type (mju_rayGeom). Used by the touch sensor's zone test
and the rangefinder (`hurtle.physics.sensor`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from hurtle.physics import math
from hurtle.physics.types import BOX, CAPSULE, CYLINDER, ELLIPSOID, PLANE, SPHERE

MINVAL = 1e-15  # mjMINVAL


def _map(pos, mat, pnt, vec):
    """The ray in the geom's frame: mat' (pnt - pos), mat' vec."""
    return math.matvec_t(mat, pnt - pos), math.matvec_t(mat, vec)


def _quad(a, b, c):
    """Both roots of a x^2 + 2 b x + c = 0 (x0 <= x1), -1 for both where none is real and finite
    (ray_quad), and the smallest non-negative one (-1 if none)."""
    det = b * b - a * c
    ok = (det >= 0) & (a >= MINVAL)
    root = jnp.sqrt(jnp.where(ok, det, 0.0))
    safe_a = jnp.where(ok, a, 1.0)
    x0 = jnp.where(ok, (-b - root) / safe_a, -1.0)
    x1 = jnp.where(ok, (-b + root) / safe_a, -1.0)
    best = jnp.where(x0 >= 0, x0, jnp.where(x1 >= 0, x1, -1.0))
    return x0, x1, best


def _closer(x, sol, accept):
    """MuJoCo's update `if (accept && (x < 0 || sol < x)) x = sol`."""
    return jnp.where(accept & ((x < 0) | (sol < x)), sol, x)


def ray_plane(pos, mat, size, pnt, vec):
    lpnt, lvec = _map(pos, mat, pnt, vec)
    front = lvec[..., 2] <= -MINVAL
    x = -lpnt[..., 2] / jnp.where(front, lvec[..., 2], -1.0)
    p0, p1 = lpnt[..., 0] + x * lvec[..., 0], lpnt[..., 1] + x * lvec[..., 1]
    inside = ((size[..., 0] <= 0) | (jnp.abs(p0) <= size[..., 0])) & (
        (size[..., 1] <= 0) | (jnp.abs(p1) <= size[..., 1])
    )
    return jnp.where(front & (x >= 0) & inside, x, -1.0)


def ray_sphere(pos, radius_sqr, pnt, vec):
    dif = pnt - pos
    return _quad(math.dot(vec, vec), math.dot(vec, dif), math.dot(dif, dif) - radius_sqr)[2]


def ray_capsule(pos, mat, size, pnt, vec):
    r, h = size[..., 0], size[..., 1]
    bound = ray_sphere(pos, (r + h) ** 2, pnt, vec) >= 0
    lpnt, lvec = _map(pos, mat, pnt, vec)
    a = lvec[..., 0] ** 2 + lvec[..., 1] ** 2
    b = lvec[..., 0] * lpnt[..., 0] + lvec[..., 1] * lpnt[..., 1]
    c = lpnt[..., 0] ** 2 + lpnt[..., 1] ** 2 - r * r
    sol = _quad(a, b, c)[2]
    x = _closer(-jnp.ones_like(sol), sol, (sol >= 0) & (jnp.abs(lpnt[..., 2] + sol * lvec[..., 2]) <= h))
    a = math.dot(lvec, lvec)
    for side in (1.0, -1.0):  # the top cap's upper half, then the bottom cap's lower half
        ldif = lpnt - jnp.stack([jnp.zeros_like(h), jnp.zeros_like(h), side * h], -1)
        roots = _quad(a, math.dot(lvec, ldif), math.dot(ldif, ldif) - r * r)[:2]
        for xx in roots:
            z = lpnt[..., 2] + xx * lvec[..., 2]
            x = _closer(x, xx, (xx >= 0) & (side * z >= h))
    return jnp.where(bound, x, -1.0)


def ray_ellipsoid(pos, mat, size, pnt, vec):
    lpnt, lvec = _map(pos, mat, pnt, vec)
    s = 1.0 / (size * size)
    a = math.dot(s * lvec, lvec)
    b = math.dot(s * lvec, lpnt)
    c = math.dot(s * lpnt, lpnt) - 1.0
    return _quad(a, b, c)[2]


def ray_cylinder(pos, mat, size, pnt, vec):
    r, h = size[..., 0], size[..., 1]
    bound = ray_sphere(pos, r * r + h * h, pnt, vec) >= 0
    lpnt, lvec = _map(pos, mat, pnt, vec)
    x = -jnp.ones_like(r)
    flat = jnp.abs(lvec[..., 2]) > MINVAL
    lz = jnp.where(flat, lvec[..., 2], 1.0)
    for side in (-1.0, 1.0):
        sol = (side * h - lpnt[..., 2]) / lz
        p0, p1 = lpnt[..., 0] + sol * lvec[..., 0], lpnt[..., 1] + sol * lvec[..., 1]
        x = _closer(x, sol, flat & (sol >= 0) & (p0 * p0 + p1 * p1 <= r * r))
    a = lvec[..., 0] ** 2 + lvec[..., 1] ** 2
    b = lvec[..., 0] * lpnt[..., 0] + lvec[..., 1] * lpnt[..., 1]
    c = lpnt[..., 0] ** 2 + lpnt[..., 1] ** 2 - r * r
    sol = _quad(a, b, c)[2]
    x = _closer(x, sol, (sol >= 0) & (jnp.abs(lpnt[..., 2] + sol * lvec[..., 2]) <= h))
    return jnp.where(bound, x, -1.0)


def ray_box(pos, mat, size, pnt, vec, faces: bool = False):
    """x of the nearest face hit; with `faces`, also each face's hit (..., 6) in MuJoCo's order (-x, +x, -y, +y,
    -z, +z), -1 where missed (ray_box's `all`)."""
    bound = ray_sphere(pos, math.dot(size, size), pnt, vec) >= 0
    lpnt, lvec = _map(pos, mat, pnt, vec)
    x = -jnp.ones_like(size[..., 0])
    every = []
    across = ((1, 2), (0, 2), (0, 1))
    for i in range(3):
        usable = jnp.abs(lvec[..., i]) > MINVAL
        li = jnp.where(usable, lvec[..., i], 1.0)
        j, k = across[i]
        for side in (-1.0, 1.0):
            sol = (side * size[..., i] - lpnt[..., i]) / li
            p0, p1 = lpnt[..., j] + sol * lvec[..., j], lpnt[..., k] + sol * lvec[..., k]
            hit = usable & (sol >= 0) & (jnp.abs(p0) <= size[..., j]) & (jnp.abs(p1) <= size[..., k])
            x = _closer(x, sol, hit)
            every.append(jnp.where(hit & bound, sol, -1.0))
    x = jnp.where(bound, x, -1.0)
    return (x, jnp.stack(every, -1)) if faces else x


def ray_geom(gtype: int, pos, mat, size, pnt, vec):
    """mju_rayGeom for a static primitive type."""
    if gtype == PLANE:
        return ray_plane(pos, mat, size, pnt, vec)
    if gtype == SPHERE:
        return ray_sphere(pos, size[..., 0] ** 2, pnt, vec)
    if gtype == CAPSULE:
        return ray_capsule(pos, mat, size, pnt, vec)
    if gtype == ELLIPSOID:
        return ray_ellipsoid(pos, mat, size, pnt, vec)
    if gtype == CYLINDER:
        return ray_cylinder(pos, mat, size, pnt, vec)
    if gtype == BOX:
        return ray_box(pos, mat, size, pnt, vec)
    raise NotImplementedError(f"ray intersection with geom type {gtype} is not supported by hurtle yet")


def ray_triangles(verts, lpnt, lvec):
    """Rays against triangles `verts` (..., 3 vertices, 3) given in the ray's frame (MuJoCo's ray_triangle on a
    mesh's faces, in the basis of the plane normal to the ray that mju_rayTree builds): x, or -1 where it misses."""
    ax = jnp.abs(lvec)
    zero = jnp.where(
        (ax[..., 0] >= ax[..., 1]) & (ax[..., 0] >= ax[..., 2]), 0, jnp.where(ax[..., 1] >= ax[..., 2], 1, 2)
    )
    b0 = jnp.where(jnp.arange(3) == zero[..., None], 0.0, 1.0).astype(lvec.dtype)
    b1 = math.normalize(b0 - lvec * (math.dot(lvec, b0) / math.dot(lvec, lvec))[..., None])
    b0 = math.normalize(math.cross(b1, lvec))
    dif = verts - lpnt[..., None, :]
    planar = jnp.stack([math.dot(dif, b0[..., None, :]), math.dot(dif, b1[..., None, :])], -1)  # (..., 3, 2)
    same = jnp.any(jnp.all(planar > 0, axis=-2) | jnp.all(planar < 0, axis=-2), axis=-1)
    a00 = planar[..., 0, 0] - planar[..., 2, 0]
    a01 = planar[..., 1, 0] - planar[..., 2, 0]
    a10 = planar[..., 0, 1] - planar[..., 2, 1]
    a11 = planar[..., 1, 1] - planar[..., 2, 1]
    c0, c1 = -planar[..., 2, 0], -planar[..., 2, 1]
    det = a00 * a11 - a01 * a10
    okdet = jnp.abs(det) >= MINVAL
    sdet = jnp.where(okdet, det, 1.0)
    t0 = (a11 * c0 - a01 * c1) / sdet
    t1 = (-a10 * c0 + a00 * c1) / sdet
    inside = (t0 >= 0) & (t1 >= 0) & (t0 + t1 <= 1)
    nrm = math.cross(verts[..., 0, :] - verts[..., 2, :], verts[..., 1, :] - verts[..., 2, :])
    denom = math.dot(lvec, nrm)
    okden = jnp.abs(denom) >= MINVAL
    x = -math.dot(lpnt - verts[..., 2, :], nrm) / jnp.where(okden, denom, 1.0)
    return jnp.where(~same & okdet & inside & okden, x, -1.0)


def ray_mesh(pos, mat, tris, pnt, vec):
    """Rays (n) against one mesh geom at `pos`, `mat` (its faces `tris` (nface, 3, 3) in the mesh frame): the
    nearest x over the faces (mj_rayMesh without its bounding-volume pruning), or -1."""
    lpnt, lvec = _map(pos, mat, pnt, vec)
    x = ray_triangles(jnp.asarray(tris, pnt.dtype)[None], lpnt[:, None], lvec[:, None])
    return nearest(x, axis=-1)


def ray_hfield(pos, mat, nrow: int, ncol: int, size, data, pnt, vec):
    """Rays (n) against one height field geom (mj_rayHfield): its base box, the triangles of the grid cells
    under the ray's path through the top box, and the top box's sides below the field's edge profile.
    `size` and `data` (nrow * ncol, normalised heights) are the field's static numbers.

    MuJoCo tests every cell of the path's bounding window; here the path is sampled a cell apart and the 3 x 3
    cells around each sample are tested, which covers every cell the path crosses (a fixed amount of work,
    ~18 (nrow + ncol) triangles per ray, however long the path)."""
    dt = pnt.dtype
    sx, sy, top, bottom = (float(v) for v in size)
    zaxis = mat[:, 2]
    x = ray_box(pos - zaxis * (bottom / 2), mat, jnp.asarray([sx, sy, bottom / 2], dt), pnt, vec)
    t_top, every = ray_box(pos + zaxis * (top / 2), mat, jnp.asarray([sx, sy, top / 2], dt), pnt, vec, faces=True)
    lpnt, lvec = _map(pos, mat, pnt, vec)
    # the path's segment inside the top box
    beyond = every > t_top[:, None]
    seg0 = jnp.where(beyond.any(-1), t_top, 0.0)
    seg1 = jnp.maximum(t_top, jnp.max(every, -1))
    dx, dy = 2 * sx / (ncol - 1), 2 * sy / (nrow - 1)
    k = max(nrow, ncol) + 1
    frac = jnp.linspace(0.0, 1.0, k, dtype=dt)
    t = seg0[:, None] + frac[None] * (seg1 - seg0)[:, None]  # (n, k)
    cx = jnp.floor((lpnt[:, None, 0] + t * lvec[:, None, 0] + sx) / dx).astype(jnp.int32)
    cy = jnp.floor((lpnt[:, None, 1] + t * lvec[:, None, 1] + sy) / dy).astype(jnp.int32)
    off = jnp.asarray([-1, 0, 1], jnp.int32)
    shape3 = cx.shape + (3, 3)
    c = jnp.broadcast_to(jnp.clip(cx[..., None, None] + off[:, None], 0, ncol - 2), shape3)  # (n, k, 3, 3)
    r = jnp.broadcast_to(jnp.clip(cy[..., None, None] + off[None, :], 0, nrow - 2), shape3)
    z = jnp.asarray(np.asarray(data, np.float64).reshape(nrow, ncol) * top, dt)

    def vert(rr, cc):
        return jnp.stack([dx * cc.astype(dt) - sx, dy * rr.astype(dt) - sy, z[rr, cc]], -1)

    v00, v01, v11, v10 = vert(r, c), vert(r, c + 1), vert(r + 1, c + 1), vert(r + 1, c)
    tris = jnp.stack([jnp.stack([v00, v01, v11], -2), jnp.stack([v00, v11, v10], -2)], -3)  # (n,k,3,3,2,3,3)
    shape = tris.shape[:-2]
    hits = ray_triangles(
        tris,
        jnp.broadcast_to(lpnt[:, None, None, None, None], shape + (3,)),
        jnp.broadcast_to(lvec[:, None, None, None, None], shape + (3,)),
    )
    best = nearest(hits.reshape(hits.shape[0], -1))
    inside = t_top >= 0
    x = jnp.where(inside & (best >= 0) & ((x < 0) | (best < x)), best, x)
    # the top box's four sides, where the hit lies below the edge profile
    zn = lambda rr, cc: z[rr, cc] / top  # noqa: E731
    for i in range(4):
        a = every[:, i]
        height = (lpnt[:, 2] + a * lvec[:, 2]) / top
        if i < 2:
            y = (lpnt[:, 1] + a * lvec[:, 1] + sy) / dy
            y0 = jnp.clip(jnp.floor(y), 0, nrow - 2)
            col = ncol - 1 if i == 1 else 0
            z0, z1 = zn(y0.astype(jnp.int32), col), zn(y0.astype(jnp.int32) + 1, col)
        else:
            y = (lpnt[:, 0] + a * lvec[:, 0] + sx) / dx
            y0 = jnp.clip(jnp.floor(y), 0, ncol - 2)
            row = nrow - 1 if i == 3 else 0
            z0, z1 = zn(row, y0.astype(jnp.int32)), zn(row, y0.astype(jnp.int32) + 1)
        below = height < z0 * (y0 + 1 - y) + z1 * (y - y0)
        x = jnp.where(inside & (a >= 0) & ((a < x) | (x < 0)) & below, a, x)
    return x


def nearest(x, axis=-1):
    """The smallest non-negative entry along `axis`, -1 where there is none."""
    best = jnp.min(jnp.where(x >= 0, x, jnp.inf), axis=axis)
    return jnp.where(jnp.isfinite(best), best, -1.0)


__all__ = [
    "nearest",
    "ray_box",
    "ray_capsule",
    "ray_cylinder",
    "ray_ellipsoid",
    "ray_geom",
    "ray_hfield",
    "ray_mesh",
    "ray_plane",
    "ray_sphere",
    "ray_triangles",
]
