"""The on-disk keyed state backend against the in-memory one (issue 32).

A tiny cache makes nearly every operation go through RocksDB and evictions: any
sequence of writes, deletes and reads must leave the same mapping as a dict, and its
snapshots, deltas and restores must give the same state objects' contents, at any
key-group range (rescaling) and in both directions between the backends.
"""

from __future__ import annotations

import itertools
import pathlib
import tempfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.core import values
from barrier_runtime.state import disk_copies, key_groups
from barrier_runtime.state.disk_keyed import DiskKeyedState
from barrier_runtime.state.keyed import KeyedState, UnencodableStateError, read_table
from barrier_runtime.state.spilling_values import SpillingValues
from barrier_runtime.state.value_columns import decode_column

MP = 128
KEYS = st.one_of(st.integers(-50, 50), st.sampled_from(["a", "b", "c", "long key " * 3]))
VALUES = st.one_of(st.integers(), st.text(max_size=20), st.lists(st.integers(), max_size=4))
OPS = st.lists(
    st.tuples(st.sampled_from(["put", "delete", "get", "evict"]), KEYS, VALUES), max_size=120
)


def _disk(tmp: str, key_range: tuple[int, int] = (0, MP - 1), memory: int = 4096) -> DiskKeyedState:
    return DiskKeyedState(key_range, MP, pathlib.Path(tmp) / "db", memory)


def _rows(blob: bytes) -> dict[Any, Any]:
    table = read_table(blob)
    keys = decode_column(table.column("key"))
    raw = table.column("value").to_pylist()
    return {k: None if v is None else values.decode(v) for k, v in zip(keys, raw, strict=True)}


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_spilling_values_behave_like_a_dict_through_evictions(ops) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spilled = SpillingValues(pathlib.Path(tmp), MP, cache_bytes=1)  # 16 entries
        model: dict[Any, Any] = {}
        for op, key, value in ops:
            if op == "put":
                spilled[key] = value
                model[key] = value
            elif op == "delete":
                assert spilled.pop(key, None) == model.pop(key, None)
            elif op == "get":
                assert spilled.get(key) == model.get(key)
                assert (key in spilled) == (key in model)
            else:
                spilled.evict_all()
            assert len(spilled) == len(model)
        assert dict(spilled.items()) == model
        spilled.close()


@settings(max_examples=40, deadline=None)
@given(OPS, OPS)
def test_snapshots_and_deltas_match_the_in_memory_backend(first, second) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        disk, memory = _disk(tmp), KeyedState((0, MP - 1), MP)
        for state in (disk, memory):
            for op, key, value in first:
                state.put(key, value if op == "put" else None)
        base = disk.snapshot_copy("s")
        assert _rows(base.encode()) == _rows(memory.snapshot_copy("s").encode())
        disk.track_changes()
        memory.track_changes()
        for state in (disk, memory):
            for op, key, value in second:
                state.put(key, value if op == "put" else None)
        delta = disk.delta_copy("s").encode()
        assert _rows(delta) == _rows(memory.delta_copy("s").encode())
        assert disk.delta_copy("s").rows == 0  # the delta forgot what it took
        disk.close()


def test_a_copy_is_the_state_at_its_barrier_while_writes_go_on(tmp_path: pathlib.Path) -> None:
    disk = _disk(str(tmp_path), memory=1 << 20)
    for i in range(5_000):
        disk.put(i, f"v{i}")
    copy = disk.snapshot_copy("s")
    for i in range(0, 5_000, 2):
        disk.put(i, "later")
    disk.put(-1, "new")
    rows = _rows(copy.encode())
    assert rows == {i: f"v{i}" for i in range(5_000)}
    assert disk.get(0) == "later" and disk.get(-1) == "new" and len(disk) == 5_001


