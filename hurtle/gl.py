"""Which OpenGL backend MuJoCo's renderer uses, decided so that nothing but rendering ever needs one.

MuJoCo's Python package picks its OpenGL backend from `MUJOCO_GL` when it is first imported, and with
`MUJOCO_GL=egl` (or `osmesa`) on a machine without that library the import itself dies inside PyOpenGL
(`AttributeError: 'NoneType' object has no attribute 'eglQueryString'`): every use of MuJoCo would fail, not
only rendering. So `import hurtle` (`configure`, before mujoco is imported):
  - with `MUJOCO_GL` unset on Linux without a display, sets it to the first headless backend whose library
    loads (EGL, then OSMesa), and leaves it unset where none does (MuJoCo's default, GLFW, imports anywhere);
  - with `MUJOCO_GL` set to a backend whose library cannot load, sets it aside (`MUJOCO_GL=disable`) and keeps
    the user's choice and the reason in `HURTLE_MUJOCO_GL_UNAVAILABLE`, so MuJoCo imports and only rendering
    fails, with one line naming the packages to install (`unavailable_message`).
Training, evaluation and the HTML viewer never touch OpenGL; `hurtle.io.video` is the one place that renders.
"""

from __future__ import annotations

import ctypes
import os
import sys

# what each of MuJoCo's backends needs on Debian or Ubuntu, and the shared library it loads
SYSTEM_PACKAGES = {"egl": "libegl1 libgl1-mesa-dri", "osmesa": "libosmesa6", "glx": "libgl1 libglx-mesa0"}
LIBRARIES = {"egl": ("libEGL.so.1", "libEGL.so"), "osmesa": ("libOSMesa.so.8", "libOSMesa.so.6", "libOSMesa.so")}
LIBRARIES["glx"] = ("libGL.so.1", "libGL.so")
HEADLESS = ("egl", "osmesa")  # in the order tried where no display is
UNAVAILABLE = "HURTLE_MUJOCO_GL_UNAVAILABLE"  # "backend: reason", where configure set the user's MUJOCO_GL aside


def headless() -> bool:
    """Linux without an X or Wayland display (a server, a cluster node, a container)."""
    return sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")


def library_error(backend: str) -> str | None:
    """None where `backend`'s OpenGL library loads in this process (or it needs none that is checked here),
    else why not."""
    names = LIBRARIES.get(backend)
    if not names or not sys.platform.startswith("linux"):
        return None
    errors = []
    for name in names:
        try:
            ctypes.CDLL(name)
            return None
        except OSError as e:
            errors.append(str(e))
    return errors[0]


def requested() -> str:
    """The backend asked for: `MUJOCO_GL` as the user set it (lower case; "" where unset)."""
    aside = os.environ.get(UNAVAILABLE)
    if aside:
        return aside.partition(":")[0]
    return os.environ.get("MUJOCO_GL", "").strip().lower()


def configure() -> None:
    """At `import hurtle`: a `MUJOCO_GL` under which `import mujoco` succeeds (see the module docstring)."""
    if "mujoco" in sys.modules or not sys.platform.startswith("linux"):
        return  # MuJoCo chose already; elsewhere its defaults need nothing
    asked = os.environ.get("MUJOCO_GL", "").strip().lower()
    if asked in LIBRARIES:
        error = library_error(asked)
        if error is not None:
            os.environ[UNAVAILABLE] = f"{asked}: {error}"
            os.environ["MUJOCO_GL"] = "disable"
        return
    if asked or not headless():
        return
    for backend in HEADLESS:
        if library_error(backend) is None:
            os.environ["MUJOCO_GL"] = backend
            return


def unavailable_message(backend: str, reason: str) -> str:
    """One line: MuJoCo's renderer cannot run on `backend` here, and the packages that fix it."""
    reason = " ".join(str(reason).split())[:200]
    if backend in SYSTEM_PACKAGES:
        fix = f"install the system packages {SYSTEM_PACKAGES[backend]} (apt-get install {SYSTEM_PACKAGES[backend]})"
        if backend == "egl":
            fix += f", or {SYSTEM_PACKAGES['osmesa']} and set MUJOCO_GL=osmesa"
        return f"rendering needs OpenGL: MUJOCO_GL={backend} cannot start ({reason}); {fix}"
    packages = f"{SYSTEM_PACKAGES['egl']} (EGL) or {SYSTEM_PACKAGES['osmesa']} (OSMesa)"
    if backend == "glfw":
        return (
            f"rendering needs OpenGL: MUJOCO_GL=glfw cannot start ({reason}); it needs a display: without one, set "
            f"MUJOCO_GL=egl with the system packages {SYSTEM_PACKAGES['egl']}"
        )
    if not backend:
        where = "no display and no headless OpenGL library" if headless() else "no OpenGL context"
        return (
            f"rendering needs OpenGL: {where} ({reason}); install the system packages {packages}, e.g. "
            f"apt-get install {SYSTEM_PACKAGES['egl']}"
        )
    return f"rendering needs OpenGL: MUJOCO_GL={backend} cannot start ({reason})"


__all__ = ["SYSTEM_PACKAGES", "configure", "headless", "library_error", "requested", "unavailable_message"]
