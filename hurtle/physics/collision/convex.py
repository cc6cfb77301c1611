"""Convex narrow phase: support functions and the pairs MuJoCo collides with its native CCD.

MuJoCo collides the pairs involving ellipsoids and cylinders (and meshes) with its native convex
collider (`mjc_Convex` calling `mjc_ccd`, here `hurtle.physics.collision.ccd`): GJK and EPA on the Minkowski
difference of the two shapes' support functions, which this module defines for every primitive
(with MuJoCo's margin inflation). A sphere or capsule is collided as its core (a point or a
segment), and in MuJoCo 4 so is a margin on a pair with faces or edges.

Registered: plane-ellipsoid (mjc_PlaneConvex, exact; plane-mesh is `hurtle.physics.collision.mesh`) and the
pairs of CONVEX_PAIRS, with MuJoCo 4's multi-contact search (`hurtle.physics.collision.multiccd`) where
multiccd is on. A mesh's "size" is its table dict
(`hurtle.physics.collision.mesh.mesh_tables`, built once per mesh, stacked per pair).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from hurtle.physics import math
from hurtle.physics.collision import ccd, mesh, multiccd
from hurtle.physics.types import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, PLANE, SPHERE

MINVAL2 = math.MINVAL * math.MINVAL


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
    elif gtype == MESH:  # size: the mesh's tables (hurtle.physics.collision.mesh)
        p = size["vert"][mesh.support_index(size, local)]
    else:
        raise NotImplementedError(f"no support function for geom type {gtype}")
    out = pos + jnp.einsum("...ij,...j->...i", mat, p)
    return out + direction * (0.5 * jnp.asarray(margin))[..., None]


def feature(gtype: int, mat, size, direction):
    """The feature a support point lies on, as MuJoCo labels it: a cylinder's cap (0 top, 1 bottom),
    a box's vertex (bits: x, y, z on the positive side, as the support point picks it), a mesh's
    vertex; -1 for shapes without features."""
    local = jnp.einsum("...ji,...j->...i", mat, direction)
    if gtype == MESH:
        return mesh.support_index(size, local)
    if gtype == CYLINDER:
        return jnp.where(local[..., 2] >= 0, 0, 1).astype(jnp.int32)
    if gtype == BOX:
        bits = (local >= 0).astype(jnp.int32) * jnp.array([1, 2, 4], jnp.int32)
        return jnp.sum(bits, -1, dtype=jnp.int32)
    return jnp.full(local.shape[:-1], -1, jnp.int32)


def core_support(gtype: int, pos, mat, size, direction):
    """Support of a sphere's centre or a capsule's segment (mjc_pointSupport, mjc_lineSupport)."""
    if gtype == SPHERE:
        return pos
    axis = mat[..., :, 2]
    scl = jnp.where(math.dot(axis, direction) >= 0, size[..., 1], -size[..., 1])
    return pos + axis * scl[..., None]


# --- the narrow-phase functions ---


def _rotate_about(point, rot, pos, mat):
    """A geom frame rotated by `rot` about a point (mju_rotateFrame)."""
    rel = point - pos
    return pos - (math.matvec(rot, rel) - rel), math.matmul(rot, mat)


FACES, EDGES, CORES = (BOX, MESH, CYLINDER), (CAPSULE,), (SPHERE, CAPSULE)
DISCRETE = (BOX, MESH, HFIELD)  # polytopes: without a margin GJK and EPA end in finitely many steps


def has_features(t1: int, t2: int) -> bool:
    """Pairs MuJoCo 4 gives several contacts (face-face or edge-face) when multiccd is on."""
    return (t1 in FACES or t1 in EDGES) and (t2 in FACES or t2 in EDGES) and not (t1 in EDGES and t2 in EDGES)


def penetration(
    t1,
    t2,
    pos1,
    mat1,
    size1,
    pos2,
    mat2,
    size2,
    margin,
    iterations: int,
    tol,
    multi: bool = False,
    fixed: bool = True,
    bare_first: bool = False,
):
    """Contacts of two convex geoms per pair (mjc_penetration with native CCD): (dist, pos, normal,
    found), each with a trailing axis of contact slots: one, or with `multi` MuJoCo 4's multi-contact
    search (multiccd) on pairs with faces or edges, multiccd.contacts_per_pair.

    A sphere or capsule is first collided as its core (a point or a segment), and in MuJoCo 4 every
    pair with a margin is first collided bare (`bare_first`, and always for pairs with faces or edges):
    GJK on the un-inflated shapes, the margin added after; only a deeper contact runs GJK and EPA on
    the inflated shapes.
    """
    shrink = has_features(t1, t2) or bare_first
    multi = multi and has_features(t1, t2)

    def one(pos1, mat1, size1, pos2, mat2, size2, margin, tol):

        def sup(d):
            p1 = support(t1, pos1, mat1, size1, d, margin)
            p2 = support(t2, pos2, mat2, size2, -d, margin)
            ix = jnp.stack([feature(t1, mat1, size1, d), feature(t2, mat2, size2, -d)])
            return p1 - p2, p1, p2, ix

        sup_core, zero = None, jnp.zeros_like(margin)
        fm1 = fm2 = zero
        if t1 in CORES or t2 in CORES or shrink:
            bare = zero if shrink else margin

            def side(t, pos, mat, size, d):
                return core_support(t, pos, mat, size, d) if t in CORES else support(t, pos, mat, size, d, bare)

            def sup_core(d):
                p1 = side(t1, pos1, mat1, size1, d)
                p2 = side(t2, pos2, mat2, size2, -d)
                ix = jnp.stack([feature(t1, mat1, size1, d), feature(t2, mat2, size2, -d)])
                return p1 - p2, p1, p2, ix

            def lost(t, size):
                return size[0] + 0.5 * margin if t in CORES else (0.5 * margin if shrink else zero)

            fm1, fm2 = lost(t1, size1), lost(t2, size2)
        polytopes = t1 in DISCRETE and t2 in DISCRETE
        discrete = (polytopes & (margin == 0), jnp.asarray(polytopes))
        dist, x1, x2, hit, face = ccd.ccd(sup, sup_core, fm1, fm2, pos1, pos2, iterations, tol, fixed, discrete)
        dist, pos, normal = margin + dist, 0.5 * (x1 + x2), math.normalize(x1 - x2)
        if not multi:
            return dist[None], pos[None], normal[None], hit[None]
        k = multiccd.contacts_per_pair(t1, t2)
        g1, g2 = (pos1, mat1, size1), (pos2, mat2, size2)
        count, w1, w2, mdist, mnormal = multiccd.multicontact(t1, t2, g1, g2, margin, x1, x2, face)
        many = hit & (count > 0)
        slot = jnp.arange(k, dtype=jnp.int32)
        return (
            jnp.where(many, margin + mdist[:k], jnp.where(slot == 0, dist, 0.0)),
            jnp.where(many, 0.5 * (w1 + w2)[:k], pos),
            jnp.where(many, mnormal, normal) * jnp.ones((k, 1), normal.dtype),
            jnp.where(many, slot < count, hit & (slot == 0)),
        )

    tol = jnp.broadcast_to(tol, margin.shape)
    return jax.vmap(one)(pos1, mat1, size1, pos2, mat2, size2, margin, tol)


def make_convex(t1: int, t2: int, multi: bool):
    """The narrow-phase function of a convex pair (mjc_Convex), with MuJoCo 4's multi-contact search."""

    def convex(g, pos1, mat1, size1, pos2, mat2, size2, margin, m):
        size1 = g.mesh1 if t1 == MESH else size1
        size2 = g.mesh2 if t2 == MESH else size2
        it, tol = m.opt.ccd_iterations, m.opt.ccd_tolerance
        # GJK and EPA stop when every pair of the batch has converged, except in the solver's fixed
        # (reverse-differentiable) mode, where they run all their iterations
        fixed = m.opt.solver_mode == "fixed"
        dist, pos, normal, hit = penetration(
            t1, t2, pos1, mat1, size1, pos2, mat2, size2, margin, it, tol, multi, fixed, g.margin
        )
        return dist, pos, normal, jnp.zeros_like(pos), hit

    convex.uses_model = True
    return convex


