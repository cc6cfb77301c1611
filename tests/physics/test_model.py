"""Building models: loading, static/dynamic split, dtypes, and clear errors for bad input."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp

MODELS = os.path.join(os.path.dirname(__file__), "models")
HINGE = os.path.join(MODELS, "hinge_chain.xml")


def _xml(body: str, extra: str = "", option: str = "") -> str:
    return f"<mujoco><option {option}/><worldbody>{body}</worldbody>{extra}</mujoco>"


def test_load_path_string_and_mjmodel_agree():
    a = hp.load(HINGE)
    with open(HINGE) as f:
        b = hp.load(f.read())
    c = hp.from_mujoco(mujoco.MjModel.from_xml_path(HINGE))
    for m in (b, c):
        np.testing.assert_array_equal(m.body_mass, a.body_mass)
        assert m.nq == a.nq and m.nv == a.nv
    assert a.source == HINGE and b.source == "<xml string>"
    assert a.name2id("body", "link2") == 2


def test_load_urdf(tmp_path):
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(
        """<robot name="arm">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><mass value="0.5"/><inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="shoulder" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/><origin xyz="0 0 0.5"/></joint>
</robot>"""
    )
    m = hp.load(urdf)
    assert m.njnt == 1 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_HINGE
    assert float(m.body_mass[-1]) == pytest.approx(0.5)


def test_static_structure_and_dynamic_parameters():
    m = hp.load(HINGE)
    leaves = jax.tree.leaves(m)
    assert all(isinstance(x, jax.Array) for x in leaves)
    assert isinstance(m.jnt_type, np.ndarray) and isinstance(m.opt.integrator, int)
    assert m.body_mass.dtype == jnp.float64 and m.opt.timestep.dtype == jnp.float64
    # equal structure hashes equal: the model is an ordinary jit argument
    tree1 = jax.tree.structure(m)
    tree2 = jax.tree.structure(hp.load(HINGE))
    assert tree1 == tree2 and hash(tree1) == hash(tree2)
    assert jax.tree.structure(hp.load(os.path.join(MODELS, "mocap.xml"))) != tree1


def test_default_float32_without_x64():
    code = (
        "import hurtle.physics as hp, jax, jax.numpy as jnp;"
        f"m = hp.load({HINGE!r}); d = hp.make_data(m);"
        "d = jax.jit(hp.step)(m, d);"
        "assert m.body_mass.dtype == jnp.float32, m.body_mass.dtype;"
        "assert all(x.dtype in (jnp.float32, jnp.int32, jnp.bool_) for x in jax.tree.leaves(d));"
        "print('ok')"
    )
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_make_data_state_and_step_keeps_structure():
    m = hp.load(os.path.join(MODELS, "mocap.xml"))
    d = hp.make_data(m)
    np.testing.assert_array_equal(d.qpos, m.qpos0)
    np.testing.assert_allclose(d.mocap_pos[0], [0.5, 0, 1])
    d2 = jax.jit(hp.step)(m, d)
    assert jax.tree.structure(d2) == jax.tree.structure(d)
    for a, b in zip(jax.tree.leaves(d), jax.tree.leaves(d2)):
        assert a.shape == b.shape and a.dtype == b.dtype
    assert d.contact.dist.shape == (0,) and d.contact.active.dtype == jnp.bool_


def test_bad_file_names_the_file(tmp_path):
    bad = tmp_path / "broken.xml"
    bad.write_text("<mujoco><worldbody><body><geom type='nonsense'/></body></worldbody></mujoco>")
    with pytest.raises(ValueError, match="broken.xml"):
        hp.load(bad)
    with pytest.raises(FileNotFoundError, match="missing.xml"):
        hp.load(tmp_path / "missing.xml")


@pytest.mark.parametrize(
    "xml, match",
    [
        (
            _xml(
                "<body><joint name='a' type='hinge'/><geom size='.1'/><site name='s1'/>"
                "<body pos='0 0 1'><joint type='hinge'/><geom size='.1'/><site name='s2'/></body></body>",
                "<tendon><spatial name='rope' armature='0.1'><site site='s1'/><site site='s2'/></spatial></tendon>",
            ),
            "armature on spatial tendons.*'rope'",
        ),
        (
            _xml(
                "<geom type='plane' size='1 1 .1'/>"
                + "".join(f"<body name='b{i}' pos='{i} 0 1'><freejoint/><geom size='.1'/></body>" for i in range(6)),
                "<size nconmax='4'/><actuator><adhesion name='sucker' body='b0' ctrlrange='0 1'/></actuator>",
            ),
            r"body \(adhesion\) transmission \(actuator 'sucker'\) with a contact cap",
        ),
        (
            _xml(
                "<body><joint name='j' type='hinge' limited='true' range='-1 1'/><geom size='.1'/></body>",
                "<actuator><muscle name='bicep' joint='j'/></actuator>",
            ),
            "'muscle'.*'bicep'",
        ),
        (
            _xml("<body><freejoint/><geom size='.1' fluidshape='ellipsoid'/></body>", option="density='1'"),
            "ellipsoid fluid model",
        ),
        (_xml("<body><joint type='hinge'/><geom size='.1'/></body>", option="integrator='discrete'"), "discrete"),
    ],
    ids=["spatial-tendon-armature", "capped-body-transmission", "muscle", "ellipsoid-fluid", "discrete"],
)
def test_unsupported_features_are_refused_by_name(xml, match):
    with pytest.raises(NotImplementedError, match=match):
        hp.load(xml)


def test_unsupported_collision_pairs_refused_unless_contacts_disabled():
    body = (
        "<body><freejoint/><geom name='drum' type='cylinder' size='.1 .1'/></body>"
        "<body pos='0 0 1'><freejoint/><geom name='crate' type='box' size='.1 .1 .1'/></body>"
    )
    hp.load(_xml(body))  # MuJoCo's defaults: GJK/EPA and multiccd
    # MuJoCo's older libccd collider (the nativeccd disable flag) is not built
    with pytest.raises(NotImplementedError, match="nativeccd.*a cylinder and a box.*'drum'.*'crate'"):
        hp.load(_xml(body, option="><flag nativeccd='disable'/></option><option"))
    m = hp.load(_xml(body, option="><flag nativeccd='disable' contact='disable'/></option><option"))
    assert np.all(np.isfinite(jax.jit(hp.forward)(m, hp.make_data(m)).qacc))
    # limits are solved
    m = hp.load(_xml("<body><joint name='knee' type='hinge' limited='true' range='-1 1'/><geom size='.1'/></body>"))
    assert np.all(np.isfinite(jax.jit(hp.forward)(m, hp.make_data(m)).qacc))


def test_sdf_geoms_refused_by_name():
    xml = """<mujoco><extension><plugin plugin="mujoco.sdf.torus"><instance name="torus">
      <config key="radius1" value="0.35"/><config key="radius2" value="0.15"/></instance></plugin></extension>
      <asset><mesh name="torus"><plugin instance="torus"/></mesh></asset>
      <worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 1"><freejoint/><geom name="donut" type="sdf" mesh="torus"><plugin instance="torus"/></geom>
      </body></worldbody></mujoco>"""
    with pytest.raises(NotImplementedError, match="signed-distance-field geoms.*'donut'"):
        hp.load(xml)


def test_refusal_only_when_flags_would_use_the_feature():
    # the ellipsoid fluid model is not used when passive forces are off
    hp.load(
        _xml(
            "<body><freejoint/><geom size='.1' fluidshape='ellipsoid'/></body>",
            option="density='1'><flag spring='disable' damper='disable'/></option><option",
        )
    )
