"""Sebulba: IMPALA and PPO on host environments through actor threads. Learning (cartpole through a
Gymnasium vector environment, actor and learner on separate fake devices), synchronous reproducibility,
policy lag, faults in actors, environments and the learner, interruption, and no thread left behind."""

import dataclasses
import threading
import time

import gymnasium as gym
import jax
import numpy as np
import pytest

from hurtle.agents import runner
from hurtle.envs.base import Box
from hurtle.hostenvs import GymnasiumEnv, HostEnv
from hurtle.hostenvs.base import HostStep, run_episodes
from hurtle.podracer.sebulba import ActorError

IMPALA = runner.algorithm("impala")
PPO = runner.algorithm("ppo", "sebulba")


def _actor_threads():
    return [t for t in threading.enumerate() if t.name.startswith("sebulba-actor")]


def _config(algo=IMPALA, **changes):
    base = dict(num_timesteps=4 * 8 * 16, eval_every=0, checkpoint_every=0, num_envs=8, unroll_length=16)
    return dataclasses.replace(algo.preset("CartPole-v1"), **{**base, **changes})


class _Stop(Exception):
    pass


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_impala_learns_cartpole_on_a_gymnasium_vector_env(seed):
    """Eval return 475 (two evaluations in a row, 16 episodes each) within 500k env steps, the actor on
    device 0 and the learner on device 1."""
    config = dataclasses.replace(
        IMPALA.preset("CartPole-v1"),
        seed=seed,
        num_eval_envs=16,
        eval_every=5,
        actor_devices=(0,),
        learner_devices=(1,),
    )
    assert config.num_timesteps <= 500_000
    evals = []

    def progress(step, metrics):
        if "eval/episode_return" in metrics:
            evals.append((step, metrics["eval/episode_return"]))
            if len(evals) >= 2 and min(r for _, r in evals[-2:]) >= 475:
                raise _Stop

    with pytest.raises(_Stop):
        runner.train(IMPALA, config, progress)
    assert evals[-1][0] <= 500_000
    assert not _actor_threads()


@pytest.mark.parametrize("algo", [IMPALA, PPO], ids=["impala", "ppo"])
def test_synchronous_runs_are_reproducible_with_zero_lag(algo):
    config = _config(algo, actor_threads=2, seed=3, num_timesteps=4 * 2 * 8 * 16)

    def run():
        _, history = runner.train(algo, config)
        return [{k: v for k, v in m.items() if not k.startswith(("sebulba/", "time/"))} for m in history], history

    first, history = run()
    second, _ = run()
    assert first == second and len(first) == config.num_timesteps // (2 * 8 * 16)
    assert all(m["sebulba/policy_lag"] == 0 for m in history)
    assert {"sebulba/env_s", "sebulba/inference_s", "sebulba/learner_queue_wait_s", "sebulba/update_s"} <= set(
        history[0]
    )
    assert all(0 < m["sebulba/stepping_share"] < 1 for m in history)
    assert not _actor_threads()


def test_asynchronous_actors_log_their_policy_lag():
    config = _config(IMPALA, asynchronous=True, actor_threads=2, num_timesteps=12 * 2 * 8 * 16)
    _, history = runner.train(IMPALA, config)
    lags = [m["sebulba/policy_lag_max"] for m in history]
    assert all(lag >= 0 for lag in lags) and max(lags) >= 1  # actors ran ahead with older policies
    assert not _actor_threads()


def test_asynchronous_actors_on_the_learners_device():
    """One device for both (a one-device machine's default): the actors' policy is a copy, which the learner's
    donated update leaves intact."""
    config = _config(IMPALA, asynchronous=True, actor_threads=2, actor_devices=(0,), learner_devices=(0,),
                     num_timesteps=8 * 2 * 8 * 16)  # fmt: skip
    _, history = runner.train(IMPALA, config)
    assert len(history) == 8 and all(np.isfinite(m["loss/total"]) for m in history)
    assert not _actor_threads()


@pytest.mark.parametrize("mode", ["serial", "alternating"])
def test_modes_train(mode):
    config = _config(IMPALA, mode=mode)
    _, history = runner.train(IMPALA, config)
    threads = {"serial": 1, "alternating": 2}[mode]  # alternating: two threads per actor device
    assert len(history) == config.num_timesteps // (threads * 8 * 16) and all(
        np.isfinite(m["loss/total"]) for m in history
    )
    assert not _actor_threads()


