"""Retention planning: what may be deleted, as a table of situations (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from barrier_runtime.core import layout, metadata, types
from barrier_runtime.storage import retention

CHK, SP = types.CheckpointKind.CHECKPOINT, types.CheckpointKind.SAVEPOINT
FINGERPRINT = metadata.JobFingerprint((types.StepId("s"),), 8, 1)


def handle(key: str) -> metadata.StateHandle:
    return metadata.StateHandle(types.StepId("s"), 0, key, 1, "0" * 64)


def meta(cid: int, kind: types.CheckpointKind, keys: Sequence[str]) -> metadata.CheckpointMetadata:
    return metadata.CheckpointMetadata(
        types.CheckpointId(cid), kind, 0.0, 0.0, FINGERPRINT, tuple(handle(k) for k in keys)
    )


def inventory(
    completed: Sequence[metadata.CheckpointMetadata],
    torn: Sequence[layout.CheckpointRef] = (),
    rejected: Sequence[layout.CheckpointRef] = (),
) -> layout.Inventory:
    dirs: dict[layout.CheckpointRef, tuple[str, ...]] = {}
    for m in completed:
        ref = layout.CheckpointRef.of(m)
        own = [h.key for h in m.state_handles if h.key.startswith(ref.directory)]
        dirs[ref] = (ref.metadata_key, *own)
    for ref in torn:
        dirs[ref] = (f"{ref.directory}/s/0",)
    for ref in rejected:
        dirs[ref] = (ref.metadata_key, f"{ref.directory}/s/0")
    return layout.Inventory(
        dirs=dirs,
        completed=tuple(completed),
        rejected=tuple(layout.RejectedCheckpoint(r, "unreadable") for r in rejected),
    )


def own(cid: int) -> str:
    return f"{layout.CheckpointRef(cid, CHK).directory}/s/0"


def test_keeps_the_newest_and_deletes_metadata_of_the_rest() -> None:
    plan = retention.plan_retention(
        inventory([meta(i, CHK, [own(i)]) for i in (1, 2, 3)]), retained=2
    )
    assert plan.discarded == (layout.CheckpointRef(1, CHK),)
    assert plan.metadata_keys == ("checkpoints/chk-0000000001/_metadata",)
    assert plan.object_keys == (own(1),)


def test_nothing_to_do_when_within_retention() -> None:
    plan = retention.plan_retention(inventory([meta(1, CHK, [own(1)])]), retained=3)
    assert plan.empty and plan.discarded == ()


def test_objects_referenced_by_survivors_are_kept() -> None:
    completed = [
        meta(1, CHK, [own(1), "checkpoints/chk-0000000001/s/shared-with-2", "shared/s/a"]),
        meta(2, CHK, [own(2), "checkpoints/chk-0000000001/s/shared-with-2", "shared/s/a"]),
    ]
    plan = retention.plan_retention(inventory(completed), retained=1)
    assert plan.object_keys == (own(1),)


def test_shared_objects_only_discarded_checkpoints_used_are_deleted() -> None:
    completed = [meta(1, CHK, ["shared/s/old"]), meta(2, CHK, ["shared/s/new"])]
    plan = retention.plan_retention(inventory(completed), retained=1)
    assert plan.object_keys == ("shared/s/old",)


def test_savepoints_are_never_discarded_and_protect_their_references() -> None:
    completed = [
        meta(1, CHK, [own(1)]),
        meta(2, SP, ["savepoints/sp-0000000002/s/0", own(1)]),
        meta(3, CHK, [own(3)]),
    ]
    plan = retention.plan_retention(inventory(completed), retained=1)
    assert plan.discarded == (layout.CheckpointRef(1, CHK),)
    assert plan.object_keys == ()  # chk-1's only object is still used by the savepoint


@pytest.mark.parametrize(
    ("torn_id", "discarded"),
    [(2, True), (4, False)],
    ids=["older-than-newest-is-garbage", "newer-may-be-in-progress"],
)
def test_torn_directories(torn_id: int, discarded: bool) -> None:
    torn = layout.CheckpointRef(torn_id, CHK)
    plan = retention.plan_retention(inventory([meta(3, CHK, [own(3)])], torn=[torn]), retained=1)
    assert (torn in plan.discarded) is discarded
    assert (own(torn_id) in plan.object_keys) is discarded


def test_torn_savepoints_and_unreadable_checkpoints_are_left_alone() -> None:
    torn_sp = layout.CheckpointRef(1, SP)
    unreadable = layout.CheckpointRef(2, CHK)
    plan = retention.plan_retention(
        inventory([meta(5, CHK, [own(5)])], torn=[torn_sp], rejected=[unreadable]), retained=1
    )
    assert plan.empty


def test_without_completed_checkpoints_nothing_is_deleted() -> None:
    torn = layout.CheckpointRef(1, CHK)
    assert retention.plan_retention(inventory([], torn=[torn]), retained=1).empty


def test_retained_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        retention.plan_retention(inventory([]), retained=0)


def test_explicit_discard_of_a_savepoint() -> None:
    completed = [
        meta(1, SP, ["savepoints/sp-0000000001/s/0", "shared/s/a"]),
        meta(2, CHK, [own(2), "shared/s/a"]),
    ]
    plan = retention.plan_discard(inventory(completed), [layout.CheckpointRef(1, SP)])
    assert plan.metadata_keys == ("savepoints/sp-0000000001/_metadata",)
    assert plan.object_keys == ("savepoints/sp-0000000001/s/0",)
