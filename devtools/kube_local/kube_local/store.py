"""In-memory storage: objects, the global resourceVersion and watch history.

Invariants:

* one counter gives every write a resourceVersion, so versions are totally ordered
  across all resources (as etcd's revision is);
* every write appends an :class:`Event` to its resource's bounded history, and
  events are delivered to watchers in version order; a watch that starts from a
  version older than the oldest retained event gets 410 Gone;
* all mutations are synchronous (no ``await`` inside them) and run on the server's
  event loop, so each one is atomic and a watch registered between two writes
  misses nothing.

What happens *because* of a write (garbage collection, namespace clean-up, CRD
establishment, default ServiceAccounts) lives in :mod:`kube_local.controllers`, which
registers itself as a listener; so may a kubelet (the seam for running Pods).
"""

from __future__ import annotations

import asyncio
import collections
import copy
import dataclasses
import datetime
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from kube_local import errors, resources, selectors

Obj = dict[str, Any]
Key = tuple[str, str]  # (group, plural)


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """One write: ``ADDED``, ``MODIFIED`` or ``DELETED``, with the object before it."""

    type: str
    object: Obj
    previous: Obj | None
    version: int


Listener = Callable[["Store", resources.ResourceType, Event], None]
Graceful = Callable[[resources.ResourceType, "Obj"], "int | None"]
"""A kubelet's say on a deletion: the grace period (seconds) of an object it must stop
first (a pod it runs), else ``None`` (delete at once)."""


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(obj: Obj) -> dict[str, Any]:
    found: dict[str, Any] = obj.setdefault("metadata", {})
    return found


