"""The checkpoint catalog over a local job root: usable, corrupt, incomplete, cleanup.

The catalog is the runtime's ``CheckpointStore`` (issue 10, finding 4): whatever it
calls usable is what ``cjob driver`` restores.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cjob_operator_testing import snapshots

from barrier_runtime.core import metadata as md
from barrier_runtime.core import types
from cjob_operator.act import catalog

FP = md.JobFingerprint((types.StepId("count"),), 128, 2)


def commit(
    root: Path,
    cid: int,
    kind: str = "checkpoint",
    payload: bytes = b"state",
    lie_about_size: bool = False,
    write_object: bool = True,
) -> None:
    folder = "savepoints/sp" if kind == "savepoint" else "checkpoints/chk"
    key = f"{folder}-{cid:010d}/count/0.arrow"
    if write_object:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(payload)
    handle = md.StateHandle(
        types.StepId("count"),
        0,
        key,
        len(payload) + (1 if lie_about_size else 0),
        hashlib.sha256(payload).hexdigest(),
        key_group_start=0,
        key_group_end=127,
    )
    meta = md.CheckpointMetadata(
        types.CheckpointId(cid), types.CheckpointKind(kind), 100.0 + cid, 100.5 + cid, FP, (handle,)
    )
    snapshots.write_metadata(root, meta)


def view(root: Path) -> catalog.Catalog:
    return catalog.local_catalog(root)


def ids(root: Path, kind: str) -> list[int]:
    return sorted(
        (int(m.checkpoint_id) for m in view(root).store.list_completed() if m.kind.value == kind),
        reverse=True,
    )


def test_empty_store_has_nothing(tmp_path: Path) -> None:
    v = view(tmp_path).view_sync()
    assert v.readable and v.newest_usable is None and not v.only_unusable


def test_newest_usable_checkpoint_wins_and_broken_ones_are_reported(tmp_path: Path) -> None:
    commit(tmp_path, 3)
    commit(tmp_path, 4)
    commit(tmp_path, 5, lie_about_size=True)
    commit(tmp_path, 6, write_object=False)
    torn = tmp_path / "checkpoints/chk-0000000007/count/0.arrow"  # never committed
    torn.parent.mkdir(parents=True)
    torn.write_bytes(b"x")
    v = view(tmp_path).view_sync()
    assert v.latest_checkpoint is not None and v.latest_checkpoint.id == 4
    assert v.latest_checkpoint.path == (tmp_path / "checkpoints/chk-0000000004").as_uri()
    assert v.latest_checkpoint.duration_seconds == 0.5
    reasons = {u.id: u.reason for u in v.unusable}
    assert set(reasons) == {5, 6}
    assert "expected 6" in reasons[5] and "missing" in reasons[6]


def test_corrupt_metadata_only_means_no_usable_state(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints/chk-0000000009"
    folder.mkdir(parents=True)
    (folder / "_metadata").write_text('{"format_version": 1}')
    v = view(tmp_path).view_sync()
    assert v.only_unusable
    assert v.unusable[0].id == 9 and v.unusable[0].reason


def test_savepoint_newer_than_checkpoint_is_the_restore_candidate(tmp_path: Path) -> None:
    commit(tmp_path, 3)
    commit(tmp_path, 4, kind="savepoint")
    v = view(tmp_path).view_sync()
    assert v.newest_usable is not None and v.newest_usable.id == 4
    assert v.newest_usable.kind is types.CheckpointKind.SAVEPOINT


def test_cleanup_keeps_retained_checkpoints_and_all_savepoints(tmp_path: Path) -> None:
    for cid in (1, 2, 3, 4):
        commit(tmp_path, cid)
    commit(tmp_path, 5, kind="savepoint")
    # a torn checkpoint newer than the newest completed one may still be in progress
    (tmp_path / "checkpoints/chk-0000000006/count").mkdir(parents=True)
    (tmp_path / "checkpoints/chk-0000000006/count/1.arrow").write_bytes(b"x")
    removed = view(tmp_path).cleanup_sync(retained=2)
    assert sorted(removed) == ["checkpoints/chk-0000000001", "checkpoints/chk-0000000002"]
    assert ids(tmp_path, "checkpoint") == [4, 3]
    assert ids(tmp_path, "savepoint") == [5]
    assert (tmp_path / "checkpoints/chk-0000000006/count/1.arrow").exists()


def test_open_catalog_maps_file_endpoints_to_the_job_root(tmp_path: Path) -> None:
    root = tmp_path / "bucket" / "cjob" / "ns" / "job"
    commit(root, 8)
    cat = catalog.open_catalog(f"file://{tmp_path}", "bucket", "cjob/ns/job")
    latest = cat.latest_completed()
    assert latest is not None and latest.id == 8


def test_corrupt_object_of_unchanged_size_falls_back_like_the_driver(tmp_path: Path) -> None:
    """Issue 10 finding 4: same size, other bytes in N → the operator chooses N-1,
    exactly what the driver's ``select_restore_point`` restores."""
    commit(tmp_path, 3)
    commit(tmp_path, 4, payload=b"state")
    (tmp_path / "checkpoints/chk-0000000004/count/0.arrow").write_bytes(b"STATE")
    v = view(tmp_path).view_sync()
    assert v.newest_usable is not None and v.newest_usable.id == 3
    assert [(u.id, "sha256" in u.reason) for u in v.unusable] == [(4, True)]
    driver_choice = view(tmp_path).store.select_restore_point()
    assert driver_choice is not None and int(driver_choice.checkpoint_id) == 3


