"""A recording object store for tests of the storage layer: every call is kept, any can fail.

>>> import tempfile
>>> raw = ScriptedStore(pathlib.Path(tempfile.mkdtemp()))
>>> raw.put("a/b", b"x"); list(raw.list("a/")), raw.calls
(['a/b'], [('put', 'a/b'), ('list', 'a/')])
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable, Iterator

from barrier_runtime.storage import errors, local, object_store


class ScriptedStore:
    """A local store that records every call and fails the ones it is told to."""

    def __init__(self, root: pathlib.Path) -> None:
        self.inner = local.LocalObjectStore(root)
        self.calls: list[tuple[str, str]] = []
        self.fail: dict[str, errors.StorageError] = {}
        """Operation name (``get``, ``delete_many``, …) → the error it raises from now on."""

    def _record(self, op: str, key: str) -> None:
        self.calls.append((op, key))
        if op in self.fail:
            raise self.fail[op]

    def put(self, key: str, data: bytes) -> None:
        self._record("put", key)
        self.inner.put(key, data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        self._record("put_if_absent", key)
        return self.inner.put_if_absent(key, data)

    def get(self, key: str) -> bytes:
        self._record("get", key)
        return self.inner.get(key)

    def stat(self, key: str) -> object_store.ObjectInfo | None:
        self._record("stat", key)
        return self.inner.stat(key)

    def list(self, prefix: str) -> Iterator[str]:
        self._record("list", prefix)
        return self.inner.list(prefix)

    def delete(self, key: str) -> None:
        self._record("delete", key)
        self.inner.delete(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            self._record("delete_many", key)
        self.inner.delete_many(keys)

    def delete_incomplete(self, prefix: str) -> int:
        self._record("delete_incomplete", prefix)
        return self.inner.delete_incomplete(prefix)

    def describe(self) -> str:
        return "scripted store"

    def describe_key(self, key: str) -> str:
        return f"{key} in the scripted store"
