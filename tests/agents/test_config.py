"""PPO's Config: defaults validate, and each kind of mistake is named."""

import dataclasses

import pytest

from hurtle.agents.ppo import Config


def test_defaults_validate():
    assert Config().validate() == Config()
    assert Config().batch_size == Config().num_envs * Config().unroll_length


def test_every_field_has_a_docstring():
    import inspect

    source = inspect.getsource(Config)
    for field in dataclasses.fields(Config):
        line = next(i for i, s in enumerate(source.splitlines()) if s.strip().startswith(f"{field.name}:"))
        assert source.splitlines()[line + 1].strip().startswith('"""'), field.name


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
    ],
)
def test_validate_names_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        Config(**changes).validate()
