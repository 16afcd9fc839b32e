"""Where checkpoints live inside a job's root, and what a scan of it found (pure, no I/O).

::

    {job}/checkpoints/chk-0000000042/_metadata      commit point, written last
    {job}/checkpoints/chk-0000000042/{step}/{n}.arrow
    {job}/shared/{step}/{sha256}                    content-addressed, shared by checkpoints
    {job}/savepoints/sp-0000000043/…                self-contained, never deleted by retention

Keys in this module are relative to the job root. Checkpoints and savepoints
share one id sequence (the coordinator's), so an id names at most one of them.

>>> ref = CheckpointRef(42, types.CheckpointKind.CHECKPOINT)
>>> ref.directory, ref.metadata_key
('checkpoints/chk-0000000042', 'checkpoints/chk-0000000042/_metadata')
>>> parse_member("savepoints/sp-0000000007/count/0.arrow")
(CheckpointRef(checkpoint_id=7, kind=<CheckpointKind.SAVEPOINT: 'savepoint'>), 'count/0.arrow')
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from barrier_runtime.core import metadata as md
from barrier_runtime.core import types

METADATA_NAME = "_metadata"
SHARED_DIR = "shared"
_DIRS = {
    types.CheckpointKind.CHECKPOINT: ("checkpoints", "chk"),
    types.CheckpointKind.SAVEPOINT: ("savepoints", "sp"),
}
KIND_DIRS = tuple(top for top, _ in _DIRS.values())
_MEMBER = re.compile(r"^(checkpoints/chk|savepoints/sp)-(\d+)/(.+)$")
_REFERENCE = re.compile(
    r"^(?:(.*?)/)??(?:(?:checkpoints|savepoints)/)?(chk|sp)-(\d+)(?:/_metadata)?/*$"
)


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """Names one checkpoint or savepoint directory."""

    checkpoint_id: int
    kind: types.CheckpointKind

    @classmethod
    def of(cls, metadata: md.CheckpointMetadata) -> CheckpointRef:
        return cls(int(metadata.checkpoint_id), metadata.kind)

    @property
    def directory(self) -> str:
        top, short = _DIRS[self.kind]
        return f"{top}/{short}-{self.checkpoint_id:010d}"

    @property
    def metadata_key(self) -> str:
        return f"{self.directory}/{METADATA_NAME}"

    def __str__(self) -> str:
        return f"{self.kind.value} {self.checkpoint_id}"


@dataclass(frozen=True, slots=True)
class RejectedCheckpoint:
    """A checkpoint that exists (its ``_metadata`` does) but cannot be restored, and why."""

    ref: CheckpointRef
    reason: str

    def __str__(self) -> str:
        return f"{self.ref} ({self.reason})"


@dataclass(frozen=True, slots=True)
class Inventory:
    """What one scan of a job root found."""

    dirs: Mapping[CheckpointRef, tuple[str, ...]]
    """Every checkpoint/savepoint directory seen, with the (job-relative) keys inside it."""
    completed: tuple[md.CheckpointMetadata, ...] = ()
    """Parsed ``_metadata`` documents, ascending by id."""
    rejected: tuple[RejectedCheckpoint, ...] = ()
    """Directories whose ``_metadata`` exists but does not parse or does not match."""

    @property
    def torn(self) -> tuple[CheckpointRef, ...]:
        """Directories without a usable commit record: abandoned or still being written."""
        settled = {CheckpointRef.of(m) for m in self.completed}
        settled.update(r.ref for r in self.rejected)
        return tuple(sorted((r for r in self.dirs if r not in settled), key=sort_key))

    @property
    def highest_id(self) -> int:
        return max((r.checkpoint_id for r in self.dirs), default=0)

    def with_committed(self, metadata: md.CheckpointMetadata) -> Inventory:
        """What a scan would find once ``metadata`` is committed: its directory holds its
        ``_metadata`` and the objects it references inside it (besides what was there)."""
        ref = CheckpointRef.of(metadata)
        inside = {h.key for h in metadata.state_handles if h.key.startswith(f"{ref.directory}/")}
        keys = {*self.dirs.get(ref, ()), *inside, ref.metadata_key}
        others = [m for m in self.completed if CheckpointRef.of(m) != ref]
        completed = sorted([*others, metadata], key=lambda m: sort_key(CheckpointRef.of(m)))
        return Inventory({**self.dirs, ref: tuple(sorted(keys))}, tuple(completed), self.rejected)

    def without(self, deleted: Collection[str]) -> Inventory:
        """What a scan would find once the ``deleted`` keys are gone: a directory whose
        ``_metadata`` went is no longer completed (nor rejected), an emptied one is gone.

        >>> chk = CheckpointRef(1, types.CheckpointKind.CHECKPOINT)
        >>> inventory = Inventory({chk: (chk.metadata_key, f"{chk.directory}/s/0")})
        >>> inventory.without([chk.metadata_key]).torn, inventory.without(inventory.dirs[chk]).dirs
        ((CheckpointRef(checkpoint_id=1, kind=<CheckpointKind.CHECKPOINT: 'checkpoint'>),), {})
        """
        gone = set(deleted)
        dirs = {ref: tuple(k for k in keys if k not in gone) for ref, keys in self.dirs.items()}
        return Inventory(
            {ref: keys for ref, keys in dirs.items() if keys},
            tuple(m for m in self.completed if CheckpointRef.of(m).metadata_key not in gone),
            tuple(r for r in self.rejected if r.ref.metadata_key not in gone),
        )


@dataclass(frozen=True, slots=True)
class RestoreChoice:
    """What a restore would use: the newest verified snapshot and the newer ones it skipped."""

    chosen: md.CheckpointMetadata | None
    """``None`` when no candidate verifies (or none exists)."""
    rejected: tuple[RejectedCheckpoint, ...] = ()
    """Unreadable ``_metadata`` documents and candidates that failed verification."""


def uploaded_size(metadata: md.CheckpointMetadata) -> int:
    """Bytes written for a checkpoint: the objects in its own directory, and the incremental
    chain objects as of it (its ``total_size`` less what it reuses of earlier ones)."""
    own = f"{CheckpointRef.of(metadata).directory}/"
    return sum(
        h.size
        for h in metadata.state_handles
        if h.key.startswith(own) or h.as_of == metadata.checkpoint_id
    )


def sort_key(ref: CheckpointRef) -> tuple[int, int]:
    """Ascending by id; for the same id a checkpoint sorts after a savepoint."""
    return ref.checkpoint_id, ref.kind is types.CheckpointKind.CHECKPOINT


def parse_member(key: str) -> tuple[CheckpointRef, str] | None:
    """``(directory, key inside it)`` for a key under ``checkpoints/`` or ``savepoints/``."""
    match = _MEMBER.match(key)
    if match is None:
        return None
    kind = (
        types.CheckpointKind.CHECKPOINT
        if match.group(1).startswith("checkpoints")
        else types.CheckpointKind.SAVEPOINT
    )
    return CheckpointRef(int(match.group(2)), kind), match.group(3)


@dataclass(frozen=True, slots=True)
class Reference:
    """What a user's ``--restore-from`` names: an id (either kind) or one directory."""

    checkpoint_id: int
    kind: types.CheckpointKind | None
    location: str
    """Whatever preceded the checkpoint directory in a path ('' for ids and bare names)."""


def parse_reference(text: str | int) -> Reference | None:
    """Understand ``42``, ``chk-42``, ``savepoints/sp-0000000042`` or a full path/URL.

    >>> parse_reference("s3://b/p/default/job/savepoints/sp-0000000042/?endpoint=http://x")
    Reference(checkpoint_id=42, kind=<CheckpointKind.SAVEPOINT: 'savepoint'>, \
location='s3://b/p/default/job')
    >>> parse_reference(" 7 ").kind is None
    True
    """
    if isinstance(text, int):
        return Reference(text, None, "") if text > 0 else None
    raw = text.strip().split("?", 1)[0]
    if raw.isdigit():
        return Reference(int(raw), None, "") if int(raw) > 0 else None
    match = _REFERENCE.match(raw)
    if match is None:
        return None
    kind = (
        types.CheckpointKind.CHECKPOINT
        if match.group(2) == "chk"
        else types.CheckpointKind.SAVEPOINT
    )
    return Reference(int(match.group(3)), kind, (match.group(1) or "").rstrip("/"))
