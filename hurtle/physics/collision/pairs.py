"""The broad phase and the pair table, decided when the model is built.

Every geom pair that can ever touch (contype/conaffinity, weld and parent filters, `<exclude>`,
explicit `<pair>`s) gets a fixed number of contact slots, grouped by geometry-type pair so that each
narrow-phase function (`NARROW`) runs once, vectorised over its group; `Compaction` is the contact cap's
static plan.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from hurtle.physics import math
from hurtle.physics.collision import box, convex, hfield, mesh, primitives
from hurtle.physics.dataclass import pytree_dataclass, static_field
from hurtle.physics.types import BOX, CAPSULE, CYLINDER, ELLIPSOID, HFIELD, MESH, PLANE, SPHERE, Model

_DSBL = mujoco.mjtDisableBit
_ENBL = mujoco.mjtEnableBit
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
    mesh1: dict | None = static_field(default=None)  # mesh tables of geom1 per pair (hurtle.physics.collision.mesh)
    mesh2: dict | None = static_field(default=None)
    hfield: dict | None = static_field(default=None)  # height field tables (hurtle.physics.collision.hfield)
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
    explicit = {}  # a geom pair declared more than once is collided once per declaration, as in MuJoCo
    for k in range(m.npair):
        g1, g2 = int(m.pair_geom1[k]), int(m.pair_geom2[k])
        explicit.setdefault((min(g1, g2), max(g1, g2)), []).append(k)
    pairs = []
    for g1 in range(m.ngeom):
        for g2 in range(g1 + 1, m.ngeom):
            key = (g1, g2)
            if key in explicit:
                pairs += [(g1, g2, k) for k in explicit.pop(key)]
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
    pairs += [(min(k_), max(k_), k) for k_, ks in explicit.items() for k in ks]
    out = []
    for g1, g2, ip in pairs:
        if m.geom_type[g1] > m.geom_type[g2]:
            g1, g2 = g2, g1
        out.append((g1, g2, ip))
    return out


def narrow(types: tuple, multiccd: bool) -> tuple | None:
    """(function, contact slots per pair) of a geometry-type pair, or None when unsupported. A height
    field pair's slots depend on its group (hurtle.physics.collision.hfield.contacts_per_pair): None here."""
    if types in hfield.PAIRS:
        return _hfield_fn(types[1]), None
    return NARROW.get(types) or convex.narrow_table(multiccd).get(types)


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
                f"{source}: the nativeccd disable flag (MuJoCo's older libccd collider) is not supported by hurtle; "
                f"remove it to collide {what} with MuJoCo's native collider, which hurtle implements (libccd's "
                "contacts differ from it in depth and number)"
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
            f"{size:,.0f} MB, over hurtle.physics.collision.pairs.MESH_TABLE_MB = {MESH_TABLE_MB:,} (every pair holds "
            f"its meshes' hull vertices and polygons, padded to the largest: mesh {name!r}, {len(tables[k]['vert']):,} "
            "collision vertices). Lower the meshes' hull sizes (MJCF <mesh maxhullvert=...>), keep pairs that cannot "
            "touch apart (contype/conaffinity, <contact><exclude>), or raise the limit."
        )
    return mesh.stack(per_pair)


MESH_TABLE_MB = 256  # the largest mesh tables one pair group may hold (they are constants of the program)


# (type1, type2) -> (narrow-phase function, contact slots per pair) of every pair but the convex (GJK/EPA) and
# height-field ones, which `narrow` adds
NARROW = {
    **primitives.PAIRS,
    (PLANE, MESH): (mesh.plane_mesh, mesh.PLANE_MESH_CONTACTS),
    **box.PAIRS,
}
