"""The columnar generator: deterministic replay from any position, partition sizes, key orders."""

import collections
import time

import pyarrow as pa
import pytest

from barrier_runtime.connectors.columnar_generator import ColumnarGeneratorSource
from barrier_runtime.connectors.discard import DiscardSink


def _read_all(source, partition, start=0):
    part = source.open(partition, start)
    batches = []
    while (batch := part.next_batch()) is not None:
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=batches[0].schema), part.snapshot()


@pytest.mark.parametrize("key_order", ["uniform", "cyclic"])
def test_a_replay_from_any_position_yields_the_same_events(key_order) -> None:
    source = ColumnarGeneratorSource(
        events=1001, keys=50, partitions=3, batch_size=64, seed=7, key_order=key_order
    )
    full, end = _read_all(source, "cols-2")
    assert end == full.num_rows == source.partition_events(2)
    for start in (0, 1, 63, 64, 200):
        replay, _ = _read_all(source, "cols-2", start)
        assert replay.equals(full.slice(start))


def test_partitions_share_the_events_and_differ_from_each_other() -> None:
    source = ColumnarGeneratorSource(events=1001, keys=1000, partitions=3, batch_size=100)
    sizes = [source.partition_events(p) for p in range(3)]
    assert sizes == [334, 334, 333]
    first = source.open("cols-0", None).next_batch()
    second = source.open("cols-1", None).next_batch()
    assert first.column("key") != second.column("key")
    assert ColumnarGeneratorSource(events=10, keys=9, seed=1).open("cols-0", None).next_batch() != (
        ColumnarGeneratorSource(events=10, keys=9, seed=2).open("cols-0", None).next_batch()
    )


def test_uniform_keys_and_values_stay_in_range_and_spread() -> None:
    source = ColumnarGeneratorSource(
        events=200_000, keys=100, partitions=1, batch_size=200_000, value_range=10
    )
    batch = source.open("cols-0", None).next_batch()
    assert batch.schema.names == ["key", "value"]
    assert batch.schema.field("key").type == pa.int64()
    counts = collections.Counter(batch.column("key").to_pylist())
    assert set(counts) == set(range(100))
    assert max(counts.values()) < 1.2 * min(counts.values())
    assert set(batch.column("value").to_pylist()) == set(range(10))


def test_cyclic_keys_carry_per_key_sequence_numbers_from_one_partition() -> None:
    source = ColumnarGeneratorSource(events=700, keys=10, partitions=3, key_order="cyclic")
    seen: dict[int, list[int]] = collections.defaultdict(list)
    for p in range(3):
        table, _ = _read_all(source, f"cols-{p}")
        for key, seq in zip(
            table.column("key").to_pylist(), table.column("seq").to_pylist(), strict=True
        ):
            assert key % 3 == p
            seen[key].append(seq)
    assert set(seen) == set(range(10))
    assert all(seqs == list(range(len(seqs))) for seqs in seen.values())


def test_an_unbounded_source_never_ends_and_a_rate_throttles() -> None:
    part = ColumnarGeneratorSource(events=None, keys=5, batch_size=10).open("cols-0", None)
    assert all(part.next_batch().num_rows == 10 for _ in range(100))
    slow = ColumnarGeneratorSource(events=None, keys=5, rate_per_partition=1000.0).open("cols-0", 0)
    started = time.monotonic()
    got = sum(slow.next_batch().num_rows for _ in range(20))
    assert got <= (time.monotonic() - started) * 1000.0 + 1


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        ColumnarGeneratorSource(events=1, keys=0)
    with pytest.raises(ValueError, match="key_order"):
        ColumnarGeneratorSource(events=1, keys=1, key_order="zipf")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one key per partition"):
        ColumnarGeneratorSource(events=1, keys=1, partitions=2, key_order="cyclic")


def test_the_discard_sink_counts_and_publishes_nothing() -> None:
    sink = DiscardSink()
    writer = sink.writer("out", 0, 1)
    writer.write_batch(pa.record_batch({"x": [1, 2, 3]}))
    assert writer.records == 3 and writer.pre_commit(1) is None
    sink.commit(None)
