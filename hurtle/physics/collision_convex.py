"""Convex narrow phase: GJK distance, EPA penetration and multi-contact (MuJoCo's native CCD).

MuJoCo collides most pairs involving ellipsoids and cylinders with its native convex collider
(`mjc_Convex`, `mjc_ccd`): GJK on the Minkowski difference of the two shapes' support functions; a
sphere or capsule first shrinks to its core (a point or a segment) so that a shallow contact is the
core distance less the radii; a deeper one goes to the expanding polytope algorithm (EPA). With
`multiccd` on, pairs without a sphere or ellipsoid look for more contacts by tilting both geoms by
1e-3 rad about the first contact point, four times, and keep the new points that are distinct.

Here each algorithm runs a fixed number of iterations (`opt.ccd_iterations`) as a `lax.fori_loop`
whose state freezes once converged, so shapes are static and nothing branches on state. GJK
computes the closest point of a simplex by testing every sub-simplex of it; EPA keeps its polytope
in fixed-size arrays (vertices, faces, a directed-edge matrix for the horizon). Both stop at MuJoCo's
tolerance (`opt.ccd_tolerance`).

Registered today: plane-ellipsoid (mjc_PlaneConvex, exact). GJK and EPA are tested against exact
distances and depths; the mjc_Convex pairs wait for parity with MuJoCo 4 (see CONVEX_PAIRS).
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math

PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = 0, 1, 2, 3, 4, 5, 6, 7
MINVAL2 = math.MINVAL * math.MINVAL
MAX_LIMIT = 1e10  # MuJoCo's "no distance"


# --- support functions: the farthest point of a geom along a unit direction (global frame) ---


def support(gtype: int, pos, mat, size, direction, margin):
    """Support point of a geom inflated by margin/2 (mjc_*Support plus MuJoCo's margin term)."""
    local = jnp.einsum("...ji,...j->...i", mat, direction)
    if gtype == SPHERE:
        p = local * size[..., :1]
    elif gtype == CAPSULE:
        p = local * size[..., :1]
        p = p.at[..., 2].add(jnp.where(local[..., 2] >= 0, size[..., 1], -size[..., 1]))
    elif gtype == ELLIPSOID:
        s = local * size
        n2 = math.dot(s, s)
        small = n2 < MINVAL2
        p = s * (1 / jnp.sqrt(jnp.where(small, 1.0, n2)))[..., None] * size
        p = jnp.where(small[..., None], jnp.zeros_like(p).at[..., 0].set(size[..., 0]), p)
    elif gtype == CYLINDER:
        n2 = local[..., 0] ** 2 + local[..., 1] ** 2
        ok = n2 >= MINVAL2
        scl = jnp.where(ok, size[..., 0] / jnp.sqrt(jnp.where(ok, n2, 1.0)), 0.0)
        zed = jnp.where(local[..., 2] >= 0, size[..., 1], -size[..., 1])
        p = jnp.stack([scl * local[..., 0], scl * local[..., 1], zed], -1)
    elif gtype == BOX:
        p = jnp.where(local >= 0, size, -size)
    else:
        raise NotImplementedError(f"no support function for geom type {gtype}")
    out = pos + jnp.einsum("...ij,...j->...i", mat, p)
    return out + direction * (0.5 * margin)[..., None]


def core_support(gtype: int, pos, mat, size, direction):
    """Support of a sphere's centre or a capsule's segment (mjc_pointSupport, mjc_lineSupport)."""
    if gtype == SPHERE:
        return pos
    axis = mat[..., :, 2]
    scl = jnp.where(math.dot(axis, direction) >= 0, size[..., 1], -size[..., 1])
    return pos + axis * scl[..., None]


# --- GJK: distance between two convex sets ---

_SUBSETS = [s for n in range(1, 5) for s in itertools.combinations(range(4), n)]


def _closest_on_simplex(w, used):
    """Barycentric weights of the point of the simplex (4 slots, `used` mask) closest to the origin."""
    lams, norms = [], []
    for sub in _SUBSETS:
        p0 = w[..., sub[0], :]
        rel = [w[..., i, :] - p0 for i in sub[1:]]
        if len(sub) == 1:
            mu, ok = [], jnp.ones(w.shape[:-2], bool)
        elif len(sub) == 2:
            (a,) = rel
            aa = math.dot(a, a)
            ok = aa > MINVAL2
            mu = [-math.dot(p0, a) / jnp.where(ok, aa, 1.0)]
        elif len(sub) == 3:
            a, b = rel
            aa, ab, bb = math.dot(a, a), math.dot(a, b), math.dot(b, b)
            ra, rb = -math.dot(p0, a), -math.dot(p0, b)
            det = aa * bb - ab * ab
            ok = det > 1e-12 * aa * bb
            inv = 1 / jnp.where(ok, det, 1.0)
            mu = [(bb * ra - ab * rb) * inv, (aa * rb - ab * ra) * inv]
        else:
            a, b, c = rel
            det = math.dot(a, math.cross(b, c))
            scale = math.safe_norm(a) * math.safe_norm(b) * math.safe_norm(c)
            ok = jnp.abs(det) > 1e-12 * scale
            inv = 1 / jnp.where(ok, det, 1.0)
            r = -p0
            mu = [
                math.dot(r, math.cross(b, c)) * inv,
                math.dot(a, math.cross(r, c)) * inv,
                math.dot(a, math.cross(b, r)) * inv,
            ]
        lam0 = 1 - sum(mu) if mu else jnp.ones(w.shape[:-2], w.dtype)
        lam_sub = [lam0, *mu]
        valid = ok & jnp.all(jnp.stack([used[..., i] for i in sub], -1), -1)
        valid = valid & jnp.all(jnp.stack([x >= 0 for x in lam_sub], -1), -1)
        lam = [jnp.zeros(w.shape[:-2], w.dtype)] * 4
        for i, x in zip(sub, lam_sub):
            lam[i] = x
        lam = jnp.stack(lam, -1)
        point = jnp.einsum("...i,...ij->...j", lam, w)
        nrm = math.dot(point, point)  # ties go to the first, smallest, sub-simplex
        lams.append(lam)
        norms.append(jnp.where(valid, nrm, jnp.inf))
    best = jnp.argmin(jnp.stack(norms, -1), -1)
    lam = jnp.take_along_axis(jnp.stack(lams, -2), best[..., None, None], -2)[..., 0, :]
    return lam, lam > 0


def gjk(sup1, sup2, x1, x2, iterations: int, tol, cutoff, discrete: bool = False):
    """Closest points of two convex sets (MuJoCo's gjk with distances).

    sup1, sup2: direction -> support point. x1, x2: initial points (the geoms' centres). Returns
    (dist, x1, x2, separated): the distance (0 when the sets overlap), the witness points, and
    whether GJK proved the sets farther apart than `cutoff`.
    """
    shape = x1.shape[:-1]
    dtype = x1.dtype
    eps = jnp.zeros_like(tol) if discrete else 0.5 * tol * tol
    min_norm = jnp.full_like(tol, math.MINVAL) if discrete else tol
    zeros = jnp.zeros(shape + (4, 3), dtype)
    state = dict(
        w=zeros,
        w1=zeros,
        w2=zeros,
        used=jnp.zeros(shape + (4,), bool),
        lam=jnp.zeros(shape + (4,), dtype),
        x=x1 - x2,
        prev=jnp.zeros(shape, dtype),
        done=jnp.zeros(shape, bool),
        sep=jnp.zeros(shape, bool),
    )

    def body(_, s):
        x = s["x"]
        xn = math.safe_norm(x)
        stop = s["done"] | (xn < min_norm) | (jnp.abs(s["prev"] - xn) < math.MINVAL)
        d = -x / jnp.maximum(xn, math.MINVAL)[..., None]
        p1, p2 = sup1(d), sup2(-d)
        v = p1 - p2
        stop = stop | (math.dot(x, x - v) < eps)
        lower = math.dot(x, v)
        sep = ~stop & (lower > 0) & (lower >= cutoff * xn)
        stop = stop | sep
        free = ~s["used"]
        slot = jnp.argmax(free, -1)
        put = jax.nn.one_hot(slot, 4, dtype=bool) & ~stop[..., None]
        w = jnp.where(put[..., None], v[..., None, :], s["w"])
        w1 = jnp.where(put[..., None], p1[..., None, :], s["w1"])
        w2 = jnp.where(put[..., None], p2[..., None, :], s["w2"])
        used = s["used"] | put
        lam, keep = _closest_on_simplex(w, used)
        newx = jnp.einsum("...i,...ij->...j", lam, w)
        upd = ~stop
        sel = lambda new, old: jnp.where(upd.reshape(upd.shape + (1,) * (new.ndim - upd.ndim)), new, old)  # noqa: E731
        full = jnp.sum(keep, -1) == 4
        return dict(
            w=sel(w, s["w"]),
            w1=sel(w1, s["w1"]),
            w2=sel(w2, s["w2"]),
            used=sel(keep, s["used"]),
            lam=sel(lam, s["lam"]),
            x=sel(newx, x),
            prev=sel(xn, s["prev"]),
            done=stop | (upd & full),
            sep=s["sep"] | sep,
        )

    s = jax.lax.fori_loop(0, iterations, body, state)
    started = jnp.any(s["used"], -1)
    x1 = jnp.where(started[..., None], jnp.einsum("...i,...ij->...j", s["lam"], s["w1"]), x1)
    x2 = jnp.where(started[..., None], jnp.einsum("...i,...ij->...j", s["lam"], s["w2"]), x2)
    inside = jnp.sum(s["used"], -1) == 4
    dist = jnp.where(inside, 0.0, math.safe_norm(s["x"]))
    return dist, x1, x2, s["sep"]


# --- intersection test and EPA: penetration of two overlapping convex sets ---

_TETRA_DIRS = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=np.float64) / np.sqrt(3)
_TETRA_FACES = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])  # face i omits vertex i


