"""Checking state objects against their handles (size and sha256), in parallel.

A :class:`HandleChecker` answers "what is wrong with these objects?" as a
list of one-line problems (empty when all is well). Only a *missing* object
or a *mismatching* one is a problem; any other storage failure (unreachable,
access denied) propagates, so a network outage is never mistaken for a
corrupt checkpoint and never causes a silent fall-back to older state.

>>> handle = make_handle("k", b"abc", "step", 0, md.HandleKind.OPERATOR)
>>> handle.size, check(handle, b"abc"), check(handle, b"abd")
(3, None, 'state object k has sha256 a52d159f262b…, expected ba7816bf8f01…')
"""

from __future__ import annotations

import concurrent.futures
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from barrier_runtime.core import metadata as md
from barrier_runtime.core import types
from barrier_runtime.storage import errors, object_store

_THREADS = 8
_T = TypeVar("_T")


class HandleChecker:
    """Verifies handles whose keys ``locate`` turns into object-store keys."""

    def __init__(self, store: object_store.ObjectStore, locate: Callable[[str], str]) -> None:
        self._store = store
        self._locate = locate

    def read_problems(
        self, handles: Sequence[md.StateHandle], cache: dict[md.StateHandle, str | None]
    ) -> list[str]:
        """Read every object and compare; ``cache`` spares re-reading shared objects."""
        todo = [h for h in dict.fromkeys(handles) if h not in cache]
        for handle, problem in zip(todo, _parallel(self._read_problem, todo), strict=True):
            cache[handle] = problem
        return [p for h in dict.fromkeys(handles) if (p := cache[h])]

    def stat_problems(self, handles: Sequence[md.StateHandle]) -> list[str]:
        """Cheaper: only check that every object exists with its recorded size."""
        return [p for p in _parallel(self._stat_problem, handles) if p]

    def _read_problem(self, handle: md.StateHandle) -> str | None:
        try:
            return check(handle, self._store.get(self._locate(handle.key)))
        except errors.ObjectNotFoundError:
            return f"state object {handle.key} is missing"

    def _stat_problem(self, handle: md.StateHandle) -> str | None:
        info = self._store.stat(self._locate(handle.key))
        if info is None:
            return f"state object {handle.key} is missing"
        if info.size != handle.size:
            return f"state object {handle.key} has {info.size} bytes, expected {handle.size}"
        return None


def make_handle(
    key: str,
    data: bytes,
    step_id: str,
    subtask: int,
    handle_kind: md.HandleKind,
    key_group_start: int | None = None,
    key_group_end: int | None = None,
) -> md.StateHandle:
    """The handle describing ``data`` stored under ``key``."""
    return md.StateHandle(
        step_id=types.StepId(step_id),
        subtask=subtask,
        key=key,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        kind=handle_kind,
        key_group_start=key_group_start,
        key_group_end=key_group_end,
    )


def check(handle: md.StateHandle, data: bytes) -> str | None:
    """What is wrong with ``data`` as the content of ``handle`` (``None``: nothing)."""
    if len(data) != handle.size:
        return f"state object {handle.key} has {len(data)} bytes, expected {handle.size}"
    digest = hashlib.sha256(data).hexdigest()
    if digest != handle.sha256:
        return (
            f"state object {handle.key} has sha256 {digest[:12]}…, expected {handle.sha256[:12]}…"
        )
    return None


def summary(problems: Sequence[str], limit: int = 3) -> str:
    """The first few problems on one line."""
    shown = "; ".join(problems[:limit])
    return shown if len(problems) <= limit else f"{shown}; and {len(problems) - limit} more"


def _parallel(func: Callable[[md.StateHandle], _T], handles: Iterable[md.StateHandle]) -> list[_T]:
    items = list(handles)
    if len(items) <= 1:
        return [func(h) for h in items]
    with concurrent.futures.ThreadPoolExecutor(min(_THREADS, len(items)), "cjob-verify") as pool:
        return list(pool.map(func, items))
