"""`hurtle view` and `hurtle video` on a trained run and on a model file; the rollout.html a training run writes;
the episodes `runner.rollout` records."""

import base64
import json
import re

import imageio.v3 as iio
import jax
import numpy as np
import pytest

from hurtle import cli
from hurtle.agents import ppo, runner

TINY = ["--num-envs", "16", "--unroll-length", "8", "--num-minibatches", "2", "--num-epochs", "1"]
TINY += ["--num-timesteps", "256", "--eval-every", "0", "--num-eval-envs", "4", "--episode-length", "40"]
TINY += ["--policy-hidden-sizes", "8", "--value-hidden-sizes", "8"]

BALL = """<mujoco><worldbody><geom type="plane" size="2 2 0.1"/>
<body name="ball" pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" rgba="1 0 0 1"/></body>
</worldbody></mujoco>"""


def _rollout_data(path):
    page = open(path).read()
    data = re.search(r'<script id="hurtle-rollout" type="application/json">(.*?)</script>', page, re.S).group(1)
    return json.loads(data.replace("<\\/", "</"))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("view") / "run"
    cli.main(["train", "inverted_pendulum", "--arch", "anakin", "--run-dir", str(run_dir), *TINY])
    return run_dir


def test_training_writes_rollout_html(run, capsys):
    r = _rollout_data(run / "rollout.html")
    assert (r["nworld"], r["nframe"], r["nbody"]) == (1, 41, 3)  # the reset state and 40 steps; world, cart, pole
    assert r["dt"] == pytest.approx(0.04)  # the control period: 2 physics steps of 20 ms


def test_view_and_video_of_a_run(run, tmp_path, capsys):
    page = tmp_path / "three.html"
    cli.main(["view", str(run), "--episodes", "3", "--seed", "1", "-o", str(page)])
    out = capsys.readouterr().out
    assert "inverted_pendulum (ppo), checkpoint at 256 env steps" in out and str(page) in out
    r = _rollout_data(page)
    assert (r["nworld"], r["nframe"]) == (3, 41)
    poses = np.frombuffer(base64.b64decode(r["poses"]), np.float32).reshape(3, 41, 3, 7)
    assert np.ptp(poses[:, :, 2, 3:], axis=1).max() > 0.01  # the pole turns

    gif = tmp_path / "run.gif"
    cli.main(["video", str(run), "--episodes", "2", "-o", str(gif), "--width", "64", "--height", "48"])
    out = capsys.readouterr().out
    count = int(re.search(r"; (\d+) frames of 64x48", out).group(1))
    frames = iio.imread(gif)
    assert frames.shape[:3] == (count, 48, 64)
    assert np.abs(frames[0].astype(int) - frames[count // 2].astype(int)).max() > 50  # the scene changes

    for argv, message in [
        (["view"], "give a run directory or --model"),
        (["view", str(run), "--model", "x.xml"], "one of them"),
        (["view", str(run), "--episodes", "0"], "--episodes must be positive"),
        (["view", str(run), "--step", "7"], "no checkpoint at step 7"),
        (["video", str(run), "-o", "x.avi"], r"\.mp4 or \.gif"),
        (["view", "--model", str(tmp_path / "none.xml")], "no such model file"),
    ]:
        with pytest.raises(SystemExit, match=message):
            cli.main(argv)


def test_rollout_holds_ended_episodes(run):
    from hurtle.io import Checkpointer

    saved = json.loads((run / "config.json").read_text())
    config = ppo.Config(**{k: v for k, v in saved.items() if k not in ("algo", "arch")})
    with Checkpointer(str(run / "checkpoints")) as ckpt:
        actor, policy, _ = runner.load_policy("ppo", config, ckpt)
    out = runner.rollout(config, actor.act, policy, jax.random.key(0), num_episodes=4)
    assert out.qpos.shape == (4, 41, 2) and out.dt == pytest.approx(0.04)
    ended = np.flatnonzero(out.episode_length < 40)
    assert len(ended) > 0, "an untrained pole falls within 40 steps"
    for e in ended:
        n = int(out.episode_length[e])
        assert np.all(out.qpos[e, n:] == out.qpos[e, n])  # held after the end
        assert np.any(out.qpos[e, n] != out.qpos[e, n - 1])
    with pytest.raises(ValueError, match="no MJCF model"):
        runner.physics_task(ppo.Config(env="cartpole"))


def test_view_and_video_of_a_model(tmp_path, capsys):
    model = tmp_path / "ball.xml"
    model.write_text(BALL)
    page = tmp_path / "ball.html"
    cli.main(["view", "--model", str(model), "--duration", "0.5", "--engine", "mujoco", "-o", str(page)])
    r = _rollout_data(page)
    assert r["nframe"] == 32  # the start and 31 frames of 8 steps (16 ms)
    poses = np.frombuffer(base64.b64decode(r["poses"]), np.float32).reshape(1, 32, 2, 7)
    assert poses[0, -1, 1, 2] < poses[0, 0, 1, 2] - 0.5  # the ball fell
    gif = tmp_path / "ball.gif"
    cli.main(["video", "--model", str(model), "--duration", "0.5", "-o", str(gif), "--width", "32", "--height", "32"])
    assert iio.imread(gif).shape[:3] == (16, 32, 32)  # 0.5 s at 30 fps: every 2nd frame


def test_gymnasium_mujoco_runs_are_shown_in_gymnasium(tmp_path):
    """A Sebulba run on a Gymnasium MuJoCo id is replayed in Gymnasium's environment, its own model shown;
    a non-MuJoCo id has nothing to show."""
    import jax.numpy as jnp

    from hurtle.agents import impala
    from hurtle.hostenvs.gymnasium import mujoco_rollout
    from hurtle.io import html

    config = impala.Config(env="InvertedPendulum-v5", env_backend="gymnasium")
    model = runner.physics_task(config)
    assert model.nq == 2
    with pytest.raises(ValueError, match="CartPole-v1 is not a MuJoCo environment"):
        runner.physics_task(impala.Config(env="CartPole-v1", env_backend="gymnasium"))
    push = lambda policy, obs: jnp.full((obs.shape[0], 1), policy)  # noqa: E731
    model, qpos, dt, returns, lengths = mujoco_rollout("InvertedPendulum-v5", push, 1.0, 2, seed=3)
    assert qpos.shape == (2, int(lengths.max()) + 1, 2) and dt == pytest.approx(0.04)
    # pushed one way the pole falls at once; v5 rewards 1 per step but not the falling one
    assert np.all(lengths < 100) and np.all(returns == lengths - 1)
    assert qpos[0, -1, 0] > qpos[0, 0, 0]  # the cart moved the way it was pushed
    r = _rollout_data(html.write(tmp_path / "pendulum.html", model, qpos, dt))
    assert (r["nworld"], r["nframe"]) == (2, qpos.shape[1])
