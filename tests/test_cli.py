"""The `hurtle` command's demo runs and checks itself against MuJoCo C."""

import os
import re

import pytest

from hurtle import cli


def test_demo_runs_and_matches_mujoco(capsys):
    cli.main(["demo", "--batch", "4", "--steps", "20"])
    out = capsys.readouterr().out
    assert "physics steps/s" in out
    err = float(re.search(r"max \|qpos difference\| = ([0-9.e+-]+)", out).group(1))
    assert err < 1e-8  # float64 in the test session


TINY = ["--num-envs", "16", "--unroll-length", "8", "--num-minibatches", "2", "--num-epochs", "1"]
TINY += ["--num-timesteps", "384", "--eval-every", "2", "--num-eval-envs", "4", "--episode-length", "50"]
TINY += ["--policy-hidden-sizes", "8", "--value-hidden-sizes", "8"]


def test_train_writes_run_dir(tmp_path):
    import csv
    import json

    run_dir = tmp_path / "run"
    cli.main(["train", "cartpole", "--run-dir", str(run_dir), *TINY])
    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"] == "cartpole" and config["num_envs"] == 16 and config["policy_hidden_sizes"] == [8]
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    assert header[:2] == ["step", "time_s"] and "eval/episode_return" in header
    assert len(rows) >= 2 and int(rows[-1][0]) >= 384
    assert rows[-1][header.index("eval/episode_return")] != ""  # evaluated after the last iteration
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run_dir))
    assert (run_dir / "learning_curve.png").stat().st_size > 0


def test_train_refuses_non_empty_run_dir(tmp_path, capsys):
    import pytest

    run_dir = tmp_path / "used"
    run_dir.mkdir()
    (run_dir / "metrics.csv").write_text("step,time_s\n")
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "cartpole", "--run-dir", str(run_dir), *TINY])
    assert str(run_dir) in str(e.value) and "--resume" in str(e.value)


def test_bad_values_are_one_line_errors(tmp_path):
    import json

    import pytest

    cases = [
        (["train"], "name an environment"),
        (["train", "nope"], "unknown environment 'nope'"),
        (["train", "cartpole", "--num-envs", "abc"], "--num-envs"),
        (["train", "cartpole", "--num-envs", "-3"], "--num-envs must be positive"),  # the flag, not Config's field
        (["train", "cartpole", "--num-envs", "10", "--unroll-length", "3"], "not divisible by num_minibatches"),
        (["train", "cartpole", "--bogus", "1"], "--bogus"),
        (["train", "cartpole", "--resume"], "--resume needs --run-dir"),
        (["eval", str(tmp_path)], "no config.json"),
        (["frobnicate"], "unknown command"),
    ]
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"env": "cartpole", "num_envs": 16}))
    cases.append((["train", "cartpole", "--run-dir", str(run), "--resume", "--num-envs", "32"], "num_envs=16"))
    cases.append((["train", "pendulum", "--run-dir", str(run), "--resume"], "run on 'cartpole'"))
    for argv, expected in cases:
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        message = str(e.value.code)
        assert expected in message and "\n" not in message and message.startswith("hurtle"), (argv, message)


def test_help_lists_commands_and_config_fields(capsys):
    import pytest

    cli.main([])
    out = capsys.readouterr().out
    assert all(name in out for name in ("train", "eval", "envs"))
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "cartpole", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "ENV" in out and "--num-timesteps" in out and "--resume" in out
    assert "(default: 64)" in out  # the cartpole preset's num_envs, not Config's


def test_envs_lists_the_registry_without_building_a_model(capsys, monkeypatch):
    """`hurtle envs` reads the registry: no task is built (it took 8-12 s when it built them all), and each row says
    what `hurtle train ENV` runs here; `hurtle envs ENV` builds that one and shows its spaces."""
    from hurtle.envs import names, registry

    def no_build(self, **kwargs):
        raise AssertionError("hurtle envs built a task")

    with monkeypatch.context() as m:
        m.setattr(registry._Entry, "build", no_build)
        cli.main(["envs"])
    out = capsys.readouterr().out
    assert all(name in out for name in names())
    assert "ppo, sebulba" in out.split("\nhopper ")[1].splitlines()[0]  # this CPU-only machine: auto's choice
    cli.main(["envs", "cartpole"])
    out = capsys.readouterr().out
    assert "Discrete(2)" in out and "Box(4)" in out and "500 steps" in out
    with pytest.raises(SystemExit, match="unknown environment 'nope'"):
        cli.main(["envs", "nope"])


