"""What `hurtle train ENV` runs when the command names no algorithm or architecture (`--arch auto`), in one table.

The fastest method measured for each task on the kind of machine at hand, beside the presets each method starts
from. On a machine whose JAX has only CPUs that is the README's locomotion table (benchmarks/RESULTS.md, "the
locomotion suite": each row's time to its threshold on a 2-core CPU against the other methods tried there): PPO on
Sebulba, MuJoCo C stepping the task on host threads, for the locomotion rows, where MuJoCo C steps these tasks
several times faster than JAX on a CPU; ARS and SAC on Anakin for the rows they won. A task without a row trains
with Anakin's PPO. With an accelerator, Anakin: the environments compiled with the learner on the device (a row's
Anakin algorithm where it has one, else PPO). A name hurtle does not register (a Gymnasium id) runs on Sebulba.
"""

from __future__ import annotations

from typing import NamedTuple

# task -> (algorithm, architecture) on a CPU-only machine: the method column of the README's locomotion table
CPU: dict[str, tuple[str, str]] = {
    "inverted_pendulum": ("ppo", "sebulba"),
    "inverted_double_pendulum": ("ppo", "sebulba"),
    "hopper": ("ppo", "sebulba"),
    "walker2d": ("ppo", "sebulba"),
    "halfcheetah": ("ppo", "sebulba"),
    "ant": ("ppo", "sebulba"),
    "humanoid": ("ppo", "sebulba"),
    "humanoidstandup": ("ppo", "sebulba"),
    "swimmer": ("ars", "anakin"),
    "reacher": ("sac", "anakin"),
    "pusher": ("sac", "anakin"),
    # MuJoCo Playground's robot tasks: Sebulba's PPO on MuJoCo C, as the locomotion rows (not yet measured against
    # the others: issue 73)
    "go1_joystick_flat": ("ppo", "sebulba"),
    "go1_joystick_rough": ("ppo", "sebulba"),
    "berkeley_humanoid_joystick_flat": ("ppo", "sebulba"),
    "leap_cube_reorient": ("ppo", "sebulba"),
    "panda_pick_cube": ("ppo", "sebulba"),
}
FALLBACK = ("ppo", "anakin")


class Choice(NamedTuple):
    """An algorithm and architecture for a task, and why (printed at the start of a run)."""

    algo: str
    arch: str
    why: str


def table(accelerator: bool) -> dict[str, tuple[str, str]]:
    """The (algorithm, architecture) of each task with a row, on an accelerator or a CPU-only machine."""
    if not accelerator:
        return dict(CPU)
    return {env: (algo, "anakin") if arch == "anakin" else FALLBACK for env, (algo, arch) in CPU.items()}


def choose(
    env: str,
    accelerator: bool,
    algorithms: dict[str, tuple[str, ...]],
    registered: bool = True,
    algo: str | None = None,
    arch: str | None = None,
) -> Choice:
    """The (algorithm, architecture) `hurtle train env` runs, given what the command line named (None: not named).

    `algorithms`: each architecture's algorithm names. A named pair stands; a named algorithm runs on the table's
    architecture when the table's algorithm is the same, else on the first architecture that has it (Anakin's
    first); a named architecture runs the table's algorithm when the table's architecture is the same, else PPO.
    `registered`: `env` is a hurtle task (else a Gymnasium or EnvPool id, which only Sebulba steps)."""
    device = "an accelerator" if accelerator else "a CPU-only machine"
    if not registered:
        row, source = ("ppo", "sebulba"), f"{env} is not a hurtle task: Sebulba steps it on host threads"
    elif env in table(accelerator):
        row = table(accelerator)[env]
        source = f"the fastest method measured for {env} on {device}"
    else:
        row, source = FALLBACK, f"the default for a task without a row in hurtle/agents/defaults.py on {device}"
    if algo is not None and arch is not None:
        return Choice(algo, arch, "as asked")
    if algo is not None:
        if algo == row[0]:
            return Choice(algo, row[1], source)
        where = next(a for a in algorithms if algo in algorithms[a])
        if not registered and algo in algorithms.get("sebulba", ()):
            where = "sebulba"
        return Choice(algo, where, f"{where} is the architecture with {algo}")
    if arch is not None:
        if arch == row[1]:
            return Choice(row[0], arch, source)
        return Choice("ppo", arch, f"ppo is the default algorithm on {arch}")
    return Choice(row[0], row[1], source)


__all__ = ["CPU", "FALLBACK", "Choice", "choose", "table"]
