"""The ObjectStore contract, run against the local store and a real S3 server alike."""

from __future__ import annotations

import threading

import pytest

from barrier_runtime.storage import errors, object_store


def test_put_get_round_trip_of_binary_and_empty_objects(store: object_store.ObjectStore) -> None:
    blob = bytes(range(256)) * 40
    store.put("a/b/blob", blob)
    store.put("a/empty", b"")
    assert store.get("a/b/blob") == blob
    assert store.get("a/empty") == b""


def test_put_replaces_an_existing_object(store: object_store.ObjectStore) -> None:
    store.put("k", b"old")
    store.put("k", b"newer")
    assert store.get("k") == b"newer"
    assert store.stat("k") == object_store.ObjectInfo(size=5)


def test_get_of_missing_object_raises_object_not_found(store: object_store.ObjectStore) -> None:
    with pytest.raises(errors.ObjectNotFoundError, match="missing/key"):
        store.get("missing/key")


def test_stat_reports_size_or_none(store: object_store.ObjectStore) -> None:
    store.put("dir/obj", b"12345")
    assert store.stat("dir/obj") == object_store.ObjectInfo(size=5)
    assert store.stat("dir/none") is None
    assert store.stat("dir") is None  # a "directory" is not an object


def test_put_if_absent_creates_once_and_never_overwrites(store: object_store.ObjectStore) -> None:
    assert store.put_if_absent("x/_metadata", b"first") is True
    assert store.put_if_absent("x/_metadata", b"second") is False
    assert store.get("x/_metadata") == b"first"


def test_put_if_absent_race_has_exactly_one_winner(store: object_store.ObjectStore) -> None:
    writers = 8
    start = threading.Barrier(writers)
    results: dict[int, bool] = {}

    def write(i: int) -> None:
        start.wait()
        results[i] = store.put_if_absent("race/_metadata", f"writer-{i}".encode() * 50)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    winners = [i for i, won in results.items() if won]
    assert len(results) == writers
    assert len(winners) == 1
    assert store.get("race/_metadata") == f"writer-{winners[0]}".encode() * 50


def test_list_is_recursive_sorted_and_a_plain_prefix(store: object_store.ObjectStore) -> None:
    for key in ("j/b/2", "j/a", "j/b/1/deep", "jx/other", "k/else"):
        store.put(key, b"v")
    assert list(store.list("j/")) == ["j/a", "j/b/1/deep", "j/b/2"]
    assert list(store.list("j")) == ["j/a", "j/b/1/deep", "j/b/2", "jx/other"]
    assert list(store.list("j/b/")) == ["j/b/1/deep", "j/b/2"]
    assert list(store.list("nothing/")) == []
    assert list(store.list("")) == ["j/a", "j/b/1/deep", "j/b/2", "jx/other", "k/else"]


def test_delete_is_idempotent(store: object_store.ObjectStore) -> None:
    store.put("d/one", b"1")
    store.delete("d/one")
    store.delete("d/one")
    store.delete("never/existed")
    assert store.stat("d/one") is None
    assert list(store.list("d/")) == []


def test_delete_many_ignores_missing_keys(store: object_store.ObjectStore) -> None:
    for key in ("m/1", "m/2", "m/3"):
        store.put(key, b"v")
    store.delete_many(["m/1", "m/3", "m/missing"])
    store.delete_many([])
    assert list(store.list("m/")) == ["m/2"]


def test_keys_with_dot_segments_are_rejected(store: object_store.ObjectStore) -> None:
    for bad in ("../escape", "a//b", "/abs", "a/./b", ""):
        with pytest.raises(ValueError, match="invalid object key"):
            store.put(bad, b"x")


def test_describe_names_the_store_for_humans(store: object_store.ObjectStore) -> None:
    text = store.describe()
    assert text.startswith(("file:///", "s3://"))
    assert "\n" not in text


def test_delete_incomplete_leaves_objects_alone(store: object_store.ObjectStore) -> None:
    """Nothing unfinished: nothing removed, every object kept (the debris of killed writers
    is in tests/e2e/barrier_runtime/test_failed_checkpoints_leave_nothing.py)."""
    store.put("job/checkpoints/chk-1/s/0.arrow", b"state")
    store.put("job/other", b"x")
    assert store.delete_incomplete("job/checkpoints/") == 0
    assert list(store.list("job/")) == ["job/checkpoints/chk-1/s/0.arrow", "job/other"]
