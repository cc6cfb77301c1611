"""MuJoCo 4's multi-contact search for convex pairs with faces or edges (multiccd), for one pair.

With multiccd on, a contact MuJoCo's convex collider finds between a capsule, cylinder, box or mesh
and a shape with faces is turned into up to four: the features the contact lies on are read from the
vertices of EPA's last face (or GJK's simplex for a shallow contact), each labelled with the shape
feature that produced it (a cylinder's cap, a box's vertex). When a face of one shape faces a face of
the other within about 0.089 rad, or an edge (a capsule's segment, a cylinder's side line) lies in a face
within that angle, one is clipped against the other (Sutherland-Hodgman) and the clipped vertices
closer than the margin to the clipping face become the contacts: the two farthest apart for an edge,
a quadrilateral of largest area for a polygon with more than four. A cylinder's cap is a 16-gon.

Where a cap lies in a face the clipped polygon is (an affine image of) that 16-gon, on which rotated quadrilaterals
tie in area to the last bits: which one MuJoCo's search keeps is decided by rounding. The arithmetic here follows
MuJoCo 4.0.1's operation for operation (read from its libmujoco.so: the function's tables and instructions) so that
it rounds alike: the cap's vertices from MuJoCo's 15-digit cosine and sine tables, each `mat @ local + pos`; each
clipping plane's normal normalized as mju_normalize3 does (times the reciprocal of its norm); a polygon edge cut
where its ends' signed distances d1, d2 to the plane give t = d1 / (d1 - d2), kept within [0, 1] exactly; a vertex
inside when its distance exceeds -mjMINVAL. XLA fuses a product into the add or subtraction that takes it (a fused
multiply-add: one rounding where C, built without them, has two), so these sums take their products through
`_rounded`. Given MuJoCo's geom frames to the bit, the polygons and quadrilaterals are then MuJoCo's; the frames
hurtle's kinematics computes can differ from MuJoCo's in their last bits, which decides some ties on a cap lying
exactly flat.

Branch-free: every case the two geometry types allow is computed and the one that applies selected;
polygons live in fixed arrays with a vertex count, compacted in order after each clipping plane.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics import math, tracing

CAPSULE, CYLINDER, BOX, MESH = 3, 5, 6, 7
FACE_TOL = 0.996  # faces face each other when their normals' dot product is below -FACE_TOL
EDGE_TOL = 0.0888  # an edge lies in a face when its dot product with the face normal is below this
MINVAL = 1e-15  # mjMINVAL: also the tolerance of a clipping plane's half-space (MuJoCo 4.0.1)
NCAP = 16  # a cylinder's cap as a polygon
# MuJoCo 4.0.1's tables of a cap's vertex angles (cylinderFace's cos_16 and sin_16): 15-digit literals, up to 4.4e-16
# off the doubles nearest cos(i pi / 8) and sin(i pi / 8). Those last bits make the 16-gon slightly irregular, which
# decides which of its near-equal quadrilaterals MuJoCo's search keeps (exact values: a third of its choices).
_C1, _C2, _C3 = 0.923879532511287, 0.38268343236509, 0.707106781186548
_COS16 = np.array(
    [1.0, _C1, _C3, _C2, 0.0, -_C2, -0.707106781186547, -_C1, -1.0, -_C1, -_C3, -_C2, 0.0, _C2, 0.707106781186547, _C1]
)
_SIN16 = np.array(
    [0.0, _C2, 0.707106781186547, _C1, 1.0, _C1, _C3, _C2, 0.0, -_C2, -0.707106781186547, -_C1, -1.0, -_C1, -_C3, -_C2]
)
MAX_CONTACTS = 4


def contacts_per_pair(t1: int, t2: int) -> int:
    """Contact slots a pair's multi-contact search can fill: 2 for an edge on a face, 4 for faces."""
    faces1, faces2 = t1 in (CYLINDER, BOX, MESH), t2 in (CYLINDER, BOX, MESH)
    return MAX_CONTACTS if faces1 and faces2 else 2


# --- features of each shape ---


