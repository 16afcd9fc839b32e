"""The vectorised path: keyed routing and the keyed sum give what the per-record path gives."""

import tempfile

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from barrier_runtime.api import Batch, Dataflow, InvalidDataflowError, steps
from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.core import types
from barrier_runtime.core.types import CheckpointConfig
from barrier_runtime.state import key_groups
from barrier_runtime.storage.checkpoint_store import CheckpointStore
from barrier_runtime.storage.object_store import open_object_store
from barrier_runtime.task import operators, routing
from barrier_runtime.task.operators import keyed_sum as batch_operators
from barrier_runtime.testing import LocalExecutor, TestingSink, TestingSource


def _key_fn(record):
    return key_groups.column_key(record["k"])


@settings(max_examples=50)
@given(
    st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 9)), max_size=60),
    st.integers(1, 6),
)
def test_vectorised_routing_splits_like_the_per_record_path(keys, parallelism) -> None:
    arrow = pa.record_batch({"k": pa.array(keys, type=pa.int64()), "i": list(range(len(keys)))})
    vectorised = routing.split_by_owner(Batch.from_arrow(arrow), _key_fn, "k", parallelism, 128)
    per_record = routing.split_by_owner(
        Batch.from_rows(arrow.to_pylist()), _key_fn, None, parallelism, 128
    )
    assert [(o, b.rows()) for o, b in vectorised] == [(o, b.rows()) for o, b in per_record]
    assert all(b.holds_arrow for _, b in vectorised)


def test_string_keys_route_like_the_per_record_path() -> None:
    arrow = pa.record_batch({"k": [f"user-{i % 17}" for i in range(100)]})
    got = routing.split_by_owner(Batch.from_arrow(arrow), _key_fn, "k", 3, 128)
    want = routing.split_by_owner(Batch.from_rows(arrow.to_pylist()), _key_fn, None, 3, 128)
    assert [(o, b.rows()) for o, b in got] == [(o, b.rows()) for o, b in want]


def test_a_batch_owned_by_one_subtask_is_passed_on_whole() -> None:
    batch = Batch.from_arrow(pa.record_batch({"k": [5, 5, 5]}))
    [(owner, part)] = routing.split_by_owner(batch, _key_fn, "k", 4, 128)
    assert part is batch
    assert owner == key_groups.subtask_for_key_group(key_groups.key_group_for(5, 128), 4, 128)


def _sum_operator(out, column="v", output="sum"):
    keyed = steps.Input(types.StepId("by-k"), steps.Partitioning.KEYED, _key_fn, "k")
    step = steps.KeyedSumStep(types.StepId("total"), keyed, column, output)
    return batch_operators.KeyedSumOperator(step, out.append, (0, 127), 128)


RECORDS = [{"k": k, "v": v} for k, v in [(1, 5), (2, 1), (1, 2), (3, None), (2, 7), (1, -4)]]
EXPECTED = [5, 1, 7, 0, 8, 3]


@pytest.mark.parametrize("key_type", [int, str])
def test_sum_of_arrow_and_of_rows_batches_agree(key_type) -> None:
    records = [{**r, "k": key_type(r["k"])} for r in RECORDS]
    arrow_out: list[Batch] = []
    rows_out: list[Batch] = []
    _sum_operator(arrow_out).process(Batch.from_arrow(pa.RecordBatch.from_pylist(records)), 0)
    _sum_operator(rows_out).process(Batch.from_rows(records), 0)
    assert arrow_out[0].holds_arrow and [r["sum"] for r in arrow_out[0].rows()] == EXPECTED
    assert rows_out[0].rows() == arrow_out[0].rows()
    assert list(rows_out[0].rows()[0]) == ["k", "v", "sum"]


def test_an_existing_output_column_is_replaced() -> None:
    out: list[Batch] = []
    _sum_operator(out, output="v").process(Batch.from_arrow(pa.RecordBatch.from_pylist(RECORDS)), 0)
    assert out[0].to_arrow().schema.names == ["k", "v"]
    assert [r["v"] for r in out[0].rows()] == EXPECTED