class _Failing(gym.Env):
    """CartPole's spaces; raises on its `fail_at`-th step, or returns NaN observations every `nan_every`."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, fail_at=None, nan_every=None):
        self.fail_at, self.nan_every, self.t = fail_at, nan_every, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.fail_at is not None and self.t >= self.fail_at:
            raise RuntimeError(f"the environment broke at step {self.t}")
        bad = self.nan_every is not None and self.t % self.nan_every == 0
        return np.full(4, np.nan if bad else 0.1, np.float32), 1.0, False, self.t % 50 == 0, {}


@pytest.fixture
def failing_envs(monkeypatch):
    """Every Sebulba host env of the test is HurtleFailing-v0 (its kwargs set by the test)."""
    from hurtle.agents.impala import train as impala_train

    gym.register("HurtleFailing-v0", entry_point=lambda **kw: _Failing(**kw))
    real = impala_train.make_host_env
    monkeypatch.setattr(
        impala_train,
        "make_host_env",
        lambda config, n, nthread=0, **kw: real(dataclasses.replace(config, env="HurtleFailing-v0"), n, nthread, **kw),
    )
    yield
    gym.registry.pop("HurtleFailing-v0")


def test_an_environment_error_in_an_actor_stops_the_run_with_its_traceback(failing_envs):
    # fail_at is passed through gym.make's kwargs: build the env class with it
    gym.registry["HurtleFailing-v0"].kwargs = {"fail_at": 40}
    config = _config(IMPALA, actor_threads=2, num_timesteps=10**9)
    start = time.perf_counter()
    with pytest.raises(ActorError, match=r"(?s)actor thread \d failed:.*Traceback.*the environment broke at step 40"):
        runner.train(IMPALA, config)
    assert time.perf_counter() - start < 60  # compilation included; the stop itself takes POLL_S
    assert not _actor_threads()


def test_nonfinite_observations_are_counted_and_training_goes_on(failing_envs):
    gym.registry["HurtleFailing-v0"].kwargs = {"nan_every": 7}
    _, history = runner.train(IMPALA, _config(IMPALA))
    assert sum(m["train/nan_resets"] for m in history) > 0
    assert all(np.isfinite(m["loss/total"]) for m in history)


@pytest.mark.parametrize("error", [_Stop, KeyboardInterrupt])
def test_a_learner_error_or_ctrl_c_stops_every_actor(error):
    def progress(step, metrics):
        raise error

    with pytest.raises(error):
        runner.train(IMPALA, _config(IMPALA, actor_threads=2, num_timesteps=10**9), progress)
    assert not _actor_threads()


def test_mujoco_backend_trains_and_evaluates():
    config = dataclasses.replace(
        IMPALA.preset("inverted_pendulum"), num_envs=4, unroll_length=8, num_timesteps=2 * 4 * 8, eval_every=1,
        num_eval_envs=2, episode_length=50,
    )  # fmt: skip
    _, history = runner.train(IMPALA, config)
    assert len(history) == 2 and history[-1]["eval/episode_length"] > 0
    assert not _actor_threads()


def test_bad_configs_name_the_field():
    with pytest.raises(ValueError, match="Config.actor_devices: no device 5"):
        IMPALA.make_learner(_config(IMPALA, actor_devices=(5,)), None)
    with pytest.raises(ValueError, match="Config.num_minibatches = 7 must divide"):
        PPO.make_learner(_config(PPO, num_minibatches=7), None)
    with pytest.raises(ValueError, match="CartPole-v9: not a Gymnasium environment id"):
        runner.train(IMPALA, _config(IMPALA, env="CartPole-v9"))


def test_cli_trains_resumes_and_evaluates_a_sebulba_run(tmp_path, capsys):
    import json

    from hurtle.cli import main

    run = str(tmp_path / "run")
    common = ["CartPole-v1", "--algo", "impala", "--num-envs", "4", "--unroll-length", "8", "--eval-every", "2"]
    main(["train", *common, "--num-timesteps", "64", "--run-dir", run, "--num-eval-envs", "2"])
    saved = json.load(open(f"{run}/config.json"))
    assert (saved["algo"], saved["arch"], saved["env_backend"]) == ("impala", "sebulba", "gymnasium")
    main(["train", *common, "--num-timesteps", "128", "--run-dir", run, "--resume"])
    out = capsys.readouterr().out
    assert "resuming from its checkpoint at step 64" in out
    main(["eval", run, "--episodes", "2"])
    assert "hurtle eval: CartPole-v1 (impala), checkpoint at 128 env steps, 2 episodes" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"CartPole-v1 was trained on its gymnasium environment, which `hurtle eval`"):
        main(["eval", run, "--engine", "mujoco"])
    with pytest.raises(SystemExit, match=r"is a sebulba impala run, not anakin ppo"):
        main(["train", "CartPole-v1", "--run-dir", run, "--resume", "--arch", "anakin", "--algo", "ppo"])
    with pytest.raises(SystemExit, match=r"ENV: cartpole is not a physics task"):
        main(["train", "cartpole", "--arch", "sebulba"])
    with pytest.raises(SystemExit, match=r"unknown sebulba algorithm 'sac'; known: impala, ppo, fasttd3"):
        main(["train", "hopper", "--arch", "sebulba", "--algo", "sac"])


def test_sigint_stops_a_run_with_async_workers_and_leaves_no_process(tmp_path):
    """Ctrl-C on `hurtle train --arch sebulba` with Gymnasium's subprocess workers: the command ends with its
    resume hint, and every worker process is gone."""
    import os
    import signal
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "hurtle.cli", "train", "CartPole-v1", "--arch", "sebulba", "--vectorization",
           "async", "--num-envs", "3", "--unroll-length", "8", "--num-timesteps", "1000000000", "--eval-every", "0",
           "--run-dir", str(tmp_path / "run")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    lines, errors = [], []
    for stream, sink in ((proc.stdout, lines), (proc.stderr, errors)):
        threading.Thread(target=lambda stream=stream, sink=sink: sink.extend(stream), daemon=True).start()
    try:
        # interrupt once training runs (the first iteration's progress line: compiled, workers up)
        deadline = time.time() + 300
        while time.time() < deadline and not any(line.startswith("step ") for line in lines) and proc.poll() is None:
            time.sleep(0.2)
        assert any(line.startswith("step ") for line in lines), "training never started"
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
        children = [int(p) for p in out.split()]
        assert len(children) >= 3, "the workers are not running"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        time.sleep(0.5)  # the readers reach the end of the pipes
        err = "".join(errors)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "interrupted; continue with: hurtle train CartPole-v1 --arch sebulba" in err
    time.sleep(0.5)
    alive = [p for p in children if os.path.exists(f"/proc/{p}") and "zombie" not in open(f"/proc/{p}/status").read()]
    assert not alive, f"worker processes left behind: {alive}"


class _PrivilegedHost(HostEnv):
    """CartPole's host environments with a privileged observation: the observation, its squares and a 7."""

    def __init__(self, num_envs):
        self.inner = GymnasiumEnv("CartPole-v1", num_envs)
        self.num_envs, self.name, self.episode_limit = num_envs, "privileged CartPole", self.inner.episode_limit
        self.observation_space, self.action_space = self.inner.observation_space, self.inner.action_space
        self.privileged_observation_space = Box(-np.inf, np.inf, (9,), np.float32)

    @staticmethod
    def _privileged(obs):
        return np.concatenate([obs, obs**2, np.full((len(obs), 1), 7.0, obs.dtype)], axis=1)

    def reset(self, seed):
        obs = self.inner.reset(seed)
        self.reset_privileged_obs = self._privileged(obs)
        return obs

    def step(self, action):
        step = self.inner.step(action)
        return dataclasses.replace(
            step, privileged_obs=self._privileged(step.obs), final_privileged_obs=self._privileged(step.final_obs)
        )

    def close(self):
        self.inner.close()