def _face_planes(v, faces, opposite=None):
    """Unit normals and origin distances of triangles; with `opposite`, normals turned away from it."""
    pa = _gather(v, faces[..., 0])
    pb = _gather(v, faces[..., 1])
    pc = _gather(v, faces[..., 2])
    n = math.cross(pb - pa, pc - pa)
    n2 = math.dot(n, n)
    if opposite is not None:
        flip = math.dot(n, opposite - pa) > 0
        n = jnp.where(flip[..., None], -n, n)
    else:
        flip = None
    ok = n2 > MINVAL2
    n = n / jnp.sqrt(jnp.where(ok, n2, 1.0))[..., None]
    return n, jnp.where(ok, math.dot(n, pa), MAX_LIMIT), flip


def _gather(v, idx):
    """v[..., idx, :]: a static index array, or one per batch entry."""
    if isinstance(idx, np.ndarray):
        return v[..., idx, :]
    idx = jnp.broadcast_to(idx, v.shape[:-2] + idx.shape[v.ndim - 2 :])
    flat = idx.reshape(v.shape[:-2] + (-1,))
    out = jnp.take_along_axis(v, flat[..., None], axis=-2)
    return out.reshape(idx.shape + (3,))


def intersect(sup, iterations: int, dtype):
    """A tetrahedron of support points containing the origin (MuJoCo's gjkIntersect), or separation.

    sup: direction (..., 3) -> (vertex, point on 1, point on 2). Returns (vertices, points on 1,
    points on 2, found): `found` is false when the sets do not overlap (or no tetrahedron was found).
    """
    dirs = jnp.asarray(_TETRA_DIRS, dtype)
    v, p1, p2 = sup(dirs)  # (..., 4, 3): broadcasting over the four directions
    state = dict(v=v, p1=p1, p2=p2, inside=jnp.zeros(v.shape[:-2], bool), out=jnp.zeros(v.shape[:-2], bool))

    def body(_, s):
        v = s["v"]
        n, dist, _ = _face_planes(v, _TETRA_FACES, opposite=v)  # vertex i is opposite face i
        worst = jnp.argmin(dist, -1)
        inside = jnp.min(dist, -1) > 0
        nw = jnp.take_along_axis(n, worst[..., None, None], -2)[..., 0, :]
        w, q1, q2 = (x[..., 0, :] for x in sup(nw[..., None, :]))
        out = math.dot(nw, w) < 0
        stop = s["inside"] | s["out"]
        upd = ~stop & ~inside & ~out
        put = (jax.nn.one_hot(worst, 4, dtype=bool) & upd[..., None])[..., None]
        return dict(
            v=jnp.where(put, w[..., None, :], v),
            p1=jnp.where(put, q1[..., None, :], s["p1"]),
            p2=jnp.where(put, q2[..., None, :], s["p2"]),
            inside=s["inside"] | (~stop & inside),
            out=s["out"] | (~stop & ~inside & out),
        )

    s = jax.lax.fori_loop(0, iterations, body, state)
    return s["v"], s["p1"], s["p2"], s["inside"]