def test_non_integer_values_are_refused_with_a_named_error() -> None:
    op = _sum_operator([])
    with pytest.raises(batch_operators.NotAnIntegerColumnError, match="integer columns only"):
        op.process(Batch.from_arrow(pa.record_batch({"k": [1], "v": [1.5]})), 0)
    with pytest.raises(batch_operators.NotAnIntegerColumnError, match="integers only"):
        op.process(Batch.from_rows([{"k": 1, "v": "7"}]), 0)


def test_snapshot_and_restore_through_the_operator() -> None:
    first: list[Batch] = []
    op = _sum_operator(first)
    op.process(Batch.from_rows(RECORDS), 0)
    builder = operators.SnapshotBuilder(types.CheckpointId(1), 0)
    op.snapshot(builder)
    [blob] = builder.blobs
    assert (blob.relpath, blob.kind.value, blob.key_group_start, blob.key_group_end) == (
        "total/0.arrow",
        "keyed",
        0,
        127,
    )
    restored: list[Batch] = []
    again = _sum_operator(restored)
    again.restore([blob.data])
    again.process(Batch.from_rows([{"k": 1, "v": 10}]), 0)
    assert restored[0].rows() == ({"k": 1, "v": 10, "sum": 13},)


def test_the_snapshot_is_copied_at_the_barrier_and_encoded_when_uploaded() -> None:
    op = _sum_operator([])
    op.process(Batch.from_rows(RECORDS), 0)
    builder = operators.SnapshotBuilder(types.CheckpointId(1), 0)
    op.snapshot(builder)
    [blob] = builder.blobs
    assert callable(blob.payload)  # serialised on the upload thread, not at the barrier
    op.process(Batch.from_rows([{"k": 1, "v": 1000}]), 0)  # processing goes on
    again = _sum_operator([])
    again.restore([blob.data])
    assert again.state.get(1) == op.state.get(1) - 1000


def test_sum_needs_a_stream_keyed_by_a_column() -> None:
    flow = Dataflow("f")
    keyed = flow.source("in", TestingSource([{"k": 1, "v": 1}])).key_by("by-k", _key_fn)
    with pytest.raises(InvalidDataflowError, match="keyed by a column"):
        keyed.sum("total", "v")


def _run(flow, parallelism=3):
    store = CheckpointStore(open_object_store(tempfile.mkdtemp(prefix="vec-")), "t/job")
    executor = LocalExecutor(
        flow, parallelism=parallelism, store=store, config=CheckpointConfig(interval=0.05)
    )
    result = executor.run()
    assert result.restarts == 0
    return result


def _by_key(records, value):
    out: dict = {}
    for r in records:
        out.setdefault(r["key"], []).append((r["seq"], r[value]))
    return out


@pytest.mark.parametrize("arrow_source", [True, False], ids=["arrow-source", "rows-source"])
def test_the_vectorised_job_equals_the_per_record_job(arrow_source) -> None:
    source = ColumnarGeneratorSource(
        events=30_000, keys=97, partitions=4, batch_size=1000, key_order="cyclic"
    )
    if not arrow_source:  # the same events as Python rows
        rows = [r for p in range(4) for r in source.events_between(p, 0, 7500).to_pylist()]
        source = TestingSource(rows, batch_size=500)
    vectorised, per_record = TestingSink(), TestingSink()
    flow = Dataflow("vectorised")
    flow.source("events", source).key_by("by-key", "key").sum("total", "value").sink(
        "out", vectorised
    )
    _run(flow)
    flow = Dataflow("per-record")
    flow.source("events", source).key_by("by-key", "key").aggregate(
        "total", lambda: 0, lambda a, r: a + r["value"], lambda a, r: {**r, "sum": a}
    ).sink("out", per_record)
    _run(flow)
    assert len(vectorised.output) == 30_000
    assert _by_key(vectorised.output, "sum") == _by_key(per_record.output, "sum")
