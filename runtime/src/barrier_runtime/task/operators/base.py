"""The operator contract and what operators hand to a snapshot.

An operator is one step of a chain on one subtask. It receives batches
through :meth:`Operator.process` and hands its output to ``emit``: the
:class:`~barrier_runtime.task.chain.OperatorChain` wires that, once when it
builds the chain, to a chained output that calls the next operator directly
or to the network output at the chain's end. At a snapshot each operator adds
what it owns to a :class:`SnapshotBuilder`: keyed state as an Arrow blob for
its key-group range, sink transactions (pre-committed now) and source
positions. A blob's payload is either its bytes or, when serialising costs
more than copying, a function that serialises a copy taken now:
:attr:`StateBlob.data` calls it on the upload thread, after the barrier has
gone on.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from barrier_runtime import task_failure
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.api import event_time, steps
from barrier_runtime.core import metadata, types
from barrier_runtime.task import state_chains

Emit = Callable[[batch_mod.Batch], None]
CommitHook = Callable[[types.CheckpointId], None]
Reject = Callable[[object, BaseException], None]
"""Takes a record the user's function raised on (``on_error`` skip or dead-letter)."""


@dataclass(frozen=True, slots=True)
class StateBlob:
    relpath: str
    payload: bytes | Callable[[], bytes]
    """The bytes, or a function returning them that does not depend on later processing."""
    step_id: types.StepId
    kind: metadata.HandleKind
    key_group_start: int | None = None
    key_group_end: int | None = None

    @property
    def data(self) -> bytes:
        """The bytes to upload (a deferred payload is serialised by this call)."""
        return self.payload if isinstance(self.payload, bytes) else self.payload()


@dataclass
class SnapshotBuilder:
    """Collects the synchronous part of one subtask's snapshot."""

    checkpoint_id: types.CheckpointId
    subtask: int
    blobs: list[StateBlob] = field(default_factory=list)
    source_positions: dict[types.StepId, dict[str, Any]] = field(default_factory=dict)
    sink_transactions: dict[types.StepId, tuple[Any, ...]] = field(default_factory=dict)
    sink_records: dict[types.StepId, int] = field(default_factory=dict)
    """Per sink step: records written since the attempt started (published with the checkpoint)."""
    chains: state_chains.StateChains | None = None
    """The subtask's chains, when this snapshot is an incremental checkpoint."""
    chained: list[state_chains.ChainSnapshot] = field(default_factory=list)
    """Keyed states snapshotted into their chains (instead of :attr:`blobs`)."""


class Operator(abc.ABC):
    def __init__(self, step_id: types.StepId, emit: Emit) -> None:
        self.step_id = step_id
        self.emit = emit

    @abc.abstractmethod
    def process(self, batch: batch_mod.Batch, side: int) -> None: ...

    def snapshot(self, builder: SnapshotBuilder) -> None:  # noqa: B027 - stateless default
        """Add this operator's state to ``builder`` (stateless operators add nothing)."""

    def checkpoint_completed(self, checkpoint_id: types.CheckpointId) -> None:  # noqa: B027
        """React to the completion of a checkpoint (sinks commit)."""

    def on_processing_time(self, now_ms: int) -> int | None:
        """Fire processing-time timers due at ``now_ms``; when the next one is due (ms)."""
        return None

    def on_watermark(self, watermark: int) -> None:  # noqa: B027 - no event-time timers
        """The step's input watermark rose to ``watermark``.

        An operator with event-time timers fires the due ones here and emits
        their output; the chain forwards the watermark after this returns, so
        that output precedes it downstream.
        """

    def watermark_restored(self, watermark: int) -> None:  # noqa: B027 - no event time
        """Resume at ``watermark``, the step's input watermark in the restored checkpoint.

        Called before the keyed state is restored. Nothing fires: what was due
        fired before the checkpoint. An operator that keeps a watermark takes
        it over, so a record late before the failure is late after it.
        """

    def close(self) -> None:  # noqa: B027
        """Release resources."""

    def event_times(
        self, batch: batch_mod.Batch, assigner: event_time.Timestamps
    ) -> npt.NDArray[np.int64]:
        """The event time (ms) of each record; a record without one fails this step."""
        try:
            return event_time.timestamps_of(batch, assigner)
        except event_time.EventTimeError as exc:
            raise task_failure.UserFunctionError(self.step_id, exc.record, exc) from exc


class StatefulOperator(Operator):
    """An operator with keyed state, restored from the handles of its key-group range."""

    @abc.abstractmethod
    def restore(self, blobs: Iterable[bytes]) -> None:
        """Load the state rows of ``blobs`` that fall into this subtask's key-group range."""


def add_keyed_state(
    builder: SnapshotBuilder,
    step_id: types.StepId,
    state: state_chains.TrackedState,
    suffix: str = "",
) -> None:
    """Snapshot a keyed state (e.g. :class:`~barrier_runtime.state.keyed.KeyedState`): copied
    now, serialised on the upload thread; whole into the checkpoint's directory, or into its
    chain when the checkpoint is incremental. ``suffix`` tells a step's states apart."""
    relpath = f"{step_id}/{builder.subtask}{suffix}.arrow"
    if builder.chains is not None:
        chained = builder.chains.snapshot(builder.checkpoint_id, state, step_id, relpath)
        builder.chained.append(chained)
        return
    parts = state_chains.parts_of(state.snapshot_copy(step_id))
    for i, part in enumerate(parts):
        name = relpath if len(parts) == 1 else f"{step_id}/{builder.subtask}{suffix}-{i}.arrow"
        builder.blobs.append(
            StateBlob(
                name,
                part.encode,
                step_id,
                metadata.HandleKind.KEYED,
                part.start,
                part.end,
            )
        )


def key_fn_of(inp: steps.Input) -> steps.KeyFn:
    """The key function of a keyed step's input (the graph gives every keyed input one)."""
    if inp.key_fn is None:
        raise ValueError(f"keyed step input from {inp.step_id!r} has no key function")
    return inp.key_fn
