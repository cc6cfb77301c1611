"""Sensors against MuJoCo C, sensor by sensor (float64): every supported type on tests/physics/models/sensors.xml at
random states and at states with resting contacts, with pyramidal and elliptic cones, after a step of each
integrator (RK4 keeps its first forward's sensors, as MuJoCo's stages skip them); reading by name, noise on
request, and unsupported sensors refused by name."""

import os

import jax
import mujoco
import numpy as np
import pytest

import hurtle.physics as hp
from tests.physics import parity as P

MODEL = os.path.join(os.path.dirname(__file__), "models", "sensors.xml")
TOL = 1e-8  # per sensor: max |ours - MuJoCo's| / (max |MuJoCo's| + 1)


def _variant(**option) -> str:
    text = open(MODEL).read()
    attrs = " ".join(f'{k}="{v}"' for k, v in option.items())
    return text.replace('<option timestep="0.005"', f'<option timestep="0.005" {attrs}')


def _states(mm, rng):
    """Two random states and two after MuJoCo has stepped the model onto the floor with random controls."""
    out = [P.random_state(mm, rng) for _ in range(2)]
    for steps in (80, 160):
        d = mujoco.MjData(mm)
        d.qvel[:] = rng.normal(0, 1, mm.nv)
        d.ctrl[:] = rng.normal(0, 1, mm.nu)
        for _ in range(steps):
            mujoco.mj_step(mm, d)
        out.append(d)
    return out


def _check(mm, ours, refs, label=""):
    bad = []
    for b, ref in enumerate(refs):
        errors = P.sensor_errors(mm, ours.sensordata[b], ref.sensordata)
        for s in np.nonzero(errors > TOL)[0]:
            a, n = mm.sensor_adr[s], mm.sensor_dim[s]
            name = mujoco.mjtSensor(mm.sensor_type[s]).name
            bad.append(
                f"{label} state {b} sensor {s} ({name}): {ours.sensordata[b][a : a + n]} vs {ref.sensordata[a : a + n]}"
            )
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_sensordata_matches_mujoco(cone):
    mm = mujoco.MjModel.from_xml_string(_variant(cone=cone))
    model = hp.from_mujoco(mm, source=MODEL)
    refs = _states(mm, np.random.default_rng(1))
    for d in refs:
        mujoco.mj_forward(mm, d)
    assert any(d.ncon > 0 for d in refs) and any(d.sensordata[mm.sensor_adr[1]] > 0 for d in refs)  # touch
    ranges = [d.sensordata[mm.sensor_adr[mm.sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER]] for d in refs]
    assert np.sum(np.array(ranges) > 0) >= 4  # the rangefinders see something
    ours = P.batched(hp.forward)(model, P.batch_data(model, mm, refs))
    _check(mm, ours, refs, cone)


@pytest.mark.parametrize("integrator", ["RK4"])  # Euler's and implicit's steps run forward once, as tested above
def test_sensors_after_a_step(integrator):
    mm = mujoco.MjModel.from_xml_string(_variant(integrator=integrator))
    model = hp.from_mujoco(mm, source=MODEL)
    refs = _states(mm, np.random.default_rng(2))[2:]
    batch = P.batch_data(model, mm, refs)
    for d in refs:
        mujoco.mj_step(mm, d)
    ours = P.batched(hp.step)(model, batch)
    _check(mm, ours, refs, integrator)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_sensors_match_mujoco(cone):
    path = os.path.join(os.path.dirname(__file__), "models", "contact_sensors.xml")
    text = open(path).read().replace('<option timestep="0.004"', f'<option timestep="0.004" cone="{cone}"')
    mm = mujoco.MjModel.from_xml_string(text)
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model = hp.from_mujoco(mm, source=path)
    rng = np.random.default_rng(4)
    refs = []
    # while things land and tumble: a box resting flat has four contacts of equal depth, which hurtle may list in
    # another order than MuJoCo's, and forces its solver may share out differently (the same total)
    for steps in (60, 90, 130):
        d = mujoco.MjData(mm)
        d.qvel[:] = rng.normal(0, 0.5, mm.nv)
        for _ in range(steps):
            mujoco.mj_step(mm, d)
        mujoco.mj_forward(mm, d)
        refs.append(d)
    found = np.array([[d.sensordata[mm.sensor_adr[s]] for s in range(mm.nsensor)] for d in refs])
    assert np.all(found.max(0) > 0), found  # every sensor matched contacts in some state
    ours = P.batched(hp.forward)(model, P.batch_data(model, mm, refs))
    _check(mm, ours, refs, cone)


