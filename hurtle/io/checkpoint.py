"""Checkpoints of a training run, written with orbax into `RUN_DIR/checkpoints/<env steps>/`.

A checkpoint holds three items:
- `state`: the whole training state (parameters, optimiser and normaliser state, the batch of
  environment states, the PRNG key, the step counter): enough to continue the run exactly;
- `policy`: the parameters and normaliser alone, which `hurtle eval` restores without building
  the training environments;
- `meta`: JSON (iteration, env steps, seconds since the run started, the evaluation key).

orbax writes each checkpoint into a temporary directory and renames it when complete, so a run
killed at any moment leaves only whole checkpoints behind. Saving is asynchronous: the host loop
goes on while the arrays are written; `close()` waits for the last one.

PRNG key arrays (typed keys) are stored as their raw `key_data` and re-wrapped on restore.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np


def _is_key(x: Any) -> bool:
    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def to_storable(tree: Any) -> dict[str, Any]:
    """`tree` as a flat dict keyed by each leaf's path, typed PRNG keys as their raw uint32 data; empty
    arrays (a model without activations has a `[0]`-shaped `act`) are left out: orbax cannot store them."""
    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {
        jax.tree_util.keystr(path): jax.random.key_data(x) if _is_key(x) else x
        for path, x in flat
        if np.size(x) > 0 or _is_key(x)
    }


def from_storable(stored: dict[str, Any], like: Any) -> Any:
    """Undo `to_storable` into the structure of `like`: keys re-wrapped, empty arrays taken from `like`."""
    flat, treedef = jax.tree_util.tree_flatten_with_path(like)
    leaves = []
    for path, t in flat:
        name = jax.tree_util.keystr(path)
        if name not in stored:
            leaves.append(t)
        elif _is_key(t):
            leaves.append(jax.random.wrap_key_data(stored[name], impl=jax.random.key_impl(t)))
        else:
            leaves.append(stored[name])
    return jax.tree_util.tree_unflatten(treedef, leaves)


def abstract(tree: Any) -> Any:
    """Shapes, dtypes and shardings of `tree`'s leaves: the target a restore fills in (and places)."""

    def leaf(x):
        return jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=getattr(x, "sharding", None))

    return jax.tree.map(leaf, tree)


class Checkpointer:
    """Save and restore a run's checkpoints in `directory` (created if missing); keeps the newest `max_to_keep`.

    The checkpoint's name is the number of environment steps taken when it was written."""

    def __init__(self, directory: str | os.PathLike, max_to_keep: int = 3, asynchronous: bool = True):
        import orbax.checkpoint as ocp

        self._ocp = ocp
        self.directory = os.path.abspath(os.fspath(directory))
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep, create=True, enable_async_checkpointing=asynchronous
        )
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_step(self) -> int | None:
        """The env-step count of the newest complete checkpoint, None when there is none."""
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def save(self, step: int, state: Any, policy: Any, meta: dict[str, Any]) -> None:
        """Start writing the checkpoint `step` (returns before the arrays are on disk; see `wait`)."""
        ocp = self._ocp
        args = ocp.args.Composite(
            state=ocp.args.StandardSave(to_storable(state)),
            policy=ocp.args.StandardSave(to_storable(policy)),
            meta=ocp.args.JsonSave(meta),
        )
        self._manager.save(int(step), args=args, force=True)

    def restore(self, like_state: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """The training state of checkpoint `step` (the newest by default) shaped, typed and placed like
        `like_state`, and its metadata."""
        step = self._require(step)
        ocp = self._ocp
        target = abstract(to_storable(like_state))
        out = self._manager.restore(
            step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore())
        )
        return from_storable(out["state"], like_state), dict(out["meta"])

    def restore_policy(self, like_policy: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """The `policy` item (parameters and normaliser) of checkpoint `step` and its metadata."""
        step = self._require(step)
        ocp = self._ocp
        target = abstract(to_storable(like_policy))
        out = self._manager.restore(
            step, args=ocp.args.Composite(policy=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore())
        )
        return from_storable(out["policy"], like_policy), dict(out["meta"])

    def _require(self, step: int | None) -> int:
        latest = self.latest_step()
        if latest is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        return latest if step is None else int(step)

    def wait(self) -> None:
        """Block until every started save is on disk."""
        self._manager.wait_until_finished()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