def epa(sup, v0, p10, p20, iterations: int, tol):
    """Penetration depth and witness points from a tetrahedron containing the origin (MuJoCo's epa).

    Returns (depth, x1, x2, ok). The polytope lives in fixed arrays: 4 + iterations vertices,
    4 + 2 * iterations faces; a directed-edge matrix finds the horizon of each new support point.
    """
    batch = v0.shape[:-2]
    dtype = v0.dtype
    nv, nf = 4 + iterations, 4 + 2 * iterations
    pad = lambda x, n: jnp.concatenate([x, jnp.zeros(batch + (n - x.shape[-2],) + x.shape[-1:], x.dtype)], -2)  # noqa: E731
    verts, vert1, vert2 = pad(v0, nv), pad(p10, nv), pad(p20, nv)
    # the tetrahedron's faces, wound so that normals point outward
    _, _, flip = _face_planes(v0, _TETRA_FACES, opposite=v0)
    base = jnp.asarray(_TETRA_FACES, jnp.int32)
    base = jnp.where(flip[..., None], base[:, [0, 2, 1]], base)
    faces = jnp.concatenate([base, jnp.zeros(batch + (nf - 4, 3), base.dtype)], -2)
    valid = jnp.concatenate([jnp.ones(batch + (4,), bool), jnp.zeros(batch + (nf - 4,), bool)], -1)
    normal, dist, _ = _face_planes(verts, faces)
    state = dict(
        verts=verts,
        vert1=vert1,
        vert2=vert2,
        faces=faces,
        valid=valid,
        normal=normal,
        dist=dist,
        n=jnp.full(batch, 4, jnp.int32),
        upper=jnp.full(batch, MAX_LIMIT, dtype),
        face=jnp.zeros(batch, jnp.int32),
        done=jnp.zeros(batch, bool),
        fail=jnp.zeros(batch, bool),
    )
    eidx = np.arange(3)

    def body(k, s):
        d = jnp.where(s["valid"], s["dist"], jnp.inf)
        f = jnp.argmin(d, -1).astype(jnp.int32)
        lower = jnp.min(d, -1)
        stop_prev = (lower > s["upper"]) | ~jnp.isfinite(lower)  # keep the previous face
        nrm = jnp.take_along_axis(s["normal"], f[..., None, None], -2)[..., 0, :]
        w, q1, q2 = sup(nrm)
        upper = jnp.minimum(s["upper"], math.dot(nrm, w))
        converged = upper - lower < tol
        first_miss = (k == 0) & converged & (upper < lower - 1e-10)
        active = ~s["done"]
        face = jnp.where(active & ~stop_prev, f, s["face"])
        done = s["done"] | stop_prev | converged
        grow = active & ~stop_prev & ~converged
        # add the support point and replace the faces it sees by a fan over their horizon
        i = s["n"]
        onehot = (jnp.arange(nv, dtype=jnp.int32) == i[..., None])[..., None] & grow[..., None, None]
        verts = jnp.where(onehot, w[..., None, :], s["verts"])
        vert1 = jnp.where(onehot, q1[..., None, :], s["vert1"])
        vert2 = jnp.where(onehot, q2[..., None, :], s["vert2"])
        visible = s["valid"] & (math.dot(s["normal"], w[..., None, :]) - s["dist"] > 0)
        keep = s["valid"] & ~visible
        a = s["faces"]
        b = s["faces"][..., (eidx + 1) % 3]
        # edges of the kept faces, as a (from, to) matrix
        flat = lambda x: x.reshape(batch + (-1,))  # noqa: E731
        kept_edge = jnp.broadcast_to(keep[..., None], a.shape)
        mat = jnp.zeros(batch + (nv * nv,), bool)
        mat = _scatter_or(mat, flat(a * nv + b), flat(kept_edge))
        horizon = jnp.broadcast_to(visible[..., None], a.shape) & _gather_flat(mat, flat(b * nv + a)).reshape(a.shape)
        # place each horizon edge's new face in a free slot, in order
        free = ~keep
        slots = _ordered_slots(free, nf)
        hflat = flat(horizon)
        rank = jnp.cumsum(hflat, -1) - 1
        target = jnp.where(hflat, jnp.take_along_axis(slots, jnp.clip(rank, 0, nf - 1), -1), nf)
        newface = jnp.stack([flat(a), flat(b), jnp.broadcast_to(i[..., None], hflat.shape)], -1)
        faces = _scatter_rows(s["faces"], target, newface, grow)
        valid = _scatter_or(jnp.where(grow[..., None], keep, s["valid"]), target, hflat & grow[..., None])
        normal, dist, _ = _face_planes(verts, faces)
        sel = lambda new, old: jnp.where(grow.reshape(grow.shape + (1,) * (new.ndim - grow.ndim)), new, old)  # noqa: E731
        return dict(
            verts=verts,
            vert1=vert1,
            vert2=vert2,
            faces=faces,
            valid=valid,
            normal=sel(normal, s["normal"]),
            dist=sel(dist, s["dist"]),
            n=jnp.where(grow, i + 1, i),
            upper=jnp.where(active, upper, s["upper"]),
            face=face,
            done=done,
            fail=s["fail"] | (active & first_miss),
        )

    s = jax.lax.fori_loop(0, iterations, body, state)
    # witness points: the origin's projection onto the final face, in that face's barycentric coordinates
    tri = jnp.take_along_axis(s["faces"], s["face"][..., None, None], -2)[..., 0, :]
    nrm = jnp.take_along_axis(s["normal"], s["face"][..., None, None], -2)[..., 0, :]
    depth = jnp.take_along_axis(s["dist"], s["face"][..., None], -1)[..., 0]
    pts = _gather(s["verts"], tri)
    lam = _barycentric(pts, nrm * depth[..., None])
    x1 = jnp.einsum("...i,...ij->...j", lam, _gather(s["vert1"], tri))
    x2 = jnp.einsum("...i,...ij->...j", lam, _gather(s["vert2"], tri))
    return depth, x1, x2, ~s["fail"]


