"""Both architectures across processes with `jax.distributed`: two local processes with one CPU device each
(CPU collectives between them), as the same code spans hosts. Anakin PPO's metrics equal a one-process
two-device run's; Sebulba trains with its learner split over both processes."""

import dataclasses
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from hurtle.agents import runner

SCRIPT = """
import dataclasses, json, sys
import jax
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")
from hurtle import podracer
assert podracer.maybe_initialize_distributed()
assert jax.process_count() == 2 and len(jax.local_devices()) == 1 and len(jax.devices()) == 2
from hurtle.agents import runner
arch, name, env, out, changes = sys.argv[1:6]
algo = runner.algorithm(name, arch)
config = dataclasses.replace(algo.preset(env), **json.loads(changes))
_, history = runner.train(algo, config)
json.dump({"process": jax.process_index(), "history": history}, open(out + str(jax.process_index()), "w"))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_processes(tmp_path, arch, name, env, changes) -> list[dict]:
    port = _free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split() if "device_count" not in f)
    out = str(tmp_path / "history")
    procs = []
    for i in range(2):
        env_vars = dict(base, XLA_FLAGS=flags, JAX_PLATFORMS="cpu", JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
                        JAX_NUM_PROCESSES="2", JAX_PROCESS_ID=str(i), HURTLE_COMPILE_CACHE="off")  # fmt: skip
        cmd = [sys.executable, "-c", SCRIPT, arch, name, env, out, json.dumps(changes)]
        procs.append(subprocess.Popen(cmd, env=env_vars, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    try:
        outputs = [p.communicate(timeout=600)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, text[-3000:]
    return [json.load(open(out + str(i))) for i in range(2)]


def _numbers(history):
    return [{k: v for k, v in m.items() if not k.startswith(("time/", "sebulba/"))} for m in history]


@pytest.mark.slow
def test_anakin_ppo_on_two_processes_equals_two_devices_in_one(tmp_path):
    algo = runner.algorithm("ppo")
    changes = dict(num_envs=8, unroll_length=8, num_minibatches=2, num_epochs=2, num_timesteps=3 * 64,
                   eval_every=3, num_eval_envs=4, checkpoint_every=0)  # fmt: skip
    results = _two_processes(tmp_path, "anakin", "ppo", "cartpole", changes)
    _, reference = runner.train(algo, dataclasses.replace(algo.preset("cartpole"), **changes))  # 2 fake devices
    for result in results:  # every process logs the same (replicated) metrics
        got, want = _numbers(result["history"]), _numbers(reference)
        assert [sorted(m) for m in got] == [sorted(m) for m in want]
        for g, w in zip(got, want):
            for key in w:
                np.testing.assert_allclose(g[key], w[key], rtol=1e-4, atol=1e-4, err_msg=key)


@pytest.mark.slow
def test_sebulba_learner_spans_two_processes(tmp_path):
    changes = dict(num_envs=4, unroll_length=8, num_timesteps=4 * 2 * 4 * 8, eval_every=4, num_eval_envs=2)
    results = _two_processes(tmp_path, "sebulba", "impala", "CartPole-v1", changes)
    for result in results:
        history = result["history"]
        # each update takes both processes' trajectories: 2 x 4 envs x 8 steps
        assert [m["step"] for m in history] == [64.0 * (i + 1) for i in range(4)]
        assert all(np.isfinite(m["loss/total"]) for m in history) and "eval/episode_return" in history[-1]
    # each process's actors play their own episodes (seeds and keys unique over processes): the training
    # returns each process logs from its own trajectories differ
    returns = [[m["train/episode_return"] for m in r["history"]] for r in results]
    assert returns[0] != returns[1]
    # the learner's update is one program over both processes: the replicated losses agree
    np.testing.assert_allclose([m["loss/total"] for m in results[0]["history"]],
                               [m["loss/total"] for m in results[1]["history"]], rtol=1e-6)  # fmt: skip
