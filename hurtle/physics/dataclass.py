"""Immutable pytree dataclasses with static (hashable) and dynamic (array) fields.

A field declared with `static_field()` is structure: it travels in the pytree's auxiliary data, is
compared and hashed by value (numpy arrays by their bytes), and never becomes a tracer. Every other
field is a leaf, so `jax.jit`, `jax.vmap` and `lax.scan` see only arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import jax
import numpy as np

T = TypeVar("T")


def static_field(**kwargs: Any) -> Any:
    """A dataclass field that is part of the pytree's static structure."""
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def _key(value: Any) -> Any:
    """A hashable, comparable key for a static value (numpy arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in sorted(value.items())))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,) + tuple(_key(getattr(value, f.name)) for f in dataclasses.fields(value))
    return value


class _Static:
    """Static field values with a value-based hash computed once."""

    __slots__ = ("values", "_key", "_hash")

    def __init__(self, values: tuple):
        self.values = values
        self._key = _key(values)
        self._hash = hash(self._key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Static) and self._hash == other._hash and self._key == other._key


def pytree_dataclass(cls: type[T]) -> type[T]:
    """Make `cls` a frozen dataclass registered as a pytree, with a `.replace(**fields)` method."""
    cls = dataclasses.dataclass(frozen=True, eq=False)(cls)
    fields = dataclasses.fields(cls)
    dynamic = tuple(f.name for f in fields if not f.metadata.get("static"))
    static = tuple(f.name for f in fields if f.metadata.get("static"))

    def flatten_with_keys(obj):
        aux = obj.__dict__.get("_static_cache")
        if aux is None:
            aux = _Static(tuple(getattr(obj, n) for n in static))
            object.__setattr__(obj, "_static_cache", aux)
        children = tuple((jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in dynamic)
        return children, aux

    def flatten(obj):
        children, aux = flatten_with_keys(obj)
        return tuple(c for _, c in children), aux

    def unflatten(aux, children):
        obj = object.__new__(cls)
        for n, v in zip(dynamic, children):
            object.__setattr__(obj, n, v)
        for n, v in zip(static, aux.values):
            object.__setattr__(obj, n, v)
        object.__setattr__(obj, "_static_cache", aux)
        return obj

    def replace(self, **changes):
        unknown = set(changes) - {f.name for f in fields}
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    cls.replace = replace
    cls.dynamic_fields = dynamic
    cls.static_fields = static
    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    return cls