def _feature_dim(idx):
    """How many distinct features (1, 2 or 3) of one shape a face's three vertices came from, the
    distinct ones first (MuJoCo's feature dimension)."""
    i1, i2, i3 = idx[0], idx[1], idx[2]
    distinct = i1 != i2
    dim = jnp.where(distinct, jnp.where((i3 == i1) | (i3 == i2), 2, 3), jnp.where(i1 != i3, 2, 1))
    fidx = jnp.where(distinct, idx, jnp.stack([i1, i3, i3]))
    return dim, fidx


_BOX_FACE_NORMALS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)
# each box face's corners (signs of the half-sizes) in MuJoCo's order: right, left, top, bottom, front, back
_BOX_FACES = np.array(
    [
        [[1, 1, 1], [1, 1, -1], [1, -1, -1], [1, -1, 1]],
        [[-1, 1, -1], [-1, 1, 1], [-1, -1, 1], [-1, -1, -1]],
        [[-1, 1, -1], [1, 1, -1], [1, 1, 1], [-1, 1, 1]],
        [[-1, -1, 1], [1, -1, 1], [1, -1, -1], [-1, -1, -1]],
        [[-1, 1, 1], [1, 1, 1], [1, -1, 1], [-1, -1, 1]],
        [[1, 1, -1], [-1, 1, -1], [-1, -1, -1], [1, -1, -1]],
    ],
    float,
)
_BITS = np.array([1, 2, 4], np.int32)


def _box_corner(v, size):
    """A box vertex (local) from its index bits."""
    return jnp.where((v & _BITS) != 0, size, -size)


def _face_normals(t, dim, fidx, mat, size, direction):
    """Candidate face normals (k, 3), the faces they name (k,) and which are valid (k,).

    A box: the faces shared by the feature's vertices (one per axis they agree on); a vertex has three;
    when the vertices share no face (a face diagonal, a triangle across faces) the face whose normal is
    within the face tolerance of `direction`. A mesh: the polygons at a vertex, the (up to two) shared
    by an edge's vertices, the first shared by three, in the order of the first vertex's polygon list.
    """
    if t == MESH:
        pm = size["polymap"][fidx]  # (3, D): the polygons at each feature vertex
        shared = lambda o: jnp.any((pm[0][:, None] == o[None, :]) & (o >= 0)[None, :], 1)  # noqa: E731
        valid = pm[0] >= 0
        in2 = valid & shared(pm[1])
        in2 = in2 & (jnp.cumsum(in2, dtype=jnp.int32) <= 2)  # MuJoCo keeps the first two
        in3 = in2 & shared(pm[2])
        in3 = in3 & (jnp.cumsum(in3, dtype=jnp.int32) == 1)
        ok = jnp.where(dim == 1, valid, jnp.where(dim == 2, in2, in3))
        ids = jnp.maximum(pm[0], 0)
        return size["polynormal"][ids] @ mat.T, ids, ok
    if t == CYLINDER:
        sgn = jnp.where(fidx[0] != 0, -1.0, 1.0)
        return (mat[:, 2] * sgn)[None], fidx[:1], (dim == 1)[None]
    if t == CAPSULE:
        z = jnp.zeros((0, 3), mat.dtype)
        return z, jnp.zeros(0, jnp.int32), jnp.zeros(0, bool)
    if t == BOX:
        bits = (fidx[:, None] & _BITS[None, :]) != 0  # (vertex, axis)

        def agree(n):
            return jnp.all(bits[:n], 0).astype(mat.dtype) - jnp.all(~bits[:n], 0).astype(mat.dtype)

        s1 = jnp.where(bits[0], 1.0, -1.0)
        s2, s3 = agree(2), agree(3)
        c2, c3 = jnp.sum(s2 != 0), jnp.sum(s3 != 0)
        sgn = jnp.where(dim == 1, s1, jnp.where(dim == 2, s2, s3))
        axis_ok = (dim == 1) | ((dim == 2) & ((c2 == 1) | (c2 == 2))) | ((dim == 3) & (c3 == 1))
        normals = mat * sgn[None, :]  # column a: the face normal along axis a
        ids = 2 * jnp.arange(3, dtype=jnp.int32) + (sgn < 0).astype(jnp.int32)
        # no shared face: the face closest in direction to the contact's
        local = math.normalize(mat.T @ direction)
        close = _BOX_FACE_NORMALS @ local > FACE_TOL
        k = jnp.argmax(close).astype(jnp.int32)
        near = (mat @ jnp.asarray(_BOX_FACE_NORMALS, mat.dtype)[k])[None]
        near_ok = jnp.zeros(3, bool).at[0].set(jnp.any(close))
        return (
            jnp.where(axis_ok, normals.T, jnp.concatenate([near, jnp.zeros((2, 3), mat.dtype)])),
            jnp.where(axis_ok, ids, jnp.zeros(3, jnp.int32).at[0].set(k)),
            jnp.where(axis_ok, sgn != 0, near_ok),
        )
    raise NotImplementedError(f"multi-contact face normals of geom type {t}")


