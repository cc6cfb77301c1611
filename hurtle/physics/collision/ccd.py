"""MuJoCo's native convex collider (`mjc_ccd`) as branch-free JAX, for one pair (vmap it).

The algorithm and its iteration order follow MuJoCo 4's: GJK with the signed-volume distance
sub-algorithm (Montanari et al. 2017), which keeps the simplex's vertices in order and drops those
with zero weight; a sphere or capsule first shrinks to its core (a point or a segment), and a contact
shallower than that core's radius is GJK's distance less the radii; a deeper one reruns GJK on the
full shapes until it finds a simplex around the origin, grows it into a polytope (a hexahedron around
a segment or triangle, or the tetrahedron itself) and expands that polytope (EPA) until this
iteration's upper bound on the depth is within `ccd_tolerance` of its lower bound.

EPA often stops short of convergence on curved shapes at MuJoCo's default `ccd_iterations`, and two
correct EPAs can then disagree by 1e-3 in the normal, so matching MuJoCo means matching its
sequence: the same initial polytope, the same face chosen each iteration (the closest among the
faces whose distance was between the bounds when they were made), the same faces deleted (those the
new support point sees) and the same stopping rules. Everything runs a fixed number of iterations
whose state freezes once finished; the polytope lives in fixed arrays (free face slots are reused,
while a count of attached faces keeps MuJoCo's memory limit of 6 faces per iteration).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import tracing

MINVAL = 1e-15
MINVAL2 = MINVAL * MINVAL
MAXVAL2 = 1e20


def _dot(a, b):
    return jnp.sum(a * b, -1)


def _cross(a, b):
    return jnp.cross(a, b)


def _det3(a, b, c):
    return _dot(a, _cross(b, c))


def _same_sign(a, b):
    return ((a > 0) & (b > 0)) | ((a < 0) & (b < 0))


def _safe(x):
    return jnp.where(x == 0, 1.0, x)


def _sqrt(x):
    """Square root with a finite (zero) gradient at and below zero."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def _norm(x):
    return _sqrt(jnp.sum(x * x, -1))


def _big(dtype):
    return jnp.finfo(dtype).max


# --- signed-volume distance sub-algorithm ---


def _project_origin_line(v1, v2):
    diff = v2 - v1
    return v2 - diff * (_dot(v2, diff) / _safe(_dot(diff, diff)))


def project_origin_plane(v1, v2, v3):
    """The origin projected on the plane through v1, v2, v3, and whether the plane is degenerate."""
    d21, d31, d32 = v2 - v1, v3 - v1, v3 - v2
    out, bad, done = jnp.zeros_like(v1), jnp.zeros((), bool), jnp.zeros((), bool)
    for n, p, last in ((_cross(d32, d21), v2, False), (_cross(d21, d31), v1, False), (_cross(d31, d32), v3, True)):
        nv, nn = _dot(n, p), _dot(n, n)
        res = n * (nv / _safe(nn))
        if last:
            take = ~done
        else:
            bad = bad | (~done & (nn == 0))
            done = done | (nn == 0)
            take = ~done & (nv != 0) & (nn > MINVAL)
        out = jnp.where(take, res, out)
        done = done | take
    return out, bad


def _s1d(s1, s2):
    p = _project_origin_line(s1, s2)
    mu = s1 - s2
    a = jnp.abs(mu)
    i1 = a[1] >= a[0]
    idx = jnp.where(a[2] >= jnp.where(i1, a[1], a[0]), 2, jnp.where(i1, 1, 0))
    pick = lambda v: v[idx]  # noqa: E731
    m = pick(mu)
    c1, c2 = pick(p) - pick(s2), pick(s1) - pick(p)
    same = _same_sign(m, c1) & _same_sign(m, c2)
    return jnp.stack([jnp.where(same, c1 / _safe(m), 0.0), jnp.where(same, c2 / _safe(m), 1.0)])


def _tri_minors(s1, s2, s3):
    """S2D's minors and the pair of axes kept (the projection with the largest area)."""
    m14 = s2[1] * s3[2] - s2[2] * s3[1] - s1[1] * s3[2] + s1[2] * s3[1] + s1[1] * s2[2] - s1[2] * s2[1]
    m24 = s2[0] * s3[2] - s2[2] * s3[0] - s1[0] * s3[2] + s1[2] * s3[0] + s1[0] * s2[2] - s1[2] * s2[0]
    m34 = s2[0] * s3[1] - s2[1] * s3[0] - s1[0] * s3[1] + s1[1] * s3[0] + s1[0] * s2[1] - s1[1] * s2[0]
    a1, a2, a3 = jnp.abs(m14), jnp.abs(m24), jnp.abs(m34)
    first = (a1 >= a2) & (a1 >= a3)
    second = ~first & (a2 >= a3)
    m = jnp.where(first, m14, jnp.where(second, m24, m34))
    x = jnp.where(first, 1, 0)
    y = jnp.where(first | second, 2, 1)
    return m, x, y