class Store:
    """Objects by resource, namespace and name, plus their recent events."""

    def __init__(self, history_size: int = 1000) -> None:
        self.types: dict[Key, resources.ResourceType] = {t.key: t for t in resources.BUILTIN}
        self.version = 1
        self.history_size = history_size
        self._objects: dict[Key, dict[tuple[str, str], Obj]] = collections.defaultdict(dict)
        self._history: dict[Key, collections.deque[Event]] = collections.defaultdict(
            lambda: collections.deque(maxlen=history_size)
        )
        self._compacted: dict[Key, int] = collections.defaultdict(int)
        self._watchers: dict[Key, set[asyncio.Queue[Event]]] = collections.defaultdict(set)
        self.listeners: list[Listener] = []
        self.graceful: Graceful | None = None

    # -- types -------------------------------------------------------------------

    def find_type(self, group: str, version: str, plural: str) -> resources.ResourceType:
        found = self.types.get((group, plural))
        if found is None or version not in found.versions:
            gv = f"{group}/{version}" if group else version
            raise errors.ApiError(
                404,
                "NotFound",
                f"the server could not find the requested resource ({plural} in {gv})",
            )
        return found

    def type_of(self, group: str, plural: str) -> resources.ResourceType:
        return self.types[(group, plural)]

    # -- reads --------------------------------------------------------------------

    def get(self, t: resources.ResourceType, namespace: str, name: str) -> Obj:
        obj = self._objects[t.key].get((namespace if t.namespaced else "", name))
        if obj is None:
            raise errors.not_found(t.plural, t.group, name)
        return copy.deepcopy(obj)

    def find(self, t: resources.ResourceType, namespace: str, name: str) -> Obj | None:
        try:
            return self.get(t, namespace, name)
        except errors.ApiError:
            return None

    def select(
        self,
        t: resources.ResourceType,
        namespace: str | None,
        selector: selectors.Selector | None = None,
    ) -> list[Obj]:
        selector = selector or selectors.Selector()
        found = [
            copy.deepcopy(o)
            for (ns, _), o in sorted(self._objects[t.key].items())
            if (namespace is None or ns == namespace) and selector.matches(o)
        ]
        return found

    def everything(self) -> Iterator[tuple[resources.ResourceType, Obj]]:
        """Every stored object (live references: do not change them)."""
        for key, objs in list(self._objects.items()):
            if key in self.types:
                for obj in list(objs.values()):
                    yield self.types[key], obj

    # -- writes -------------------------------------------------------------------

    def _next(self) -> int:
        self.version += 1
        return self.version

    def _emit(
        self, t: resources.ResourceType, kind: str, obj: Obj, previous: Obj | None, version: int
    ) -> None:
        event = Event(kind, copy.deepcopy(obj), previous, version)
        history = self._history[t.key]
        if len(history) == history.maxlen:
            self._compacted[t.key] = history[0].version
        history.append(event)
        for queue in list(self._watchers[t.key]):
            queue.put_nowait(event)
        for listener in list(self.listeners):
            listener(self, t, event)

    def create(self, t: resources.ResourceType, namespace: str, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        m = meta(obj)
        if t.namespaced:
            m["namespace"] = namespace
        else:
            m.pop("namespace", None)
        if not m.get("name"):
            if not m.get("generateName"):
                raise errors.invalid(
                    f'{t.kind} in version "{t.versions[0]}" cannot be '
                    "handled: metadata.name: Required value: name or "
                    "generateName is required"
                )
            m["name"] = m["generateName"] + uuid.uuid4().hex[:5]
        slot = (namespace if t.namespaced else "", m["name"])
        if slot in self._objects[t.key]:
            raise errors.already_exists(t.plural, t.group, m["name"])
        version = self._next()
        obj["apiVersion"], obj["kind"] = t.api_version(), t.kind
        m.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=now(),
            generation=1,
            resourceVersion=str(version),
        )
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields"):
            m.pop(field, None)
        self._objects[t.key][slot] = obj
        self._emit(t, "ADDED", obj, None, version)
        return copy.deepcopy(obj)

    def replace(self, t: resources.ResourceType, obj: Obj) -> Obj:
        """Store a new version of an existing object (the caller did the merging)."""
        m = meta(obj)
        slot = (m.get("namespace", "") if t.namespaced else "", m["name"])
        previous = self._objects[t.key].get(slot)
        if previous is None:
            raise errors.not_found(t.plural, t.group, m["name"])
        version = self._next()
        obj = copy.deepcopy(obj)
        meta(obj)["resourceVersion"] = str(version)
        if m.get("deletionTimestamp") and not m.get("finalizers") and not self._held(t, obj):
            del self._objects[t.key][slot]
            self._emit(t, "DELETED", obj, previous, version)
        else:
            self._objects[t.key][slot] = obj
            self._emit(t, "MODIFIED", obj, previous, version)
        return copy.deepcopy(obj)

    def _held(self, t: resources.ResourceType, obj: Obj) -> bool:
        """Is ``obj`` terminating gracefully (a kubelet stops it, then removes it)?"""
        return (
            self.graceful is not None
            and self.graceful(t, obj) is not None
            and int(meta(obj).get("deletionGracePeriodSeconds") or 0) > 0
        )

    def remove(
        self,
        t: resources.ResourceType,
        namespace: str,
        name: str,
        grace: int | None = None,
        *,
        force: bool = False,
    ) -> Obj:
        """Delete now, or mark for deletion while finalizers remain or a kubelet stops it.

        ``grace``: the DeleteOptions' ``gracePeriodSeconds`` (0: at once); ``force``: the
        kubelet's final removal of an object it stopped.
        """
        current = self.get(t, namespace, name)
        m = meta(current)
        seconds = None if force or self.graceful is None else self.graceful(t, current)
        if seconds is not None and grace != 0:
            if not m.get("deletionTimestamp"):
                m["deletionTimestamp"] = now()
                m["deletionGracePeriodSeconds"] = max(1, seconds if grace is None else grace)
                return self.replace(t, current)
            return current
        if m.get("finalizers"):
            if not m.get("deletionTimestamp"):
                m["deletionTimestamp"], m["deletionGracePeriodSeconds"] = now(), 0
                return self.replace(t, current)
            return current
        slot = (namespace if t.namespaced else "", name)
        previous = self._objects[t.key].pop(slot)
        version = self._next()
        m["resourceVersion"] = str(version)
        self._emit(t, "DELETED", current, previous, version)
        return current

    # -- watches ------------------------------------------------------------------

    def subscribe(
        self, t: resources.ResourceType, since: int | None
    ) -> tuple[asyncio.Queue[Event], list[Event]]:
        """A queue of future events and the retained events after ``since``.

        ``since`` None means "from now, starting with the current objects as ADDED".
        """
        queue: asyncio.Queue[Event] = asyncio.Queue()
        if since is None:
            backlog = [
                Event("ADDED", copy.deepcopy(o), None, int(meta(o).get("resourceVersion", 0)))
                for o in self._objects[t.key].values()
            ]
            backlog.sort(key=lambda e: e.version)
        else:
            if since < self._compacted[t.key]:
                raise errors.gone(str(since), self._compacted[t.key])
            backlog = [e for e in self._history[t.key] if e.version > since]
        self._watchers[t.key].add(queue)
        return queue, backlog

    def unsubscribe(self, t: resources.ResourceType, queue: asyncio.Queue[Event]) -> None:
        self._watchers[t.key].discard(queue)