def _edge(t, dim, fidx, pos, mat, size, x):
    """The edges a contact may lie on: their directions (k, 3, unit), common start, ends (k, 3), valid (k,).

    A capsule's edge is its side line through the witness point x; a cylinder's, its axis (the side line is
    chosen once the face is, `_cylinder_side`); a box's, the
    feature's edge, or the three edges at its vertex; a mesh's, the feature's edge, or at a vertex the
    edge to its predecessor in each polygon there.
    """
    if t == MESH:
        vert = size["vert"] @ mat.T + pos
        v1 = vert[fidx[0]]
        polys = size["polymap"][fidx[0]]  # (D,)
        pv = size["polyvert"][jnp.maximum(polys, 0)]  # (D, P)
        nv = size["polynum"][jnp.maximum(polys, 0)]
        at = jnp.argmax(pv == fidx[0], axis=1).astype(jnp.int32)
        prev = jnp.take_along_axis(pv, jnp.where(at == 0, nv - 1, at - 1)[:, None], 1)[:, 0]
        ends = jnp.where(dim == 2, vert[fidx[1]][None], vert[jnp.maximum(prev, 0)])
        dirs = jax.vmap(math.normalize)(ends - v1)
        valid = jnp.where(dim == 2, jnp.arange(len(polys), dtype=jnp.int32) == 0, (dim == 1) & (polys >= 0))
        return dirs, v1, ends, valid
    axis = mat[:, 2]
    if t == CAPSULE:
        pr = math.dot(x - pos, axis)
        start, end = x + axis * (-pr - size[1]), x + axis * (-pr + size[1])
        return axis[None], start, end[None], jnp.ones(1, bool)
    if t == CYLINDER:  # the direction only: which side line lies in the face depends on the face (_cylinder_side)
        n = axis * jnp.where(fidx[0] != 0, 1.0, -1.0)
        return n[None], pos, (pos + n)[None], ((dim == 1) | (dim == 2))[None]
    if t == BOX:
        c1 = _box_corner(fidx[0], size)
        v1 = mat @ c1 + pos
        flips = c1[None, :] * (1.0 - 2.0 * jnp.eye(3, dtype=mat.dtype))  # the three neighbours
        ends = jnp.where(dim == 2, (mat @ _box_corner(fidx[1], size) + pos)[None], flips @ mat.T + pos)
        dirs = jax.vmap(math.normalize)(ends - v1)
        valid = jnp.where(dim == 2, jnp.arange(3) == 0, dim == 1)
        return dirs, v1, ends, valid
    raise NotImplementedError(f"multi-contact edges of geom type {t}")


def _cylinder_side(pos, mat, size, fidx, toward):
    """A cylinder's side line that lies in a face: the support line along `toward` (against the face's normal),
    from the rim of the cap the contact feature came from to the other's; (start, end).

    MuJoCo 4.0.1 ("single-shot multicontact for cylinder edge collisions", #3748/#3752) takes this line; 4.0.0 took
    the side line through the contact feature's first vertex, which follows the contact's direction rather than the
    face's: where that direction leans (a contact at the face's rim) the two lines differ by millimetres, and the
    support line can leave the face altogether (then no multi-contact: the single contact stands)."""
    sgn = jnp.where(fidx[0] != 0, 1.0, -1.0)
    l0, l1 = math.dot(mat[:, 0], toward), math.dot(mat[:, 1], toward)
    n2 = l0 * l0 + l1 * l1
    ok = n2 >= MINVAL * MINVAL
    scl = jnp.where(ok, size[0] / jnp.sqrt(jnp.where(ok, n2, 1.0)), 0.0)
    start = mat @ jnp.stack([scl * l0, scl * l1, -sgn * size[1]]) + pos
    return start, start + mat[:, 2] * (sgn * 2.0 * size[1])


