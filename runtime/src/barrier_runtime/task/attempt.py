"""One execution attempt of a job: its subtasks, channels and shared services.

An attempt starts from a restore point (or from scratch), runs until every
subtask finished or anything fails, and is then torn down completely. The
driver's restart loop creates a fresh attempt after each failure; nothing
survives from one attempt to the next except the checkpoint store, the
coordinator (which lives in the driver) and the sinks' committed output.

An :class:`AttemptContext` serves the subtasks one process hosts: every
subtask of the job in the in-process executor, the subtasks of one slice on a
Spark worker (``tasks`` names them; ``acknowledge``/``decline`` then travel to
the driver over the network). :func:`build_subtasks` wires their channels:
in-memory :class:`~barrier_runtime.task.channel.LocalChannel` between
subtasks of the same process, ``remote`` endpoints to other slices.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from barrier_runtime.api import sources
from barrier_runtime.core import faults, layout, metadata, types
from barrier_runtime.core.clock import Clock
from barrier_runtime.graph import plan as plan_mod
from barrier_runtime.state import backends
from barrier_runtime.storage import checkpoint_store, local_copies
from barrier_runtime.storage import errors as storage_errors
from barrier_runtime.task import channel as channel_mod
from barrier_runtime.task import operators, snapshots, state_chains
from barrier_runtime.task import output as output_mod
from barrier_runtime.task import subtask as subtask_mod

log = logging.getLogger(__name__)


class AttemptStopped(Exception):
    """Raised inside subtask threads when their attempt is being torn down."""


class AttemptContext:
    """Services shared by the subtasks of one attempt; methods are thread-safe."""

    def __init__(
        self,
        *,
        plan: plan_mod.ExecutionPlan,
        config: types.CheckpointConfig,
        clock: Clock,
        store: checkpoint_store.CheckpointStore,
        fault_injector: faults.FaultInjector,
        attempt: int,
        restore_point: metadata.CheckpointMetadata | None,
        acknowledge: Callable[[metadata.TaskAcknowledgement], object],
        decline: Callable[[types.CheckpointId, metadata.TaskKey, types.FailureReason], None],
        tasks: Iterable[metadata.TaskKey] | None = None,
        on_task_finished: Callable[[metadata.TaskKey], None] | None = None,
    ) -> None:
        """``tasks``: the subtasks hosted here (default: all of the plan's)."""
        self.plan = plan
        self.config = config
        self.clock = clock
        self.store = store
        self.faults = fault_injector
        self.attempt = attempt
        self.restore_point = restore_point
        self._acknowledge = acknowledge
        self._decline = decline
        self.stopping = threading.Event()
        self.failure: BaseException | None = None
        self.failed_task: metadata.TaskKey | None = None
        self._lock = threading.Lock()
        self._finished: set[metadata.TaskKey] = set()
        self.tasks = frozenset(plan.task_keys() if tasks is None else tasks)
        self._on_task_finished = on_task_finished
        self.all_finished = threading.Event()
        self.changed = threading.Condition()
        self._uploads = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix=f"upload-a{attempt}"
        )
        self._channel_state_cache: list[snapshots.InFlight] | None = None
        self.local_copies = (
            local_copies.LocalCopies(local_copies.default_root(store.job_path))
            if config.incremental and config.local_recovery
            else None
        )
        """Task-local recovery's copies of shared objects on this host (when on)."""
        self.read_locally = 0
        """Objects a restore read from :attr:`local_copies` instead of the store."""
        self.signals: list[channel_mod.Signal] = []
        self._worker_sources: dict[tuple[int, int], sources.Source] = {}

    def worker_source(self, source: sources.Source, slice_index: int) -> sources.Source:
        """``source`` as the worker hosting ``slice_index`` holds it (:meth:`Source.for_worker`).

        One copy per source object and slice for the attempt: the subtasks of one
        slice share it as on a Spark worker, other slices (hosted in this process
        by the in-process executor) have their own.
        """
        with self._lock:
            key = (id(source), slice_index)
            held = self._worker_sources.get(key)
            if held is None:
                self._worker_sources[key] = held = source.for_worker()
            return held

    # -- failure and progress ----------------------------------------------------------

    def fail(self, exc: BaseException, task: metadata.TaskKey | None = None) -> None:
        if isinstance(exc, AttemptStopped):
            return
        with self._lock:
            if self.failure is None:
                self.failure = exc
                self.failed_task = task
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        for signal in self.signals:
            signal.notify()
        with self.changed:
            self.changed.notify_all()

    def wake(self) -> None:
        """Wake whoever waits on :attr:`changed` to look again."""
        with self.changed:
            self.changed.notify_all()

    def check_running(self) -> None:
        if self.stopping.is_set():
            raise AttemptStopped()

    def task_finished(self, task: metadata.TaskKey) -> None:
        with self._lock:
            self._finished.add(task)
            done = len(self._finished) == len(self.tasks)
        if self._on_task_finished is not None:
            self._on_task_finished(task)
        if done:
            self.all_finished.set()
            with self.changed:
                self.changed.notify_all()

    # -- checkpoint traffic ---------------------------------------------------------------

    def acknowledge(self, ack: metadata.TaskAcknowledgement) -> None:
        if not self.stopping.is_set():
            self._acknowledge(ack)

    def decline(
        self, checkpoint_id: types.CheckpointId, task: metadata.TaskKey, reason: types.FailureReason
    ) -> None:
        if not self.stopping.is_set():
            self._decline(checkpoint_id, task, reason)

    def submit_upload(
        self,
        task: metadata.TaskKey,
        checkpoint_id: types.CheckpointId,
        upload: Callable[[], None],
    ) -> None:
        """Run ``upload`` (one part of ``task``'s snapshot ``checkpoint_id``) on the upload pool."""

        def run() -> None:
            try:
                if not self.stopping.is_set():
                    upload()
            except storage_errors.StorageError as exc:
                # Storage trouble fails this checkpoint, not the job (as Flink declines):
                # the coordinator counts it toward the tolerable checkpoint failures.
                log.warning(
                    "checkpoint %d: %s could not upload its state: %s",
                    checkpoint_id,
                    task,
                    exc,
                )
                self.decline(checkpoint_id, task, types.FailureReason.STORAGE_FAILURE)
            except BaseException as exc:
                self.fail(exc, task)

        self._uploads.submit(run)

    def write_blob(
        self, barrier: types.Barrier, task: metadata.TaskKey, blob: operators.StateBlob
    ) -> metadata.StateHandle:
        """Write one state blob of ``task``'s snapshot of ``barrier`` (on an upload thread)."""
        return self.store.write_state(
            barrier.checkpoint_id,
            barrier.kind,
            blob.relpath,
            blob.data,
            step_id=blob.step_id,
            subtask=task.subtask,
            handle_kind=blob.kind,
            key_group_start=blob.key_group_start,
            key_group_end=blob.key_group_end,
        )

    def write_shared(
        self, task: metadata.TaskKey, link: state_chains.Link, step_id: types.StepId
    ) -> metadata.StateHandle:
        """Write one object of an incremental chain under ``shared/`` (on an upload thread)."""
        data = link.encode()
        handle = self.store.write_shared(
            data,
            step_id=step_id,
            subtask=task.subtask,
            handle_kind=metadata.HandleKind.KEYED,
            key_group_start=link.start,
            key_group_end=link.end,
            as_of=link.as_of,
            delta=link.delta,
        )
        if self.local_copies is not None:
            self.local_copies.keep(handle.key, data)
        return handle

    def prune_local_copies(self, task: metadata.TaskKey, bases: dict[types.StepId, int]) -> None:
        """Drop ``task``'s local copies older than each step's base in ``bases`` (a completed
        checkpoint's), on the upload pool."""
        copies = self.local_copies
        if copies is None or not bases:
            return

        def prune() -> None:
            for step_id, before in bases.items():
                copies.prune(step_id=step_id, subtask=task.subtask, before=before)

        self._uploads.submit(prune)

    def write_channel_state(
        self, barrier: types.Barrier, task: metadata.TaskKey, entries: list[snapshots.InFlight]
    ) -> metadata.StateHandle:
        """Write ``task``'s channel state of ``barrier`` (on an upload thread)."""
        blob = snapshots.encode_channel_state(entries)
        return self.store.write_state(
            barrier.checkpoint_id,
            barrier.kind,
            f"channel-state/{task.task_id}-{task.subtask}.bin",
            blob,
            step_id=types.StepId(task.task_id),
            subtask=task.subtask,
            handle_kind=metadata.HandleKind.CHANNEL,
        )

    # -- restore ---------------------------------------------------------------------------

    def read_state(self, handle: metadata.StateHandle) -> bytes:
        """A state object's bytes: a verified local copy if there is one (task-local
        recovery), else the store's (then kept locally too)."""
        copies = self.local_copies
        if copies is None or not handle.key.startswith(f"{layout.SHARED_DIR}/"):
            return self.store.read_state(handle)
        data = copies.read(handle)
        if data is not None:
            with self._lock:
                self.read_locally += 1
            return data
        data = self.store.read_state(handle)
        copies.keep(handle.key, data)
        return data

    def keyed_states(self, task: str, index: int) -> backends.KeyedStates:
        root = local_copies.default_root(self.store.job_path)
        return backends.for_subtask(
            self.config.state_backend, root, self.attempt, f"{task}-{index}"
        )

    def channel_state(self, meta: metadata.CheckpointMetadata) -> list[snapshots.InFlight]:
        with self._lock:
            if self._channel_state_cache is None:
                entries: list[snapshots.InFlight] = []
                for h in meta.state_handles:
                    if h.kind is metadata.HandleKind.CHANNEL:
                        entries.extend(snapshots.decode_channel_state(self.store.read_state(h)))
                self._channel_state_cache = entries
            return self._channel_state_cache

    def close(self) -> None:
        self._uploads.shutdown(wait=True, cancel_futures=True)


