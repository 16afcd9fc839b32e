"""The keyed states of one subtask, made by the configured state backend.

An operator asks its subtask's :class:`KeyedStates` for its state
(:meth:`KeyedStates.create`); the chain closes them when the subtask ends.

* :class:`InMemory`: a :class:`~barrier_runtime.state.keyed.KeyedState` (a ``dict``).
* :class:`OnDisk`: a :class:`~barrier_runtime.state.disk_keyed.DiskKeyedState` per
  state, each an embedded RocksDB under the subtask's local directory, all within one
  memory budget: three eighths for RocksDB (one block cache that also pays for the
  memtables), three eighths for the decoded values cached in front of the stores (split
  equally between them), a quarter for one checkpoint object being encoded. The
  directory is this attempt's own; an earlier attempt's directories on this host are
  removed (a restart restores from a checkpoint, never from them).
"""

from __future__ import annotations

import pathlib
import re
import shutil
from typing import Protocol

from barrier_runtime.core import types
from barrier_runtime.state import disk_copies, disk_keyed, keyed, spilling_values


class KeyedStates(Protocol):
    def create(
        self,
        name: str,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        content: bytes = keyed.VALUES,
    ) -> keyed.KeyedState:
        """The state called ``name`` (unique in the subtask: its step id, and a suffix)."""
        ...

    def close(self) -> None: ...


class InMemory:
    def create(
        self,
        name: str,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        content: bytes = keyed.VALUES,
    ) -> keyed.KeyedState:
        return keyed.KeyedState(key_group_range, max_parallelism, content)

    def close(self) -> None:
        pass  # nothing outside the process


class OnDisk:
    """A subtask's on-disk keyed states under ``root`` (created on first use)."""

    def __init__(self, root: pathlib.Path, memory_bytes: int) -> None:
        self.root = root
        self._values_budget = memory_bytes * 3 // 8
        self._part_bytes = disk_copies.part_bytes(memory_bytes)
        self._memory: spilling_values.StoreMemory | None = None
        self._store_budget = memory_bytes * 3 // 8
        """The last quarter: a copy's object being encoded and uploaded."""
        self.states: list[disk_keyed.DiskKeyedState] = []

    def create(
        self,
        name: str,
        key_group_range: tuple[int, int],
        max_parallelism: int,
        content: bytes = keyed.VALUES,
    ) -> keyed.KeyedState:
        if self._memory is None:
            self._memory = spilling_values.StoreMemory(self._store_budget)
        share = self._values_budget // (len(self.states) + 1)
        for state in self.states:
            state.spilled.resize(share)
        path = self.root / _safe(name)
        shutil.rmtree(path, ignore_errors=True)
        state = disk_keyed.DiskKeyedState(
            key_group_range, max_parallelism, path, share, content, self._memory, self._part_bytes
        )
        self.states.append(state)
        return state

    def close(self) -> None:
        for state in self.states:
            state.close()
        shutil.rmtree(self.root, ignore_errors=True)


def for_subtask(
    backend: types.StateBackend, local_root: pathlib.Path, attempt: int, subtask: str
) -> KeyedStates:
    """The subtask's states: ``subtask`` names it (task and index) under ``local_root``."""
    if backend.kind is types.StateBackendKind.MEMORY:
        return InMemory()
    states = local_root / "state"
    _remove_older_attempts(states, attempt, subtask)
    return OnDisk(states / f"a{attempt}-{_safe(subtask)}", backend.memory_bytes)


def _remove_older_attempts(states: pathlib.Path, attempt: int, subtask: str) -> None:
    if not states.is_dir():
        return
    pattern = re.compile(rf"a(\d+)-{re.escape(_safe(subtask))}")
    for entry in states.iterdir():
        found = pattern.fullmatch(entry.name)
        if found is not None and int(found.group(1)) < attempt:
            shutil.rmtree(entry, ignore_errors=True)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)
