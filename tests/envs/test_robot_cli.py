"""MuJoCo Playground's robot tasks from the CLI: each has a preset on both architectures and a row in `--arch
auto`'s table, and `hurtle train` starts one and writes its run directory with the task's success measures logged
(tiny sizes: these check the plumbing, issue 73 trains them)."""

from __future__ import annotations

import csv
import json

import pytest

from hurtle import cli
from hurtle.agents import defaults
from hurtle.agents.impala import presets as sebulba_presets
from hurtle.agents.ppo import presets as anakin_presets
from tests.conftest import require_or_skip

TASKS = (
    "go1_joystick_flat",
    "go1_joystick_rough",
    "berkeley_humanoid_joystick_flat",
    "leap_cube_reorient",
    "panda_pick_cube",
)
TINY = ["--num-envs", "4", "--unroll-length", "4", "--num-minibatches", "2", "--num-epochs", "1"]
TINY += ["--num-timesteps", "16", "--eval-every", "1", "--num-eval-envs", "2", "--episode-length", "8"]
TINY += ["--policy-hidden-sizes", "8", "--value-hidden-sizes", "8"]


@pytest.mark.parametrize("name", TASKS)
def test_each_task_has_presets_and_an_auto_row(name):
    assert name in anakin_presets.PRESETS and name in sebulba_presets.PPO
    assert defaults.CPU[name] == ("ppo", "sebulba")


@pytest.mark.parametrize(
    "name, arch, extra, measure",
    [
        ("panda_pick_cube", "sebulba", [], "eval/success"),
        ("go1_joystick_flat", "anakin", ["--domain-randomization"], "eval/tracking/lin_vel_error"),
    ],
)
def test_train_writes_a_run_dir_with_the_tasks_measures(tmp_path, capsys, name, arch, extra, measure):
    """Either architecture from the CLI with the task's preset (sizes shrunk): the run directory, its config (the
    preset's discount kept), and the evaluation's row with the task's success measure (Sebulba's evaluated on
    MuJoCo C); Go1 with domain randomisation."""
    require_or_skip("robots")
    run_dir = tmp_path / "run"
    cli.main(["train", name, "--arch", arch, "--run-dir", str(run_dir), *TINY, *extra])
    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"] == name and config["discount"] == 0.97 and config["asymmetric_critic"]
    assert config["domain_randomization"] == bool(extra)
    with open(run_dir / "metrics.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert measure in rows[0] and rows[-1][rows[0].index(measure)] != ""
    if arch == "sebulba":  # `hurtle eval` of a MuJoCo C run prints the task's measures beside the returns
        capsys.readouterr()
        cli.main(["eval", str(run_dir), "--episodes", "2"])
        assert f"{measure.removeprefix('eval/')} " in capsys.readouterr().out
