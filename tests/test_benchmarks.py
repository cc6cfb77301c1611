"""The benchmark tools that are not timed runs: their parsing and reports work on a small model."""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import compile_profile  # noqa: E402

# a sphere dropped on a plane: every stage of the pipeline, contacts and the solver, in a short compile
BALL = """
<mujoco>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 0.2"><joint type="slide" axis="0 0 1"/><geom type="sphere" size="0.1"/></body>
  </worldbody>
</mujoco>
"""


def test_compile_profile_attributes_every_kernel(tmp_path, capsys):
    model = tmp_path / "ball.xml"
    model.write_text(BALL)
    compile_profile.main(["--models", str(model), "--batch", "4", "--nsteps", "2", "--top", "5"])
    out = capsys.readouterr().out
    split = re.search(r"wall: trace ([\d.]+) s, lower ([\d.]+) s, XLA compile ([\d.]+) s", out)
    assert split and float(split.group(3)) > 0
    kernels, mlir, llvm = re.search(r"code generation: (\d+) kernels, MLIR ([\d.]+) s \+ LLVM ([\d.]+) s", out).groups()
    assert int(kernels) > 10 and float(llvm) > 0
    # the stage table accounts for every kernel, and names the pipeline's stages
    stage_rows = re.findall(r"^\| (\w+) \| (\d+) \| [\d.]+ \| \d+% \|$", out.split("| kernel shape |")[0], re.M)
    assert sum(int(n) for _, n in stage_rows) == int(kernels)
    assert {"kinematics", "collision", "solve"} <= {s for s, _ in stage_rows}
    # the costliest kernels come with the hurtle source lines that made them
    top = out.split("| CPU ms |")[1].strip().splitlines()[2:]
    assert len(top) == 5 and any(re.search(r"\w+\.py:\d+", row) for row in top)


def test_rounds_report_medians_and_per_round_ratios():
    import physics

    hurtle = [
        {"compile_s": 10.0, "steps_per_s": 30.0},
        {"compile_s": 14.0, "steps_per_s": 20.0},
        {"compile_s": 9.0, "steps_per_s": 33.0},
    ]
    mjx = [
        {"compile_s": 20.0, "steps_per_s": 10.0},
        {"compile_s": 40.0, "steps_per_s": 5.0},
        {"compile_s": 30.0, "steps_per_s": 11.0},
    ]
    assert physics.combine_rounds(hurtle) == {"compile_s": 10.0, "steps_per_s": 30.0}
    # ratios taken round by round (0.5, 0.35, 0.3), then their median: not the ratio of the medians (10/30)
    assert physics.round_ratio(hurtle, mjx, "compile_s") == "0.35x"
    assert physics.round_ratio(hurtle, mjx, "steps_per_s") == "3.00x"
    # a failed round fails the engine's cell and every ratio that needs it
    failed = mjx[:2] + [{"error": "timed out after 900 s"}]
    assert physics.combine_rounds(failed) == {"error": "timed out after 900 s"}
    assert physics.round_ratio(hurtle, failed, "compile_s") == "—"
    assert physics.round_ratio(hurtle, [{}] * 3, "compile_s") == "—"


def test_hurtle_worker_with_a_contact_cap(tmp_path):
    import physics

    model = tmp_path / "balls.xml"
    # three spheres resting on the plane (BALL's own lifted clear): three touching condim-3 candidates, a cap of
    # two drops one per step
    bodies = "".join(
        f'<body pos="{x} 0 0.09"><joint type="slide" axis="0 0 1"/><geom type="sphere" size="0.1"/></body>'
        for x in (-0.5, 0.0, 0.5)
    )
    model.write_text(
        BALL.replace("<worldbody>", "<worldbody>" + bodies).replace('<body pos="0 0 0.2">', '<body pos="0 0 5">')
    )
    res = physics.bench_hurtle(str(model), 2, 3, 1, "full", nconmax=2)
    assert res["steps_per_s"] > 0 and res["ncon_dropped"] == 1.0 and res["solver_iters"] >= 1.0


def test_brax_engine_plumbing(tmp_path):
    """Brax runs in a virtualenv of its own: a missing one is named with the script that makes it; its
    version note survives the rounds' medians; `--integrator` and `--iterations` reach the model every
    engine loads."""
    import argparse

    import mujoco
    import physics

    args = argparse.Namespace(brax_python=str(tmp_path / "none" / "python"))
    err = physics._run_isolated("brax", "gym:half_cheetah", args)["error"]
    assert "brax_venv.sh" in err and str(tmp_path) in err
    runs = [{"steps_per_s": s, "versions": "brax 0.14.2 (generalized), jax 0.9.2"} for s in (1.0, 3.0)]
    assert physics.combine_rounds(runs) == {"steps_per_s": 2.0, "versions": runs[0]["versions"]}
    model = tmp_path / "ball.xml"
    model.write_text(BALL.replace("<worldbody>", '<option integrator="RK4"/><worldbody>'))
    assert physics._mj_model(str(model), "full").opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
    opt = physics._mj_model(str(model), "full", {"integrator": "euler", "iterations": 4}).opt
    assert opt.integrator == mujoco.mjtIntegrator.mjINT_EULER and opt.iterations == 4


def test_brax_training_peer_plumbing(tmp_path):
    """The Brax training peer runs in Brax's virtualenv: a missing interpreter is named with the script that
    makes it; a worker that fails names its error; every task it runs has Brax's published settings."""
    import training

    err = training.run_brax("ant", 1327.0, 0, 10.0, python=str(tmp_path / "none" / "python"))["error"]
    assert "brax_venv.sh" in err and str(tmp_path) in err
    failing = tmp_path / "python"
    failing.write_text("#!/bin/sh\necho 'ModuleNotFoundError: brax' >&2\nexit 1\n")
    failing.chmod(0o755)
    assert "ModuleNotFoundError: brax" in training.run_brax("ant", 1327.0, 0, 10.0, python=str(failing))["error"]
    import brax_train  # Brax itself is imported only in its main

    assert set(brax_train.BRAX_PPO) <= set(training.SUITE) and {"ant", "halfcheetah", "humanoid"} <= set(
        brax_train.BRAX_PPO
    )


def test_peer_evaluation_needs_an_episode():
    """A peer evaluated over no episodes would average nothing and never cross: refused by name, before any
    peer library is imported."""
    import pytest
    import training

    with pytest.raises(ValueError, match="episodes=0"):
        training.run_peer("sb3-sac", "pusher", -40.38, 0, 10.0, 5000, episodes=0)