def _barycentric(p, x):
    """Barycentric coordinates of x (in the plane of triangle p) by sub-triangle areas."""
    a, b, c = p[..., 0, :], p[..., 1, :], p[..., 2, :]
    n = math.cross(b - a, c - a)
    nn = math.dot(n, n)
    inv = 1 / jnp.where(nn > MINVAL2, nn, 1.0)
    l1 = math.dot(math.cross(c - b, x - b), n) * inv
    l2 = math.dot(math.cross(a - c, x - c), n) * inv
    return jnp.stack([l1, l2, 1 - l1 - l2], -1)


def _scatter_or(arr, idx, val):
    """arr[..., idx] |= val over a batch (out-of-range indices dropped)."""
    fn = lambda a, i, v: a.at[i].max(v, mode="drop")  # noqa: E731
    for _ in range(arr.ndim - 1):
        fn = jax.vmap(fn)
    return fn(arr, idx, val)


def _gather_flat(arr, idx):
    fn = lambda a, i: a[i]  # noqa: E731
    for _ in range(arr.ndim - 1):
        fn = jax.vmap(fn)
    return fn(arr, idx)


def _scatter_rows(arr, idx, rows, enabled):
    fn = lambda a, i, r, e: a.at[jnp.where(e, i, a.shape[0])].set(r, mode="drop")  # noqa: E731
    for _ in range(arr.ndim - 2):
        fn = jax.vmap(fn)
    return fn(arr, idx, rows, enabled)


