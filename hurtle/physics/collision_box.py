"""Box primitives of the narrow phase: capsule-box and box-box (MuJoCo's mjc_CapsuleBox, mjc_BoxBox)."""

from __future__ import annotations

# (type1, type2) -> (narrow-phase function, contact slots per pair), merged into collision.NARROW
NARROW: dict = {}