def _tri_cofactors(s1, s2, s3, p, x, y):
    px, py = p[x], p[y]
    ax, ay, bx, by, cx, cy = s1[x], s1[y], s2[x], s2[y], s3[x], s3[y]
    c31 = px * by + py * cx + bx * cy - px * cy - py * bx - cx * by
    c32 = px * cy + py * ax + cx * ay - px * ay - py * cx - ax * cy
    c33 = px * ay + py * bx + ax * by - px * by - py * ax - bx * ay
    return c31, c32, c33


def tri_affine(v1, v2, v3, p):
    """Affine coordinates of p (in the triangle's plane) on the triangle (triAffineCoord)."""
    m, x, y = _tri_minors(v1, v2, v3)
    c = _tri_cofactors(v1, v2, v3, p, x, y)
    return jnp.stack(c) / _safe(m)


def _pick_closest(lams, pts, comps):
    """MuJoCo's scan over sub-simplices: the first closest among those whose sign test failed (zeros if none).

    lams (k, n): each candidate's weights; pts (k, 3): its closest point; comps (k,): its sign test."""
    d = jnp.where(comps, jnp.inf, _dot(pts, pts))
    i = jnp.argmin(d)
    return jnp.where(jnp.all(comps), jnp.zeros_like(lams[0]), lams[i])


def _spread(lam, rest):
    """Weights of sub-simplices (k, n - 1) over the vertices they keep (rest: (k, n - 1)) -> (k, n), zeros
    at the dropped vertex."""
    k, n = rest.shape[0], rest.shape[1] + 1
    where = np.full((k, n), -1)
    for i in range(k):
        where[i, rest[i]] = np.arange(n - 1)
    return jnp.where(where >= 0, lam[np.arange(k)[:, None], np.maximum(where, 0)], 0.0)


_EDGES = np.array([[1, 2], [0, 2], [0, 1]])  # the edges of a triangle, opposite each vertex
_TRIS = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]])  # the faces of a tetrahedron, likewise


def _s2d_all(s1, s2, s3):
    """S2D's weights (3,) and, for reuse, those of its edge (s1, s2) (2,)."""
    p, bad = project_origin_plane(s1, s2, s3)
    m, x, y = _tri_minors(s1, s2, s3)
    c = _tri_cofactors(s1, s2, s3, p, x, y)
    comps = jnp.stack([_same_sign(m, ci) for ci in c])
    tri = jnp.stack([s1, s2, s3])
    a, b = tri[_EDGES[:, 0]], tri[_EDGES[:, 1]]
    lam_e = jax.vmap(_s1d)(a, b)
    pts = lam_e[:, :1] * a + lam_e[:, 1:] * b
    full = _spread(lam_e, _EDGES)
    lam = jnp.where(jnp.all(comps), jnp.stack(c) / _safe(m), _pick_closest(full, pts, comps))
    return jnp.where(bad, full[2], lam), lam_e[2]


def _subdistance(n, w):
    """Barycentric weights (4,) of the point of the n-simplex w[:n] closest to the origin.

    S3D's four faces run as one batched S2D (each with its edges as one batched S1D); the triangle
    (w0, w1, w2) and the segment (w0, w1) are among them, so smaller simplices reuse them."""
    s1, s2, s3, s4 = w[0], w[1], w[2], w[3]
    c = jnp.stack([-_det3(s2, s3, s4), _det3(s1, s3, s4), -_det3(s1, s2, s4), _det3(s1, s2, s3)])
    m = c[0] + c[1] + c[2] + c[3]
    comps = jax.vmap(_same_sign, (None, 0))(m, c)
    tris = w[_TRIS]
    lam_f, lam_e = jax.vmap(_s2d_all)(tris[:, 0], tris[:, 1], tris[:, 2])
    pts = lam_f[:, 0:1] * tris[:, 0] + lam_f[:, 1:2] * tris[:, 1] + lam_f[:, 2:3] * tris[:, 2]
    four = jnp.where(jnp.all(comps), c / _safe(m), _pick_closest(_spread(lam_f, _TRIS), pts, comps))
    one = jnp.zeros(4, w.dtype).at[0].set(1.0)
    two = jnp.concatenate([lam_e[3], jnp.zeros(2, w.dtype)])
    three = jnp.concatenate([lam_f[3], jnp.zeros(1, w.dtype)])
    return jnp.where(n == 4, four, jnp.where(n == 3, three, jnp.where(n == 2, two, one)))