def _rounded(x):
    """x, as a C double: a select on x == x (x itself; a NaN stays NaN) that XLA's code generation cannot see
    through, so a product passed through it is rounded before the sum that takes it instead of being fused into it."""
    return jnp.where(x == x, x, jnp.nan)


def _dot3(a, b):
    """a . b over the last axis as C sums it: ((a0 b0 + a1 b1) + a2 b2), each product rounded."""
    p = _rounded(a * b)
    return (p[..., 0] + p[..., 1]) + p[..., 2]


def _cross3(a, b):
    """a x b as C computes it (a1 b2 - a2 b1, ...), each product rounded."""
    i, j = np.array([1, 2, 0]), np.array([2, 0, 1])
    return _rounded(a[..., i] * b[..., j]) - _rounded(a[..., j] * b[..., i])


def _global(mat, pos, local):
    """Points (k, 3) from local coordinates (k, 3) as MuJoCo's globalcoord rounds them: ((m0 l0 + m1 l1) + m2 l2) + pos,
    row by row (a matrix product may sum in another order)."""
    terms = [_rounded(local[:, j : j + 1] * mat[:, j][None, :]) for j in range(3)]
    return ((terms[0] + terms[1]) + terms[2]) + pos


def _face(t, face_id, pos, mat, size):
    """The vertices of a shape's face (k, 3), in MuJoCo's order, and how many there are (a mesh's
    polygons are padded to the largest)."""
    if t == CYLINDER:  # MuJoCo 4.0.1's cylinderFace: local (r cos, s (r (-sin)), s h), s = 1 for the top cap
        sgn = jnp.where(face_id != 0, -1.0, 1.0).astype(mat.dtype)
        r = size[0]
        x = r * jnp.asarray(_COS16, mat.dtype)
        y = sgn * (r * jnp.asarray(-_SIN16, mat.dtype))
        z = jnp.broadcast_to(sgn * size[1], x.shape)
        return _global(mat, pos, jnp.stack([x, y, z], 1)), NCAP
    if t == BOX:
        return _global(mat, pos, jnp.asarray(_BOX_FACES, mat.dtype)[face_id] * size), 4
    if t == MESH:  # a polygon's vertices in reverse
        pv, nv = size["polyvert"][face_id], size["polynum"][face_id]
        k = pv.shape[0]
        rev = jnp.take_along_axis(pv, jnp.maximum(nv - 1 - jnp.arange(k, dtype=jnp.int32), 0), 0)
        return _global(mat, pos, size["vert"][jnp.maximum(rev, 0)].astype(mat.dtype)), nv
    raise NotImplementedError(f"multi-contact faces of geom type {t}")


def _has_faces(t):
    return t in (CYLINDER, BOX, MESH)


def _has_edges(t):
    return t in (CAPSULE, CYLINDER, BOX, MESH)


# --- clipping ---


def _compact(pts, keep, cap: int):
    """The kept points, in order, in an array of `cap` rows, and their count."""
    rank = jnp.cumsum(keep, dtype=jnp.int32) - 1
    out = jnp.zeros((cap, 3), pts.dtype).at[jnp.where(keep, rank, cap)].set(pts, mode="drop")
    return out, jnp.minimum(jnp.sum(keep, dtype=jnp.int32), cap)


