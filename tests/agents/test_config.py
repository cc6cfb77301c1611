"""Every algorithm's Config: defaults and presets validate, every field is documented, each mistake is named."""

import dataclasses

import pytest

from hurtle.agents import runner
from hurtle.agents.ppo import Config

ALGOS = [(arch, name) for arch in runner.ARCHITECTURES for name in runner.ALGORITHMS[arch]]
IDS = [f"{arch}-{name}" for arch, name in ALGOS]


@pytest.mark.parametrize("arch, name", ALGOS, ids=IDS)
def test_defaults_and_presets_validate(arch, name):
    algo = runner.algorithm(name, arch)
    assert algo.arch == arch and algo.name == name
    assert algo.config().validate() == algo.config()
    assert algo.presets, name
    for env in algo.presets:
        assert algo.preset(env).validate().env == env


def test_ppo_batch_size():
    assert Config().batch_size == Config().num_envs * Config().unroll_length


@pytest.mark.parametrize("arch, name", ALGOS, ids=IDS)
def test_every_field_has_a_docstring(arch, name):
    import inspect

    cls = runner.algorithm(name, arch).config
    lines = [line for klass in cls.__mro__[:-1] for line in inspect.getsource(klass).splitlines()]
    for field in dataclasses.fields(cls):
        line = next(i for i, s in enumerate(lines) if s.strip().startswith(f"{field.name}:"))
        assert lines[line + 1].strip().startswith('"""'), (name, field.name)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Config().num_envs = 3


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"num_envs": 0}, r"Config.num_envs must be positive, got 0"),
        ({"unroll_length": -3}, r"Config.unroll_length must be positive"),
        ({"num_minibatches": 0}, r"Config.num_minibatches must be positive"),
        ({"num_epochs": 0}, r"Config.num_epochs must be positive"),
        ({"num_timesteps": -1}, r"Config.num_timesteps must be positive"),
        ({"episode_length": 0}, r"Config.episode_length must be positive"),
        ({"eval_every": -1}, r"Config.eval_every must be >= 0"),
        ({"learning_rate": 0.0}, r"Config.learning_rate must be positive"),
        ({"discount": 1.5}, r"Config.discount must lie in \[0, 1\]"),
        ({"gae_lambda": -0.1}, r"Config.gae_lambda must lie in \[0, 1\]"),
        ({"entropy_cost": -1.0}, r"Config.entropy_cost must be >= 0"),
        ({"policy_hidden_sizes": (32, 0)}, r"Config.policy_hidden_sizes must hold positive widths"),
        (
            {"num_envs": 10, "unroll_length": 3, "num_minibatches": 4},
            r"num_envs \* unroll_length = 10 \* 3 = 30 is not divisible by num_minibatches = 4",
        ),
        ({"env": "no_such_env"}, r"Config.env: unknown environment 'no_such_env'; registered: .*cartpole"),
        ({"nconmax": 0}, r"Config.nconmax must be a positive number of contacts or None, got 0"),
        ({"nconmax": True}, r"Config.nconmax must be a positive number of contacts or None, got True"),
        ({"env_options": ("start_in_hand",)}, r"Config.env_options: 'start_in_hand' is not NAME=VALUE"),
        ({"target_return": float("nan")}, r"Config.target_return must be a finite return .* got nan"),
        ({"target_return": 500.0, "eval_every": 0}, r"Config.target_return .*evaluations on.* eval_every=0"),
    ],
)
def test_validate_names_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        Config(**changes).validate()


@pytest.mark.parametrize(
    "name, changes, message",
    [
        (
            "sac",
            {"env": "pendulum", "batch_size": 512, "min_replay_size": 256},
            r"Config.min_replay_size = 256 is smaller than one batch",
        ),
        (
            "sac",
            {"env": "pendulum", "batch_size": 512, "max_replay_size": 256, "min_replay_size": 0},
            r"Config.max_replay_size = 256 is smaller than one batch",
        ),
        ("sac", {"env": "pendulum", "tau": 2.0}, r"Config.tau must lie in \[0, 1\]"),
        (
            "sac",
            {"env": "pendulum", "min_replay_size": 4096, "max_replay_size": 2048, "batch_size": 256},
            r"min_replay_size = 4096 exceeds",
        ),
        ("es", {"population_size": 7}, r"Config.population_size must be even"),
        ("es", {"noise_std": 0.0}, r"Config.noise_std must be positive"),
        ("ars", {"top_directions": 9, "num_directions": 8}, r"Config.top_directions = 9 exceeds num_directions = 8"),
        ("ars", {"step_size": -1.0}, r"Config.step_size must be positive"),
        ("impala", {"clip_rho": 0.0}, r"Config.clip_rho must be positive"),
        ("impala", {"vtrace_lambda": 1.5}, r"Config.vtrace_lambda must lie in \[0, 1\]"),
        ("impala", {"env": "no_such_env"}, r"Config.env: unknown environment 'no_such_env'"),
        ("impala", {"env_backend": "gymnasium", "nconmax": 8}, r"Config.nconmax applies to hurtle's physics"),
        ("impala", {"env_options": ("a=1",)}, r"Config.env_options: Sebulba's host environments take no task"),
    ],
)
def test_algorithm_validate_names_the_field(name, changes, message):
    with pytest.raises(ValueError, match=message):
        runner.algorithm(name).config(**changes).validate()


def test_unknown_algorithm_and_unsplittable_population_are_named():
    import types

    with pytest.raises(
        ValueError, match=r"unknown anakin algorithm 'nope'; known: ppo, sac, fasttd3, es, ars, apg, shac"
    ):
        runner.algorithm("nope")
    with pytest.raises(ValueError, match=r"unknown sebulba algorithm 'sac'; known: impala, ppo"):
        runner.algorithm("sac", "sebulba")
    with pytest.raises(ValueError, match=r"unknown architecture 'podracer'; known: anakin, sebulba"):
        runner.algorithm("ppo", "podracer")
    es = runner.algorithm("es").config(population_size=6)
    with pytest.raises(ValueError, match=r"Config.population_size = 6 must be divisible by the 4 devices"):
        runner.check_devices(es, "population_size", es.population_size, types.SimpleNamespace(size=4))


def test_env_options_shape_training_not_evaluation():
    """`env_options` build the training environments' task (numbers parsed); evaluation's is the registered task;
    an option the task does not take is named."""
    config = Config(env="grasp", env_options=("start_in_hand=0.25",))
    config.validate()
    assert config.env_kwargs() == {"start_in_hand": 0.25}
    assert runner.make_env(config, training=True).unwrapped.start_in_hand == 0.25
    assert runner.make_env(config).unwrapped.start_in_hand == 0.0
    with pytest.raises(ValueError, match=r"Config.env_options \('speed=2',\) do not apply to cartpole"):
        runner.make_env(Config(env="cartpole", env_options=("speed=2",)), training=True)