# --- GJK ---


def _with_index(sup):
    """A support function returning (v, p1, p2, index): index (2,) int32 names each point's feature
    (a cylinder's cap, a box's vertex; -1 where a shape has none). One returning (v, p1, p2) gets -1s."""

    def f(d):
        out = sup(d)
        if len(out) == 4:
            return out
        return (*out, jnp.full(2, -1, jnp.int32))

    return f


def _loop(iterations: int, body, s, fixed: bool):
    """`body(k, s)` for k < iterations: all of them (`fori_loop`, reverse-differentiable) or, with
    fixed=False, until s["done"] (a `while_loop`; batched, until every lane is done). A done state is a
    fixed point of every body here, so both give the same result."""
    if fixed:
        return tracing.fori_loop(0, iterations, body, s)

    def cond(c):
        return (c[0] < iterations) & ~c[1]["done"]

    return tracing.while_loop(cond, lambda c: (c[0] + 1, body(c[0], c[1])), (jnp.zeros((), jnp.int32), s))[1]


def _tuned(w, n, xk, xn, discrete):
    """GJK's search direction (negated) and x_k along it. For polytopes (discrete mode) MuJoCo 4 takes
    it perpendicular to the simplex's edge, or along its triangle's normal, at every iteration, not
    only near contact (as its contacts on height fields show at any scale: a threshold on |x_k| up to
    1e-1, or 10 on a field 100 times larger, leaves contacts that MuJoCo gives steadily unmatched),
    which keeps the rounding in x_k out of the direction. This matters where the simplex holds an
    edge of a height field prism's side (two vertices differing in z alone): the triangle's normal
    has an exactly zero z, so the prism's support takes its top half, as MuJoCo's does, where x_k's
    rounding-level z would pick the top or the bottom by chance."""
    neg = xk / _safe(xn)
    edge = w[1] - w[0]
    e2 = _dot(edge, edge)
    on_edge = neg - _dot(neg, edge) / jnp.where(e2 > MINVAL * MINVAL, e2, 1.0) * edge
    en = _norm(on_edge)
    normal = _cross(w[1] - w[0], w[2] - w[0])
    nn = _norm(normal)
    tune = discrete
    use2 = tune & (n == 2) & (e2 > MINVAL * MINVAL) & (en > MINVAL)
    use3 = tune & (n == 3) & (nn > MINVAL)
    neg = jnp.where(use2, on_edge / _safe(en), neg)
    neg = jnp.where(use3, jnp.sign(_dot(neg, normal)) * normal / _safe(nn), neg)
    return neg, jnp.where(use2 | use3, xn * neg, xk)


