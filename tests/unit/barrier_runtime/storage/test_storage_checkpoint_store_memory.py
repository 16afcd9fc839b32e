"""CheckpointStore's memory of its last scan: retention after every checkpoint without a listing.

The coordinator calls ``apply_retention`` after every checkpoint. These tests
pin what it may skip (listing, reading ``_metadata`` documents it wrote) and
what it must still do: delete exactly what a fresh scan would delete, sweep
torn directories once its memory is older than ``relist_after``, and list
again whenever its memory may be wrong.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator, Sequence

import pytest
from barrier_runtime_testing.storage import ScriptedStore

from barrier_runtime.core import metadata, types
from barrier_runtime.storage import checkpoint_store, errors

FINGERPRINT = metadata.JobFingerprint((types.StepId("count"),), 8, 1)
CHK, SP = types.CheckpointKind.CHECKPOINT, types.CheckpointKind.SAVEPOINT
RELIST_AFTER = 60.0


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def raw(tmp_path: pathlib.Path) -> ScriptedStore:
    return ScriptedStore(tmp_path / "memory")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(raw: ScriptedStore, clock: ManualClock) -> checkpoint_store.CheckpointStore:
    return checkpoint_store.CheckpointStore(raw, "ns/job", relist_after=RELIST_AFTER, clock=clock)


def write(
    store: checkpoint_store.CheckpointStore,
    cid: int,
    kind: types.CheckpointKind = CHK,
    shared: Sequence[bytes] = (),
) -> metadata.CheckpointMetadata:
    """Upload a snapshot's objects (its own and ``shared`` ones) without committing it."""
    kw = {"step_id": "count", "subtask": 0, "handle_kind": metadata.HandleKind.KEYED}
    own = store.write_state(cid, kind, "count/0", f"state {cid}".encode(), **kw)  # type: ignore[arg-type]
    handles = (own, *(store.write_shared(data, **kw) for data in shared))  # type: ignore[arg-type]
    return metadata.CheckpointMetadata(
        types.CheckpointId(cid), kind, 1.0, 2.0, FINGERPRINT, handles
    )


def commit(
    store: checkpoint_store.CheckpointStore,
    cid: int,
    kind: types.CheckpointKind = CHK,
    shared: Sequence[bytes] = (),
) -> metadata.CheckpointMetadata:
    meta = write(store, cid, kind, shared)
    store.commit(meta)
    return meta


def objects(raw: ScriptedStore) -> set[str]:
    return set(raw.inner.list("ns/job/"))


def only(cid: int) -> set[str]:
    """The objects of checkpoint ``cid`` when nothing else is left."""
    return {f"ns/job/checkpoints/chk-{cid:010d}/{name}" for name in ("_metadata", "count/0")}


def ops(raw: ScriptedStore) -> set[str]:
    return {op for op, _ in raw.calls}


def test_retention_after_the_first_lists_nothing_and_reads_nothing(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    store.apply_retention(1)  # the first one lists: the store knows nothing yet
    assert "list" in ops(raw)
    raw.calls.clear()
    for cid in (2, 3, 4):
        commit(store, cid)
        store.apply_retention(1)
    assert not ops(raw) & {"list", "get"}
    assert objects(raw) == only(4)


def test_a_scan_reads_only_the_metadata_it_has_not_seen(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    store.scan()
    commit(store, 2)
    raw.calls.clear()
    assert [m.checkpoint_id for m in store.scan().completed] == [1, 2]
    assert "get" not in ops(raw)
    fresh = checkpoint_store.CheckpointStore(raw, "ns/job")
    raw.calls.clear()
    assert [m.checkpoint_id for m in fresh.scan().completed] == [1, 2]
    assert [key for op, key in raw.calls if op == "get"] == [
        "ns/job/checkpoints/chk-0000000001/_metadata",
        "ns/job/checkpoints/chk-0000000002/_metadata",
    ]


def run_history(store: checkpoint_store.CheckpointStore, retain: Iterator[None]) -> None:
    """Checkpoints and a savepoint sharing objects, retention after each (``next(retain)``)."""
    commit(store, 1, shared=[b"a"])
    next(retain)
    commit(store, 2, shared=[b"a", b"b"])
    next(retain)
    commit(store, 3, SP, shared=[b"b"])
    next(retain)
    commit(store, 4, shared=[b"b", b"c"])
    next(retain)
    commit(store, 5, shared=[b"c"])
    next(retain)
    commit(store, 6, shared=[b"d"])
    next(retain)


def test_retention_from_memory_deletes_what_retention_from_a_fresh_scan_deletes(
    tmp_path: pathlib.Path,
) -> None:
    remembering = ScriptedStore(tmp_path / "remembering")
    scanning = ScriptedStore(tmp_path / "scanning")
    a = checkpoint_store.CheckpointStore(remembering, "ns/job", relist_after=RELIST_AFTER)
    b = checkpoint_store.CheckpointStore(scanning, "ns/job")

    def retain(store: checkpoint_store.CheckpointStore, fresh: bool) -> Iterator[None]:
        while True:
            if fresh:
                store.discard_beyond(2)
            else:
                store.apply_retention(2)
            yield

    run_history(a, retain(a, fresh=False))
    run_history(b, retain(b, fresh=True))
    assert objects(remembering) == objects(scanning)
    assert [m.checkpoint_id for m in a.list_completed()] == [3, 5, 6]
    assert sum(op == "list" for op, _ in remembering.calls) < sum(
        op == "list" for op, _ in scanning.calls
    )


def test_a_torn_directory_is_swept_once_the_memory_is_older_than_relist_after(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore, clock: ManualClock
) -> None:
    commit(store, 1)
    store.apply_retention(1)
    write(store, 2)  # a failed checkpoint's upload: the memory never hears of it
    commit(store, 3)
    clock.now += RELIST_AFTER - 1
    store.apply_retention(1)
    assert "ns/job/checkpoints/chk-0000000002/count/0" in objects(raw)
    commit(store, 4)
    clock.now += 1
    store.apply_retention(1)
    assert objects(raw) == only(4)


def test_a_failed_deletion_makes_the_next_retention_list_again(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    store.apply_retention(1)
    commit(store, 2)
    raw.fail["delete_many"] = errors.StorageUnavailableError("connection dropped")
    with pytest.raises(errors.StorageUnavailableError):
        store.apply_retention(1)
    del raw.fail["delete_many"]
    raw.calls.clear()
    store.apply_retention(1)
    assert "list" in ops(raw)
    assert objects(raw) == only(2)


def test_a_scan_that_a_commit_overtook_is_not_remembered(
    raw: ScriptedStore, store: checkpoint_store.CheckpointStore
) -> None:
    commit(store, 1)
    get = raw.get

    def commit_during_the_scan(key: str) -> bytes:
        raw.get = get  # type: ignore[method-assign]
        commit(store, 2)  # after the listing, before the scan ends
        return get(key)

    raw.get = commit_during_the_scan  # type: ignore[method-assign]
    assert [m.checkpoint_id for m in store.scan().completed] == [1]
    store.apply_retention(1)  # lists again: it must know checkpoint 2 to discard 1
    assert objects(raw) == only(2)
