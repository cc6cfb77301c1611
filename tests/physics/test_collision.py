"""Collision detection against MuJoCo's: the same contacts, and the same constrained dynamics."""

from __future__ import annotations

import collections
import functools
import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODELS = os.path.join(os.path.dirname(__file__), "models")
TOL = 1e-6


def _paths():
    paths = [os.path.join(MODELS, "collide.xml")]
    root = P.asset_dir("gymnasium")
    if root:
        paths += [os.path.join(root, f"{n}.xml") for n in ("ant", "humanoid", "walker2d", "hopper", "half_cheetah")]
    root = P.asset_dir("dm_control")
    if root:
        paths.append(os.path.join(root, "stacker.xml"))  # boxes stacked on boxes, sixteen plane-box pairs
    return paths


def _tight(mm):
    mm.opt.tolerance = 1e-12
    mm.opt.iterations = 300
    mm.opt.ls_iterations = 100
    if mm.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
        mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON  # compare optima, not PGS's approximation
    return mm


def _contacts(model, out, md):
    """Active contacts of both engines as sorted (geom1, geom2, dist, pos, normal, condim) rows; checks ncon."""
    act = np.asarray(out.contact.active)
    ours = np.concatenate(
        [
            np.asarray(out.contact.geom1)[act, None],
            np.asarray(out.contact.geom2)[act, None],
            np.asarray(out.contact.dist)[act, None],
            np.asarray(out.contact.pos)[act],
            np.asarray(out.contact.frame)[act][:, 0],
            np.asarray(out.contact.dim)[act, None],
        ],
        1,
    )
    cons = [c for c in md.contact[: md.ncon] if c.exclude == 0]
    ref = np.array([[c.geom1, c.geom2, c.dist, *c.pos, *c.frame[:3], c.dim] for c in cons]).reshape(-1, 10)
    assert int(out.ncon) == len(ref)
    key = lambda a: a[np.lexsort((a[:, 3], a[:, 2], a[:, 1], a[:, 0]))]  # noqa: E731
    return key(ours), key(ref)


def _matched(ours, ref):
    """Largest difference after pairing each of MuJoCo's contacts with the nearest of ours between the
    same geoms (contacts of equal depth, as a face lying flat gives, may be listed in another order)."""
    free, worst = list(range(len(ours))), 0.0
    for r in ref:
        d = [np.abs(ours[i, 2:] - r[2:]).max() if np.all(ours[i, :2] == r[:2]) else np.inf for i in free]
        k = int(np.argmin(d))
        worst = max(worst, d[k])
        free.pop(k)
    return worst


@functools.cache
def _collider(jit):
    """Kinematics and collision, compiled with the test's `jax.jit` (tests/physics/conftest.py)."""
    return jit(lambda m, d: hp.collision(m, hp.kinematics(m, d)))


def _collide(m, d):
    return _collider(jax.jit)(m, d)


def _scene(xml: str):
    """(MjModel, hurtle Model, MjData) of a scene."""
    mm = mujoco.MjModel.from_xml_string(xml)
    return mm, hp.from_mujoco(mm), mujoco.MjData(mm)


def _compare(mm, model, md, trial: int):
    """Both engines' contacts at md's state (as `_contacts` sorts them), asserting the same count."""
    mujoco.mj_forward(mm, md)
    ours, ref = _contacts(model, _collide(model, hp.from_mjdata(model, md, mm)), md)
    assert ours.shape == ref.shape, f"trial {trial}: {len(ours)} contacts, MuJoCo {len(ref)}"
    return ours, ref


def _random_pose(mm, md, rng, lift_first: bool, near_parallel: bool = False):
    """Every free joint at a random pose near the origin (all but the first 0.1 higher, unless lift_first)."""
    for j in range(mm.njnt):
        adr = mm.jnt_qposadr[j]
        md.qpos[adr : adr + 3] = rng.uniform(-0.12, 0.12, 3) + (0 if j == 0 and not lift_first else [0, 0, 0.1])
        q = rng.standard_normal(4)
        if near_parallel:
            q = np.array([1.0, 0, 0, 0]) + 1e-3 * rng.standard_normal(4)  # near-parallel axes
        md.qpos[adr + 3 : adr + 7] = q / np.linalg.norm(q)


