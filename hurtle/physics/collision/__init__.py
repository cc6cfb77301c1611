"""Collision detection: candidate pairs decided when the model is built, a branch-free narrow phase.

- `pairs`: the broad phase and the pair table (pair groups by geometry-type pair, the contact cap's plan);
- `contacts`: `collision` (mj_collision) over the groups, contact frames and mixed parameters;
- narrow phase: `primitives` (planes, spheres, capsules, cylinders), `box` (capsule-box, box-box), `convex`
  (MuJoCo's convex collider) on `ccd` (GJK and EPA) and `multiccd` (multi-contact search), `mesh` (hull tables,
  plane-mesh), `hfield` (height fields).

Imports point one way: contacts -> pairs -> the narrow-phase modules -> ccd, multiccd, mesh.
"""

from hurtle.physics.collision.contacts import collision, contact_order, make_frame, slot_geoms
from hurtle.physics.collision.pairs import MESH_TABLE_MB, NARROW, build_compaction, build_groups

__all__ = [
    "MESH_TABLE_MB",
    "NARROW",
    "build_compaction",
    "build_groups",
    "collision",
    "contact_order",
    "make_frame",
    "slot_geoms",
]
