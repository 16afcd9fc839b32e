"""The checkpoint ``_metadata`` document and the acknowledgements it is built from.

A checkpoint exists only once its ``_metadata`` object exists and parses: it is
the commit point, written last (with a conditional put) after every state
object it references has been uploaded. The document is JSON:

.. code-block:: json

    {"format_version": 3, "checkpoint_id": 42, "kind": "checkpoint",
     "trigger_time": 1700000000.1, "completion_time": 1700000000.3,
     "fingerprint": {"step_ids": ["inp", "count", "out"], "max_parallelism": 128,
                     "parallelism": 3},
     "state_handles": [{"step_id": "count", "subtask": 0, "key": "checkpoints/...",
                        "size": 812, "sha256": "...", "kind": "keyed",
                        "key_group_start": 0, "key_group_end": 42}],
     "source_positions": {"inp": {"part-0": 1000}},
     "sink_transactions": {"out": [{"...": "..."}]},
     "records_published": {"out": 5000}}

``records_published`` counts, per sink step, the records the job has published up
to and including this checkpoint, over all attempts and runs (absent in documents
written before it existed: read as empty).

Handle ``key`` values are relative to the job's root in the store.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from barrier_runtime.core import types

FORMAT_VERSION = 3
"""Bumped whenever restoring an older checkpoint would misplace state. 2: integer keys
hash to key groups with SplitMix64 (vectorized), so version-1 key groups of int keys differ.
3: keyed state and channel state hold the data-only value codec / Arrow IPC instead of pickle,
so a version-2 checkpoint is refused here rather than unpickled."""

Json = Any
"""A JSON-serialisable value (what sources and sinks put into snapshots)."""


class CorruptMetadataError(ValueError):
    """A ``_metadata`` document exists but cannot be understood."""


class HandleKind(enum.Enum):
    KEYED = "keyed"
    """Keyed operator state for a contiguous key-group range."""
    OPERATOR = "operator"
    """Non-keyed operator state of one subtask."""
    CHANNEL = "channel"
    """In-flight records captured by an unaligned checkpoint."""


@dataclass(frozen=True, slots=True, order=True)
class TaskKey:
    """One parallel instance (subtask) of one task."""

    task_id: types.TaskId
    subtask: int

    def __str__(self) -> str:
        return f"{self.task_id}#{self.subtask}"


@dataclass(frozen=True, slots=True)
class StateHandle:
    """A pointer to one uploaded state object, with what is needed to verify it."""

    step_id: types.StepId
    subtask: int
    key: str
    size: int
    sha256: str
    kind: HandleKind = HandleKind.KEYED
    key_group_start: int | None = None
    key_group_end: int | None = None
    """Inclusive end of the key-group range (keyed and channel state)."""
    as_of: int | None = None
    """Of an incremental checkpoint's object in ``shared/``: the checkpoint whose barrier
    its state is as of (the newest checkpoint it holds changes of)."""
    delta: bool = False
    """Of an incremental checkpoint's object: it holds the changes since the previous
    object of its chain (applied, oldest first, after the chain's base)."""

    @property
    def restore_order(self) -> tuple[bool, int]:
        """Sorts a step's keyed handles the way a restore applies them: bases, then deltas
        oldest first."""
        return (self.delta, self.as_of or 0)

    def overlaps(self, start: int, end: int) -> bool:
        """Whether this handle's key groups intersect ``[start, end]`` (inclusive)."""
        if self.key_group_start is None or self.key_group_end is None:
            return False
        return self.key_group_start <= end and start <= self.key_group_end

    def for_storage(self) -> dict[str, Json]:
        return {
            "step_id": self.step_id,
            "subtask": self.subtask,
            "key": self.key,
            "size": self.size,
            "sha256": self.sha256,
            "kind": self.kind.value,
            "key_group_start": self.key_group_start,
            "key_group_end": self.key_group_end,
            **({} if self.as_of is None else {"as_of": self.as_of}),
            **({"delta": True} if self.delta else {}),
        }

    @classmethod
    def from_storage(cls, raw: Mapping[str, Json]) -> StateHandle:
        return cls(
            step_id=types.StepId(str(raw["step_id"])),
            subtask=int(raw["subtask"]),
            key=str(raw["key"]),
            size=int(raw["size"]),
            sha256=str(raw["sha256"]),
            kind=HandleKind(raw.get("kind", "keyed")),
            key_group_start=_opt_int(raw.get("key_group_start")),
            key_group_end=_opt_int(raw.get("key_group_end")),
            as_of=_opt_int(raw.get("as_of")),
            delta=bool(raw.get("delta", False)),
        )


@dataclass(frozen=True, slots=True)
class AckMetrics:
    """Timings and sizes a subtask reports with its acknowledgement (seconds, bytes)."""

    sync_duration: float = 0.0
    async_duration: float = 0.0
    alignment_duration: float = 0.0
    state_size: int = 0
    channel_state_size: int = 0
    uploaded_size: int = 0
    """Bytes written for this snapshot: its state size, unless incremental checkpoints reuse
    objects of earlier ones."""


@dataclass(frozen=True, slots=True)
class TaskAcknowledgement:
    """A subtask's confirmation that its part of checkpoint ``checkpoint_id`` is durable."""

    checkpoint_id: types.CheckpointId
    task: TaskKey
    state_handles: tuple[StateHandle, ...] = ()
    source_positions: Mapping[types.StepId, Mapping[str, Json]] = field(default_factory=dict)
    """Per source step, the resume position of every partition this subtask read."""
    sink_transactions: Mapping[types.StepId, tuple[Json, ...]] = field(default_factory=dict)
    """Per sink step, the pre-committed transactions to commit once the checkpoint completes."""
    metrics: AckMetrics = AckMetrics()
    sink_records: Mapping[types.StepId, int] = field(default_factory=dict)
    """Per sink step, the records this subtask wrote since its attempt started, up to this
    snapshot: all of them are published when the checkpoint completes."""


@dataclass(frozen=True, slots=True)
class JobFingerprint:
    """What must match for a checkpoint to be restorable into a job."""

    step_ids: tuple[types.StepId, ...]
    max_parallelism: int
    parallelism: int

    def for_storage(self) -> dict[str, Json]:
        return {
            "step_ids": list(self.step_ids),
            "max_parallelism": self.max_parallelism,
            "parallelism": self.parallelism,
        }

    @classmethod
    def from_storage(cls, raw: Mapping[str, Json]) -> JobFingerprint:
        return cls(
            step_ids=tuple(types.StepId(str(s)) for s in raw["step_ids"]),
            max_parallelism=int(raw["max_parallelism"]),
            parallelism=int(raw["parallelism"]),
        )


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """The commit record of one completed checkpoint or savepoint."""

    checkpoint_id: types.CheckpointId
    kind: types.CheckpointKind
    trigger_time: float
    completion_time: float
    fingerprint: JobFingerprint
    state_handles: tuple[StateHandle, ...] = ()
    source_positions: Mapping[types.StepId, Mapping[str, Json]] = field(default_factory=dict)
    sink_transactions: Mapping[types.StepId, tuple[Json, ...]] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    records_published: Mapping[types.StepId, int] = field(default_factory=dict)
    """Per sink step, the records published up to and including this checkpoint, over all
    attempts and runs of the job."""

    @property
    def total_size(self) -> int:
        return sum(h.size for h in self.state_handles)

    @classmethod
    def from_acknowledgements(
        cls,
        checkpoint_id: types.CheckpointId,
        kind: types.CheckpointKind,
        trigger_time: float,
        completion_time: float,
        fingerprint: JobFingerprint,
        acks: Sequence[TaskAcknowledgement],
        published_before: Mapping[types.StepId, int] | None = None,
    ) -> CheckpointMetadata:
        """Merge every subtask's acknowledgement into one document.

        ``published_before`` is what the checkpoint the attempt restored had published
        (the acknowledgements count what the attempt wrote since)."""
        handles: list[StateHandle] = []
        positions: dict[types.StepId, dict[str, Json]] = {}
        txns: dict[types.StepId, list[Json]] = {}
        published = dict(published_before or {})
        for ack in sorted(acks, key=lambda a: a.task):
            if ack.checkpoint_id != checkpoint_id:
                raise ValueError(
                    f"acknowledgement of checkpoint {ack.checkpoint_id} "
                    f"mixed into checkpoint {checkpoint_id}"
                )
            handles.extend(ack.state_handles)
            for step, parts in ack.source_positions.items():
                positions.setdefault(step, {}).update(parts)
            for step, step_txns in ack.sink_transactions.items():
                txns.setdefault(step, []).extend(step_txns)
            for step, n in ack.sink_records.items():
                published[step] = published.get(step, 0) + n
        return cls(
            checkpoint_id=checkpoint_id,
            kind=kind,
            trigger_time=trigger_time,
            completion_time=completion_time,
            fingerprint=fingerprint,
            state_handles=tuple(handles),
            source_positions=positions,
            sink_transactions={step: tuple(t) for step, t in txns.items()},
            records_published=published,
        )

    def to_json(self) -> bytes:
        doc = {
            "format_version": self.format_version,
            "checkpoint_id": self.checkpoint_id,
            "kind": self.kind.value,
            "trigger_time": self.trigger_time,
            "completion_time": self.completion_time,
            "fingerprint": self.fingerprint.for_storage(),
            "state_handles": [h.for_storage() for h in self.state_handles],
            "source_positions": {k: dict(v) for k, v in self.source_positions.items()},
            "sink_transactions": {k: list(v) for k, v in self.sink_transactions.items()},
            "records_published": dict(self.records_published),
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> CheckpointMetadata:
        try:
            doc = json.loads(data)
            version = int(doc["format_version"])
            if version != FORMAT_VERSION:
                raise CorruptMetadataError(
                    f"unsupported metadata format version {version} (this runtime reads "
                    f"{FORMAT_VERSION}): restore it with the release that wrote it"
                )
            return cls(
                checkpoint_id=types.CheckpointId(int(doc["checkpoint_id"])),
                kind=types.CheckpointKind(doc["kind"]),
                trigger_time=float(doc["trigger_time"]),
                completion_time=float(doc["completion_time"]),
                fingerprint=JobFingerprint.from_storage(doc["fingerprint"]),
                state_handles=tuple(StateHandle.from_storage(h) for h in doc["state_handles"]),
                source_positions={
                    types.StepId(k): dict(v) for k, v in doc["source_positions"].items()
                },
                sink_transactions={
                    types.StepId(k): tuple(v) for k, v in doc["sink_transactions"].items()
                },
                format_version=version,
                records_published={
                    types.StepId(k): int(v) for k, v in doc.get("records_published", {}).items()
                },
            )
        except CorruptMetadataError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptMetadataError(f"unreadable checkpoint metadata: {exc}") from exc


def _opt_int(value: Json) -> int | None:
    return None if value is None else int(value)