def test_a_dropped_copy_takes_its_rocksdb_checkpoint_with_it(tmp_path: pathlib.Path) -> None:
    disk = _disk(str(tmp_path))
    disk.put("k", 1)
    copy = disk.snapshot_copy("s")
    assert copy.checkpoint.is_dir()
    where = copy.checkpoint
    del copy
    assert not where.exists()
    disk.close()
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize("large_delta", [False, True], ids=["full copy", "large delta"])
def test_a_copy_read_after_its_state_closed_fails_and_leaves_no_files(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, large_delta: bool
) -> None:
    """An attempt ends while a copy still waits for the upload thread: reading it then must
    not bring back the state's directory (RocksDB creates it on open), as a CI run found."""
    monkeypatch.setattr(disk_copies, "PART_BYTES", 2_000)
    disk = _disk(str(tmp_path), memory=1 << 20)
    disk.track_changes()
    for i in range(200):
        disk.put(i, i)
    copy = disk.delta_copy("s") if large_delta else disk.snapshot_copy("s")
    assert isinstance(copy, disk_copies.DeltaCopy | disk_copies.RangeCopy)
    disk.close()
    with pytest.raises(disk_copies.CopyClosedError, match="after its state closed"):
        copy.split_objects()[0].encode()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_restore_at_another_parallelism_keeps_its_own_key_groups(
    tmp_path: pathlib.Path, parallelism: int
) -> None:
    """Written at P = 2 by both backends, restored at P = 1 and 3 into the disk backend."""
    keys = [*range(300), *(f"user-{i}" for i in range(300))]
    blobs = []
    for subtask in range(2):
        key_range = key_groups.key_group_range(subtask, 2, MP)
        state = KeyedState(key_range, MP) if subtask == 0 else _disk(str(tmp_path / "w"), key_range)
        for key in keys:
            if key_range[0] <= key_groups.key_group_for(key, MP) <= key_range[1]:
                state.put(key, [key, 1])
        blobs.append(state.snapshot_copy("s").encode())
    restored: dict[Any, Any] = {}
    for subtask in range(parallelism):
        key_range = key_groups.key_group_range(subtask, parallelism, MP)
        target = _disk(str(tmp_path / f"r{subtask}"), key_range, memory=1 << 16)
        target.restore(blobs)
        assert all(
            key_range[0] <= key_groups.key_group_for(k, MP) <= key_range[1]
            for k, _ in target.items()
        )
        restored.update(target.items())
    assert restored == {key: [key, 1] for key in keys}


def test_an_unencodable_value_fails_the_snapshot_naming_the_step(tmp_path: pathlib.Path) -> None:
    disk = _disk(str(tmp_path), memory=1 << 20)
    disk.put("k", object())
    with pytest.raises(UnencodableStateError, match="step 'count'"):
        disk.snapshot_copy("count")


def test_a_large_copy_uploads_in_parts_that_restore_it_whole(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disk_copies, "PART_BYTES", 4096)
    disk = _disk(str(tmp_path / "a"), memory=1 << 20)
    for i in range(5_000):
        disk.put(i, f"value {i}")
    copy = disk.snapshot_copy("s")
    parts = copy.split_objects()
    assert len(parts) > 4
    assert parts[0].start == 0 and parts[-1].end == MP - 1
    assert all(a.end + 1 == b.start for a, b in itertools.pairwise(parts))
    assert sum(p.rows for p in parts) <= 5_000
    blobs = [part.encode() for part in parts]
    assert all(
        part.start <= g <= part.end
        for part, blob in zip(parts, blobs, strict=True)
        for g in read_table(blob).column("key_group").to_pylist()
    )
    whole = _disk(str(tmp_path / "b"), memory=1 << 20)
    whole.restore(blobs)
    assert dict(whole.items()) == {i: f"value {i}" for i in range(5_000)}


def test_a_large_delta_is_read_later_in_objects_that_restore_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More changed keys than an object holds: the barrier keeps their stored keys and a
    RocksDB checkpoint; the upload reads them in runs of key groups, tombstones included."""
    monkeypatch.setattr(disk_copies, "PART_BYTES", 20_000)
    disk = _disk(str(tmp_path / "a"), memory=1 << 20)
    for i in range(3_000):
        disk.put(i, f"v{i}")
    base = [part.encode() for part in disk.snapshot_copy("s").split_objects()]
    disk.track_changes()
    for i in range(0, 3_000, 3):
        disk.put(i, None if i % 2 else f"new {i}")
    copy = disk.delta_copy("s")
    assert isinstance(copy, disk_copies.DeltaCopy) and copy.rows == 1_000
    for i in range(0, 3_000, 3):
        disk.put(i, "after the barrier")
    parts = copy.split_objects()
    assert len(parts) > 3 and sum(p.rows for p in parts) == 1_000
    assert parts[0].start == 0 and parts[-1].end == MP - 1
    assert all(a.end + 1 == b.start for a, b in itertools.pairwise(parts))
    again = _disk(str(tmp_path / "b"), memory=1 << 20)
    again.restore([*base, *(part.encode() for part in parts)])
    expected = {i: f"v{i}" for i in range(3_000)}
    for i in range(0, 3_000, 3):
        if i % 2:
            del expected[i]
        else:
            expected[i] = f"new {i}"
    assert dict(again.items()) == expected
