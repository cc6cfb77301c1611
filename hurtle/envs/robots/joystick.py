"""What velocity-command ("joystick") locomotion tasks share: the command sampler, observation noise and the
reward terms MuJoCo Playground's joystick tasks are built from (Go1, G1, the Berkeley humanoid).

Each term is a function of arrays (no task object), returning the unscaled term; a task multiplies each by its
scale, logs the scaled value as `reward/<term>` and combines them as its reference does (Playground's: the sum times
the control period, clipped at zero from below). Names follow Playground's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def uniform_noise(key: jax.Array, x: jax.Array, scale: float) -> jax.Array:
    """`x` plus noise uniform in [-scale, scale] per entry (Playground's `(2 U - 1) level scale`, the level folded
    into `scale`)."""
    return x + (2 * jax.random.uniform(key, x.shape, x.dtype) - 1) * scale


def sample_command(key: jax.Array, amplitude: jax.Array) -> jax.Array:
    """A command (forward, sideways, yaw rate) uniform in [-amplitude, amplitude]."""
    return jax.random.uniform(key, amplitude.shape, amplitude.dtype, -amplitude, amplitude)


def resample_command(key: jax.Array, old: jax.Array, amplitude: jax.Array, keep_nonzero: jax.Array) -> jax.Array:
    """A command drawn anew per component with probability 1/2 (else the old one kept): uniform in
    [-amplitude, amplitude], zeroed with probability 1 - `keep_nonzero` (Go1's joystick)."""
    k_new, k_change, k_nonzero = jax.random.split(key, 3)
    new = sample_command(k_new, amplitude)
    nonzero = jax.random.bernoulli(k_nonzero, keep_nonzero, old.shape)
    change = jax.random.bernoulli(k_change, 0.5, old.shape)
    return jnp.where(change, new * nonzero, old)


def steps_until_next_command(key: jax.Array, mean_seconds: float, dt: float) -> jax.Array:
    """Control steps until the command changes: an exponential wait of mean `mean_seconds`, rounded to steps."""
    return jnp.round(jax.random.exponential(key) * mean_seconds / dt).astype(jnp.int32)


def moving(command: jax.Array) -> jax.Array:
    """Whether a command asks to move (norm above 0.01)."""
    return jnp.linalg.norm(command) > 0.01


# --- reward terms ---


def tracking_lin_vel(command: jax.Array, local_linvel: jax.Array, sigma: float) -> jax.Array:
    return jnp.exp(-jnp.sum(jnp.square(command[:2] - local_linvel[:2])) / sigma)


def tracking_ang_vel(command: jax.Array, gyro: jax.Array, sigma: float) -> jax.Array:
    return jnp.exp(-jnp.square(command[2] - gyro[2]) / sigma)


def lin_vel_z(global_linvel: jax.Array) -> jax.Array:
    return jnp.square(global_linvel[2])


def ang_vel_xy(global_angvel: jax.Array) -> jax.Array:
    return jnp.sum(jnp.square(global_angvel[:2]))


def orientation(upvector: jax.Array) -> jax.Array:
    """How far the body's up axis leans: the squared horizontal part of its world-frame z axis."""
    return jnp.sum(jnp.square(upvector[:2]))


def torques(force: jax.Array) -> jax.Array:
    return jnp.linalg.norm(force) + jnp.sum(jnp.abs(force))


def energy(qvel: jax.Array, force: jax.Array) -> jax.Array:
    return jnp.sum(jnp.abs(qvel) * jnp.abs(force))


def action_rate(action: jax.Array, last_action: jax.Array) -> jax.Array:
    return jnp.sum(jnp.square(action - last_action))


def pose(q: jax.Array, default: jax.Array, weight: jax.Array) -> jax.Array:
    return jnp.exp(-jnp.sum(jnp.square(q - default) * weight))


def stand_still(command: jax.Array, q: jax.Array, default: jax.Array) -> jax.Array:
    """Distance from the default pose, while the command is to stand (norm under 0.01)."""
    return jnp.sum(jnp.abs(q - default)) * (jnp.linalg.norm(command) < 0.01)


def joint_pos_limits(q: jax.Array, soft_lower: jax.Array, soft_upper: jax.Array) -> jax.Array:
    """How far the joints are past their soft limits, summed."""
    return jnp.sum(jnp.maximum(soft_lower - q, 0.0) + jnp.maximum(q - soft_upper, 0.0))


def feet_slip(feet_vel: jax.Array, contact: jax.Array, command: jax.Array) -> jax.Array:
    """Squared horizontal speed of the feet on the ground, while moving."""
    return jnp.sum(jnp.sum(jnp.square(feet_vel[:, :2]), -1) * contact) * moving(command)


def feet_clearance(feet_vel: jax.Array, feet_z: jax.Array, max_height: float) -> jax.Array:
    """Each foot's height from `max_height`, weighted by the square root of its horizontal speed."""
    return jnp.sum(jnp.abs(feet_z - max_height) * jnp.sqrt(jnp.linalg.norm(feet_vel[:, :2], axis=-1)))


def feet_height(swing_peak: jax.Array, first_contact: jax.Array, command: jax.Array, max_height: float) -> jax.Array:
    """At each landing, the swing's peak height relative to `max_height`, squared, while moving."""
    return jnp.sum(jnp.square(swing_peak / max_height - 1.0) * first_contact) * moving(command)


def feet_air_time(air_time: jax.Array, first_contact: jax.Array, command: jax.Array, threshold: float = 0.1):
    """At each landing, the time the foot was in the air beyond `threshold`, while moving."""
    return jnp.sum((air_time - threshold) * first_contact) * moving(command)
