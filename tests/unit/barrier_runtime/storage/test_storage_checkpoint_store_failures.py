"""CheckpointStore when the object store misbehaves: told-to-fail doubles that record calls."""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Iterable

import pytest
from barrier_runtime_testing.storage import ScriptedStore

from barrier_runtime.core import layout, metadata, types
from barrier_runtime.storage import checkpoint_store, errors

FINGERPRINT = metadata.JobFingerprint((types.StepId("count"),), 8, 1)


@pytest.fixture
def raw(tmp_path: pathlib.Path) -> ScriptedStore:
    return ScriptedStore(tmp_path)


@pytest.fixture
def store(raw: ScriptedStore) -> checkpoint_store.CheckpointStore:
    return checkpoint_store.CheckpointStore(raw, "ns/job")


def commit(
    store: checkpoint_store.CheckpointStore,
    cid: int,
    reused: tuple[metadata.StateHandle, ...] = (),
    *,
    before: Callable[[], None] = lambda: None,
) -> metadata.CheckpointMetadata:
    """Upload checkpoint ``cid``'s object, call ``before``, commit it (referencing ``reused`` too)."""
    handle = store.write_state(
        cid,
        types.CheckpointKind.CHECKPOINT,
        "count/0",
        f"state {cid}".encode(),
        step_id="count",
        subtask=0,
        handle_kind=metadata.HandleKind.KEYED,
    )
    meta = metadata.CheckpointMetadata(
        types.CheckpointId(cid),
        types.CheckpointKind.CHECKPOINT,
        1.0,
        2.0,
        FINGERPRINT,
        (handle, *reused),
    )
    before()
    store.commit(meta)
    return meta


def test_unreachable_storage_during_restore_is_not_a_silent_fallback(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    commit(store, 2)
    original = raw.inner.get

    def state_unreachable(key: str) -> bytes:
        if key.endswith("/_metadata"):
            return original(key)
        raise errors.StorageUnavailableError("cannot reach S3")

    raw.inner.get = state_unreachable  # type: ignore[method-assign]
    with pytest.raises(errors.StorageUnavailableError):
        store.select_restore_point()  # must not fall back to checkpoint 1 nor say "unusable"


def test_retention_deletes_every_metadata_before_any_object(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    for cid in (1, 2, 3):
        commit(store, cid)
    raw.calls.clear()
    store.apply_retention(1)
    deleted = [key for op, key in raw.calls if op == "delete_many"]
    assert deleted == [
        "ns/job/checkpoints/chk-0000000001/_metadata",
        "ns/job/checkpoints/chk-0000000002/_metadata",
        "ns/job/checkpoints/chk-0000000001/count/0",
        "ns/job/checkpoints/chk-0000000002/count/0",
    ]


def test_interrupted_retention_never_leaves_a_half_deleted_valid_checkpoint(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    newest = commit(store, 2)
    original = raw.inner.delete_many

    def metadata_only(keys: Iterable[str]) -> None:
        keys = list(keys)
        if any(not k.endswith("/_metadata") for k in keys):
            raise errors.StorageUnavailableError("connection dropped")
        original(keys)

    raw.inner.delete_many = metadata_only  # type: ignore[method-assign]
    with pytest.raises(errors.StorageUnavailableError):
        store.apply_retention(1)
    assert [m.checkpoint_id for m in store.list_completed()] == [2]
    assert store.scan().torn == (layout.CheckpointRef(1, newest.kind),)
    raw.inner.delete_many = original  # type: ignore[method-assign]
    store.apply_retention(1)  # the leftovers are now an old torn directory: cleaned
    assert list(raw.inner.list("ns/job/checkpoints/chk-0000000001/")) == []


def test_commit_writes_metadata_last_and_conditionally(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    writes = [(op, key) for op, key in raw.calls if op in ("put", "put_if_absent")]
    assert writes[-1] == ("put_if_absent", "ns/job/checkpoints/chk-0000000001/_metadata")
    assert all(op == "put" for op, _ in writes[:-1])


def test_storage_failure_while_committing_propagates(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    raw.fail["put_if_absent"] = errors.StorageUnavailableError("cannot reach S3")
    with pytest.raises(errors.StorageUnavailableError):
        commit(store, 1)


def test_write_state_refuses_the_commit_record_name(
    store: checkpoint_store.CheckpointStore,
) -> None:
    with pytest.raises(ValueError, match="reserved"):
        store.write_state(
            1,
            types.CheckpointKind.CHECKPOINT,
            "_metadata",
            b"x",
            step_id="count",
            subtask=0,
            handle_kind=metadata.HandleKind.KEYED,
        )


def test_empty_job_path_uses_the_store_root(raw: ScriptedStore) -> None:
    store = checkpoint_store.CheckpointStore(raw, "")
    commit(store, 3)
    assert store.load("checkpoints/chk-0000000003").checkpoint_id == 3
    assert "checkpoints/chk-0000000003/_metadata" in set(raw.inner.list("checkpoints/"))


def test_commit_asks_the_store_only_for_the_objects_it_reuses(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    older = commit(store, 1)
    commit(store, 2, older.state_handles, before=raw.calls.clear)
    assert [key for op, key in raw.calls if op == "stat"] == [
        "ns/job/checkpoints/chk-0000000001/count/0"
    ]
