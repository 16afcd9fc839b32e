"""Channel state and keyed state objects: the stored format, and refusal of anything else.

A changed byte, the pickle of an older release or a foreign object is refused with
a clear error; nothing stored is ever unpickled.
"""

from __future__ import annotations

import dataclasses
import datetime
import pathlib
import pickle
from typing import Any

import pyarrow as pa
import pytest

from barrier_runtime import register_value_type
from barrier_runtime.api import batch as batch_mod
from barrier_runtime.core import metadata, types, values
from barrier_runtime.state import keyed, keyed_sums
from barrier_runtime.storage import checkpoint_store, errors, local
from barrier_runtime.task import channel_state, snapshots


@register_value_type
@dataclasses.dataclass(frozen=True)
class Reading:
    sensor: str
    at: datetime.datetime


def _entry(task: str, side: int, subtask: int, origin: str, rows: tuple[Any, ...]) -> Any:
    return snapshots.InFlight.of(types.TaskId(task), side, subtask, origin, -1, rows)


ENTRIES = [
    _entry("sum", 0, 1, "input", ({"k": "a", "v": 1}, {"k": "b", "v": 2})),
    _entry("sum", 1, 0, "output", ({"k": ("x", 2), "v": 2**70},)),
    _entry("join", 0, 2, "output", ({"r": Reading("s1", datetime.datetime(2024, 1, 1))},)),
    _entry("join", 1, 0, "input", ()),
]


def test_channel_state_round_trips_exactly_through_arrow_ipc() -> None:
    blob = snapshots.encode_channel_state(ENTRIES)
    assert pa.ipc.open_stream(pa.py_buffer(blob)).read_all().num_rows == len(ENTRIES)
    assert snapshots.decode_channel_state(blob) == ENTRIES
    encodings = pa.ipc.open_stream(pa.py_buffer(blob)).read_all().column("encoding").to_pylist()
    assert encodings == ["arrow", "rows", "rows", "arrow"]  # Arrow where it is faithful


def test_a_batch_that_travelled_as_arrow_is_stored_as_that_arrow_without_becoming_rows() -> None:
    arrow = pa.record_batch({"k": ["a", "b"], "v": pa.array([1, 2], pa.int16())})
    batch = batch_mod.Batch.from_arrow(arrow)
    entry = snapshots.InFlight.of(types.TaskId("sum"), 0, 1, "output", 0, batch)
    blob = snapshots.encode_channel_state([entry])
    table = pa.ipc.open_stream(pa.py_buffer(blob)).read_all()
    assert table.column("encoding").to_pylist() == ["arrow"]
    stored = pa.ipc.open_stream(pa.py_buffer(table.column("records")[0].as_py())).read_all()
    assert stored.schema.field("v").type == pa.int16()  # the batch's own schema, not inferred
    assert not batch.holds_rows  # nobody made rows of it
    assert snapshots.decode_channel_state(blob) == [entry]


def test_channel_state_in_the_old_pickle_format_is_refused_not_unpickled() -> None:
    old = pickle.dumps(
        [(e.target_task, e.side, e.target_subtask, e.origin, e.rows) for e in ENTRIES]
    )
    with pytest.raises(channel_state.ChannelStateFormatError, match="older release"):
        snapshots.decode_channel_state(old)


def test_channel_state_of_another_format_is_refused() -> None:
    table = pa.table({"target_task": ["sum"]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(channel_state.ChannelStateFormatError, match="format None"):
        snapshots.decode_channel_state(sink.getvalue().to_pybytes())


def _store(tmp_path: pathlib.Path) -> checkpoint_store.CheckpointStore:
    return checkpoint_store.CheckpointStore(local.LocalObjectStore(tmp_path), "ns/job")


@pytest.mark.parametrize("kind", ["channel", "keyed"])
def test_a_changed_byte_in_a_stored_state_object_is_refused(
    tmp_path: pathlib.Path, kind: str
) -> None:
    store = _store(tmp_path)
    if kind == "channel":
        blob = snapshots.encode_channel_state(ENTRIES)
        handle_kind = metadata.HandleKind.CHANNEL
    else:
        state = keyed.KeyedState((0, 127), 128)
        state.put("a", {"count": 3, "seen": {1, 2}})
        blob = state.snapshot("count")
        handle_kind = metadata.HandleKind.KEYED
    handle = store.write_state(
        7,
        types.CheckpointKind.CHECKPOINT,
        f"{kind}.bin",
        blob,
        step_id="sum",
        subtask=0,
        handle_kind=handle_kind,
    )
    assert store.read_state(handle) == blob
    (path,) = [p for p in tmp_path.rglob(f"{kind}.bin")]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(errors.CorruptCheckpointError, match="sha256"):
        store.read_state(handle)


def test_keyed_state_keeps_structured_values_exactly() -> None:
    state = keyed.KeyedState((0, 127), 128)
    value = (Reading("s", datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC)), [1, 2.5], {3: b"x"})
    state.put("eu-7", value)
    state.put(7, True)
    fresh = keyed.KeyedState((0, 127), 128)
    fresh.restore([state.snapshot()])
    assert fresh.get("eu-7") == value and type(fresh.get("eu-7")) is tuple
    assert fresh.get(7) is True


def test_keyed_state_holding_an_unsupported_value_fails_the_snapshot_naming_the_step() -> None:
    state = keyed.KeyedState((0, 127), 128)
    state.put("k", object())
    with pytest.raises(keyed.UnencodableStateError, match=r"step 'count'.*register_value_type"):
        state.snapshot("count")


def test_keyed_state_in_the_old_pickle_format_is_refused() -> None:
    schema = pa.schema([("key_group", pa.int32()), ("key", pa.binary()), ("value", pa.binary())])
    table = pa.table(
        {"key_group": [0], "key": [pickle.dumps("a")], "value": [pickle.dumps(1)]}, schema=schema
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table)
    old = sink.getvalue().to_pybytes()
    for state in (keyed.KeyedState((0, 127), 128), keyed_sums.KeyedSums((0, 127), 128)):
        with pytest.raises(keyed.StateFormatError, match="older release"):
            state.restore([old])


def test_keyed_sums_with_string_keys_store_them_in_the_value_codec() -> None:
    import numpy as np

    sums = keyed_sums.KeyedSums((0, 127), 128)
    sums.running_sums(np.array(["a", "b", "a"], dtype=object), np.array([1, 2, 3]))
    table = pa.ipc.open_stream(pa.py_buffer(sums.snapshot())).read_all()
    assert sorted(values.decode(k) for k in table.column("key").to_pylist()) == ["a", "b"]
    fresh = keyed_sums.KeyedSums((0, 127), 128)
    fresh.restore([sums.snapshot()])
    assert sorted(fresh.items()) == [("a", 4), ("b", 2)]
