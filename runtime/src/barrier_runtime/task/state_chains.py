"""Incremental checkpoints of one subtask's keyed states: chains of a base and its deltas.

With ``incremental`` on, every keyed state of a subtask (a step's values, its
timers) forms a *chain* of immutable objects under the job's ``shared/``
prefix: a *base* (the whole state as of checkpoint *b*) and the *deltas* of
the checkpoints after it (the keys changed since the previous object of the
chain, deleted ones as tombstones). Checkpoint *n* references its chain's
base and every delta up to *n*; a restore applies them in that order
(:attr:`~barrier_runtime.core.metadata.StateHandle.restore_order`). So a
checkpoint uploads only what changed in its interval, and older objects are
shared by every checkpoint that still needs them; retention deletes an object
once no retained checkpoint references it.

Life of a chain (:class:`StateChain`, on the task thread)
    1. The first snapshot — after a start, a restore (even at the same
       parallelism), or a broken link — uploads a base, which starts the chain;
       from then on the state tracks its changed keys.
    2. Every later snapshot uploads a delta and references base + deltas.
       A single delta that is itself as large as :class:`MaterializationPolicy` allows
       all deltas to grow (a burst of changes, or the keys a load added while the
       first base uploaded) would cost as much as a base and then call for one: the
       snapshot uploads a base instead and starts a new chain.
    3. When :class:`MaterializationPolicy` says the deltas have grown (in rows
       against the base, or in number), the snapshot also takes a full copy and
       uploads it in the background as the next base, without holding back
       the acknowledgement of its checkpoint. Once that upload has succeeded,
       the next snapshot switches to it and drops the deltas it covers: a
       restore never reads more than one materialisation interval of deltas.
    4. A link whose upload failed breaks the chain: every checkpoint that
       references it fails (:class:`ChainBrokenError`, a storage failure the
       coordinator counts), and the next snapshot starts a new chain. A failed
       background base is dropped and tried again later.

Savepoints do not use chains: they stay self-contained (a full copy into the
savepoint's directory) and leave the chain and its changed keys alone.

Threading
    Chains are driven by the task thread. A :class:`Link` is settled once by
    the upload thread that wrote it; an upload that references older links
    waits for them. Uploads run first-in first-out on the attempt's pool, and a
    snapshot only waits for links submitted before its own, so that wait
    always ends.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from barrier_runtime.core import metadata, types
from barrier_runtime.storage import errors as storage_errors

LINK_WAIT = 300.0
"""Longest a snapshot's upload waits for an older link of its chain to be written (s)."""


class ChainBrokenError(storage_errors.StorageError):
    """An object an incremental checkpoint references was not uploaded: that checkpoint
    fails, and the next one starts a new chain with a full base."""


class StateCopy(Protocol):
    """A keyed state's copy taken at a barrier, whole or a delta, encoded later."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def delta(self) -> bool: ...

    @property
    def rows(self) -> int: ...

    def encode(self) -> bytes: ...


@runtime_checkable
class Splittable(Protocol):
    """A copy that uploads as several objects, each a range of its key groups (the on-disk
    backend's: an object's encoding is held in memory, so its size is bounded)."""

    def split_objects(self) -> Sequence[StateCopy]: ...


def parts_of(copy: StateCopy) -> tuple[StateCopy, ...]:
    """The objects ``copy`` uploads as: its parts, or itself."""
    return tuple(copy.split_objects()) if isinstance(copy, Splittable) else (copy,)


class TrackedState(Protocol):
    """A keyed state that can copy itself whole or copy only what changed (e.g.
    :class:`~barrier_runtime.state.keyed.KeyedState`)."""

    start: int
    end: int

    def track_changes(self) -> None: ...

    def snapshot_copy(self, step_id: str = "?") -> StateCopy: ...

    def delta_copy(self, step_id: str = "?") -> StateCopy: ...


@dataclass(frozen=True, slots=True)
class MaterializationPolicy:
    """When a chain takes a new base (the rows of its deltas count tombstones too).

    >>> policy = MaterializationPolicy(max_deltas=10, max_delta_ratio=1.0, min_rows=100)
    >>> policy.due(deltas=3, delta_rows=50, base_rows=100)
    False
    >>> policy.due(deltas=3, delta_rows=120, base_rows=100), policy.due(10, 1, 100)
    (True, True)
    """

    max_deltas: int = 100
    """Deltas after which a new base is taken, however small they are."""
    max_delta_ratio: float = 1.0
    """Rows of the deltas since the base, as a share of the base's rows, that call for a new
    base: a restore then reads at most about twice the state's size."""
    min_rows: int = 1000
    """Below this many delta rows the ratio is not checked (a small state's base is cheap,
    but so are its deltas)."""

    def __post_init__(self) -> None:
        if self.max_deltas < 1:
            raise ValueError(f"max_deltas must be at least 1, got {self.max_deltas}")
        if self.max_delta_ratio <= 0:
            raise ValueError(f"max_delta_ratio must be positive, got {self.max_delta_ratio}")

    def due(self, deltas: int, delta_rows: int, base_rows: int) -> bool:
        if deltas >= self.max_deltas:
            return True
        return self.oversized(delta_rows, base_rows)

    def oversized(self, delta_rows: int, base_rows: int) -> bool:
        """Whether deltas of ``delta_rows`` rows are as costly as a new base."""
        return delta_rows >= self.min_rows and delta_rows >= self.max_delta_ratio * base_rows


