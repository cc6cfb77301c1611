"""A new user's first hour: hurtle runs on a bare headless machine, the defaults pick the fastest path, and a
mistake ends in one line that says what to do (issue: "A new user's first hour")."""

import importlib.metadata
import os
import subprocess
import sys

import pytest

from hurtle import cli, extras
from tests.readme_lines import ROOT

NOGL = os.path.join(ROOT, "tests", "nogl")
BALL = (
    '<mujoco><worldbody><geom type="plane" size="2 2 0.1"/><body name="ball" pos="0 0 1"><freejoint/>'
    '<geom type="sphere" size="0.1"/></body></worldbody></mujoco>'
)
TINY = ["--num-envs", "16", "--unroll-length", "8", "--num-minibatches", "2", "--num-epochs", "1"]
TINY += ["--num-timesteps", "256", "--eval-every", "2", "--num-eval-envs", "4", "--episode-length", "50"]
TINY += ["--policy-hidden-sizes", "8", "--value-hidden-sizes", "8"]


def _without_opengl() -> dict[str, str]:
    """A subprocess environment where libEGL, libGL, libOSMesa and GLFW cannot load (tests/nogl/sitecustomize.py),
    with MUJOCO_GL and DISPLAY unset: a bare headless node without libegl1."""
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY", "XLA_FLAGS")}
    env.pop("PYOPENGL_PLATFORM", None)
    env.pop("HURTLE_MUJOCO_GL_UNAVAILABLE", None)
    env["PYTHONPATH"] = os.pathsep.join([NOGL, ROOT])
    return env


@pytest.mark.slow
def test_no_opengl_library_demo_train_view(tmp_path):
    """At the commit before the fix, the first `import hurtle.physics` here died in PyOpenGL with a 38-line
    traceback ending in `AttributeError: 'NoneType' object has no attribute 'eglQueryString'` (`import hurtle` set
    MUJOCO_GL=egl and MuJoCo's import loaded PyOpenGL's EGL platform): every command failed. Only rendering needs
    OpenGL."""
    script = (
        "import sys; from hurtle import cli\n"
        "cli.main(['demo', '--batch', '2', '--steps', '5'])\n"
        f"cli.main(['train', 'cartpole', '--run-dir', sys.argv[1], *{TINY!r}])\n"
        "cli.main(['view', '--model', sys.argv[2], '--duration', '0.1', '-o', sys.argv[3]])\n"
    )
    page = tmp_path / "ball.html"
    args = [sys.executable, "-c", script, str(tmp_path / "run"), BALL, str(page)]
    out = subprocess.run(args, env=_without_opengl(), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "max |qpos difference|" in out.stdout and "hurtle train: done" in out.stdout
    assert page.stat().st_size > 100_000 and "model under random controls" in out.stdout
    # video is the one thing that needs OpenGL: one line naming the packages, before any work
    video = [sys.executable, "-m", "hurtle.cli", "video", "--model", BALL, "-o", str(tmp_path / "ball.gif")]
    out = subprocess.run(video, env=_without_opengl(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("hurtle video: rendering needs OpenGL") and "libegl1 libgl1-mesa-dri" in out.stderr
    # a MUJOCO_GL the user set whose library is missing: hurtle still imports, video says which packages
    env = dict(_without_opengl(), MUJOCO_GL="osmesa")
    out = subprocess.run(video, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr
    assert "MUJOCO_GL=osmesa cannot start" in out.stderr and "libosmesa6" in out.stderr


def test_gymnasium_comes_with_hurtle():
    """Item 3: `hurtle eval RUN --engine mujoco` (Gymnasium's own MuJoCo environments) ended in a raw
    `ModuleNotFoundError: No module named 'gymnasium'` after 13 s of work on the Quick start's install; Gymnasium,
    the ecosystem's interface, is now a dependency of hurtle itself (with its MuJoCo environments' packages)."""
    required = importlib.metadata.requires("hurtle")
    core = [r for r in required if "extra ==" not in r]
    assert any(r.startswith("gymnasium[mujoco]") for r in core), core


def test_missing_extras_are_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    """Item 3: an extra a command needs is checked before it starts, and named."""
    monkeypatch.setitem(extras.MODULES, "envpool", ("hurtle_no_such_module",))
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "Ant-v5", "--arch", "sebulba", "--env-backend", "envpool", "--run-dir", str(tmp_path / "r")])
    assert "pip install 'hurtle[envpool]'" in str(e.value.code) and "\n" not in str(e.value.code)
    assert not (tmp_path / "r").exists()
    monkeypatch.setitem(extras.MODULES, "video", ("hurtle_no_such_module",))
    with pytest.raises(SystemExit) as e:
        cli.main(["video", "--model", BALL, "-o", str(tmp_path / "ball.mp4")])
    assert "pip install 'hurtle[video]'" in str(e.value.code) and ".gif" in str(e.value.code)
    assert "moving" not in capsys.readouterr().out  # nothing was rolled out first
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import training
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    monkeypatch.setitem(extras.MODULES, "peers", ("hurtle_no_such_module",))
    assert "pip install 'hurtle[peers]'" in training.peers_missing(["sb3-ppo"])
    assert training.peers_missing([]) is None


def test_auto_picks_the_fastest_measured_method(monkeypatch, tmp_path):
    """Items 4 and 5: `--arch sebulba` made IMPALA the default (hopper: return 95 where PPO reached 898), and a
    CPU-only machine ran `hurtle train hopper` on Anakin, several times slower there than the README's Sebulba PPO."""
    choose = cli._choose_algo
    assert choose(["hopper"])[:2] == ("ppo", "sebulba")  # this machine has only CPUs
    assert choose(["hopper", "--arch", "sebulba"])[:2] == ("ppo", "sebulba")
    assert choose(["swimmer"])[:2] == ("ars", "anakin") and choose(["reacher"])[:2] == ("sac", "anakin")
    assert choose(["cartpole"])[:2] == ("ppo", "anakin")  # no row: Anakin's PPO
    assert choose(["hopper", "--algo", "sac"])[:2] == ("sac", "anakin")
    assert choose(["hopper", "--arch", "anakin"])[:2] == ("ppo", "anakin")
    assert choose(["CartPole-v1"])[:2] == ("ppo", "sebulba")  # a Gymnasium id: only Sebulba steps it
    assert choose(["CartPole-v1", "--algo", "impala"])[:2] == ("impala", "sebulba")
    monkeypatch.setattr(cli, "_has_accelerator", lambda: True)
    assert choose(["hopper"])[:2] == ("ppo", "anakin") and choose(["swimmer"])[:2] == ("ars", "anakin")
    # a resumed run: the algorithm and architecture it was trained with, never auto's
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text('{"env": "hopper", "algo": "sac", "arch": "anakin"}')
    assert choose(["hopper", "--run-dir", str(run), "--resume"]) == (
        "sac",
        "anakin",
        f"the run's own ({run}/config.json)",
    )
    with pytest.raises(cli.UsageError, match="is a anakin sac run, not sebulba ppo"):
        choose(["hopper", "--run-dir", str(run), "--resume", "--arch", "sebulba", "--algo", "ppo"])


def test_auto_table_rows_have_presets():
    """Every row of the table runs its algorithm's tuned preset for the task."""
    from hurtle.agents import defaults, runner

    for env, (algo, arch) in defaults.CPU.items():
        assert env in runner.algorithm(algo, arch).presets, (env, algo, arch)


def test_resume_into_a_missing_run_is_an_error(tmp_path, capsys):
    """Item 6: `--resume` with a mistyped run directory trained from scratch and exited 0."""
    missing = tmp_path / "runs" / "hoper"
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "cartpole", "--run-dir", str(missing), "--resume", *TINY])
    message = str(e.value.code)
    assert f"--resume: {missing} does not exist" in message and "--resume-or-start" in message
    assert not missing.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="holds no run"):
        cli.main(["train", "cartpole", "--run-dir", str(empty), "--resume", *TINY])
    # a requeue script's start-or-resume: starts where there is no run, resumes where there is one
    run = tmp_path / "requeued"
    cli.main(["train", "cartpole", "--run-dir", str(run), "--resume-or-start", *TINY])
    assert "resuming" not in capsys.readouterr().out and (run / "config.json").exists()
    cli.main(["train", "cartpole", "--run-dir", str(run), "--resume-or-start", *TINY[:-6], "--num-timesteps", "512"])
    out = capsys.readouterr().out
    assert "resuming from its checkpoint at step 256" in out and "ppo on anakin" in out


