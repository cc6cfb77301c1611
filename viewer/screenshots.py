"""Screenshots of hurtle's HTML viewer in headless Chromium (Debian's `chromium`, driven by Playwright's Python
package): a page per locomotion task, a mesh model and a height-field model, each under smooth random controls,
shot at its first frame and at a later one. What a reviewer looks at after changing `viewer/src/main.js`.

    .venv/bin/python viewer/screenshots.py [--out DIR] [--seconds S]

The mesh model is Gymnasium-Robotics' Fetch arm when that package is installed (`pip install --no-deps
gymnasium-robotics`), else a convex-mesh scene written here; the height field is a terrain written here.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import tempfile

import numpy as np

import hurtle
from hurtle.io import html
from hurtle.io.motion import model_motion

ASSETS = os.path.join(os.path.dirname(hurtle.__file__), "envs", "*", "assets")


def terrain_xml() -> str:
    """Hills from a height field (elevation given inline) and bodies that roll and slide down them."""
    n = 40
    x = np.linspace(-1, 1, n)
    z = 0.5 + 0.25 * np.sin(3 * x)[:, None] * np.cos(2 * x)[None, :] + 0.25 * x[None, :]
    z = (z - z.min()) / (z.max() - z.min())
    elevation = " ".join(f"{v:.3f}" for v in z.ravel())
    bodies = "".join(
        f'<body pos="{px} {py} 1.6"><freejoint/><geom type="{t}" size="{s}" rgba="{c}"/></body>'
        for px, py, t, s, c in [
            (-0.8, -0.5, "sphere", "0.15", "0.9 0.3 0.2 1"),
            (0.2, 0.6, "ellipsoid", "0.2 0.12 0.1", "0.2 0.5 0.9 1"),
            (0.9, -0.2, "box", "0.12 0.12 0.12", "0.9 0.8 0.2 1"),
            (-0.2, 0.0, "capsule", "0.08 0.2", "0.3 0.8 0.4 1"),
        ]
    )
    return f"""<mujoco model="terrain">
  <option timestep="0.005"/>
  <asset><hfield name="hills" nrow="{n}" ncol="{n}" size="2.5 2.5 1 0.1" elevation="{elevation}"/></asset>
  <worldbody>
    <light pos="0 0 6" dir="0 0 -1" directional="true"/>
    <geom type="hfield" hfield="hills" rgba="0.55 0.5 0.4 1"/>
    {bodies}
  </worldbody>
</mujoco>"""


MESH_SCENE = """<mujoco model="meshes">
  <asset>
    <mesh name="tetra" vertex="0 0 0  0.4 0 0  0 0.4 0  0 0 0.4"/>
    <mesh name="prism" vertex="-0.2 -0.2 0  0.2 -0.2 0  0 0.2 0  -0.2 -0.2 0.5  0.2 -0.2 0.5  0 0.2 0.5"/>
  </asset>
  <worldbody>
    <light pos="0 0 4" dir="0 0 -1"/>
    <geom type="plane" size="3 3 0.1" rgba="0.7 0.75 0.8 1"/>
    <body pos="0 0 1"><freejoint/><geom type="mesh" mesh="tetra" rgba="0.9 0.4 0.2 1"/></body>
    <body pos="0.6 0.2 1.5"><freejoint/><geom type="mesh" mesh="prism" rgba="0.2 0.6 0.9 1"/></body>
  </worldbody>
</mujoco>"""


def models(workdir: str) -> list[tuple[str, str]]:
    """(name, model file) of every page to shoot: the registered tasks' models, a mesh model, a height field."""
    out = [(os.path.splitext(os.path.basename(p))[0], p) for p in sorted(glob.glob(os.path.join(ASSETS, "*.xml")))]
    try:
        import gymnasium_robotics

        fetch = os.path.join(
            os.path.dirname(gymnasium_robotics.__file__), "envs", "assets", "fetch", "pick_and_place.xml"
        )
        out.append(("mesh_fetch", fetch))
    except ImportError:
        path = os.path.join(workdir, "meshes.xml")
        with open(path, "w") as f:
            f.write(MESH_SCENE)
        out.append(("mesh_scene", path))
    path = os.path.join(workdir, "terrain.xml")
    with open(path, "w") as f:
        f.write(terrain_xml())
    out.append(("hfield_terrain", path))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="viewer-screenshots", help="where the pages and screenshots go")
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated seconds per page")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as work, sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=exe, args=["--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
        )
        for name, path in models(work):
            qpos, dt = model_motion(path, args.seconds, engine="mujoco")
            follow = 0 if name.startswith("hfield") else None  # the whole terrain, not one rolling body
            page_path = html.write(os.path.join(args.out, f"{name}.html"), path, qpos, dt, title=name, follow=follow)
            page = browser.new_page(viewport={"width": 640, "height": 400})
            errors: list[str] = []
            page.on("console", lambda msg, errors=errors: msg.type == "error" and errors.append(msg.text))
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.goto(f"file://{os.path.abspath(page_path)}")
            page.wait_for_function("window.hurtleViewer !== undefined")
            shots = []
            for frame in (0, qpos.shape[1] - 1):
                page.evaluate(f"hurtleViewer.setFrame({frame})")
                page.wait_for_timeout(300)
                shots.append(os.path.join(args.out, f"{name}-{frame}.png"))
                page.screenshot(path=shots[-1])
            page.close()
            size = os.path.getsize(page_path) / 1e6
            print(f"{name}: {qpos.shape[1]} frames, page {size:.2f} MB, errors {errors or 'none'}: {', '.join(shots)}")
        browser.close()


if __name__ == "__main__":
    main()
