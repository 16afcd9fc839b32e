"""Key groups and keyed state: stable hashing, ranges, snapshot and rescaled restore."""

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrier_runtime.state import key_groups
from barrier_runtime.state.keyed import KeyedState


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


def test_wrong_key_group_is_a_routing_error_and_none_deletes() -> None:
    state = KeyedState(key_groups.key_group_range(0, 2, 128), 128)
    foreign = next(f"k{i}" for i in range(1000) if key_groups.key_group_for(f"k{i}", 128) > 63)
    with pytest.raises(KeyError, match="routed to the wrong subtask"):
        state.put(foreign, 1)
    mine = next(f"k{i}" for i in range(1000) if key_groups.key_group_for(f"k{i}", 128) <= 63)
    state.put(mine, 1)
    state.put(mine, None)
    assert len(state) == 0
