"""The `hurtle` command's demo runs and checks itself against MuJoCo C."""

import re

from hurtle import cli


def test_demo_runs_and_matches_mujoco(capsys):
    cli.main(["demo", "--batch", "4", "--steps", "20"])
    out = capsys.readouterr().out
    assert "physics steps/s" in out
    err = float(re.search(r"max \|qpos difference\| = ([0-9.e+-]+)", out).group(1))
    assert err < 1e-8  # float64 in the test session
