"""The HTML rollout viewer: the page's data (every geom type, poses equal MuJoCo's kinematics, several worlds),
and the page itself in headless Chromium (Debian's, driven by Playwright's Python package): no console error, a
WebGL context, the frames and bodies it was given, screenshots that change where a body moved, a time slider
that moves the scene."""

import base64
import json
import re
import shutil

import mujoco
import numpy as np
import pytest

from hurtle.io import html

SCENE = """
<mujoco>
  <asset>
    <mesh name="tetra" vertex="0 0 0  0.2 0 0  0 0.2 0  0 0 0.2"/>
    <hfield name="hill" nrow="8" ncol="8" size="1 1 0.2 0.1"/>
  </asset>
  <worldbody>
    <geom type="plane" size="3 3 0.1" rgba="0.3 0.4 0.5 1"/>
    <geom type="hfield" hfield="hill" pos="2 0 0"/>
    <body name="ball" pos="0 0 1">
      <freejoint/>
      <geom type="sphere" size="0.1" rgba="1 0 0 1"/>
      <geom type="capsule" size="0.05 0.1" pos="0.2 0 0"/>
      <geom type="ellipsoid" size="0.1 0.05 0.03" pos="-0.2 0 0"/>
      <geom type="cylinder" size="0.05 0.1" pos="0 0.2 0"/>
      <geom type="box" size="0.05 0.05 0.05" pos="0 -0.2 0"/>
      <geom type="mesh" mesh="tetra" pos="0 0 0.2"/>
      <geom type="sphere" size="0.3" group="3"/>
    </body>
  </worldbody>
</mujoco>
"""


def _fall(m, steps=60):
    d = mujoco.MjData(m)
    qpos = []
    for _ in range(steps):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    return np.array(qpos)


def _rollout(page):
    data = re.search(r'<script id="hurtle-rollout" type="application/json">(.*?)</script>', page, re.S).group(1)
    return json.loads(data.replace("<\\/", "</"))


def test_page_data_holds_every_geom_type_and_mujocos_poses():
    m = mujoco.MjModel.from_xml_string(SCENE)
    qpos = _fall(m)
    page = html.render(SCENE, np.stack([qpos, qpos[::-1]]), dt=m.opt.timestep)
    r = _rollout(page)
    assert (r["nworld"], r["nframe"], r["nbody"]) == (2, 60, 2)
    kinds = [g["type"] for g in r["geoms"]]
    assert sorted(kinds) == sorted(["plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh"])
    assert len(r["meshes"]) == 1 and len(r["hfields"]) == 1  # the group-3 sphere is hidden, as MuJoCo's viewer does
    poses = np.frombuffer(base64.b64decode(r["poses"]), np.float32).reshape(2, 60, 2, 7)
    d = mujoco.MjData(m)
    d.qpos[:] = qpos[10]
    mujoco.mj_kinematics(m, d)
    np.testing.assert_allclose(poses[0, 10, 1, :3], d.xpos[1], rtol=1e-6)
    np.testing.assert_allclose(poses[1, 49, 1, 3:], d.xquat[1], rtol=1e-6)
    assert "<script>" in page and "https://" not in page.split("<script>")[0]  # nothing fetched


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"qpos must be \[frames, 7\] or \[worlds, frames, 7\], got \(3, 5\)"):
        html.render(SCENE, np.zeros((3, 5)), dt=0.01)
    with pytest.raises(ValueError, match="dt must be positive"):
        html.render(SCENE, np.zeros((3, 7)), dt=0.0)
    with pytest.raises(ValueError, match="no body named 'nose'"):
        html.render(SCENE, np.zeros((3, 7)), dt=0.01, follow="nose")


# distinct colours in the WebGL canvas (every 100th pixel)
COLOURS = """(() => {
  const c = document.querySelector('#view canvas'), t = document.createElement('canvas');
  t.width = c.width; t.height = c.height;
  const x = t.getContext('2d'); x.drawImage(c, 0, 0);
  const d = x.getImageData(0, 0, t.width, t.height).data, s = new Set();
  for (let i = 0; i < d.length; i += 400) s.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
  return s.size;
})()"""


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--use-angle=swiftshader", "--enable-unsafe-swiftshader"])
        yield b
        b.close()


def test_page_plays_in_headless_chromium(browser, tmp_path):
    m = mujoco.MjModel.from_xml_string(SCENE)
    qpos = _fall(m, 120)
    path = html.write(tmp_path / "ball.html", SCENE, qpos, dt=m.opt.timestep, follow=0)
    page = browser.new_page(viewport={"width": 640, "height": 480})
    errors = []
    page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"file://{path}")
    page.wait_for_function("window.hurtleViewer !== undefined")
    viewer = page.evaluate("({n: hurtleViewer.nframe, b: hurtleViewer.nbody, w: hurtleViewer.webgl})")
    assert viewer == {"n": 120, "b": 2, "w": True}
    page.evaluate("hurtleViewer.setFrame(0)")
    page.wait_for_timeout(200)
    first = page.screenshot()
    assert page.evaluate(COLOURS) > 5  # not blank (a blank canvas has one): the floor, the shaded geoms, the background
    page.evaluate("hurtleViewer.setFrame(119)")  # the ball has fallen ~0.7 m
    page.wait_for_timeout(200)
    last = page.screenshot()
    # the screenshots differ where the ball moved, not all over: a small share of the view changed
    import imageio.v3 as iio

    a, b = (iio.imread(shot)[:440, :, :3].astype(int) for shot in (first, last))  # the view, not the controls
    changed = np.abs(a - b).max(axis=-1) > 30
    assert 0.001 < changed.mean() < 0.2, changed.mean()
    rows = np.flatnonzero(changed.any(axis=1))
    assert rows.max() - rows.min() < 0.6 * changed.shape[0]  # one region: the ball's path and its shadow
    # the time slider moves the scene: dragging it to the start shows the first frame again
    page.eval_on_selector("#time", "e => { e.value = '0'; e.dispatchEvent(new Event('input')); }")
    assert page.evaluate("hurtleViewer.frame") == 0
    page.wait_for_timeout(200)
    again = page.screenshot()
    assert again == first
    assert not errors, errors
