"""The `hurtle` command's demo runs and checks itself against MuJoCo C."""

import os
import re

from hurtle import cli


def test_demo_runs_and_matches_mujoco(capsys):
    cli.main(["demo", "--batch", "4", "--steps", "20"])
    out = capsys.readouterr().out
    assert "physics steps/s" in out
    err = float(re.search(r"max \|qpos difference\| = ([0-9.e+-]+)", out).group(1))
    assert err < 1e-8  # float64 in the test session


TINY = ["--num-envs", "16", "--unroll-length", "8", "--num-minibatches", "2", "--num-epochs", "1"]
TINY += ["--total-steps", "384", "--eval-every", "2", "--num-eval-envs", "4", "--episode-length", "50"]
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
    # until checkpoints exist, --resume must not restart a run over its logged steps
    with pytest.raises(SystemExit) as e:
        cli.main(["train", "cartpole", "--run-dir", str(run_dir), "--resume", *TINY])
    assert str(run_dir) in str(e.value) and "checkpoints" in str(e.value)


def test_prepare_run_dir_default_and_empty(tmp_path, monkeypatch):
    from hurtle.agents.ppo.config import Config
    from hurtle.io import prepare_run_dir

    monkeypatch.chdir(tmp_path)
    path = prepare_run_dir(None, config=Config())
    assert path.startswith(os.path.join("runs", "cartpole-ppo-")) and os.path.exists(os.path.join(path, "config.json"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert prepare_run_dir(str(empty), config=Config()) == str(empty)
