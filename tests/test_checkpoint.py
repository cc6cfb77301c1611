"""Checkpointer: a round trip keeps every leaf (typed keys, empty arrays, integers) and places the restored
arrays like the target (sharded over the two test devices)."""

import jax
import jax.numpy as jnp
import numpy as np

from hurtle import podracer
from hurtle.io import Checkpointer


def test_round_trip_keys_empty_arrays_and_sharding(tmp_path):
    mesh = podracer.make_mesh()
    tree = {
        "batch": podracer.device_put_batch(jnp.arange(8.0).reshape(4, 2), mesh),
        "empty": jnp.zeros((4, 0)),  # e.g. `act` of a model without activations
        "key": jax.random.key(3),
        "step": jnp.int32(5),
    }
    with Checkpointer(tmp_path / "ckpt") as ckpt:
        assert ckpt.latest_step() is None
        ckpt.save(10, tree, {"w": tree["batch"]}, {"iteration": 1})
        ckpt.save(20, jax.tree.map(lambda x: x, {**tree, "step": jnp.int32(6)}), {"w": tree["batch"]}, {"iteration": 2})
        ckpt.wait()
        assert ckpt.all_steps() == [10, 20]
        like = {**tree, "batch": podracer.device_put_batch(jnp.zeros((4, 2)), mesh), "step": jnp.int32(0)}
        restored, meta = ckpt.restore(like)
        old, _ = ckpt.restore(like, step=10)
        policy, _ = ckpt.restore_policy({"w": jnp.zeros((4, 2))})
    assert meta == {"iteration": 2} and int(restored["step"]) == 6 and int(old["step"]) == 5
    np.testing.assert_array_equal(np.asarray(restored["batch"]), np.arange(8.0).reshape(4, 2))
    assert restored["batch"].sharding == like["batch"].sharding
    assert restored["empty"].shape == (4, 0)
    assert jnp.array_equal(jax.random.key_data(restored["key"]), jax.random.key_data(tree["key"]))
    np.testing.assert_array_equal(np.asarray(policy["w"]), np.asarray(tree["batch"]))
