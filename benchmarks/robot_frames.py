"""One frame of each MuJoCo Playground robot task at its home pose, rendered by MuJoCo's renderer: the sheet in
docs/images/robot-tasks.jpg (run: `python benchmarks/robot_frames.py docs/images/robot-tasks.jpg`, the `robots` extra
installed, EGL or OSMesa for headless rendering)."""

import os
import sys

os.environ.setdefault("MUJOCO_GL", "egl")
import imageio.v3 as iio
import mujoco
import numpy as np

from hurtle.envs import make

tasks = [
    "go1_joystick_flat",
    "go1_joystick_rough",
    "berkeley_humanoid_joystick_flat",
    "leap_cube_reorient",
    "panda_pick_cube",
]
W, H = 400, 300
tiles = []
for name in tasks:
    task = make(name).unwrapped
    m = task.mj
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, m.keyframe("home").id)
    mujoco.mj_forward(m, d)
    cam = mujoco.MjvCamera()
    mujoco.mjv_defaultFreeCamera(m, cam)
    if name.startswith("go1") or name.startswith("berkeley"):
        cam.lookat[:] = d.qpos[:3]
        cam.distance = 1.2 if name.startswith("go1") else 2.2
        cam.elevation = -15
        cam.azimuth = 135
    elif name == "leap_cube_reorient":
        cam.lookat[:] = [0.1, 0.0, 0.03]
        cam.distance = 0.45
        cam.elevation = -35
        cam.azimuth = 150
    else:
        cam.lookat[:] = [0.45, 0.0, 0.25]
        cam.distance = 1.6
        cam.elevation = -20
        cam.azimuth = 150
    with mujoco.Renderer(m, H, W) as r:
        r.update_scene(d, cam)
        img = r.render()
    tiles.append(img)
    print(name, img.shape, img.mean())
blank = np.full_like(tiles[0], 255)
rows = [np.concatenate(tiles[:3], 1), np.concatenate(tiles[3:] + [blank], 1)]
sheet = np.concatenate(rows, 0)
iio.imwrite(sys.argv[1], sheet, quality=85)
