"""Key groups and keyed state: stable hashing, ranges, snapshot and rescaled restore."""

import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrier_runtime.core import values
from barrier_runtime.state import key_groups
from barrier_runtime.state.keyed import KeyedState, MisroutedKeyError, read_table
from barrier_runtime.state.value_columns import decode_column


def test_hash_is_stable_across_processes() -> None:
    code = "from barrier_runtime.state import key_groups as k; print(k.stable_hash('user-42'))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            check=True,
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert outputs == {str(key_groups.stable_hash("user-42"))}


def test_hash_distinguishes_types() -> None:
    assert key_groups.stable_hash("1") != key_groups.stable_hash(1)
    assert key_groups.stable_hash(b"1") != key_groups.stable_hash("1")
    with pytest.raises(TypeError, match="keys must be str, int or bytes"):
        key_groups.stable_hash(1.5)  # type: ignore[arg-type]


@given(st.integers(1, 64), st.integers(0, 10_000))
def test_ranges_partition_all_key_groups_and_agree_with_owner(parallelism, seed) -> None:
    max_p = 128
    p = min(parallelism, max_p)
    covered = []
    for i in range(p):
        lo, hi = key_groups.key_group_range(i, p, max_p)
        covered.extend(range(lo, hi + 1))
        for kg in (lo, hi):
            assert key_groups.subtask_for_key_group(kg, p, max_p) == i
    assert covered == list(range(max_p))
    kg = seed % max_p
    owner = key_groups.subtask_for_key_group(kg, p, max_p)
    lo, hi = key_groups.key_group_range(owner, p, max_p)
    assert lo <= kg <= hi


def _owned_state(subtask: int, parallelism: int, keys: list[str]) -> KeyedState:
    state = KeyedState(key_groups.key_group_range(subtask, parallelism, 128), 128)
    for k in keys:
        if (
            key_groups.subtask_for_key_group(key_groups.key_group_for(k, 128), parallelism, 128)
            == subtask
        ):
            state.put(k, {"count": len(k)})
    return state


@pytest.mark.parametrize("new_parallelism", [1, 2, 3, 5])
def test_snapshot_restores_at_any_parallelism(new_parallelism) -> None:
    keys = [f"key-{i}" for i in range(500)]
    blobs = [_owned_state(i, 2, keys).snapshot() for i in range(2)]
    restored: dict[str, object] = {}
    for i in range(new_parallelism):
        state = KeyedState(key_groups.key_group_range(i, new_parallelism, 128), 128)
        state.restore(blobs)
        for k, v in state.items():
            assert k not in restored
            restored[k] = v
    assert restored == {k: {"count": len(k)} for k in keys}


def test_snapshot_is_a_copy() -> None:
    state = KeyedState((0, 127), 128)
    value = {"n": 1}
    state.put("a", value)
    blob = state.snapshot()
    value["n"] = 99
    fresh = KeyedState((0, 127), 128)
    fresh.restore([blob])
    assert fresh.get("a") == {"n": 1}


def test_wrong_key_group_fails_the_snapshot_as_a_routing_error_and_none_deletes() -> None:
    state = KeyedState(key_groups.key_group_range(0, 2, 128), 128)
    foreign = next(f"k{i}" for i in range(1000) if key_groups.key_group_for(f"k{i}", 128) > 63)
    mine = next(f"k{i}" for i in range(1000) if key_groups.key_group_for(f"k{i}", 128) <= 63)
    state.put(mine, 1)
    state.snapshot("count")
    state.put(foreign, 1)
    with pytest.raises(MisroutedKeyError, match=r"'count'.*routed to the wrong subtask"):
        state.snapshot("count")
    state.put(foreign, None)
    state.put(mine, None)
    assert len(state) == 0


def test_a_value_mutated_in_place_after_the_barrier_keeps_its_barrier_value() -> None:
    state = KeyedState((0, 127), 128)
    seen = {"n": 1, "ids": [1]}  # nested: encoded at the barrier
    flat = ({"n": 1}, [1], {1})  # flat containers: copied at the barrier
    state.put("a", seen)
    state.put("b", 5)
    for i, value in enumerate(flat):
        state.put(i, value)
    copy = state.snapshot_copy("count")  # the barrier
    seen["n"] = 2
    seen["ids"].append(2)
    flat[0]["n"] = 2
    flat[1].append(2)
    flat[2].add(2)
    state.put("b", 6)
    state.put("c", 1)
    fresh = KeyedState((0, 127), 128)
    fresh.restore([copy.encode()])  # serialised later, as on the upload thread
    assert dict(fresh.items()) == {"a": {"n": 1, "ids": [1]}, "b": 5, 0: {"n": 1}, 1: [1], 2: {1}}


@given(
    st.dictionaries(
        st.one_of(st.text(max_size=8), st.binary(max_size=8), st.integers(), st.integers(0, 99)),
        st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=4), st.booleans()),
        max_size=40,
    )
)
def test_snapshot_stores_the_same_rows_as_encoding_each_key_and_value(held) -> None:
    state = KeyedState((0, 127), 128)
    for k, v in held.items():
        state.put(k, v)
    table = read_table(state.snapshot())
    rows = sorted(
        zip(*(table.column(c).to_pylist() for c in ("key_group", "key", "value")), strict=True)
    )
    want = sorted(
        (key_groups.key_group_for(k, 128), values.encode(k), values.encode(v))
        for k, v in held.items()
    )
    assert rows == want
    assert table.column("key_group").to_pylist() == sorted(table.column("key_group").to_pylist())
    fresh = KeyedState((0, 127), 128)
    fresh.restore([state.snapshot()])
    restored = dict(fresh.items())
    assert restored == held
    assert [type(restored[k]) for k in held] == [type(v) for v in held.values()]


@pytest.mark.parametrize("column", [[b"05"], [b"+5"], [b" 5"], [b"5 "], [b"1", b"x"]])
def test_restoring_bytes_that_only_look_like_ints_leaves_them_to_the_value_codec(column) -> None:
    with pytest.raises(values.ValueDecodeError):
        decode_column(pa.array(column, type=pa.binary()))


@pytest.mark.parametrize("column", [[b'"k\xff"'], [b"\xff1"], [b'"a"', b'"\xc3"']])
def test_restoring_bytes_that_are_not_utf8_is_refused_by_the_value_codec(column) -> None:
    """Not text at all: the fast paths step aside and the codec names the bad encoding."""
    with pytest.raises(values.ValueDecodeError, match="not a value encoding"):
        decode_column(pa.array(column, type=pa.binary()))


def test_state_objects_are_written_compressed_and_read_back_as_they_are() -> None:
    state = KeyedState((0, 127), 128)
    for k in range(20_000):
        state.put(k, k % 1000)
    blob = state.snapshot()
    table = read_table(blob)
    plain = pa.BufferOutputStream()
    with pa.ipc.new_stream(plain, table.schema) as writer:
        writer.write_table(table)
    assert len(blob) < len(plain.getvalue()) / 2
    fresh = KeyedState((0, 127), 128)
    fresh.restore([plain.getvalue().to_pybytes()])  # objects written uncompressed still restore
    assert dict(fresh.items()) == dict(state.items())