def gjk(sup, x1, x2, iterations: int, tol, cutoff, fixed: bool = True, discrete=False):
    """MuJoCo's gjk: closest points of two convex sets, or a simplex around the origin.

    sup: unit direction -> (vertex of the Minkowski difference, point on 1, point on 2[, feature
    indices (2,)]). x1, x2: the initial points. cutoff > 0 asks for distances (separated once proven
    farther than cutoff); cutoff == 0 only asks whether the sets overlap. Returns a dict: dist (0
    inside; the largest float when separated early), x1, x2, the simplex (w, w1, w2: (4, 3); wi: (4, 2)
    feature indices) and its size n, separated. discrete (boxes, meshes and height field prisms
    without a margin: GJK ends in finitely many steps) drops the tolerances to MuJoCo's floors.
    """
    sup = _with_index(sup)
    dtype = x1.dtype
    big = _big(dtype)
    eps = jnp.where(discrete, 0.0, 0.5 * tol * tol)
    min_norm = jnp.where(discrete, MINVAL, tol)
    z = jnp.zeros((4, 3), dtype)
    xk = x1 - x2
    s = dict(
        w=z,
        w1=z,
        w2=z,
        wi=jnp.full((4, 2), -1, jnp.int32),
        n=jnp.zeros((), jnp.int32),
        lam=jnp.zeros(4, dtype).at[0].set(1.0),
        xk=xk,
        xn=_norm(xk),
        xprev=jnp.zeros((), dtype),
        done=jnp.zeros((), bool),
        early=jnp.zeros((), bool),  # returned before the final checks (separated or degenerate)
    )
    get_dist = cutoff > 0

    def body(k, s):
        xk, xn, n = s["xk"], s["xn"], s["n"]
        stop = s["done"] | (xn < min_norm) | (jnp.abs(s["xprev"] - xn) < MINVAL)
        neg, xdir = _tuned(s["w"], n, xk, xn, discrete)
        v, p1, p2, ix = sup(-neg)
        stop = stop | (_dot(xdir, xdir - v) < eps)
        lower = _dot(xdir, v)
        sep = jnp.where(get_dist, (lower > 0) & (lower >= cutoff * xn), lower > 0)
        sep = ~stop & sep
        go = ~stop & ~sep
        put = (jnp.arange(4, dtype=jnp.int32) == n)[:, None]
        w = jnp.where(put, v, s["w"])
        w1 = jnp.where(put, p1, s["w1"])
        w2 = jnp.where(put, p2, s["w2"])
        wi = jnp.where(put, ix, s["wi"])
        lam = _subdistance(n + 1, w)
        keep = (lam != 0) & (jnp.arange(4, dtype=jnp.int32) <= n)
        rank = jnp.cumsum(keep, dtype=jnp.int32) - 1
        move = (keep[:, None] & (rank[:, None] == jnp.arange(4, dtype=jnp.int32)[None, :])).astype(dtype)  # (old, new)
        w, w1, w2 = (jnp.einsum("on,oc->nc", move, a) for a in (w, w1, w2))
        wi = jnp.sum(move.astype(jnp.int32)[:, :, None] * wi[:, None, :], 0, dtype=jnp.int32)
        lam = jnp.einsum("on,o->n", move, jnp.where(keep, lam, 0.0))
        n_new = jnp.sum(keep).astype(jnp.int32)
        degenerate = go & (n_new < 1)
        go = go & ~degenerate
        xk_new = jnp.einsum("n,nc->c", lam, w)
        g = lambda new, old: jnp.where(go, new, old)  # noqa: E731
        return dict(
            w=g(w, s["w"]),
            w1=g(w1, s["w1"]),
            w2=g(w2, s["w2"]),
            wi=g(wi, s["wi"]),
            n=g(n_new, n),
            lam=g(lam, s["lam"]),
            xk=g(xk_new, xk),
            xn=g(_norm(xk_new), xn),
            xprev=g(jnp.where(k == 0, 0.0, xn), s["xprev"]),
            done=s["done"] | stop | sep | degenerate | (go & (n_new == 4)),
            early=s["early"] | sep | degenerate,
        )

    s = _loop(iterations, body, s, fixed)
    n, lam, xk, xn = s["n"], s["lam"], s["xk"], s["xn"]
    started = n > 0
    y1 = jnp.where(started, jnp.einsum("n,nc->c", lam, s["w1"]), x1)
    y2 = jnp.where(started, jnp.einsum("n,nc->c", lam, s["w2"]), x2)
    v = sup(-xk / _safe(xn))[0]
    separated = s["early"] | (_dot(xk, v) > 0)
    dist = jnp.where(s["early"], big, jnp.where((n == 4) & ~separated, 0.0, xn))
    n = jnp.where(s["early"], 0, n)
    return dict(dist=dist, x1=y1, x2=y2, w=s["w"], w1=s["w1"], w2=s["w2"], wi=s["wi"], n=n, separated=separated)


# --- the initial polytope ---


def _attach(verts, center, a, b, c):
    """A face (a, b, c) of the polytope: its origin projection (pointing outward) and squared distance."""
    va, vb, vc = verts[a], verts[b], verts[c]
    v, bad = project_origin_plane(vc, vb, va)
    v = jnp.where(_dot(v, va - center) < 0, -v, v)
    d2 = jnp.where(bad, 0.0, _dot(v, v))
    return v, d2


def _same_side(p0, p1, p2, p3):
    n = _cross(p1 - p0, p2 - p0)
    return _same_sign(_dot(n, p3 - p0), _dot(n, -p0))


def _test_tetra(p0, p1, p2, p3):
    return (
        _same_side(p0, p1, p2, p3)
        & _same_side(p1, p2, p3, p0)
        & _same_side(p2, p3, p0, p1)
        & _same_side(p3, p0, p1, p2)
    )


def _rot120(axis):
    u = axis / _safe(_norm(axis))
    s, c = 0.86602540378, -0.5
    u1, u2, u3 = u[0], u[1], u[2]
    return jnp.array(
        [
            [c + u1 * u1 * (1 - c), u1 * u2 * (1 - c) - u3 * s, u1 * u3 * (1 - c) + u2 * s],
            [u2 * u1 * (1 - c) + u3 * s, c + u2 * u2 * (1 - c), u2 * u3 * (1 - c) - u1 * s],
            [u1 * u3 * (1 - c) - u2 * s, u2 * u3 * (1 - c) + u1 * s, c + u3 * u3 * (1 - c)],
        ]
    )