def test_metrics_log_resume_drops_rows_after_the_checkpoint(tmp_path):
    from hurtle.io import MetricsLog, read_metrics

    with MetricsLog(str(tmp_path), tensorboard=False) as log:
        for step in (10, 20, 30):
            log.log(step, {"a": step / 10, "eval/episode_return": step}, time_s=step)
    with open(tmp_path / "metrics.csv", "a") as f:
        f.write("40,4.0,4.0,4")  # a row cut short by a kill: no newline
    header, rows = read_metrics(str(tmp_path))
    assert [r[0] for r in rows] == ["10", "20", "30"]
    with MetricsLog(str(tmp_path), tensorboard=False, resume_step=20) as log:
        log.log(30, {"a": 3.5, "eval/episode_return": 35}, time_s=31)
    header2, rows = read_metrics(str(tmp_path))
    assert header2 == header and [r[0] for r in rows] == ["10", "20", "30"]
    assert rows[-1][header.index("a")] == "3.5"
    assert (tmp_path / "learning_curve.png").exists()


def test_prepare_run_dir_default_and_empty(tmp_path, monkeypatch):
    from hurtle.agents.ppo.config import Config
    from hurtle.io import prepare_run_dir

    monkeypatch.chdir(tmp_path)
    path = prepare_run_dir(None, config=Config())
    assert path.startswith(os.path.join("runs", "cartpole-ppo-")) and os.path.exists(os.path.join(path, "config.json"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert prepare_run_dir(str(empty), config=Config()) == str(empty)
    # an id with slashes (EnvPool's, dm_control's) names one folder, not nested ones
    nested = prepare_run_dir(None, config=Config(env="MuJoCoPlayground/Go1JoystickFlatTerrain-v1"))
    assert os.path.dirname(nested) == "runs" and "MuJoCoPlayground-Go1JoystickFlatTerrain-v1-ppo-" in nested


def _train_cmd(run_dir, *extra):
    import sys

    small = ["--num-envs", "32", "--unroll-length", "16", "--num-minibatches", "4", "--num-epochs", "2"]
    small += ["--eval-every", "3", "--num-eval-envs", "8", "--episode-length", "100", "--checkpoint-every", "4"]
    small += ["--policy-hidden-sizes", "64", "64", "--value-hidden-sizes", "64", "64"]
    return [sys.executable, "-m", "hurtle.cli", "train", "cartpole", "--run-dir", str(run_dir), *small, *extra]


def test_killed_run_resumes_exactly(tmp_path):
    """SIGKILL a run after its first checkpoints; `--resume` must continue it as if it never stopped: metrics.csv
    equals an uninterrupted run's (every column but time_s), with no duplicated or missing step."""
    import signal
    import subprocess
    import time

    from hurtle.io import read_metrics

    batch = 32 * 16
    final = 40 * batch
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "jax-cache")}
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    ref, run = tmp_path / "ref", tmp_path / "run"
    subprocess.run(_train_cmd(ref, "--num-timesteps", str(final)), env=env, check=True, capture_output=True)

    # the same run asked to go on for much longer, killed once a checkpoint exists
    proc = subprocess.Popen(
        _train_cmd(run, "--num-timesteps", str(100 * final)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ckpt = run / "checkpoints"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        done = [d for d in (os.listdir(ckpt) if ckpt.exists() else []) if d.isdigit()]
        if done:
            break
        time.sleep(0.01)
    assert proc.poll() is None, "the long run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _, killed_rows = read_metrics(str(run))
    assert killed_rows and int(killed_rows[-1][0]) < final, "killed too late to test a resume"

    subprocess.run(_train_cmd(run, "--num-timesteps", str(final), "--resume"), env=env, check=True, capture_output=True)
    header, expected = read_metrics(str(ref))
    header2, got = read_metrics(str(run))
    assert header2 == header
    assert [int(r[0]) for r in got] == [batch * (i + 1) for i in range(40)]
    skip = header.index("time_s")
    for a, b in zip(expected, got, strict=True):
        assert [v for j, v in enumerate(a) if j != skip] == [v for j, v in enumerate(b) if j != skip], a[0]
    # time_s keeps growing across the resume
    times = [float(r[skip]) for r in got]
    assert times == sorted(times)

    cli.main(["eval", str(run), "--episodes", "4"])
    with pytest.raises(SystemExit, match=r"cartpole is not a physics task \(CartPole\): there is no MuJoCo C version"):
        cli.main(["eval", str(run), "--engine", "mujoco"])
