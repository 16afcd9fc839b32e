"""Committing fake snapshots into a local job root, the way a driver would (tests only)."""

from __future__ import annotations

from pathlib import Path

from barrier_runtime.core import layout, types
from barrier_runtime.core import metadata as md
from cjob_operator.act import catalog

FINGERPRINT = md.JobFingerprint((types.StepId("inp"),), 128, 2)


def next_id(root: Path) -> int:
    """Highest id ever used under ``root`` (checkpoint or savepoint, committed or not) + 1."""
    return catalog.local_catalog(root).store.highest_checkpoint_id() + 1


def commit(root: Path, savepoint: bool, now: float) -> tuple[int, Path]:
    """Write a committed ``_metadata`` with the next id; returns (id, folder)."""
    cid = next_id(root)
    kind = types.CheckpointKind.SAVEPOINT if savepoint else types.CheckpointKind.CHECKPOINT
    meta = md.CheckpointMetadata(
        checkpoint_id=types.CheckpointId(cid),
        kind=kind,
        trigger_time=now - 0.05,
        completion_time=now,
        fingerprint=FINGERPRINT,
    )
    return cid, write_metadata(root, meta)


def abandon(root: Path) -> int:
    """Create an uncommitted checkpoint folder (a failed checkpoint) with the next id."""
    cid = next_id(root)
    ref = layout.CheckpointRef(cid, types.CheckpointKind.CHECKPOINT)
    torn = root / ref.directory / "inp" / "0.arrow"  # state uploaded, never committed
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b"")
    return cid


def write_metadata(root: Path, meta: md.CheckpointMetadata) -> Path:
    """Commit ``meta`` into a local job root (as the runtime's coordinator commits it)."""
    folder = root / layout.CheckpointRef.of(meta).directory
    folder.mkdir(parents=True, exist_ok=True)
    (folder / layout.METADATA_NAME).write_bytes(meta.to_json())
    return folder