@pytest.mark.parametrize("algo", [IMPALA, PPO], ids=["impala", "ppo"])
def test_asymmetric_critic_learns_from_the_privileged_observations(algo, monkeypatch):
    """Trajectories carry the host environments' privileged observations beside the observations (the one each
    step reached, before any reset, as `next_privileged_obs`); the value network reads them through its own
    normaliser, which absorbs every one, while the policy's reads the observations."""
    from hurtle.agents.impala import train as impala_train
    from hurtle.podracer.sebulba import Sebulba

    monkeypatch.setattr(impala_train, "make_host_env", lambda config, n, nthread=0, **kw: _PrivilegedHost(n))
    config = _config(algo, mode="serial", num_timesteps=3 * 8 * 16)
    sebulba = Sebulba(lambda i: _PrivilegedHost(8), impala_train.make_sampler(config, impala_train.make_networks(config)),
                      jax.devices()[:1], unroll_length=40, mode="serial")  # fmt: skip
    networks = impala_train.make_networks(config)
    sebulba.publish(impala_train.make_actor(config).like_policy, 0)
    sebulba.start()
    try:
        tr, _ = sebulba.collect()
    finally:
        sebulba.close()
    np.testing.assert_array_equal(tr.next_privileged_obs[..., :4], tr.next_obs)
    np.testing.assert_array_equal(tr.privileged_obs[..., :4], tr.obs)
    ended = tr.terminated | tr.truncated
    assert ended.any()  # CartPole's random policy falls within 40 steps: resets inside the trajectory
    going_on = ~ended[:-1]
    np.testing.assert_array_equal(tr.privileged_obs[1:][going_on], tr.next_privileged_obs[:-1][going_on])
    assert not np.array_equal(tr.privileged_obs[1:][ended[:-1]], tr.next_privileged_obs[:-1][ended[:-1]])

    assert networks.critic_space.shape == (9,)
    assert impala_train.make_networks(dataclasses.replace(config, asymmetric_critic=False)).critic_space is None
    state, history = runner.train(algo, config)
    assert float(state.critic_normalizer.count) == float(state.normalizer.count) == config.num_timesteps
    np.testing.assert_allclose(np.asarray(state.critic_normalizer.mean)[8], 7.0, rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(state.critic_normalizer.mean)[:4], state.normalizer.mean, rtol=1e-5, atol=1e-7
    )
    assert all(np.isfinite(m["loss/total"]) for m in history)
    assert not _actor_threads()