def test_read_by_name_and_noise():
    model = hp.load(MODEL)
    d = jax.jit(hp.forward)(model, hp.make_data(model))
    mm = mujoco.MjModel.from_xml_path(MODEL)
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    np.testing.assert_allclose(hp.read_sensor(model, d, "imu_gyro"), md.sensor("imu_gyro").data, atol=1e-12)
    np.testing.assert_allclose(hp.read_sensor(model, d, "range_down"), md.sensor("range_down").data, atol=1e-12)
    with pytest.raises(KeyError, match="no sensor named 'nose'"):
        hp.read_sensor(model, d, "nose")

    noisy = jax.jit(jax.vmap(hp.sensor_noise, (None, None, 0)))(model, d, jax.random.split(jax.random.key(0), 4000))
    clean = np.asarray(d.sensordata)
    spread = np.asarray(noisy).std(0)
    for s in range(mm.nsensor):
        a, n, sigma = mm.sensor_adr[s], mm.sensor_dim[s], mm.sensor_noise[s]
        if sigma == 0:
            np.testing.assert_array_equal(np.asarray(noisy)[:, a : a + n], np.broadcast_to(clean[a : a + n], (4000, n)))
    gyro = mm.sensor("imu_gyro").adr[0]
    assert spread[gyro : gyro + 3] == pytest.approx(0.01, rel=0.1)  # Gaussian with the sensor's noise
    quat = np.asarray(hp.read_sensor(model, d.replace(sensordata=noisy), "hand_quat"))
    np.testing.assert_allclose(np.linalg.norm(quat, axis=-1), 1.0, atol=1e-12)  # rotated, still unit
    turn = 2 * np.arccos(np.clip(np.abs(quat @ np.asarray(hp.read_sensor(model, d, "hand_quat"))), 0, 1))
    assert np.median(turn) == pytest.approx(0.05 * 0.6745, rel=0.1)  # turned by |N(0, 0.05)|: its median
    axis = np.asarray(hp.read_sensor(model, d.replace(sensordata=noisy), "arm_y"))
    np.testing.assert_allclose(np.linalg.norm(axis, axis=-1), 1.0, atol=1e-12)
    tilt = np.arccos(np.clip(axis @ np.asarray(hp.read_sensor(model, d, "arm_y")), -1, 1))
    assert 0 < np.median(tilt) < 0.02  # at most the turn's angle


UNSUPPORTED = [
    ('<camera name="c" pos="0 0 2"/>', '<camprojection site="s" camera="c"/>', "camprojection sensor"),
    ("", '<distance geom1="g" geom2="floor"/>', "geomdist sensor"),
    (
        '<geom type="sphere" size="0.1" pos="2 0 0" gap="0.01"/>',
        '<contact geom1="g"/>',
        "contact sensors in models with contact gaps",
    ),
    ("", '<user dim="2"/>', "user sensor"),
    ("", '<jointpos joint="j" delay="0.01" nsample="3"/>', "sensor delay"),
    ("", '<rangefinder site="s" data="dist normal"/>', "rangefinder data other than the distance"),
    (
        '<camera name="c" pos="0 0 2"/>',
        '<framepos objtype="camera" objname="c"/>',
        "framepos sensors on cameras",
    ),
]


@pytest.mark.parametrize("world, sensor, message", UNSUPPORTED, ids=[u[2] for u in UNSUPPORTED])
def test_unsupported_sensors_are_refused_by_name(world, sensor, message):
    xml = f"""<mujoco><worldbody><geom name="floor" type="plane" size="1 1 0.1"/>{world}
      <body pos="0 0 1"><joint name="j"/><geom name="g" size="0.1"/><site name="s"/></body></worldbody>
      <sensor>{sensor}</sensor></mujoco>"""
    with pytest.raises(NotImplementedError, match=message) as e:
        hp.from_mujoco(mujoco.MjModel.from_xml_string(xml), source="probe.xml")
    assert "probe.xml" in str(e.value) and "sensor #0" in str(e.value)


def test_rangefinders_against_a_height_field():
    """Rays from sites all around a tilted height field with relief: onto its cells, its sides (below the edge
    profile) and its base, and past it (mj_rayHfield)."""
    n = 9
    rng = np.random.default_rng(3)
    heights = " ".join(f"{v:.4f}" for v in rng.uniform(0, 1, n * n))
    sites = "".join(
        f'<site name="s{k}" pos="{x:.3f} {y:.3f} {z:.3f}" euler="{a:.1f} {b:.1f} 0"/>'
        for k, (x, y, z, a, b) in enumerate(rng.uniform([-1.5, -1.5, -0.3, 0, 0], [1.5, 1.5, 1.0, 360, 360], (24, 5)))
    )
    sensors = "".join(f'<rangefinder site="s{k}"/>' for k in range(24))
    xml = f"""<mujoco><asset><hfield name="h" nrow="{n}" ncol="{n}" size="1 0.8 0.5 0.2" elevation="{heights}"/>
      </asset><worldbody><geom type="hfield" hfield="h" euler="10 -5 30" contype="0" conaffinity="0"/>
      <body><joint type="slide"/><geom size="0.01" contype="0" conaffinity="0"/>{sites}</body></worldbody>
      <sensor>{sensors}</sensor></mujoco>"""
    mm = mujoco.MjModel.from_xml_string(xml)
    model = hp.from_mujoco(mm)
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    d = jax.jit(hp.forward)(model, hp.from_mjdata(model, md, mm))
    np.testing.assert_allclose(d.sensordata, md.sensordata, atol=1e-10)
    assert 6 <= np.sum(md.sensordata > 0) <= 20  # hits and misses