def test_discarding_savepoints_deletes_exactly_those_savepoints(tmp_path: Path) -> None:
    """spec.savepoints.retained goes through the runtime's delete_checkpoint: only the named
    savepoints go, a checkpoint is never taken for one, a missing one counts as gone."""
    for sid in (2, 3, 5):
        commit(tmp_path, sid, "savepoint")
    commit(tmp_path, 4)
    gone, error = view(tmp_path).discard_savepoints_sync((2, 4, 9))
    assert error is None and gone == (2, 4, 9)
    assert ids(tmp_path, "savepoint") == [5, 3]
    assert ids(tmp_path, "checkpoint") == [4]  # "sp-4" never names checkpoint 4
    assert not (tmp_path / "savepoints/sp-0000000002").exists()


def test_a_storage_failure_stops_the_discard_and_is_reported(tmp_path: Path) -> None:
    commit(tmp_path, 2, "savepoint")
    commit(tmp_path, 3, "savepoint")
    cat = view(tmp_path)

    def broken(path_or_id: int | str) -> None:
        if path_or_id == "savepoints/sp-0000000003":
            raise OSError("disk on fire")
        original(path_or_id)

    original = cat.store.delete_checkpoint
    cat.store.delete_checkpoint = broken  # type: ignore[method-assign]
    gone, error = cat.discard_savepoints_sync((2, 3))
    assert gone == (2,)
    assert error == "could not delete savepoint 3: OSError: disk on fire"
    assert ids(tmp_path, "savepoint") == [3]


def test_incremental_checkpoints_report_what_they_wrote_and_the_shared_total(
    tmp_path: Path,
) -> None:
    """Issue 32: the status says full against written size, and the shared state's total."""

    def shared(name: str, payload: bytes, as_of: int, delta: bool) -> md.StateHandle:
        key = f"shared/count/{name}"
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(payload)
        digest = hashlib.sha256(payload).hexdigest()
        return md.StateHandle(
            types.StepId("count"), 0, key, len(payload), digest, as_of=as_of, delta=delta
        )

    base = shared("1-base", b"b" * 1000, 1, False)
    first = shared("2-delta", b"d" * 10, 2, True)
    second = shared("3-delta", b"e" * 20, 3, True)
    for cid, handles in ((2, (base, first)), (3, (base, first, second))):
        meta = md.CheckpointMetadata(
            types.CheckpointId(cid), types.CheckpointKind.CHECKPOINT, 100.0, 101.0, FP, handles
        )
        snapshots.write_metadata(tmp_path, meta)
    found = view(tmp_path).view_sync()
    assert found.latest_checkpoint is not None
    assert (found.latest_checkpoint.size_bytes, found.latest_checkpoint.uploaded_bytes) == (
        1030,
        20,
    )
    assert found.shared_bytes == 1030  # each object once, however many reference it
