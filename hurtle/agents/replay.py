"""A fixed-capacity ring buffer of transitions on the device, for off-policy learners (SAC).

    buf = replay.init(example, slots)            # example: one step of every environment, leaves [E, ...]
    buf = replay.insert(buf, batch)              # batch: leaves [E, ...]; overwrites the oldest slot when full
    sample = replay.sample(buf, key, n)          # n transitions drawn uniformly from what is stored

The data's leaves are `[slots, E, ...]`: slot t holds the t-th inserted step of all E environments. Under a
device mesh the buffer is split along its environment axis (axis 1) like the environments themselves, so an
insertion writes each device's own transitions where they are; sampling draws global indices (the same
numbers on one device or many) and XLA gathers across devices. Insertion and sampling are pure and jittable.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hurtle.physics.dataclass import pytree_dataclass


@pytree_dataclass
class Buffer:
    """data: the stored pytree, leaves `[slots, E, ...]`; position: the slot the next insertion writes;
    size: the slots filled so far (at most `slots`)."""

    data: Any
    position: jax.Array
    size: jax.Array

    @property
    def slots(self) -> int:
        return jax.tree.leaves(self.data)[0].shape[0]

    @property
    def width(self) -> int:
        """E: transitions per slot (the environments inserted together)."""
        return jax.tree.leaves(self.data)[0].shape[1]


def init(example: Any, slots: int) -> Buffer:
    """An empty buffer of `slots` slots shaped like `example` (leaves `[E, ...]`, E environments per slot)."""
    if slots <= 0:
        raise ValueError(f"replay.init: a buffer needs at least one slot, got {slots}")
    data = jax.tree.map(lambda x: jnp.zeros((slots,) + jnp.shape(x), jnp.asarray(x).dtype), example)
    return Buffer(data=data, position=jnp.zeros((), jnp.int32), size=jnp.zeros((), jnp.int32))


def nbytes(example: Any, slots: int) -> int:
    """The bytes a buffer of `slots` slots shaped like `example` holds."""
    return slots * sum(
        int(np.prod(np.shape(x))) * np.dtype(jnp.asarray(x).dtype).itemsize for x in jax.tree.leaves(example)
    )


def insert(buf: Buffer, batch: Any) -> Buffer:
    """Write one step of every environment (`batch`, leaves `[E, ...]`) into the next slot, wrapping around."""
    data = jax.tree.map(
        lambda d, x: jax.lax.dynamic_update_index_in_dim(d, x.astype(d.dtype), buf.position, 0), buf.data, batch
    )
    slots = buf.slots
    return Buffer(data=data, position=(buf.position + 1) % slots, size=jnp.minimum(buf.size + 1, slots))


def sample_indices(buf: Buffer, key: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
    """`n` (slot, environment) pairs drawn uniformly and independently from the filled slots."""
    flat = jax.random.randint(key, (n,), 0, jnp.maximum(buf.size, 1) * buf.width)
    return flat // buf.width, flat % buf.width


def sample(buf: Buffer, key: jax.Array, n: int) -> Any:
    """`n` transitions (leaves `[n, ...]`) drawn uniformly, with replacement, from what is stored."""
    slot, env = sample_indices(buf, key, n)
    return jax.tree.map(lambda d: d[slot, env], buf.data)


def available_bytes(device: jax.Device) -> int | None:
    """What `device` can still hold: its allocator's limit less what is in use where it reports one (GPUs,
    TPUs), this host's available memory for a CPU device; None when neither is known."""
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    if device.platform == "cpu":
        try:
            with open("/proc/meminfo") as f:
                info = {line.split(":")[0]: line.split()[1] for line in f}
            return int(info["MemAvailable"]) * 1024
        except (OSError, KeyError, ValueError):
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    return None


def check_fits(total_bytes: int, devices: list[jax.Device], field: str, fraction: float = 0.5) -> None:
    """ValueError naming `field` when a buffer of `total_bytes`, split evenly over `devices`, would take more
    than `fraction` of what one of them has free (the rest is for the environments, networks and XLA)."""
    per_device = total_bytes // max(len(devices), 1)
    for device in devices:
        free = available_bytes(device)
        if free is not None and per_device > fraction * free:
            raise ValueError(
                f"Config.{field}: the replay buffer would take {total_bytes:,} bytes ({per_device / 2**20:,.0f} MiB "
                f"on each of {len(devices)} device(s)), over {fraction:.0%} of the {free / 2**20:,.0f} MiB free on "
                f"{device}; lower {field}"
            )
