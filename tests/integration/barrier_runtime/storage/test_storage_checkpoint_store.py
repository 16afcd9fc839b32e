"""CheckpointStore acceptance criteria, on the local store and a real S3 server alike."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

import pytest

from barrier_runtime.checkpoint import protocols
from barrier_runtime.core import metadata, types
from barrier_runtime.storage import checkpoint_store, errors

Make = Callable[..., metadata.CheckpointMetadata]
Store = checkpoint_store.CheckpointStore
SP = types.CheckpointKind.SAVEPOINT
JOB = "default/my-job"


def ids(found: list[metadata.CheckpointMetadata]) -> list[int]:
    return [m.checkpoint_id for m in found]


def corrupt(checkpoints: Store, handle: metadata.StateHandle, how: str) -> None:
    key = f"{JOB}/{handle.key}"
    raw = checkpoints.object_store
    if how == "checksum":  # same size, different bytes
        data = raw.get(key)
        raw.put(key, bytes([data[0] ^ 0xFF]) + data[1:])
    elif how == "size":
        raw.put(key, raw.get(key) + b"!")
    else:
        raw.delete(key)


def test_satisfies_the_coordinators_metadata_store_protocol(checkpoints: Store) -> None:
    as_protocol: protocols.MetadataStore = checkpoints
    assert as_protocol is checkpoints


def test_round_trip(checkpoints: Store, make_checkpoint: Make) -> None:
    meta = make_checkpoint(42)
    assert ids(checkpoints.list_completed()) == [42]
    assert checkpoints.select_restore_point() == meta
    assert checkpoints.load(42) == meta
    assert checkpoints.load("chk-42") == meta
    assert checkpoints.verify(42) == []
    handle = meta.state_handles[0]
    assert handle.key == "checkpoints/chk-0000000042/count/0.arrow"
    assert checkpoints.read_state(handle) == b"state of count/0.arrow at 42" * 10
    assert handle.size == len(b"state of count/0.arrow at 42" * 10)


def test_commit_returns_a_path_that_load_accepts(checkpoints: Store, make_checkpoint: Make) -> None:
    meta = make_checkpoint(7, commit=False)
    path = checkpoints.commit(meta)
    assert path == f"{JOB}/checkpoints/chk-0000000007"
    assert checkpoints.load(path) == meta
    assert checkpoints.load(f"s3://bucket/prefix/{path}/_metadata?endpoint=http://x") == meta


def test_checkpoint_dir_names(checkpoints: Store) -> None:
    assert checkpoints.checkpoint_dir(42, types.CheckpointKind.CHECKPOINT) == (
        "checkpoints/chk-0000000042"
    )
    assert checkpoints.checkpoint_dir(42, SP) == "savepoints/sp-0000000042"


def test_torn_checkpoint_is_ignored_but_counted(checkpoints: Store, make_checkpoint: Make) -> None:
    good = make_checkpoint(1)
    make_checkpoint(2, commit=False)  # state uploaded, crash before _metadata
    assert ids(checkpoints.list_completed()) == [1]
    assert checkpoints.select_restore_point() == good
    assert checkpoints.highest_checkpoint_id() == 2
    with pytest.raises(errors.CheckpointNotFoundError, match="checkpoint 2"):
        checkpoints.load(2)


def test_only_torn_checkpoints_means_fresh_start(checkpoints: Store, make_checkpoint: Make) -> None:
    make_checkpoint(1, commit=False)
    assert checkpoints.select_restore_point() is None


def test_empty_store_has_no_restore_point(checkpoints: Store) -> None:
    assert checkpoints.select_restore_point() is None
    assert checkpoints.list_completed() == []
    assert checkpoints.highest_checkpoint_id() == 0


def test_highest_id_counts_torn_dirs_and_savepoints(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    make_checkpoint(3)
    make_checkpoint(9, kind=SP)
    assert checkpoints.highest_checkpoint_id() == 9
    make_checkpoint(11, commit=False)
    assert checkpoints.highest_checkpoint_id() == 11


def test_ids_never_repeat_once_unfinished_checkpoints_are_discarded(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    make_checkpoint(1)
    make_checkpoint(2, commit=False)  # aborted: its directory goes at the job's end
    make_checkpoint(3, commit=False)
    assert checkpoints.discard_unfinished() != ()
    assert ids(checkpoints.list_completed()) == [1]
    assert checkpoints.highest_checkpoint_id() == 3  # the next driver starts at 4


def test_ids_never_repeat_once_the_newest_checkpoint_is_deleted(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    make_checkpoint(1)
    make_checkpoint(2)
    checkpoints.delete_checkpoint(2)
    assert checkpoints.highest_checkpoint_id() == 2
    make_checkpoint(5, commit=False)
    assert checkpoints.highest_checkpoint_id() == 5  # a higher directory goes above the mark


def test_retention_of_older_checkpoints_leaves_no_id_mark(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    for cid in (1, 2, 3):
        make_checkpoint(cid)
    checkpoints.discard_beyond(1)
    assert ids(checkpoints.list_completed()) == [3]
    assert list(checkpoints.object_store.list(f"{JOB}/checkpoints/_")) == []


def test_a_corrupt_id_mark_is_refused_with_what_to_do(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    make_checkpoint(1)
    checkpoints.object_store.put(f"{JOB}/checkpoints/_highest_id", b"not json")
    with pytest.raises(errors.CorruptCheckpointError, match="highest checkpoint id the job used"):
        checkpoints.highest_checkpoint_id()


@pytest.mark.parametrize("how", ["checksum", "size", "missing"])
def test_corrupt_newest_falls_back_to_previous(
    checkpoints: Store, make_checkpoint: Make, how: str
) -> None:
    previous = make_checkpoint(1)
    newest = make_checkpoint(2)
    bad = newest.state_handles[1]
    corrupt(checkpoints, bad, how)
    assert checkpoints.select_restore_point() == previous
    problems = checkpoints.verify(2)
    assert len(problems) == 1
    assert bad.key in problems[0]
    with pytest.raises(errors.CorruptCheckpointError, match=bad.key):
        checkpoints.load(2)
    with pytest.raises(errors.CorruptCheckpointError, match=bad.key):
        checkpoints.read_state(bad)


def test_newest_savepoint_is_a_restore_point(checkpoints: Store, make_checkpoint: Make) -> None:
    make_checkpoint(1)
    savepoint = make_checkpoint(2, kind=SP)
    assert checkpoints.select_restore_point() == savepoint
    assert checkpoints.load("savepoints/sp-0000000002") == savepoint


def test_all_unusable_refuses_fresh_start_with_clear_message(
    checkpoints: Store, make_checkpoint: Make, caplog: pytest.LogCaptureFixture
) -> None:
    for cid in (1, 2):
        corrupt(checkpoints, make_checkpoint(cid).state_handles[0], "checksum")
    with pytest.raises(errors.NoUsableCheckpointError) as failure:
        checkpoints.select_restore_point()
    message = str(failure.value)
    assert checkpoints.object_store.describe() in message
    assert "checkpoint 1 (" in message and "checkpoint 2 (" in message
    assert "sha256" in message and "\n" not in message
    with caplog.at_level(logging.WARNING):
        assert checkpoints.select_restore_point(allow_fresh_start=True) is None
    assert "starting fresh" in caplog.text


def test_unparsable_metadata_is_rejected_not_a_fresh_start(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    make_checkpoint(1, commit=False)
    checkpoints.object_store.put(f"{JOB}/checkpoints/chk-0000000001/_metadata", b"{not json")
    assert checkpoints.list_completed() == []
    with pytest.raises(errors.NoUsableCheckpointError, match="checkpoint 1"):
        checkpoints.select_restore_point()
    good = make_checkpoint(2)
    assert checkpoints.select_restore_point() == good


def test_metadata_in_the_wrong_directory_is_rejected(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    meta = make_checkpoint(1)
    moved = dataclasses.replace(meta, checkpoint_id=types.CheckpointId(5)).to_json()
    checkpoints.object_store.put(f"{JOB}/checkpoints/chk-0000000003/_metadata", moved)
    assert ids(checkpoints.list_completed()) == [1]
    assert [str(r) for r in checkpoints.scan().rejected] == [
        "checkpoint 3 (its _metadata describes checkpoint 5)"
    ]


def test_racing_commits_of_one_id_have_exactly_one_winner(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    base = make_checkpoint(5, commit=False)
    writers = 8
    start = threading.Barrier(writers)
    won: list[int] = []
    lost: list[errors.CheckpointAlreadyExistsError] = []

    def commit(i: int) -> None:
        mine = dataclasses.replace(base, trigger_time=float(i))
        start.wait()
        try:
            checkpoints.commit(mine)
            won.append(i)
        except errors.CheckpointAlreadyExistsError as exc:
            lost.append(exc)

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(won) == 1 and len(lost) == writers - 1
    assert "checkpoint 5 was already committed" in str(lost[0])
    assert checkpoints.load(5).trigger_time == float(won[0])


def test_recommitting_identical_metadata_is_idempotent(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    meta = make_checkpoint(4)
    assert checkpoints.commit(meta) == f"{JOB}/checkpoints/chk-0000000004"


@pytest.mark.parametrize("how", ["missing", "size"])
def test_commit_refuses_metadata_whose_reused_objects_are_gone_or_changed(
    checkpoints: Store, make_checkpoint: Make, how: str
) -> None:
    older = make_checkpoint(5)
    reused = older.state_handles[0]
    meta = make_checkpoint(6, extra=[reused], commit=False)
    corrupt(checkpoints, reused, how)
    with pytest.raises(errors.CorruptCheckpointError, match=reused.key):
        checkpoints.commit(meta)
    assert ids(checkpoints.list_completed()) == [5]


def test_retention_deletes_only_unreferenced_objects_and_never_savepoints(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    def shared(data: bytes) -> metadata.StateHandle:
        return checkpoints.write_shared(
            data, step_id="count", subtask=0, handle_kind=metadata.HandleKind.KEYED
        )

    kept_shared, dropped_shared = shared(b"still needed"), shared(b"only chk-2")
    first = make_checkpoint(1, objects=["count/0.arrow", "count/reused.arrow"])
    reused = first.state_handles[1]  # lives in chk-1's directory
    make_checkpoint(2, extra=[kept_shared, dropped_shared])
    make_checkpoint(3, commit=False)  # torn, older than the newest: garbage
    make_checkpoint(4, kind=SP, extra=[kept_shared])
    make_checkpoint(5, extra=[reused])
    make_checkpoint(6)
    make_checkpoint(7, commit=False)  # torn but newer: may be in progress

    checkpoints.apply_retention(2)

    assert ids(checkpoints.list_completed()) == [4, 5, 6]
    assert checkpoints.verify(4) == [] and checkpoints.verify(5) == []
    remaining = set(checkpoints.object_store.list(f"{JOB}/"))
    prefix = f"{JOB}/checkpoints/"
    assert {k for k in remaining if k.startswith(prefix)} == {
        f"{prefix}chk-0000000001/count/reused.arrow",
        *(
            f"{prefix}chk-000000000{n}/{f}"
            for n in (5, 6)
            for f in ("_metadata", "count/0.arrow", "count/1.arrow")
        ),
        *(f"{prefix}chk-0000000007/count/{i}.arrow" for i in (0, 1)),
    }
    assert f"{JOB}/{kept_shared.key}" in remaining
    assert f"{JOB}/{dropped_shared.key}" not in remaining
    assert len([k for k in remaining if "/savepoints/" in k]) == 3
    assert checkpoints.highest_checkpoint_id() == 7

    checkpoints.apply_retention(1)
    assert ids(checkpoints.list_completed()) == [4, 6]
    assert f"{JOB}/{first.state_handles[1].key}" not in set(checkpoints.object_store.list(""))


def test_delete_checkpoint_keeps_what_others_reference(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    first = make_checkpoint(1)
    make_checkpoint(2, extra=[first.state_handles[0]])
    checkpoints.delete_checkpoint(1)
    assert ids(checkpoints.list_completed()) == [2]
    assert checkpoints.verify(2) == []
    assert checkpoints.verify(1) == [
        f"checkpoint 1 is not in {checkpoints.describe()} (no committed _metadata): name one "
        "that exists (cjob checkpoints list shows them)"
    ]
    make_checkpoint(3, kind=SP)
    checkpoints.delete_checkpoint("sp-3")
    assert ids(checkpoints.list_completed()) == [2]
    with pytest.raises(errors.CheckpointNotFoundError):
        checkpoints.delete_checkpoint(99)


def test_load_rejects_a_path_of_another_job(checkpoints: Store, make_checkpoint: Make) -> None:
    make_checkpoint(1, kind=SP)
    with pytest.raises(errors.CheckpointNotFoundError, match="another job"):
        checkpoints.load("s3://bucket/default/other-job/savepoints/sp-0000000001")


def test_the_drivers_clean_up_deletes_shared_objects_no_checkpoint_references(
    checkpoints: Store, make_checkpoint: Make
) -> None:
    """Once an attempt is gone its chains are too: a delta of a checkpoint that never
    completed can never be referenced (issue 32). Not while a ``_metadata`` is unreadable."""

    def shared(data: bytes, as_of: int) -> metadata.StateHandle:
        return checkpoints.write_shared(
            data, step_id="count", subtask=0, handle_kind=metadata.HandleKind.KEYED, as_of=as_of
        )

    base, orphan = shared(b"a base", 1), shared(b"a delta of checkpoint 2", 2)
    assert base.key.startswith("shared/count/0000000001-0-") and base.as_of == 1
    make_checkpoint(1, extra=[base])
    make_checkpoint(3, commit=False)
    checkpoints.object_store.put(f"{JOB}/checkpoints/chk-0000000003/_metadata", b"{not json")
    checkpoints.discard_unfinished()
    present = set(checkpoints.object_store.list(f"{JOB}/shared/"))
    assert present == {f"{JOB}/{base.key}", f"{JOB}/{orphan.key}"}  # checkpoint 3 may use it
    checkpoints.delete_checkpoint(3)
    checkpoints.discard_unfinished()
    assert set(checkpoints.object_store.list(f"{JOB}/shared/")) == {f"{JOB}/{base.key}"}
    assert checkpoints.verify(1) == []