def walk_and_compare(mm, model, md, forward, ctrl_rng=None):
    """Three times: 100 MuJoCo steps (random controls from ctrl_rng, if given), then both engines'
    forward at that state, asserting the same contacts; yields (our Data, MuJoCo's contact rows)."""
    for _ in range(3):
        for _ in range(100):
            if ctrl_rng is not None:
                md.ctrl[:] = ctrl_rng.uniform(-1, 1, mm.nu)
            mujoco.mj_step(mm, md)
        mujoco.mj_forward(mm, md)
        out = forward(model, hp.from_mjdata(model, md, mm))
        ours, ref = _contacts(model, out, md)
        assert ours.shape == ref.shape
        np.testing.assert_array_equal(ours[:, :2], ref[:, :2])
        assert _matched(ours, ref) <= 1e-9
        yield out, ref


@pytest.mark.parametrize("path", _paths(), ids=os.path.basename)
def test_contacts_and_dynamics_match_mujoco(path):
    mm = _tight(mujoco.MjModel.from_xml_path(path))
    model = hp.from_mujoco(mm)
    forward = jax.jit(hp.forward)
    md = mujoco.MjData(mm)
    md.qvel[:] = np.random.default_rng(0).standard_normal(mm.nv) * 0.5
    checked = 0
    for out, ref in walk_and_compare(mm, model, md, forward):
        assert P.rel_error(out.qacc, md.qacc) <= TOL
        assert P.rel_error(out.qfrc_constraint, md.qfrc_constraint) <= TOL
        checked += len(ref)
    assert checked > 0


def test_contact_trajectory_matches_mujoco():
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "collide.xml")))
    model = hp.from_mujoco(mm)
    md = mujoco.MjData(mm)

    qpos = P.qpos_rollout(model, hp.from_mjdata(model, md, mm), 300)
    ref, ncon = P.mujoco_qpos_rollout(mm, md, 300)
    assert ncon > 100
    assert P.rel_error(qpos, ref) <= TOL


def _cap_rollout(model, d, steps: int):
    """(qpos, ncon, ncon_dropped) after each of `steps` hurtle steps, compiled as one scan."""

    def body(d, _):
        d = hp.step(model, d)
        return d, (d.qpos, d.ncon, d.ncon_dropped)

    return jax.jit(lambda d: jax.lax.scan(body, d, None, length=steps)[1])(d)


def test_contact_cap_trajectory_matches_mujoco():
    """With `nconmax` above the contacts that touch at once, the compacted contacts and rows give
    MuJoCo's trajectory (collide.xml: 28 condim-3 candidate slots, at most 14 touching)."""
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "collide.xml")))
    full, model = hp.from_mujoco(mm), hp.from_mujoco(mm, nconmax=16)
    assert model.nconmax == 16 and model.ncon_max < full.ncon_max and model.efc.nefc < full.efc.nefc
    assert sorted(collections.Counter(model.contact_dim.tolist()).items()) == [(3, 16), (4, 5), (6, 9)]
    md = mujoco.MjData(mm)
    qpos, ncon, dropped = _cap_rollout(model, hp.from_mjdata(model, md, mm), 300)
    ref, most = [], 0
    for _ in range(300):
        mujoco.mj_step(mm, md)
        ref.append(md.qpos.copy())
        most = max(most, md.ncon)
    assert int(np.max(dropped)) == 0 and int(np.max(ncon)) == most > 14
    assert P.rel_error(qpos, np.array(ref)) <= TOL