STATIC = """<mujoco><option gravity="0.3 -0.2 -9.81"/><worldbody>
  <body name="welded" pos="0 0 1" euler="0 30 10"><geom size=".1"/><site name="s" pos=".05 0 0" euler="20 0 0"/>
    <body name="child" pos=".3 0 0"><geom size=".05" mass="2"/></body></body>
  <body name="mocap" mocap="true" pos="1 0 1"><geom size=".1" contype="0"/><site name="m"/></body>
  <body name="arm" pos="2 0 1"><joint type="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
    <site name="tip" pos=".3 0 0"/></body>
  <site name="w" pos="0 0 2" euler="45 0 0"/>
</worldbody><sensor>
  <accelerometer site="s"/><accelerometer site="m"/><accelerometer site="w"/><accelerometer site="tip"/>
  <framelinacc objtype="site" objname="s"/><frameangacc objtype="site" objname="s"/>
  <framelinacc objtype="body" objname="child"/><framelinacc objtype="xbody" objname="mocap"/>
  <framelinacc objtype="site" objname="w"/><velocimeter site="s"/><gyro site="s"/>
  <force site="s"/><torque site="s"/><force site="m"/><framelinvel objtype="site" objname="s"/>
</sensor></mujoco>"""


def test_sensors_on_bodies_without_dofs():
    """Sensors on the world, a body welded to it and a mocap body: MuJoCo 4's accelerometers and frame
    accelerations there read gravity alone (an accelerometer at rest reads g in its frame), force sensors the weight
    they hold. hurtle read 0 on every accelerometer of dm_control's humanoid_CMU_V2019/V2020 (a root without a joint
    until composer attaches one), with qacc equal to 1e-14."""
    mm = mujoco.MjModel.from_xml_string(STATIC)
    model = hp.from_mujoco(mm)
    rng = np.random.default_rng(3)
    refs = [mujoco.MjData(mm) for _ in range(2)]
    for d in refs:
        d.qpos[:] = rng.uniform(-1, 1, mm.nq)
        d.qvel[:] = rng.uniform(-1, 1, mm.nv)
        mujoco.mj_forward(mm, d)
    static_acc = refs[0].sensordata[mm.sensor_adr[0] : mm.sensor_adr[0] + 3]
    assert np.linalg.norm(static_acc) == pytest.approx(np.linalg.norm([0.3, -0.2, -9.81]))  # g, in the site's frame
    ours = P.batched(hp.forward)(model, P.batch_data(model, mm, refs))
    _check(mm, ours, refs, "static bodies")


def test_models_without_sensors_skip_them():
    mm = mujoco.MjModel.from_xml_string(_variant().split("<sensor>")[0] + "</mujoco>")
    model = hp.from_mujoco(mm)
    assert model.nsensor == 0 and hp.make_data(model).sensordata.shape == (0,)
    disabled = hp.from_mujoco(mujoco.MjModel.from_xml_string(_variant()))
    off = disabled.replace(opt=disabled.opt.replace(disableflags=disabled.opt.disableflags | 8192))
    d = jax.jit(hp.forward)(off, hp.make_data(off))
    assert not np.any(np.asarray(d.sensordata))  # mjDSBL_SENSOR: untouched


def test_shadow_hand_touch_sensors():
    """Gymnasium-Robotics' Shadow hand with its 97 touch sensors on the fingers and palm, manipulating a block under
    random controls (with contacts): MuJoCo's touch readings (when gymnasium-robotics is installed)."""
    robotics = pytest.importorskip("gymnasium_robotics")
    path = os.path.join(os.path.dirname(robotics.__file__), "envs/assets/hand/manipulate_block_touch_sensors.xml")
    mm = mujoco.MjModel.from_xml_path(path)
    mm.opt.tolerance, mm.opt.iterations, mm.opt.ls_iterations = 1e-12, 300, 100
    model = hp.from_mujoco(mm, source=path)
    forward = jax.jit(hp.forward)
    md, rng, touched = mujoco.MjData(mm), np.random.default_rng(0), 0
    touch = mm.sensor_adr[mm.sensor_type == mujoco.mjtSensor.mjSENS_TOUCH]
    for _ in range(3):
        for _ in range(100):
            md.ctrl[:] = rng.uniform(mm.actuator_ctrlrange[:, 0], mm.actuator_ctrlrange[:, 1])
            mujoco.mj_step(mm, md)
        mujoco.mj_forward(mm, md)
        out = forward(model, hp.from_mjdata(model, md, mm))
        assert P.sensor_errors(mm, out.sensordata, md.sensordata).max() <= 1e-8
        touched += int(np.sum(md.sensordata[touch] > 0))
    assert touched >= 5
