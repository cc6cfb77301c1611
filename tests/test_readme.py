"""What a user copies from the README and docs runs as written: every ```python block (under the install the text
gives before it: `pip install -e .`, whose dependencies include Gymnasium), and every `hurtle ...` command of the
```bash blocks is read by the CLI as its command would read it (an unknown command, task, algorithm or option, or a
value out of range, fails). The commands run for real elsewhere: `demo` and `train` in tests/test_cli.py, `eval`
in tests/agents/test_train.py (the README's main job, sim-to-sim included), `view` and `video` in tests/test_view.py,
`envs` in tests/test_cli.py and tests/test_first_hour.py (the first hour's commands on a machine without OpenGL)."""

import os

import pytest

from hurtle import cli
from tests.readme_lines import README, ROOT, blocks, documents, hurtle_commands

# a document whose blocks a test of its own runs with more checks
RUN_ELSEWHERE = {os.path.join(ROOT, "docs", "environments.md"): "tests/envs/test_docs.py"}


@pytest.mark.parametrize("path", [p for p in documents() if blocks(p, "python")], ids=os.path.basename)
def test_python_blocks_run(path):
    if path in RUN_ELSEWHERE:
        assert os.path.exists(os.path.join(ROOT, RUN_ELSEWHERE[path]))
        return
    namespace: dict = {"__name__": "__readme__"}
    for block in blocks(path, "python"):
        exec(compile(block, path, "exec"), namespace)
    if path == README:  # what the blocks promise
        assert namespace["data"].qpos.shape == (namespace["model"].nq,)
        assert namespace["gym_env"].observation_space.shape == (4,)
        assert namespace["states"].obs.shape == (1024, 4)


def test_every_readme_command_is_read_by_the_cli(capsys):
    commands = [c for p in documents() for c in hurtle_commands(p)]
    assert len(commands) >= 20 and ["demo"] in commands  # the file was read
    for argv in commands:
        try:
            cli.check(argv)
        except SystemExit as e:  # --help prints and exits 0
            assert e.code == 0 and "--help" in argv, (argv, e.code)
        except cli.UsageError as e:
            pytest.fail(f"README: hurtle {' '.join(argv)}: {e}")
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["train", "hoper"], "unknown environment 'hoper'"),
        (["train", "hopper", "--num-env", "8"], "--num-env"),
        (["train", "hopper", "--algo", "sacc"], "unknown algorithm 'sacc'"),
        (["train", "cartpole", "--num-envs", "0"], "--num-envs must be positive"),
        (["eval", "runs/ip", "--episode", "2"], "--episode"),
        (["view", "--model", "robot.xml", "--controls", "wild"], "--controls"),
        (["envs", "hoper"], "hoper"),
        (["demo", "--batch", "x"], "--batch"),
        (["trian", "hopper"], "unknown command 'trian'"),
    ],
)
def test_check_refuses_what_a_command_would(argv, expected):
    with pytest.raises(cli.UsageError, match=expected):
        cli.check(argv)