def _epa_dir(d):
    dn = _norm(d)
    return jnp.where(dn > MINVAL, d / _safe(dn), jnp.array([1.0, 0.0, 0.0], d.dtype))


def _faces(verts, center, tris):
    tris = jnp.asarray(tris)
    return jax.vmap(lambda t: _attach(verts, center, t[0], t[1], t[2]))(tris)


def _first_bad(d2, limit):
    """Index of the first face closer than limit (MuJoCo falls back to that triangle), or -1."""
    bad = d2 < limit
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1)


_P2_TRIS = np.array([[0, 2, 3], [0, 4, 2], [0, 3, 4], [1, 3, 2], [1, 2, 4], [1, 4, 3]])
_P3_TRIS = np.array([[4, 0, 1], [4, 2, 0], [4, 1, 2], [3, 1, 0], [3, 0, 2], [3, 2, 1]])
_P4_TRIS = np.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [3, 2, 1]])


def _polytope3(sup, t, t1, t2, ti):
    """Hexahedron around a triangle: its two apexes along the triangle's normal (polytope3)."""
    center = (t[0] + t[1] + t[2]) / 3
    n = _cross(t[1] - t[0], t[2] - t[0])
    nn = _norm(n)
    apex = jax.vmap(sup)(jax.vmap(_epa_dir)(jnp.stack([-n, n])))  # v5, v4
    verts, vert1, vert2, verti = (jnp.concatenate([x, y]) for x, y in zip((t, t1, t2, ti), apex))
    v5, v4 = apex[0][0], apex[0][1]

    def on_tri(p):
        lam = tri_affine(t[0], t[1], t[2], p)
        pr = lam[0] * t[0] + lam[1] * t[1] + lam[2] * t[2]
        return jnp.all(lam >= 0) & (_norm(pr - p) < MINVAL)

    fv, fd2 = _faces(verts, center, _P3_TRIS)
    ok = (nn >= MINVAL) & ~jnp.any(jax.vmap(on_tri)(jnp.stack([v4, v5]))) & jnp.all(fd2 >= MINVAL2)
    return verts, vert1, vert2, verti, center, fv, fd2, ok


def polytope(sup, g):
    """EPA's first polytope from GJK's simplex (polytope2/3/4 with their fallbacks to a triangle).

    Returns (verts, vert1, vert2) (5, 3), their feature indices (5, 2), center, faces (6, 3) int, face
    projections (6, 3), squared distances (6,), face count (4 or 6), and ok.
    """
    sup = _with_index(sup)
    w, w1, w2, wi, n = g["w"], g["w1"], g["w2"], g["wi"], g["n"]
    # polytope2: a segment; three more points around it, 120 degrees apart
    diff = w[1] - w[0]
    e = jax.nn.one_hot(jnp.argmin(jnp.abs(diff)), 3, dtype=w.dtype)
    d1 = _cross(e, diff)
    rot = _rot120(diff)
    d2 = rot @ d1
    d3 = rot @ d2
    extra = jax.vmap(sup)(jax.vmap(_epa_dir)(jnp.stack([d1, d2, d3])))
    p2v, p2v1, p2v2, p2vi = (jnp.concatenate([x[:2], y]) for x, y in zip((w, w1, w2, wi), extra))
    p2c = 0.5 * (w[0] + w[1])
    p2fv, p2fd2 = _faces(p2v, p2c, _P2_TRIS)
    p2bad = _first_bad(p2fd2, MINVAL2)
    d12, d13, d14, d15 = (p2v[i] - p2v[0] for i in (1, 2, 3, 4))
    vols = jnp.stack([_det3(d13, d14, d12), _det3(d14, d15, d12), _det3(d15, d13, d12)])
    p2ok = jnp.all(vols >= 0) | jnp.all(vols <= 0)
    # polytope4: the tetrahedron itself
    p4c = 0.25 * (w[0] + w[1] + w[2] + w[3])
    p4fv, p4fd2 = _faces(w, p4c, _P4_TRIS)
    p4bad = _first_bad(p4fd2, MINVAL2)
    p4ok = _test_tetra(w[0], w[1], w[2], w[3])
    # the triangle polytope3 starts from: GJK's, or the face polytope2/polytope4 fell back to
    p2tri = jnp.asarray(_P2_TRIS)[jnp.maximum(p2bad, 0)]
    p4tri = jnp.asarray(_P4_TRIS)[jnp.maximum(p4bad, 0)]
    from2 = (n == 2) & (p2bad >= 0)
    from4 = (n == 4) & (p4bad >= 0)
    tri = jnp.where(from2, p2tri, jnp.where(from4, p4tri, jnp.arange(3)))
    src = lambda a2, a: jnp.where(from2, a2[tri], a[tri])  # noqa: E731
    t, t1, t2, ti = src(p2v, w), src(p2v1, w1), src(p2v2, w2), src(p2vi, wi)
    p3v, p3v1, p3v2, p3vi, p3c, p3fv, p3fd2, p3ok = _polytope3(sup, t, t1, t2, ti)
    use3 = (n == 3) | from2 | from4
    use2 = ~use3 & (n == 2)
    pad = lambda x: jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)])  # noqa: E731
    pick = lambda a3, a2, a4: jnp.where(use3, a3, jnp.where(use2, a2, a4))  # noqa: E731
    verts = pick(p3v, p2v, pad(w))
    vert1 = pick(p3v1, p2v1, pad(w1))
    vert2 = pick(p3v2, p2v2, pad(w2))
    verti = pick(p3vi, p2vi, pad(wi))
    center = pick(p3c, p2c, p4c)
    faces = pick(jnp.asarray(_P3_TRIS), jnp.asarray(_P2_TRIS), jnp.asarray(np.concatenate([_P4_TRIS, [[0, 0, 0]] * 2])))
    fv = pick(p3fv, p2fv, pad(pad(p4fv)))
    fd2 = pick(p3fd2, p2fd2, pad(pad(p4fd2)))
    nface = jnp.where(use3 | use2, 6, 4)
    ok = jnp.where(use3, p3ok, jnp.where(use2, p2ok, p4ok))
    return verts, vert1, vert2, verti, center, faces, fv, fd2, nface, ok