def test_contact_cap_keeps_the_first_touching_contacts_and_counts_the_rest():
    """Over the cap, each condim keeps its first active candidates in slot order and counts the others."""
    mm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "collide.xml"))
    full, model = hp.from_mujoco(mm), hp.from_mujoco(mm, nconmax=3)
    md = mujoco.MjData(mm)
    for _ in range(300):
        mujoco.mj_step(mm, md)
    a, b = (_collide(m, hp.from_mjdata(m, md, mm)) for m in (full, model))
    dropped = 0
    for dim in (3, 4, 6):
        cand = np.asarray(a.contact.active) & (full.contact_dim == dim)
        want = np.stack([np.asarray(a.contact.geom1)[cand], np.asarray(a.contact.geom2)[cand]], 1)
        kept = np.asarray(b.contact.active) & (model.contact_dim == dim)
        got = np.stack([np.asarray(b.contact.geom1)[kept], np.asarray(b.contact.geom2)[kept]], 1)
        np.testing.assert_array_equal(got, want[:3])
        # the same contacts; the two programs fuse differently, so a dot product may round apart (1 ulp seen)
        np.testing.assert_allclose(np.asarray(b.contact.dist)[kept], np.asarray(a.contact.dist)[cand][:3], rtol=1e-12)
        dropped += max(0, len(want) - 3)
    assert dropped > 0 and int(b.ncon_dropped) == dropped and int(b.ncon) == int(a.ncon) - dropped


def test_contact_cap_from_the_file_and_bad_values():
    with open(os.path.join(MODELS, "collide.xml")) as f:
        xml = f.read().replace("<option", '<size nconmax="4"/><option', 1)
    assert hp.load(xml).nconmax == 4 and hp.load(xml).ncon_max == 4 + 4 + 4
    assert hp.load(xml, nconmax=100).contact_compaction is None  # above every class: nothing to compact
    assert hp.load(os.path.join(MODELS, "collide.xml")).nconmax == -1
    for bad in (0, -2, 2.5, True):
        with pytest.raises(ValueError, match="collide.xml: nconmax must be a positive number"):
            hp.load(os.path.join(MODELS, "collide.xml"), nconmax=bad)
    mm = mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ValueError, match="contact_dims"):
        hp.from_mujoco(mm, contact_dims=[3], nconmax=2)


