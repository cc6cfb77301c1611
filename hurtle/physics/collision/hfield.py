"""Height fields: a geom against the triangular prisms of the grid under it (mjc_ConvexHField).

MuJoCo collides a height field with a convex geom prism by prism: each grid cell is two triangles,
each triangle extruded down to the field's base (`hfield_size[3]` below its frame) is a convex prism,
and every prism under the geom's bounding box (in the field's frame) goes through the native convex
collider with one contact each, up to 50 (mjMAXCONPAIR) in row, column, triangle order.

Which cells lie under the geom depends on the state, so the narrow phase works on a window of a
fixed size chosen when the model is built: the most columns and rows a geom of the pair's bounding
radius can span. Cells of the window outside MuJoCo's sub-grid are masked, as are MuJoCo's early
exits (the bounding-sphere and bounding-box tests, prisms lying wholly below the geom); the grid
itself is never touched outside the window, so a 201 x 201 field costs what a 3 x 3 one does.
Of the window's prisms only candidates go through the collider: those MuJoCo would collide that the
geom is not wholly above (beyond the plane of the prism's top face by more than the margin, a proof
of no contact), gathered CHUNK at a time in a loop that runs as many chunks as the world with the
most candidates needs (a geom resting on a field has a handful); with `solver_mode="fixed"`
(reverse-mode gradients) every prism of the window is collided instead. Otherwise, for a sphere the first,
bare pass (its centre against the prism) is computed in closed form for every prism (`point_prism`:
exact, as GJK is on a polytope), and only prisms it finds the centre within the tolerance of go
through GJK and EPA.

A margin widens the sub-grid by it and, as in MuJoCo 4, the prism and the geom are first collided
bare (a sphere or capsule as its core), the margin (and the radius) taken off the distance after;
only a contact deeper than that runs GJK and EPA on the shapes inflated by half the margin each.
With a margin, spheres, capsules, boxes and meshes match MuJoCo to 1e-12; ellipsoids and cylinders
to GJK's tolerance on their curved sides (3e-5 at worst, most to 1e-12).

Without a margin every contact is MuJoCo's to 1e-12 for spheres, capsules and ellipsoids. For boxes
and meshes MuJoCo's EPA runs in its discrete mode and stops at the first support point that repeats
an earlier vertex's labels; a prism's points carry no label, so it stops at the first repeated box
(or mesh) vertex, an early, approximate depth. Which vertex EPA meets depends on a tie: the
polytope's faces are perpendicular to the box's edges, so the box's support along a face normal is
decided by the sign of a component that is zero but for rounding, and XLA fuses products and sums
into multiply-adds that round differently from MuJoCo's C. GJK's own ties are MuJoCo's: a simplex
holding a prism's vertical edge has a normal with an exactly zero z, and GJK searches along it (not
along x_k, whose z is zero but for rounding; `ccd._tuned`), so the prism's top half is taken as in
MuJoCo. About one box pose on relief in six (one mesh pose in twenty-five, one cylinder pose in
sixty) has a contact at another such approximation, many of them where MuJoCo's own contact changes
under 1e-9 nudges.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math, tracing
from hurtle.physics.collision import ccd, convex

HFIELD, SPHERE, CAPSULE, BOX, MESH = 1, 2, 3, 6, 7
CORES = (SPHERE, CAPSULE)
MAXCONPAIR = 50  # mjMAXCONPAIR: contacts one height field pair keeps
# the prisms of a cell (column c, row r), as MuJoCo builds them: (column, row) offsets of the
# triangle's three vertices, for its two triangles
_TRIANGLES = np.array([[(-1, 1), (-1, 0), (0, 1)], [(-1, 0), (0, 1), (0, 0)]], np.int32)


def _span(extent: float, half: float, n: int) -> int:
    """The most grid intervals MuJoCo's sub-grid spans for a geom `extent` wide: ceil(a + w) - floor(a)
    <= floor(w) + 2 intervals of a grid of n points over [-half, half] (capped at the grid's)."""
    w = extent / (2 * half) * (n - 1)
    return int(min(np.floor(w * (1 + 1e-9) + 1e-9) + 2, n - 1))


def _extent(m: mujoco.MjModel, g: int) -> float:
    """Twice a bound on the geom's reach from its centre (MuJoCo's geom_rbound, or a mesh's farthest
    vertex if farther)."""
    r = float(m.geom_rbound[g])
    if m.geom_type[g] == MESH:
        k = int(m.geom_dataid[g])
        va, nv = int(m.mesh_vertadr[k]), int(m.mesh_vertnum[k])
        r = max(r, float(np.max(np.linalg.norm(m.mesh_vert[va : va + nv].astype(np.float64), axis=1))))
    return 2 * r


def tables(m: mujoco.MjModel, geom1: np.ndarray, geom2: np.ndarray, margins: list) -> dict:
    """The height field tables of a pair group (static). Per field (padded to the group's largest):
    the grid's x and y coordinates and each point's height above the frame (`hfield_data`, float32,
    times the elevation size in float64), computed here as MuJoCo's C rounds them (XLA would fuse
    each product and sum into one multiply-add, and a prism vertex one rounding off can end EPA's
    search elsewhere). Per pair: its field and base depth. And the window (columns, rows of cells)
    that covers every pair's geom and margin (`margins`, per pair)."""
    hids = [int(m.geom_dataid[g]) for g in geom1]
    fields = sorted(set(hids))
    nrow = [int(m.hfield_nrow[h]) for h in fields]
    ncol = [int(m.hfield_ncol[h]) for h in fields]
    xs = np.zeros((len(fields), max(ncol)))
    ys = np.zeros((len(fields), max(nrow)))
    zs = np.zeros((len(fields), max(r * c for r, c in zip(nrow, ncol))))
    for i, h in enumerate(fields):
        size = m.hfield_size[h].astype(np.float64)
        dx, dy = (2.0 * size[0]) / (ncol[i] - 1), (2.0 * size[1]) / (nrow[i] - 1)
        xs[i, : ncol[i]] = dx * np.arange(ncol[i], dtype=np.float64) - size[0]
        ys[i, : nrow[i]] = dy * np.arange(nrow[i], dtype=np.float64) - size[1]
        a, n = int(m.hfield_adr[h]), nrow[i] * ncol[i]
        zs[i, :n] = m.hfield_data[a : a + n].astype(np.float64) * size[2]
    nx = ny = 1
    for h, g, mg in zip(hids, geom2, margins):
        size, e = m.hfield_size[h], _extent(m, int(g)) + 2 * mg
        nx = max(nx, _span(e, float(size[0]), int(m.hfield_ncol[h])))
        ny = max(ny, _span(e, float(size[1]), int(m.hfield_nrow[h])))
    return dict(
        x=xs,
        y=ys,
        z=zs,
        field=np.array([fields.index(h) for h in hids], np.int32),
        nrow=np.array([m.hfield_nrow[h] for h in hids], np.int32),
        ncol=np.array([m.hfield_ncol[h] for h in hids], np.int32),
        size=np.array([m.hfield_size[h] for h in hids], np.float64),
        window=(nx, ny),
    )


def contacts_per_pair(hf: dict) -> int:
    nx, ny = hf["window"]
    return min(2 * nx * ny, MAXCONPAIR)


def check(m: mujoco.MjModel, g1: int, source: str, label: str) -> None:
    """Refuse a height field MuJoCo's collider cannot grid (fewer than two rows or columns)."""
    h = int(m.geom_dataid[g1])
    if m.hfield_nrow[h] < 2 or m.hfield_ncol[h] < 2:
        raise ValueError(f"{source}: height field of {label} needs at least 2 rows and 2 columns")


def prism_support(prism, direction):
    """mjc_prism_support: of the top three vertices (or the bottom three, for a downward direction)
    the first of largest projection."""
    half = jnp.where(direction[2] < 0, prism[:3], prism[3:])
    return half[jnp.argmax(half @ direction)]


def prism_feature(direction):
    """The label MuJoCo gives a prism's support point: which half it came from (-2 bottom, -3 top;
    a repeated label ends EPA for polytopes)."""
    return jnp.where(direction[2] < 0, -2, -3).astype(jnp.int32)


def _prisms(hf: dict, field, ncol, base, cmin, rmin, dtype):
    """The window's prisms (S, 6, 3) in row, column, triangle order (bottoms at -base), and each
    one's cell (column, row) for the sub-grid mask."""
    nx, ny = hf["window"]
    col = cmin + 1 + jnp.arange(nx, dtype=jnp.int32)
    row = rmin + jnp.arange(ny, dtype=jnp.int32)
    cc = jnp.broadcast_to(col[None, :, None, None], (ny, nx, 2, 3)) + _TRIANGLES[None, None, :, :, 0]
    rr = jnp.broadcast_to(row[:, None, None, None], (ny, nx, 2, 3)) + _TRIANGLES[None, None, :, :, 1]
    table = lambda name: jnp.asarray(hf[name], dtype)[field]  # noqa: E731
    x = table("x")[jnp.clip(cc, 0, hf["x"].shape[1] - 1)]
    y = table("y")[jnp.clip(rr, 0, hf["y"].shape[1] - 1)]
    z = table("z")[jnp.clip(rr * ncol + cc, 0, hf["z"].shape[1] - 1)]
    top = jnp.stack([x, y, z], -1)
    bottom = jnp.stack([x, y, jnp.broadcast_to(-base, z.shape)], -1)
    prisms = jnp.concatenate([bottom, top], -2).reshape(-1, 6, 3)
    cell_c = jnp.broadcast_to(col[None, :, None], (ny, nx, 2)).reshape(-1)
    cell_r = jnp.broadcast_to(row[:, None, None], (ny, nx, 2)).reshape(-1)
    return prisms, cell_c, cell_r


def _closest_on_triangle(a, b, c, p):
    """The point of triangle (a, b, c) closest to p: p's projection on the plane where that falls
    inside, else the closest of the three edges' closest points (branch-free)."""
    n = jnp.cross(b - a, c - a)
    nn = jnp.dot(n, n)
    q = p - n * (jnp.dot(p - a, n) / jnp.where(nn > 0, nn, 1.0))
    inside = (
        (nn > 0)
        & (jnp.dot(jnp.cross(b - a, q - a), n) >= 0)
        & (jnp.dot(jnp.cross(c - b, q - b), n) >= 0)
        & (jnp.dot(jnp.cross(a - c, q - c), n) >= 0)
    )

    def on_edge(u, v):
        e = v - u
        t = jnp.clip(jnp.dot(p - u, e) / jnp.maximum(jnp.dot(e, e), 1e-30), 0.0, 1.0)
        return u + t * e

    edges = jnp.stack([on_edge(a, b), on_edge(b, c), on_edge(c, a)])
    best = edges[jnp.argmin(jnp.sum((edges - p) ** 2, -1))]
    return jnp.where(inside, q, best)


# a prism's faces as triangles over its vertices (bottom 0-2, top 3-5): the two ends and two per side
_PRISM_TRIS = np.array([[0, 1, 2], [3, 4, 5], [0, 1, 4], [0, 4, 3], [1, 2, 5], [1, 5, 4], [2, 0, 3], [2, 3, 5]])


def point_prism(prism, p):
    """A point's distance to a prism and the prism's closest point (0 and p itself when p is inside):
    what GJK finds for a sphere's centre against a bare prism (a polytope: GJK ends at the exact
    closest point)."""
    tris = prism[_PRISM_TRIS]
    pts = jax.vmap(_closest_on_triangle, (0, 0, 0, None))(tris[:, 0], tris[:, 1], tris[:, 2], p)
    d2 = jnp.sum((pts - p) ** 2, -1)
    x = pts[jnp.argmin(d2)]
    center = jnp.mean(prism, 0)
    # inside: on the inner side of every face (each face's normal oriented away from the centre)
    n = jnp.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    n = n * jnp.where(jnp.sum(n * (tris[:, 0] - center), -1) < 0, -1.0, 1.0)[:, None]
    inside = jnp.all(jnp.sum(n * (p - tris[:, 0]), -1) <= 0)
    dist = jnp.sqrt(jnp.min(d2))
    return jnp.where(inside, 0.0, dist), jnp.where(inside, p, x)


CHUNK = 8  # prisms collided at once: a geom resting on a field is seldom near more


def _on_candidates(fn, prisms, candidate):
    """fn (a prism -> arrays) on the candidate prisms only, CHUNK at a time (candidates first, in
    order; a loop over chunks that in a vmapped batch of worlds runs the most any world needs), the
    results put back in place; zeros for the other prisms."""
    s = prisms.shape[0]
    k = min(CHUNK, s)
    order = jnp.argsort(~candidate, stable=True).astype(jnp.int32)
    order = jnp.concatenate([order, jnp.full(k, s - 1, jnp.int32)])  # padding past the last chunk
    count = jnp.sum(candidate, dtype=jnp.int32)
    acc = jax.tree.map(lambda x: jnp.zeros((s,) + x.shape, x.dtype), jax.eval_shape(fn, prisms[0]))

    def body(c):
        b, acc = c
        sel = jax.lax.dynamic_slice(order, (b * k,), (k,))
        dest = jnp.where(b * k + jnp.arange(k, dtype=jnp.int32) < count, sel, s)
        out = jax.vmap(fn)(prisms[sel])
        return b + 1, jax.tree.map(lambda a, o: a.at[dest].set(o, mode="drop"), acc, out)

    return tracing.while_loop(lambda c: c[0] * k < count, body, (jnp.zeros((), jnp.int32), acc))[1]


def make_hfield(t2: int):
    """The narrow-phase function of a height field against a geom of type t2 (mjc_ConvexHField)."""

    def fn(g, pos1, mat1, size1, pos2, mat2, size2, margin, m):
        hf = g.hfield
        size2 = g.mesh2 if t2 == MESH else size2
        rbound = m.geom_rbound[g.geom2]
        fixed = m.opt.solver_mode == "fixed"
        tol = m.opt.ccd_tolerance
        n = contacts_per_pair(hf)
        pair = (hf["field"], hf["nrow"], hf["ncol"], jnp.asarray(hf["size"], pos1.dtype))

        def one(pair, pos1, mat1, pos2, mat2, size2, rbound, margin):
            field, nrow, ncol, size = pair
            dtype = pos1.dtype
            lpos = mat1.T @ (pos2 - pos1)
            lmat = mat1.T @ mat2
            radius = rbound + margin
            near = ~(
                (size[0] < lpos[0] - radius)
                | (-size[0] > lpos[0] + radius)
                | (size[1] < lpos[1] - radius)
                | (-size[1] > lpos[1] + radius)
                | (size[2] < lpos[2] - radius)
                | (-size[3] > lpos[2] + radius)
            )
            zero = jnp.zeros((), dtype)

            def sup2(d, mgn):
                return convex.support(t2, lpos, lmat, size2, d, mgn)

            axes = jnp.concatenate([jnp.eye(3, dtype=dtype), -jnp.eye(3, dtype=dtype)])
            ext = jax.vmap(lambda d: sup2(d, zero))(axes)
            xmax, ymax, zmax, xmin, ymin, zmin = ext[0, 0], ext[1, 1], ext[2, 2], ext[3, 0], ext[4, 1], ext[5, 2]
            near = near & ~(
                (xmin - margin > size[0])
                | (xmax + margin < -size[0])
                | (ymin - margin > size[1])
                | (ymax + margin < -size[1])
                | (zmin - margin > size[2])
                | (zmax + margin < -size[3])
            )
            # MuJoCo's sub-grid (clipped before the cast, so a far geom's bounds stay finite ints)
            cells = lambda v, k: jnp.clip(v, -1.0, k.astype(dtype)).astype(jnp.int32)  # noqa: E731
            fx = lambda v: (v + size[0]) / (2.0 * size[0]) * (ncol - 1).astype(dtype)  # noqa: E731
            fy = lambda v: (v + size[1]) / (2.0 * size[1]) * (nrow - 1).astype(dtype)  # noqa: E731
            cmin = jnp.maximum(0, cells(jnp.floor(fx(xmin - margin)), ncol))
            cmax = jnp.minimum(ncol - 1, cells(jnp.ceil(fx(xmax + margin)), ncol))
            rmin = jnp.maximum(0, cells(jnp.floor(fy(ymin - margin)), nrow))
            rmax = jnp.minimum(nrow - 1, cells(jnp.ceil(fy(ymax + margin)), nrow))
            prisms, cell_c, cell_r = _prisms(hf, field, ncol, size[3], cmin, rmin, dtype)
            live = near & (cell_c <= cmax) & (cell_r < rmax) & ~jnp.all(prisms[:, 3:, 2] < zmin, -1)
            polytope = jnp.asarray(t2 in (BOX, MESH))
            discrete = (polytope & (margin == 0), polytope)
            half = 0.5 * margin
            shrink = g.margin  # MuJoCo 4: GJK on the bare shapes first, the margin added after

            it = m.opt.ccd_iterations

            def shapes(prism):
                """The prism's and the geom's supports (full, core) and the prism's centre."""
                center = (prism[0] + prism[1] + prism[2] + prism[3] + prism[4] + prism[5]) * (1.0 / 6.0)

                def sup(d):
                    p1 = prism_support(prism, d) + d * half
                    p2 = sup2(-d, margin)
                    ix = jnp.stack([jnp.int32(-1), convex.feature(t2, lmat, size2, -d)])
                    return p1 - p2, p1, p2, ix

                sup_core = None
                if t2 in CORES or shrink:  # the bare prism against the geom's core (or bare geom)

                    def sup_core(d):
                        p1 = prism_support(prism, d)
                        if t2 in CORES:
                            p2 = convex.core_support(t2, lpos, lmat, size2, -d)
                        else:
                            p2 = sup2(-d, zero)
                        ix = jnp.stack([jnp.int32(-1), convex.feature(t2, lmat, size2, -d)])
                        return p1 - p2, p1, p2, ix

                return sup, sup_core, center

            fm1 = half if t2 in CORES or shrink else zero
            fm2 = size2[0] + half if t2 in CORES else (half if shrink else zero)

            def collide(prism):
                sup, sup_core, center = shapes(prism)
                dist, x1, x2, hit, _ = ccd.ccd(sup, sup_core, fm1, fm2, center, lpos, it, tol, fixed, discrete)
                return margin + dist, 0.5 * (x1 + x2), math.normalize(x1 - x2), hit

            if fixed:  # every prism (reverse-differentiable: no loop of data-dependent length)
                dist, lp, ln, hit = jax.vmap(collide)(prisms)
            else:  # only prisms the geom may touch: not wholly beyond the plane of their top face
                top = prisms[:, 3:]
                up = jnp.cross(top[:, 1] - top[:, 0], top[:, 2] - top[:, 0])
                up = up * jnp.sign(up[:, 2:]) / jnp.linalg.norm(up, axis=-1, keepdims=True)
                low = jax.vmap(lambda u: sup2(-u, zero))(up)
                below = jnp.all(top[:, :, 2] >= -size[3], -1)  # the prism's base below its top
                apart = below & (jnp.sum(up * (low - top[:, 0]), -1) > margin + tol)
                if t2 == SPHERE:  # the bare-first pass in closed form; GJK and EPA for deep contacts only
                    cd, cx = jax.vmap(point_prism, (0, None))(prisms, lpos)
                    shallow = cd > tol
                    sdist, y1, y2 = jax.vmap(ccd.restore_radii, (0, 0, None, None, None))(cd, cx, lpos, fm1, fm2)
                    dist, lp, ln, hit = _on_candidates(collide, prisms, live & ~apart & ~shallow)
                    dist = jnp.where(shallow, margin + sdist, dist)
                    lp = jnp.where(shallow[:, None], 0.5 * (y1 + y2), lp)
                    ln = jnp.where(shallow[:, None], jax.vmap(math.normalize)(y1 - y2), ln)
                    hit = jnp.where(shallow, sdist < 0, hit)
                else:
                    dist, lp, ln, hit = _on_candidates(collide, prisms, live & ~apart)
            hit = hit & live
            pos = lp @ mat1.T + pos1
            normal = ln @ mat1.T
            if prisms.shape[0] > n:  # keep the first mjMAXCONPAIR, in MuJoCo's order
                rank = jnp.cumsum(hit, dtype=jnp.int32) - 1
                pick = (hit[None, :] & (rank[None, :] == jnp.arange(n, dtype=jnp.int32)[:, None])).astype(dtype)
                dist, pos, normal = pick @ dist, pick @ pos, pick @ normal
                hit = jnp.any(pick > 0, -1)
            return dist, pos, normal, hit

        dist, pos, normal, hit = jax.vmap(one)(pair, pos1, mat1, pos2, mat2, size2, rbound, margin)
        return dist, pos, normal, jnp.zeros_like(pos), hit

    fn.uses_model = True
    return fn


PAIRS = [(HFIELD, t) for t in (SPHERE, CAPSULE, 4, 5, BOX, MESH)]