# --- EPA ---


def epa(sup, g, iterations: int, tol, fixed: bool = True, discrete=False, needed=True):
    """Penetration depth and witness points from GJK's simplex around the origin (MuJoCo's epa).

    needed: False where the caller discards the result (GJK found no overlap): such a lane starts
    done, so a batch in which no lane needs EPA runs none of its iterations.

    discrete (polytopes without a margin): converged at MuJoCo's floor tolerance, or when a support
    point repeats an earlier vertex's features (a height field prism has none: then the other shape's
    feature alone decides, as in MuJoCo).

    Returns (dist, x1, x2, found, face): dist = -depth; face the final face's (idx (3, 2), p1 (3, 3),
    p2 (3, 3)): its vertices' feature indices and points on each shape (for the multi-contact search).
    """
    sup = _with_index(sup)
    dtype = g["w"].dtype
    big = _big(dtype)
    verts0, vert10, vert20, verti0, center, faces0, fv0, fd20, nface0, ok = polytope(sup, g)
    kmax = min(iterations, 1000)
    tol = jnp.where(discrete, MINVAL, tol)
    nv = 5 + kmax
    nf = 2 * nv
    padv = lambda x: jnp.concatenate([x, jnp.zeros((nv - 5, 3), dtype)])  # noqa: E731
    padf = lambda x, fill=0: jnp.concatenate([x, jnp.full((nf - 6,) + x.shape[1:], fill, x.dtype)])  # noqa: E731
    alive0 = jnp.arange(nf, dtype=jnp.int32) < nface0
    s = dict(
        verts=padv(verts0),
        vert1=padv(vert10),
        vert2=padv(vert20),
        verti=jnp.concatenate([verti0, jnp.full((nv - 5, 2), -1, jnp.int32)]),
        nverts=jnp.where(nface0 == 6, 5, 4).astype(jnp.int32),
        faces=padf(faces0.astype(jnp.int32)),
        fv=padf(fv0),
        fd2=padf(fd20),
        alive=alive0,
        inmap=alive0,
        nattached=nface0.astype(jnp.int32),
        upper=big.astype(dtype),
        upper2=big.astype(dtype),
        has_face=jnp.zeros((), bool),
        face=jnp.zeros(3, jnp.int32),
        face_v=jnp.zeros(3, dtype),
        face_d2=jnp.zeros((), dtype),
        done=~ok | ~needed,
    )
    ar = jnp.arange(nf, dtype=jnp.int32)

    def body(k, s):
        active = ~s["done"]
        cand = s["alive"] & s["inmap"]
        d2m = jnp.where(cand, s["fd2"], big)
        f = jnp.argmin(d2m).astype(jnp.int32)
        lower2 = d2m[f]
        none = ~jnp.any(cand) | (lower2 > s["upper2"])
        zero = ~none & (lower2 <= 0)
        pick = active & ~none
        face, face_v, face_d2 = s["faces"][f], s["fv"][f], s["fd2"][f]
        lower = _sqrt(lower2)
        w, w1, w2, ix = sup(_epa_dir(face_v))
        wi = s["nverts"]
        upper_k = _dot(face_v, w) / _safe(lower)
        better = upper_k < s["upper"]
        upper = jnp.where(better, upper_k, s["upper"])
        upper2 = jnp.where(better, upper * upper, s["upper2"])
        converged = ~zero & (upper_k - lower < tol)
        reject = converged & (k == 0) & (upper < lower - 1e-10)
        seen = jnp.all(s["verti"] == ix, -1) & (jnp.arange(nv, dtype=jnp.int32) < wi)
        repeated = ~zero & ~converged & discrete & jnp.any(seen)
        grow = pick & ~zero & ~converged & ~repeated
        # the faces w sees (and the chosen one) go; the edges they share with the rest are the horizon
        visible = s["alive"] & ((_dot(s["fv"], w) - s["fd2"] > MINVAL) | (ar == f))
        keep = s["alive"] & ~visible
        a = s["faces"]
        b = a[:, (1, 2, 0)]
        edge_mat = jnp.zeros((nv, nv), bool).at[a, b].max(jnp.broadcast_to(keep[:, None], a.shape))
        horizon = visible[:, None] & edge_mat[b, a]
        nedges = jnp.sum(horizon).astype(jnp.int32)
        broken = grow & (nedges < 3)
        # the horizon is a cycle through the polytope's vertices: at most nv edges (more only on a
        # broken polytope, where EPA stops as when its storage is full)
        full = grow & ~broken & ((nedges > 6 * iterations - s["nattached"]) | (nedges > nv))
        attach = grow & ~broken & ~full
        # the horizon's edges in order, and the new faces (w, a, b) on them in the first free slots
        hf = horizon.reshape(-1)
        rank = jnp.where(hf, jnp.cumsum(hf, dtype=jnp.int32) - 1, nv)
        edge = jnp.zeros(nv, jnp.int32).at[rank].set(jnp.arange(hf.size, dtype=jnp.int32), mode="drop")
        made_e = jnp.arange(nv, dtype=jnp.int32) < nedges
        free = ~keep
        frank = jnp.cumsum(free, dtype=jnp.int32) - 1
        slot_of_rank = jnp.full(nf, nf, jnp.int32).at[jnp.where(free, frank, nf)].set(ar, mode="drop")
        target = jnp.where(made_e, slot_of_rank[:nv], nf)
        new = jnp.stack([jnp.broadcast_to(wi, (nv,)), a.reshape(-1)[edge], b.reshape(-1)[edge]], -1)
        verts = s["verts"].at[wi].set(w)
        nfv, nfd2 = jax.vmap(lambda t: _attach(verts, center, t[0], t[1], t[2]))(new)
        zero_new = jnp.any(made_e & (nfd2 == 0))
        inmap_new = (nfd2 >= lower2) & (nfd2 <= upper2)
        faces = s["faces"].at[target].set(new, mode="drop")
        fv = s["fv"].at[target].set(nfv, mode="drop")
        fd2 = s["fd2"].at[target].set(nfd2, mode="drop")
        made = jnp.zeros(nf, bool).at[target].set(made_e, mode="drop")
        inmap = jnp.where(made, jnp.zeros(nf, bool).at[target].set(inmap_new, mode="drop"), s["inmap"])
        alive = keep | made
        bad = attach & zero_new
        empty = attach & ~jnp.any(alive & inmap)
        upd = lambda new, old: jnp.where(attach, new, old)  # noqa: E731
        on_vertex = pick & ~zero
        return dict(
            verts=jnp.where(on_vertex, verts, s["verts"]),
            vert1=jnp.where(on_vertex, s["vert1"].at[wi].set(w1), s["vert1"]),
            vert2=jnp.where(on_vertex, s["vert2"].at[wi].set(w2), s["vert2"]),
            verti=jnp.where(on_vertex, s["verti"].at[wi].set(ix), s["verti"]),
            nverts=jnp.where(on_vertex, wi + 1, wi),
            faces=upd(faces, s["faces"]),
            fv=upd(fv, s["fv"]),
            fd2=upd(fd2, s["fd2"]),
            alive=upd(alive, s["alive"]),
            inmap=upd(inmap, s["inmap"]),
            nattached=upd(s["nattached"] + nedges, s["nattached"]),
            upper=jnp.where(pick & ~zero, upper, s["upper"]),
            upper2=jnp.where(pick & ~zero, upper2, s["upper2"]),
            has_face=jnp.where(pick, ~(reject | broken | bad), s["has_face"]),
            face=jnp.where(pick, face, s["face"]),
            face_v=jnp.where(pick, face_v, s["face_v"]),
            face_d2=jnp.where(pick, face_d2, s["face_d2"]),
            done=s["done"] | (active & (none | zero | converged | repeated | broken | full | bad | empty)),
        )

    s = _loop(kmax, body, s, fixed)
    tri = s["face"]
    lam = tri_affine(s["verts"][tri[0]], s["verts"][tri[1]], s["verts"][tri[2]], s["face_v"])
    x1 = lam @ s["vert1"][tri]
    x2 = lam @ s["vert2"][tri]
    found = ok & s["has_face"]
    face = dict(idx=s["verti"][tri], p1=s["vert1"][tri], p2=s["vert2"][tri])
    return -_sqrt(s["face_d2"]), x1, x2, found, face


