"""Keyed value state of one step in one subtask, organised by key group.

Snapshots are taken synchronously by serialising the state (that copy is what
makes the later asynchronous upload safe while processing continues) into an
Arrow IPC stream with columns ``key_group`` (int32), ``key`` and ``value``
(bytes of :mod:`~barrier_runtime.core.values`, the data-only value codec:
nothing read back can run code), marked with :data:`FORMAT` in the schema's
metadata. Keys and values may be any value that codec holds (see
``docs/state-values.md``); anything else fails the snapshot with the step's
name and what to do. A state object without the mark (the pickle format of
older releases) is refused with :class:`StateFormatError`.

A restore reads every handle whose range overlaps the subtask's own range
and keeps only the rows in that range, which is how a checkpoint taken at
one parallelism is restored at another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from barrier_runtime import task_failure
from barrier_runtime.core import values
from barrier_runtime.state import key_groups

Key = str | int | bytes

FORMAT_KEY = b"cjob.state.format"
FORMAT = b"values-1"
"""How state objects encode keys and values (``values-1``: :mod:`~barrier_runtime.core.values`)."""

_SCHEMA = pa.schema(
    [("key_group", pa.int32()), ("key", pa.binary()), ("value", pa.binary())],
    metadata={FORMAT_KEY: FORMAT},
)


class StateFormatError(ValueError):
    """A state object is not in a format this runtime reads (e.g. the old pickle format)."""


class UnencodableStateError(task_failure.PermanentFailure, TypeError):
    """A keyed step holds a key or value that state snapshots cannot store."""


def read_table(blob: bytes) -> pa.Table:
    """The Arrow table of a state object, after checking its format mark."""
    try:
        table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    except (pa.ArrowException, ValueError) as exc:
        raise StateFormatError(f"state object is not an Arrow IPC stream: {exc}") from exc
    check_format(table.schema.metadata)
    return table


def check_format(metadata: Mapping[bytes, bytes] | None) -> None:
    found = (metadata or {}).get(FORMAT_KEY)
    if found != FORMAT:
        raise StateFormatError(
            f"state object has format {found!r}, this runtime reads {FORMAT!r}: it was written "
            "by an older release (pickled keys and values); restore it with that release"
        )


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

    def snapshot(self, step_id: str = "?") -> bytes:
        """Serialise every key's value (a deep copy) as Arrow IPC bytes.

        :class:`UnencodableStateError` (naming ``step_id``) if a key or value is of a
        type the value codec cannot hold.
        """
        kgs: list[int] = []
        keys: list[bytes] = []
        encoded: list[bytes] = []
        for kg in sorted(self._groups):
            for key, value in self._groups[kg].items():
                kgs.append(kg)
                try:
                    keys.append(values.encode(key))
                    encoded.append(values.encode(value))
                except values.UnencodableValueError as exc:
                    raise UnencodableStateError(
                        f"step {step_id!r} cannot snapshot its state for key {key!r}: {exc}"
                    ) from exc
        table = pa.table({"key_group": kgs, "key": keys, "value": encoded}, schema=_SCHEMA)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, _SCHEMA) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the rows of ``blobs`` that fall into this subtask's key-group range."""
        for blob in blobs:
            table = read_table(blob)
            for kg, key, value in zip(
                table.column("key_group").to_pylist(),
                table.column("key").to_pylist(),
                table.column("value").to_pylist(),
                strict=True,
            ):
                if self.start <= kg <= self.end:
                    self._groups.setdefault(kg, {})[values.decode(key)] = values.decode(value)