def _ordered_slots(free, n):
    """Indices of the true entries of `free`, in order, padded with n."""
    rank = jnp.cumsum(free, -1) - 1
    fn = lambda f, r: jnp.full(n, n, jnp.int32).at[jnp.where(f, r, n)].set(jnp.arange(n, dtype=jnp.int32), mode="drop")  # noqa: E731
    for _ in range(free.ndim - 1):
        fn = jax.vmap(fn)
    return fn(free, rank)


# --- the narrow-phase functions ---


def _rotate_about(point, rot, pos, mat):
    """A geom frame rotated by `rot` about a point (mju_rotateFrame)."""
    rel = point - pos
    return pos - (math.matvec(rot, rel) - rel), math.matmul(rot, mat)


def penetration(t1, t2, pos1, mat1, size1, pos2, mat2, size2, margin, iterations: int, tol):
    """One contact of two convex geoms (mjc_penetration with native CCD): (dist, pos, normal, found)."""

    def sup(d):
        p1 = support(t1, pos1, mat1, size1, d, margin)
        p2 = support(t2, pos2, mat2, size2, -d, margin)
        return p1 - p2, p1, p2

    # overlapping shapes (or no sphere/capsule): expanding polytope from a tetrahedron around the origin
    sup4 = lambda d: _sup_b(t1, t2, pos1, mat1, size1, pos2, mat2, size2, margin, d)  # noqa: E731
    v, q1, q2, found = intersect(sup4, iterations, pos1.dtype)
    depth, x1, x2, ok = epa(sup, v, q1, q2, iterations, tol)
    deep = (found & ok, -depth, x1, x2)
    cores = (SPHERE, CAPSULE)
    if t1 in cores or t2 in cores:
        fm1 = size1[..., 0] + 0.5 * margin if t1 in cores else jnp.zeros_like(margin)
        fm2 = size2[..., 0] + 0.5 * margin if t2 in cores else jnp.zeros_like(margin)
        c1 = (
            (lambda d: core_support(t1, pos1, mat1, size1, d))
            if t1 in cores
            else (lambda d: support(t1, pos1, mat1, size1, d, margin))
        )
        c2 = (
            (lambda d: core_support(t2, pos2, mat2, size2, d))
            if t2 in cores
            else (lambda d: support(t2, pos2, mat2, size2, d, margin))
        )
        dist, y1, y2, sep = gjk(c1, c2, pos1, pos2, iterations, tol, fm1 + fm2)
        n = math.normalize(y2 - y1)
        y1 = y1 + n * fm1[..., None]
        y2 = y2 - n * fm2[..., None]
        dist = dist - fm1 - fm2
        shallow = dist + fm1 + fm2 > tol
        hit = jnp.where(shallow, ~sep & (dist <= 0), deep[0])
        dist = jnp.where(shallow, dist, deep[1])
        x1 = jnp.where(shallow[..., None], y1, deep[2])
        x2 = jnp.where(shallow[..., None], y2, deep[3])
    else:
        hit, dist, x1, x2 = deep
    return margin + dist, 0.5 * (x1 + x2), math.normalize(x1 - x2), hit


