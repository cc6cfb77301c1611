"""Capsule-box and box-box collisions against MuJoCo's: the same contact sets, and the same dynamics."""

from __future__ import annotations

import jax
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P
from tests.physics.test_collision import PRIMITIVES, _contacts, _tight

ATOL = 1e-9  # dist, pos and normal of every contact
TRAJ_TOL = 1e-6  # qpos over the rollout, by P.rel_error


def _pair_model(a, b):
    xml = f"""<mujoco><option gravity="0 0 0"/><worldbody>
      <body><freejoint/><geom name="a" {PRIMITIVES[a]} margin="0.02"/></body>
      <body pos="0 0 0.2"><freejoint/><geom name="b" {PRIMITIVES[b]} margin="0.01"/></body></worldbody></mujoco>"""
    return mujoco.MjModel.from_xml_string(xml)


def _matched(ours, ref):
    """ours reordered row by row to its nearest row of ref (contacts of equal depth sort ambiguously)."""
    left, out = list(range(len(ours))), []
    for row in ref:
        k = min(left, key=lambda i: np.max(np.abs(ours[i] - row)))
        left.remove(k)
        out.append(ours[k])
    return np.array(out).reshape(ref.shape)


def _quat(axis, deg):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    h = np.deg2rad(deg) / 2
    return np.r_[np.cos(h), np.sin(h) * axis]


def _random_pose(rng, trial):
    """A position near the other geom and an orientation: random, near-identity or near a multiple of 45 deg."""
    kind = trial % 3
    if kind == 0:
        q = rng.standard_normal(4)
    elif kind == 1:
        q = np.array([1.0, 0, 0, 0]) + 1e-3 * rng.standard_normal(4)  # near-parallel axes
    else:
        q = _quat(np.eye(3)[rng.integers(3)], 45 * rng.integers(8)) + 1e-7 * rng.standard_normal(4)
    return rng.uniform(-0.12, 0.12, 3), q / np.linalg.norm(q)


def _check(mm, md, model, run, poses):
    """Contacts of both engines at each (pos1, quat1, pos2, quat2); returns how many MuJoCo made."""
    seen = 0
    for label, (p1, q1, p2, q2) in poses:
        md.qpos[:] = np.r_[p1, q1, p2, q2]
        mujoco.mj_forward(mm, md)
        ours, ref = _contacts(model, run(model, hp.from_mjdata(model, md, mm)), md)
        assert ours.shape == ref.shape, f"{label}: {len(ours)} contacts, MuJoCo {len(ref)}"
        ours = _matched(ours, ref)
        np.testing.assert_array_equal(ours[:, :2], ref[:, :2])
        np.testing.assert_allclose(ours[:, 2:], ref[:, 2:], atol=ATOL, rtol=0, err_msg=label)
        seen += len(ref)
    return seen


def _mat(q):
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(q, float) / np.linalg.norm(q))
    return m.reshape(3, 3)


def _reach(kind, q):
    """How far a geom (PRIMITIVES' sizes) at orientation q reaches along +z (and -z)."""
    size = np.array([float(x) for x in PRIMITIVES[kind].split('size="')[1].split('"')[0].split()])
    m = _mat(q)
    if kind == "capsule":
        return size[0] + size[1] * abs(m[2, 2])
    return float(np.abs(m[2]) @ size)


def _stacked(pair, qa, xy, qb, depth):
    """geom a at the origin, geom b under it at xy, overlapping it by depth along z (negative: a gap)."""
    z = -_reach(pair[0], qa) - _reach(pair[1], qb) + depth
    return [0.0, 0, 0], qa, [xy[0], xy[1], z], qb


