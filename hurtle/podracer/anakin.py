"""Anakin's device plumbing: a 1-D mesh over every device, batches sharded along it, the rest replicated.

How gradients are averaged across devices: nothing here calls `pmap` or `psum`. An agent's whole
iteration (rollout, advantages, every minibatch update) is one `jax.jit`; its inputs arrive with
`NamedSharding`s (environment states split along the batch axis over the mesh's "data" axis, parameters
and optimiser state replicated), and inside it `jax.lax.with_sharding_constraint` pins the layout of the
rollout batch and of each minibatch. A loss that averages over a minibatch split across devices is then a
reduction over a sharded axis, and XLA's SPMD partitioner inserts the all-reduce of its gradient; the
replicated parameters receive the same update on every device. The program is the same on one device, on
many, and on many hosts (after `maybe_initialize_distributed()`, `jax.devices()` spans every process).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"


def maybe_initialize_distributed() -> bool:
    """Call `jax.distributed.initialize()` when the environment describes a multi-process job.

    The usual variables: JAX_COORDINATOR_ADDRESS (with JAX_NUM_PROCESSES and JAX_PROCESS_ID), or a SLURM
    job of more than one task (SLURM_JOB_ID and SLURM_NTASKS > 1), which JAX detects by itself. Returns
    whether it initialised. Call it before anything touches a device.
    """
    env = os.environ
    if "JAX_COORDINATOR_ADDRESS" in env:
        kwargs: dict[str, Any] = {"coordinator_address": env["JAX_COORDINATOR_ADDRESS"]}
        if "JAX_NUM_PROCESSES" in env:
            kwargs["num_processes"] = int(env["JAX_NUM_PROCESSES"])
        if "JAX_PROCESS_ID" in env:
            kwargs["process_id"] = int(env["JAX_PROCESS_ID"])
        jax.distributed.initialize(**kwargs)
        return True
    if "SLURM_JOB_ID" in env and int(env.get("SLURM_NTASKS", "1")) > 1:
        jax.distributed.initialize()
        return True
    return False


def make_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A 1-D mesh with the axis "data" over `devices` (all devices, of every process, by default)."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), (DATA_AXIS,))


def batch_sharding(mesh: Mesh, axis: int = 0) -> NamedSharding:
    """Arrays split along dimension `axis` over the mesh's data axis."""
    return NamedSharding(mesh, PartitionSpec(*([None] * axis), DATA_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    """Arrays held whole on every device."""
    return NamedSharding(mesh, PartitionSpec())


def shard_batch(tree: Any, mesh: Mesh, axis: int = 0) -> Any:
    """Constrain (inside jit) every array leaf of `tree` to be split along `axis`; scalars stay replicated."""

    def constrain(x):
        if np.ndim(x) <= axis:
            return jax.lax.with_sharding_constraint(x, replicated(mesh))
        return jax.lax.with_sharding_constraint(x, batch_sharding(mesh, axis))

    return jax.tree.map(constrain, tree)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Constrain (inside jit) every leaf of `tree` to be replicated."""
    return jax.tree.map(lambda x: jax.lax.with_sharding_constraint(x, replicated(mesh)), tree)


def _place(x: Any, sharding: NamedSharding) -> jax.Array:
    """`x` (the same global value in every process) as a global array with `sharding`: each process hands
    over only the pieces its own devices hold, so this works on one host and on many."""
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        # keys as their data (a trailing axis), placed piecewise, then typed again
        return jax.random.wrap_key_data(_place(jax.random.key_data(x), sharding), impl=jax.random.key_impl(x))
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def device_put_batch(tree: Any, mesh: Mesh, axis: int = 0) -> Any:
    """Place (outside jit) every leaf of `tree` split along `axis`; scalars replicated."""
    return jax.tree.map(
        lambda x: _place(x, replicated(mesh) if np.ndim(x) <= axis else batch_sharding(mesh, axis)), tree
    )


def device_put_replicated(tree: Any, mesh: Mesh) -> Any:
    """Place (outside jit) every leaf of `tree` whole on every device."""
    return jax.tree.map(lambda x: _place(x, replicated(mesh)), tree)


def device_put_process_batch(tree: Any, mesh: Mesh, axis: int = 0) -> Any:
    """Place (outside jit) this process's part of a batch: every process holds different rows (its own
    actors' trajectories), and the global array, split along `axis` over the mesh, is their concatenation
    in process order. With one process this is `device_put_batch`."""
    if jax.process_count() == 1:
        return device_put_batch(tree, mesh, axis)

    def place(x):
        x = np.asarray(x)
        shape = list(x.shape)
        shape[axis] *= jax.process_count()
        return jax.make_array_from_process_local_data(batch_sharding(mesh, axis), x, tuple(shape))

    return jax.tree.map(place, tree)


def local_copy(tree: Any, device: jax.Device) -> Any:
    """A copy of replicated arrays (global ones included) on one of this process's devices: a copy even on
    the device the arrays live on, so that donating the originals (a learner's update) leaves it intact."""

    def copy(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            x = x.addressable_data(0)
        return jax.device_put(x, device, may_alias=False)

    return jax.tree.map(copy, tree)


def host_value(tree: Any) -> Any:
    """Bring replicated results (metrics, the step counter) to this host as numpy: every process reads its
    own copy, which works where `jax.device_get` cannot (arrays spanning other hosts' devices)."""

    def get(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            if not x.is_fully_replicated:
                raise ValueError("host_value needs replicated arrays; gather a sharded one first")
            return np.asarray(x.addressable_data(0))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(get, tree)
