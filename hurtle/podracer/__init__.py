"""Podracer architectures (Hessel et al. 2021): the device and mesh plumbing shared by the agents.

`anakin` holds the pieces of the Anakin layout: environments and learner on the same devices, one jitted
iteration per rollout + update. `sebulba` holds the other: host environments on actor threads, trajectories
handed to learner devices.
"""

from hurtle.podracer.anakin import (
    DATA_AXIS,
    batch_sharding,
    device_put_batch,
    device_put_process_batch,
    device_put_replicated,
    host_value,
    local_copy,
    make_mesh,
    maybe_initialize_distributed,
    replicate,
    replicated,
    shard_batch,
)

__all__ = [
    "DATA_AXIS",
    "batch_sharding",
    "device_put_batch",
    "device_put_process_batch",
    "device_put_replicated",
    "host_value",
    "local_copy",
    "make_mesh",
    "maybe_initialize_distributed",
    "replicate",
    "replicated",
    "shard_batch",
]