ID, C45 = [1.0, 0, 0, 0], np.sqrt(0.5)
STRUCTURED = {
    # (label, quat of a, xy of b, quat of b, overlap along z); capsule 0.06 x 0.15, boxes 0.1 x 0.15 x 0.08
    ("capsule", "box"): [
        ("lying on the top face", _quat([0, 1, 0], 90), [0, 0], ID, 0.003),
        ("lying across the top face", _quat([1, 0, 0], 90.0001), [0, 0.01], ID, 0.003),
        ("end into a face", ID, [0.02, 0.01], ID, 0.01),
        ("end into a face, tilted", _quat([1, 1, 0], 30), [0.02, 0.01], ID, 0.01),
        ("parallel to an edge", _quat([0, 1, 0], 90), [0, -(0.15 - 0.08) * C45], _quat([1, 0, 0], 45), 0.003),
        ("crossing an edge", _quat([0, 1, 0], 90), [0.02 + 0.02 * C45, 0.01], _quat([0, 1, 0], 45), 0.003),
        ("near a corner", _quat([1, 2, 3], 50), [0.03, -0.095], _quat([3, 1, 1], 20), 0.004),
        ("end inside the box", _quat([1, 2, 0], 20), [0.01, 0], ID, 0.05),
        ("within the margin", _quat([0, 1, 0], 90), [0, 0], ID, -0.01),
        ("apart", _quat([0, 1, 0], 90), [0, 0], ID, -0.05),
    ],
    ("box", "box"): [
        ("resting flat", ID, [0, 0], ID, 0.0005),
        ("resting flat, shifted", ID, [0.05, -0.07], ID, 0.0005),
        ("rotated 45 deg on top", ID, [0.02, 0.01], _quat([0, 0, 1], 45), 0.001),
        ("rotated 90 deg on top", ID, [0, 0], _quat([0, 0, 1], 90), 0.001),
        ("edge on a face", ID, [0.01, 0.02], _quat([1, 0, 0], 45), 0.003),
        ("corner on a face", ID, [0.01, 0.02], _quat([1, 1, 0], 50), 0.003),
        ("edge across edge", _quat([0, 1, 0], 45), [0, 0], _quat([1, 0, 0], 45), 0.003),
        ("edge across edge, skewed", _quat([0, 1, 0], 45), [0.01, 0], _quat([1, 0.2, 0], 40), 0.003),
        ("side by side", ID, [0.199, 0.05], _quat([0, 0, 1], 0.001), 0.21),
        ("deep", _quat([1, 2, 3], 10), [0.02, 0.03], ID, 0.05),
        ("within the margin", ID, [0, 0], _quat([0, 0, 1], 10), -0.01),
        ("apart", ID, [0, 0], ID, -0.05),
    ],
}


@pytest.mark.parametrize("pair", list(STRUCTURED), ids=lambda p: f"{p[0]}-{p[1]}")
def test_box_pairs_match_mujoco(pair):
    """Random poses (inside, touching, within margin, apart; near-parallel axes) and structured cases."""
    mm = _pair_model(*pair)
    model = hp.from_mujoco(mm)
    md = mujoco.MjData(mm)
    run = jax.jit(lambda m, d: hp.collision(m, hp.kinematics(m, d)))
    rng = np.random.default_rng(0)
    poses = []
    for trial in range(150):
        p1, q1 = _random_pose(rng, trial)
        p2, q2 = _random_pose(rng, trial)
        poses.append((f"trial {trial}", (p1, q1, p2 + [0, 0, 0.1], q2)))
    assert _check(mm, md, model, run, poses) >= 100
    structured = [(f"{pair}: {label}", _stacked(pair, *case)) for label, *case in STRUCTURED[pair]]
    assert _check(mm, md, model, run, structured) >= len(structured)


STACK = """<mujoco><option timestep="0.002"/><worldbody>
  <geom name="floor" type="box" size="1 1 0.1" pos="0 0 -0.1"/>
  <body pos="0 0 0.051"><freejoint/><geom type="box" size="0.1 0.1 0.05"/></body>
  <body pos="0.02 0.01 0.16" euler="0 0 30"><freejoint/><geom type="box" size="0.08 0.06 0.05"/></body>
  <body pos="0.4 0 0.12" euler="20 30 10"><freejoint/><geom type="box" size="0.05 0.07 0.04"/></body>
  <body pos="-0.4 0 0.07" euler="0 90 0"><freejoint/><geom type="capsule" size="0.05 0.15"/></body>
  <body pos="-0.4 0.3 0.2" euler="30 20 0"><freejoint/><geom type="capsule" size="0.04 0.1"/></body>
  <body pos="0.05 -0.02 0.28" euler="80 5 0"><freejoint/><geom type="capsule" size="0.03 0.12"/></body>
</worldbody></mujoco>"""


def test_falling_boxes_and_capsules_match_mujoco():
    """Boxes and capsules dropped on a box floor and on each other: qpos over 200 steps."""
    mm = _tight(mujoco.MjModel.from_xml_string(STACK))
    model = hp.from_mujoco(mm)
    md = mujoco.MjData(mm)

    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 200)
    ref, pairs = [], set()
    for _ in range(200):
        mujoco.mj_step(mm, md)
        ref.append(md.qpos.copy())
        pairs |= {tuple(mm.geom_type[[c.geom1, c.geom2]]) for c in md.contact[: md.ncon]}
    assert {(3, 6), (6, 6)} <= pairs
    assert P.rel_error(qpos, np.array(ref)) <= TRAJ_TOL