def _simplex_face(g):
    """GJK's simplex as a (possibly degenerate) face: vertices 0, 1, 2, repeating 0 where it has fewer."""
    n = g["n"]
    tri = jnp.stack([0, jnp.where(n > 1, 1, 0), jnp.where(n > 2, 2, 0)]).astype(jnp.int32)
    return dict(idx=g["wi"][tri], p1=g["w1"][tri], p2=g["w2"][tri])


def restore_radii(dist, x1, x2, fm1, fm2):
    """A contact between cores (or bare shapes) `dist` apart at x1, x2 as one between the full shapes:
    the radii (and half-margins) fm1, fm2 each core lost taken off the distance and put back on the
    witness points along the line between them."""
    n = x2 - x1
    n = n / _safe(_norm(n))
    return dist - (fm1 + fm2), x1 + fm1 * n, x2 - fm2 * n


def ccd(sup_full, sup_core, fm1, fm2, c1, c2, iterations: int, tol, fixed: bool = True, discrete=(False, False)):
    """mjc_ccd for one pair: (dist, x1, x2, found, face) with dist < 0 for a contact.

    sup_full: direction -> Minkowski support of the two (margin-inflated) shapes; sup_core: the same
    with spheres and capsules shrunk to their cores (None when neither pair member is one), fm1, fm2
    the radius (plus half the margin) each core lost; c1, c2 the geoms' centres. face: the features
    the contact was found on (EPA's last face, or GJK's simplex for a shallow contact) as epa
    returns it, plus ok (whether there is one), for MuJoCo's multi-contact search. discrete: whether
    the full and the core shapes are both polytopes without a margin (MuJoCo's discreteGeoms).
    """
    if sup_core is None:
        deep_g = gjk(sup_full, c1, c2, iterations, tol, jnp.zeros_like(tol), fixed, discrete[0])
    else:  # both GJKs as one, batched over the two shapes (one loop to compile)
        full, core = _with_index(sup_full), _with_index(sup_core)

        def run(is_full, cutoff):
            sup = lambda d: jax.tree.map(functools.partial(jnp.where, is_full), full(d), core(d))  # noqa: E731
            return gjk(sup, c1, c2, iterations, tol, cutoff, fixed, jnp.where(is_full, *discrete))

        zero = jnp.zeros_like(tol)  # the full GJK only asks whether they overlap; the core one, distances
        both = jax.vmap(run)(jnp.array([True, False]), jnp.stack([zero, zero + (fm1 + fm2)]))
        deep_g, g = (jax.tree.map(lambda x, i=i: x[i], both) for i in (0, 1))
    penetrating = (deep_g["dist"] <= tol) & (deep_g["n"] > 1) & ~deep_g["separated"]
    # EPA only where its result is used: a batch in which no lane needs it runs none of its iterations
    shallow = jnp.zeros((), bool) if sup_core is None else (fm1 + fm2 > 0) & (g["dist"] > tol)
    dist, x1, x2, found, face = epa(sup_full, deep_g, iterations, tol, fixed, discrete[0], penetrating & ~shallow)
    found = penetrating & found & (dist < 0)
    face["ok"] = found
    if sup_core is None:
        return dist, x1, x2, found, face
    sdist, y1, y2 = restore_radii(g["dist"], g["x1"], g["x2"], fm1, fm2)
    sfound = (g["dist"] < _big(sdist.dtype)) & (sdist < 0)
    pick = lambda a, b: jnp.where(shallow, a, b)  # noqa: E731
    sface = _simplex_face(g)
    sface["ok"] = sfound & (g["n"] > 0)
    face = jax.tree.map(pick, sface, face)
    return pick(sdist, dist), pick(y1, x1), pick(y2, x2), pick(sfound, found), face
