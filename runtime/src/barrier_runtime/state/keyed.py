"""Keyed value state of one step in one subtask, organised by key group.

Snapshots are taken synchronously by serialising the state (that copy is what
makes the later asynchronous upload safe while processing continues) into an
Arrow IPC stream with columns ``key_group`` (int32), ``key`` and ``value``
(pickled bytes). A restore reads every handle whose range overlaps the
subtask's own range and keeps only the rows in that range, which is how a
checkpoint taken at one parallelism is restored at another.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from barrier_runtime.state import key_groups

Key = str | int | bytes

_SCHEMA = pa.schema([("key_group", pa.int32()), ("key", pa.binary()), ("value", pa.binary())])


class KeyedState:
    """One value per key, for the keys in ``[start, end]`` key groups."""

    def __init__(self, key_group_range: tuple[int, int], max_parallelism: int) -> None:
        self.start, self.end = key_group_range
        self.max_parallelism = max_parallelism
        self._groups: dict[int, dict[Key, Any]] = {}

    def _group(self, key: Key) -> dict[Key, Any]:
        kg = key_groups.key_group_for(key, self.max_parallelism)
        if not self.start <= kg <= self.end:
            raise KeyError(
                f"key {key!r} is in key group {kg}, outside this subtask's range "
                f"[{self.start}, {self.end}]: records were routed to the wrong subtask"
            )
        return self._groups.setdefault(kg, {})

    def get(self, key: Key) -> Any:
        return self._group(key).get(key)

    def put(self, key: Key, value: Any) -> None:
        if value is None:
            self._group(key).pop(key, None)
        else:
            self._group(key)[key] = value

    def __len__(self) -> int:
        return sum(len(g) for g in self._groups.values())

    def items(self) -> Iterable[tuple[Key, Any]]:
        for group in self._groups.values():
            yield from group.items()

    def snapshot(self) -> bytes:
        """Serialise every key's value (a deep copy) as Arrow IPC bytes."""
        kgs: list[int] = []
        keys: list[bytes] = []
        values: list[bytes] = []
        for kg in sorted(self._groups):
            for key, value in self._groups[kg].items():
                kgs.append(kg)
                keys.append(pickle.dumps(key, protocol=5))
                values.append(pickle.dumps(value, protocol=5))
        table = pa.table({"key_group": kgs, "key": keys, "value": values}, schema=_SCHEMA)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, _SCHEMA) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the rows of ``blobs`` that fall into this subtask's key-group range."""
        for blob in blobs:
            table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
            for kg, key, value in zip(
                table.column("key_group").to_pylist(),
                table.column("key").to_pylist(),
                table.column("value").to_pylist(),
                strict=True,
            ):
                if self.start <= kg <= self.end:
                    self._groups.setdefault(kg, {})[pickle.loads(key)] = pickle.loads(value)
