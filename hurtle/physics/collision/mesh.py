"""Convex meshes for collision: per-geom vertex and polygon tables, the support point, plane-mesh.

MuJoCo collides a mesh as its vertices' convex hull (`mesh_vert` in the geom's frame, float32 in the
model, widened to float64 as MuJoCo's engine reads them). Everything that depends only on the mesh
(the hull graph's neighbour lists, the polygons at each vertex, each polygon's vertices) is turned
into padded integer tables when the model is built, so the narrow phase gathers instead of walking
lists. A pair group with meshes of different sizes pads every table to the group's largest, padding
vertex lists with copies of vertex 0 (never a strict maximum) and index lists with -1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math, tracing

HILLCLIMB_MIN = 10  # MuJoCo walks the hull graph only for meshes with at least this many vertices
PLANE_MESH_CONTACTS = 4  # mjc_PlaneConvex: the deepest vertex and up to three of a polygon at it


def _padded(data: np.ndarray, start: np.ndarray, count: np.ndarray, fill: int = -1) -> np.ndarray:
    """Ragged lists `data[start[i] : start[i] + count[i]]` as the rows of a padded table (at least one
    column), without a Python loop over the rows."""
    width = max(int(count.max(initial=0)), 1)
    col = np.arange(width)
    idx = start[:, None] + col[None, :]
    keep = col[None, :] < count[:, None]
    if len(data) == 0:
        return np.full(idx.shape, fill, np.int32)
    return np.where(keep, data[np.clip(idx, 0, len(data) - 1)], fill).astype(np.int32)


def mesh_tables(m: mujoco.MjModel, k: int) -> dict:
    """The collision tables of mesh k (unpadded), as numpy arrays, built once per mesh.

    vert (V, 3); climb: whether MuJoCo walks the hull graph (plane-mesh's deepest vertex); start: the
    vertex it starts from; nbr (V, K): each vertex's hull-graph neighbours in graph order (none
    without a climb); polymap (V, D): the polygons at each vertex; polynormal (F, 3); polyvert (F, P)
    and polynum (F,): each polygon's vertices and count.

    A mesh MuJoCo climbs (a hull graph, HILLCLIMB_MIN vertices or more) keeps only its hull's
    vertices, in the file's order: MuJoCo never reaches the others, and a scanned or dense mesh
    (tens of thousands of vertices around a hull of hundreds) would otherwise fill every table.
    """
    va, nv = int(m.mesh_vertadr[k]), int(m.mesh_vertnum[k])
    ga = int(m.mesh_graphadr[k])
    climb = ga >= 0 and nv >= HILLCLIMB_MIN
    pa, npoly = int(m.mesh_polyadr[k]), int(m.mesh_polynum[k])
    pva, pvn = m.mesh_polyvertadr[pa : pa + npoly], m.mesh_polyvertnum[pa : pa + npoly]
    polyvert = _padded(m.mesh_polyvert, pva, pvn)  # mesh-local vertex ids
    keep = np.arange(nv)  # the vertices kept, as mesh-local ids in order
    nbr, start = np.full((nv, 1), -1, np.int32), 0
    if climb:
        graph = m.mesh_graph
        nhull = int(graph[ga])
        edgeadr = graph[ga + 2 : ga + 2 + nhull].astype(np.int64)
        globalid = graph[ga + 2 + nhull : ga + 2 + 2 * nhull].astype(np.int64)
        nface = int(graph[ga + 1])
        edges = graph[ga + 2 + 2 * nhull : ga + 2 + 3 * nhull + 3 * nface]
        # each hull vertex's neighbour list ends at the first -1 from its address
        ends = np.nonzero(edges == -1)[0]
        count = ends[np.searchsorted(ends, edgeadr)] - edgeadr
        by_loc = _padded(edges, edgeadr, count)  # (nhull, K) of hull-local ids
        in_hull = np.zeros(nv, bool)
        in_hull[globalid] = True
        if np.all(in_hull[polyvert[polyvert >= 0]]):
            keep = np.nonzero(in_hull)[0]
        newid = np.full(nv, -1, np.int64)
        newid[keep] = np.arange(len(keep))
        nbr = np.full((len(keep), by_loc.shape[1]), -1, np.int32)
        nbr[newid[globalid]] = np.where(by_loc >= 0, newid[globalid[np.maximum(by_loc, 0)]], -1)
        start = int(newid[globalid[0]])
        polyvert = np.where(polyvert >= 0, newid[np.maximum(polyvert, 0)], -1).astype(np.int32)
    if npoly:
        polymap = _padded(m.mesh_polymap, m.mesh_polymapadr[va + keep], m.mesh_polymapnum[va + keep])
    else:
        polymap = np.full((len(keep), 1), -1, np.int32)
    return dict(
        vert=np.asarray(m.mesh_vert[va + keep], np.float64),
        climb=np.array(climb),
        start=np.array(start, np.int32),
        nbr=nbr,
        polymap=polymap,
        polynormal=np.asarray(m.mesh_polynormal[pa : pa + npoly], np.float64).reshape(-1, 3),
        polyvert=polyvert,
        polynum=np.asarray(pvn, np.int32),
    )


def table_bytes(meshes: list[dict]) -> int:
    """Bytes of `stack(meshes)`: every field padded to the largest, once per entry."""
    total = 0
    for key in meshes[0]:
        shape = tuple(max(s) for s in zip(*(meshes_i[key].shape for meshes_i in meshes)))
        total += len(meshes) * int(np.prod(shape, dtype=np.int64)) * meshes[0][key].dtype.itemsize
    return total


def stack(meshes: list[dict]) -> dict:
    """One table per field with a leading pair axis, each padded to the group's largest."""

    def pad(x, shape, fill):
        out = np.full(shape, fill, x.dtype)
        out[tuple(slice(0, s) for s in x.shape)] = x
        return out

    out = {}
    for key in meshes[0]:
        xs = [d[key] for d in meshes]
        shape = tuple(max(s) for s in zip(*(x.shape for x in xs)))
        if key == "vert":
            xs = [np.concatenate([x, np.repeat(x[:1], shape[0] - len(x), 0)]) for x in xs]
        elif key == "polynormal":
            xs = [pad(x, shape, 0.0) for x in xs]
        elif key in ("climb", "start", "polynum"):
            xs = [pad(x, shape, 0) for x in xs]
        else:
            xs = [pad(x, shape, -1) for x in xs]
        out[key] = np.stack(xs)
    return out