def _sup_b(t1, t2, pos1, mat1, size1, pos2, mat2, size2, margin, d):
    """Support of the Minkowski difference for a batch of directions per pair (..., j, 3)."""
    b = lambda x: x[..., None, :]  # noqa: E731
    bm = lambda x: x[..., None, :, :]  # noqa: E731
    p1 = support(t1, b(pos1), bm(mat1), b(size1), d, margin[..., None])
    p2 = support(t2, b(pos2), bm(mat2), b(size2), -d, margin[..., None])
    return p1 - p2, p1, p2


def multiccd_types(t1: int, t2: int) -> bool:
    """Pairs that look for more contacts by perturbation (neither a sphere nor an ellipsoid)."""
    return not {t1, t2} & {SPHERE, ELLIPSOID}


def make_convex(t1: int, t2: int, multiccd: bool):
    """The narrow-phase function of a convex pair (mjc_Convex)."""

    def convex(g, pos1, mat1, size1, pos2, mat2, size2, margin, m):
        it, tol = m.opt.ccd_iterations, m.opt.ccd_tolerance
        dist, pos, normal, hit = penetration(t1, t2, pos1, mat1, size1, pos2, mat2, size2, margin, it, tol)
        if not multiccd:
            z = jnp.zeros_like(pos)
            return dist[:, None], pos[:, None], normal[:, None], z[:, None], hit[:, None]
        frame = _frame(normal)
        dtype = pos.dtype
        tolerance = 1e-3 * jnp.minimum(m.geom_rbound[g.geom1], m.geom_rbound[g.geom2])
        out = [(dist, pos, normal, hit)]
        for axis in (frame[:, 1], frame[:, 2]):
            for angle in (-1e-3, 1e-3):
                rot = math.quat_to_mat(math.axis_angle_to_quat(axis, jnp.full(dist.shape, angle, dtype)))
                q1, r1 = _rotate_about(pos, rot, pos1, mat1)
                q2, r2 = _rotate_about(pos, jnp.swapaxes(rot, -1, -2), pos2, mat2)
                _, p, n, h = penetration(t1, t2, q1, r1, size1, q2, r2, size2, margin, it, tol)
                distinct = h & hit
                for _, p_prev, _, h_prev in out:
                    distinct = distinct & ~(h_prev & (math.safe_norm(p - p_prev) <= tolerance))
                out.append((dist, p, n, distinct))
        st = lambda i: jnp.stack([o[i] for o in out], 1)  # noqa: E731
        return st(0), st(1), st(2), jnp.zeros_like(st(1)), st(3)

    convex.uses_model = True
    return convex