class _Scripted(HostEnv):
    """Two environments whose episodes end after 3 and 5 steps (then restart), with a reward term `reward/a` of 1
    and a measure `score` equal to the step's index in its episode."""

    num_envs, name, episode_limit = 2, "scripted", None
    observation_space = Box(-np.inf, np.inf, (1,), np.float64)
    action_space = Box(-1.0, 1.0, (1,), np.float64)
    ends = np.array([3, 5])

    def reset(self, seed):
        self.t = np.zeros(2, int)
        return np.zeros((2, 1))

    def step(self, action):
        self.t += 1
        ended = self.t >= self.ends
        metrics = {"reward/a": np.ones(2), "score": self.t.astype(float), "episode/return": np.zeros(2)}
        self.t = np.where(ended, 0, self.t)
        zeros = np.zeros((2, 1))
        return HostStep(zeros, np.full(2, 2.0), ended, np.zeros(2, bool), zeros, {**metrics, "nan_resets": np.zeros(2)})

    def close(self):
        pass


def test_host_evaluation_reports_the_tasks_measures_as_the_device_evaluation_does():
    """`run_episodes` (Sebulba's and `hurtle eval --engine mujoco`'s evaluation): each episode's reward terms
    summed over its own steps and every other measure as on its last step, unaffected by the steps of episodes
    that start after it ended; the wrapper's own counts left out."""
    out = run_episodes(_Scripted(), lambda obs: np.zeros((2, 1)), seed=0, max_steps=10)
    np.testing.assert_array_equal(out["episode_length"], [3, 5])
    np.testing.assert_array_equal(out["episode_return"], [6.0, 10.0])
    np.testing.assert_array_equal(out["metrics"]["reward/a"], [3.0, 5.0])
    np.testing.assert_array_equal(out["metrics"]["score"], [3.0, 5.0])
    assert set(out["metrics"]) == {"reward/a", "score"}


@pytest.mark.slow
def test_fasttd3_learns_pendulum_on_host_environments():
    """FastTD3 on Sebulba, Gymnasium's Pendulum-v1 (Gymnasium 1.4.0 measured) through its vector environment, float32 as training runs: the
    preset's evaluations after 6,400 and 12,800 env steps average -250 or better (measured, seed 0: -165 and -167; a
    random policy scores -1,200 to -1,600)."""
    algo = runner.algorithm("fasttd3", "sebulba")
    config = dataclasses.replace(algo.preset("Pendulum-v1"), num_timesteps=12_800, checkpoint_every=0)
    with jax.enable_x64(False):
        _, history = runner.train(algo, config)
    evals = [m["eval/episode_return"] for m in history if "eval/episode_return" in m]
    assert len(evals) == 2 and np.mean(evals) >= -250, evals
    assert not _actor_threads()


def test_fasttd3_resumes_on_host_environments_with_its_replay_buffer(tmp_path, capsys):
    """The CLI trains FastTD3 on Sebulba, its checkpoint holds the replay buffer (a resumed run learns from the
    transitions gathered before), and `hurtle eval` replays the policy."""
    from hurtle.cli import main
    from hurtle.io import read_metrics

    run = str(tmp_path / "run")
    common = ["Pendulum-v1", "--arch", "sebulba", "--algo", "fasttd3", "--num-envs", "4", "--unroll-length", "8",
              "--min-replay-size", "64", "--batch-size", "32", "--policy-hidden-sizes", "16", "--q-hidden-sizes",
              "16", "--eval-every", "2", "--num-eval-envs", "2", "--run-dir", run]  # fmt: skip
    main(["train", *common, "--num-timesteps", "96"])
    main(["train", *common, "--num-timesteps", "192", "--resume"])
    assert "resuming from its checkpoint at step 96" in capsys.readouterr().out
    header, rows = read_metrics(run)
    sizes = [float(r[header.index("replay/size")]) for r in rows]
    assert sizes == [32.0 * (i + 1) for i in range(6)]  # the buffer restored: it goes on filling after the resume
    losses = [float(r[header.index("loss/critic")]) for r in rows]  # logged from the first row: NaN until learning
    assert np.isnan(losses[0]) and np.isfinite(losses[-1])
    main(["eval", run, "--episodes", "2"])
    assert "hurtle eval: Pendulum-v1 (fasttd3), checkpoint at 192 env steps, 2 episodes" in capsys.readouterr().out
    assert not _actor_threads()