def support_index(mesh: dict, local):
    """Index of the vertex farthest along a local direction: the first of equals, as MuJoCo's search."""
    return jnp.argmax(mesh["vert"] @ local).astype(jnp.int32)


def _climb(mesh: dict, local):
    """MuJoCo's hill climb on the hull graph from its first vertex: each pass moves to the first
    strictly best neighbour of the current vertex, until none is better."""
    vert = jax.lax.stop_gradient(mesh["vert"])
    dots = vert @ jax.lax.stop_gradient(local)
    nbr = mesh["nbr"]

    def cond(s):
        return s[1]

    def body(s):
        i, _ = s
        row = nbr[i]
        nd = jnp.where(row >= 0, dots[jnp.maximum(row, 0)], -jnp.inf)
        j = jnp.argmax(nd)
        better = nd[j] > dots[i]
        return jnp.where(better, row[j], i), better

    i, _ = tracing.while_loop(cond, body, (mesh["start"], jnp.ones((), bool)))
    return i


def _hull4(pts, npts, a):
    """MuJoCo's hull4 on a polygon's vertices (local frame): positions of up to four of them, the
    first being `a`, spanning a large area. The next three from `a` on; for more than four, the fourth
    advances while the area grows, after each step the third and then the second too."""
    pts = jax.lax.stop_gradient(pts)
    n = jnp.maximum(npts, 1)
    b, c, d = (a + 1) % n, (a + 2) % n, (a + 3) % n

    def area(b, c, d):
        return 0.5 * math.safe_norm(math.cross(pts[a] - pts[c], pts[b] - pts[d]))

    def cond(s):
        return s["go"]

    def body(s):
        b, c, d, ph = s["b"], s["c"], s["d"], s["phase"]
        nb = jnp.where(ph == 2, (b + 1) % n, b)
        nc = jnp.where(ph == 1, (c + 1) % n, c)
        nd = jnp.where(ph == 0, (d + 1) % n, d)
        m = area(nb, nc, nd)
        up = m > s["m"]
        # phase 0 (the fourth) ends the search when it cannot grow; 1 (third) -> 2 (second) -> 0
        phase = jnp.where(up, jnp.where(ph == 0, 1, ph), (ph + 1) % 3)
        return dict(
            b=jnp.where(up, nb, b),
            c=jnp.where(up, nc, c),
            d=jnp.where(up, nd, d),
            m=jnp.where(up, m, s["m"]),
            phase=phase.astype(jnp.int32),
            go=up | (ph != 0),
        )

    init = dict(b=b, c=c, d=d, m=area(b, c, d), phase=jnp.zeros((), jnp.int32), go=npts > 4)
    s = tracing.while_loop(cond, body, init)
    return jnp.stack([a, s["b"], s["c"], s["d"]]), jnp.minimum(npts, 4)