@dataclass(eq=False)
class Link:
    """One object of a chain: what to upload, and once uploaded, its handle."""

    as_of: types.CheckpointId
    delta: bool
    copy: StateCopy | None
    """What to upload; let go of once settled (a base's copy is as large as the state)."""
    rows: int
    start: int
    end: int
    """The key-group range it covers (inclusive)."""
    _settled: threading.Event = field(default_factory=threading.Event)
    _handle: metadata.StateHandle | None = None

    def encode(self) -> bytes:
        """The object's bytes (on the upload thread, once)."""
        if self.copy is None:
            raise RuntimeError(f"the state of checkpoint {self.as_of} was uploaded already")
        return self.copy.encode()

    def succeeded(self, handle: metadata.StateHandle) -> None:
        self._handle, self.copy = handle, None
        self._settled.set()

    def failed(self) -> None:
        self.copy = None
        self._settled.set()

    @property
    def settled(self) -> bool:
        """Whether its upload has ended, either way."""
        return self._settled.is_set()

    @property
    def broken(self) -> bool:
        return self._settled.is_set() and self._handle is None

    @property
    def uploaded(self) -> bool:
        return self._handle is not None

    def handle(self, timeout: float = LINK_WAIT) -> metadata.StateHandle:
        """The uploaded object's handle, once its upload is done (waits up to ``timeout``)."""
        if not self._settled.wait(timeout):
            raise ChainBrokenError(
                f"state of checkpoint {self.as_of} was not uploaded within {timeout:.0f} s"
            )
        if self._handle is None:
            raise ChainBrokenError(
                f"state of checkpoint {self.as_of} could not be uploaded; the next checkpoint "
                "starts a new chain with a full copy"
            )
        return self._handle


@dataclass(frozen=True, slots=True)
class ChainSnapshot:
    """What one snapshot of one chain uploads and references."""

    step_id: types.StepId
    relpath: str
    """The state's name in a full checkpoint (``step/0.arrow``), kept for messages."""
    uploads: tuple[Link, ...]
    """Written as part of this snapshot (its delta, or a new chain's base)."""
    references: tuple[Link, ...]
    """The chain as of this snapshot, in restore order: base, then deltas."""
    background: tuple[Link, ...] = ()
    """A full copy to upload as the next base, without holding this snapshot back."""


class StateChain:
    """The chain of one keyed state on one subtask; see the module essay."""

    def __init__(self, policy: MaterializationPolicy) -> None:
        self._policy = policy
        self._base: tuple[Link, ...] = ()
        """The chain's base: one link per object (several for a state that uploads in parts)."""
        self._deltas: list[Link] = []
        self._next_base: tuple[Link, ...] = ()

    def snapshot(
        self,
        checkpoint_id: types.CheckpointId,
        state: TrackedState,
        step_id: types.StepId,
        relpath: str,
    ) -> ChainSnapshot:
        """The barrier's part of snapshot ``checkpoint_id`` of ``state`` (copies taken now)."""
        base = self._base
        if not base or any(b.broken for b in base) or any(d.broken for d in self._deltas):
            # Step 1: a new chain
            state.track_changes()
            copy = state.snapshot_copy(step_id)
            state.delta_copy(step_id)  # forget what the base holds already
            self._base, self._deltas, self._next_base = self._links(checkpoint_id, copy), [], ()
            return ChainSnapshot(step_id, relpath, self._base, self._base)
        # Step 3, second half: switch to a background base that has been uploaded
        ready = self._next_base
        if ready and all(link.settled for link in ready):
            self._next_base = ()
            if all(link.uploaded for link in ready):
                self._base = base = ready
                self._deltas = [d for d in self._deltas if d.as_of > ready[0].as_of]
        # Step 2
        delta_copy = state.delta_copy(step_id)
        base_rows = sum(link.rows for link in base)
        if not self._next_base and self._policy.oversized(delta_copy.rows, base_rows):
            # Step 2a: as large as a base, so uploaded as one (a new chain)
            copy = state.snapshot_copy(step_id)
            self._base, self._deltas = self._links(checkpoint_id, copy), []
            return ChainSnapshot(step_id, relpath, self._base, self._base)
        delta = self._link(checkpoint_id, delta_copy)
        self._deltas.append(delta)
        background: tuple[Link, ...] = ()
        rows = sum(d.rows for d in self._deltas)
        if not self._next_base and self._policy.due(len(self._deltas), rows, base_rows):
            # Step 3, first half
            background = self._next_base = self._links(checkpoint_id, state.snapshot_copy(step_id))
        return ChainSnapshot(
            step_id, relpath, (delta,), (*base, *self._deltas), background=background
        )

    @classmethod
    def _links(cls, checkpoint_id: types.CheckpointId, copy: StateCopy) -> tuple[Link, ...]:
        return tuple(cls._link(checkpoint_id, part) for part in parts_of(copy))

    @staticmethod
    def _link(checkpoint_id: types.CheckpointId, copy: StateCopy) -> Link:
        return Link(checkpoint_id, copy.delta, copy, copy.rows, copy.start, copy.end)


class StateChains:
    """The chains of one subtask, one per keyed state (by its full checkpoint's name)."""

    def __init__(self, policy: MaterializationPolicy | None = None) -> None:
        self._policy = policy or MaterializationPolicy()
        self._chains: dict[str, StateChain] = {}

    def snapshot(
        self,
        checkpoint_id: types.CheckpointId,
        state: TrackedState,
        step_id: types.StepId,
        relpath: str,
    ) -> ChainSnapshot:
        chain = self._chains.get(relpath)
        if chain is None:
            chain = self._chains[relpath] = StateChain(self._policy)
        return chain.snapshot(checkpoint_id, state, step_id, relpath)
