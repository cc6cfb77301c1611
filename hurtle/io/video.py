"""Frames and videos of rollouts with MuJoCo's own renderer (`mujoco.Renderer`), headless.

`Renderer(model)` draws qpos into RGB frames: MuJoCo's scene of the model (its lights, materials, skybox and
floor), seen by a camera that follows a body at a fixed distance (as Gymnasium's MuJoCo environments do) or by
one of the model's cameras. `write(path, frames, fps)` encodes `.mp4` (imageio's ffmpeg plugin, from the
`imageio-ffmpeg` package: `pip install 'hurtle[video]'`) or `.gif` (Pillow).

Headless rendering needs an OpenGL backend that needs no display: EGL on Mesa's software device (llvmpipe) needs no
GPU, only the system packages `libegl1` and `libgl1-mesa-dri` (Debian/Ubuntu names); OSMesa needs `libosmesa6`.
`import hurtle` picks one whose library loads (`hurtle/gl.py`), and nothing but rendering needs one: without them,
`Renderer` raises `RenderingUnavailable`, one line naming what to install.
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any

import mujoco
import numpy as np

from hurtle import gl
from hurtle.extras import require
from hurtle.io.html import default_follow, mj_model, view_radius


class RenderingUnavailable(RuntimeError):
    """No OpenGL backend MuJoCo's renderer can use here: the message (one line) names the system packages to
    install."""


def _use_headless_backend() -> None:
    """Where mujoco was imported before hurtle on Linux without a display and MUJOCO_GL unset, MuJoCo picked GLFW,
    which cannot start there: point its renderer at the first headless backend whose library loads (EGL, then
    OSMesa), as importing hurtle first would have (hurtle/gl.py). Nothing changes where none does."""
    if "MUJOCO_GL" in os.environ or not gl.headless():
        return
    for backend in gl.HEADLESS:
        if gl.library_error(backend) is not None:
            continue
        try:
            context = importlib.import_module(f"mujoco.{backend}").GLContext
            from mujoco.rendering.classic import gl_context
        except Exception:
            continue
        gl_context.GLContext = context
        os.environ["MUJOCO_GL"] = backend
        return


def _check_backend() -> None:
    """RenderingUnavailable where the backend asked for is known not to start, before MuJoCo tries it."""
    aside = os.environ.get(gl.UNAVAILABLE)
    if aside:  # the user's MUJOCO_GL, set aside at import because its library does not load
        backend, _, reason = aside.partition(": ")
        raise RenderingUnavailable(gl.unavailable_message(backend, reason))
    backend = gl.requested()
    error = gl.library_error(backend) if backend in gl.LIBRARIES else None
    if error is None and not backend and gl.headless():
        error = "MuJoCo's default, GLFW, needs a display"
    if error is not None:
        raise RenderingUnavailable(gl.unavailable_message(backend, error))


def check_available() -> None:
    """Raise `RenderingUnavailable` (one line) where MuJoCo's renderer is known not to start here, before any work
    that would be rendered."""
    _use_headless_backend()
    _check_backend()


def _unavailable(error: Exception) -> RenderingUnavailable:
    return RenderingUnavailable(gl.unavailable_message(gl.requested(), f"{type(error).__name__}: {error}"))


def _spec(model: Any) -> mujoco.MjSpec | None:
    """The MJCF of `model` as an editable spec, where it comes from a file or string (None for an `MjModel`)."""
    if isinstance(model, mujoco.MjModel):
        return None
    source = getattr(model, "xml", None) or model
    if not isinstance(source, str | os.PathLike):
        source = getattr(model, "source", None)
        if not (source and os.path.exists(source)):
            return None
    text = os.fspath(source)
    return mujoco.MjSpec.from_string(text) if text.lstrip().startswith("<") else mujoco.MjSpec.from_file(text)


def scene_model(model: Any) -> mujoco.MjModel:
    """MuJoCo's model of `model` dressed for video (physics unchanged): planes without a material get a checker of
    their own colour with 0.5 m squares, so a tracking camera shows the motion, and a model without a skybox
    gets a gradient sky. An `MjModel` is used as it is."""
    spec = _spec(model)
    if spec is None:
        return mj_model(model)
    for i, geom in enumerate(spec.geoms):
        if geom.type != mujoco.mjtGeom.mjGEOM_PLANE or geom.material:
            continue
        rgb = np.asarray(geom.rgba[:3], np.float64)
        tex = spec.add_texture(
            name=f"hurtle_checker_{i}",
            type=mujoco.mjtTexture.mjTEXTURE_2D,
            builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
            rgb1=rgb,
            rgb2=0.75 * rgb,
            width=256,
            height=256,
        )
        mat = spec.add_material(name=f"hurtle_floor_{i}", texuniform=True, texrepeat=[1.0, 1.0])
        mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
        geom.material = mat.name
    if not any(t.type == mujoco.mjtTexture.mjTEXTURE_SKYBOX for t in spec.textures):
        spec.add_texture(
            name="hurtle_sky",
            type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
            builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
            rgb1=[0.45, 0.6, 0.75],
            rgb2=[0.1, 0.12, 0.15],
            width=256,
            height=1536,
        )
    return spec.compile()


class Renderer:
    """RGB frames of a model's poses by MuJoCo's renderer.

    model: an `MjModel`, an MJCF path or string, or a hurtle `PhysicsEnv`/`Model` loaded from a file (dressed by
    `scene_model`).
    camera: a camera of the model (name or index); by default a camera that tracks the body `follow` (a name or
    index; default: the first body under the world) from `distance` (default 3x the radius its subtree fills,
    `hurtle.io.html.view_radius`, at least 1.5 m) at MuJoCo's azimuth and elevation in degrees (default: from the side, slightly above).
    """

    def __init__(
        self,
        model: Any,
        width: int = 640,
        height: int = 480,
        *,
        camera: str | int | None = None,
        follow: str | int | None = None,
        distance: float | None = None,
        azimuth: float = 90.0,
        elevation: float = -15.0,
    ):
        m = scene_model(model)
        if width <= 0 or height <= 0:
            raise ValueError(f"Renderer: width and height must be positive, got {width}x{height}")
        # MuJoCo's offscreen buffer bounds the frame: grow it to the asked size
        m.vis.global_.offwidth = max(int(m.vis.global_.offwidth), width)
        m.vis.global_.offheight = max(int(m.vis.global_.offheight), height)
        self.model, self.width, self.height = m, width, height
        self.data = mujoco.MjData(m)
        check_available()
        try:
            self._renderer = mujoco.Renderer(m, height, width)
        except Exception as e:  # the backend's import or context creation: name what to install
            raise _unavailable(e) from e
        if camera is not None:
            cam = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_CAMERA, camera) if isinstance(camera, str) else camera
            if not 0 <= cam < m.ncam:
                raise ValueError(f"Renderer: the model has no camera {camera!r} ({m.ncam} cameras)")
            self.camera: Any = cam
        else:
            body = default_follow(m, follow, "Renderer")
            self.camera = mujoco.MjvCamera()
            if body > 0:  # track the body's subtree
                self.camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
                self.camera.trackbodyid = body
            else:  # the world: a still camera on the model's centre (the world's subtree moves with every body)
                self.camera.type = mujoco.mjtCamera.mjCAMERA_FREE
                self.camera.lookat[:] = m.stat.center
            self.camera.distance = distance if distance is not None else max(3.0 * view_radius(m, body), 1.5)
            self.camera.azimuth, self.camera.elevation = azimuth, elevation

    def render(self, qpos: Any, mocap_pos: Any = None) -> np.ndarray:
        """The frame `[height, width, 3]` uint8 of one pose (`mocap_pos` `[nmocap, 3]`: where the mocap bodies
        are, else at the model's rest)."""
        qpos = np.asarray(qpos, np.float64)
        if qpos.shape != (self.model.nq,):
            raise ValueError(f"Renderer.render: qpos must be [{self.model.nq}], got {qpos.shape}")
        self.data.qpos[:] = qpos
        if mocap_pos is not None:
            self.data.mocap_pos[:] = np.asarray(mocap_pos, np.float64).reshape(self.model.nmocap, 3)
        mujoco.mj_forward(self.model, self.data)
        self._renderer.update_scene(self.data, camera=self.camera)
        return self._renderer.render()

    def frames(self, qpos: Any, mocap_pos: Any = None) -> np.ndarray:
        """Frames `[frames, height, width, 3]` uint8 of poses `[frames, nq]` (and mocap positions `[frames,
        nmocap, 3]`)."""
        qpos = np.asarray(qpos, np.float64)
        if qpos.ndim != 2:
            raise ValueError(f"Renderer.frames: qpos must be [frames, {self.model.nq}], got {qpos.shape}")
        mocap = [None] * len(qpos) if mocap_pos is None else mocap_pos
        return np.stack([self.render(q, p) for q, p in zip(qpos, mocap)])

    def close(self) -> None:
        self._renderer.close()

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def real_time_stride(dt: float, fps: float) -> int:
    """The frame stride that plays frames `dt` apart in real time at `fps` frames per second (at least 1)."""
    return max(1, round(1.0 / (dt * fps)))


def write(path: str | os.PathLike, frames: Any, fps: float) -> str:
    """Encode `frames` `[frames, height, width, 3]` uint8 into `path` (`.mp4` or `.gif`, by its suffix), written
    whole and then renamed into place; returns the path."""
    import imageio.v2 as imageio

    path = os.fspath(path)
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or len(frames) == 0:
        raise ValueError(
            f"video.write: frames must be [n > 0, height, width, 3] uint8, got {frames.shape} {frames.dtype}"
        )
    if not fps > 0:
        raise ValueError(f"video.write: fps must be positive, got {fps}")
    suffix = os.path.splitext(path)[1].lower()
    tmp = f"{path}.tmp-{os.getpid()}{suffix}"
    try:
        if suffix == ".gif":
            imageio.mimwrite(tmp, frames, format="GIF", duration=1000.0 / fps, loop=0)
        elif suffix == ".mp4":
            require("video", "writing .mp4 (.gif needs nothing more)")
            # yuv420p (what browsers and players decode) needs even sizes; block size 2 keeps the frame as drawn.
            # The encoder is a subprocess (fork and exec at once): JAX's warning about forking does not apply.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
                imageio.mimwrite(tmp, frames, format="FFMPEG", fps=fps, codec="libx264", macro_block_size=2, quality=7)
        else:
            raise ValueError(f"video.write: {path}: the video format is chosen by the suffix, .mp4 or .gif")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


SYSTEM_PACKAGES = gl.SYSTEM_PACKAGES

__all__ = [
    "SYSTEM_PACKAGES",
    "Renderer",
    "RenderingUnavailable",
    "check_available",
    "real_time_stride",
    "scene_model",
    "write",
]