def plane_mesh(g, pos1, mat1, size1, pos2, mat2, size2, margin):
    """Plane against a mesh (MuJoCo 4's mjc_PlaneConvex): the deepest vertex; then, of the polygons
    at that vertex, the one facing the plane most directly, pruned to four vertices around the
    deepest (hull4); its other vertices below the mesh's centre (along the plane normal) are contacts
    too."""

    def one(p1, r1, p2, r2, margin, mesh):
        n = r1[:, 2]
        local_n = r2.T @ n
        best = jnp.where(mesh["climb"], _climb(mesh, -local_n), support_index(mesh, -local_n))
        world = mesh["vert"] @ r2.T + p2
        d0 = math.dot(n, world[best] - p1)
        ok0 = d0 <= margin
        # the incident polygon: the first of those at the deepest vertex most anti-aligned with n
        polys = mesh["polymap"][best]
        pdot = jnp.where(polys >= 0, mesh["polynormal"][jnp.maximum(polys, 0)] @ local_n, jnp.inf)
        k = jnp.argmin(pdot)
        has_face = pdot[k] < 1.0
        face = mesh["polyvert"][jnp.maximum(polys[k], 0)]
        nface = mesh["polynum"][jnp.maximum(polys[k], 0)]
        a = jnp.argmax(face == best).astype(jnp.int32)
        idx, nq = _hull4(mesh["vert"][jnp.maximum(face, 0)], nface, a)
        pts = world[jnp.maximum(face[idx], 0)]
        below = math.dot(pts - p2, n) <= 0
        ok = ok0 & has_face & (jnp.arange(4, dtype=jnp.int32) > 0) & (jnp.arange(4, dtype=jnp.int32) < nq) & below
        # compact: the first contact, then the kept vertices in hull4's order
        rank = jnp.where(ok, jnp.cumsum(ok, dtype=jnp.int32), 0)
        pick = (rank[None, :] == jnp.arange(4, dtype=jnp.int32)[:, None]) & ok[None, :]
        d = math.dot(pts - p1, n)
        dist = jnp.where(jnp.any(pick, 1), pick.astype(d.dtype) @ d, 0.0).at[0].set(d0)
        pnt = (pick.astype(d.dtype) @ pts).at[0].set(world[best])
        valid = jnp.any(pick, 1).at[0].set(ok0)
        return dist, pnt - n * (0.5 * dist)[:, None], jnp.broadcast_to(n, (4, 3)), valid

    dist, pos, normal, valid = jax.vmap(one)(pos1, mat1, pos2, mat2, margin, g.mesh2)
    return dist, pos, normal, jnp.zeros_like(pos), valid
