"""Meshes and ellipsoids against MuJoCo 4's contacts: plane-mesh, the convex pairs with meshes (with
MuJoCo's multi-contact search), and the ellipsoid pairs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.physics.test_collision import CONVEX_TOL, _compare, _matched, _quat, _random_pose, _scene

# an irregular convex blob (30 points: MuJoCo walks its hull graph) and a box as a mesh (8 vertices:
# MuJoCo searches them all), both with polygons (the box's faces merged into quadrilaterals)
_BLOB = " ".join(f"{x:.5f}" for x in (np.random.default_rng(7).standard_normal((30, 3)) * [0.05, 0.04, 0.03]).ravel())
_CRATE = " ".join(
    f"{s * h}" for c in range(8) for s, h in zip(((c & 1) * 2 - 1, (c & 2) - 1, (c & 4) // 2 - 1), (0.05, 0.04, 0.03))
)
ASSETS = f'<asset><mesh name="blob" vertex="{_BLOB}"/><mesh name="crate" vertex="{_CRATE}"/></asset>'


def test_plane_mesh_matches_mujoco():
    """MuJoCo 4's plane-mesh: the deepest vertex (hill climb on the blob's hull, full search on the
    crate's eight), the polygon at it facing the plane, pruned to four; lying exactly flat too."""
    only_plane = 'contype="2" conaffinity="1"'  # the meshes touch the plane, not each other
    xml = f"""<mujoco>{ASSETS}<worldbody><geom type="plane" size="1 1 .1" contype="1" conaffinity="2"/>
      <body><freejoint/><geom type="mesh" mesh="blob" margin=".01" {only_plane}/></body>
      <body pos=".5 0 0"><freejoint/><geom type="mesh" mesh="crate" {only_plane}/></body></worldbody></mujoco>"""
    mm, model, md = _scene(xml)
    rng = np.random.default_rng(0)
    counts, errs = {}, []
    for trial in range(40):
        _random_pose(mm, md, rng, lift_first=True)
        md.qpos[[2, 9]] = rng.uniform(-0.02, 0.05, 2)
        md.qpos[7] += 0.5
        if trial < 4:  # the crate exactly flat: four vertices tie for the deepest
            md.qpos[9:14] = [0.029 + 0.001 * trial, 1, 0, 0, 0]
        ours, ref = _compare(mm, model, md, trial)
        for g in (1, 2):
            n = int(np.sum(ref[:, 1] == g))
            counts[g, n] = counts.get((g, n), 0) + 1
        if len(ref):
            errs.append(_matched(ours, ref))
    assert max(errs) < 1e-9, max(errs)
    assert counts.get((2, 4), 0) >= 4 and counts.get((1, 3), 0) >= 5, counts