def _clip(clipper, nclip, subject, nsub, n, wdir, margin):
    """Clip polygon `subject` (its first nsub rows) by the edges of face `clipper` (its first nclip
    rows; normal n); keep vertices within margin of the face; witness points on the face and the
    subject, and their distances along wdir. A subject of two rows is an edge.

    Returns (count, w1 (4, 3) on the clipper, w2 (4, 3), dist (4,)).
    """
    k, s = clipper.shape[0], subject.shape[0]
    cap = k + s + 2
    nxt = clipper[(jnp.arange(k, dtype=jnp.int32) + 1) % jnp.maximum(jnp.asarray(nclip, jnp.int32), 1)]
    pn = _cross3(nxt - clipper, (clipper + n) - clipper)
    # mju_normalize3: times the reciprocal of the norm; (1, 0, 0) below mjMINVAL (a padded row's zero normal too)
    sq = _dot3(pn, pn)
    pnorm = jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)
    short = pnorm < MINVAL
    pn = jnp.where(
        short[:, None], jnp.array([1.0, 0.0, 0.0], pn.dtype), pn * (1.0 / jnp.where(short, 1.0, pnorm))[:, None]
    )
    poly = jnp.zeros((cap, 3), subject.dtype).at[:s].set(subject)
    ar = jnp.arange(cap, dtype=jnp.int32)

    def plane(carry, e):
        poly, npoly = carry
        skip = e >= nclip
        a, pne = clipper[e], pn[e]
        q = poly[jnp.where(ar + 1 < npoly, ar + 1, 0)]
        valid = ar < npoly
        d1 = _dot3(poly - a, pne)  # the edge's ends' signed distances to the plane
        d2 = _dot3(q - a, pne)
        in1, in2 = d1 > -MINVAL, d2 > -MINVAL
        den = d1 - d2
        par = den == 0.0
        t = d1 / jnp.where(par, 1.0, den)
        cut = valid & (in1 != in2) & ~par & (t >= 0.0) & (t <= 1.0)
        cross = _rounded(t[:, None] * (q - poly)) + poly
        pts = jnp.stack([cross, q], 1).reshape(2 * cap, 3)
        keep = jnp.stack([cut, valid & in2], 1).reshape(2 * cap)
        new, nnew = _compact(pts, keep, cap)
        return (jnp.where(skip, poly, new), jnp.where(skip, npoly, nnew)), None

    start = (poly, jnp.asarray(nsub, jnp.int32))
    (poly, npoly), _ = tracing.scan(plane, start, jnp.arange(k, dtype=jnp.int32))
    near = (ar < npoly) & (_dot3(poly - clipper[0], n) <= margin)
    poly, npoly = _compact(poly, near, cap)

    if s == 2:  # an edge: its two farthest clipped points
        diff = poly[None, :, :] - poly[:, None, :]
        d2 = _dot3(diff, diff)
        pair = (ar[:, None] < ar[None, :]) & (ar[None, :] < npoly)
        flat = jnp.where(pair, d2, 0.0).reshape(-1)
        best = jnp.argmax(flat)  # the first strictly largest, as MuJoCo scans
        b1, b2 = jnp.where(flat[best] > 0, best // cap, 0), jnp.where(flat[best] > 0, best % cap, 1)
        two = jnp.stack([poly[b1], poly[b2]])
        pick = jnp.where(npoly > 2, two[jnp.arange(4, dtype=jnp.int32) % 2], poly[:4])
        count = jnp.minimum(npoly, 2)
    else:
        quad = _polygon_quad(poly, npoly)
        pick = jnp.where(npoly > 4, poly[quad], poly[:4])
        count = jnp.minimum(npoly, 4)
    w1 = pick - math.dot(pick - clipper[0], n)[:, None] * n
    dist = math.dot(w1 - pick, wdir)
    w2 = w1 - dist[:, None] * wdir
    return count, w1, w2, dist


def _area4(a, b, c, d):
    """MuJoCo 4.0.1's area of a quadrilateral: 0.5 |(a - c) x (b - d)|, rounded as it rounds it."""
    x = _cross3(a - c, b - d)
    return 0.5 * jnp.sqrt(_dot3(x, x))


def _polygon_quad(poly, npoly):
    """Indices of a quadrilateral of largest area in a convex polygon of npoly > 4 vertices: MuJoCo's
    search (for each first vertex, advance the fourth, then the third, then the second while the
    area grows), run as a state machine until every lane of a batch is done."""
    n = jnp.maximum(npoly, 1)
    poly = jax.lax.stop_gradient(poly)  # it only picks indices (and a while_loop has no reverse mode)
    area = lambda a, b, c, d: _area4(poly[a], poly[b], poly[c], poly[d])  # noqa: E731
    # phase 0: try the next fourth vertex; 1: the next third; 2: the next second
    init = dict(
        a=jnp.zeros((), jnp.int32),
        b=jnp.ones((), jnp.int32),
        c=jnp.full((), 2, jnp.int32),
        d=jnp.full((), 3, jnp.int32),
        m=area(0, 1, 2, 3),
        res=jnp.arange(4, dtype=jnp.int32),
        phase=jnp.zeros((), jnp.int32),
    )
    limit = 64 * poly.shape[0]

    last = jnp.where(npoly > 4, n, 0)  # nothing to search below five vertices

    def cond(st):
        return (st[1]["a"] < last) & (st[0] < limit)

    def body(st):
        k, s = st
        a, b, c, d, ph = s["a"], s["b"], s["c"], s["d"], s["phase"]
        nb, nc, nd = (
            jnp.where(ph == 2, (b + 1) % n, b),
            jnp.where(ph == 1, (c + 1) % n, c),
            jnp.where(ph == 0, (d + 1) % n, d),
        )
        m_next = area(a, nb, nc, nd)
        up = m_next > s["m"]
        # an improvement is taken; phase 0 then goes to 1. No improvement: 0 ends this a, 1 -> 2, 2 -> 0.
        end_a = ~up & (ph == 0)
        b2, c2, d2 = jnp.where(up, nb, b), jnp.where(up, nc, c), jnp.where(up, nd, d)
        # the end of a first vertex: step the others off it
        fb = jnp.where(end_a & (b2 == a), (b2 + 1) % n, b2)
        fc = jnp.where(end_a & (b2 == a) & (c2 == fb), (c2 + 1) % n, c2)
        fd = jnp.where(end_a & (b2 == a) & (c2 == fb) & (d2 == fc), (d2 + 1) % n, d2)
        phase = jnp.where(up, jnp.where(ph == 0, 1, ph), jnp.where(ph == 0, 0, (ph + 1) % 3))
        new = dict(
            a=jnp.where(end_a, a + 1, a),
            b=fb,
            c=fc,
            d=fd,
            m=jnp.where(up, m_next, s["m"]),
            res=jnp.where(up, jnp.stack([a, nb, nc, nd]), s["res"]),
            phase=phase.astype(jnp.int32),
        )
        return k + 1, new

    _, s = tracing.while_loop(cond, body, (jnp.zeros((), jnp.int32), init))
    return s["res"]


# --- the search ---


def multicontact(t1: int, t2: int, g1, g2, margin, x1, x2, face):
    """MuJoCo 4's multicontact for one pair of types t1 <= t2 with faces or edges.

    g1, g2: (pos, mat, size) of each geom; margin: the pair's; x1, x2: the contact's witness points;
    face: ccd's feature face (idx (3, 2), p1, p2 (3, 3), ok). Returns (count, w1 (4, 3), w2 (4, 3),
    dist (4,), normal): count 0 when the search gives no contacts (keep the single one), else up to 4
    contacts with distances (un-inflated surfaces, margin removed) and the common normal.
    """
    pos1, mat1, size1 = g1
    pos2, mat2, size2 = g2
    dtype = x1.dtype
    dim1, fidx1 = _feature_dim(face["idx"][:, 0])
    dim2, fidx2 = _feature_dim(face["idx"][:, 1])
    wdir = x2 - x1
    n1, id1, ok1 = _face_normals(t1, dim1, fidx1, mat1, size1, -wdir)
    n2, id2, ok2 = _face_normals(t2, dim2, fidx2, mat2, size2, wdir)
    half = 0.5 * margin
    m1 = half if t1 != CAPSULE else jnp.zeros_like(half)
    m2 = half if t2 != CAPSULE else jnp.zeros_like(half)
    mtot = m1 + m2
    cases = []  # (applies, count, w1, w2, dist, normal)

    # face against face
    ff_found = jnp.zeros((), bool)
    if _has_faces(t1) and _has_faces(t2):
        tol = EDGE_TOL * math.safe_norm(wdir)
        a = ok1 & (math.dot(n1, wdir) < -tol)
        b = ok2 & (math.dot(n2, wdir) > tol)
        d = jnp.where(a[:, None] & b[None, :], n1 @ n2.T, jnp.inf)
        flat = jnp.argmin(d.reshape(-1))
        ff_found = d.reshape(-1)[flat] < -FACE_TOL
        i, j = flat // d.shape[1], flat % d.shape[1]
        f1, nf1 = _face(t1, id1[i], pos1, mat1, size1)
        f2, nf2 = _face(t2, id2[j], pos2, mat2, size2)
        cnt, c1, c2, dd = _clip(f1, nf1, f2, nf2, n1[i], n2[j], mtot)
        cases.append((ff_found, cnt, c1, c2, dd, -n2[j]))

    # an edge of shape 1 on a face of shape 2 first (when its feature is no larger), else the reverse: MuJoCo 4
    # tries the second when the first finds no edge in a face (measured on cylinder-box: 9 in 100 poses)
    any1, any2 = jnp.any(ok1), jnp.any(ok2)
    edge1 = ~ff_found & (dim1 < 3) & any2 & ((dim1 <= dim2) | ~any1)

    def edge_on_face(te, dime, fidxe, ge, xe, nf, idf, okf, tf, gf, direction):
        """An edge of one shape lying in a face of the other: (found, count, w_edge, w_face, dist, n_face)."""
        en, v, ends, has = _edge(te, dime, fidxe, *ge, xe)
        # the first face (then edge) within the tolerance, faces pointing along the contact direction
        hit = (okf & (math.dot(nf, direction) > MINVAL))[:, None] & has[None, :]
        hit = hit & (jnp.abs(nf @ en.T) < EDGE_TOL)
        first = jnp.argmax(hit.reshape(-1))
        j, e = first // hit.shape[1], first % hit.shape[1]
        f, nface = _face(tf, idf[j], *gf)
        segment = jnp.stack(_cylinder_side(*ge, fidxe, -nf[j])) if te == CYLINDER else jnp.stack([v, ends[e]])
        cnt, wf, we, dd = _clip(f, nface, segment, 2, nf[j], -nf[j], mtot)
        return jnp.any(hit), cnt, we, wf, dd, nf[j]

    found1 = jnp.zeros((), bool)
    if _has_edges(t1) and _has_faces(t2):
        found1, cnt, we, wf, dd, nf = edge_on_face(t1, dim1, fidx1, g1, x1, n2, id2, ok2, t2, g2, wdir)
        cases.append((edge1 & found1, cnt, we, wf, dd, -nf))
    edge2 = ~ff_found & ~(edge1 & found1) & (dim2 < 3)
    if _has_faces(t1) and _has_edges(t2):
        found, cnt, we, wf, dd, nf = edge_on_face(t2, dim2, fidx2, g2, x2, n1, id1, ok1, t1, g1, -wdir)
        cases.append((edge2 & found, cnt, wf, we, dd, nf))

    count = jnp.zeros((), jnp.int32)
    w1 = w2 = jnp.zeros((4, 3), dtype)
    dist = jnp.zeros(4, dtype)
    normal = jnp.zeros(3, dtype)
    for applies, cnt, c1, c2, dd, nrm in cases:
        count = jnp.where(applies, cnt, count)
        w1 = jnp.where(applies, c1 + m1 * nrm, w1)
        w2 = jnp.where(applies, c2 - m2 * nrm, w2)
        dist = jnp.where(applies, dd - mtot, dist)
        normal = jnp.where(applies, nrm, normal)
    ok = face["ok"]
    for t, size in ((t1, size1), (t2, size2)):
        if t == MESH:  # MuJoCo searches only meshes with polygons
            ok = ok & jnp.any(size["polynum"] > 0)
    count = jnp.where(ok, count, 0)
    return count, w1, w2, dist, normal
