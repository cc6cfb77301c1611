"""Video with MuJoCo's renderer, headless (EGL on Mesa's software device): frames of a rollout that change where
the body moved, .gif and .mp4 files with the frames asked for, the Gymnasium and dm_env adapters' render, and a
clear error naming the system packages when no OpenGL backend can start."""

import os

import imageio.v3 as iio
import mujoco
import numpy as np
import pytest

from hurtle.io import video
from hurtle.io.motion import model_motion

BALL = """
<mujoco>
  <worldbody>
    <light pos="0 0 3" dir="0 0 -1"/>
    <geom type="plane" size="3 3 0.1" rgba="0.5 0.6 0.7 1"/>
    <body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" rgba="1 0 0 1"/></body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def fall():
    """A ball falling 0.6 m, seen by a fixed camera (follow the world, so the ball moves in the frame)."""
    m = mujoco.MjModel.from_xml_string(BALL)
    d = mujoco.MjData(m)
    qpos = []
    for _ in range(180):  # 0.36 s at MuJoCo's default 2 ms
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    return np.array(qpos[::20])


def _red(frame):
    """Row and column of the red ball's pixels' centre."""
    mask = (frame[..., 0] > 150) & (frame[..., 1] < 80) & (frame[..., 2] < 80)
    rows, cols = np.nonzero(mask)
    assert len(rows) > 20, "the ball is not in the frame"
    return rows.mean(), cols.mean()


def test_frames_show_the_motion(fall):
    with video.Renderer(BALL, 160, 120, follow=0, distance=2.5, elevation=-10) as r:
        frames = r.frames(fall)
    assert frames.shape == (9, 120, 160, 3) and frames.dtype == np.uint8
    assert all(f.std() > 10 for f in frames)  # not blank: floor, sky and ball
    rows = [_red(f)[0] for f in frames]
    assert rows[-1] - rows[0] > 10  # the ball moved down the frame
    assert np.all(np.diff(rows) >= -0.5)  # and only down
    # pixels change around the ball, not elsewhere: the top-left corner (sky) is the same in every frame
    assert np.array_equal(frames[0, :10, :10], frames[-1, :10, :10])
    with pytest.raises(ValueError, match=r"qpos must be \[7\]"):
        video.Renderer(BALL, 32, 32).render(np.zeros(3))


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_written_video_has_the_frames(fall, tmp_path, suffix):
    with video.Renderer(BALL, 160, 120, follow=0, distance=2.5) as r:
        frames = r.frames(fall)
    path = video.write(tmp_path / f"fall{suffix}", frames, fps=25)
    back = iio.imread(path)
    assert back.shape[:3] == (9, 120, 160)
    assert np.abs(back[0].astype(int) - back[-1].astype(int)).max() > 100  # the frames differ
    # lossy mp4: each frame still close to what was drawn
    assert np.abs(back[..., :3].astype(int) - frames.astype(int)).mean() < 8
    assert os.listdir(tmp_path) == [f"fall{suffix}"]  # no temporary file left
    with pytest.raises(ValueError, match=r"\.mp4 or \.gif"):
        video.write(tmp_path / "fall.avi", frames, fps=25)


def test_scene_dressing_keeps_the_physics():
    plain = mujoco.MjModel.from_xml_string(BALL)
    dressed = video.scene_model(BALL)
    assert (dressed.nbody, dressed.ngeom, dressed.nq) == (plain.nbody, plain.ngeom, plain.nq)
    np.testing.assert_array_equal(dressed.body_mass, plain.body_mass)
    np.testing.assert_array_equal(dressed.geom_size, plain.geom_size)
    assert dressed.geom_matid[0] >= 0 and plain.geom_matid[0] < 0  # the floor got its checker
    assert dressed.ntex == 2  # the checker and the sky


def test_missing_gl_backend_names_the_packages(monkeypatch):
    def no_backend(*args, **kwargs):
        raise ImportError("libEGL.so.1: cannot open shared object file")

    monkeypatch.setattr(mujoco, "Renderer", no_backend)
    monkeypatch.setenv("MUJOCO_GL", "egl")
    with pytest.raises(video.RenderingUnavailable, match="libegl1 libgl1-mesa-dri") as e:
        video.Renderer(BALL)
    assert "libosmesa6" in str(e.value) and "libEGL.so.1" in str(e.value)
    assert "\n" not in str(e.value)  # one line
    monkeypatch.setenv("MUJOCO_GL", "glfw")
    with pytest.raises(video.RenderingUnavailable, match="needs a display"):
        video.Renderer(BALL)


def test_gymnasium_and_dm_env_render():
    pytest.importorskip("dm_env")
    from hurtle.envs import make
    from hurtle.envs.adapters import to_dm_env, to_gymnasium

    env = to_gymnasium(make("inverted_pendulum"), render_mode="rgb_array", width=96, height=64)
    assert env.metadata["render_fps"] == 25.0  # one frame per control step (2 x 20 ms)
    env.reset(seed=0)
    first = env.render()
    for _ in range(10):
        env.step(np.ones(1, np.float32))
    assert first.shape == (64, 96, 3) and first.dtype == np.uint8
    assert np.abs(env.render().astype(int) - first).max() > 50  # the cart moved
    env.close()
    assert to_gymnasium(make("inverted_pendulum")).render() is None  # no render mode: nothing, as Gymnasium's
    with pytest.raises(ValueError, match="cartpole|CartPole"):
        to_gymnasium(make("cartpole"), render_mode="rgb_array")
    with pytest.raises(ValueError, match="render_mode"):
        to_gymnasium(make("inverted_pendulum"), render_mode="human")

    dm = to_dm_env(make("inverted_pendulum"))
    dm.reset()
    assert dm.render(48, 64).shape == (48, 64, 3)
    dm.close()


def test_model_motion_engines_agree(tmp_path):
    path = tmp_path / "ball.xml"
    path.write_text(BALL)
    ours, dt = model_motion(path, 0.2, engine="hurtle")
    theirs, dt2 = model_motion(path, 0.2, engine="mujoco")
    assert dt == dt2 == pytest.approx(0.016) and ours.shape == theirs.shape == (1, 13, 7)  # the start and 12 frames
    np.testing.assert_allclose(ours, theirs, atol=1e-8)  # float64 in the test session
    assert theirs[0, -1, 2] < theirs[0, 0, 2] - 0.1  # it fell
