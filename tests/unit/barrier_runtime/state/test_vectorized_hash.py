"""The vectorised key hash: identical to the scalar one, pinned, and column-aware like the per-record path."""

import datetime
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrier_runtime.state import key_groups

INT64 = st.integers(-(2**63), 2**63 - 1)


@given(st.lists(INT64, max_size=200))
def test_vector_hash_equals_scalar_hash(keys) -> None:
    vector = key_groups.stable_hash_int64(np.array(keys, dtype=np.int64))
    assert [int(h) for h in vector] == [key_groups.stable_hash(k) for k in keys]


def test_hash_values_are_pinned() -> None:
    """Key groups name persisted state: these values may never change between versions."""
    # SplitMix64's first output for state 0 is the published 0xE220A8397B1DCDAF.
    assert key_groups.stable_hash(0) == 0xE220A8397B1DCDAF
    assert key_groups.stable_hash(-1) == 16490336266968443936
    assert key_groups.stable_hash(42) == 13679457532755275413
    # Strings, bytes and integers beyond 64 bits keep their BLAKE2b hash.
    assert key_groups.stable_hash("user-42") == 13088657904087159980
    assert key_groups.stable_hash(b"user-42") == 5728162267534568977
    assert key_groups.stable_hash(2**64) == 16530697097583119416


def test_int_hash_is_stable_across_processes() -> None:
    code = "from barrier_runtime.state import key_groups as k; print(k.stable_hash(-7), k.stable_hash(2**70))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            check=True,
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert outputs == {f"{key_groups.stable_hash(-7)} {key_groups.stable_hash(2**70)}"}


def test_small_keys_spread_over_key_groups() -> None:
    groups = key_groups.key_groups_of(pa.array(range(100_000)), 128)
    counts = np.bincount(groups, minlength=128)
    assert counts.min() > 0.8 * 100_000 / 128 and counts.max() < 1.2 * 100_000 / 128


def _per_record(values, max_parallelism=128):
    return [key_groups.key_group_for(key_groups.column_key(v), max_parallelism) for v in values]


COLUMNS = {
    "int64": pa.array([0, -1, 2**63 - 1, -(2**63), 5, 5], type=pa.int64()),
    "int8": pa.array([-3, 0, 7], type=pa.int8()),
    "uint32": pa.array([0, 2**32 - 1], type=pa.uint32()),
    "uint64-small": pa.array([1, 2**63 - 1], type=pa.uint64()),
    "uint64-wide": pa.array([1, 2**64 - 1], type=pa.uint64()),
    "int-with-nulls": pa.array([1, None, 3], type=pa.int64()),
    "string": pa.array(["a", "b", "a", ""]),
    "binary": pa.array([b"a", b"\x00"]),
    "float": pa.array([1.5, 2.0]),
    "timestamp": pa.array([datetime.datetime(2024, 1, 1)]),
    "dictionary": pa.array(["x", "y", "x"]).dictionary_encode(),
}


@pytest.mark.parametrize("name", COLUMNS)
@pytest.mark.parametrize("max_parallelism", [1, 7, 128, 32768])
def test_column_key_groups_equal_the_per_record_ones(name, max_parallelism) -> None:
    column = COLUMNS[name]
    got = key_groups.key_groups_of(column, max_parallelism).tolist()
    assert got == _per_record(column.to_pylist(), max_parallelism)


def test_chunked_columns_are_hashed_like_arrays() -> None:
    chunked = pa.chunked_array([[1, 2], [3]])
    assert key_groups.key_groups_of(chunked, 128).tolist() == _per_record([1, 2, 3])


def test_boolean_keys_are_rejected_on_both_paths() -> None:
    with pytest.raises(TypeError, match="keys must be str, int or bytes"):
        key_groups.key_groups_of(pa.array([True]), 128)
    with pytest.raises(TypeError, match="keys must be str, int or bytes"):
        key_groups.key_group_for(True, 128)


def test_owners_of_key_groups_agree_with_the_scalar_rule() -> None:
    groups = np.arange(128, dtype=np.int64)
    for parallelism in (1, 2, 3, 5, 128):
        owners = key_groups.subtasks_for_key_groups(groups, parallelism, 128).tolist()
        assert owners == [key_groups.subtask_for_key_group(g, parallelism, 128) for g in range(128)]