def test_view_takes_an_mjcf_string_and_refusals_suggest_mujoco(tmp_path, capsys):
    """Item 7 and 8: `view --model` took only a file ("no such model file" with the whole XML echoed), and the
    refusal of an unsupported model did not say that `--engine mujoco` shows it."""
    page = tmp_path / "ball.html"
    cli.main(["view", "--model", BALL, "--duration", "0.05", "--engine", "mujoco", "-o", str(page)])
    assert page.stat().st_size > 100_000 and "model under random controls (mujoco)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        cli.main(["view", "--model", "robot.xml"])
    assert "robot.xml: no such model file" in str(e.value.code) and "asset_path" in str(e.value.code)
    unsupported = BALL.replace("<worldbody>", '<option integrator="discrete"/><worldbody>')
    with pytest.raises(SystemExit) as e:
        cli.main(["view", "--model", unsupported])
    assert "--engine mujoco" in str(e.value.code) and "\n" not in str(e.value.code)


def test_messages_name_the_flag_and_tensorboard_and_plot_title(tmp_path, monkeypatch, capsys):
    """Item 8: errors named `Config.num_envs` where the user typed `--num-envs`; the closing printout suggested
    `tensorboard --logdir` with TensorBoard not installed; the plot's title was the run directory's name alone."""
    from hurtle.io.rundir import run_title

    with pytest.raises(SystemExit, match=r"--num-envs must be positive, got -3"):
        cli.main(["train", "cartpole", "--num-envs", "-3"])
    monkeypatch.setitem(extras.MODULES, "tensorboard", ("hurtle_no_such_module",))
    run = tmp_path / "cp"
    cli.main(["train", "cartpole", "--run-dir", str(run), *TINY])
    out = capsys.readouterr().out
    assert f"pip install 'hurtle[tensorboard]', then tensorboard --logdir {run}" in out
    assert "ppo on anakin (the task in JAX, compiled with the learner): the default for a task" in out
    assert run_title(str(run)) == "cartpole: ppo (anakin), run cp"


def test_video_shows_progress(tmp_path, capsys):
    """Item 8: `hurtle video` printed nothing for 49 s."""
    cli.main(["video", "--model", BALL, "--engine", "mujoco", "--duration", "0.2", "-o", str(tmp_path / "b.gif")])
    out = capsys.readouterr().out
    assert out.index("hurtle video: moving the model") < out.index("rendering: ") < out.index("-> ")
