"""Collision detection: candidate pairs decided when the model is built, a branch-free narrow phase.

Every geom pair that can ever touch (contype/conaffinity, weld and parent filters, `<exclude>`,
explicit `<pair>`s) gets a fixed number of contact slots, grouped by geometry-type pair so that each
narrow-phase function runs once, vectorised over its group. At run time a pair's slots are marked
active or not; nothing is skipped with a Python branch on state.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import collision_convex, hfield, math, mesh, tracing
from hurtle.physics.dataclass import pytree_dataclass, static_field
from hurtle.physics.types import Data, Model

_DSBL = mujoco.mjtDisableBit
_ENBL = mujoco.mjtEnableBit
PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = 0, 1, 2, 3, 4, 5, 6, 7
_NAMES = {
    PLANE: "plane",
    HFIELD: "hfield",
    SPHERE: "sphere",
    CAPSULE: "capsule",
    ELLIPSOID: "ellipsoid",
    CYLINDER: "cylinder",
    BOX: "box",
    MESH: "mesh",
    8: "sdf",
}


@pytree_dataclass
class PairGroup:
    """Candidate pairs of one geometry-type pair (static)."""

    types: tuple = static_field()  # (type1, type2), type1 <= type2
    geom1: np.ndarray = static_field()
    geom2: np.ndarray = static_field()
    ipair: np.ndarray = static_field()  # explicit <pair> index or -1
    condim: np.ndarray = static_field()
    slot: np.ndarray = static_field()  # (k, ncon) contact slots of each pair
    mesh1: dict | None = static_field(default=None)  # mesh tables of geom1 per pair (hurtle.physics.mesh)
    mesh2: dict | None = static_field(default=None)
    hfield: dict | None = static_field(default=None)  # height field tables (hurtle.physics.hfield)
    # whether a pair of the group has a margin or gap: MuJoCo 4's convex collider then runs GJK on the
    # bare shapes first (the margin added after) and inflates them only for a deep contact
    margin: bool = static_field(default=False)


@pytree_dataclass
class Compaction:
    """A contact capacity below the candidate slots (MJCF `<size nconmax>`, as MuJoCo Warp's): collision
    fills every candidate slot, then the contact arrays keep, for each condim, the first `cap` active
    candidates of that condim in slot order. Constraint rows exist for the kept slots only, so the
    solver's work follows the contacts that can touch at once instead of every pair that ever could."""

    cand: tuple = static_field()  # candidate slots of each condim class (np arrays, increasing)
    cap: tuple = static_field()  # kept slots of each class


def build_compaction(dims: np.ndarray, nconmax: int) -> tuple[Compaction | None, np.ndarray]:
    """The compaction of candidate slots of condims `dims` to at most `nconmax` per condim, and the
    condims of the kept slots (classes in condim order); None (and `dims`) when every class fits."""
    dims = np.asarray(dims, np.int32)
    classes = [(k, np.nonzero(dims == k)[0]) for k in (1, 3, 4, 6)]
    classes = [(k, c, min(nconmax, c.size)) for k, c in classes if c.size]
    if all(cap == c.size for _, c, cap in classes):
        return None, dims
    kept = np.concatenate([np.full(cap, k, np.int32) for k, _, cap in classes])
    comp = Compaction(
        cand=tuple(c.astype(np.int32) for _, c, _ in classes),
        cap=tuple(cap for *_, cap in classes),
    )
    return comp, kept


def compact(c: Compaction, active: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(source candidate slot of every kept slot, whether it holds a contact, active candidates dropped).

    Branch-free: kept slot p of a class takes its candidate of rank p among the active ones
    (`math.first_active`)."""
    srcs, kept, dropped = [], [], jnp.zeros((), jnp.int32)
    for cand, cap in zip(c.cand, c.cap):
        idx, valid, count = math.first_active(math.take(active, cand), cap)
        srcs.append(jnp.asarray(cand, jnp.int32)[idx])
        kept.append(valid)
        dropped = dropped + jnp.maximum(count[-1] - cap, 0)
    return jnp.concatenate(srcs), jnp.concatenate(kept), dropped


def _weld_parent(m: mujoco.MjModel, w: int) -> int:
    return int(m.body_weldid[m.body_parentid[w]])


def candidate_pairs(m: mujoco.MjModel) -> list[tuple[int, int, int]]:
    """(geom1, geom2, ipair) of every pair MuJoCo's collision could ever test, in its order."""
    if m.opt.disableflags & (_DSBL.mjDSBL_CONSTRAINT | _DSBL.mjDSBL_CONTACT):
        return []
    filterparent = not m.opt.disableflags & _DSBL.mjDSBL_FILTERPARENT
    excluded = set(int(s) for s in m.exclude_signature)
    explicit = {}
    for k in range(m.npair):
        g1, g2 = int(m.pair_geom1[k]), int(m.pair_geom2[k])
        explicit[(min(g1, g2), max(g1, g2))] = k
    pairs = []
    for g1 in range(m.ngeom):
        for g2 in range(g1 + 1, m.ngeom):
            key = (g1, g2)
            if key in explicit:
                pairs.append((g1, g2, explicit.pop(key)))
                continue
            ct1, ca1, ct2, ca2 = m.geom_contype[g1], m.geom_conaffinity[g1], m.geom_contype[g2], m.geom_conaffinity[g2]
            if not (ct1 & ca2) and not (ct2 & ca1):
                continue
            b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
            w1, w2 = int(m.body_weldid[b1]), int(m.body_weldid[b2])
            if w1 == w2 or (m.body_dofnum[w1] == 0 and m.body_dofnum[w2] == 0):
                continue
            if filterparent and w1 and w2 and (w1 == _weld_parent(m, w2) or w2 == _weld_parent(m, w1)):
                continue
            lo, hi = min(b1, b2), max(b1, b2)
            if (lo << 16) + hi in excluded:
                continue
            pairs.append((g1, g2, -1))
    pairs += [(min(k_), max(k_), v) for k_, v in explicit.items()]
    out = []
    for g1, g2, ip in pairs:
        if m.geom_type[g1] > m.geom_type[g2]:
            g1, g2 = g2, g1
        out.append((g1, g2, ip))
    return out


def narrow(types: tuple, multiccd: bool) -> tuple | None:
    """(function, contact slots per pair) of a geometry-type pair, or None when unsupported. A height
    field pair's slots depend on its group (hurtle.physics.hfield.contacts_per_pair): None here."""
    if types in hfield.PAIRS:
        return _hfield_fn(types[1]), None
    return NARROW.get(types) or collision_convex.narrow_table(multiccd).get(types)


_HFIELD_FNS: dict = {}


def _hfield_fn(t2: int):
    if t2 not in _HFIELD_FNS:
        _HFIELD_FNS[t2] = hfield.make_hfield(t2)
    return _HFIELD_FNS[t2]


def _a(t: int) -> str:
    name = _NAMES.get(t, str(t))
    return ("an " if name[0] in "aeiou" else "a ") + name


def _pair_margin(m: mujoco.MjModel, g1: int, g2: int, ipair: int) -> float:
    """The margin plus gap MuJoCo gives a pair's narrow phase."""
    if m.opt.enableflags & _ENBL.mjENBL_OVERRIDE:
        return float(m.opt.o_margin)
    if ipair >= 0:
        return float(m.pair_margin[ipair] + m.pair_gap[ipair])
    return float(m.geom_margin[g1] + m.geom_margin[g2] + m.geom_gap[g1] + m.geom_gap[g2])


def _condim(m: mujoco.MjModel, g1: int, g2: int, ipair: int) -> int:
    if ipair >= 0:
        return int(m.pair_dim[ipair])
    p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
    if p1 != p2:
        return int(m.geom_condim[g1] if p1 > p2 else m.geom_condim[g2])
    return int(max(m.geom_condim[g1], m.geom_condim[g2]))


# Pairs collided by another type pair's traced function, with the same result: a sphere is a capsule of zero
# half-length (`_shared_sizes` zeroes the sizes past its radius, which MuJoCo keeps as the file gave them) in its
# support and in its core (a point is a segment of length zero), and against an ellipsoid both take the convex
# collider's same path (no features, so no multi-contact search). One traced copy of the collider fewer where a
# model has both (benchmarks/NOTES.md §25).
SHARED = {(SPHERE, ELLIPSOID): (CAPSULE, ELLIPSOID)}


def _shared_sizes(m: Model, geoms: np.ndarray):
    """The sizes of geoms 1 of the pairs: a sphere's unused sizes read as zero where it is collided as a
    capsule (SHARED; MuJoCo keeps whatever sizes the file gave a sphere beyond its radius)."""
    size = math.take(m.geom_size, geoms)
    if not any(g.types in SHARED.values() for g in m.collision):
        return size
    sphere = np.asarray(m.geom_type)[geoms] == SPHERE
    return size * np.where(sphere[:, None], np.array([1.0, 0.0, 0.0]), 1.0).astype(size.dtype)


def build_groups(m: mujoco.MjModel, names: dict, source: str) -> tuple[tuple, np.ndarray]:
    """Pair groups and the condim of every contact slot; refuses unsupported pairs by name."""
    groups = {}
    multiccd = not m.opt.disableflags & _DSBL.mjDSBL_MULTICCD
    for g1, g2, ip in candidate_pairs(m):
        t = (int(m.geom_type[g1]), int(m.geom_type[g2]))
        entry = narrow(t, multiccd)
        label = lambda g: f"geom {names['geom'][g]!r}" if names["geom"][g] else f"geom #{g}"  # noqa: E731
        what = f"{_a(t[0])} and {_a(t[1])} ({label(g1)}, {label(g2)})"
        if (
            entry is not None
            and entry[0] not in [f for f, _ in NARROW.values()]
            and (m.opt.disableflags & _DSBL.mjDSBL_NATIVECCD)
        ):
            raise NotImplementedError(
                f"{source}: the nativeccd disable flag (MuJoCo's libccd collider) is not supported by hurtle; "
                f"remove it to collide {what}"
            )
        if entry is None:
            raise NotImplementedError(f"{source}: collisions between {what} are not supported by hurtle yet")
        if t[0] == HFIELD:
            hfield.check(m, g1, source, label(g1))
        groups.setdefault(SHARED.get(t, t), []).append((g1, g2, ip, _condim(m, g1, g2, ip)))
    out, dims, nslot = [], [], 0
    tables = {}  # mesh id -> its tables, built once however many pairs it is in
    for t in sorted(groups):
        rows = groups[t]
        arr = np.array(rows, dtype=np.int32)
        margins = [_pair_margin(m, g1, g2, ip) for g1, g2, ip, _ in rows]
        hf = hfield.tables(m, arr[:, 0], arr[:, 1], margins) if t[0] == HFIELD else None
        n = hfield.contacts_per_pair(hf) if hf else narrow(t, multiccd)[1]
        slot = nslot + np.arange(len(rows) * n).reshape(len(rows), n)
        nslot += slot.size
        dims += [c for *_, c in rows for _ in range(n)]
        meshes = [_mesh_tables(m, tables, arr[:, i], t, names, source) if t[i] == MESH else None for i in (0, 1)]
        out.append(
            PairGroup(
                types=t,
                geom1=arr[:, 0],
                geom2=arr[:, 1],
                ipair=arr[:, 2],
                condim=arr[:, 3],
                slot=slot,
                mesh1=meshes[0],
                mesh2=meshes[1],
                hfield=hf,
                margin=bool(any(mg > 0 for mg in margins)),
            )
        )
    return tuple(out), np.array(dims, dtype=np.int32)


def _mesh_tables(m: mujoco.MjModel, tables: dict, geoms: np.ndarray, types: tuple, names: dict, source: str) -> dict:
    """One side's mesh tables of a pair group, stacked per pair; refuses tables over MESH_TABLE_MB."""
    ids = [int(m.geom_dataid[g]) for g in geoms]
    for k in set(ids):
        if k not in tables:
            tables[k] = mesh.mesh_tables(m, k)
    per_pair = [tables[k] for k in ids]
    size = mesh.table_bytes(per_pair) / 2**20
    if size > MESH_TABLE_MB:
        k = max(set(ids), key=lambda k: len(tables[k]["vert"]))
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_MESH, k) or f"#{k}"
        raise ValueError(
            f"{source}: the collision tables of {len(geoms)} {_NAMES[types[0]]}-{_NAMES[types[1]]} pairs would take "
            f"{size:,.0f} MB, over hurtle.physics.collision.MESH_TABLE_MB = {MESH_TABLE_MB:,} (every pair holds "
            f"its meshes' hull vertices and polygons, padded to the largest: mesh {name!r}, {len(tables[k]['vert']):,} "
            "collision vertices). Lower the meshes' hull sizes (MJCF <mesh maxhullvert=...>), keep pairs that cannot "
            "touch apart (contype/conaffinity, <contact><exclude>), or raise the limit."
        )
    return mesh.stack(per_pair)


MESH_TABLE_MB = 256  # the largest mesh tables one pair group may hold (they are constants of the program)
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


# (type1, type2) -> (narrow-phase function, contact slots per pair); other modules add theirs below
NARROW = {
    (PLANE, SPHERE): (plane_sphere, 1),
    (PLANE, CAPSULE): (plane_capsule, 2),
    (PLANE, BOX): (plane_box, 4),
    (PLANE, CYLINDER): (plane_cylinder, 4),
    (SPHERE, SPHERE): (sphere_sphere, 1),
    (SPHERE, CAPSULE): (sphere_capsule, 1),
    (SPHERE, BOX): (sphere_box, 1),
    (SPHERE, CYLINDER): (sphere_cylinder, 1),
    (CAPSULE, CAPSULE): (capsule_capsule, 2),
    (PLANE, MESH): (mesh.plane_mesh, mesh.PLANE_MESH_CONTACTS),
}


def make_frame(normal: jax.Array, tangent: jax.Array) -> jax.Array:
    """Contact frame with the normal in the first row (mju_makeFrame)."""
    x = math.normalize(normal)
    default = jnp.where(
        (jnp.abs(x[..., 1]) < 0.5)[..., None], jnp.array([0.0, 1, 0], x.dtype), jnp.array([0.0, 0, 1], x.dtype)
    )
    y = jnp.where((math.dot(tangent, tangent) < 0.25)[..., None], default, tangent)
    y = y - x * math.dot(x, y)[..., None]
    # a tangent along the normal leaves nothing: mju_normalize3 then gives (1, 0, 0), and so must we (the
    # friction rows would be zero, and the contact frictionless)
    norm = math.safe_norm(y, keepdims=True)
    y = jnp.where(norm < math.MINVAL, jnp.array([1.0, 0, 0], x.dtype), y / jnp.maximum(norm, math.MINVAL))
    rows = np.eye(3, dtype=x.dtype)[:, :, None]
    return x[..., None, :] * rows[0] + y[..., None, :] * rows[1] + math.cross(x, y)[..., None, :] * rows[2]


# the contact parameters' columns: solref, solreffriction, solimp, friction, margin, margin + gap
_SOLREF, _SRF, _SOLIMP, _FRICTION, _MARGIN, _REACH = (
    np.arange(a, b) for a, b in ((0, 2), (2, 4), (4, 9), (9, 14), (14, 15), (15, 16))
)
# each column's field in the geoms' table below (solmix, solref 2, solimp 5, friction 3, margin, gap)
_GEOM_COL = np.array([1, 2, 1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10, 10, 11, 11])
# and in the explicit pairs' (solref 2, solreffriction 2, solimp 5, friction 5, margin, gap)
_PAIR_COL = np.arange(16)


def _entry_reader(fields: list, ncol: int):
    """read(i, c) -> (len(i), ncol): entry (i[k], c[j]) of the fields (each (n,) or (n, w)) side by side
    as the columns of one table, for static row indices `i` and a column `c` (a scalar or one per
    output column): a gather with static 2D indices from the flattened table, so an expression over
    its results is elementwise over the whole output (nothing computed per row and broadcast)."""
    table = jnp.concatenate([f if f.ndim == 2 else f[:, None] for f in map(jnp.asarray, fields)], -1)
    width, flat = table.shape[1], table.ravel()

    def read(i, c):
        return flat[(np.asarray(i) * width)[:, None] + np.broadcast_to(c, (len(i), ncol))]

    return read


def _params(m: Model, g1: np.ndarray, g2: np.ndarray, ipair: np.ndarray) -> jax.Array:
    """Mixed contact parameters of the pairs (g1, g2) (mj_contactParam, or the explicit pair's), as the
    columns of one array (pairs, 16): solref, solreffriction, solimp, friction, margin, and margin +
    gap (how near the narrow phase looks).

    One elementwise expression over the whole array: each entry reads its geoms' values by a gather
    with static indices, so no value is computed per pair and broadcast over columns. XLA computes
    the model's values once, outside a rollout's loop, and each array it computes there is a kernel
    of its own: here one (a gather or a division with more than one user was one each)."""
    dt = m.geom_solref.dtype
    ncol = len(_GEOM_COL)
    col = np.arange(ncol)
    geom = _entry_reader(
        [m.geom_solmix, m.geom_solref, m.geom_solimp, m.geom_friction, m.geom_margin, m.geom_gap], ncol
    )
    v1, v2 = geom(g1, _GEOM_COL), geom(g2, _GEOM_COL)
    s1, s2 = geom(g1, 0), geom(g2, 0)  # solmix
    r1, r2 = geom(g1, 1), geom(g2, 1)  # solref[0]
    both = (s1 >= math.MINVAL) & (s2 >= math.MINVAL)
    mix = jnp.where(
        both,
        s1 / jnp.where(both, s1 + s2, 1.0),
        jnp.where((s1 < math.MINVAL) & (s2 < math.MINVAL), 0.5, jnp.where(s1 < math.MINVAL, 0.0, 1.0)),
    )
    mixed = mix * v1 + (1 - mix) * v2
    standard = (r1 > 0) & (r2 > 0)
    out = jnp.where(np.isin(col, _SOLREF), jnp.where(standard, mixed, jnp.minimum(v1, v2)), mixed)
    out = jnp.where(np.isin(col, _FRICTION), jnp.maximum(v1, v2), out)
    p1, p2 = m.geom_priority[g1][:, None], m.geom_priority[g2][:, None]
    by_priority = np.isin(col, np.concatenate([_SOLREF, _SOLIMP, _FRICTION]))
    out = jnp.where(by_priority & (p1 > p2), v1, jnp.where(by_priority & (p1 < p2), v2, out))
    out = jnp.where(np.isin(col, _SRF), 0.0, out)
    # margin and gap: the geoms' summed; margin + gap for the narrow phase
    margin = v1 + v2
    gap = geom(g1, 12) + geom(g2, 12)
    explicit = ipair >= 0
    if np.any(explicit):  # an explicit pair's own parameters
        k = np.where(explicit, ipair, 0)
        pair = _entry_reader(
            [m.pair_solref, m.pair_solreffriction, m.pair_solimp, m.pair_friction, m.pair_margin, m.pair_gap], ncol
        )
        e = explicit[:, None]
        out = jnp.where(e, pair(k, _PAIR_COL), out)
        margin = jnp.where(e, pair(k, 14), margin)
        gap = jnp.where(e, pair(k, 15), gap)
    if m.enabled(_ENBL.mjENBL_OVERRIDE):  # MuJoCo's global margin (the gap stays the pair's)
        margin = jnp.broadcast_to(jnp.asarray(m.opt.o_margin, dt), margin.shape)
    out = jnp.where(np.isin(col, _MARGIN), margin, out)
    out = jnp.where(np.isin(col, _REACH), margin + gap, out)
    return jnp.where(np.isin(col, _FRICTION), jnp.maximum(jnp.asarray(1e-5, dt), out), out)


def slot_geoms(m: Model) -> tuple[np.ndarray, np.ndarray] | None:
    """(geom1, geom2) of every contact slot, fixed when the model is built: collision fills slot
    `g.slot[i, j]` from pair i of group g. None when the caller fills the slots (`contact_dims`) or
    when the contacts are compacted (`nconmax`): the slots' geoms are then data."""
    if not m.collision or m.contact_compaction is not None:
        return None
    g1, g2 = np.full(m.ncon_max, -1), np.full(m.ncon_max, -1)
    for g in m.collision:
        g1[g.slot], g2[g.slot] = g.geom1[:, None], g.geom2[:, None]
    return g1, g2


@tracing.inline_numpy
def collision(m: Model, d: Data) -> Data:
    """Contacts of every candidate pair: geometry, frame and mixed parameters (mj_collision).

    The groups' contact slots are consecutive, in group order, and fill the contact arrays, so the
    arrays are built by concatenation (parameters and geom poses are read once for all pairs), with
    no scatter: each scatter is its own XLA kernel and costs compile time.
    """
    groups = m.collision
    if not groups:
        return d
    with jax.named_scope("collision"):
        g1 = np.concatenate([g.geom1 for g in groups])
        g2 = np.concatenate([g.geom2 for g in groups])
        ipair = np.concatenate([g.ipair for g in groups])
        pos1, mat1, size1 = math.take(d.geom_xpos, g1), math.take(d.geom_xmat, g1), _shared_sizes(m, g1)
        pos2, mat2, size2 = math.take(d.geom_xpos, g2), math.take(d.geom_xmat, g2), math.take(m.geom_size, g2)
        # every slot's parameters, of its pair (pairs in group order, each pair's slots consecutive)
        ps = np.concatenate([np.repeat(np.arange(len(g.geom1)), g.slot.shape[1]) for g in groups])
        ps += np.repeat(np.cumsum([0] + [len(g.geom1) for g in groups])[:-1], [g.slot.size for g in groups])
        per_slot = _params(m, g1[ps], g2[ps], ipair[ps])
        outs, start, first = [], 0, 0
        multiccd = not m.disabled(_DSBL.mjDSBL_MULTICCD)
        for g in groups:
            fn = narrow(g.types, multiccd)[0]
            extra = {"m": m} if getattr(fn, "uses_model", False) else {}
            sl = slice(start, start + len(g.geom1))
            # margin + gap of each pair: its first slot's (a reshape and a slice, which XLA does not
            # hoist out of a rollout's loop as it does a gather)
            npair, ncon = g.slot.shape
            reach = per_slot[first : first + npair * ncon, _REACH[0]].reshape(npair, ncon)[:, 0]
            out = fn(g, pos1[sl], mat1[sl], size1[sl], pos2[sl], mat2[sl], size2[sl], reach, **extra)
            # (pairs, ncon, ...) -> (pairs * ncon, ...): the group's slots, pair by pair
            outs.append([x.reshape((-1,) + x.shape[2:]) for x in out])
            start, first = sl.stop, first + npair * ncon
        dist, pos, normal, tangent, ok = (jnp.concatenate(xs) for xs in zip(*outs))
        solref, srf, solimp, friction, margin = (
            per_slot[:, c[0] : c[-1] + 1] for c in (_SOLREF, _SRF, _SOLIMP, _FRICTION, _MARGIN)
        )
        # a contact inside the gap but outside the margin is excluded, as in MuJoCo
        active = ok & (dist < margin[:, 0])
        fields = dict(
            dist=dist,
            pos=pos,
            frame=make_frame(normal, tangent),
            includemargin=margin[:, 0],
            friction=friction,
            solref=solref,
            solreffriction=srf,
            solimp=solimp,
            geom1=jnp.asarray(g1[ps], jnp.int32),
            geom2=jnp.asarray(g2[ps], jnp.int32),
            active=active,
        )
        if m.contact_compaction is None:
            return d.replace(contact=d.contact.replace(**fields))
        src, kept, dropped = compact(m.contact_compaction, active)
        fields = {k: v[src] for k, v in fields.items()}
        fields["active"] = fields["active"] & kept
        return d.replace(contact=d.contact.replace(**fields), ncon_dropped=dropped)


def _register() -> None:
    from hurtle.physics import collision_box

    NARROW.update(collision_box.NARROW)


_register()