class RemoteChannels(Protocol):
    """Endpoints of channels to and from subtasks hosted in other processes (slices)."""

    def input(
        self, channel_id: int, sender_slice: int, receiver: channel_mod.Signal, capacity: int
    ) -> channel_mod.InputChannel: ...

    def output(
        self, channel_id: int, receiver_slice: int, sender: channel_mod.Signal
    ) -> channel_mod.OutputChannel: ...


def build_subtasks(
    ctx: AttemptContext,
    channel_capacity: int,
    *,
    hosted_slice: int | None = None,
    remote: RemoteChannels | None = None,
) -> list[subtask_mod.Subtask]:
    """Create the subtasks of the plan with their channels wired.

    Without ``hosted_slice`` every subtask is created here with in-memory
    channels. With it, only the subtasks of that slice are, and channels from
    or to other slices come from ``remote``. Channels are numbered in one
    fixed order of the plan, so every slice gives a channel the same id.
    """
    plan = ctx.plan
    p = plan.parallelism

    def here(index: int) -> bool:
        return hosted_slice is None or index == hosted_slice

    signals = {key: channel_mod.Signal() for key in plan.task_keys() if here(key.subtask)}
    ctx.signals = list(signals.values())
    inputs: dict[metadata.TaskKey, list[channel_mod.InputChannel]] = {k: [] for k in signals}
    outputs: dict[metadata.TaskKey, output_mod.Outputs] = {k: {} for k in signals}
    channel_id = 0
    for task in plan.tasks:
        for index in range(p):
            receiver = metadata.TaskKey(task.task_id, index)
            for spec in task.channels(index, p):
                channel_id += 1
                sender = metadata.TaskKey(spec.edge.upstream_task, spec.upstream_subtask)
                route = (spec.edge.upstream_step, types.StepId(task.steps[0]), spec.edge.side)
                if here(index) and here(sender.subtask):
                    chan = channel_mod.LocalChannel(
                        channel_capacity, signals[sender], signals[receiver]
                    )
                    inputs[receiver].append(chan)
                    outputs[sender].setdefault(route, {})[index] = chan
                elif here(index):
                    assert remote is not None
                    inputs[receiver].append(
                        remote.input(
                            channel_id, sender.subtask, signals[receiver], channel_capacity
                        )
                    )
                elif here(sender.subtask):
                    assert remote is not None
                    outputs[sender].setdefault(route, {})[index] = remote.output(
                        channel_id, index, signals[sender]
                    )
    return [
        subtask_mod.Subtask(ctx, task, i, inputs[key], outputs[key], signals[key])
        for task in plan.tasks
        for i in range(p)
        for key in [metadata.TaskKey(task.task_id, i)]
        if here(i)
    ]