def _frame(normal):
    from hurtle.physics.collision import make_frame

    return make_frame(normal, jnp.zeros_like(normal))


def plane_convex(t2: int):
    """Plane against an ellipsoid: the deepest point (mjc_PlaneConvex without mesh vertices)."""

    def fn(g, pos1, mat1, size1, pos2, mat2, size2, margin):
        n = mat1[..., :, 2]
        s = support(t2, pos2, mat2, size2, -n, jnp.zeros_like(margin))
        dist = math.dot(n, s - pos1)
        pos = s - n * (0.5 * dist)[:, None]
        return dist[:, None], pos[:, None], n[:, None], jnp.zeros_like(pos)[:, None], (dist <= margin)[:, None]

    return fn


# MuJoCo 4's mjc_Convex pairs. Not registered yet: at MuJoCo's default ccd settings its EPA stops far
# from converged on curved shapes (normals differ by up to 0.4 rad between two correct EPAs) and its
# multiccd rules changed in MuJoCo 4 (perturbed contacts keep their own depth; none with a margin),
# so parity needs MuJoCo 4's exact iteration order. Until then these pairs are refused by name.
CONVEX_PAIRS = [
    (SPHERE, ELLIPSOID),
    (CAPSULE, ELLIPSOID),
    (CAPSULE, CYLINDER),
    (ELLIPSOID, ELLIPSOID),
    (ELLIPSOID, CYLINDER),
    (ELLIPSOID, BOX),
    (CYLINDER, CYLINDER),
    (CYLINDER, BOX),
]


@functools.cache
def narrow_table(multiccd: bool) -> dict:
    """(type1, type2) -> (function, slots) of the registered convex pairs, for a multiccd setting."""
    del multiccd  # no registered pair looks for more contacts yet
    return {(PLANE, ELLIPSOID): (plane_convex(ELLIPSOID), 1)}