def plane_convex(t2: int):
    """Plane against an ellipsoid: the deepest point (mjc_PlaneConvex without mesh vertices)."""

    def fn(g, pos1, mat1, size1, pos2, mat2, size2, margin):
        n = mat1[..., :, 2]
        s = support(t2, pos2, mat2, size2, -n, jnp.zeros_like(margin))
        dist = math.dot(n, s - pos1)
        pos = s - n * (0.5 * dist)[:, None]
        return dist[:, None], pos[:, None], n[:, None], jnp.zeros_like(pos)[:, None], (dist <= margin)[:, None]

    return fn


# MuJoCo 4's mjc_Convex pairs that hurtle collides, with multiccd off (one contact) and on
# (multiccd.multicontact): equal to MuJoCo's within 1e-4 (most to 1e-13; up to 4e-5 where GJK stops at
# its tolerance after a differently rounded path on a curved side). Measured in the tests and the
# notes of issue #4.
#
# One known difference, cylinder-box and cylinder-mesh with multiccd on: a cap (a regular 16-gon) lying in a
# face clips it to an affine image of the 16-gon, where quadrilaterals that are rotations of one another have
# exactly equal areas (an affine map scales every area alike). MuJoCo's quadrilateral search compares areas
# with `<=`, so on these ties the last bit of rounding picks the quadrilateral, and the path after it. multiccd
# rounds as MuJoCo 4.0.1 does (its cap tables, clipping arithmetic, no fused multiply-adds: `multiccd`'s
# docstring), so given MuJoCo's geom frames it picks MuJoCo's quadrilateral; the frames hurtle's kinematics
# computes can differ from MuJoCo's in their last bits, and then a tie can still go the other way (4 of 52
# four-contact cases of `test_collision_mesh.test_cylinder_on_faces_multiccd`, 20 before multiccd rounded as
# MuJoCo does): one vertex over, or another local optimum. The contacts are then four other vertices of the
# same contact polygon, with the same count and normal.
CONVEX_PAIRS = [
    (CAPSULE, CYLINDER),
    (CYLINDER, CYLINDER),
    (CYLINDER, BOX),
    (CYLINDER, MESH),
    (CAPSULE, MESH),
    (BOX, MESH),
    (MESH, MESH),
    (SPHERE, ELLIPSOID),
    (CAPSULE, ELLIPSOID),
    (ELLIPSOID, ELLIPSOID),
    (ELLIPSOID, CYLINDER),
    (ELLIPSOID, BOX),
    (SPHERE, MESH),
    (ELLIPSOID, MESH),
]


@functools.cache
def narrow_table(multi: bool) -> dict:
    """(type1, type2) -> (function, slots) of the registered convex pairs, for a multiccd setting."""
    table = {(PLANE, ELLIPSOID): (plane_convex(ELLIPSOID), 1)}
    for t in CONVEX_PAIRS:
        search = multi and has_features(*t)
        table[t] = (make_convex(*t, search), multiccd.contacts_per_pair(*t) if search else 1)
    return table
