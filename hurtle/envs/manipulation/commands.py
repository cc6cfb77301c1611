"""What the arm and hand tasks share about their actions and observations: velocity commands integrated into
position servos' targets (as industrial arms and teleoperated hands take them), and offsets seen at the centimetre
scale.

A velocity command makes the policy a feedback law ("move towards the object") where an absolute servo target
makes it an inverse-kinematics map that must be accurate to the task's tolerance over the whole workspace: on
`ur5e_reach` the change took the 2 cm success rate from 20% at 700k steps to 93% at 768k (benchmarks/NOTES.md
§43)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def integrate(target: jax.Array, position: jax.Array, command: jax.Array, step, lead) -> jax.Array:
    """The servos' new targets: `target + step * command` (command in [-1, 1], step per control step), kept within
    `lead` of the joints' `position` so a target never winds up against an obstacle that stops its joint."""
    return jnp.clip(target + step * command, position - lead, position + lead)


def fine(offset: jax.Array, scale: float = 0.05) -> jax.Array:
    """tanh(offset / scale): an offset seen at the centimetre scale (linear within a few cm, saturated beyond),
    where the raw offset's metres would leave a normalised observation too coarse for the last 2 cm."""
    return jnp.tanh(offset / scale)
