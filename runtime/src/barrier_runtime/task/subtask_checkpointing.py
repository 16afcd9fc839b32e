"""The checkpointing part of one subtask: snapshot, forward, abort, upload, acknowledge.

:class:`SubtaskCheckpointing` is the single owner of every snapshot of its
subtask, from the synchronous copy to the acknowledgement. Nobody else holds
a snapshot in progress: the input gate hands over captured channel state by
checkpoint id, the attempt only runs upload functions on its pool and writes
blobs to the store.

Life of snapshot *n* (numbered steps, marked ``# Step N`` below)
    1. (task thread) fault point SNAPSHOT; the operator chain copies its
       state into a :class:`~barrier_runtime.task.operators.SnapshotBuilder`.
    2. (task thread) the barrier is forwarded downstream — with priority if
       unaligned, keeping the output it overtook as output channel state.
    3. (upload pool) the state blobs are written (fault point UPLOAD); with
       incremental checkpoints, the keyed states' new links go to ``shared/``
       and the handles are those of each whole chain
       (:mod:`~barrier_runtime.task.state_chains`), whose background bases
       are uploaded after the snapshot, on their own.
    4. (task thread, unaligned with open inputs) the gate captures input
       channel state until every input delivered *n*, then hands it over
       (:meth:`channel_state_complete`); the channel state is uploaded
       (unless nothing was in flight: then no object is written).
    5. When every upload of *n* is done, the acknowledgement goes out — once.

States of a snapshot
    uploading → (awaiting channel state → uploading) → acknowledged, or
    dropped (aborted by the gate or the coordinator, or completed before
    its channel state was final: it then never acknowledges).

Triggers that do not come through a barrier
    A source snapshots (and injects the barrier) when triggered. A subtask
    with inputs that is triggered directly remembers the barrier and
    snapshots it without forwarding when its input ends, unless a barrier of
    it (or a newer one) arrived first. Snapshot ids strictly increase.

Threading
    Everything runs on the task thread except :meth:`_Snapshot.upload_done`,
    which upload threads call; a snapshot's counters are guarded by its lock.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from barrier_runtime.channels import messages
from barrier_runtime.core import faults, metadata, types
from barrier_runtime.state import disk_copies
from barrier_runtime.task import input_gate as gate_mod
from barrier_runtime.task import operators, snapshots, state_chains

log = logging.getLogger(__name__)


class ChainSnapshot(Protocol):
    """The operator chain, as snapshotting sees it."""

    def snapshot_into(self, builder: operators.SnapshotBuilder) -> None:
        """Copy the state of the source reader and of every operator into ``builder``."""


class BarrierOutput(Protocol):
    """The subtask's output channels, as snapshotting sees them."""

    def broadcast(self, item: messages.CancelMarker | types.Barrier) -> None:
        """Append ``item`` to every output channel."""

    def forward_priority(self, barrier: types.Barrier) -> list[snapshots.InFlight]:
        """Put ``barrier`` ahead of queued output; the data it overtook, as channel state."""


class CheckpointServices(Protocol):
    """What the attempt offers: faults, store writes, the upload pool, the coordinator."""

    @property
    def attempt(self) -> int: ...

    @property
    def faults(self) -> faults.FaultInjector: ...

    @property
    def config(self) -> types.CheckpointConfig: ...

    def acknowledge(self, ack: metadata.TaskAcknowledgement) -> None: ...

    def decline(
        self, checkpoint_id: types.CheckpointId, task: metadata.TaskKey, reason: types.FailureReason
    ) -> None: ...

    def submit_upload(
        self, task: metadata.TaskKey, checkpoint_id: types.CheckpointId, upload: Callable[[], None]
    ) -> None: ...

    def write_blob(
        self, barrier: types.Barrier, task: metadata.TaskKey, blob: operators.StateBlob
    ) -> metadata.StateHandle: ...

    def write_channel_state(
        self, barrier: types.Barrier, task: metadata.TaskKey, entries: list[snapshots.InFlight]
    ) -> metadata.StateHandle: ...

    def write_shared(
        self, task: metadata.TaskKey, link: state_chains.Link, step_id: types.StepId
    ) -> metadata.StateHandle: ...

    def prune_local_copies(self, task: metadata.TaskKey, bases: dict[types.StepId, int]) -> None:
        """Task-local recovery: drop local copies older than each step's base."""