def test_explicit_pairs_exclusions_and_filters():
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
      <body name="a" pos="0 0 .1"><freejoint/><geom name="ga" size=".1"/>
        <body name="b" pos="0 0 .15"><joint type="hinge"/><geom name="gb" size=".1"/></body></body>
      <body name="c" pos=".3 0 .1"><freejoint/><geom name="gc" size=".1" contype="0" conaffinity="0"/></body>
      </worldbody>
      <contact><exclude body1="world" body2="b"/><pair geom1="gc" geom2="floor" condim="1"/></contact></mujoco>"""
    model = hp.load(xml)
    pairs = {(int(a), int(b)) for g in model.collision for a, b in zip(g.geom1, g.geom2)}
    floor, ga, gb, gc = (model.name2id("geom", n) for n in ("floor", "ga", "gb", "gc"))
    assert (floor, ga) in pairs  # ordinary pair
    assert (floor, gb) not in pairs  # excluded
    assert (ga, gb) not in pairs  # parent and child
    assert (floor, gc) in pairs  # explicit pair, despite its contype
    assert model.ncon_max > 0


def test_a_pair_declared_twice_is_collided_twice():
    """MuJoCo collides every <pair> it is given, so a pair declared twice (Gymnasium-Robotics' hand does
    this) makes two contacts and two sets of constraint rows; each keeps its own parameters."""
    xml = """<mujoco><worldbody><geom name="floor" type="plane" size="1 1 .1"/>
      <body name="c" pos="0 0 .09"><freejoint/><geom name="gc" size=".1" contype="0" conaffinity="0"/></body>
      </worldbody><contact><pair geom1="gc" geom2="floor" condim="1"/>
      <pair geom1="floor" geom2="gc" condim="3" friction="0.5 0.5"/></contact></mujoco>"""
    mm = _tight(mujoco.MjModel.from_xml_string(xml))
    md = mujoco.MjData(mm)
    md.qvel[:] = [0.3, -0.2, 0, 0, 0, 0.5]
    mujoco.mj_forward(mm, md)
    assert md.ncon == 2 and sorted(c.dim for c in md.contact) == [1, 3]
    model = hp.from_mujoco(mm)
    out = jax.jit(hp.forward)(model, hp.from_mjdata(model, md, mm))
    assert int(np.sum(out.contact.active)) == 2
    assert P.rel_error(out.qacc, md.qacc) <= TOL


@pytest.mark.parametrize("name", ["collide.xml", "equality.xml"])
def test_rne_post_constraint_matches_mujoco(name):
    """cacc, cfrc_int and cfrc_ext (contacts, connect/weld, xfrc_applied) as mj_rnePostConstraint."""
    mm = _tight(mujoco.MjModel.from_xml_path(os.path.join(MODELS, name)))
    model = hp.from_mujoco(mm)
    md = mujoco.MjData(mm)
    rng = np.random.default_rng(1)
    md.qvel[:] = rng.standard_normal(mm.nv) * 0.5
    for _ in range(150):
        mujoco.mj_step(mm, md)
    md.xfrc_applied[1:] = rng.standard_normal((mm.nbody - 1, 6))
    mujoco.mj_forward(mm, md)
    mujoco.mj_rnePostConstraint(mm, md)
    assert md.nefc > 0
    step = jax.jit(lambda m, d: hp.rne_post_constraint(m, hp.forward(m, d)))
    out = step(model, hp.from_mjdata(model, md, mm))
    for f in ("cacc", "cfrc_int", "cfrc_ext"):
        assert P.rel_error(getattr(out, f), getattr(md, f)) <= TOL, f
    assert np.abs(md.cfrc_ext).max() > 0


PRIMITIVES = {
    "sphere": 'type="sphere" size="0.1"',
    "capsule": 'type="capsule" size="0.06 0.15"',
    "box": 'type="box" size="0.1 0.15 0.08"',
    "cylinder": 'type="cylinder" size="0.1 0.08"',
    "ellipsoid": 'type="ellipsoid" size="0.1 0.07 0.05"',
}
PAIRS = [
    ("plane", "sphere"),
    ("plane", "capsule"),
    ("plane", "box"),
    ("plane", "cylinder"),
    ("plane", "ellipsoid"),
    ("sphere", "sphere"),
    ("sphere", "capsule"),
    ("sphere", "box"),
    ("sphere", "cylinder"),
    ("capsule", "capsule"),
]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
def test_primitive_pairs_match_mujoco_at_random_poses(pair):
    """Each narrow-phase function at random close poses (inside, touching, within margin, apart)."""
    a, b = pair
    first = (
        '<geom name="a" type="plane" size="2 2 .1"/>'
        if a == "plane"
        else (f'<body pos="0 0 0"><freejoint/><geom name="a" {PRIMITIVES[a]} margin="0.02"/></body>')
    )
    xml = f"""<mujoco><option gravity="0 0 0"/><worldbody>{first}
      <body pos="0 0 0.2"><freejoint/><geom name="b" {PRIMITIVES[b]} margin="0.01"/></body></worldbody></mujoco>"""
    mm, model, md = _scene(xml)
    rng = np.random.default_rng(0)
    seen = 0
    for trial in range(40):
        _random_pose(mm, md, rng, lift_first=a == "plane", near_parallel=trial % 10 == 0)
        ours, ref = _compare(mm, model, md, trial)
        np.testing.assert_allclose(ours[:, 2:], ref[:, 2:], atol=1e-9, err_msg=f"trial {trial}")
        seen += len(ref)
    assert seen >= 10


def test_gjk_distance_and_epa_depth_are_exact_for_boxes():
    """GJK's closest points (point to box) and EPA's depth and normal (box into box) against exact values."""
    from hurtle.physics.collision import ccd
    from hurtle.physics.collision import convex as C

    rng = np.random.default_rng(3)
    k = 64
    size = np.array([0.1, 0.2, 0.15])
    q = rng.standard_normal((k, 4))
    mat = np.asarray(jax.vmap(hp.math.quat_to_mat)(q / np.linalg.norm(q, axis=1, keepdims=True)))
    pos = rng.uniform(-0.1, 0.1, (k, 3))
    pt = rng.uniform(-0.6, 0.6, (k, 3))
    local = np.einsum("kji,kj->ki", mat, pt - pos)
    outside = np.any(np.abs(local) > size, axis=1)
    near = pos + np.einsum("kij,kj->ki", mat, np.clip(local, -size, size))

    def distance(p, bpos, bmat):
        def sup(d):
            p2 = C.support(C.BOX, bpos, bmat, size, -d, 0.0)
            return p - p2, p, p2

        g = ccd.gjk(sup, p, bpos, 35, 1e-6, 1e9)
        return g["dist"], g["x2"]

    dist, x2 = jax.jit(jax.vmap(distance))(pt, pos, mat)
    np.testing.assert_allclose(np.asarray(dist)[outside], np.linalg.norm(pt - near, axis=1)[outside], atol=1e-12)
    np.testing.assert_allclose(np.asarray(x2)[outside], near[outside], atol=1e-12)
    assert np.all(np.asarray(dist)[~outside] == 0)

    # axis-aligned boxes overlapping: depth is the smallest overlap, along that axis
    h1, h2 = np.array([0.1, 0.2, 0.15]), np.array([0.12, 0.05, 0.2])
    off = rng.uniform(-0.2, 0.2, (k, 3))
    overlap = h1 + h2 - np.abs(off)
    depth_ref, axis = overlap.min(1), overlap.argmin(1)
    normal_ref = np.eye(3)[axis] * np.sign(off[np.arange(k), axis])[:, None]

    def depth(o):
        def sup(d):
            p1 = C.support(C.BOX, np.zeros(3), np.eye(3), h1, d, 0.0)
            p2 = C.support(C.BOX, o, np.eye(3), h2, -d, 0.0)
            return p1 - p2, p1, p2

        return ccd.ccd(sup, None, 0.0, 0.0, np.zeros(3), o, 35, 1e-6)[:4]

    d, y1, y2, found = jax.jit(jax.vmap(depth))(off)
    hit = np.all(overlap > 0, axis=1)
    np.testing.assert_array_equal(np.asarray(found), hit)
    np.testing.assert_allclose(-np.asarray(d)[hit], depth_ref[hit], atol=1e-12)
    normal = np.asarray(y1 - y2) / -np.asarray(d)[:, None]
    np.testing.assert_allclose(normal[hit], normal_ref[hit], atol=1e-9)


CONVEX_TOL = 1e-4  # the bound for pairs on MuJoCo's convex path (its ccd_tolerance is 1e-6)


@pytest.mark.parametrize("margin", [0.0, 0.01], ids=["no-margin", "margin"])
@pytest.mark.parametrize(
    "pair", [("capsule", "cylinder"), ("cylinder", "cylinder"), ("cylinder", "box")], ids=lambda p: f"{p[0]}-{p[1]}"
)
def test_convex_pairs_match_mujoco_at_random_poses(pair, margin):
    """MuJoCo 4's native CCD (GJK, EPA) pairs, multiccd off: shallow (GJK) and deep (EPA) contacts.

    EPA stops short of convergence on curved shapes, so this holds only because the same polytope
    sequence is followed: a different but correct EPA is 1e-3 off in the normal.
    """
    a, b = pair
    xml = f"""<mujoco><option gravity="0 0 0"><flag multiccd="disable"/></option><worldbody>
      <body><freejoint/><geom name="a" {PRIMITIVES[a]} margin="{margin}"/></body>
      <body pos="0 0 0.2"><freejoint/><geom name="b" {PRIMITIVES[b]} margin="{margin / 2}"/></body></worldbody></mujoco>"""
    mm, model, md = _scene(xml)
    rng = np.random.default_rng(0)
    errs, deep = [], 0
    for trial in range(40):
        _random_pose(mm, md, rng, lift_first=False)
        ours, ref = _compare(mm, model, md, trial)
        if len(ref):
            np.testing.assert_allclose(ours[:, 2:], ref[:, 2:], atol=CONVEX_TOL, err_msg=f"trial {trial}")
            errs.append(np.abs(ours[:, 2:] - ref[:, 2:]).max())
            deep += bool(ref[0, 2] < -mm.geom_size[0, 0] - margin)
    assert len(errs) >= 20 and deep >= 5
    assert np.median(errs) < 1e-10  # most contacts follow MuJoCo's iterations exactly


def _quat(rng, tilt, base=0.0):
    """A rotation by `base` about x, tilted by up to `tilt` about x and y, turned at random about z."""
    out = []
    for axis, angle in (
        (2, rng.uniform(0, 2 * np.pi)),
        (0, base + rng.uniform(-tilt, tilt)),
        (1, rng.uniform(-tilt, tilt)),
    ):
        q = np.zeros(4)
        q[0], q[1 + axis] = np.cos(angle / 2), np.sin(angle / 2)
        out.append(q)
    return hp.math.quat_mul(hp.math.quat_mul(out[0], out[1]), out[2])


def test_multiccd_contacts_match_mujoco():
    """MuJoCo 4's multi-contact search (multiccd on, its default): a capsule lying on a cylinder's cap
    (edge on face: the clipped segment's ends), a cylinder on another's cap (face on face: up to four
    corners of the clipped 16-gons) and a cylinder on its side on a cap (the side line on a face).

    MuJoCo 4.0.0 took the lying cylinder's side line through the contact feature's vertex; 4.0.1 takes its support
    line along the cap's normal (`multiccd._cylinder_side`). Against 4.0.0's answers these states differ in 9 of the
    60 trials: the side line's two contacts up to 5.1e-3 apart (trials 3, 15, 29, 39, 47), and in trials 33, 51 and
    53, where the puck overhangs the cap's rim, 4.0.0 gave two contacts with the cap's normal and 4.0.1 keeps the
    single contact (its support line leaves the cap)."""
    xml = """<mujoco><option gravity="0 0 0"/><worldbody>
      <body><freejoint/><geom name="rod" type="capsule" size=".02 .1" margin=".01"/></body>
      <body><freejoint/><geom name="base1" type="cylinder" size=".1 .08"/></body>
      <body pos="1 0 0"><freejoint/><geom name="puck" type="cylinder" size=".1 .08"/></body>
      <body pos="1 0 0"><freejoint/><geom name="base2" type="cylinder" size=".1 .08"/></body>
    </worldbody></mujoco>"""
    mm, model, md = _scene(xml)
    rng = np.random.default_rng(1)
    errs, counts = [], {}
    for trial in range(60):
        side = trial % 2
        height = (0.02, 0.1 if side else 0.08)  # the rod's radius; the puck's radius or half-height
        for body, (x, h, base, tilt) in enumerate(
            [(0, height[0], np.pi / 2, 0.1), (1, height[1], side * np.pi / 2, 0.1)]
        ):
            top = [x + rng.uniform(-0.12, 0.12), rng.uniform(-0.12, 0.12), 0.08 + h + rng.uniform(-0.015, 0.005)]
            md.qpos[14 * body : 14 * body + 7] = [*top, *_quat(rng, tilt, base)]
            md.qpos[14 * body + 7 : 14 * body + 14] = [x, 0, 0, *_quat(rng, 0.03)]
        ours, ref = _compare(mm, model, md, trial)
        for pair in set(map(tuple, ref[:, :2].astype(int))):
            n = int(np.sum(np.all(ref[:, :2] == pair, axis=1)))
            key = (mm.geom(pair[0]).name, "side" if side and pair[0] == 2 else "flat", n)
            counts[key] = counts.get(key, 0) + 1
        if len(ref):
            np.testing.assert_allclose(ours[:, 2:], ref[:, 2:], atol=CONVEX_TOL, err_msg=f"trial {trial}")
            errs.append(np.abs(ours[:, 2:] - ref[:, 2:]).max())
    # each kind of multi-contact happened (a segment's two ends, a quadrilateral, a side line's ends)
    assert counts.get(("rod", "flat", 2), 0) >= 20, counts
    assert counts.get(("puck", "flat", 4), 0) >= 5, counts
    assert counts.get(("puck", "side", 2), 0) >= 5, counts
    assert np.median(errs) < 1e-10  # most contacts follow MuJoCo's iterations exactly


def test_convex_pair_gradients_are_finite():
    """Gradients of capsule-cylinder depths, shallow and deep, including axis-aligned (degenerate) poses,
    through MuJoCo 4's multi-contact search (capsules lying on the cap) and the single contact it falls
    back to (both sides of every selection are differentiated, so this covers multiccd off too)."""
    from hurtle.physics.collision import convex as C

    rng = np.random.default_rng(5)
    k = 14
    special = [[0, 0, 0.07], [0.005, 0, 0.0], [0.06, 0, 0], [0.01, 0, 0.065], [0, 0.01, 0.066]]
    pos = np.concatenate([rng.uniform(-0.05, 0.05, (k - 5, 3)), special])
    q = rng.standard_normal((k, 4))
    q[-5:-2] = [1, 0, 0, 0]
    q[-2:] = [[1, 1, 0, 0], [1, 1, 0.02, 0]]  # lying on the cap, flat and slightly tilted
    mat = np.asarray(jax.vmap(hp.math.quat_to_mat)(q / np.linalg.norm(q, axis=1, keepdims=True)))
    cap = np.broadcast_to([0.02, 0.05, 0.0], (k, 3))
    cyl = np.broadcast_to([0.05, 0.05, 0.0], (k, 3))

    eye = np.broadcast_to(np.eye(3), (k, 3, 3))
    stacked = np.array([[0.0, 0.0, 0.095], [0.02, 0.01, 0.097]])  # a cylinder on another's cap: 4 contacts

    def depth(p, q):
        d, _, _, hit = C.penetration(
            C.CAPSULE, C.CYLINDER, p, mat, cap, np.zeros((k, 3)), eye, cyl, np.zeros(k), 35, 1e-6, True
        )
        d2, _, _, hit2 = C.penetration(
            C.CYLINDER, C.CYLINDER, q, eye[:2], cyl[:2], np.zeros((2, 3)), eye[:2], cyl[:2], np.zeros(2), 35, 1e-6, True
        )
        return jnp.sum(jnp.where(hit, d, 0.0)) + jnp.sum(jnp.where(hit2, d2, 0.0)), (hit, hit2)

    (grad, grad2), (hit, hit2) = jax.jit(jax.grad(depth, (0, 1), has_aux=True))(jnp.asarray(pos), stacked)
    hit = np.asarray(hit)
    assert np.all(hit[:, 0])
    assert np.all(hit[-2:, 1])  # the lying capsules touch at both ends
    assert np.all(np.isfinite(np.asarray(grad)))
    assert np.all(np.linalg.norm(np.asarray(grad), axis=1) > 0.5)  # a depth moves with the geom
    assert np.all(np.asarray(hit2))  # through the quadrilateral search too
    np.testing.assert_allclose(np.asarray(grad2), [[0, 0, 4]] * 2, atol=1e-9)  # four depths, each rising with z


def _parallel_capsules(angle: float, shift: float, flip: bool, h2: float) -> str:
    """Two capsules along x, the second `shift` along and 0.06 above the first, turned by `angle` (rad)."""
    pitch = 90 + np.degrees(angle) + (180 if flip else 0)
    return f"""<mujoco><option gravity="0 0 0"/><worldbody>
      <body><freejoint/><geom type="capsule" size="0.05 0.2" euler="0 90 0"/></body>
      <body pos="{shift} 0.004 0.06"><freejoint/><geom type="capsule" size="0.04 {h2}" euler="0 {pitch} 0"/></body>
      </worldbody></mujoco>"""


@pytest.mark.parametrize("angle", [0.0, 1e-6, 5e-5, 3e-4], ids=lambda a: f"angle{a:g}")
def test_parallel_capsules_match_mujoco(angle):
    """Capsules within 1e-4 rad of parallel touch at the two ends of their overlap (MuJoCo 4: the end
    points of one projected onto the other, in the order of the first's axis; apart along the axis,
    twice at the nearest end points); past it, once, at the nearest points. dm_control's CMU humanoid
    (2020) starts with such a pair, nearly parallel and deep."""
    seen = collections.Counter()
    for shift in (0.05, -0.17, 0.31, 0.45):  # the second inside the first, over either end, beyond it
        for flip in (False, True):
            for h2 in (0.1, 0.3):
                mm, model, md = _scene(_parallel_capsules(angle, shift, flip, h2))
                ours, ref = _compare(mm, model, md, 0)
                assert len(ref) == 0 or _matched(ours, ref) <= 1e-12, (shift, flip, h2)
                seen[len(ref)] += 1
    assert seen[2 if angle < 1e-4 else 1] >= 10, seen


# an upright capsule on the floor: its frame's tangent (the capsule's axis) lies along the contact normal
UPRIGHT = """<mujoco><option gravity="-0.74 0.33 -9.81" cone="{cone}"/><worldbody>
  <geom name="floor" type="plane" size="5 5 .1"/>
  <body pos="-.02 -.2 .2" euler="-39 -10 -11"><freejoint/>
    <geom type="capsule" size=".04 .076" pos="-.016 .01 .057" euler="-56 76 51" friction=".39 .005 .0001"/>
    <body pos="-.26 .27 .07"><joint type="slide" axis=".87 .16 -.47" range="-.3 .58" damping=".8"/>
      <geom type="sphere" size=".11" pos=".01 -.08 -.06" condim="1"/></body></body>
  <body name="upright" pos=".13 .19 .139"><freejoint/><geom type="capsule" size=".08 .08"/></body>
  </worldbody></mujoco>"""


@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_contact_with_its_tangent_along_the_normal_keeps_its_friction(cone):
    """mju_makeFrame normalises a tangent that nothing is left of to (1, 0, 0): an upright capsule's floor
    contact has MuJoCo's frame and friction forces (they were zero, qacc 2-30% off)."""
    mm = _tight(mujoco.MjModel.from_xml_string(UPRIGHT.format(cone=cone)))
    model = hp.from_mujoco(mm)
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    out = jax.jit(hp.forward)(model, hp.from_mjdata(model, md, mm))
    upright = [i for i, c in enumerate(md.contact[: md.ncon]) if mm.geom_bodyid[c.geom2] == mm.body("upright").id]
    assert len(upright) == 1 and np.allclose(md.contact.frame[upright[0]], [0, 0, 1, 1, 0, 0, 0, 1, 0])
    ours, ref = _contacts(model, out, md)
    assert _matched(ours, ref) <= 1e-12
    frames = np.asarray(out.contact.frame)[np.asarray(out.contact.active)]
    assert any(np.allclose(f.ravel(), md.contact.frame[upright[0]]) for f in frames)
    P.assert_parity(P.constrained_errors(model, out, md), tol=TOL, label=cone)
    rows = md.contact.efc_address[upright[0]] + np.arange(1, 3 if cone == "elliptic" else 4)
    assert np.abs(md.efc_force[rows]).max() > 0.1  # friction acts


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2019", "2020"])
def test_cmu_humanoid_contacts_at_its_initial_pose(version):
    """dm_control's CMU humanoid walkers start with self-contacts; the 2020 one's root and lower back are
    capsules nearly parallel and deep in each other (two contacts at -0.0779 in MuJoCo; hurtle's had been
    -0.0745 and -0.0757, qacc 5% off)."""
    root = P.asset_dir("dm_control")
    if root is None:
        pytest.skip("dm_control is not installed")
    path = os.path.join(os.path.dirname(root), "locomotion", "walkers", "assets", f"humanoid_CMU_V{version}.xml")
    mm = mujoco.MjModel.from_xml_path(path)
    model, md = hp.from_mujoco(mm), mujoco.MjData(mm)
    ours, ref = _compare(mm, model, md, 0)
    assert len(ref) >= 2 and _matched(ours, ref) <= 1e-9
    back = [r for r in ref if {mm.geom(int(r[0])).name, mm.geom(int(r[1])).name} == {"root_geom", "lowerback"}]
    if version == "2020":
        assert len(back) == 2 and abs(back[0][2] - back[1][2]) < 1e-12
