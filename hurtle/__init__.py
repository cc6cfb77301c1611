"""hurtle: reinforcement learning for robots with the simulator on the accelerator."""

import os
import sys

from hurtle import xla_flags

xla_flags.configure()  # before JAX starts: XLA CPU code generation that maps few pages (hurtle/xla_flags.py)

# MuJoCo's renderer (hurtle.io.video) picks its OpenGL backend when mujoco is imported: on Linux without a display
# its default (GLFW) cannot start, so default to EGL, which runs on Mesa's software device without a GPU
if (
    sys.platform.startswith("linux")
    and "MUJOCO_GL" not in os.environ
    and not os.environ.get("DISPLAY")
    and not os.environ.get("WAYLAND_DISPLAY")
    and "mujoco" not in sys.modules
):
    os.environ["MUJOCO_GL"] = "egl"

__version__ = "0.1.0"