@dataclasses.dataclass
class _Snapshot:
    """One snapshot in progress; acknowledges exactly once, after its last upload."""

    barrier: types.Barrier
    task: metadata.TaskKey
    builder: operators.SnapshotBuilder
    started: float
    alignment_duration: float
    send_ack: Callable[[metadata.TaskAcknowledgement], None]
    sync_duration: float = 0.0
    output_state: list[snapshots.InFlight] = dataclasses.field(default_factory=list)
    input_state: list[snapshots.InFlight] = dataclasses.field(default_factory=list)
    _handles: list[metadata.StateHandle] = dataclasses.field(default_factory=list)
    uploaded_size: int = 0
    """Bytes this snapshot wrote (with incremental checkpoints, less than the state's size)."""
    _uploads_left: int = 1
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    _acked: bool = False

    def add_upload(self) -> None:
        with self._lock:
            self._uploads_left += 1

    def upload_done(self, handles: list[metadata.StateHandle]) -> None:
        with self._lock:
            self._handles.extend(handles)
            self._uploads_left -= 1
            ready = self._uploads_left == 0 and not self._acked
            if ready:
                self._acked = True
        if ready:
            self.send_ack(self._ack())

    def _ack(self) -> metadata.TaskAcknowledgement:
        channel = metadata.HandleKind.CHANNEL
        return metadata.TaskAcknowledgement(
            checkpoint_id=self.barrier.checkpoint_id,
            task=self.task,
            state_handles=tuple(self._handles),
            source_positions=self.builder.source_positions,
            sink_transactions=self.builder.sink_transactions,
            sink_records=self.builder.sink_records,
            metrics=metadata.AckMetrics(
                sync_duration=self.sync_duration,
                async_duration=time.monotonic() - self.started,
                alignment_duration=self.alignment_duration,
                state_size=sum(h.size for h in self._handles if h.kind is not channel),
                channel_state_size=sum(h.size for h in self._handles if h.kind is channel),
                uploaded_size=self.uploaded_size,
            ),
        )