def test_mesh_pairs_match_mujoco():
    """Sphere, capsule, box and mesh against meshes (multiccd on, MuJoCo 4's default; all but the meshes
    with a margin, which MuJoCo 4 takes off for GJK and adds back): random poses,
    then a box resting on the crate (face on face: four contacts) and a capsule lying on it (edge on
    face: two)."""
    prim = 'contype="0" conaffinity="1"'
    xml = f"""<mujoco><option gravity="0 0 0"/>{ASSETS}<worldbody>
      <body><freejoint/><geom name="blob" type="mesh" mesh="blob"/></body>
      <body><freejoint/><geom name="crate" type="mesh" mesh="crate"/></body>
      <body><freejoint/><geom name="ball" type="sphere" size=".03" margin=".004" {prim}/></body>
      <body><freejoint/><geom name="rod" type="capsule" size=".015 .04" margin=".01" {prim}/></body>
      <body><freejoint/><geom name="brick" type="box" size=".03 .02 .02" margin=".005" {prim}/></body>
    </worldbody></mujoco>"""
    mm, model, md = _scene(xml)
    rng = np.random.default_rng(3)
    errs, kinds = [], {}
    for trial in range(50):
        _random_pose(mm, md, rng, lift_first=True)
        stacked = trial >= 30
        if stacked:  # the crate at the origin, the brick on it or the rod lying on it, the rest away
            lie = trial % 2
            on, off = (21, 28) if lie else (28, 21)
            md.qpos[7:14] = [0, 0, 0, *_quat(rng, 0.02)]
            top = 0.03 + (0.015 if lie else 0.02) + rng.uniform(-0.004, 0.001)
            md.qpos[on : on + 7] = [*rng.uniform(-0.02, 0.02, 2), top, *_quat(rng, 0.02, base=np.pi / 2 * lie)]
            for k, adr in enumerate((0, 14, off)):
                md.qpos[adr : adr + 3] = [1 + k, 1, 0]
        ours, ref = _compare(mm, model, md, trial)
        for pair in set(map(tuple, ref[:, :2].astype(int))):
            n = int(np.sum(np.all(ref[:, :2] == pair, axis=1)))
            key = (mm.geom(pair[0]).name, mm.geom(pair[1]).name, n)
            kinds[key] = kinds.get(key, 0) + 1
        if len(ref):
            errs.append(_matched(ours, ref))
    assert max(errs) < CONVEX_TOL and np.median(errs) < 1e-10, (max(errs), np.median(errs))
    assert kinds.get(("brick", "crate", 4), 0) >= 5 and kinds.get(("rod", "crate", 2), 0) >= 5, kinds
    for other in ("ball", "rod", "brick", "crate"):
        assert any(k[:2] == ("blob", other) or k[:2] == (other, "blob") for k in kinds), (other, kinds)


def test_ellipsoid_pairs_match_mujoco():
    """An ellipsoid against every primitive MuJoCo collides it with by its convex collider, with a
    margin (sphere, ellipsoid, box: MuJoCo 4 collides them bare first, adding the margin after) and
    without (capsule, cylinder)."""
    others = [
        'type="sphere" size=".03" margin=".005"',
        'type="capsule" size=".02 .04"',
        'type="ellipsoid" size=".03 .02 .04" margin=".005"',
        'type="cylinder" size=".03 .03"',
        'type="box" size=".03 .02 .025" margin=".005"',
    ]
    bodies = "".join(f'<body><freejoint/><geom {o} contype="0" conaffinity="1"/></body>' for o in others)
    xml = f"""<mujoco><option gravity="0 0 0"/><worldbody>
      <body><freejoint/><geom name="egg" type="ellipsoid" size=".05 .03 .04"/></body>{bodies}</worldbody></mujoco>"""
    mm, model, md = _scene(xml)
    rng = np.random.default_rng(4)
    errs, touched = [], set()
    for trial in range(30):
        _random_pose(mm, md, rng, lift_first=True)
        md.qpos[2] -= 0.1
        near = 7 * (1 + trial % 5)  # one of the others beside the egg
        md.qpos[near : near + 3] = md.qpos[:3] + rng.uniform(-0.05, 0.05, 3)
        ours, ref = _compare(mm, model, md, trial)
        touched |= set(ref[:, :2].astype(int).ravel().tolist())
        if len(ref):
            errs.append(_matched(ours, ref))
    assert max(errs) < CONVEX_TOL and np.median(errs) < 1e-10, (max(errs), np.median(errs))
    assert touched >= set(range(6)), touched


@pytest.mark.parametrize(
    "geoms, match",
    [
        ('type="cylinder" size=".05 .05"', "cylinder and a mesh .*multiccd"),
    ],
    ids=["cylinder-mesh-multiccd"],
)
def test_mesh_pairs_refused_where_they_differ(geoms, match):
    import hurtle.physics as hp

    xml = f"""<mujoco>{ASSETS}<worldbody><body><freejoint/><geom {geoms}/></body>
      <body><freejoint/><geom type="mesh" mesh="blob"/></body></worldbody></mujoco>"""
    with pytest.raises(NotImplementedError, match=match):
        hp.load(xml)
    if "cylinder" in geoms:  # one contact with multiccd off
        hp.load(xml.replace("<worldbody>", '<option><flag multiccd="disable"/></option><worldbody>'))
