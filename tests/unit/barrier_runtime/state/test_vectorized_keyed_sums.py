"""Vectorised keyed sums: equal to a per-record fold, and snapshots restore at any parallelism."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.state import key_groups
from barrier_runtime.state.keyed_sums import KeyedSums, MixedKeyTypesError

INT64 = st.integers(-(2**63), 2**63 - 1)
KEYS = st.one_of(st.integers(-5, 5), INT64)
VALUES = st.integers(-(2**40), 2**40)


def _reference(batches):
    """Per-record running sums, as a dict fold would give them."""
    sums: dict = {}
    out = []
    for batch in batches:
        for key, value in batch:
            sums[key] = sums.get(key, 0) + value
            out.append(sums[key])
    return out, sums


def _run(state, batches, dtype=np.int64):
    out = []
    for batch in batches:
        keys = np.array([k for k, _ in batch], dtype=dtype)
        values = np.array([v for _, v in batch], dtype=np.int64)
        out.extend(state.running_sums(keys, values).tolist())
    return out


@given(st.lists(st.lists(st.tuples(KEYS, VALUES), max_size=40), max_size=6))
def test_running_sums_equal_a_per_record_fold(batches) -> None:
    state = KeyedSums((0, 127), 128)
    expected, final = _reference(batches)
    assert _run(state, batches) == expected
    assert dict(state.items()) == final
    assert len(state) == len(final)


@given(st.lists(st.lists(st.tuples(st.text(max_size=3), VALUES), max_size=30), max_size=4))
def test_string_keys_take_the_object_path_with_the_same_result(batches) -> None:
    state = KeyedSums((0, 127), 128)
    assert _run(state, batches, dtype=object) == _reference(batches)[0]


def test_wide_key_ranges_fall_back_to_a_stable_argsort() -> None:
    keys = [2**62, -(2**62), 2**62, 0, -(2**62), 2**62]
    batch = [(k, i + 1) for i, k in enumerate(keys)]
    assert _run(KeyedSums((0, 127), 128), [batch]) == _reference([batch])[0]


def test_get_and_integer_state_turns_into_objects_for_other_key_types() -> None:
    state = KeyedSums((0, 127), 128)
    state.running_sums(np.array([3, 4]), np.array([1, 2]))
    assert state.get(3) == 1 and state.get(5) is None
    with pytest.raises(MixedKeyTypesError, match="cannot share a keyed step"):
        state.running_sums(np.array(["x"], dtype=object), np.array([1]))


def test_a_key_of_another_key_group_range_is_a_routing_error() -> None:
    lo, hi = key_groups.key_group_range(0, 2, 128)
    foreign = next(k for k in range(1000) if key_groups.key_group_for(k, 128) > hi)
    state = KeyedSums((lo, hi), 128)
    with pytest.raises(KeyError, match="routed to the wrong subtask"):
        state.running_sums(np.array([foreign]), np.array([1]))


def _owned_batches(subtask, parallelism, keys, rounds=3):
    owned = [
        k
        for k in keys
        if key_groups.subtask_for_key_group(key_groups.key_group_for(k, 128), parallelism, 128)
        == subtask
    ]
    return [[(k, (r + 1) * (i + 1)) for i, k in enumerate(owned)] for r in range(rounds)]


@pytest.mark.parametrize("key_kind", ["int", "str"])
@pytest.mark.parametrize("new_parallelism", [1, 2, 3, 5])
def test_snapshots_restore_at_any_parallelism_and_sums_continue(new_parallelism, key_kind) -> None:
    keys = list(range(-250, 250)) if key_kind == "int" else [f"key-{i}" for i in range(500)]
    dtype = np.int64 if key_kind == "int" else object
    blobs, expected = [], {}
    for i in range(2):
        state = KeyedSums(key_groups.key_group_range(i, 2, 128), 128)
        batches = _owned_batches(i, 2, keys)
        _run(state, batches, dtype)
        blobs.append(state.snapshot())
        expected.update(_reference(batches)[1])
    assert len(expected) == len(keys)
    restored: dict = {}
    for i in range(new_parallelism):
        state = KeyedSums(key_groups.key_group_range(i, new_parallelism, 128), 128)
        state.restore(blobs)
        assert not set(dict(state.items())) & set(restored)
        restored.update(state.items())
        # After the restore, sums continue from the restored values.
        more = _owned_batches(i, new_parallelism, keys, rounds=1)
        got = _run(state, more, dtype)
        assert got == [expected[k] + v for k, v in more[0]]
    assert restored == expected


def test_an_empty_state_snapshots_and_restores() -> None:
    blob = KeyedSums((0, 63), 128).snapshot()
    state = KeyedSums((0, 127), 128)
    state.restore([blob, blob])
    assert len(state) == 0


@settings(max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 50), VALUES), min_size=1, max_size=60), st.data())
def test_how_a_stream_is_cut_into_batches_does_not_change_the_sums(records, data) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, len(records)), max_size=5)))
    batches, start = [], 0
    for cut in [*cuts, len(records)]:
        batches.append(records[start:cut])
        start = cut
    assert _run(KeyedSums((0, 127), 128), batches) == _run(KeyedSums((0, 127), 128), [records])


def _uncompressed(blob: bytes) -> bytes:
    """The same snapshot written as before compression was used (plain Arrow IPC)."""
    table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def test_a_copy_is_unaffected_by_later_updates_and_encodes_compressed() -> None:
    state = KeyedSums((0, 127), 128)
    keys = np.arange(20_000, dtype=np.int64)
    state.running_sums(keys, np.ones(len(keys), dtype=np.int64))
    copy = state.snapshot_copy()
    state.running_sums(keys, np.full(len(keys), 5, dtype=np.int64))  # in place
    wide = np.empty(1, dtype=object)
    wide[0] = 2**70
    state.running_sums(wide, np.array([1]))  # the keys become objects
    blob = copy.encode()
    assert len(blob) < len(_uncompressed(blob)) / 3  # 20 bytes a row raw
    restored = KeyedSums((0, 127), 128)
    restored.restore([blob])
    assert dict(restored.items()) == {k: 1 for k in range(20_000)}


@pytest.mark.parametrize("new_parallelism", [1, 3])
def test_uncompressed_snapshots_of_earlier_versions_still_restore(new_parallelism) -> None:
    keys = list(range(-250, 250))
    blobs, expected = [], {}
    for i in range(2):
        state = KeyedSums(key_groups.key_group_range(i, 2, 128), 128)
        batches = _owned_batches(i, 2, keys)
        _run(state, batches)
        blobs.append(_uncompressed(state.snapshot()) if i == 0 else state.snapshot())
        expected.update(_reference(batches)[1])
    restored: dict = {}
    for i in range(new_parallelism):
        state = KeyedSums(key_groups.key_group_range(i, new_parallelism, 128), 128)
        state.restore(blobs)
        restored.update(state.items())
    assert restored == expected