class SubtaskCheckpointing:
    """Owner of one subtask's snapshots; implements the gate's ``GateCheckpointing`` port."""

    def __init__(
        self,
        key: metadata.TaskKey,
        services: CheckpointServices,
        chain: ChainSnapshot,
        output: BarrierOutput,
    ) -> None:
        self._key = key
        self._services = services
        self._chain = chain
        self._output = output
        self._chains = state_chains.StateChains() if services.config.incremental else None
        """Keyed states' chains, when checkpoints are incremental (savepoints never are)."""
        self._bases: dict[types.CheckpointId, dict[types.StepId, int]] = {}
        """Per incremental snapshot not yet completed: each step's oldest base."""
        self._last_snapshot = 0
        self._direct_pending: types.Barrier | None = None
        self._awaiting: dict[types.CheckpointId, _Snapshot] = {}
        """Unaligned snapshots whose input channel state the gate still captures."""

    # -- triggers ----------------------------------------------------------------------

    def triggered(self, barrier: types.Barrier, *, source: bool, finished: bool) -> None:
        """The coordinator triggered ``barrier`` at this subtask directly."""
        if barrier.checkpoint_id <= self._last_snapshot:
            return
        if source and not finished:
            self.snapshot(barrier, 0.0, channel_state=False)  # inject the barrier
        elif finished:
            self._snapshot(barrier, 0.0, forward=False, channel_state=False)
        else:
            self._direct_pending = barrier  # snapshot at end of input unless a barrier comes

    def input_finished(self) -> None:
        """The subtask's input ended: snapshot a direct trigger no barrier took care of."""
        pending = self._direct_pending
        if pending is not None and pending.checkpoint_id > self._last_snapshot:
            self._snapshot(pending, 0.0, forward=False, channel_state=False)

    # -- GateCheckpointing ----------------------------------------------------------------

    def snapshot(
        self, barrier: types.Barrier, alignment_duration: float, *, channel_state: bool
    ) -> None:
        self._snapshot(barrier, alignment_duration, forward=True, channel_state=channel_state)

    def channel_state_complete(
        self, checkpoint_id: types.CheckpointId, captured: gate_mod.CapturedInput
    ) -> None:
        snap = self._awaiting.pop(checkpoint_id, None)
        if snap is None:
            return  # no capture was needed, or the checkpoint was dropped meanwhile
        task = self._key
        snap.input_state = [
            snapshots.InFlight.of(task.task_id, side, task.subtask, "input", sender, payload)
            for side, sender, payload in captured
        ]
        self._upload_channel_state(snap)  # Step 4

    def abort(self, checkpoint_id: types.CheckpointId, reason: types.FailureReason) -> None:
        self._awaiting.pop(checkpoint_id, None)
        self._output.broadcast(messages.CancelMarker(checkpoint_id))
        self._services.decline(checkpoint_id, self._key, reason)

    # -- the coordinator's word -------------------------------------------------------------

    def dropped(self, checkpoint_id: types.CheckpointId, *, and_older: bool = False) -> None:
        """``checkpoint_id`` was aborted (or completed, with ``and_older``): stop waiting for it."""
        for cid in list(self._awaiting):
            if cid == checkpoint_id or (and_older and cid < checkpoint_id):
                del self._awaiting[cid]
        bases = self._bases.pop(checkpoint_id, None)
        if and_older:
            for cid in [c for c in self._bases if c < checkpoint_id]:
                del self._bases[cid]
            if bases:  # completed: nothing older than its bases is read again
                self._services.prune_local_copies(self._key, bases)

    # -- the snapshot ------------------------------------------------------------------------

    def _snapshot(
        self,
        barrier: types.Barrier,
        alignment_duration: float,
        *,
        forward: bool,
        channel_state: bool,
    ) -> None:
        started = time.monotonic()
        n = barrier.checkpoint_id
        self._fault(faults.FaultPoint.SNAPSHOT, n)  # Step 1
        incremental = barrier.kind is types.CheckpointKind.CHECKPOINT
        builder = operators.SnapshotBuilder(
            n, self._key.subtask, chains=self._chains if incremental else None
        )
        self._chain.snapshot_into(builder)
        if builder.chained:
            bases: dict[types.StepId, int] = {}
            for chained in builder.chained:
                base = int(chained.references[0].as_of)
                bases[chained.step_id] = min(base, bases.get(chained.step_id, base))
            self._bases[n] = bases
        snap = _Snapshot(
            barrier, self._key, builder, started, alignment_duration, self._services.acknowledge
        )
        if forward:  # Step 2
            if barrier.unaligned:
                snap.output_state = self._output.forward_priority(barrier)
            else:
                self._output.broadcast(barrier)
        snap.sync_duration = time.monotonic() - started
        self._last_snapshot = n
        if channel_state:
            snap.add_upload()
            self._awaiting[n] = snap
        elif barrier.unaligned and snap.output_state:
            snap.add_upload()
            self._upload_channel_state(snap)
        self._services.submit_upload(self._key, n, lambda: self._upload_state(snap))  # Step 3
        for chained in builder.chained:
            if chained.background:
                upload = functools.partial(self._upload_base, chained.background, chained.step_id)
                self._services.submit_upload(self._key, n, upload)

    def _upload_state(self, snap: _Snapshot) -> None:
        """On the upload pool. If it fails, the links it was to write are broken."""
        try:
            self._write_state(snap)
        except BaseException:
            for chained in snap.builder.chained:
                for link in chained.uploads:
                    if not link.settled:
                        link.failed()
            raise

    def _write_state(self, snap: _Snapshot) -> None:
        self._fault(faults.FaultPoint.UPLOAD, snap.barrier.checkpoint_id)
        handles = [
            self._services.write_blob(snap.barrier, self._key, blob) for blob in snap.builder.blobs
        ]
        written = sum(h.size for h in handles)
        for chained in snap.builder.chained:
            for link in chained.uploads:
                written += self._upload_link(link, chained.step_id).size
        snap.uploaded_size = written
        handles += [link.handle() for c in snap.builder.chained for link in c.references]
        snap.upload_done(handles)  # Step 5

    def _upload_link(self, link: state_chains.Link, step_id: types.StepId) -> metadata.StateHandle:
        """Write one object of a chain and settle it (a failure breaks the chain)."""
        try:
            handle = self._services.write_shared(self._key, link, step_id)
        except BaseException:
            link.failed()
            raise
        link.succeeded(handle)
        return handle

    def _upload_base(self, links: tuple[state_chains.Link, ...], step_id: types.StepId) -> None:
        """A background base, its objects one after the other (one encoding in memory at a
        time); its failure fails no checkpoint (the chain keeps its old base)."""
        for i, link in enumerate(links):
            try:
                self._upload_link(link, step_id)
            except Exception as exc:
                ended = isinstance(exc, disk_copies.CopyClosedError)  # the subtask ended first
                log.log(
                    logging.INFO if ended else logging.WARNING,
                    "%s could not upload a new base of %s (tried later): %s",
                    self._key,
                    step_id,
                    exc,
                )
                for rest in links[i + 1 :]:
                    rest.failed()
                return

    def _upload_channel_state(self, snap: _Snapshot) -> None:
        entries = [*snap.input_state, *snap.output_state]

        def upload() -> None:
            if not entries:  # nothing was in flight: no object to write, nothing to restore
                snap.upload_done([])
                return
            snap.upload_done([self._services.write_channel_state(snap.barrier, self._key, entries)])

        self._services.submit_upload(self._key, snap.barrier.checkpoint_id, upload)

    def _fault(self, point: faults.FaultPoint, checkpoint_id: types.CheckpointId) -> None:
        self._services.faults.check(
            point,
            task=self._key.task_id,
            subtask=self._key.subtask,
            attempt=self._services.attempt,
            checkpoint_id=checkpoint_id,
        )
